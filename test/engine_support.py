"""The package's two engines behind one interface, so that a physics claim can be held on both.

* ``python``: Pinocchio through the package (``physics.dynamics``), the Python ``Plant``, the
  NumPy path of the GJM and H*/C* (``fastpath.forced("numpy")``), ``run_simulation(fast=False)``.
* ``compiled``: the numba kernels only: ``physics.kernels.rigid_body`` (CRBA + RNEA, ABA, the
  CF4 plant step through ``CompiledPlant``), the frame Jacobian of the compiled resolved rate,
  ``physics.kernels.reduced``'s ``gjm_post`` / ``reduced_post`` on those, and the compiled
  lockstep ``run_fast`` (``run_simulation(fast=True)``). Skipped, with the reason, without numba.

Tests take ``engine`` from :data:`ENGINES` (``@pytest.mark.parametrize("engine", ENGINES)``).
"""

from __future__ import annotations

import functools

import numpy as np
import pinocchio as pin
import pytest

from freeflyer_control.model import FreeFlyerModel
from freeflyer_control.physics import fastpath, kernels
from freeflyer_control.physics.dynamics import forward_dynamics, mass_matrix, nonlinear_effects
from freeflyer_control.physics.gjm import generalized_jacobian, mode_layout
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.plant import Plant
from freeflyer_control.physics.reduced import reduced_dynamics, reduced_plan
from freeflyer_control.physics.state import State
from freeflyer_control.sim.config import SimConfig
from freeflyer_control.sim.result import SimResult
from freeflyer_control.sim.runner import run_simulation


class PythonEngine:
    name = "python"

    def mass_and_bias(self, ff: FreeFlyerModel, q: np.ndarray, v: np.ndarray):
        """M(q) (nv, nv) and b(q, v) (nv,) of M nu' + b = tau (Pinocchio's CRBA, RNEA)."""
        data = ff.create_data()
        return mass_matrix(ff, data, q), nonlinear_effects(ff, data, q, v)

    def forward_dynamics(self, ff, q, v, tau) -> np.ndarray:
        """nu' under generalized forces tau (Pinocchio's ABA)."""
        return forward_dynamics(ff, ff.create_data(), q, v, tau)

    def plant(self, ff: FreeFlyerModel, state: State, dt: float) -> Plant:
        return Plant(ff, state, dt)

    def reduced(self, ff: FreeFlyerModel, state: State, mode: Mode | str):
        """(H*, C*) of ``mode`` at ``state``, the NumPy / LAPACK reference."""
        with fastpath.forced("numpy"):
            rd = reduced_dynamics(ff, ff.create_data(), state, mode)
        return rd.H, rd.C

    def gjm(self, ff, state, mode, frame: str, point=None):
        """(J*, drift) of a point (``frame`` coordinates, m) in ``mode``, momentum at ``state``."""
        with fastpath.forced("numpy"):
            G = generalized_jacobian(ff, ff.create_data(), state, mode, frame, point=point)
        return G.matrix, G.drift

    def frame_placement(self, ff, q, frame: str):
        """(R, p) of ``frame`` in world."""
        data = ff.create_data()
        pin.framesForwardKinematics(ff.model, data, q)
        placement = data.oMf[ff.frame_id(frame)]
        return placement.rotation.copy(), placement.translation.copy()

    def run(self, config: SimConfig) -> SimResult:
        return run_simulation(config, fast=False)


