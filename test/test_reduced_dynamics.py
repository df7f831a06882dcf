"""The mode-reduced dynamics H* a + C* = tau: structure, an independent inertia, the plant."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import BUNDLED_ROBOTS, random_state, robot, zero_momentum

from freeflyer_control.physics.actuators import Actuation, generalized_forces
from freeflyer_control.physics.dynamics import forward_dynamics, mass_matrix
from freeflyer_control.physics.gjm import frame_jacobian, generalized_jacobian
from freeflyer_control.physics.modes import Mode, base_partition
from freeflyer_control.physics.reduced import reduced_dynamics
from freeflyer_control.physics.state import base_twist_world, world_to_local_base_map


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_generalized_inertia_is_spd_and_the_schur_complement_at_1000_configurations(name):
    ff = robot(name)
    data = ff.create_data()
    rng = np.random.default_rng(10)
    model = ff.model
    nb = ff.nb
    for _ in range(1000):
        state = random_state(ff, rng, joint_range=np.pi)
        H = reduced_dynamics(ff, data, state, Mode.FLOATING).H
        # Symmetric to round-off and positive definite (Cholesky succeeds).
        assert np.abs(H - H.T).max() <= 1e-12 * np.abs(H).max()
        np.linalg.cholesky(H)
        # Independent path: the joint block of M^-1 from Pinocchio's ABA-based computeMinverse
        # is the inverse of the Schur complement over the base (block inversion lemma).
        Minv = pin.computeMinverse(model, data, state.q)
        Minv = np.triu(Minv) + np.triu(Minv, 1).T
        np.testing.assert_allclose(H @ Minv[nb:, nb:], np.eye(ff.nj), atol=1e-9)


@pytest.mark.parametrize("mode", [m for m in Mode if m is not Mode.FLOATING], ids=str)
def test_reduced_inertia_of_every_mode_is_the_schur_complement_over_its_free_base_dofs(mode):
    ff = robot("spatial_6link")
    data = ff.create_data()
    state = random_state(ff, np.random.default_rng(11))
    rd = reduced_dynamics(ff, data, state, mode)
    part = base_partition(ff.base, mode)
    M = mass_matrix(ff, data, state.q)
    a = np.concatenate([part.commanded, np.arange(ff.nb, ff.model.nv)])
    f = part.free
    schur = M[np.ix_(a, a)]
    if f.size:
        schur = schur - M[np.ix_(a, f)] @ np.linalg.inv(M[np.ix_(f, f)]) @ M[np.ix_(f, a)]
    # The commanded base coordinates are in world axes: congruence with the rotation T.
    T = np.eye(a.size)
    T[: part.commanded.size, : part.commanded.size] = world_to_local_base_map(ff, state.q)[
        np.ix_(part.commanded, part.commanded)
    ]
    np.testing.assert_allclose(rd.H, T.T @ schur @ T, atol=1e-10)
    np.linalg.cholesky(rd.H)


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_generalized_inertia_equals_kinetic_energy_assembly_from_link_gjms(name):
    """T = 1/2 qdot' H* qdot = sum_i 1/2 (m_i |v_Ci|^2 + w_i' I_i w_i) with v_Ci, w_i from
    the floating-mode GJM of each body's CoM (zero momentum): ties the GJM to H*."""
    ff = robot(name)
    data = ff.create_data()
    model = ff.model
    rng = np.random.default_rng(12)
    arm = ff.arm_v_indices - ff.nb
    for _ in range(5):
        state = zero_momentum(ff, random_state(ff, rng))
        H = reduced_dynamics(ff, data, state, Mode.FLOATING).H[np.ix_(arm, arm)]
        assembled = np.zeros_like(H)
        pin.framesForwardKinematics(model, data, state.q)
        for joint_id in range(1, model.njoints):
            inertia = model.inertias[joint_id]
            body = next(f.name for f in model.frames
                        if f.parentJoint == joint_id and f.type == pin.FrameType.BODY)
            fid = ff.frame_id(body)
            # The body frame may sit away from the joint frame: put the CoM in body coordinates.
            com_in_body = model.frames[fid].placement.actInv(pin.SE3(np.eye(3), inertia.lever)).translation
            G = generalized_jacobian(ff, data, state, Mode.FLOATING, body, point=com_in_body).matrix
            R = data.oMi[joint_id].rotation
            I_world = R @ inertia.inertia @ R.T
            if ff.base == "planar":
                Jv, Jw = G[:2], G[2:3]
                I_w = I_world[2:3, 2:3]
            else:
                Jv, Jw = G[:3], G[3:]
                I_w = I_world
            assembled += inertia.mass * Jv.T @ Jv + Jw.T @ I_w @ Jw
        np.testing.assert_allclose(assembled, H, atol=1e-10 * np.abs(H).max())


