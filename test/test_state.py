"""The one place where conventions are converted: quaternion order, world vs local, angles."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import random_state, robot

from freeflyer_control.physics.gjm import frame_jacobian
from freeflyer_control.physics.state import (
    base_position,
    base_quaternion_xyzw,
    base_rotation,
    base_twist_world,
    base_velocity_local,
    base_yaw,
    joint_positions,
    make_state,
)


def test_quaternion_is_xyzw_a_quarter_turn_about_z_maps_x_to_y():
    ff = robot("spatial_6link")
    s = np.sin(np.pi / 4)
    state = make_state(ff, base_orientation_xyzw=(0.0, 0.0, s, s))
    np.testing.assert_allclose(base_rotation(ff, state.q) @ [1, 0, 0], [0, 1, 0], atol=1e-15)
    np.testing.assert_allclose(base_quaternion_xyzw(ff, state.q), [0, 0, s, s], atol=1e-15)


@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
def test_world_base_twist_round_trips_and_matches_pinocchio_frame_velocity(name):
    ff = robot(name)
    data = ff.create_data()
    rng = np.random.default_rng(20)
    for _ in range(20):
        state = random_state(ff, rng, base_speed=1.0, base_rate=1.0)
        lin, ang = base_twist_world(ff, state)
        # Independent: Pinocchio's own world-aligned velocity of the base_link frame.
        twist = frame_jacobian(ff, data, state.q, ff.base_link) @ state.v
        np.testing.assert_allclose(np.concatenate([lin, ang]), twist, atol=1e-13)
        np.testing.assert_allclose(base_velocity_local(ff, state.q, lin, ang), state.v[: ff.nb], atol=1e-13)


def test_make_state_puts_public_values_where_pinocchio_expects_them():
    ff = robot("spatial_6link")
    quat = np.array([0.1, -0.2, 0.3, 0.0])
    quat[3] = np.sqrt(1 - np.sum(quat[:3] ** 2))
    state = make_state(ff, base_position=(1.0, 2.0, 3.0), base_orientation_xyzw=quat,
                       base_linear_velocity=(0.1, 0.2, 0.3), base_angular_velocity=(0.0, 0.0, 0.5),
                       joint_positions={"joint2": 0.4}, joint_velocities={"joint3": -0.2})
    np.testing.assert_allclose(base_position(ff, state.q), [1, 2, 3])
    np.testing.assert_allclose(base_quaternion_xyzw(ff, state.q), quat, atol=1e-15)
    lin, ang = base_twist_world(ff, state)
    np.testing.assert_allclose(lin, [0.1, 0.2, 0.3], atol=1e-15)
    np.testing.assert_allclose(ang, [0, 0, 0.5], atol=1e-15)
    angles = dict(zip(ff.joint_names, joint_positions(ff, state.q)))
    assert angles["joint2"] == pytest.approx(0.4) and angles["joint1"] == 0.0
    assert state.v[ff.joint_v_index("joint3")] == pytest.approx(-0.2)


def test_planar_yaw_and_continuous_joint_angles_use_cos_sin_storage():
    ff = robot("planar_4link")
    state = make_state(ff, base_yaw=2.5, joint_positions={"wheel_z_joint": 3.0, "joint1": -0.7})
    assert base_yaw(ff, state.q) == pytest.approx(2.5)
    q_wheel = state.q[ff.joint_q_index("wheel_z_joint"):][:2]
    np.testing.assert_allclose(q_wheel, [np.cos(3.0), np.sin(3.0)])  # Pinocchio's (cos, sin)
    angles = dict(zip(ff.joint_names, joint_positions(ff, state.q)))
    assert angles["wheel_z_joint"] == pytest.approx(3.0)
    assert angles["joint1"] == pytest.approx(-0.7)
    # A continuous joint's angle wraps into (-pi, pi].
    wrapped = make_state(ff, joint_positions={"wheel_z_joint": 4.0})
    got = dict(zip(ff.joint_names, joint_positions(ff, wrapped.q)))["wheel_z_joint"]
    assert got == pytest.approx(4.0 - 2 * np.pi)
    # A planar quaternion that is a pure yaw is accepted and gives the same yaw.
    quat = (0.0, 0.0, np.sin(1.25), np.cos(1.25))
    assert base_yaw(ff, make_state(ff, base_orientation_xyzw=quat).q) == pytest.approx(2.5)


@pytest.mark.parametrize("kwargs, message", [
    (dict(base_orientation_xyzw=(0, 0, 0, 2.0)), "not unit"),
    (dict(base_orientation_xyzw=(0, 0, 0)), "4 finite"),
    (dict(joint_positions={"nope": 1.0}), "unknown joint 'nope'"),
    (dict(joint_positions=[0.0, 1.0]), "must have 9 entries"),
    (dict(base_yaw=0.3), "planar base"),
])
def test_make_state_refuses_bad_input_with_the_reason(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_state(robot("spatial_6link"), **kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(base_position=(0, 0, 0.1)), "z = 0"),
    (dict(base_angular_velocity=(0.1, 0, 0)), "about z only"),
    (dict(base_orientation_xyzw=(np.sin(0.2), 0, 0, np.cos(0.2))), "can only yaw"),
])
def test_planar_state_refuses_out_of_plane_motion(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_state(robot("planar_4link"), **kwargs)


def test_pinocchio_integrate_of_state_keeps_unit_quaternion():
    # The plant never normalises by hand: the exponential map must keep |q| = 1 by itself.
    ff = robot("spatial_6link")
    state = random_state(ff, np.random.default_rng(21), base_rate=5.0)
    q = state.q
    for _ in range(1000):
        q = pin.integrate(ff.model, q, 0.01 * state.v)
    assert abs(np.linalg.norm(q[3:7]) - 1.0) < 1e-12
