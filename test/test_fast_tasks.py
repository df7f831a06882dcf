"""The compiled engine on end-effector maneuvers: its resolved-rate kernels against the Python
definitions they mirror (Pinocchio's frame Jacobian, LAPACK's singular values, the damped
least-squares law, ResolvedRate.joint_rates), and closed loops of both controllers against the
Python engine.

Skipped where numba is not installed (it is the optional 'fast' extra).
"""

import numpy as np
import pinocchio as pin
import pytest

pytest.importorskip("numba", reason="the compiled path needs numba (pip install .[fast])")

from freeflyer_control.control.loop import ControlLoop
from freeflyer_control.control.maneuvers import EECircle, EEPoint, make_maneuver
from freeflyer_control.control.damping import damping_lambda2
from freeflyer_control.control.resolved_rate import damped_least_squares
from freeflyer_control.model import load_robot
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.kernels import reduced as PC
from freeflyer_control.physics.gjm import mode_layout
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.singularity import thin_svd
from freeflyer_control.physics.state import State, with_joint_positions
from freeflyer_control.physics.kernels import divergence
from freeflyer_control.physics.kernels import rigid_body as K
from freeflyer_control.control.kernels import resolved_rate as TK
from freeflyer_control.physics.kernels.arrays import kernel_model
from freeflyer_control.sim.fast.runner import _task_arrays
from freeflyer_control.sim.config import SimConfig, initial_state
from fast_support import assert_same_run
from test_fast_kernel import MODELS, load

MODES = list(Mode)
# Two evaluations of the same few-hundred-flop expressions on O(1) data: ~1e-15; the bound
# leaves room for the condition of the solves (the task rows' sigma_min >= 0.01 here).
ROUND_OFF = 1e-11


def random_state(ff, rng, speed=0.3):
    m = ff.model
    q = pin.integrate(m, pin.neutral(m), rng.normal(size=m.nv))
    return State(q, speed * rng.normal(size=m.nv))


@pytest.mark.parametrize("name", MODELS)
def test_frame_jacobian_and_placement_are_pinocchios_local_world_aligned(name):
    ff = load(name)
    km = kernel_model(ff).arrays()
    n = km[0].shape[0]
    R, p, oR, op = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 3, 3)), np.empty((n, 3))
    J, Rf, pf = np.empty((6, ff.model.nv)), np.empty((3, 3)), np.empty(3)
    data = ff.create_data()
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = random_state(ff, rng).q
        K.forward_kinematics(km, q, R, p)
        TK.world_placements(km, R, p, oR, op)
        for ee in ff.end_effectors:
            frame = ff.model.frames[ff.frame_id(ee)]
            TK.frame_jacobian(km, oR, op, frame.parentJoint - 1, frame.placement.rotation.copy(),
                              frame.placement.translation.copy(), J, Rf, pf)
            expected = pin.computeFrameJacobian(ff.model, data, q, ff.frame_id(ee), pin.LOCAL_WORLD_ALIGNED)
            np.testing.assert_allclose(J, expected, rtol=0, atol=1e-13)
            np.testing.assert_allclose(pf, data.oMf[ff.frame_id(ee)].translation, rtol=0, atol=1e-13)
            np.testing.assert_allclose(Rf, data.oMf[ff.frame_id(ee)].rotation, rtol=0, atol=1e-13)


def _matrices(rng):
    """Task-row matrices of every shape a tick meets, well and ill conditioned, rank-deficient."""
    out = [rng.normal(size=shape) for shape in [(6, 6), (3, 4), (6, 7), (6, 12), (3, 2), (6, 3), (1, 1)]]
    U, _, Vt = np.linalg.svd(rng.normal(size=(6, 6)))
    out.append(U @ np.diag([2.0, 1.0, 0.5, 0.1, 0.01, 1e-4]) @ Vt)  # near-singular
    out.append(U[:, :5] @ np.diag([2.0, 1.0, 0.5, 0.1, 0.01]) @ Vt[:5])  # rank 5 of 6
    out.append(np.zeros((3, 4)))
    return out


def test_jacobi_singular_values_are_lapacks():
    rng = np.random.default_rng(2)
    for J in _matrices(rng):
        m, n = J.shape
        k = min(m, n)
        s, A = np.empty(k), np.empty((k, max(m, n)))
        TK.singular_values(np.ascontiguousarray(J), m, n, A, s)
        expected = np.linalg.svd(J, compute_uv=False)
        # one-sided Jacobi and LAPACK's bidiagonal QR both have errors ~eps sigma_max
        np.testing.assert_allclose(s, expected, rtol=0, atol=1e-14 * max(1.0, expected.max()))


