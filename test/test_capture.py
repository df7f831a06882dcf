"""Capture of a tumbling target: the grasp closes only within tolerances (refused with the reason
otherwise), the impacts conserve momentum, the bundled targets are the scenario of issue 23
(far, tumbling, nutating), both hands close and the closed chain comes to rest, a reactionless
approach leaves the base attitude alone, and bias momentum leaves the wheels empty at rest."""

from __future__ import annotations

import json

import numpy as np
import pinocchio as pin
import pytest

from freeflyer_control.cli.main import main
from freeflyer_control.control.capture import CaptureTolerances
from freeflyer_control.physics.capture import capture_impact
from freeflyer_control.physics.dynamics import kinetic_energy
from freeflyer_control.physics.free_body import free_body
from freeflyer_control.physics.momentum import world_momentum
from freeflyer_control.physics.state import State, make_state
from freeflyer_control.sim.capture import (
    CaptureConfig,
    _object_momentum,
    _object_pose_twist,
    body_state,
    initial_states,
    request_capture,
    run_capture,
)

PAIRS = [("dual_arm_planar", "planar_box"), ("spatial_dual_arm", "spatial_box")]
TARGETS = [("dual_arm_planar", "planar_target"), ("spatial_dual_arm", "target_satellite")]


@pytest.mark.parametrize("robot,obj", PAIRS + TARGETS)
def test_momentum_just_after_the_impact_equals_momentum_just_before(robot, obj):
    ff, o, ee, robot_state, free, object_state = initial_states(CaptureConfig(robot=robot, obj=obj))
    rng = np.random.default_rng(11)
    moving = State(robot_state.q, 0.2 * rng.normal(size=ff.model.nv))  # robot moving too
    pose, twist = _object_pose_twist(free, object_state)
    planar = ff.base == "planar"
    before = world_momentum(ff, ff.create_data(), moving) + _object_momentum(o, pose, twist, planar)
    impact = capture_impact(ff, o, ee, moving, pose, twist)
    after = world_momentum(impact.held, impact.held.create_data(), impact.state)
    # One linear solve with the combined mass matrix: round-off.
    np.testing.assert_allclose(after, before, atol=1e-12 * max(1.0, np.abs(before).max()))
    # A plastic impact dissipates: the kinetic energy cannot grow.
    T_before = kinetic_energy(ff, ff.create_data(), moving.q, moving.v) + 0.5 * (
        o.mass * twist[:3] @ twist[:3] + twist[3:] @ pose.rotation @ o.inertia @ pose.rotation.T @ twist[3:])
    T_after = kinetic_energy(impact.held, impact.held.create_data(), impact.state.q, impact.state.v)
    assert T_after <= T_before
    assert np.abs(impact.impulse).max() > 1e-3  # the impact did something


def test_the_bundled_targets_are_far_tumbling_and_of_a_realistic_mass():
    """target_satellite: 1:1 to 1:5 of the servicer's mass, its grasp >= 0.5 m from the hand, 4
    deg/s about an axis that is not principal (so w is not along L: it nutates);
    planar_target: >= 0.3 m, on the table (3 x 2 m around the servicer)."""
    for robot, obj, distance in (("spatial_dual_arm", "target_satellite", 0.5), ("dual_arm_planar", "planar_target", 0.3)):
        ff, o, ee, robot_state, free, object_state = initial_states(CaptureConfig(robot=robot, obj=obj))
        assert 1 / 5 <= o.mass / ff.total_mass <= 1.0
        data = ff.create_data()
        pin.framesForwardKinematics(ff.model, data, robot_state.q)
        s = body_state(free, object_state)
        grasp = s.pose * o.grasps[0].placement
        assert np.linalg.norm(data.oMf[ff.frame_id(ee)].translation - grasp.translation) >= distance
        if ff.base == "spatial":
            assert np.degrees(np.linalg.norm(s.angular_velocity)) == pytest.approx(4.0, rel=1e-4)
            L = s.angular_momentum(free_body(o))
            off_axis = np.arccos(L @ s.angular_velocity / np.linalg.norm(L) / np.linalg.norm(s.angular_velocity))
            assert off_axis > np.radians(5.0)
        else:
            corners = [s.pose.act(np.array([sx * o.size[0] / 2, sy * o.size[1] / 2, 0.0]))
                       for sx in (-1, 1) for sy in (-1, 1)]
            assert all(abs(c[0]) < 1.5 and abs(c[1]) < 1.0 for c in corners)


