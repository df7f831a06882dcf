"""The capture target's odometry is guarded like the robot's own inputs (issue 20, class 1).

ControllerServer with ``capture_obj`` in closed loop with the plant server simulating the free
object (``/object/odom`` as plant_node publishes it, at the plant's object rate). While it
approaches, object odometry that is implausible for the object's model, stale, or not received
since a clock step gives zero commands, the reason, and no capture request; good odometry
resumes the approach. Once captured, the object is part of the robot and its odometry is no
longer an input.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from freeflyer_control.model import load_robot
from freeflyer_control.model.objects import load_object
from freeflyer_control.physics.state import make_state
from freeflyer_control.ros.conversions import BaseReading
from freeflyer_control.runtime.controller_server import DEFAULT_OBJECT_TIMEOUT, ControllerServer
from freeflyer_control.runtime.plausibility import DEFAULT_MAX_BASE_RATE, ObjectBounds
from freeflyer_control.runtime.plant_server import PlantServer

RATE = 200.0          # Hz, control and plant
OBJECT_EVERY = 4      # the object odometry arrives every 4th period: 50 Hz, plant_node's default


@pytest.fixture(scope="module")
def planar():
    return load_robot("dual_arm_planar"), load_object("planar_box")


class Loop:
    """Plant server (free object) and capturing controller, one period at a time."""

    def __init__(self, ff, obj, **controller):
        self.server = PlantServer(ff, make_state(ff, joint_positions=ff.ready_pose), rate=RATE, obj=obj,
                                  object_free=True)
        self.ctl = ControllerServer(ff, rate=RATE, capture_obj=obj, **controller)
        self.k = 0
        self.clock_offset = 0.0

    def reading(self, t: float) -> BaseReading:
        o = self.server.object_reading(t)
        return BaseReading(o.pose.translation.copy(), pin.Quaternion(o.pose.rotation).coeffs().copy(),
                           o.twist[:3].copy(), o.twist[3:].copy())

    def period(self, object_reading=None, send_object: bool = True):
        """One period: robot states, the object's odometry on its schedule (``object_reading``
        replaces it; ``send_object`` False: none arrives), the tick; returns the output."""
        t = self.k / RATE
        now = t + self.clock_offset
        m = self.server.measurement()
        self.ctl.on_joint_state(m.joint_names, m.joint_positions, m.joint_velocities, now)
        self.ctl.on_base_odometry(m.base, now)
        if send_object and self.k % OBJECT_EVERY == 0:
            self.ctl.on_object_odometry(object_reading if object_reading is not None else self.reading(t), now)
        out = self.ctl.tick(now)
        self.server.set_arm_torques(out.actuation.arm_torques, now)
        self.server.set_thruster_forces(out.actuation.thruster_forces, now)
        self.server.step(now)
        self.k += 1
        return out

    def run(self, periods: int, **kw):
        return [self.period(**kw) for _ in range(periods)]


def zero(out) -> bool:
    act = out.actuation
    return not (act.arm_torques.any() or act.wheel_torques.any() or act.thruster_forces.any())


def approaching(ff, obj) -> Loop:
    """A loop 0.5 s into the approach, every tick ok."""
    loop = Loop(ff, obj)
    outs = loop.run(100)
    assert outs[-1].status == "ok", outs[-1].reason
    return loop


@pytest.mark.parametrize("field, value, words", [
    ("linear_velocity", [1e300, 0.0, 0.0], "moving at 1e+300 m/s, beyond the plausible 5 m/s"),
    ("angular_velocity", [0.0, 0.0, 1e3], "turning at 1000 rad/s, beyond the plausible"),
    ("position", [1e8, 0.0, 0.0], "1e+08 m from the world origin"),
])
def test_implausible_object_odometry_zeroes_the_commands_names_the_reason_and_blocks_the_capture(
        planar, field, value, words):
    ff, obj = planar
    loop = approaching(ff, obj)
    good = loop.reading(loop.k / RATE)
    bad = BaseReading(**{**good.__dict__, field: np.array(value, dtype=float)})
    outs = loop.run(OBJECT_EVERY, object_reading=bad)
    assert all(o.status == "implausible" and zero(o) for o in outs), [(o.status, o.reason) for o in outs]
    assert words in outs[-1].reason and "'planar_box'" in outs[-1].reason
    assert not loop.ctl.capture_ready
    assert loop.ctl.stats.errors.counts["implausible"] >= 1
    assert words in loop.ctl.capture_diagnostics()["object_odometry"]
    # The next plausible message resumes the approach.
    outs = loop.run(2 * OBJECT_EVERY)
    assert outs[-1].status == "ok" and loop.ctl.capture_diagnostics()["object_odometry"] == "ok"


def test_the_rate_bound_comes_from_the_objects_model():
    # A grasp frame 0.075 m from planar_box's CoM: the base's 10 rad/s bound is the tighter one.
    # A 10 m object's corners would move at 5 m/s at 0.5 rad/s: its bound is 5 m/s over its reach.
    box = load_object("planar_box")
    assert ObjectBounds.from_object(box).max_rate == DEFAULT_MAX_BASE_RATE
    from dataclasses import replace

    big = replace(box, size=np.array([20.0, 0.0, 0.0]))
    assert ObjectBounds.from_object(big).max_rate == pytest.approx(5.0 / 10.0)


def test_object_odometry_that_stops_zeroes_the_commands_and_blocks_the_capture(planar):
    ff, obj = planar
    loop = approaching(ff, obj)
    silent = int(round(2.95 * RATE))  # the 2.95 s silence of the probe
    outs = loop.run(silent, send_object=False)
    # The last message came at most one object period before the silence: zero within the
    # timeout plus that period, and from then on every tick.
    first = next(i for i, o in enumerate(outs) if o.status != "ok")
    assert first <= (DEFAULT_OBJECT_TIMEOUT + OBJECT_EVERY / RATE) * RATE + 1
    assert all(o.status == "stale" and zero(o) for o in outs[first:])
    assert "odometry of 'planar_box': object_odometry stale for" in outs[-1].reason
    assert not loop.ctl.capture_ready
    assert loop.ctl.capture_diagnostics()["capture_refusal"].startswith("odometry of 'planar_box'")
    assert any("stale" in reason for _, reason in loop.ctl.stats.trips)
    outs = loop.run(2 * OBJECT_EVERY)
    assert outs[-1].status == "ok"


def test_a_clock_step_discards_the_object_odometry_until_it_arrives_on_the_new_clock(planar):
    ff, obj = planar
    loop = approaching(ff, obj)
    loop.clock_offset = -10.0
    outs = loop.run(int(round(0.6 * RATE)), send_object=False)
    # Robot inputs fresh again after the re-arm (0.25 s); the object's never came on the new clock.
    assert all(zero(o) for o in outs) and outs[-1].status == "stale", (outs[-1].status, outs[-1].reason)
    # 10 s back, less the period that passed: 9.995 s
    assert "object_odometry never received since the clock stepped back by 9.995 s" in outs[-1].reason
    assert not loop.ctl.capture_ready
    outs = loop.run(2 * OBJECT_EVERY)
    assert outs[-1].status == "ok"


def test_object_odometry_is_no_input_once_captured(planar):
    ff, obj = planar
    loop = Loop(ff, obj)
    for _ in range(int(5 * RATE)):
        out = loop.period()
        assert out.status == "ok", out.reason
        if loop.ctl.capture_ready:
            ok, message = loop.server.request_capture()
            assert ok, message
            loop.ctl.captured()
            break
    else:
        pytest.fail("never ready to capture")
    outs = loop.run(int(0.5 * RATE), send_object=False)
    assert all(o.status == "ok" for o in outs), outs[-1].reason