def test_jacobi_svd_solve_is_the_python_damped_least_squares_on_lapacks_svd():
    """The compiled SVD route (one-sided Jacobi with its rotations kept, where the Python path
    calls LAPACK): undamped with singular values dropped, and damped, on every shape. Tolerance:
    both SVDs are backward stable (errors ~eps sigma_max); the pseudo-inverse amplifies them by
    1 / sigma_min of the kept values, so the bound scales with it (1e-4 at the worst here)."""
    rng = np.random.default_rng(5)
    for J in _matrices(rng):
        m, n = J.shape
        k = min(m, n)
        rhs = rng.normal(size=m)
        svd = thin_svd(J)
        for lam2 in (0.0, 1e-4):
            expected = damped_least_squares(svd, rhs, lam2)
            qdot = np.full(n, np.nan)
            TK.svd_solve(np.ascontiguousarray(J), rhs, m, n, lam2, np.empty((k, max(m, n))), np.empty(k),
                         np.empty((k, k)), qdot)
            kept = svd[1][svd[1] > 1e-9 * svd[1][0]] if k and svd[1][0] > 0 else np.ones(1)
            scale = max(1.0, np.abs(expected).max()) / max(min(kept.min(), 1.0), 1e-3)
            np.testing.assert_allclose(qdot, expected, rtol=0, atol=ROUND_OFF * scale)


def test_jacobi_svd_solve_refuses_a_non_finite_jacobian_as_lapack_does():
    J = np.eye(3)
    J[1, 2] = np.nan
    with pytest.raises(np.linalg.LinAlgError, match="non-finite entry"):
        TK.svd_solve(J, np.ones(3), 3, 3, 0.0, np.empty((3, 3)), np.empty(3), np.empty((3, 3)), np.empty(3))


@pytest.mark.parametrize("sigma_0", [0.02, 0.0, 0.3])
def test_damped_rates_are_the_python_damped_least_squares_with_its_rate_limit(sigma_0):
    """Each branch: the undamped pseudo-inverse (Cholesky), damped (Cholesky of J J^T +
    lambda^2 I), dropped singular values (the SVD), tall and wide, limited or not."""
    rng = np.random.default_rng(3)
    lambda_max = 0.05
    for J in _matrices(rng):
        m, n = J.shape
        rhs = rng.normal(size=m)
        for limit in (np.full(n, 100.0), np.full(n, 0.05)):
            svd = thin_svd(J)
            lam2 = damping_lambda2(svd[1][-1], sigma_0, lambda_max)
            expected = damped_least_squares(svd, rhs, lam2)
            ratio = np.max(np.abs(expected) / limit)
            if ratio > 1.0:
                expected = expected / ratio
            k = max(m, n)
            qdot = np.empty(n)
            sigma, got_lam2, limited = TK.damped_rates(
                np.ascontiguousarray(J), rhs, m, n, sigma_0, lambda_max, limit, qdot, np.empty((k, k)),
                np.empty((k, k)), np.empty(k), np.empty(k), np.empty((k, k)))
            scale = max(1.0, np.abs(expected).max())
            np.testing.assert_allclose(qdot, expected, rtol=0, atol=ROUND_OFF * scale / max(svd[1][-1], 1e-3))
            assert limited == (ratio > 1.0)
            assert abs(got_lam2 - lam2) < 1e-15
            if not np.isnan(sigma):  # NaN: the Cholesky test showed sigma_min > sigma_0
                assert abs(sigma - svd[1][-1]) < 1e-14
            else:
                assert svd[1][-1] > sigma_0


@pytest.mark.parametrize("maneuver", ["ee-point", "ee-circle"])
def test_task_references_are_the_maneuvers_own_functions_compiled(maneuver):
    ff = load_robot("dual_arm_planar")
    man = make_maneuver(maneuver)
    man.start(ff, initial_state(ff, SimConfig(robot=ff.name, maneuver=maneuver), man))
    kind, params, starts, axes = _reference_arrays(man)
    pos, vel = np.empty((2, 3)), np.empty((2, 3))
    for t in (0.0, 0.37, 5.0, 9.99, 14.2, 30.0):
        TK.task_references(kind, t, params, starts, axes, pos, vel)
        for e, ref in enumerate(man.task_references(t)):
            np.testing.assert_allclose(pos[e], ref.position, rtol=0, atol=1e-15)
            np.testing.assert_allclose(vel[e], ref.linear_velocity, rtol=0, atol=1e-15)


def _reference_arrays(man):
    if isinstance(man, EEPoint):
        return TK.REF_EE_POINT, np.array([man.move_time, 0.0]), man.starts, man.offsets
    assert isinstance(man, EECircle)
    return TK.REF_EE_CIRCLE, np.array([man.period, man.radius]), man.starts, man.axes


