"""Fuzz: the testbed bridge's callbacks (capture poses, encoder messages, controller commands,
ticks, e-stops and resets) with adversarial values, names and times.

A testbed (the hand-driven :class:`test_hil_bridge.Rig`, config/testbeds/planar_4link.yaml)
sends clean samples of a robot in gentle motion, and a controller sends plausible commands; into
that stream the fuzzer mixes, at random: capture samples and encoder messages with NaN, Inf or
absurd finite values, repeated, missing or foreign names, stamps from other clocks; controller
commands with NaN, absurd or wrongly sized values; steps of the bridge's clock back and forward,
ticks at times that are not times; e-stops, silences of either input, and resets.

Claims, for every call: nothing raises; every command is finite and within the hardware limits;
whenever the status is not ``active`` the command is zero (efforts, wheel torques, valves), except
the designed ``brake`` reaction, which stays within the limits; estimates handed to the controller
are finite; and the bridge's own code never failed (``stats.faults == 0``). The fuzz must reach
``active`` often and each refusal kind, or it proves nothing.
"""

from __future__ import annotations

import math

import numpy as np
from conftest import example_testbed
from fuzz_support import adversarial_float, adversarial_vector, fuzz_count, fuzz_rng
from test_hil_bridge import READY, Rig

from freeflyer_control.hil.frames import yaw_matrix
from freeflyer_control.physics.actuators import Actuation

# Calls per control period: about one encoder message, 0.4 capture samples, a command and a tick.
CALLS_PER_PERIOD = 3.4


def swaying(t: float):
    """A robot in gentle motion, never near a table edge or a limit: base position (m, world),
    yaw (rad), joint angles (rad, ff.joint_names order)."""
    s = math.sin(0.5 * t)
    return (np.array([0.4 + 0.05 * s, -0.3 + 0.03 * s, 0.0]), yaw_matrix(0.7 + 0.1 * s),
            np.array([*(READY + 0.1 * s), 2.5 + 3.0 * t]))


