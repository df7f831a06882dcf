"""Capture of a tumbling object: the grasp closes only within tolerances (refused with the reason
otherwise), the impact conserves momentum, and the post-capture controller brings the combined
system to rest within the actuators' limits."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from freeflyer_control.cli.main import main
from freeflyer_control.control.capture import CaptureTolerances
from freeflyer_control.model.objects import grasp_frame_name
from freeflyer_control.physics.capture import capture_impact
from freeflyer_control.physics.dynamics import kinetic_energy
from freeflyer_control.physics.momentum import world_momentum
from freeflyer_control.physics.state import State
from freeflyer_control.sim.capture import (
    CaptureConfig,
    _object_momentum,
    _object_pose_twist,
    initial_states,
    request_capture,
    run_capture,
)

PAIRS = [("dual_arm_planar", "planar_box"), ("spatial_dual_arm", "spatial_box")]


@pytest.mark.parametrize("robot,obj", PAIRS)
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


@pytest.mark.parametrize("robot,obj", PAIRS)
def test_flying_capture_brings_the_combined_system_to_rest_within_the_limits(robot, obj):
    result = run_capture(CaptureConfig(robot=robot, obj=obj, mode="flying", rate=250.0))
    s = result.summary
    assert s["capture_time_s"] is not None and s["time_to_rest_s"] is not None
    # Rest gain 2 /s, but the base is stopped by its thrusters (1.2 N per axis in the plane,
    # 2 N per axis in space, each saturating): measured 1.5 s planar, 7.7 s spatial.
    assert s["time_to_rest_s"] < 10.0
    assert s["momentum_jump_at_capture"] < 1e-12
    # Brought to rest in flying mode: the momentum the target brought is gone (thrusters).
    final = result.series["momentum_world"][-1]
    assert np.abs(final).max() < 5e-3 * np.abs(result.series["momentum_world"]).max() + 1e-9
    from conftest import robot as bundled
    assert s["peak_arm_torque_Nm"] <= bundled(robot).arm_effort_limits.max()
    assert s["peak_grasp_force_N"] > 0 and s["peak_grasp_torque_Nm"] > 0


def test_floating_capture_conserves_momentum_through_approach_impact_and_rest():
    result = run_capture(CaptureConfig(mode="floating", rate=250.0))
    h = result.series["momentum_world"]
    assert result.summary["capture_time_s"] is not None
    # Robot + free object before, robot holding it after: one constant, to round-off.
    assert np.abs(h - h[0]).max() < 1e-12
    assert np.abs(h[0]).max() > 1e-3  # the target brought momentum


def test_cli_capture_writes_the_capture_figures(capsys, tmp_path):
    import json

    code = main(["sim", "--robot", "dual_arm_planar", "--object", "planar_box", "--maneuver", "capture",
                 "--mode", "flying", "--out", str(tmp_path / "c"), "--no-plots"])
    capsys.readouterr()
    assert code == 0
    s = json.loads((tmp_path / "c" / "summary.json").read_text())
    for key in ("capture_time_s", "time_to_rest_s", "peak_grasp_force_N", "peak_grasp_torque_Nm",
                "base_attitude_change_rad"):
        assert s[key] is not None and np.isfinite(s[key]), key


def test_cli_capture_needs_an_object(capsys, tmp_path):
    code = main(["sim", "--robot", "dual_arm_planar", "--maneuver", "capture", "--out", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == 2
    assert "--maneuver capture needs an object: give --object NAME|PATH" in err
