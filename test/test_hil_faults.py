"""Fault injection on the whole HIL path (emulated testbed -> bridge -> controller), no ROS.

Each fault is injected into a closed loop that is doing something (holding the base with on/off
thrusters in flying mode, so "thrusters off" and "zero torques" both mean something). For each:

* the safe reaction (zero efforts and shut valves, or braking) is on the wire within two control
  periods of the moment the fault became detectable: the arrival of the bad message, or, for
  data that stops, the moment its watchdog timeout expired;
* the trip says why; nothing raises;
* a reset while the fault persists is refused with the cause, and one after it clears restores
  the loop, which then holds the robot where it is.

The testbed is config/testbeds/planar_4link.yaml: 250 Hz bridge, 100 Hz capture (y-up axes,
body offset, 8 ms latency, noise), 250 Hz 12-bit encoders, 10 Hz valves with a 10 ms minimum
on-time and 4 ms delay.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from conftest import example_testbed, example_variant

from freeflyer_control.control.maneuvers import BaseGoto, Maneuver, Wilde
from freeflyer_control.hil.emulator import Fault
from freeflyer_control.hil.runner import Event, run_hil
from freeflyer_control.physics.state import make_state


def _start_state(ff, **base):
    return make_state(ff, joint_positions=ff.ready_pose, **base)


@dataclass
class Watch:
    """Records what the bridge sent at each tick."""

    ticks: list = field(default_factory=list)

    def __call__(self, t, out):
        cmd = out.command
        self.ticks.append((t, out.status, out.trip, cmd.joint_efforts.copy(), cmd.wheels.copy(),
                           None if cmd.thrusters is None else cmd.thrusters.copy()))

    def first_safe_tick(self, after: float):
        """(time, tick) of the first tick at or after ``after`` that is not forwarding the controller."""
        for tick in self.ticks:
            if tick[0] >= after - 1e-9 and tick[1] != "active":
                return tick
        raise AssertionError(f"no safe tick after t = {after}")


def _hold(fault=None, events=(), duration=6.0, watch=None, **kw):
    ff = example_testbed().robot
    return run_hil(example_testbed(), Maneuver(name="hold"), _start_state(ff), duration, mode="flying",
                   faults=[fault] if fault else [], events=events, on_tick=watch, **kw)


def _assert_off(tick):
    """Zero joint and wheel torques, and a valve command that shuts every valve."""
    t, _, trip, efforts, wheels, valves = tick
    assert trip is not None and trip.reaction == "off"
    assert not efforts.any() and not wheels.any()
    assert valves is not None and not valves.any(), f"valves not shut at t={t}: {valves}"


PERIOD = example_testbed().period
TWO_PERIODS = 2 * PERIOD + 1e-9


# --- faults that arrive with a message ------------------------------------------------------

def test_a_capture_pose_jump_shuts_everything_within_two_periods_and_resets_after():
    watch = Watch()
    # 0.3 m: the capture system swapped marker bodies (far beyond the 0.05 m gate).
    fault = Fault("capture_jump", start=3.0, duration=0.3, offset=(0.3, 0.0, 0.0))
    run = _hold(fault, [Event(3.1, "reset"), Event(4.0, "reset")], watch=watch)
    trip = run.trips[0]
    assert trip.kind == "capture_jump" and "gate" in trip.reason
    # The first jumped sample is the one stamped at 3.0 s, delivered 8 ms later.
    arrival = 3.0 + run.emulator.settings.capture_latency
    assert arrival - 1e-9 <= trip.time <= arrival + TWO_PERIODS
    _assert_off(watch.first_safe_tick(arrival))
    (_, ok1, msg1), (_, ok2, msg2) = run.resets
    assert not ok1 and "refused" in msg1, "a reset right after the jump must be refused"
    assert ok2, msg2
    assert run.series["status"][-1] == 1  # active again


def test_a_nan_encoder_value_shuts_everything_within_two_periods_and_resets_after():
    watch = Watch()
    fault = Fault("encoder_nan", start=3.0, duration=0.2, joint="joint2")
    run = _hold(fault, [Event(3.1, "reset"), Event(4.0, "reset")], watch=watch)
    trip = run.trips[0]
    assert trip.kind == "encoders_invalid" and "NaN" in trip.reason
    arrival = 3.0 + run.emulator.settings.encoder_latency
    assert arrival - 1e-9 <= trip.time <= arrival + TWO_PERIODS
    _assert_off(watch.first_safe_tick(arrival))
    assert not run.resets[0][1] and run.resets[1][1], run.resets
    assert run.series["status"][-1] == 1


def test_an_estop_mid_maneuver_shuts_everything_at_the_next_tick_and_reset_holds_the_pose():
    # Wilde's maneuver in flying mode: joint 1 ramps at 0.1 rad/s while the valves hold the base.
    # E-stop at 5 s (joint 1 at ~0.5 rad and moving), reset at 5.5 s.
    watch = Watch()
    ff = example_testbed().robot
    run = run_hil(example_testbed(), Wilde(), make_state(ff), 8.0, mode="flying", on_tick=watch,
                  events=[Event(5.0, "estop", "operator"), Event(5.5, "reset")])
    trip = run.trips[0]
    assert trip.kind == "estop" and trip.time == pytest.approx(5.0) and trip.reason == "operator"
    _assert_off(watch.first_safe_tick(5.0))
    assert run.resets[0][1], run.resets
    assert run.controller.estopped is False
    # After the reset the controller holds the pose the arm is in, not the pose the maneuver's
    # clock has got to (joint 1's reference is 0.8 rad at 8 s). Joint 1 coasted at ~0.1 rad/s
    # while stopped; Wilde's gentle gains (K_P = K_D = 1) bring it to rest from there in about a
    # second, ~0.05 rad further on: within 0.08 rad of its angle at the reset.
    t, q1 = run.series["t"], run.series["true_joints"][:, 0]
    at_reset = q1[np.searchsorted(t, 5.5)]
    assert 0.4 < at_reset < 0.7
    assert np.abs(q1[t > 5.5] - at_reset).max() < 0.08
    assert q1[-1] < 0.8 - 0.15


# --- data that stops ---------------------------------------------------------------------------

@pytest.mark.parametrize("fault, kind", [
    (Fault("capture_dropout", start=3.0, duration=0.5), "capture_stale"),
    (Fault("encoder_freeze", start=3.0, duration=0.5), "encoders_stale"),
], ids=["capture-dropout-0.5s", "frozen-joint-states"])
def test_data_that_stops_shuts_everything_within_two_periods_of_its_timeout(fault, kind):
    watch = Watch()
    cfg = example_testbed()
    name = "capture" if kind.startswith("capture") else "encoders"
    timeout = cfg.capture.timeout if name == "capture" else cfg.encoders.timeout
    run = _hold(fault, [Event(3.3, "reset"), Event(4.0, "reset")], watch=watch)
    trip = run.trips[0]
    assert trip.kind == kind and "stale" in trip.reason
    stale_from = _stale_since(run, fault, name, timeout)
    assert stale_from <= trip.time <= stale_from + TWO_PERIODS
    _assert_off(watch.first_safe_tick(trip.time))
    assert not run.resets[0][1] and "stale" in run.resets[0][2]
    assert run.resets[1][1], run.resets
    assert run.series["status"][-1] == 1


def _stale_since(run, fault, name, timeout):
    """When the input became stale: the arrival of its last message before the fault (the
    sample schedule starts at t = 0), plus the watchdog timeout."""
    s = run.emulator.settings
    if name == "capture":
        rate, latency = run.bridge.config.capture.rate, s.capture_latency
    else:
        rate, latency = run.bridge.config.encoders.rate, s.encoder_latency
    last_stamp = np.floor((fault.start - 1e-9) * rate) / rate
    return last_stamp + latency + timeout


# --- the table edge --------------------------------------------------------------------------

def test_a_base_driven_at_the_table_edge_is_braked_to_rest_on_the_table_and_reset_holds_it():
    cfg = example_testbed()
    ff = cfg.robot
    watch = Watch()
    # Told to go 1.4 m in +x (peak 0.11 m/s, under the 0.15 m/s limit): the footprint (0.30 m)
    # would end 0.2 m past the +x edge at 1.5 m.
    run = run_hil(cfg, BaseGoto(offset=(1.4, 0.0, 0.0), move_time=24.0), _start_state(ff), 34.0,
                  mode="flying", on_tick=watch, events=[Event(32.0, "reset")])
    s = run.series
    trip = run.trips[0]
    assert trip.kind == "geofence" and trip.reaction == "brake" and "+x" in trip.reason
    limits = run.bridge.limits
    clearance = np.array([limits.edge_clearances(p) for p in s["true_base_position"]])
    assert clearance.min() > 0.0, "the base footprint left the table"
    # Timing, judged on the TRUE state: it never met the trip condition more than two periods
    # before the trip, and at the trip it was within 3 cm of meeting it. The predicted stop moves
    # by v / a_brake (0.11 / 0.06 = 1.8 s) times the velocity error of the estimate (~1 cm/s
    # while the base accelerates under pulsed thrust): early by up to ~2 cm, the safe side.
    t, pos, vel = s["t"], s["true_base_position"], s["true_base_velocity"]
    late = [ti for ti, p, v in zip(t, pos, vel) if ti < trip.time - TWO_PERIODS and limits.geofence(p, v)]
    assert not late, f"the true state met the geofence condition at {late[0]} s, the trip came at {trip.time} s"
    k = np.searchsorted(t, trip.time)
    slack = limits.edge_clearances(pos[k])[1] - limits.stopping_distance(vel[k, 0]) - limits.limits.margin
    assert slack < 0.03
    # Braking: valves fire against the motion until the base is at rest.
    after = s["t"] > trip.time + 8.0
    assert np.abs(s["true_base_velocity"][after, :2]).max() < 0.02
    assert run.resets[0][1], run.resets
    assert s["status"][-1] == 1


def test_a_motor_wired_the_other_way_runs_its_joint_away_and_everything_goes_off():
    # The lab's elbow motor turns the joint the other way than its config says (effort_sign):
    # the controller's correction pushes the joint away from its reference, faster and faster,
    # until a joint speed limit (1.5 rad/s, the URDF's) trips: joint2's, or a neighbour it
    # flings through the coupling (joint3 on this arm). Reaction: off, not damping,
    # which through the same wrong sign would push harder.
    truth = example_variant(**{"encoders.joints.joint2.effort_sign": 1})   # config: -1 (= sign)
    watch = Watch()
    run = _hold(duration=4.0, watch=watch, emulated=truth)
    trip = run.trips[0]
    assert trip.kind == "joint_speed" and "over the limit" in trip.reason and trip.reaction == "off"
    _assert_off(watch.first_safe_tick(trip.time))
    limits = run.bridge.config.limits
    # Caught well before the joint reaches its range limit (2.45 rad, the URDF's minus 0.05).
    arm = run.series["true_joints"][run.series["t"] <= trip.time, :4]
    assert np.all(np.abs(arm) < limits.joint_upper)