def _plant_actuated_accelerations(ff, data, state, mode, tau_full):
    """Plant accelerations in the reduced coordinates: commanded base (world axes) + joints."""
    a = forward_dynamics(ff, data, state.q, state.v, tau_full)
    part = base_partition(ff.base, mode)
    T = world_to_local_base_map(ff, state.q)
    # u = T' nu_b  =>  u' = T' (nu_b' + w_b x nu_b) for the linear part, T' w_b' for the angular.
    nu_b, acc_b = state.v[: ff.nb], a[: ff.nb].copy()
    if ff.base == "planar":
        wz = nu_b[2]
        acc_b[:2] += np.array([-wz * nu_b[1], wz * nu_b[0]])
    else:
        acc_b[:3] += np.cross(nu_b[3:], nu_b[:3])
    u_dot = T.T @ acc_b
    return np.concatenate([u_dot[part.commanded], a[ff.nb:]])


@pytest.mark.parametrize("mode", list(Mode), ids=str)
@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_reduced_dynamics_reproduce_plant_accelerations(name, mode):
    ff = robot(name)
    data = ff.create_data()
    rng = np.random.default_rng(13)
    part = base_partition(ff.base, mode)
    for _ in range(10):
        state = random_state(ff, rng, joint_rate=1.0, base_rate=0.5)
        # A base wrench only on the commanded coordinates (what the mode's actuators can do),
        # random joint and wheel torques.
        wrench_local = np.zeros(ff.nb)
        wrench_local[part.commanded] = rng.normal(size=part.commanded.size)
        tau = np.concatenate([wrench_local, rng.normal(size=ff.nj) * 0.1])
        expected = _plant_actuated_accelerations(ff, data, state, mode, tau)
        rd = reduced_dynamics(ff, data, state, mode)
        tau_world = np.concatenate([
            (world_to_local_base_map(ff, state.q).T @ wrench_local)[part.commanded], tau[ff.nb:]
        ])
        # Accelerations of order 1-100 rad/s^2 (light wheels); 1e-9 relative is round-off.
        np.testing.assert_allclose(rd.accelerations(tau_world), expected, rtol=0,
                                   atol=1e-9 * max(1.0, np.abs(expected).max()))


def test_reduced_coordinates_are_named_commanded_base_then_joints():
    ff = robot("planar_4link")
    rd = reduced_dynamics(ff, ff.create_data(), random_state(ff, np.random.default_rng(0)), "flying")
    assert rd.coordinate_names == ("base_vx", "base_vy", "base_wz") + ff.joint_names


def test_base_wrench_in_world_moves_base_as_newton_says():
    """A pure world-frame force on a robot at rest accelerates the system CoM at F / m_total
    whatever the base attitude: checks the world <-> base_link wrench conversion."""
    ff = robot("spatial_6link")
    data = ff.create_data()
    rng = np.random.default_rng(14)
    state = random_state(ff, rng, joint_rate=0.0, base_speed=0.0, base_rate=0.0)
    force = np.array([0.3, -0.2, 0.5])
    tau = generalized_forces(ff, state.q, Actuation(base_wrench_world=np.concatenate([force, np.zeros(3)])))
    a = forward_dynamics(ff, data, state.q, state.v, tau)
    pin.centerOfMass(ff.model, data, state.q, state.v, a)
    np.testing.assert_allclose(data.acom[0], force / ff.total_mass, atol=1e-12)
    # And the twist of the base origin computed from the state matches Pinocchio's frame velocity.
    moving = random_state(ff, rng)
    lin, ang = base_twist_world(ff, moving)
    J = frame_jacobian(ff, data, moving.q, ff.base_link)
    np.testing.assert_allclose(J @ moving.v, np.concatenate([lin, ang]), atol=1e-12)


@pytest.mark.parametrize("mode", list(Mode), ids=str)
def test_idle_wheels_eliminated_with_the_base_reproduce_the_plant(mode):
    """Wheels with zero torque are no different from free base DOFs: eliminating them too
    gives dynamics over [commanded base, arm joints] that the plant obeys."""
    ff = robot("spatial_6link")
    data = ff.create_data()
    rng = np.random.default_rng(15)
    part = base_partition(ff.base, mode)
    for _ in range(5):
        state = random_state(ff, rng, joint_rate=1.0, base_rate=0.5)
        wrench_local = np.zeros(ff.nb)
        wrench_local[part.commanded] = rng.normal(size=part.commanded.size)
        tau = np.concatenate([wrench_local, np.zeros(ff.nj)])
        tau[ff.arm_v_indices] = rng.normal(size=len(ff.arm_joint_names)) * 0.1
        full = _plant_actuated_accelerations(ff, data, state, mode, tau)
        keep = np.concatenate([np.arange(part.commanded.size), part.commanded.size + ff.arm_v_indices - ff.nb])
        rd = reduced_dynamics(ff, data, state, mode, idle_wheels=True)
        assert rd.coordinate_names == part.names + ff.arm_joint_names
        tau_world = np.concatenate([
            (world_to_local_base_map(ff, state.q).T @ wrench_local)[part.commanded], tau[ff.arm_v_indices]
        ])
        np.testing.assert_allclose(rd.accelerations(tau_world), full[keep], rtol=0,
                                   atol=1e-9 * max(1.0, np.abs(full).max()))