def test_capture_requested_while_no_end_effector_is_near_is_refused_with_the_distance():
    ff, o, ee, robot_state, free, object_state = initial_states(CaptureConfig())
    reason = request_capture(ff, o, ee, robot_state, free, object_state, CaptureTolerances())
    assert reason is not None
    assert reason.startswith("capture refused: end-effector 'left_ee_link' is ")
    assert "m from the grasp frame of 'planar_box' (tolerance 0.005 m); approach first" in reason


def test_capture_of_an_object_spinning_too_fast_is_refused_even_at_the_grasp_frame():
    ff, o, ee, robot_state, free, object_state = initial_states(CaptureConfig())
    # Put the object exactly where the end-effector holds it, spinning at 1 rad/s.
    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, robot_state.q)
    X = data.oMf[ff.frame_id(ee)] * o.grasps[0].placement.inverse()
    yaw = float(np.arctan2(X.rotation[1, 0], X.rotation[0, 0]))
    q = np.array([X.translation[0], X.translation[1], np.cos(yaw), np.sin(yaw)])
    reason = request_capture(ff, o, ee, robot_state, free, State(q, np.array([0.0, 0.0, 1.0])), CaptureTolerances())
    # The grasp point, 7.5 cm from the spin axis, moves at 0.075 m/s: refused on that speed.
    assert reason == ("capture refused: end-effector 'left_ee_link' moves 0.075 m/s relative to the grasp frame "
                      "of 'planar_box' (tolerance 0.02 m/s); match the target's motion first")


def test_a_grasp_outside_tolerance_is_never_forced():
    s = run_capture(CaptureConfig(rate=250.0, duration=1.0, tolerances=CaptureTolerances(position=1e-9))).summary
    assert s["capture_time_s"] is None
    assert s["capture_refused"].startswith("capture refused: end-effector 'left_ee_link'")
    assert s["peak_grasp_force_N"] is None


@pytest.fixture(scope="module")
def flying():
    return run_capture(CaptureConfig(obj="planar_target", mode="flying", rate=250.0))


def test_flying_capture_closes_both_hands_and_brings_the_stack_to_rest_within_the_limits(flying):
    s, series = flying.summary, flying.series
    assert s["capture_time_s"] is not None and s["second_grasp_time_s"] > s["capture_time_s"]
    assert s["time_to_rest_s"] is not None
    # Both impacts are internal to robot + target: momentum the same just after (round-off).
    assert s["momentum_jump_at_capture"] < 1e-12 and s["momentum_jump_at_loop_closure"] < 1e-12
    # The closed chain's loops (Baumgarte, w_n = 20 rad/s) from a closure with zero error.
    assert s["max_grasp_constraint_error_m"] < 1e-9 and s["max_grasp_constraint_rotation_error_rad"] < 1e-9
    # At rest in flying mode (every velocity under 1e-3 m/s, rad/s) the thrusters have removed
    # what the target brought: what is left is the stack (27.7 kg) moving at under 1e-3 m/s.
    final = series["momentum_world"][-1]
    assert np.linalg.norm(final[:2]) < 27.72 * 1e-3 < np.linalg.norm(series["momentum_world"][0][:2])
    assert s["fuel_N_s"] > 0 and s["fuel_detumble_N_s"] > 0
    from conftest import robot as bundled
    assert s["peak_arm_torque_Nm"] <= bundled("dual_arm_planar").arm_effort_limits.max()
    assert s["peak_grasp_force_N"] > 0 and s["peak_grasp_torque_Nm"] > 0


@pytest.fixture(scope="module")
def floating():
    return {approach: run_capture(CaptureConfig(obj="planar_target", mode="floating", approach=approach, rate=250.0))
            for approach in ("naive", "reactionless")}


def test_floating_capture_conserves_momentum_through_approach_both_grasps_and_rest(floating):
    for result in floating.values():
        h = result.series["momentum_world"]
        assert result.summary["second_grasp_time_s"] is not None
        # Robot + free target before, robot holding it after: one constant, to round-off.
        assert np.abs(h - h[0]).max() < 1e-12
        assert np.abs(h[0]).max() > 1e-3  # the target brought momentum


