"""Fuzz: the capture target's odometry on its way in (``read_odometry`` + ``on_object_odometry`` +
the ticks), as controller_node drives it with ``capture_object``.

The plant server simulates the free object and the robot; the controller reads the robot's
states and the object's /object/odom, which the fuzz spoils: absurd or non-finite poses and
twists, non-unit quaternions, silences longer than the object timeout, steps of the node's clock
(back, forward, not a time). Claims, for every tick: nothing raises; every command is finite and
zero unless the status is ``ok``; the control law never failed (``stats.faults == 0``); and the
controller never says it is ready to capture on odometry that is implausible, stale (older than
the timeout) or from before a clock step: the guard, not luck, kept the capture from a bad pose.
Statuses ``ok``, ``implausible`` and ``stale`` all come up, or the fuzz proves nothing.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from fuzz_support import adversarial_vector, fuzz_count, fuzz_rng
from wire_messages import odometry

from freeflyer_control.model import load_robot
from freeflyer_control.model.objects import load_object
from freeflyer_control.physics.state import make_state
from freeflyer_control.ros.conversions import MessageError, read_odometry
from freeflyer_control.runtime.controller_server import DEFAULT_OBJECT_TIMEOUT, ControllerServer
from freeflyer_control.runtime.plant_server import PlantServer

RATE = 200.0
OBJECT_EVERY = 4   # /object/odom at 50 Hz


class Driver:
    def __init__(self, rng):
        self.rng = rng
        self.ff, self.obj = load_robot("dual_arm_planar"), load_object("planar_box")
        self.server = PlantServer(self.ff, make_state(self.ff, joint_positions=self.ff.ready_pose), rate=RATE,
                                  obj=self.obj, object_free=True)
        self.ctl = ControllerServer(self.ff, rate=RATE, capture_obj=self.obj)
        self.k = 0
        self.now = 50.0
        self.silent = 0
        self.good_at = None        # node time of the last object message the fuzz knows to be good
        self.last_bad = False      # the last object message delivered was spoiled
        self.statuses: dict[str, int] = {}

    def clock(self) -> float:
        rng, pick = self.rng, self.rng.random()
        if pick < 0.003:
            self.now -= float(rng.choice([0.01, 1.0, 100.0]))
            self.good_at = None   # ages on the old clock are unknown: nothing counts as fresh
        elif pick < 0.006:
            self.now += float(rng.choice([0.6, 5.0]))
        elif pick < 0.008:
            return float(rng.choice([np.nan, np.inf]))
        else:
            self.now += 1.0 / RATE
        return self.now

    def object_message(self, t: float):
        """/object/odom: the plant's reading, or one spoiled (returns the message and whether
        the fuzz spoiled it)."""
        o = self.server.object_reading(t)
        if o is None:  # the plant stopped (it diverged under a spoiled command): nothing published
            return None, False
        position, quat = o.pose.translation.copy(), pin.Quaternion(o.pose.rotation).coeffs().copy()
        linear, angular = o.twist[:3].copy(), o.twist[3:].copy()
        spoiled = self.rng.random() < 0.25
        if spoiled:
            which = int(self.rng.integers(4))
            part = (position, quat, linear, angular)[which]
            part[:] = adversarial_vector(self.rng, part.size, 10.0)
        return odometry(position, quat, linear, angular), spoiled

    def period(self) -> int:
        rng = self.rng
        t = self.k / RATE
        now = self.clock()
        calls = 1
        m = self.server.measurement()
        self.ctl.on_joint_state(m.joint_names, m.joint_positions, m.joint_velocities, now)
        self.ctl.on_base_odometry(m.base, now)
        if self.silent == 0 and rng.random() < 0.01:
            self.silent = int(rng.integers(5, 120))  # the object's publisher stops a while
        self.silent = max(0, self.silent - 1)
        if not self.silent and self.k % OBJECT_EVERY == 0:
            msg, spoiled = self.object_message(t)
            if msg is not None:
                try:
                    reading = read_odometry(msg)
                except MessageError as exc:
                    reading = exc
                accepted = self.ctl.on_object_odometry(reading, now)
                assert accepted in (True, False)
                calls += 1
                if accepted:  # (a spoiled value inside the bounds is plausible data)
                    self.good_at, self.last_bad = now, False
                elif not isinstance(reading, MessageError) and np.isfinite(now):
                    self.last_bad = True  # refused as implausible: the guard must hold the capture
        out = self.ctl.tick(now)
        self.check(out, now)
        act = out.actuation
        self.server.set_arm_torques(act.arm_torques, now)
        self.server.set_thruster_forces(act.thruster_forces, now)
        self.server.step(now)
        self.k += 1
        return calls

    def check(self, out, now: float) -> None:
        act = out.actuation
        self.statuses[out.status] = self.statuses.get(out.status, 0) + 1
        parts = (act.arm_torques, act.wheel_torques, act.thruster_forces, act.base_wrench_world)
        assert all(np.all(np.isfinite(p)) for p in parts), out
        if out.status != "ok":
            assert not any(p.any() for p in parts), out
        if self.ctl.capture_ready:
            assert out.status == "ok", out
            assert not self.last_bad, "ready to capture on odometry refused as implausible"
            assert self.good_at is not None and now - self.good_at <= DEFAULT_OBJECT_TIMEOUT + 1e-9, \
                "ready to capture on stale odometry"


def test_fuzz_object_odometry_never_moves_or_captures_on_bad_odometry():
    driver = Driver(fuzz_rng(salt=33))
    calls = 0
    while calls < fuzz_count():
        calls += driver.period()
    assert driver.ctl.stats.faults == 0, driver.ctl.stats.last_fault
    assert driver.ctl.stats.errors.counts.get("implausible", 0) > 0
    if fuzz_count() >= 5000:
        assert {"ok", "implausible", "stale"} <= set(driver.statuses), driver.statuses
