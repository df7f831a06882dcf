"""The tumbling target's own motion (physics.free_body): Euler's equations on SO(3), checked
against the plant's Pinocchio model of the same body, a closed form, and its invariants."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from freeflyer_control.model.objects import free_object_model, grasp_frame_name, load_object
from freeflyer_control.physics.free_body import (
    BodyState,
    FreeBody,
    angular_acceleration,
    frame_motion,
    free_body,
    propagate,
    trajectory,
)
from freeflyer_control.physics.plant import Plant
from freeflyer_control.physics.state import base_rotation, base_twist_world, make_state

# An asymmetric box (0.7 x 0.5 x 0.5 m, 60 kg) spun at 4 deg/s about an axis that is no
# principal axis: it nutates.
BODY = FreeBody(60.0, np.diag([2.5, 3.7, 3.7 + 0.0]) + np.diag([0.0, 0.0, 0.8]))
SPIN = np.deg2rad(4.0) * np.array([0.6, 0.5, 0.62]) / np.linalg.norm([0.6, 0.5, 0.62])


def start(body=BODY, spin=SPIN):
    R0 = pin.rpy.rpyToMatrix(0.2, -0.3, 0.5)
    return BodyState(pin.SE3(R0, np.array([1.0, 0.3, -0.2])), np.array([0.01, -0.005, 0.002]), R0 @ spin)


def test_predicted_grasp_frame_motion_equals_the_simulated_free_object():
    """The prediction (own RKMK4 on Euler's equations) against the plant integrating the object's
    Pinocchio model (RKMK4 on SE(3) with ABA): two formulations of one physics."""
    obj = load_object("spatial_box")
    body = free_body(obj)
    s0 = start(body)
    free = free_object_model(obj)
    state = make_state(free, base_position=s0.pose.translation,
                       base_orientation_xyzw=pin.Quaternion(s0.pose.rotation).coeffs(),
                       base_linear_velocity=s0.linear_velocity, base_angular_velocity=s0.angular_velocity)
    plant = Plant(free, state, 1.0 / 500.0)
    data = free.create_data()
    g = obj.grasps[0]
    fid = free.frame_id(grasp_frame_name(obj, g.end_effector))
    times = np.arange(1, 21) * 1.0
    predicted = trajectory(body, s0, times)
    for t, p in zip(times, predicted):
        while plant.t < t - 1e-9:
            plant.step()
        pin.forwardKinematics(free.model, data, plant.state.q, plant.state.v)
        pin.updateFramePlacements(free.model, data)
        sim = data.oMf[fid]
        twist = pin.getFrameVelocity(free.model, data, fid, pin.LOCAL_WORLD_ALIGNED).vector
        m = frame_motion(body, p, g.placement)
        # Both RK4 with (w dt)^5 ~ 1e-19 local errors over 1e4 steps: agreement to round-off
        # of the rotations composed (~1e-13); 1e-10 leaves room for the ABA / Euler paths.
        np.testing.assert_allclose(m.pose.translation, sim.translation, atol=1e-10)
        assert np.linalg.norm(pin.log3(m.pose.rotation.T @ sim.rotation)) < 1e-10
        np.testing.assert_allclose(m.twist, twist, atol=1e-10)


def test_a_target_spun_about_a_non_principal_axis_nutates():
    s0 = start()
    L0 = s0.angular_momentum(BODY)
    states = trajectory(BODY, s0, np.linspace(0.0, 60.0, 61))
    w = np.array([s.angular_velocity for s in states])
    # The angular velocity is not along L (non-principal), and its direction wanders in world.
    cos_wL = w @ L0 / (np.linalg.norm(w, axis=1) * np.linalg.norm(L0))
    assert np.arccos(cos_wL.min()) > np.deg2rad(5.0)
    turn = np.arccos(np.clip(w @ w[0] / (np.linalg.norm(w, axis=1) * np.linalg.norm(w[0])), -1, 1))
    assert turn.max() > np.deg2rad(10.0)
    # The grasp point's position after 30 s: a rotation about the fixed axis w(0) misses it by
    # centimetres; the point is 0.3 m from the CoM.
    grasp = pin.SE3(np.eye(3), np.array([0.0, 0.3, 0.0]))
    true = frame_motion(BODY, propagate(BODY, s0, 30.0), grasp).pose.translation
    naive_R = pin.exp3(s0.angular_velocity * 30.0) @ s0.pose.rotation
    naive = s0.pose.translation + 30.0 * s0.linear_velocity + naive_R @ grasp.translation
    assert np.linalg.norm(true - naive) > 0.01


def test_the_torque_free_body_keeps_its_angular_momentum_and_kinetic_energy():
    s0 = start()
    L0 = s0.angular_momentum(BODY)
    T0 = 0.5 * s0.angular_velocity @ L0
    for s in trajectory(BODY, s0, np.linspace(0.0, 120.0, 13)):
        L = s.angular_momentum(BODY)
        # L is projected each step (round-off); the energy follows from RK4's O(h^4) error.
        np.testing.assert_allclose(L, L0, atol=1e-14)
        assert abs(0.5 * s.angular_velocity @ L - T0) < 1e-12 * T0 + 1e-16
        assert abs(np.linalg.det(s.pose.rotation) - 1) < 1e-12


def test_an_axisymmetric_body_cones_at_the_closed_form_rate():
    """I = diag(I1, I1, I3): Omega_3 is constant and (Omega_1, Omega_2) turns at
    lambda = (I3 - I1) / I1 Omega_3 (the body-cone rate of a symmetric top)."""
    I1, I3 = 2.0, 3.0
    body = FreeBody(10.0, np.diag([I1, I1, I3]))
    Omega0 = np.array([0.05, 0.0, 0.08])
    s0 = BodyState(pin.SE3.Identity(), np.zeros(3), Omega0)
    lam = (I3 - I1) / I1 * Omega0[2]
    for t in (5.0, 17.0, 40.0):
        s = propagate(body, s0, t)
        Omega = s.pose.rotation.T @ s.angular_velocity
        expected = np.array([0.05 * np.cos(lam * t), 0.05 * np.sin(lam * t), 0.08])
        np.testing.assert_allclose(Omega, expected, atol=1e-11)


def test_the_angular_acceleration_is_zero_about_a_principal_axis_only():
    R = pin.rpy.rpyToMatrix(0.1, 0.2, 0.3)
    assert np.abs(angular_acceleration(BODY, R, R @ np.array([0.0, 0.07, 0.0]))).max() < 1e-17
    assert np.abs(angular_acceleration(BODY, R, R @ SPIN)).max() > 1e-5


def test_a_planar_target_turns_at_a_constant_rate_about_z():
    body = FreeBody(5.0, np.diag([0.03, 0.04, 0.05]), planar=True)
    s0 = BodyState(pin.SE3(pin.rpy.rpyToMatrix(0, 0, 0.4), np.array([1.0, 0.2, 0.0])),
                   np.array([-0.01, 0.0, 0.0]), np.array([0.0, 0.0, 0.07]))
    s = propagate(body, s0, 10.0)
    assert abs(pin.rpy.matrixToRpy(s.pose.rotation)[2] - 1.1) < 1e-12
    np.testing.assert_allclose(s.pose.translation, [0.9, 0.2, 0.0], atol=1e-15)


def test_a_prediction_backwards_in_time_is_refused():
    with pytest.raises(ValueError, match="forward"):
        propagate(BODY, start(), -1.0)
