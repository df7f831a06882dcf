"""The simulated plant on the compiled step (numba), when numba is installed: plant_node's, the
testbed emulator's, and the Python engine's runs (ee-contact, capture) where numba is installed.

:class:`CompiledPlant` is a :class:`~freeflyer_control.physics.plant.Plant` whose step runs in one
compiled call, :func:`freeflyer_control.physics.kernels.divergence.checked_plant_step`: the CF4
step with momentum projection (``rigid_body.plant_step``, with the end-effector's wall contact
when ``plant.contact`` is a ``WallContact``: ``rigid_body.plant_step_wall``) and the divergence
check (speed bounds and the energy balance, from the work of the held forces and of the wall
over the same RK4 stages), held equal to ``Plant`` to round-off by test/test_fast_kernel.py and
test/test_compiled_plant.py. The momentum bookkeeping, ``state``, resets, the State it returns
and the reasons of a divergence are ``Plant``'s. It takes raw generalized forces
(``step(tau=...)``) as the emulator gives them, or an ``Actuation``.

Why: plant_node (alone or in sim_loop_node's lockstep) and the testbed emulator step their plant
at up to 1 kHz inside a ROS node, and a law written in Python calls the plant every tick; the
Python step costs about 3x MuJoCo's ``mj_step`` on SPART's 7-DOF arm, the compiled one less than
it, called from Python (bench/bench_mujoco.py, docs/benchmarks.md). The call is built to be
cheap: one buffer for the workspace and the mass matrices (numba unboxes each array argument),
fresh arrays only for what it hands out.

:func:`make_plant` picks it when ``freeflyer_control.physics.kernels.available()`` and the robot's
joints are covered, else the Python ``Plant``; the first use compiles the kernels (tens of seconds
once, then loaded from numba's cache in about a second).
"""

from __future__ import annotations

import logging
import time

import numpy as np

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.actuators import Actuation, generalized_forces
from freeflyer_control.physics.kernels import compile_warning
from freeflyer_control.physics.contact import WallContact
from freeflyer_control.physics.plant import Plant, PlantDiverged, energy_reason, velocity_reason
from freeflyer_control.physics.state import State

_log = logging.getLogger(__name__)


