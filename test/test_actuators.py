"""Actuators: thruster geometry, saturation, and which modes a robot can fly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml
from conftest import BUNDLED_ROBOTS, bare_planar_robot, random_state, robot

from freeflyer_control.errors import ConfigError, ModeError
from freeflyer_control.model.config import parse_robot_config
from freeflyer_control.physics.actuators import (
    Actuation,
    base_wrench_limits,
    generalized_forces,
    limit_base_wrench,
    mode_support,
    require_mode,
    saturate,
    thruster_matrix,
)
from freeflyer_control.physics.state import make_state

ROOT = Path(__file__).parents[1]
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


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_command_is_refused_and_a_huge_finite_one_is_clipped(bad):
    """The commands a tick makes (float64 arrays of the right size) take saturation's quick
    finiteness test (physics.linalg.all_finite): NaN and inf must still be refused, and an
    absurd finite torque (1e308, whose sum with another overflows) must still pass, clipped."""
    ff = robot("planar_4link")
    torques = np.zeros(len(ff.arm_joint_names))
    torques[1] = bad
    with pytest.raises(ValueError, match="arm_torques contains NaN or Inf"):
        saturate(ff, Actuation(torques, np.zeros(1), np.zeros(len(ff.thrusters))))
    torques[1] = torques[2] = 1e308
    out = saturate(ff, Actuation(torques, np.zeros(1), np.zeros(len(ff.thrusters))))
    assert out.arm_torques[1] == ff.arm_effort_limits[1] and out.arm_torques[2] == ff.arm_effort_limits[2]


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


# ---------------------------------------------------------------------------------------------
# Ideal base actuation is bounded like the thrusters.


def _force_torque(ff, wrench):
    n = 2 if ff.base == "planar" else 3
    return np.linalg.norm(wrench[:n]), np.linalg.norm(wrench[n:])


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_every_wrench_the_thrusters_make_is_within_the_default_base_limits(name):
    # Ideal actuation may be stronger than the thrusters but never weaker: random firings (and
    # each thruster alone at full force) pass unchanged, bit for bit.
    ff = robot(name)
    max_force, max_torque = base_wrench_limits(ff)
    B = thruster_matrix(ff)
    rng = np.random.default_rng(11)
    firings = np.vstack([rng.uniform(0, 1, (500, B.shape[1])), rng.integers(0, 2, (500, B.shape[1])),
                         np.eye(B.shape[1])]) * ff.thruster_max_forces
    for f in firings:
        force, torque = _force_torque(ff, B @ f)
        assert force <= max_force and torque <= max_torque
        np.testing.assert_array_equal(limit_base_wrench(ff, B @ f), B @ f)


def test_planar_4link_default_base_limits_are_ten_times_the_thrusters_per_axis_reach():
    # +-1.2 N along x and along y (two 0.6 N thrusters each); +-0.42 N m about z (the four
    # thrusters turning one way, 0.6 N at a 0.175 m lever each): 10 x hypot(1.2, 1.2) and 10 x 0.42.
    max_force, max_torque = base_wrench_limits(robot("planar_4link"))
    assert max_force == pytest.approx(10 * np.hypot(1.2, 1.2), rel=1e-12)
    assert max_torque == pytest.approx(10 * 0.42, rel=1e-12)


@pytest.mark.parametrize("wrench", [[1e154, -1e154, 1e154], [1e308, 1e308, -1e308], [30.0, 40.0, -5.0]])
def test_an_absurd_ideal_wrench_is_scaled_into_the_limits_keeping_its_direction(wrench):
    ff = robot("planar_4link")
    max_force, max_torque = base_wrench_limits(ff)
    out = saturate(ff, Actuation(base_wrench_world=np.array(wrench))).base_wrench_world
    assert np.isfinite(out).all()
    force, torque = _force_torque(ff, out)
    # Scaled onto the bound (not merely under it), in the requested direction.
    assert force == pytest.approx(max_force, rel=1e-12) and torque == pytest.approx(max_torque, rel=1e-12)
    direction = np.array(wrench[:2]) / np.abs(wrench[:2]).max()
    np.testing.assert_allclose(out[:2] / np.linalg.norm(out[:2]), direction / np.linalg.norm(direction), rtol=1e-12)
    assert np.sign(out[2]) == np.sign(wrench[2])


def _station_keeping_tick(ff, **state):
    """One tick of computed torque holding ``ff``'s start pose in flying mode with ideal base
    actuation, at the state ``make_state(ff, **state)``."""
    from freeflyer_control.control.loop import ControlLoop
    from freeflyer_control.control.maneuvers import StationKeeping

    loop = ControlLoop(ff, StationKeeping(), mode="flying", base_actuation="ideal")
    loop.start(make_state(ff))
    return loop.tick(0.01, make_state(ff, **state), 0.01)


def test_a_far_off_state_gives_an_ideal_wrench_within_the_limits_and_reports_the_shortfall():
    # A base 20 m from its reference moving at 2 m/s makes the PD law ask for several times what
    # the base can be pushed with; the wrench sent is bounded and the shortfall reported (a
    # saturating law is clipped, not stopped).
    ff = robot("spatial_6link")
    actuation, info = _station_keeping_tick(ff, base_position=[20.0, -10.0, 4.0], base_linear_velocity=[2.0, 0.0, 0.0],
                                            base_angular_velocity=[0.0, 0.5, 0.0])
    assert info.fault is None
    max_force, max_torque = base_wrench_limits(ff)
    asked_force, _ = _force_torque(ff, info.effort.base_wrench_world)
    assert 3 * max_force < asked_force < 100 * max_force  # too much, but not a broken law's ask
    force, torque = _force_torque(ff, actuation.base_wrench_world)
    assert force <= max_force * (1 + 1e-12) and torque <= max_torque * (1 + 1e-12)
    assert np.linalg.norm(info.allocation_residual[:3]) >= asked_force - max_force - 1e-9  # what was not applied


def test_an_absurd_ask_is_stopped_with_zero_commands_and_the_reason():
    # A base 1 km from its reference moving at 50 m/s and spinning at 5 rad/s: the PD law asks for
    # ~50 kN, over 100 times the bound: the loop's guard (control.law_guard) stops the law there.
    actuation, info = _station_keeping_tick(robot("spatial_6link"), base_position=[1000.0, -500.0, 200.0],
                                            base_linear_velocity=[50.0, 0.0, 0.0], base_angular_velocity=[0.0, 5.0, 0.0])
    assert info.fault is not None and "returned base force" in info.fault.reason
    assert "over 100 times the limit" in info.fault.reason and info.fault.law == "computed_torque"
    for part in (actuation.arm_torques, actuation.wheel_torques, actuation.thruster_forces, actuation.base_wrench_world):
        assert not np.any(part)


def test_without_thrusters_the_base_limits_give_the_robot_one_metre_and_one_radian_per_second_squared():
    ff = bare_planar_robot()
    max_force, max_torque = base_wrench_limits(ff)
    assert max_force == pytest.approx(ff.total_mass * 1.0)
    inertia = pin.crba(ff.model, ff.create_data(), pin.neutral(ff.model))[2, 2]
    assert max_torque == pytest.approx(inertia * 1.0)


def test_base_limits_from_the_robot_config_replace_the_derived_ones(tmp_path):
    from freeflyer_control.model import load_robot

    data = yaml.safe_load((ROOT / "config/robots/planar_4link.yaml").read_text())
    data["urdf"] = str(ROOT / "urdf/planar_4link.urdf")
    data["base_limits"] = {"max_force": 5.0, "max_torque": 2.0}
    path = tmp_path / "limited.yaml"
    path.write_text(yaml.safe_dump(data))
    assert base_wrench_limits(load_robot(str(path))) == (5.0, 2.0)


@pytest.mark.parametrize("limits, expected", [
    ({"max_force": -1.0, "max_torque": 1.0},
     "base_limits.max_force must be a number in (0, 100000] N (beyond any thruster set of a free-flyer), got -1"),
    ({"max_force": 1.0, "max_torque": 0}, "base_limits.max_torque must be a number in (0, 100000] N m"),
    ({"max_force": ".nan", "max_torque": 1.0}, "base_limits.max_force must be a number (N), got the text '.nan'"),
    ({"max_force": float("inf"), "max_torque": 1.0}, "base_limits.max_force must be a number in (0, 100000] N, got inf"),
    ({"max_force": 1e300, "max_torque": 1.0}, "base_limits.max_force must be a number in (0, 100000] N (beyond any "
                                              "thruster set of a free-flyer), got 1e+300"),
    ({"max_force": 1.0}, "base_limits: missing key 'max_torque'"),
    ({"max_force": 1.0, "max_torque": 1.0, "max_thrust": 2.0},
     "base_limits: unknown key 'max_thrust'; did you mean 'max_torque'?"),
    ([1.0, 2.0], "base_limits must be a mapping with max_force (N) and max_torque (N m)"),
])
def test_non_physical_base_limits_are_refused_with_the_key_and_the_fix(limits, expected):
    with pytest.raises(ConfigError) as caught:
        parse_robot_config({"base": "planar", "base_limits": limits})
    message = str(caught.value)
    assert expected in message
    assert "\n" not in message
    if isinstance(limits, dict) and "max_thrust" not in limits:
        assert "base_limits: {max_force: 2.0, max_torque: 0.5}" in message  # the fix, as YAML
