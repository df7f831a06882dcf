"""Swain et al. (doc 002) with DIGEST §4.3: the multi-arm GJM with the object included, the
reduced inertia of Eq. 38 (corrected Woodbury identity), the grasp matrix and internal forces,
and the closed-chain plant (loops held, momentum with the object conserved)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import robot

from freeflyer_control.physics.grasp_pose import check_object
from freeflyer_control.model.objects import attach_object, grasp_frame_name, load_object
from freeflyer_control.physics.closed_chain import (
    ClosedChainPlant,
    constrained_acceleration,
    multi_arm_jacobian,
    reduced_inertia_eq38,
)
from freeflyer_control.physics.dynamics import mass_matrix, nonlinear_effects
from freeflyer_control.physics.gjm import frame_jacobian, generalized_jacobian
from freeflyer_control.physics.grasp import (
    grasp_matrix,
    internal_force_basis,
    rigidity_residual,
    split_wrenches,
    squeeze_direction,
)
from freeflyer_control.physics.momentum import centroidal_momentum, world_momentum
from freeflyer_control.physics.state import State, base_rotation, make_state

PAIRS = [("dual_arm_planar", "planar_box"), ("spatial_dual_arm", "spatial_box")]
ROWS = {"planar": [0, 1, 5], "spatial": slice(None)}


def held(robot_name, obj_name):
    """(robot, object, robot holding it, a state at rest holding it)."""
    ff, obj = robot(robot_name), load_object(obj_name)
    angles = check_object(ff, obj)
    fa = attach_object(ff, obj)
    return ff, obj, fa, make_state(fa, joint_positions=angles)


def swain_multi_arm_jacobian(ff, q, ees, obj=None, ee_obj=None, T_obj=None):
    """Eqs. 23-24 written out from Pinocchio's pieces on the robot WITHOUT the object: the
    object's momentum enters the base rows through G = the object's CoM twist per unit nu (via
    the first end-effector), V_b = J_r qdot with J_r = -(M_bb + G_b' M_o G_b)^-1 (M_bq + G_b' M_o G_q),
    v_e = (J_b J_r + J_q) qdot over the arm joints."""
    data = ff.create_data()
    nb = ff.nb
    M = mass_matrix(ff, data, q)
    arm = ff.arm_v_indices
    Mbb, Mbq = M[:nb, :nb].copy(), M[:nb][:, arm].copy()
    if obj is not None:
        J1 = frame_jacobian(ff, data, q, ee_obj)
        r = T_obj.translation - data.oMf[ff.frame_id(ee_obj)].translation
        G = J1.copy()
        G[:3] -= pin.skew(r) @ J1[3:]  # object CoM twist, world axes
        R = T_obj.rotation
        Mo = np.zeros((6, 6))
        Mo[:3, :3] = obj.mass * np.eye(3)
        Mo[3:, 3:] = R @ obj.inertia @ R.T
        Mbb += G[:, :nb].T @ Mo @ G[:, :nb]
        Mbq += G[:, :nb].T @ Mo @ G[:, arm]
    Jr = -np.linalg.solve(Mbb, Mbq)
    rows = ROWS[ff.base]
    blocks = []
    for e in ees:
        J = frame_jacobian(ff, data, q, e)[rows]
        blocks.append(J[:, :nb] @ Jr + J[:, arm])
    return np.vstack(blocks)


def test_T002_1_multi_arm_jacobian_with_one_arm_and_no_object_is_the_gjm():
    ff = robot("spatial_6link")
    q = make_state(ff, joint_positions=ff.ready_pose).q
    state = State(q, np.zeros(ff.model.nv))
    J = multi_arm_jacobian(ff, ff.create_data(), state, "floating")
    gjm = generalized_jacobian(ff, ff.create_data(), state, "floating", "ee_link").matrix
    np.testing.assert_allclose(J, gjm, atol=1e-12)
    # ... and both are Swain's J_b J_r + J_q computed from the momentum matrix directly.
    np.testing.assert_allclose(J, swain_multi_arm_jacobian(ff, q, ["ee_link"]), atol=1e-10)


@pytest.mark.parametrize("robot_name,obj_name", PAIRS)
def test_T002_1_multi_arm_jacobian_includes_the_objects_momentum(robot_name, obj_name):
    ff, obj, fa, state = held(robot_name, obj_name)
    data = fa.create_data()
    J = multi_arm_jacobian(fa, data, state, "floating")
    pin.framesForwardKinematics(fa.model, data, state.q)
    T_obj = data.oMf[fa.frame_id(obj.name)]
    expected = swain_multi_arm_jacobian(ff, state.q, fa.end_effectors, obj, obj.grasps[0].end_effector, T_obj)
    np.testing.assert_allclose(J, expected, atol=1e-9 * np.abs(expected).max())
    # The object's momentum matters: without it the Jacobian differs.
    without = swain_multi_arm_jacobian(ff, state.q, fa.end_effectors)
    assert np.abs(J - without).max() > 1e-3


def schur(ff, q):
    M = mass_matrix(ff, ff.create_data(), q)
    nb = ff.nb
    return M[nb:, nb:] - M[nb:, :nb] @ np.linalg.solve(M[:nb, :nb], M[:nb, nb:])


@pytest.mark.parametrize("name", ["spatial_6link", "planar_4link", "dual_arm_planar", "spatial_dual_arm"])
def test_T002_2_eq38_inertia_equals_the_schur_complement_of_the_floating_base_mass_matrix(name):
    ff = robot(name)
    q = pin.randomConfiguration(ff.model, -np.ones(ff.model.nq), np.ones(ff.model.nq))
    q[:ff.nb] = 0.3
    q = pin.normalize(ff.model, q)
    expected = schur(ff, q)
    np.testing.assert_allclose(reduced_inertia_eq38(ff, ff.create_data(), q), expected,
                               atol=1e-10 * np.abs(expected).max())


def test_T002_2_eq38_with_a_held_object_equals_the_schur_complement_with_the_object():
    _, _, fa, state = held("spatial_dual_arm", "spatial_box")
    np.testing.assert_allclose(reduced_inertia_eq38(fa, fa.create_data(), state.q), schur(fa, state.q), atol=1e-9)


def test_T002_2_corrected_woodbury_identity_holds():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(12, 12)); M_q = A @ A.T + np.eye(12)
    B = rng.normal(size=(6, 6)); M_b = B @ B.T + np.eye(6)
    X_b = rng.normal(size=(12, 6))
    direct = np.linalg.inv(np.linalg.inv(M_q) + X_b @ np.linalg.inv(M_b) @ X_b.T)
    corrected = M_q - M_q @ X_b @ np.linalg.inv(M_b + X_b.T @ M_q @ X_b) @ X_b.T @ M_q
    # (The printed (M_b + X_b' M_b X_b)^-1 is not even defined here: X_b is 12 x 6.)
    np.testing.assert_allclose(corrected, direct, rtol=1e-9, atol=1e-9)


def test_T002_3_eq38_tends_to_the_fixed_base_inertia_as_the_base_grows():
    ff = robot("spatial_6link")
    q = make_state(ff, joint_positions=ff.ready_pose).q
    fixed = mass_matrix(ff, ff.create_data(), q)[ff.nb:, ff.nb:]
    errors = []
    for scale in (1e2, 1e4, 1e6):
        model = pin.Model(ff.model)
        model.inertias[1] = pin.Inertia(scale * model.inertias[1].mass, model.inertias[1].lever,
                                        scale * model.inertias[1].inertia)
        import dataclasses
        big = dataclasses.replace(ff, model=model)
        errors.append(np.abs(reduced_inertia_eq38(big, big.create_data(), q) - fixed).max())
    # The coupling term H_bm' H_b^-1 H_bm falls like 1/scale: 100x per step (0.02 leaves room
    # for the next order), down to ~3e-6 of the inertia at a base a million times heavier.
    assert errors[1] < 0.02 * errors[0] and errors[2] < 0.02 * errors[1]
    assert errors[2] < 1e-5 * np.abs(fixed).max()


@pytest.mark.parametrize("robot_name,obj_name", PAIRS)
def test_T002_6_internal_forces_hold_the_chain_still_and_are_the_grasp_wrenches(robot_name, obj_name):
    ff, obj, fa, state = held(robot_name, obj_name)
    plant = ClosedChainPlant(fa, obj, state, 0.002)
    data = fa.create_data()
    pos = plant.ee_positions()
    W = grasp_matrix(pos, plant.object_pose().translation, fa.base == "planar")
    f_int = 10.0 * squeeze_direction(pos, fa.base == "planar")  # 10 N squeeze
    assert np.abs(W.T @ f_int).max() < 1e-12
    rows = ROWS[fa.base]
    Jc = np.vstack([frame_jacobian(fa, data, state.q, g.end_effector)[rows] for g in obj.grasps])
    tau = Jc.T @ f_int  # the arms push on the object with f_int
    # Internal wrenches need no base actuation: they cancel on the base too.
    assert np.abs(tau[:fa.nb]).max() < 1e-10
    a, _ = constrained_acceleration(fa, data, obj, state.q, state.v, tau)
    # Not cancelled, 10 N on these links would give ~1 m/s^2. What is left is Baumgarte acting on
    # the ~1e-11 m loop error check_object's inverse kinematics leaves (w_n^2 = 400 /s^2).
    assert np.abs(a).max() < 1e-7
    np.testing.assert_allclose(plant.grasp_wrenches(tau).ravel(), f_int, atol=1e-8)


@pytest.mark.parametrize("robot_name,obj_name", PAIRS)
def test_T002_6_grasp_wrenches_move_the_robot_and_sum_to_the_objects_net_wrench(robot_name, obj_name):
    """W^T f_e is the object's net wrench (by construction of grasp 1's wrench), so the check
    that can fail is on the other side: the robot WITHOUT the object, pushed back by -f_e at its
    end-effectors, must accelerate exactly as the closed-chain plant says."""
    rng = np.random.default_rng(6)
    ff, obj, fa, state = held(robot_name, obj_name)
    plant = ClosedChainPlant(fa, obj, state, 0.002)
    tau = np.zeros(fa.model.nv)
    tau[fa.arm_v_indices] = rng.normal(size=fa.arm_v_indices.size)
    a, _ = constrained_acceleration(fa, fa.create_data(), obj, state.q, state.v, tau)
    f_e = plant.grasp_wrenches(tau)
    data = ff.create_data()
    rows = ROWS[ff.base]
    Jc = np.vstack([frame_jacobian(ff, data, state.q, g.end_effector)[rows] for g in obj.grasps])
    lhs = mass_matrix(ff, data, state.q) @ a + nonlinear_effects(ff, data, state.q, state.v)
    np.testing.assert_allclose(lhs, tau - Jc.T @ f_e.ravel(), atol=1e-9)
    manip, internal = split_wrenches(grasp_matrix(plant.ee_positions(), plant.object_pose().translation,
                                                  ff.base == "planar"), f_e.ravel())
    basis = internal_force_basis(grasp_matrix(plant.ee_positions(), plant.object_pose().translation,
                                              ff.base == "planar"))
    np.testing.assert_allclose(basis @ (basis.T @ internal), internal, atol=1e-10)


def run_held(robot_name, obj_name, seconds, tau_fn, dt=0.002):
    ff, obj, fa, state = held(robot_name, obj_name)
    plant = ClosedChainPlant(fa, obj, state, dt)
    records = []
    for k in range(int(round(seconds / dt))):
        tau = tau_fn(plant, k * dt)
        records.append((plant.state.copy(), tau))
        plant.step(tau=tau)
    return fa, obj, plant, records


def arm_torques(fa, amplitude):
    def tau_fn(plant, t):
        tau = np.zeros(fa.model.nv)
        tau[fa.arm_v_indices] = amplitude * np.sin(2.0 * t + np.arange(fa.arm_v_indices.size))
        return tau
    return tau_fn


@pytest.mark.parametrize("robot_name,obj_name,amp", [("dual_arm_planar", "planar_box", 0.5),
                                                     ("spatial_dual_arm", "spatial_box", 2.0)])
def test_T002_5_floating_closed_chain_conserves_momentum_with_the_object_and_holds_the_loops(robot_name, obj_name, amp):
    fa = attach_object(robot(robot_name), load_object(obj_name))
    fa, obj, plant, records = run_held(robot_name, obj_name, 1.0, arm_torques(fa, amp))
    data = fa.create_data()
    h0 = world_momentum(fa, data, records[0][0])
    h1 = world_momentum(fa, data, plant.state)
    # The projection keeps momentum to round-off of the 500-step sum.
    assert np.abs(h1 - h0).max() < 1e-12
    # Baumgarte at 20 rad/s holds the loops to well under a micrometre at 500 Hz.
    assert plant.max_constraint_error < 1e-6
    planar = fa.base == "planar"
    rows = ROWS[fa.base]
    moved = 0.0
    for state, _ in records[::25]:
        pin.forwardKinematics(fa.model, data, state.q, state.v)
        pin.updateFramePlacements(fa.model, data)
        v_e = np.concatenate([pin.getFrameVelocity(fa.model, data, fa.frame_id(g.end_effector),
                                                   pin.LOCAL_WORLD_ALIGNED).vector[rows] for g in obj.grasps])
        pos = [data.oMf[fa.frame_id(g.end_effector)].translation for g in obj.grasps]
        W = grasp_matrix(np.array(pos), data.oMf[fa.frame_id(obj.name)].translation, planar)
        # Rigid up to the loop closure's velocity error, which Baumgarte keeps below 1e-5 of
        # the end-effector speeds at 500 Hz (measured: 2e-6 at 1 m/s, spatial_dual_arm).
        assert np.abs(rigidity_residual(W, v_e)).max() < 1e-5 * max(1.0, np.abs(v_e).max())
        moved = max(moved, np.abs(v_e).max())
    assert moved > 1e-2  # the object really moved


def test_T002_4_flying_base_wrench_equals_the_rate_of_total_momentum_with_the_object():
    ff = robot("dual_arm_planar")
    obj = load_object("planar_box")
    fa = attach_object(ff, obj)
    wrench = np.array([0.8, -0.5, 0.2])  # base_link axes, about the base origin

    def tau_fn(plant, t):
        tau = arm_torques(fa, 0.3)(plant, t)
        tau[:3] = wrench
        return tau

    fa, obj, plant, records = run_held("dual_arm_planar", "planar_box", 1.0, tau_fn)
    data = fa.create_data()
    # Total linear momentum P (base, links, object) changes by the integral of R(t) f:
    # trapezoid over the recorded steps, O(dt^2) ~ 1e-6 relative.
    forces = [base_rotation(fa, s.q)[:2, :2] @ wrench[:2] for s, _ in records]
    forces.append(base_rotation(fa, plant.state.q)[:2, :2] @ wrench[:2])
    impulse = plant.dt * (np.sum(forces, axis=0) - 0.5 * (forces[0] + forces[-1]))
    P0 = centroidal_momentum(fa, data, records[0][0])[:2]
    P1 = centroidal_momentum(fa, data, plant.state)[:2]
    np.testing.assert_allclose(P1 - P0, impulse, atol=1e-5)
    assert np.linalg.norm(impulse) > 0.5
    assert plant.max_constraint_error < 1e-6


def test_make_plant_gives_the_closed_chain_plant_only_for_a_held_object():
    from freeflyer_control.physics.closed_chain import make_plant
    from freeflyer_control.physics.plant import Plant

    ff, obj, fa, state = held("dual_arm_planar", "planar_box")
    closed = make_plant(fa, state, 0.002, obj)
    opened = make_plant(ff, make_state(ff), 0.002)
    assert isinstance(closed, ClosedChainPlant) and isinstance(closed, Plant)
    assert type(opened) is Plant


# The closed-chain dynamics before they were rewritten for speed (bench/bench_closed_chain.py):
# each loop's relative Jacobian, drift, velocity and error from differences of Pinocchio's frame
# Jacobians, velocities and classical accelerations of the end-effector and the grasp frame,
# shifted to the end-effector origin, and the stacked system solved by ABA, CRBA and the Schur
# complement. The fast path must give the same numbers.
def frame_difference_loop_terms(fa, obj, q, v):
    """(J, drift, velocity, error) of every loop, rows of physics.closed_chain.LoopTerms."""
    model, data = fa.model, fa.create_data()
    pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))
    pin.computeJointJacobians(model, data)
    pin.updateFramePlacements(model, data)
    lwa = pin.LOCAL_WORLD_ALIGNED
    rows = ROWS[fa.base]
    blocks = []
    for g in obj.grasps[1:]:
        fe, fg = fa.frame_id(g.end_effector), fa.frame_id(grasp_frame_name(obj, g.end_effector))
        oe, og = data.oMf[fe], data.oMf[fg]
        r = oe.translation - og.translation
        Jg = pin.getFrameJacobian(model, data, fg, lwa)
        Jg[:3] -= pin.skew(r) @ Jg[3:]  # the object point at the end-effector origin
        ve, vg = (pin.getFrameVelocity(model, data, f, lwa) for f in (fe, fg))
        ae, ag = (pin.getFrameClassicalAcceleration(model, data, f, lwa) for f in (fe, fg))
        w, dv = vg.angular, ve.linear - vg.linear
        drift = np.concatenate([ae.linear - ag.linear - np.cross(ag.angular, r) - np.cross(w, dv),
                                ae.angular - ag.angular])
        vel = np.concatenate([dv - np.cross(w, r), ve.angular - w])
        err = np.concatenate([r, pin.log3(oe.rotation @ og.rotation.T)])
        J = pin.getFrameJacobian(model, data, fe, lwa) - Jg
        blocks.append((J[rows], drift[rows], vel[rows], err[rows]))
    return tuple(np.concatenate([b[i] for b in blocks]) for i in range(4))


def frame_difference_acceleration(fa, obj, q, v, tau):
    """(nu', lambda) by ABA for the free motion and the Schur complement J M^-1 J^T."""
    from freeflyer_control.physics.closed_chain import BAUMGARTE_OMEGA, BAUMGARTE_ZETA

    J, drift, vel, err = frame_difference_loop_terms(fa, obj, q, v)
    wanted = -drift - 2 * BAUMGARTE_ZETA * BAUMGARTE_OMEGA * vel - BAUMGARTE_OMEGA ** 2 * err
    data = fa.create_data()
    free = pin.aba(fa.model, data, q, v, tau).copy()
    MinvJt = np.linalg.solve(mass_matrix(fa, data, q), J.T)
    lam = np.linalg.solve(J @ MinvJt, wanted - J @ free)
    return free + MinvJt @ lam, lam


def random_held_states(fa, state, count, rng):
    """States around the held pose: joints within 0.3 rad of it (loops open by up to a few cm),
    any base pose, velocities ~1 (m/s, rad/s), torques ~5 (N, N m)."""
    for _ in range(count):
        dq = np.concatenate([rng.uniform(-1, 1, fa.nb), rng.uniform(-0.3, 0.3, fa.model.nv - fa.nb)])
        yield (pin.integrate(fa.model, state.q, dq), rng.normal(size=fa.model.nv), 5 * rng.normal(size=fa.model.nv))


@pytest.mark.parametrize("robot_name,obj_name", PAIRS)
def test_fast_loop_terms_and_constrained_dynamics_equal_the_frame_difference_formulation(robot_name, obj_name):
    from freeflyer_control.physics.closed_chain import loop_terms

    _, obj, fa, state = held(robot_name, obj_name)
    data = fa.create_data()
    plant = ClosedChainPlant(fa, obj, state, 0.002)
    eps = np.finfo(float).eps
    for q, v, tau in random_held_states(fa, state, 50, np.random.default_rng(12)):
        expected = frame_difference_loop_terms(fa, obj, q, v)
        got = loop_terms(fa, data, obj, q, v)
        for e, g in zip(expected, (got.J, got.drift, got.velocity, got.error)):
            # Sums of a few products of O(1) terms: round-off, 1e-12 of the largest entry.
            np.testing.assert_allclose(g, e, rtol=0, atol=1e-12 * np.abs(e).max())
        a0, lam0 = frame_difference_acceleration(fa, obj, q, v, tau)
        a, lam = constrained_acceleration(fa, data, obj, q, v, tau)
        # Two backward-stable solves of M (and of J M^-1 J^T) differ by up to cond(M) eps
        # relative: cond(M) ~2e4 (dual_arm_planar) to ~2e5 (spatial_dual_arm, a 200 kg base
        # with light links), measured differences 1e-13 and 3e-12 of the largest entry.
        Mfull = mass_matrix(fa, data, q)
        tol = np.linalg.cond(Mfull) * eps
        np.testing.assert_allclose(a, a0, rtol=0, atol=tol * np.abs(a0).max())
        np.testing.assert_allclose(lam, lam0, rtol=0, atol=tol * np.abs(lam0).max())
        # The plant's stages use the same path without the wrenches.
        np.testing.assert_array_equal(plant.acceleration(q, v, tau), a)


@pytest.mark.parametrize("robot_name,obj_name", PAIRS)
def test_fast_closed_chain_plant_steps_like_the_frame_difference_formulation(robot_name, obj_name):
    class FrameDifferencePlant(ClosedChainPlant):
        def acceleration(self, q, v, tau):
            return frame_difference_acceleration(self.ff, self.obj, q, v, tau)[0]

    fa = attach_object(robot(robot_name), load_object(obj_name))
    torques = arm_torques(fa, 0.5)
    _, _, fast, _ = run_held(robot_name, obj_name, 0.2, torques)
    _, obj, _, state = held(robot_name, obj_name)
    slow = FrameDifferencePlant(fa, obj, state, 0.002)
    for k in range(100):
        slow.step(tau=torques(slow, k * 0.002))
    # 100 steps carry the per-stage round-off of the test above, cond(M) eps ~4e-11 at worst,
    # without amplifying it (the motion is smooth over 0.2 s): 1e-10 of the state's size.
    for x, y in ((fast.state.q, slow.state.q), (fast.state.v, slow.state.v)):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-10 * max(1.0, np.abs(y).max()))
    assert fast.max_constraint_error == pytest.approx(slow.max_constraint_error, rel=1e-6, abs=1e-15)
    assert np.abs(fast.state.v).max() > 1e-2  # it moved


