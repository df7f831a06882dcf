"""Actuators: thruster geometry, saturation, and which modes a robot can fly."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import BUNDLED_ROBOTS, bare_planar_robot, random_state, robot

from freeflyer_control.errors import ModeError
from freeflyer_control.physics.actuators import (
    Actuation,
    generalized_forces,
    mode_support,
    require_mode,
    saturate,
    thruster_matrix,
)
from freeflyer_control.physics.modes import Mode


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_thruster_matrix_equals_pinocchio_forces_applied_at_the_thrusters(name):
    ff = robot(name)
    B = thruster_matrix(ff)
    for i, t in enumerate(ff.thrusters):
        # Independent: a pure force at point p, moved to the base origin by Pinocchio's SE3.
        at_point = pin.Force(t.direction, np.zeros(3))
        about_origin = pin.SE3(np.eye(3), t.position).act(at_point)
        expected = np.concatenate([about_origin.linear, about_origin.angular])
        if ff.base == "planar":
            expected = expected[[0, 1, 5]]
        np.testing.assert_allclose(B[:, i], expected, atol=1e-15)


def test_saturation_clips_to_hardware_limits():
    ff = robot("planar_4link")
    act = Actuation(
        arm_torques=np.array([100.0, -100.0, 0.1, 0.0]),
        wheel_torques=np.array([5.0]),
        thruster_forces=np.array([-1.0, 0.05, 9.0, 0, 0, 0, 0, 0]),
    )
    out = saturate(ff, act)
    effort = ff.arm_effort_limits
    np.testing.assert_allclose(out.arm_torques, [effort[0], -effort[1], 0.1, 0.0])
    assert out.wheel_torques[0] == ff.wheel_max_torques[0]
    assert out.thruster_forces[0] == 0.0, "a thruster cannot pull"
    assert out.thruster_forces[1] == 0.05
    assert out.thruster_forces[2] == ff.thrusters[2].max_force


def test_wheel_at_speed_limit_is_not_pushed_faster_but_may_brake():
    ff = robot("planar_4link")
    state = random_state(ff, np.random.default_rng(0))
    state.v[ff.wheel_v_indices[0]] = ff.wheel_max_speeds[0]
    faster = saturate(ff, Actuation(wheel_torques=np.array([0.05])), state.v)
    slower = saturate(ff, Actuation(wheel_torques=np.array([-0.05])), state.v)
    assert faster.wheel_torques[0] == 0.0
    assert slower.wheel_torques[0] == -0.05


def test_wheel_torque_acts_equal_and_opposite_on_the_base():
    ff = robot("spatial_6link")
    data = ff.create_data()
    state = random_state(ff, np.random.default_rng(1), joint_rate=0.0, base_speed=0.0, base_rate=0.0)
    state.v[:] = 0.0
    tau = generalized_forces(ff, state.q, Actuation(wheel_torques=np.array([0.1, -0.05, 0.02])))
    a = pin.aba(ff.model, data, state.q, state.v, tau)
    # Internal torques: the total momentum rate is zero.
    pin.computeCentroidalMomentumTimeVariation(ff.model, data, state.q, state.v, a)
    assert np.abs(data.dhg.vector).max() < 1e-12


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_every_bundled_robot_can_fly_every_mode(name):
    ff = robot(name)
    assert {m: mode_support(ff, m) for m in Mode} == {m: None for m in Mode}


@pytest.mark.parametrize("mode, needs", [
    (Mode.ROTATION_FLOATING, "reaction wheels"),
    (Mode.ROTATION_FLYING, "thrusters"),
    (Mode.TRANSLATION_FLYING, "thrusters"),
    (Mode.FLYING, "thrusters"),
])
def test_modes_needing_missing_actuators_are_refused_with_the_reason(mode, needs):
    ff = bare_planar_robot()
    with pytest.raises(ModeError, match=needs):
        require_mode(ff, mode)
    assert require_mode(ff, "floating") is Mode.FLOATING


def test_thrusters_that_only_push_one_way_cannot_fly():
    from dataclasses import replace

    from freeflyer_control.model.config import Thruster

    ff = robot("planar_4link")
    forward_only = tuple(
        Thruster(t.name, t.position, np.array([1.0, 0.0, 0.0]), t.max_force) for t in ff.thrusters
    )
    crippled = replace(ff, thrusters=forward_only)
    reason = mode_support(crippled, Mode.FLYING)
    assert reason is not None and "every base wrench" in reason


def test_unknown_mode_names_the_valid_ones():
    with pytest.raises(ModeError, match="rotation-floating"):
        Mode.parse("hovering")
    assert Mode.parse("ROTATION_FLOATING") is Mode.ROTATION_FLOATING