# every_kind (test_fast_kernel: revolute, prismatic and continuous joints off the axes) has no
# wheels or thrusters: it flies floating mode only.
@pytest.mark.parametrize("name, mode", [(name, mode) for name in ("planar_4link", "spatial_6link", "dual_arm_planar",
                                                                  "spatial_dual_arm") for mode in MODES]
                         + [("every_kind", Mode.FLOATING)])
def test_compiled_joint_rates_are_resolved_rate_joint_rates_in_every_mode(name, mode):
    """The resolved-rate law at the measured state (the resolved_rate controller) and at the
    integrated reference (computed torque's reference generator, a continuous and a prismatic
    arm joint included), against ResolvedRate.joint_rates on the same states and targets."""
    ff = load(name)
    man = make_maneuver("ee-circle")
    start = initial_state(ff, SimConfig(maneuver="ee-circle"), man)
    loop = ControlLoop(ff, man, mode=mode)
    loop.start(start)
    task = _task_arrays(ff, loop, man, start, mode)
    kmm = kernel_model(ff)
    km, nq, nv, nb = kmm.arrays(), ff.model.nq, ff.model.nv, ff.nb
    na, ne = kmm.arm_v.size, len(ff.end_effectors)
    ws = K.workspace(km[0].shape[0], nq, nv, nb)
    tws, rws = TK.task_workspace(km[0].shape[0], nv, nb), TK.rate_workspace(nq, nv, nb, na, 6 * ne)
    layout = mode_layout(PC, ff, mode)
    rng = np.random.default_rng(4)
    M, b = np.empty((nv, nv)), np.empty(nv)
    pos, vel, qa, tpos, tvel = np.empty(na), np.empty(na), np.empty(na), np.empty((ne, 3)), np.empty((ne, 3))
    for trial in range(4):
        # near the start pose (where the maneuver flies, away from singular arms)
        state = State(pin.integrate(ff.model, start.q, 0.05 * rng.normal(size=nv)), 0.2 * rng.normal(size=nv))
        t = 2.5 * trial
        tasks = man.task_references(t)
        K.mass_and_bias(km, state.q, state.v, M, b, ws)
        K.arm_positions(state.q, kmm.arm_q, kmm.arm_kind, qa)
        TK.ee_joint_reference(km, True, layout, nb, state.q, state.v, M, ws[0], ws[1], t, 1e-3, task, tws, rws, ws,
                              kmm.arm_q, kmm.arm_kind, qa, pos, vel, tpos, tvel, True)
        with fastpath.forced("numpy"):  # the definition, not ResolvedRate's own compiled path
            expected = loop.rr.joint_rates(state, mode, tasks)
        np.testing.assert_allclose(vel, expected.joint_rates, rtol=0, atol=ROUND_OFF)
        np.testing.assert_allclose(pos, qa, rtol=0, atol=0)
        np.testing.assert_allclose(tpos, [r.position for r in tasks], rtol=0, atol=1e-15)
        # computed torque: the GJM with the arm at the integrated reference q_int
        q_int = task[12]
        q_int[:] = qa + 0.02 * rng.normal(size=na)
        q_ref = with_joint_positions(ff, state.q, ff.arm_v_indices, q_int)
        with fastpath.forced("numpy"):
            expected = loop.rr.joint_rates(State(q_ref, state.v), mode, tasks)
        before = q_int.copy()
        sigma = TK.ee_joint_reference(km, False, layout, nb, state.q, state.v, M, ws[0], ws[1], t, 1e-3, task, tws, rws, ws,
                                      kmm.arm_q, kmm.arm_kind, qa, pos, vel, tpos, tvel, True)
        np.testing.assert_allclose(vel, expected.joint_rates, rtol=0, atol=ROUND_OFF)
        np.testing.assert_allclose(q_int, before + expected.joint_rates * 1e-3, rtol=0, atol=ROUND_OFF)
        np.testing.assert_allclose(pos, q_int, rtol=0, atol=0)
        assert abs(sigma - expected.sigma_min) < ROUND_OFF


@pytest.mark.parametrize("controller", ["computed_torque", "resolved_rate"])
@pytest.mark.parametrize("maneuver", ["ee-point", "ee-circle"])
@pytest.mark.parametrize("mode", [m.value for m in MODES])
def test_end_effector_maneuvers_in_every_mode_match_the_python_engine(controller, maneuver, mode):
    """0.4 s of each at 1 kHz on spatial_6link, the base wrench through the thrusters: every
    logged series (targets and sigma_min included) and summary figure to round-off."""
    fast = assert_same_run(SimConfig(robot="spatial_6link", controller=controller, maneuver=maneuver, mode=mode,
                                     duration=0.4, rate=1000.0, log_rate=100.0))
    assert np.isfinite(fast.series["sigma_min"]).all() and np.isfinite(fast.series["ee_targets"]).all()


