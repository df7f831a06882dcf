"""The controller closing its loop through the emulated testbed (no ROS), against the ideal loop.

The testbed is config/testbeds/planar_4link.yaml with everything a real one does to the
signals: a y-up capture system 12 cm above base_link at 100 Hz with 0.5 mm / 2 mrad noise and
8 ms latency, 12-bit encoders with their own names, signs and zero offsets and no velocities,
2 ms command latency, 10 Hz solenoid valves with a 10 ms minimum on-time and a 4 ms delay.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import example_testbed, example_variant

from freeflyer_control.control.maneuvers import Maneuver, StationKeeping, Wilde
from freeflyer_control.hil.emulator import Fault
from freeflyer_control.hil.runner import Event, run_hil
from freeflyer_control.physics.state import make_state
from freeflyer_control.sim.config import SimConfig
from freeflyer_control.sim.runner import run_simulation


def test_wilde_maneuver_in_floating_mode_tracks_through_the_testbed_as_in_the_ideal_loop():
    cfg = example_testbed()
    ff = cfg.robot
    duration = 20.0  # joint 1's +0.1, hold and -0.1 rad/s phases
    run = run_hil(cfg, Wilde(), make_state(ff), duration)
    ideal = run_simulation(SimConfig(duration=duration, rate=cfg.rate, log_rate=cfg.rate), fast=False)
    assert not run.trips, run.trips
    s = run.series
    arm = ff.arm_v_indices - ff.nb
    reference = Wilde()
    reference.start(ff, make_state(ff))
    q_ref = np.array([reference.joint_reference(t).position for t in s["t"]])
    rms = np.sqrt(np.mean((s["true_joints"][:, arm] - q_ref) ** 2, axis=0))
    rms_ideal = ideal.summary["rms_tracking_error"]
    # The ideal loop's tracking error is the gentle gains' lag on joint 1 (0.029 rad); the
    # testbed adds encoder quantization (1.5 mrad counts) and delays: allow 25 % more, and the
    # idle joints must stay within 2 mrad RMS of their reference (a few counts).
    assert rms[0] < 1.25 * rms_ideal
    assert np.all(rms[1:] < 2e-3), rms
    # The base turns against the arm as in the ideal loop (Wilde et al.'s floating-mode
    # physics), to within 2 % of its 0.82 rad swing: the testbed changes the measurement, not
    # the physics. (Not closer: the bridge arms 0.25 s after the first data, once its estimators
    # have settled, and the maneuver's clock has then already run 0.025 rad of joint 1.)
    quats = ideal.series["base_orientation_xyzw"]
    yaw_ideal = 2 * np.arctan2(quats[:, 2], quats[:, 3])
    n = min(len(yaw_ideal), len(s["true_base_yaw"]))
    swing = np.abs(yaw_ideal).max()
    assert swing > 0.5
    assert np.abs(s["true_base_yaw"][:n] - yaw_ideal[:n]).max() < 0.02 * swing
    # Floating mode: the valves never opened, so the plant's linear momentum stayed zero and
    # the base position moved only with the arm (system CoM fixed).
    assert not np.nanmax(np.nan_to_num(s["duty"], nan=0.0))


@pytest.mark.parametrize("command, capture_rate", [("duty", 100.0), ("bits", 100.0), ("duty", 50.0), ("duty", 250.0)],
                         ids=["duty", "bits", "duty-capture-50Hz", "duty-capture-250Hz"])
def test_station_keeping_in_flying_mode_with_on_off_thrusters_holds_the_base(command, capture_rate):
    # Capture at the ends of the 50-250 Hz range too (watchdog: three samples).
    changes = {"actuators.thrusters.command": command}
    if capture_rate != 100.0:
        changes.update({"capture.rate": capture_rate, "capture.timeout": 3.0 / capture_rate})
    cfg = example_variant(**changes)
    ff = cfg.robot
    maneuver = StationKeeping()
    kick = maneuver.initial_base_twist  # 2 cm/s and 0.02 rad/s: the base was bumped
    state = make_state(ff, joint_positions=ff.ready_pose, base_linear_velocity=[kick[0], kick[1], 0.0],
                       base_angular_velocity=[0.0, 0.0, kick[5]])
    run = run_hil(cfg, maneuver, state, 30.0, mode="flying")
    assert not run.trips, run.trips
    s = run.series
    settled = s["t"] > 15.0
    # Held within 5 mm and 0.03 rad: the on/off valves' smallest impulse (0.6 N x 10 ms) moves
    # the 19.5 kg base by 0.3 mm/s, and capture noise (0.5 mm, 2 mrad) feeds the loop; the ideal
    # loop with continuous thrust holds to 0.2 mm.
    assert np.abs(s["true_base_position"][settled, :2]).max() < 5e-3
    assert np.abs(s["true_base_yaw"][settled]).max() < 0.03
    sent = s["duty"][~np.isnan(s["duty"][:, 0])]
    if command == "duty":
        # Each valve's on-time is 0 or at least the minimum on-time, never over the period.
        thr = cfg.actuators.thrusters
        on = sent[sent > 0]
        assert on.size and on.min() >= thr.min_on_time / thr.pwm_period - 1e-12 and on.max() <= 1.0
    else:
        assert set(np.unique(sent)) <= {0.0, 1.0}


def test_a_capture_system_read_with_the_wrong_axes_is_refused_at_start():
    # The lab's capture system is y-up (the example config); its config says z-up for the
    # capture frame (the marker body's axes right): the base looks like it stands on its side.
    # The bridge never arms; every command stays zero.
    wrong = example_variant(**{"capture.axes": "z-up", "capture.body_axes": "y-up"})
    run = run_hil(wrong, Maneuver(name="hold"), make_state(wrong.robot), 1.0, emulated=example_testbed())
    assert run.trips and run.trips[0].kind == "capture_frame"
    assert "capture.axes" in run.trips[0].reason and "tilted" in run.trips[0].reason
    assert not (run.series["status"] == 1).any()
    assert not run.series["joint_efforts"].any()


def test_body_axes_misread_the_same_way_show_as_a_base_off_the_table():
    # Capture and body axes both misread as z-up: at the heading the marker body was created
    # at (base yaw -pi/2 with the example's body offset) the base still looks level, but world
    # y reads as height: with the base 0.3 m along y, base_link is "0.3 m off the table".
    wrong = example_variant(**{"capture.axes": "z-up"})
    state = make_state(wrong.robot, base_position=[0.0, 0.3, 0.0], base_yaw=-np.pi / 2)
    run = run_hil(wrong, Maneuver(name="hold"), state, 1.0, emulated=example_testbed())
    assert run.trips and run.trips[0].kind == "capture_frame"
    assert "off the table plane" in run.trips[0].reason and "capture.axes" in run.trips[0].reason
    assert not (run.series["status"] == 1).any()


@pytest.mark.parametrize("command", ["torque", "speed"])
def test_the_reaction_wheel_holds_the_base_attitude_through_the_testbed_in_rotation_floating_mode(command):
    # Wilde's joint maneuver turns a floating base by 0.82 rad (the test above); in
    # rotation-floating mode the wheel takes that momentum instead. With torque commands the
    # bridge passes the controller's torque; with speed set-points it integrates torque / J_w
    # from the measured speed and the wheel driver's speed loop (50 1/s) follows: the base must
    # stay within 0.02 rad, 2.5 % of the floating swing (measured 0.7 and 8.6 mrad).
    cfg = example_testbed() if command == "torque" else example_variant(**{"actuators.wheels.command": command})
    ff = cfg.robot
    run = run_hil(cfg, Wilde(), make_state(ff), 20.0, mode="rotation-floating")
    assert not run.trips, run.trips
    s = run.series
    assert np.abs(s["true_base_yaw"]).max() < 0.02
    wheel = list(ff.joint_names).index(ff.wheel_joint_names[0])
    assert np.abs(s["true_joint_rates"][:, wheel]).max() > 100.0  # the wheel did take the momentum


@pytest.mark.parametrize("step, words", [(-10.0, "clock stepped back by 9.996 s"),
                                         (10.0, "clock jumped forward by 10.004 s")], ids=["back-10s", "forward-10s"])
def test_a_clock_step_mid_maneuver_shuts_everything_at_the_next_tick_and_a_reset_resumes_on_the_new_clock(step, words):
    # The nodes' clock reads 100 s at the start (a simulation clock that has been running) and
    # steps by `step` at 3 s, mid-way through joint 1's first ramp (Wilde, flying mode: valves
    # and motors busy). The emulated plant goes on in true time. Resets at 3.1 s (too early:
    # the re-acquired estimates have not been fresh for the settle time) and at 4 s.
    cfg = example_testbed()
    ff = cfg.robot
    sent, control = [], []
    run = run_hil(cfg, Wilde(), make_state(ff, joint_positions=ff.ready_pose), 6.0, mode="flying",
                  clock_steps=[(0.0, 100.0), (3.0, step)], events=[Event(3.1, "reset"), Event(4.0, "reset")],
                  on_tick=lambda t, out: sent.append((t, out)),
                  on_control=lambda t, truth, out, applied: control.append((t, out.status)))
    trip = run.trips[0]
    assert trip.kind == "clock_step" and trip.reason.startswith(words)
    assert [t.kind for t in run.trips] == ["clock_step"]
    # Off on the first tick on the new clock (the step is seen by the first call after it):
    t_first, out = next((t, out) for t, out in sent if t >= 3.0 - 1e-9)
    assert t_first == pytest.approx(3.0) and out.trip is trip
    assert not out.command.joint_efforts.any() and not out.command.thrusters.any()
    assert all(out.status == "active" for t, out in sent if 1.0 < t < 3.0 - 1e-9)
    # The controller saw the step too, and was e-stopped by the bridge meanwhile.
    assert run.controller.stats.clock_steps == 1 and run.controller.stats.last_clock_step.startswith(words)
    assert any(reason == f"testbed bridge: {trip.reason}" for _, reason in run.controller.stats.trips)
    # Estimators restarted on the new clock: nothing refused as out of order (today's failure:
    # every encoder message refused for as long as the step).
    assert not {"out_of_order", "clock_step"} & set(run.bridge.stats.rejected.counts)
    (_, ok1, msg1), (_, ok2, msg2) = run.resets
    assert not ok1 and "inputs fresh for less than 0.25 s" in msg1
    assert ok2 and "clock_step" in msg2
    after = run.series["t"] > 4.0 + 1e-9
    assert (run.series["status"][after] == 1).all()
    assert all(status == "ok" for t, status in control if t > 4.1)
    assert run.controller.loop.maneuver.name == "hold"  # resumed holding the pose, not at Wilde's clock
    np.testing.assert_allclose(run.series["clock"][-1], 6.0 + 100.0 + step)


def test_the_emulated_plant_diverging_trips_the_bridge_to_zeros_with_the_reason():
    # A push fault far beyond anything physical (1 MN for 10 ms: a bad fault entry) drives the
    # emulated base past the plant's speed bound within two 1 ms steps, before any capture sample
    # could show it. The emulated testbed then falls silent; the runner e-stops the bridge at once
    # with the plant's reason, and every command from that tick on is zero.
    cfg = example_testbed()
    ff = cfg.robot
    push = Fault("push", 2.0, 0.01, offset=(1e6, 0.0, 0.0))
    run = run_hil(cfg, Wilde(), make_state(ff), 3.0, faults=[push])
    s = run.series
    assert run.emulator.diverged is not None and "speed" in run.emulator.diverged
    first = run.trips[0]
    assert first.kind == "estop" and 2.0 <= first.time <= 2.0 + 2 * cfg.period
    assert first.reason == f"testbed emulator: {run.emulator.diverged}"
    assert (s["status"][s["t"] < 2.0 - 1e-9][-10:] == 1).all()  # it was flying until then
    after = s["t"] >= first.time - 1e-9
    assert (s["status"][after] == 2).all()
    assert not s["joint_efforts"][after].any() and not s["wheels"][after].any()
    assert not np.nan_to_num(s["duty"][after], nan=0.0).any()
    for key in ("true_base_position", "true_base_velocity", "true_joints", "true_joint_rates"):
        assert np.isfinite(s[key]).all(), key
    # freeflyer sim --via-testbed puts the reason in its summary, as the lockstep sim does (and the
    # command line then exits with status 3).
    from freeflyer_control.hil.sim import run_via_testbed

    result = run_via_testbed(SimConfig(maneuver="wilde", duration=3.0), str(cfg.source), faults=[push])
    assert result.summary["plant_diverged"] == run.emulator.diverged