def test_a_reactionless_approach_turns_the_base_a_hundred_times_less_than_the_naive_one(floating):
    naive = floating["naive"].summary["approach_base_attitude_change_rad"]
    reactionless = floating["reactionless"].summary["approach_base_attitude_change_rad"]
    # Measured 0.146 rad against 1.7e-7 rad on the same plan (planar_target, 250 Hz): the null
    # space holds the whole hand task here (rank 3), the rest is the control loop's lag.
    assert naive > 0.05
    assert reactionless < naive / 100.0
    assert floating["reactionless"].summary["reactionless_task_rank_min"] == 3


def test_bias_momentum_leaves_the_wheels_empty_when_the_stack_is_at_rest():
    """Rotation-floating, bias loaded during the approach (the thrusters' torque, taken in by the
    wheels holding the attitude): the stack's angular momentum is zero after the grasp,
    so at rest (joints still, base not turning) the wheels hold nothing; without the bias they
    would hold the target's angular momentum (physics.bias_momentum)."""
    s = run_capture(CaptureConfig(obj="planar_target", mode="rotation-floating", bias=True, rate=250.0)).summary
    assert s["bias_loaded_s"] is not None and s["bias_loaded_s"] < s["capture_time_s"]
    assert s["time_to_rest_s"] is not None
    # Measured 1.3e-4 against 7.5e-3 N m s: what is left is the joints' and the base's motion
    # under the rest threshold (1e-3 rad/s) and the loading's 2 % tolerance.
    assert s["final_wheel_momentum_Nms"] < 0.05 * s["target_angular_momentum_Nms"]
    assert s["final_base_angular_velocity_rad_s"] < 1e-3


def test_cli_capture_writes_the_capture_figures(capsys, tmp_path):
    code = main(["sim", "--robot", "dual_arm_planar", "--object", "planar_box", "--maneuver", "capture",
                 "--mode", "flying", "--one-arm", "--out", str(tmp_path / "c"), "--no-plots"])
    capsys.readouterr()
    assert code == 0
    s = json.loads((tmp_path / "c" / "summary.json").read_text())
    for key in ("capture_time_s", "time_to_rest_s", "peak_grasp_force_N", "peak_grasp_torque_Nm",
                "base_attitude_change_rad", "fuel_N_s", "peak_wheel_momentum_Nms", "peak_arm_torque_Nm"):
        assert s[key] is not None and np.isfinite(s[key]), key
    assert s["second_grasp_time_s"] is None  # --one-arm


def test_cli_capture_needs_an_object(capsys, tmp_path):
    code = main(["sim", "--robot", "dual_arm_planar", "--maneuver", "capture", "--out", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == 2
    assert "--maneuver capture needs an object: give --object NAME|PATH" in err


def test_cli_bias_momentum_outside_rotation_floating_is_refused(capsys, tmp_path):
    code = main(["sim", "--robot", "dual_arm_planar", "--object", "planar_target", "--maneuver", "capture",
                 "--mode", "flying", "--bias-momentum", "--out", str(tmp_path / "o")])
    _, err = capsys.readouterr()
    assert code == 2
    assert "--bias-momentum is held in the reaction wheels through the capture: fly it with --mode rotation-floating" in err


def test_a_dispersed_target_spinning_faster_with_its_inertia_off_by_ten_percent_is_still_captured():
    """The controller believes target_satellite's nominal spin and inertia; the truth spins 46 %
    faster about an axis tilted 0.2 rad, with principal inertia -6/+2/+5 % and mass +5 % (run 1
    of config/campaigns/capture_satellite.yaml, its measurement noise left out). The reference
    follows the measured grasp frame every tick, so the only question is whether the hand can
    keep up: before the reaction step of the task-first reactionless law was damped, the null
    space's near-singular direction asked 40-100 times the joint velocity limits, the scaled-down
    hand stalled 0.29 m short and the approach timed out at 40 s. Measured after: the first grasp
    closes at 10.9 s with the base turned 0.008 rad; 20 s leaves room for the nominal 17 s."""
    s = run_capture(CaptureConfig(robot="spatial_dual_arm", obj="target_satellite", mode="rotation-floating",
                                  approach="reactionless", rate=200.0, duration=20.0, target_spin_scale=1.456,
                                  target_spin_tilt=(-0.011, -0.194, -0.043), target_mass_scale=1.054,
                                  target_inertia_scale=(0.943, 1.023, 1.054))).summary
    assert s["capture_time_s"] is not None and s["capture_time_s"] < 20.0
    # The campaign's criterion on the reactionless approach (rad).
    assert s["approach_base_attitude_change_rad"] < 0.02