@pytest.mark.parametrize("controller", ["computed_torque", "resolved_rate"])
def test_two_arms_mass_error_and_a_mode_schedule_on_end_effector_maneuvers_match_the_python_engine(controller):
    assert_same_run(SimConfig(robot="dual_arm_planar", controller=controller, maneuver="ee-circle", duration=1.0,
                              rate=500.0, mass_error=0.1, seed=2, log_rate=50.0,
                              mode_schedule=[(0.0, "rotation-floating"), (0.3, "flying"), (0.7, "floating")]))
    assert_same_run(SimConfig(robot="spatial_dual_arm", controller=controller, maneuver="ee-point", duration=0.5,
                              rate=1000.0, base_actuation="ideal", log_rate=100.0,
                              mode_schedule=[(0.0, "floating"), (0.2, "rotation-flying")]))


@pytest.mark.parametrize("robot, maneuver, rate, controller", [
    ("planar_4link", "ee-circle", 1.0, "computed_torque"),
    ("spatial_6link", "ee-circle", 2.0, "resolved_rate"),
    ("planar_4link", "ee-point", 1.0, "resolved_rate"),
])
def test_a_run_that_diverges_stops_where_and_as_the_python_engine_says(robot, maneuver, rate, controller):
    """End-effector maneuvers at 1-2 Hz are too stiff for the step: the compiled engine checks
    every plant step as Plant.step does and ends the run at the same step with the same reason."""
    fast = assert_same_run(SimConfig(robot=robot, maneuver=maneuver, rate=rate, duration=20.0, controller=controller))
    assert fast.summary["plant_diverged"].startswith("plant diverged at t = ")
    assert "the step is too large for the dynamics: raise the rate" in fast.summary["plant_diverged"]
    assert fast.summary["t_reached_s"] < 20.0


def test_step_check_rejects_what_plant_step_rejects():
    """The compiled check's three outcomes on one spatial_6link step: accepted, a speed over
    its bound (or NaN), an energy gain the work does not explain."""
    from freeflyer_control.physics.plant import velocity_bounds
    from freeflyer_control.control.kernels import computed_torque as CK

    ff = load_robot("spatial_6link")
    km = kernel_model(ff).arrays()
    nv = ff.model.nv
    rng = np.random.default_rng(5)
    state = random_state(ff, rng, speed=0.1)
    M = np.empty((nv, nv))
    K.mass_and_bias(km, state.q, state.v, M, np.empty(nv), K.workspace(km[0].shape[0], ff.model.nq, nv, ff.nb))
    stages = np.zeros((9, nv))  # a step with zero accelerations: work = h tau . v0
    tau, h, bounds = np.zeros(nv), 1e-3, velocity_bounds(ff)
    energy = 0.5 * state.v @ M @ state.v
    assert divergence.step_check(state.v, tau, h, state.v, M, stages, bounds, energy)[0] == 0.0
    fast = state.v.copy()
    fast[ff.nb] = 1.01 * bounds[ff.nb]
    assert divergence.step_check(state.v, tau, h, fast, M, stages, bounds, energy)[0] == divergence.DIVERGED_SPEED
    fast[ff.nb] = np.nan
    assert divergence.step_check(state.v, tau, h, fast, M, stages, bounds, energy)[0] == divergence.DIVERGED_SPEED
    code, gained, work = divergence.step_check(state.v, tau, h, 1.1 * state.v, M, stages, bounds, energy)
    assert code == divergence.DIVERGED_ENERGY and work == 0.0 and gained == pytest.approx(1.21 * energy, rel=1e-12)


def test_a_run_through_the_damped_region_matches_the_python_engine():
    """Resolved rate on ee-circle drives spatial_6link's task rows below sigma_0 = 0.02 from
    t = 4.4 s: the loop crosses from the undamped Cholesky route into the damped one (Jacobi
    singular values, J^T (J J^T + lambda^2 I)^-1) and every logged series still matches the
    Python engine's SVD."""
    fast = assert_same_run(SimConfig(robot="spatial_6link", controller="resolved_rate", maneuver="ee-circle",
                                     duration=6.0, rate=250.0, log_rate=50.0))
    sigma = fast.series["sigma_min"][:, 0]
    assert sigma.min() < 0.02 < sigma.max()  # both routes were flown