@pytest.mark.parametrize("robot_name,obj_name,joint", [("dual_arm_planar", "planar_box", "right_joint3"),
                                                       ("spatial_dual_arm", "spatial_box", "right_joint2")])
@pytest.mark.parametrize("error", [2e-5, 7e-5, 1e-4])
def test_baumgarte_correction_is_work_of_the_stabilisation_not_divergence(robot_name, obj_name, joint, error):
    """A loop opened by up to 0.1 mm, released from rest with zero torque: Baumgarte's wrenches
    close it, doing work; the plant counts that work (lambda . J nu by RK4) and does not call the
    energy it gives 'diverged' (before the fix: 'kinetic energy went from 0 J to ...')."""
    ff, obj, fa, state = held(robot_name, obj_name)
    data = fa.create_data()
    angles = pin.difference(fa.model, pin.neutral(fa.model), state.q)[fa.nb:]
    i = fa.joint_v_index(joint) - fa.nb
    for scale in (1.0, 2.0, 5.0, 10.0, 20.0, 50.0):  # open the loop by at least ``error``
        moved = angles.copy()
        moved[i] += scale * error
        plant = ClosedChainPlant(fa, obj, make_state(fa, joint_positions=moved), 0.002)
        if plant.constraint_error() >= error:
            break
    assert plant.constraint_error() >= error
    work = energy = 0.0
    for _ in range(500):  # 1 s
        before = plant.state.copy()
        plant.step(tau=np.zeros(fa.model.nv))
        T0 = pin.computeKineticEnergy(fa.model, data, before.q, before.v)
        T1 = pin.computeKineticEnergy(fa.model, data, plant.state.q, plant.state.v)
        work = max(work, abs(plant.last_constraint_work))
        energy = max(energy, abs((T1 - T0) - plant.last_constraint_work) / max(T0 + T1, 1e-30))
    assert work > 1e-12  # the stabilisation did work
    # What is left is RK4's quadrature error of the power balance, far inside the 1 % tolerance.
    assert energy < 1e-3
    # Closed: critically damped at w_n = 20 rad/s, e(t) = e0 (1 + w_n t) exp(-w_n t) = 4e-8 e0 at 1 s.
    assert plant.constraint_error() < 1e-10


@pytest.mark.parametrize("robot_name,obj_name", PAIRS)
def test_the_held_pose_closes_the_bundled_loops_to_round_off_in_position_and_orientation(robot_name, obj_name):
    """check_object's reach tolerance (1 nm / 1 nrad) is what a loop may start with; the bundled
    objects' start far below it, consistent with loops that stay closed to 1e-11 m."""
    from freeflyer_control.physics.grasp_pose import REACH_TOL

    ff, obj, fa, state = held(robot_name, obj_name)
    position, rotation = ClosedChainPlant(fa, obj, state, 0.002).constraint_errors()
    assert REACH_TOL <= 1e-9
    assert position < 1e-12 and rotation < 1e-12