class Fuzzer:
    def __init__(self, rng):
        self.rng = rng
        self.rig = Rig(truth=swaying, controller=self.command)
        self.ff = self.rig.ff
        self.bridge = self.rig.bridge
        self.silent = 0
        self.statuses: dict[str, int] = {}

    def command(self, t: float) -> Actuation:
        """What the controller sends: plausible efforts and wrench, now and then adversarial."""
        rng, n_arm = self.rng, len(self.ff.arm_joint_names)
        if rng.random() < 0.02:
            sizes = [n_arm, 1, 3]
            if rng.random() < 0.2:
                sizes[rng.integers(3)] += 1
            return Actuation(adversarial_vector(rng, sizes[0], 1.0), adversarial_vector(rng, sizes[1], 0.1),
                             np.zeros(0), adversarial_vector(rng, sizes[2], 1.0))
        return Actuation(rng.normal(0.0, 1.0, n_arm), rng.normal(0.0, 0.1, 1), np.zeros(0), rng.normal(0.0, 0.5, 3))

    def now(self) -> float:
        return self.rig.t + self.rig.clock_offset

    def adversarial_call(self) -> None:
        rng, bridge, rig = self.rng, self.bridge, self.rig
        now, pick = self.now(), rng.random()
        if pick < 0.25:
            position, quat = rig.capture_sample(rig.t)
            if rng.random() < 0.5:
                position = adversarial_vector(rng, 3, 0.5)
            else:
                quat = adversarial_vector(rng, 4, 0.5) if rng.random() < 0.5 else quat * rng.choice([1.01, -1.0])
            stamp = now + rng.choice([0.0, -0.2, 2.0, -30.0, adversarial_float(rng)])
            bridge.on_capture(stamp, position, quat, now)
        elif pick < 0.5:
            names, raw = rig.encoder_message(rig.t)
            names = list(names)
            choice = rng.random()
            if choice < 0.2:
                names[0] = names[1]                  # a repeated name (and one missing)
            elif choice < 0.3:
                names.append("camera_pan")           # a foreign device: values must still be sized
                raw = np.append(raw, 0.0)
            elif choice < 0.45:
                raw[rng.integers(raw.size)] = float(rng.choice([np.nan, np.inf]))
            else:
                raw = adversarial_vector(rng, raw.size, 1.0)
            velocities = adversarial_vector(rng, raw.size) if rng.random() < 0.2 else []
            bridge.on_encoders(now + rng.choice([0.0, -0.3, adversarial_float(rng)]), names, raw, velocities, now)
        elif pick < 0.6:
            rig.clock_offset += float(rng.choice([-10.0, -0.2, -1e-3, 0.6, 10.0]))
        elif pick < 0.65:
            self.check(bridge.tick(float(rng.choice([np.nan, np.inf, -np.inf]))))
        elif pick < 0.7:
            bridge.estop(now, "fuzz")
        elif pick < 0.8:
            self.silent = int(rng.integers(5, 40))
            rig.capture, rig.encoders = rng.random() < 0.5, rng.random() < 0.5
        else:
            bridge.on_controller(self.command(0.0), now + float(rng.choice([0.0, -5.0, np.nan])))

    def period(self) -> None:
        rng, rig = self.rng, self.rig
        if rng.random() < 0.025:
            self.adversarial_call()
        if self.silent:
            self.silent -= 1
            if not self.silent:
                rig.capture = rig.encoders = True
        if self.bridge.latch.tripped and rng.random() < 0.02:
            self.bridge.reset(self.now())
        self.check(rig.step())

    def check(self, out) -> None:
        ff, cmd = self.ff, out.command
        self.statuses[out.status] = self.statuses.get(out.status, 0) + 1
        assert out.status in ("waiting", "active", "tripped"), out
        assert cmd.joint_efforts.shape == (len(ff.arm_joint_names),) and np.all(np.isfinite(cmd.joint_efforts))
        assert np.all(np.abs(cmd.joint_efforts) <= ff.arm_effort_limits), out
        assert cmd.wheels.shape == (1,) and np.all(np.abs(cmd.wheels) <= ff.wheel_max_torques), out
        if cmd.thrusters is not None:
            assert np.all(np.isfinite(cmd.thrusters)) and np.all((cmd.thrusters >= 0) & (cmd.thrusters <= 1)), out
        for reading in (out.joints, out.base):
            if reading is not None:
                assert all(np.all(np.isfinite(v)) for v in vars(reading).values()), out
        braking = out.status == "tripped" and out.trip.reaction == "brake"
        if out.status != "active" and not braking:
            assert not cmd.joint_efforts.any() and not cmd.wheels.any(), out
            assert cmd.thrusters is None or not cmd.thrusters.any(), out


def test_no_bridge_call_raises_and_every_command_is_finite_limited_and_zero_unless_active_or_braking():
    fuzzer = Fuzzer(fuzz_rng(200))
    periods = max(1, round(fuzz_count() / CALLS_PER_PERIOD))
    for _ in range(periods):
        fuzzer.period()
    stats = fuzzer.bridge.stats
    assert stats.faults == 0, stats.last_fault
    if fuzz_count() >= 5000:  # enough calls for every outcome to have come up
        ticks = sum(fuzzer.statuses.values())
        assert fuzzer.statuses.get("active", 0) > 0.2 * ticks, fuzzer.statuses
        trips = {trip.kind for trip in fuzzer.bridge.latch.history} | {t.kind for t in _all_trips(fuzzer)}
        assert {"clock_step", "capture_invalid", "encoders_invalid", "estop"} <= trips, trips
        assert {"implausible", "nan", "duplicate", "clock", "command"} <= set(stats.rejected.counts), \
            stats.rejected.counts
        assert stats.clock_steps > 5


def _all_trips(fuzzer):
    """Every trip the rig's log saw (the latch's history is cleared by each reset)."""
    return [out.trip for _, out in fuzzer.rig.log if out.trip is not None]


def test_the_fuzzed_testbed_is_the_example_config():
    # The claims above are about this config's limits (torque-commanded wheel, duty-cycle valves).
    cfg = example_testbed()
    assert cfg.actuators.wheel_command == "torque" and cfg.actuators.thrusters.command == "duty"
