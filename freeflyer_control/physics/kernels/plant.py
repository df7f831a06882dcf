"""The simulated plant on the compiled step (numba), when numba is installed: plant_node's and
the testbed emulator's.

:class:`CompiledPlant` is a :class:`~freeflyer_control.physics.plant.Plant` whose RKMK4 step with
momentum projection runs in :func:`freeflyer_control.physics.kernels.rigid_body.plant_step`, the compiled
form of the same integrator (held equal to ``Plant`` to round-off by test/test_fast_kernel.py and
test/test_compiled_plant.py). Everything else is ``Plant``'s own: the divergence checks (speed
bounds and the energy balance, from the work of the held forces over the same RK4 stages), the
momentum bookkeeping, ``state`` and resets. It takes raw generalized forces (``step(tau=...)``),
as the emulator gives them; contact (``plant.contact``) is not compiled (the Python step runs).

Why: plant_node (alone or in sim_loop_node's lockstep) and the testbed emulator step their plant
at up to 1 kHz inside a ROS node; the Python step (four Pinocchio right-hand sides, projection,
checks: ~35-150 us) was the largest single cost of those nodes after rclpy itself. Compiled, the
integration costs a few microseconds.

:func:`make_plant` picks it when ``freeflyer_control.physics.kernels.available()`` and the robot's
joints are covered, else the Python ``Plant``; the first use compiles the kernels (tens of seconds
once, then loaded from numba's cache in about a second).
"""

from __future__ import annotations

import time

import numpy as np

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.plant import Plant
from freeflyer_control.physics.state import State


class CompiledPlant(Plant):
    """``Plant`` with its integration step compiled (same arguments; needs numba)."""

    def __init__(self, ff: FreeFlyerModel, state: State, dt: float, t0: float = 0.0):
        from freeflyer_control.physics.kernels import rigid_body as K
        from freeflyer_control.physics.kernels.arrays import kernel_model

        self._K = K
        km = kernel_model(ff)   # raises NotCovered for joints the kernels do not implement
        self._km, self._planar = km.arrays(), km.planar
        nq, nv = ff.model.nq, ff.model.nv
        self._ws = K.workspace(km.jint.shape[0], nq, nv, ff.nb)
        self._M, self._b = np.empty((nv, nv)), np.empty(nv)          # at the current state
        self._out = (np.empty(nq), np.empty(nv), np.empty((nv, nv)), np.empty(nv))
        super().__init__(ff, state, dt, t0)

    @Plant.state.setter
    def state(self, state: State) -> None:
        Plant.state.fset(self, state)
        q, v = self._state.q, self._state.v
        self._K.mass_and_bias(self._km, q, v, self._M, self._b, self._ws)

    def step(self, actuation=None, *, tau: np.ndarray | None = None) -> State:
        state = super().step(actuation, tau=tau)
        # Accepted: the step's M(q_new), b(q_new, v_new) are the next step's M0, b0 (buffers
        # swapped, not copied).
        q_buf, v_buf, M_new, b_new = self._out
        self._out = (q_buf, v_buf, self._M, self._b)
        self._M, self._b = M_new, b_new
        return state

    def _integrate(self, q0: np.ndarray, v0: np.ndarray, tau: np.ndarray):
        """``Plant._integrate`` on the compiled kernel: (q, v, world momentum, work of ``tau``
        over the step J, M at q)."""
        if self.contact is not None:
            return super()._integrate(q0, v0, tau)
        q_new, v_new, M_new, b_new = self._out
        momentum = self.momentum_world.copy()   # the kernel updates it in place
        tau = np.ascontiguousarray(tau, dtype=float)
        self._K.plant_step(self._km, self._planar, self.ff.nb, q0, v0, tau, self.dt, momentum,
                           self._M, self._b, q_new, v_new, M_new, b_new, self._ws)
        k1v, k2v, k3v = self._ws[14][2], self._ws[14][3], self._ws[14][4]
        # Plant's work: h/6 tau . (v0 + 2 v2 + 2 v3 + v4), stage velocities v2 = v0 + h/2 k1,
        # v3 = v0 + h/2 k2, v4 = v0 + h k3.
        h = self.dt
        stages = 6.0 * v0 + h * (k1v + k2v + k3v)
        work = h / 6.0 * float(tau @ stages)
        self.last_acceleration = k1v.copy()
        return q_new.copy(), v_new.copy(), momentum, work, M_new


def make_plant(ff: FreeFlyerModel, state: State, dt: float, *, compiled: bool | None = None):
    """``(plant, note)``: a :class:`CompiledPlant` when ``compiled`` is True, or None and numba
    is available and covers the robot; else the Python ``Plant``. ``note`` says which, and why
    (one line, for the node's log), with the compile (or cache load) time.

    Raises:
        ImportError / NotCovered: ``compiled=True`` and the compiled step cannot be used.
    """
    from freeflyer_control.physics.kernels import available

    if compiled is False:
        return Plant(ff, state, dt), "plant step: Python (compiled step not asked for)"
    if compiled is None and not available():
        return Plant(ff, state, dt), "plant step: Python (numba not installed: pip extra 'fast')"
    from freeflyer_control.physics.kernels.arrays import NotCovered

    start = time.perf_counter()
    try:
        plant = CompiledPlant(ff, state, dt)
        plant.step(tau=np.zeros(ff.model.nv))   # compiles, or loads numba's cache
    except NotCovered as exc:
        if compiled:
            raise
        return Plant(ff, state, dt), f"plant step: Python ({exc})"
    plant.t = 0.0
    plant.state = state   # the warm-up step undone
    return plant, f"plant step: compiled (numba, ready in {time.perf_counter() - start:.1f} s)"
