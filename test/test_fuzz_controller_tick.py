"""Fuzz: ControllerServer driven the way controller_node drives it, with adversarial inputs and times.

Random sequences of joint states, base odometry (through ``read_odometry``, as the node does),
end-effector targets, e-stops and ticks, for every controller on several robots and modes. The
messages are plausible (a random moving state, names in any order) or carry adversarial values
(NaN, Inf, 1e154, 1e308, subnormals), a missing or repeated name; the node's clock advances by
about a period, and sometimes steps back, jumps forward, or reads NaN.

Claims, for every call: nothing raises (beyond the ValueError a refused reference is answered
with); every output is finite and sized for the robot; every output is zero whenever the status
is not ``ok``; and the control law itself never failed (``stats.faults == 0``): the plausibility
check, not the last-line try/except, kept absurd states out of it. The fuzz must reach ``ok``
often and every refusal status at least once, or it proves nothing.
"""

from __future__ import annotations

import numpy as np
from conftest import random_state, robot
from fuzz_support import adversarial_float, fuzz_count, fuzz_rng
from wire_messages import odometry

from freeflyer_control.ros.conversions import MessageError, fields_from_state, read_odometry
from freeflyer_control.runtime.controller_server import ControllerServer

RATE = 100.0
STATUSES = {"ok", "waiting", "stale", "estop", "clock_step", "implausible", "fault"}
CONFIGS = [  # (robot, controller, mode, base actuation)
    ("planar_4link", "computed_torque", "floating", "thrusters"),
    ("planar_4link", "resolved_rate", "flying", "ideal"),
    ("spatial_6link", "computed_torque", "rotation-floating", "thrusters"),
    ("spatial_6link", "resolved_rate", "translation-flying", "thrusters"),
    ("dual_arm_planar", "computed_torque", "rotation-flying", "thrusters"),
    ("spatial_7dof", "computed_torque", "flying", "ideal"),
    ("spatial_7dof", "impedance", "floating", "thrusters"),
    ("planar_4link", "impedance", "rotation-floating", "thrusters"),  # its wheel-held attitude
]


class Driver:
    """One controller and the node's clock."""

    def __init__(self, rng, name, controller, mode, base_actuation):
        self.rng, self.ff = rng, robot(name)
        self.ctl = ControllerServer(self.ff, rate=RATE, controller=controller, mode=mode,
                                    base_actuation=base_actuation)
        self.states = [random_state(self.ff, rng) for _ in range(8)]
        self.now = 100.0
        self.silent = 0   # periods without inputs still to go
        self.statuses: dict[str, int] = {}

    def clock(self) -> float:
        """The node clock for the next control period (sometimes stepped, or not a time)."""
        rng, pick = self.rng, self.rng.random()
        if pick < 0.004:
            self.now -= rng.choice([1e-3, 0.5, 10.0, 1e4])          # restarted clock, looping bag, NTP
        elif pick < 0.008:
            self.now += rng.choice([0.6, 10.0, 1e4])                # forward jump or a stalled node
        elif pick < 0.01:
            return float(rng.choice([np.nan, np.inf, -np.inf]))     # not a time (the clock stays put)
        else:
            self.now += rng.uniform(0.9, 1.1) / RATE
        return self.now

    def fields(self):
        fields = fields_from_state(self.ff, self.states[self.rng.integers(len(self.states))])
        if self.rng.random() < 0.05:  # one adversarial entry somewhere
            where = [fields.joint_positions, fields.joint_velocities, fields.base.position,
                     fields.base.linear_velocity, fields.base.angular_velocity][self.rng.integers(5)]
            where[self.rng.integers(where.size)] = adversarial_float(self.rng)
        return fields

    def period(self) -> int:
        """One control period as the node sees it: (usually) a joint state and an odometry
        message, now and then a target, an e-stop or its reset, then the tick. Returns the
        number of calls made."""
        rng, ctl = self.rng, self.ctl
        now = self.clock()
        calls = 1
        if self.silent == 0 and rng.random() < 0.01:
            self.silent = int(rng.integers(2, 30))  # the inputs stop for a while (a dead publisher)
        self.silent = max(0, self.silent - 1)
        if not self.silent and rng.random() < 0.97:
            f = self.fields()
            names, order = list(f.joint_names), rng.permutation(len(f.joint_names))
            names, pos, vel = [names[i] for i in order], f.joint_positions[order], f.joint_velocities[order]
            if rng.random() < 0.01:
                names[0] = names[-1]  # a repeated name (and one missing)
            assert ctl.on_joint_state(names, pos, vel, now) in (True, False)
            calls += 1
        if not self.silent and rng.random() < 0.97:
            b = self.fields().base
            try:
                reading = read_odometry(odometry(b.position, b.orientation_xyzw, b.linear_velocity, b.angular_velocity))
            except MessageError as exc:
                reading = exc
            assert ctl.on_base_odometry(reading, now) in (True, False)
            calls += 1
        pick = rng.random()
        if pick < 0.01 and self.ff.end_effectors:
            try:
                ctl.set_ee_target(self.ff.end_effectors[0], rng.normal(0.0, 0.5, 3), None)
            except ValueError:
                pass  # before the first state, or at a time that is not one: the node logs the refusal
            calls += 1
        elif pick < 0.015:
            ctl.estop(now, "fuzz")
            calls += 1
        elif pick < 0.05:
            ctl.reset_estop()
            calls += 1
        self.check(ctl.tick(now))
        return calls

    def check(self, out) -> None:
        ff, act = self.ff, out.actuation
        assert out.status in STATUSES, out
        self.statuses[out.status] = self.statuses.get(out.status, 0) + 1
        sizes = (len(ff.arm_joint_names), len(ff.wheel_joint_names), len(ff.thrusters), ff.nb)
        parts = (act.arm_torques, act.wheel_torques, act.thruster_forces, act.base_wrench_world)
        for part, size in zip(parts, sizes):
            assert part.shape == (size,) or (part is act.base_wrench_world and part.shape == (0,)), out
            assert np.all(np.isfinite(part)), out
        if out.status != "ok":
            assert not any(part.any() for part in parts), out
        else:
            assert np.all(np.abs(act.arm_torques) <= ff.arm_effort_limits)


def test_no_tick_raises_or_gives_a_non_finite_command_and_every_command_is_zero_unless_ok():
    statuses, refusals, steps = set(), set(), 0
    for index, config in enumerate(CONFIGS):
        driver = Driver(fuzz_rng(100 + index), *config)
        calls, budget = 0, max(1, fuzz_count() // len(CONFIGS))
        while calls < budget:
            calls += driver.period()
        stats = driver.ctl.stats
        assert stats.faults == 0, (config, stats.last_fault)
        ticks = sum(driver.statuses.values())
        if budget >= 1000:  # the control law ran: most periods had good inputs
            assert driver.statuses.get("ok", 0) > 0.2 * ticks, (config, driver.statuses)
        statuses |= set(driver.statuses)
        refusals |= set(stats.errors.counts)
        steps += stats.clock_steps
    if fuzz_count() >= 5000:  # enough calls for every outcome to have come up
        assert {"ok", "stale", "estop", "clock_step", "implausible"} <= statuses, statuses
        assert {"implausible", "nan", "duplicate"} <= refusals, refusals
        assert steps > 10
