"""Momentum bookkeeping of a capture and bias momentum (physics.bias_momentum): what the stack
holds after a grasp is what servicer and target brought, and a servicer loaded with the bias
leaves the stack with no angular momentum."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import robot

from freeflyer_control.model.objects import load_object
from freeflyer_control.physics.bias_momentum import stack_momentum, wheel_momentum
from freeflyer_control.physics.capture import capture_impact
from freeflyer_control.physics.free_body import BodyState, free_body
from freeflyer_control.physics.momentum import centroidal_momentum
from freeflyer_control.physics.reaction_null_space import base_rows
from freeflyer_control.physics.state import State, base_rotation, make_state

PAIRS = [("dual_arm_planar", "planar_box"), ("spatial_dual_arm", "spatial_box")]


def scene(robot_name, obj_name, rng):
    """Servicer at its ready pose with the arm moving, target next to the left hand, tumbling."""
    ff, obj = robot(robot_name), load_object(obj_name)
    s = make_state(ff, joint_positions=ff.ready_pose, base_yaw=0.3) if ff.base == "planar" else \
        make_state(ff, joint_positions=ff.ready_pose, base_orientation_xyzw=pin.Quaternion(pin.rpy.rpyToMatrix(0.1, -0.2, 0.3)).coeffs())
    v = s.v.copy()
    v[ff.arm_v_indices] = 0.1 * rng.normal(size=ff.arm_v_indices.size)
    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, s.q)
    ee = data.oMf[ff.frame_id(obj.grasps[0].end_effector)]
    pose = ee * obj.grasps[0].placement.inverse()
    if ff.base == "planar":
        twist = np.array([0.01, -0.02, 0.0, 0.0, 0.0, 0.07])
    else:
        twist = np.array([0.01, -0.02, 0.005, 0.03, -0.04, 0.05])
    return ff, obj, State(s.q, v), pose, twist


@pytest.mark.parametrize("robot_name,obj_name", PAIRS)
def test_the_stack_holds_what_servicer_and_target_brought_through_the_grasp(robot_name, obj_name):
    ff, obj, s, pose, twist = scene(robot_name, obj_name, np.random.default_rng(1))
    body = free_body(obj)
    before = stack_momentum(ff, ff.create_data(), s, body, BodyState(pose, twist[:3], twist[3:]))
    impact = capture_impact(ff, obj, obj.grasps[0].end_effector, s, pose, twist)
    h = centroidal_momentum(impact.held, impact.held.create_data(), impact.state)  # about the stack's CoM
    lin, ang = (slice(0, 2), slice(5, 6)) if ff.base == "planar" else (slice(0, 3), slice(3, 6))
    scale = max(1.0, np.abs(before.angular).max(), np.abs(before.linear).max())
    # One linear solve of the impact and a CoM shift: round-off.
    np.testing.assert_allclose(h[lin], before.linear, atol=1e-12 * scale)
    np.testing.assert_allclose(h[ang], before.angular, atol=1e-12 * scale)
    assert np.abs(before.target[1]).max() > 1e-3  # the target brought angular momentum


@pytest.mark.parametrize("robot_name,obj_name", PAIRS)
def test_a_servicer_loaded_with_the_bias_leaves_the_stack_without_angular_momentum(robot_name, obj_name):
    ff, obj, s, pose, twist = scene(robot_name, obj_name, np.random.default_rng(2))
    body, data = free_body(obj), ff.create_data()
    target = BodyState(pose, twist[:3], twist[3:])
    need = stack_momentum(ff, data, s, body, target).bias
    # Spin the wheels up to the bias: wheel momentum (base axes) = M[angular rows, wheels] rates.
    _, ang = base_rows(ff)
    M = pin.crba(ff.model, data, s.q)
    R = base_rotation(ff, s.q)
    local = need if ff.base == "planar" else R.T @ need
    v = s.v.copy()
    v[ff.wheel_v_indices] = np.linalg.lstsq(M[np.ix_(ang, ff.wheel_v_indices)], local, rcond=None)[0]
    loaded = State(s.q, v)
    np.testing.assert_allclose(wheel_momentum(ff, data, loaded), need, atol=1e-12)
    after = stack_momentum(ff, data, loaded, body, target)
    assert np.abs(after.angular).max() < 1e-12 * max(1.0, np.abs(need).max())
    impact = capture_impact(ff, obj, obj.grasps[0].end_effector, loaded, pose, twist)
    h = centroidal_momentum(impact.held, impact.held.create_data(), impact.state)
    L = h[5:] if ff.base == "planar" else h[3:]
    assert np.abs(L).max() < 1e-12 * max(1.0, np.abs(need).max())


def test_wheel_momentum_is_each_wheels_axial_inertia_times_its_rate():
    """spatial_dual_arm's wheels: 1.5 kg discs of radius 0.1 m about x, y, z (URDF):
    J = m r^2 / 2 = 0.0075 kg m^2, so 100 rad/s holds 0.75 N m s along the wheel's axis."""
    ff = robot("spatial_dual_arm")
    R = pin.rpy.rpyToMatrix(0.3, 0.2, -0.4)
    s = make_state(ff, joint_positions=ff.ready_pose, base_orientation_xyzw=pin.Quaternion(R).coeffs())
    v = s.v.copy()
    v[ff.wheel_v_indices] = [100.0, -50.0, 20.0]
    np.testing.assert_allclose(wheel_momentum(ff, ff.create_data(), State(s.q, v)), R @ [0.75, -0.375, 0.15],
                               atol=1e-12)