class CompiledPlant(Plant):
    """``Plant`` with its integration step compiled (same arguments; needs numba)."""

    def __init__(self, ff: FreeFlyerModel, state: State, dt: float, t0: float = 0.0):
        from freeflyer_control.physics.kernels import divergence
        from freeflyer_control.physics.kernels import rigid_body as K
        from freeflyer_control.physics.kernels.arrays import kernel_model

        self._K, self._checked_step = K, divergence.checked_plant_step
        self._speed_code = divergence.DIVERGED_SPEED
        km = kernel_model(ff)   # raises NotCovered for joints the kernels do not implement
        self._km, self._planar = km.arrays(), km.planar
        nq, nv, nb, n = ff.model.nq, ff.model.nv, ff.nb, km.jint.shape[0]
        self._sizes = (nq, nv, nb)
        # checked_plant_step's buffer: the workspace, M and b at the current state and at the next
        # one (the current pair alternates), the velocity bounds.
        ws_size = sum(a.size for a in K.workspace(n, nq, nv, nb))
        self._buf = np.zeros(ws_size + 2 * nv * nv + 3 * nv)
        self._ws = K.workspace_views(self._buf, n, nq, nv, nb)[0]
        self._M = self._buf[ws_size:ws_size + 2 * nv * nv].reshape(2, nv, nv)
        self._b = self._buf[ws_size + 2 * nv * nv:-nv].reshape(2, nv)
        self._current = 0
        self._no_wall = (np.zeros(0), np.zeros(0))   # plant_step_wall's arrays without a wall
        self._wall_of = None                          # the contact whose arrays _wall_arrays are
        super().__init__(ff, state, dt, t0)
        self._buf[-nv:] = self.v_bounds

    @Plant.state.setter
    def state(self, state: State) -> None:
        Plant.state.fset(self, state)
        q, v, i = self._state.q, self._state.v, self._current
        self._K.mass_and_bias(self._km, q, v, self._M[i], self._b[i], self._ws)

    def step(self, actuation=None, *, tau: np.ndarray | None = None) -> State:
        """``Plant.step`` (same arguments, checks, errors and State) in one compiled call: the
        CF4 step with momentum projection, a wall contact if ``contact`` is a
        :class:`~freeflyer_control.physics.contact.WallContact`, and the divergence check
        (``physics.kernels.divergence.checked_plant_step``). Another contact model takes the
        Python step."""
        contact = self.contact
        if contact is not None and type(contact) is not WallContact:  # another contact model
            state = super().step(actuation, tau=tau)
            i = self._current
            self._K.mass_and_bias(self._km, state.q, state.v, self._M[i], self._b[i], self._ws)
            return state
        wall, wall_out = self._no_wall if contact is None else self._wall(contact)
        if self.diverged is not None:
            raise PlantDiverged(self.diverged, self.t)
        q0, v0 = self._state.q, self._state.v
        tau = generalized_forces(self.ff, q0, actuation or Actuation(), v0) if tau is None else self.forces(tau)
        args = self.step_arguments(tau, wall, wall_out)
        try:
            code, energy, work = self._checked_step(*args)
        except (np.linalg.LinAlgError, ValueError, RuntimeError) as exc:  # NaN in a Cholesky factor
            self.refuse(None, 0.0, 0.0, args, f"the dynamics could not be evaluated ({exc})")
        self.accept(code, energy, work, args)
        if contact is not None:  # a floating wall moves by the step's impulse
            self.last_contact_impulse = wall_out[:self._sizes[2]].copy()
            contact.after_step(self.last_contact_impulse, self.dt)
        return self._state

    def step_arguments(self, tau: np.ndarray, wall: np.ndarray | None = None, wall_out: np.ndarray | None = None) -> tuple:
        """``divergence.checked_plant_step``'s arguments for a step from the current state under
        the generalized forces ``tau`` (nv,), its new state and momentum fresh arrays (the State
        and momentum handed out before are never written again). For :meth:`step`, and for a
        compiled caller that makes the same call itself (sim.fast.period)."""
        if wall is None:
            wall, wall_out = self._no_wall
        nq, nv, nb = self._sizes
        return (self._km, self._planar, nb, self._state.q, self._state.v, tau, self.dt, self.momentum_world,
                self._energy, self._buf, self._current, np.empty(nq), np.empty(nv), np.empty(nb), wall, wall_out)

    def accept(self, code: float, energy: float, work: float, args: tuple) -> State:
        """The step the check on ``args`` (:meth:`step_arguments`) answered with (code, kinetic
        energy J, work J): the new state when it passed, else :meth:`refuse`."""
        if code != 0.0:
            self.refuse(code, energy, work, args)
        self._current = 1 - self._current   # M, b at the new state are the next step's
        self._energy = energy
        self.momentum_world = args[13]
        self.last_acceleration = self._ws[14][2].copy()   # k1 = a(q0, v0)
        self._state = State(args[11], args[12])
        self.t += self.dt
        return self._state

    def refuse(self, code: float | None, energy: float, work: float, args: tuple, reason: str = "") -> None:
        """Raise PlantDiverged for the step on ``args`` the check refused with ``code`` (None:
        the dynamics could not be evaluated, ``reason`` says why); the plant keeps its state."""
        if code == self._speed_code:
            reason = velocity_reason(self.ff, args[11], args[12], self.v_bounds)
        elif code is not None:
            reason = energy_reason(self._energy, energy, work)
        self.diverged = f"plant diverged at t = {self.t + self.dt:.6g} s: {reason}"
        raise PlantDiverged(self.diverged, self.t)

    def _wall(self, contact: WallContact) -> tuple[np.ndarray, np.ndarray]:
        """(wall, wall_out) of ``rigid_body.plant_step_wall`` for ``contact`` as it is now (a
        floating wall's offset and speed change every step)."""
        if self._wall_of is not contact:
            nq, nv, nb = self._sizes
            frame = self.ff.model.frames[contact.fid]
            self._wall_arrays = (np.concatenate([contact.point, contact.normal, [contact.stiffness, contact.damping,
                                 0.0, 0.0, 0.0, 0.0], frame.placement.translation, [frame.parentJoint - 1]]),
                                 np.zeros(nb + 1 + 2 * nv))
            self._wall_of = contact
        wall = self._wall_arrays[0]
        wall[8], wall[9] = contact.offset, contact.speed
        return self._wall_arrays


def make_plant(ff: FreeFlyerModel, state: State, dt: float, *, compiled: bool | None = None, t0: float = 0.0):
    """``(plant, note)``: a :class:`CompiledPlant` when ``compiled`` is True, or None and numba
    is available and covers the robot; else the Python ``Plant``; its clock starts at ``t0`` s.
    ``note`` says which, and why (one line, for the node's log or the run's first line), with the
    compile (or cache load) time.

    Raises:
        ImportError / NotCovered: ``compiled=True`` and the compiled step cannot be used.
    """
    from freeflyer_control.physics.kernels import available

    if compiled is False:
        return Plant(ff, state, dt, t0), "plant step: Python (compiled step not asked for)"
    if compiled is None and not available():
        return Plant(ff, state, dt, t0), "plant step: Python (numba not installed: pip extra 'fast')"
    from freeflyer_control.physics.kernels.arrays import NotCovered

    start = time.perf_counter()
    try:
        plant = CompiledPlant(ff, state, dt)
        with compile_warning("the plant step", _log):
            plant.step(tau=np.zeros(ff.model.nv))   # compiles, or loads numba's cache
            fastpath.warm("saturation")   # the commands' saturation every step (physics.actuators)
    except NotCovered as exc:
        if compiled:
            raise
        return Plant(ff, state, dt, t0), f"plant step: Python ({exc})"
    plant.t = t0
    plant.state = state   # the warm-up step undone
    return plant, f"plant step: compiled (numba, ready in {time.perf_counter() - start:.1f} s)"
