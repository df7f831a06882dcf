"""The reaction null space (Nenchev, Yoshida & Umetani; physics.reaction_null_space): joint motions
in it leave the base undisturbed, on the plant; the coupling inertia equals an independent sum of
link momenta; what a task cannot do reactionlessly is reported, not hidden."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import robot

from freeflyer_control.model import load_robot
from freeflyer_control.physics.dynamics import mass_matrix
from freeflyer_control.physics.gjm import generalized_jacobian
from freeflyer_control.physics.plant import Plant
from freeflyer_control.physics.reaction_null_space import base_rows, reaction_null_space, reactionless_rates
from freeflyer_control.physics.reduced import reduced_dynamics
from freeflyer_control.physics.state import State, base_rotation, make_state
from freeflyer_control.resources import share_dir

ROBOTS = ("dual_arm_planar", "spatial_dual_arm", "planar_3link")


def load(name):
    if name == "planar_3link":
        return load_robot(share_dir() / "urdf" / "planar_3link.urdf", base="planar", end_effectors=["ee_link"])
    return robot(name)


def random_state(ff, rng, momentum=False):
    """A random pose of the arms; the base at rest or (momentum) moving, the wheels spinning."""
    q = pin.randomConfiguration(ff.model, -np.ones(ff.model.nq), np.ones(ff.model.nq))
    q[:ff.model.joints[1].nq] = make_state(ff, base_position=[0.3, -0.2, 0.0], base_yaw=0.4).q[:4] \
        if ff.base == "planar" else np.concatenate([[0.3, -0.2, 0.1], pin.Quaternion(pin.rpy.rpyToMatrix(0.3, -0.2, 0.5)).coeffs()])
    v = np.zeros(ff.model.nv)
    if momentum:
        v = 0.3 * rng.normal(size=ff.model.nv)
    return State(q, v)


def floating_base_velocity(ff, q, v_before, qdot_new):
    """The base velocity momentum conservation gives when the joints change to ``qdot_new``:
    solve the base rows M_bb nu_b = h_b - M_bj qdot_new (h_b: the momentum rows before)."""
    M = mass_matrix(ff, ff.create_data(), q)
    nb = ff.nb
    h = M[:nb] @ v_before
    return np.linalg.solve(M[:nb, :nb], h - M[:nb, nb:] @ qdot_new)


@pytest.mark.parametrize("name", ROBOTS)
@pytest.mark.parametrize("momentum", [False, True])
def test_joint_rates_in_the_attitude_null_space_leave_the_base_turning_as_before(name, momentum):
    ff, rng = load(name), np.random.default_rng(3)
    for _ in range(5):
        s = random_state(ff, rng, momentum)
        rns = reaction_null_space(ff, ff.create_data(), s, "attitude")
        lin, ang = base_rows(ff)
        assert rns.rank == ang.size and rns.dimension == ff.arm_v_indices.size - ang.size
        still = s.v[ff.nb:].copy()
        still[ff.arm_v_indices - ff.nb] = 0.0
        w_still = floating_base_velocity(ff, s.q, s.v, still)[ang]
        moving = still.copy()
        moving[ff.arm_v_indices - ff.nb] = rns.basis @ rng.normal(size=rns.dimension)
        w_moving = floating_base_velocity(ff, s.q, s.v, moving)[ang]
        # One linear solve on a mass matrix of condition ~1e5: round-off.
        np.testing.assert_allclose(w_moving, w_still, atol=1e-12)
        np.testing.assert_allclose(rns.base_velocity(moving[ff.arm_v_indices - ff.nb]), w_moving, atol=1e-12)
        # A joint motion out of the null space does turn it.
        out = still.copy()
        out[ff.arm_v_indices - ff.nb] = np.linalg.pinv(rns.coupling) @ np.ones(ang.size)
        assert np.abs(floating_base_velocity(ff, s.q, s.v, out)[ang] - w_still).max() > 1e-3


@pytest.mark.parametrize("name", ROBOTS)
def test_joint_rates_in_the_full_null_space_leave_the_whole_base_still(name):
    ff, rng = load(name), np.random.default_rng(4)
    s = random_state(ff, rng)
    rns = reaction_null_space(ff, ff.create_data(), s, "full")
    assert rns.rank == ff.nb
    qdot = np.zeros(ff.nj)
    qdot[ff.arm_v_indices - ff.nb] = rns.basis @ rng.normal(size=rns.dimension)
    np.testing.assert_allclose(floating_base_velocity(ff, s.q, s.v, qdot), 0.0, atol=1e-12)


@pytest.mark.parametrize("name", ROBOTS)
def test_the_coupling_inertia_equals_the_sum_of_the_link_momenta(name):
    """H_bm column j = the momentum (about the base origin, base axes) of the links when joint j
    turns at 1 rad/s and the base is held: summed body by body from each body's CoM velocity
    and angular velocity (the direct-path form of Moosavian & Papadopoulos), not from CRBA."""
    ff, rng = load(name), np.random.default_rng(5)
    s = random_state(ff, rng)
    model, data = ff.model, ff.create_data()
    pin.computeJointJacobians(model, data, s.q)
    pin.updateFramePlacements(model, data)
    R, p_b = base_rotation(ff, s.q), data.oMi[1].translation
    H = np.zeros((6, ff.arm_v_indices.size))
    for jid in range(1, model.njoints):
        I = model.inertias[jid]
        if I.mass == 0:
            continue
        J = pin.getJointJacobian(model, data, jid, pin.LOCAL_WORLD_ALIGNED)[:, ff.arm_v_indices]
        c = data.oMi[jid].act(I.lever)  # body CoM in world
        r_origin = data.oMi[jid].translation
        v_c = J[:3] + np.cross(J[3:].T, (c - r_origin)).T  # CoM velocity per unit rate
        Ic = data.oMi[jid].rotation @ I.inertia @ data.oMi[jid].rotation.T
        H[:3] += I.mass * v_c
        H[3:] += Ic @ J[3:] + I.mass * np.cross(c - p_b, v_c.T).T
    H_base = np.vstack([R.T @ H[:3], R.T @ H[3:]])
    if ff.base == "planar":
        H_base = H_base[[0, 1, 5]]
    M = mass_matrix(ff, data, s.q)
    np.testing.assert_allclose(M[:ff.nb][:, ff.arm_v_indices], H_base, atol=1e-12 * max(1.0, np.abs(H_base).max()))
    rns = reaction_null_space(ff, data, s, "full")
    np.testing.assert_allclose(rns.coupling, H_base, atol=1e-12 * max(1.0, np.abs(H_base).max()))


class _ReactionlessPlant(Plant):
    """The floating plant under a continuous-time law evaluated at every RK stage: the joint
    rates follow the field qdot = P(q) xi (P the attitude null space's projector, xi fixed),
    the torques from the floating-mode reduced dynamics with qddot = dP/dt xi."""

    def __init__(self, ff, state, dt, xi):
        self.xi, self.rdata = xi, ff.create_data()
        super().__init__(ff, state, dt)

    def field(self, q):
        return reaction_null_space(self.ff, self.rdata, State(q, np.zeros(self.ff.model.nv))).projector @ self.xi

    def acceleration(self, q, v, tau):
        ff, eps = self.ff, 1e-5
        qd = v[ff.arm_v_indices]
        dq = np.zeros(ff.model.nv)
        dq[ff.arm_v_indices] = qd
        # d/dt (P(q) xi) along the motion, central difference (error ~eps^2).
        qdd = (self.field(pin.integrate(ff.model, q, eps * dq)) - self.field(pin.integrate(ff.model, q, -eps * dq))) / (2 * eps)
        rd = reduced_dynamics(ff, self.rdata, State(q, v), "floating", idle_wheels=True)  # arm coordinates
        tau = np.zeros(ff.model.nv)
        tau[ff.arm_v_indices] = rd.H @ qdd + rd.C
        return super().acceleration(q, v, tau)


@pytest.mark.parametrize("name", ["planar_3link", "dual_arm_planar"])
def test_reactionless_joint_motion_leaves_the_base_attitude_unchanged_on_the_plant(name):
    ff = load(name)
    s = make_state(ff, joint_positions=ff.ready_pose or [0.6, -1.2, -0.9])
    xi = np.linspace(1.0, -0.6, ff.arm_v_indices.size)
    plant = _ReactionlessPlant(ff, s, 0.01, xi)
    v0 = np.zeros(ff.model.nv)
    v0[ff.arm_v_indices] = plant.field(s.q)
    v0[:ff.nb] = floating_base_velocity(ff, s.q, np.zeros(ff.model.nv), v0[ff.nb:])
    plant.state = State(s.q, v0)  # starts on the field, zero momentum
    yaw0 = np.arctan2(s.q[3], s.q[2])
    for _ in range(200):  # 2 s
        plant.step()
    moved = np.abs(plant.state.q[ff.arm_v_indices + 1] - s.q[ff.arm_v_indices + 1]).max()
    assert moved > 0.1  # the arm really moved
    # RK4 at 100 Hz on joint rates of ~0.6 rad/s: local error ~(0.006)^5 per step; the finite
    # difference of P adds ~eps^2 = 1e-10 relative. Measured 3e-13 (planar_3link) and 7e-13 rad
    # (dual_arm_planar) after the arms turned by over 1 rad.
    assert abs(np.arctan2(plant.state.q[3], plant.state.q[2]) - yaw0) < 1e-10


def test_a_planar_arm_reaches_reactionlessly_where_the_naive_one_turns_the_base():
    """The same end-effector velocity by the floating GJM's pseudo-inverse (naive) and inside
    the null space: the first turns the base, the second does not and does the task."""
    ff = load("planar_3link")
    data = ff.create_data()
    s = make_state(ff, joint_positions=[0.6, -1.2, -0.9])
    g = generalized_jacobian(ff, data, s, "floating", "ee_link")
    J, v = g.matrix[:2], np.array([-0.25, 0.3])  # position rows: a 2-D task, 3 joints, 1 attitude row
    rns = reaction_null_space(ff, data, s)
    r = reactionless_rates(rns, J, v, damping=0.0)
    assert r.task_rank == 2 and r.null_space_rank == 1
    np.testing.assert_allclose(J @ r.rates, v, atol=1e-12)
    assert abs(r.base_velocity[0]) < 1e-14
    naive = np.linalg.pinv(J) @ v
    assert abs(rns.base_velocity(naive)[0]) > 0.01


def test_what_a_six_dof_task_cannot_do_reactionlessly_is_reported():
    """One 6-DOF arm, full 6-D end-effector task: the attitude null space has 3 dimensions, so
    half the task is left undone and says so; the base still does not turn."""
    ff = robot("spatial_6link")
    data = ff.create_data()
    s = make_state(ff, joint_positions=ff.ready_pose)
    g = generalized_jacobian(ff, data, s, "floating", "ee_link")
    task = np.array([0.05, 0.0, 0.02, 0.0, 0.1, 0.0])
    r = reactionless_rates(reaction_null_space(ff, data, s), g.matrix, task, damping=0.0)
    assert r.null_space_rank == 3 and r.task_rank == 3
    assert np.linalg.norm(r.task_residual) > 0.1 * np.linalg.norm(task)
    assert np.abs(r.base_velocity).max() < 1e-13


def test_a_base_rotation_the_joints_cannot_give_is_reported():
    """Asking the planar arm for a base yaw rate: one joint column is enough for one row, so it
    is given; with the arm stretched straight its coupling still has rank 1 (no residual)."""
    ff = load("planar_3link")
    data = ff.create_data()
    s = make_state(ff, joint_positions=[0.6, -1.2, -0.9])
    rns = reaction_null_space(ff, data, s)
    r = reactionless_rates(rns, np.zeros((0, 3)), np.zeros(0), base_velocity=[0.05])
    np.testing.assert_allclose(r.base_velocity, [0.05], atol=1e-14)
    assert np.abs(r.base_velocity_residual).max() < 1e-14
    # Only the wrist joint: its coupling is one number; ask the full base to move: rank 1 of 3.
    full = reaction_null_space(ff, data, s, "full", columns=ff.arm_v_indices[2:])
    assert full.rank == 1
    rates, missing = full.rates_for_base_velocity(np.array([0.01, 0.02, 0.05]))
    assert np.abs(missing).max() > 1e-3


def test_an_unknown_kind_is_refused():
    ff = load("planar_3link")
    with pytest.raises(ValueError, match="attitude"):
        reaction_null_space(ff, ff.create_data(), make_state(ff), "sideways")


def test_task_first_rates_are_reactionless_wherever_the_null_space_allows_the_task():
    """reaction_minimal_rates: the task exactly, then the least base rotation; with a 2-D task on
    a 3-joint planar arm (one attitude row) that least rotation is none."""
    from freeflyer_control.physics.reaction_null_space import reaction_minimal_rates

    ff = load("planar_3link")
    data = ff.create_data()
    s = make_state(ff, joint_positions=[0.6, -1.2, -0.9])
    g = generalized_jacobian(ff, data, s, "floating", "ee_link")
    J, v = g.matrix[:2], np.array([-0.25, 0.3])
    r = reaction_minimal_rates(reaction_null_space(ff, data, s), J, v, damping=0.0)
    np.testing.assert_allclose(J @ r.rates, v, atol=1e-12)
    assert abs(r.base_velocity[0]) < 1e-13 and abs(r.base_velocity_residual[0]) < 1e-13


def test_task_first_rates_report_the_rotation_a_task_forces_on_the_base():
    """One 6-DOF arm, a 6-D task: no redundancy, so the task decides the joint rates and the
    base turns as it must; that rotation is the residual, equal to what momentum gives."""
    from freeflyer_control.physics.reaction_null_space import reaction_minimal_rates

    ff = robot("spatial_6link")
    data = ff.create_data()
    s = make_state(ff, joint_positions=ff.ready_pose)
    g = generalized_jacobian(ff, data, s, "floating", "ee_link")
    task = np.array([0.05, 0.0, 0.02, 0.0, 0.1, 0.0])
    rns = reaction_null_space(ff, data, s)
    r = reaction_minimal_rates(rns, g.matrix, task, damping=0.0)
    np.testing.assert_allclose(g.matrix @ r.rates, task, atol=1e-12)
    assert np.linalg.norm(r.base_velocity) > 1e-3
    np.testing.assert_allclose(r.base_velocity_residual, r.base_velocity, atol=1e-12)


def test_damping_the_reaction_step_bounds_the_rates_and_leaves_the_task_exact():
    """reaction_minimal_rates with its reaction step damped: the damping acts only inside the
    task's null space, so the hand's twist is still exactly the task (to round-off), the joint
    rates are no larger than undamped, and what the damping leaves of the base's reaction is
    reported in base_velocity_residual, not hidden."""
    from freeflyer_control.physics.reaction_null_space import reaction_minimal_rates

    ff = robot("spatial_dual_arm")
    data = ff.create_data()
    s = make_state(ff, joint_positions=ff.ready_pose)
    g = generalized_jacobian(ff, data, s, "floating", ff.end_effectors[0])
    J = g.matrix[:, :ff.arm_v_indices.size]
    task = np.array([0.05, -0.02, 0.03, 0.1, 0.2, 0.3])
    rns = reaction_null_space(ff, data, s)
    exact = reaction_minimal_rates(rns, J, task, damping=0.0)
    # A damping far above every singular value of H N (kg m^2): nearly all reaction left.
    damped = reaction_minimal_rates(rns, J, task, damping=0.0, reaction_sigma0=1e3, reaction_damping_max=1e3)
    np.testing.assert_allclose(J @ damped.rates, task, atol=1e-10)
    assert np.linalg.norm(damped.rates) <= np.linalg.norm(exact.rates) + 1e-12
    assert np.linalg.norm(exact.base_velocity_residual) < 1e-10  # 12 joints, 6-D task: reactionless
    np.testing.assert_allclose(damped.base_velocity_residual, damped.base_velocity, atol=1e-12)
    assert np.linalg.norm(damped.base_velocity) > 1e-4