class CompiledEngine:
    name = "compiled"

    def __init__(self):
        self._models: dict[int, tuple] = {}

    def _kernel(self, ff: FreeFlyerModel):
        """(km arrays, workspace, per-body buffers) of ``ff``, built once per model object."""
        entry = self._models.get(id(ff))
        if entry is None or entry[0] is not ff:
            from freeflyer_control.physics.kernels import rigid_body as K
            from freeflyer_control.physics.kernels.arrays import kernel_model

            km = kernel_model(ff).arrays()
            m = ff.model
            n = m.njoints - 1
            ws = K.workspace(n, m.nq, m.nv, ff.nb)
            entry = self._models[id(ff)] = (ff, km, ws, n)
        return entry[1:]

    def mass_and_bias(self, ff, q, v):
        from freeflyer_control.physics.kernels import rigid_body as K

        km, ws, _ = self._kernel(ff)
        nv = ff.model.nv
        M, b = np.empty((nv, nv)), np.empty(nv)
        K.mass_and_bias(km, np.ascontiguousarray(q, float), np.ascontiguousarray(v, float), M, b, ws)
        return M, b

    def forward_dynamics(self, ff, q, v, tau):
        from freeflyer_control.physics.kernels import rigid_body as K

        km, ws, _ = self._kernel(ff)
        a = np.empty(ff.model.nv)
        K.forward_dynamics(km, np.ascontiguousarray(q, float), np.ascontiguousarray(v, float),
                           np.ascontiguousarray(tau, float), a, ws)
        return a

    def plant(self, ff, state, dt):
        from freeflyer_control.physics.kernels.plant import CompiledPlant

        return CompiledPlant(ff, state, dt)

    def reduced(self, ff, state, mode):
        from freeflyer_control.physics.kernels import reduced as PC

        M, b = self.mass_and_bias(ff, state.q, state.v)
        plan = reduced_plan(PC, ff, mode, False)
        H, C, info = PC.reduced_post(M, b, np.ascontiguousarray(state.v, float), state.q, plan.layout)
        assert info == 0, f"reduced_post: Cholesky failed ({info})"
        return H, C

    def _frame(self, ff, q, frame: str, point):
        """The frame's world placement and LOCAL_WORLD_ALIGNED Jacobian (of ``point`` on it)
        from the compiled kinematics."""
        from freeflyer_control.control.kernels import resolved_rate as TK
        from freeflyer_control.physics.kernels import rigid_body as K

        km, _, n = self._kernel(ff)
        R, p, oR, op = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 3, 3)), np.empty((n, 3))
        K.forward_kinematics(km, np.ascontiguousarray(q, float), R, p)
        TK.world_placements(km, R, p, oR, op)
        f = ff.model.frames[ff.frame_id(frame)]
        fR, fp = f.placement.rotation.copy(), f.placement.translation.copy()
        if point is not None:
            fp = fp + fR @ np.asarray(point, dtype=float)
        J, Rf, pf = np.empty((6, ff.model.nv)), np.empty((3, 3)), np.empty(3)
        TK.frame_jacobian(km, oR, op, f.parentJoint - 1, fR, fp, J, Rf, pf)
        return Rf, pf, J

    def gjm(self, ff, state, mode, frame, point=None):
        from freeflyer_control.physics.kernels import reduced as PC

        _, _, J = self._frame(ff, state.q, frame, point)
        M, _ = self.mass_and_bias(ff, state.q, state.v)
        layout = mode_layout(PC, ff, Mode.parse(mode))
        matrix, drift, info = PC.gjm_post(M, J, np.ascontiguousarray(state.v, float), state.q, layout, np.zeros(0))
        assert info == 0, f"gjm_post: Cholesky failed ({info})"
        return matrix, drift

    def frame_placement(self, ff, q, frame):
        Rf, pf, _ = self._frame(ff, q, frame, None)
        return Rf, pf

    def run(self, config):
        return run_simulation(config, fast=True)


ENGINES = [
    pytest.param(PythonEngine(), id="python"),
    pytest.param(CompiledEngine(), id="compiled", marks=pytest.mark.skipif(
        not kernels.available(), reason="the compiled engine needs numba (pip install .[fast])")),
]


def with_engines(values):
    """Fixture parameters ``(value, engine)``: each of ``values`` on each engine, the compiled
    ones skipped without numba."""
    return [pytest.param((value, engine.values[0]), id=f"{value}-{engine.id}", marks=engine.marks)
            for value in values for engine in ENGINES]


_BY_NAME = {p.id: p.values[0] for p in ENGINES}


@functools.lru_cache(maxsize=None)
def _wilde_floating(engine_name: str, robot_name: str) -> SimResult:
    return _BY_NAME[engine_name].run(SimConfig(robot=robot_name, mode="floating", maneuver="wilde",
                                               rate=100.0, log_rate=20.0))


def wilde_floating(engine, robot_name: str) -> SimResult:
    """Wilde et al.'s whole maneuver (one joint after the other, +-0.1 rad/s, K_P = K_D = 1) in
    floating mode on ``engine``, at 100 Hz (ample for K_P = K_D = 1), logged at 20 Hz; run once
    per session and shared by the tests of test_control.py and test_wilde_tutorial.py."""
    return _wilde_floating(engine.name, robot_name)


def fixed_base_model(ff: FreeFlyerModel, q: np.ndarray):
    """Pinocchio's fixed-base model of the same joints (the floating joint locked at q's base
    pose) and its data: the independent reference of the heavy-base limits."""
    model = pin.buildReducedModel(ff.model, [1], q)
    return model, model.createData()


def one_over_scale(errors_by_scale: dict[float, float], bound: float) -> str | None:
    """None if the errors (relative, keyed by the base's scale s) fall as 1/s (each step of the
    scale divides them at least by half the step) to below ``bound`` at the largest s; else why not."""
    scales = sorted(errors_by_scale)
    for small, large in zip(scales, scales[1:]):
        if not errors_by_scale[large] < errors_by_scale[small] * small / large * 2:
            return f"not O(1/s): {errors_by_scale}"
    if not errors_by_scale[scales[-1]] < bound:
        return f"{errors_by_scale[scales[-1]]:.3g} >= {bound:g} at s = {scales[-1]:g}"
    return None
