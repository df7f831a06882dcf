"""Cost of the HIL path (testbed bridge, testbed emulator, in-process runner) on the example testbed.

Prints a Markdown table of median per-call times (interleaved batches, like bench_core.py) of:

* ``TestbedBridge.on_capture``: one motion-capture sample (y-up axes, marker-body offset, noise)
  through the frame transform, the checks and the base estimator;
* ``TestbedBridge.on_encoders``: one 12-bit encoder message (hardware names, signs, offsets, a
  spinning wheel to unwrap) through the joint estimator;
* ``TestbedBridge.tick``, armed and forwarding a controller that asks for joint efforts, a wheel
  torque and a base wrench: safety checks, estimates, effort mapping, and every 25th tick the
  thruster allocation and PWM duty cycles (averaged in, as a run sees them); and a tick that
  always starts a PWM period (allocation every call: the worst tick). The inputs are kept fresh
  by feeding the bridge's watchdogs, so that only the tick is timed;
* ``TestbedEmulator.advance`` by one control period (4 plant steps at 1 kHz, sensor sampling) and
  the delivery of the samples due;
* one whole runner tick (``hil.runner.run_hil``: emulator, bridge, controller, logging), as a
  run's wall time over its ticks;

then the real-time factor of ``run_hil`` on the example config (Wilde maneuver, floating mode,
computed torque) and what building a bridge costs.

    PYTHONPATH=. python bench/bench_hil.py [--hil-seconds 10] [--repeats 15] [--batch 200]
    PYTHONPATH=. python bench/bench_hil.py --quick      # a few seconds, rougher numbers
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import Case, cpu_times, load_during, machine_facts, run

from freeflyer_control.control.maneuvers import make_maneuver
from freeflyer_control.hil.bridge import TestbedBridge
from freeflyer_control.hil.config import load_testbed_config
from freeflyer_control.hil.emulator import TestbedEmulator
from freeflyer_control.hil.frames import yaw_matrix
from freeflyer_control.hil.runner import run_hil
from freeflyer_control.hil.safety import _brake_acceleration
from freeflyer_control.physics.actuators import Actuation
from freeflyer_control.physics.state import make_state
from freeflyer_control.sim.config import SimConfig, initial_state

EXAMPLE = Path(__file__).resolve().parents[1] / "config" / "testbeds" / "planar_4link.yaml"
POOL = 1000                 # distinct pre-made messages per input, handed out in turn
WHEEL_TURNS = 32            # the wheel makes this many turns per pool: 2 pi 32 / 4 s = 50 rad/s


class Messages:
    """Pre-made capture samples and encoder messages of a robot at rest on the table (arm at the
    ready pose; capture noise of the config unless ``noise`` is False) with its wheel spinning,
    so the timed calls do not build them. ``capture(k)`` / ``encoders(k)``: the k-th message
    (k = 0, 1, ...), stamped at ``k`` sensor periods: the pool repeats, the stamps go on."""

    def __init__(self, cfg, rng: np.random.Generator, noise: bool = True):
        ff = cfg.robot
        self.cfg = cfg
        self.capture_dt, self.encoder_dt = 1.0 / cfg.capture.rate, 1.0 / cfg.encoders.rate
        tf = cfg.capture.transform
        self._capture = []
        for _ in range(POOL):
            p = np.array([0.2, -0.1, 0.0]) + noise * np.append(rng.normal(0.0, cfg.capture.position_noise, 2), 0.0)
            R = yaw_matrix(0.3 + noise * rng.normal(0.0, cfg.capture.attitude_noise))
            self._capture.append(tf.from_world(p, R))
        ch = cfg.encoders.channels
        self.names = [c.name for c in ch]
        count = 2 * math.pi / 4096
        q0 = np.array([ff.ready_pose.get(n, 0.0) for n in ff.joint_names])
        wheel = np.array([n in ff.wheel_joint_names for n in ff.joint_names])
        rate = 2 * math.pi * WHEEL_TURNS / (POOL * self.encoder_dt)
        self._encoders = []
        for k in range(POOL):
            q = np.where(wheel, np.angle(np.exp(1j * rate * k * self.encoder_dt)), q0)
            raw = np.array([c.sign * q[i] + c.offset for i, c in enumerate(ch)])
            self._encoders.append(np.round(raw / count) * count)

    def capture(self, k: int):
        position, quat = self._capture[k % POOL]
        return k * self.capture_dt, position, quat

    def encoders(self, k: int):
        return k * self.encoder_dt, self.names, self._encoders[k % POOL], []


def armed_bridge(cfg, messages: Messages, command: Actuation) -> tuple[TestbedBridge, float]:
    """A bridge fed 0.4 s of messages and commands (armed, forwarding ``command``); its clock, s."""
    bridge = TestbedBridge(cfg)
    dt = cfg.period
    kc = 0
    t = 0.0
    for k in range(round(0.4 / dt)):
        t = k * dt
        while kc * messages.capture_dt <= t + 1e-9:
            stamp, position, quat = messages.capture(kc)
            bridge.on_capture(stamp, position, quat, t)
            kc += 1
        stamp, names, raw, vel = messages.encoders(k)
        bridge.on_encoders(stamp, names, raw, vel, t)
        out = bridge.tick(t)
        bridge.on_controller(command, t)
    if out.status != "active":
        raise RuntimeError(f"the bench bridge did not arm: {out.status} {out.trip}")
    return bridge, t


def cases(cfg, rng: np.random.Generator) -> list[Case]:
    ff = cfg.robot
    messages = Messages(cfg, rng)
    # The timed ticks extrapolate the last estimates for minutes of bridge time: from noise-free
    # samples the base rate estimate is exactly 0, so the base stays put (no geofence trip).
    still = Messages(cfg, rng, noise=False)
    command = Actuation(np.array([0.4, -0.3, 0.2, -0.1]), np.array([0.05]),
                        base_wrench_world=np.array([0.3, -0.2, 0.02]))

    capture_bridge = TestbedBridge(cfg)
    kc = [0]

    def on_capture():
        stamp, position, quat = messages.capture(kc[0])
        kc[0] += 1
        capture_bridge.on_capture(stamp, position, quat, stamp)

    encoder_bridge = TestbedBridge(cfg)
    ke = [0]

    def on_encoders():
        stamp, names, raw, vel = messages.encoders(ke[0])
        ke[0] += 1
        encoder_bridge.on_encoders(stamp, names, raw, vel, stamp)

    def ticker(step: float):
        bridge, t0 = armed_bridge(cfg, still, command)
        clock = [t0]
        feeds = [(w.feed, name) for name, w in bridge.watchdogs.items()]

        def tick():
            clock[0] += step
            now = clock[0]
            for feed, name in feeds:
                feed(name, now)
            return bridge.tick(now)

        def check():  # outside the timing: the bench must measure an armed, forwarding bridge
            out = bridge.tick(clock[0])
            if out.status != "active":
                raise RuntimeError(f"the timed bridge left 'active': {out.status} {out.trip}")
        return tick, check

    tick, tick_check = ticker(cfg.period)
    tick_period, period_check = ticker(cfg.actuators.thrusters.pwm_period)

    state = make_state(ff, joint_positions=ff.ready_pose)
    emulator = TestbedEmulator(cfg, state)
    emulator.on_joint_efforts(command.arm_torques, 0.0)
    emulator.on_thruster_command(np.full(len(cfg.actuators.thrusters.channels), 0.3), 0.0)
    clock = [0.0]

    def advance():
        clock[0] += cfg.period
        emulator.advance(clock[0])
        emulator.capture_samples(clock[0])
        emulator.encoder_samples(clock[0])

    return [
        Case(ff.name, "TestbedBridge.on_capture (one sample)", on_capture),
        Case(ff.name, "TestbedBridge.on_encoders (one message)", on_encoders),
        Case(ff.name, "TestbedBridge.tick (active, base wrench; allocation every 25th)", tick, reset=tick_check),
        Case(ff.name, "TestbedBridge.tick at a PWM period start (allocation + duty)", tick_period,
             reset=period_check),
        Case(ff.name, "TestbedEmulator.advance (one control period) + deliveries", advance),
    ]


def runner_ticks(cfg, seconds: float, runs: int) -> tuple[list[float], list[float], int]:
    """Loop wall times (s) and whole-call wall times (s) of ``runs`` Wilde runs, and their ticks."""
    maneuver = make_maneuver("wilde")
    state = initial_state(cfg.robot, SimConfig(maneuver="wilde"), maneuver)
    loops, calls = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        result = run_hil(cfg, maneuver, state, seconds, mode="floating")
        calls.append(time.perf_counter() - t0)
        loops.append(result.wall_time)
        if result.trips:
            print(f"note: the Wilde run tripped: {[trip.kind for trip in result.trips]}")
    return loops, calls, round(seconds / cfg.period) + 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(EXAMPLE), help="testbed config (default: the example)")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--hil-seconds", type=float, default=10.0, help="simulated seconds per run_hil run")
    parser.add_argument("--runs", type=int, default=3, help="run_hil runs (the median is reported)")
    parser.add_argument("--quick", action="store_true", help="fewer repeats and a short run: rough numbers fast")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.batch, args.hil_seconds, args.runs = 5, 50, 2.0, 1

    cfg = load_testbed_config(args.config)
    period_us = cfg.period * 1e6
    rng = np.random.default_rng(0)
    before = cpu_times()
    bench = cases(cfg, rng)
    run(bench, args.repeats, args.batch, warmup=50)
    loops, calls, ticks = runner_ticks(cfg, args.hil_seconds, args.runs)
    t0 = time.perf_counter()
    TestbedBridge(cfg)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    _brake_acceleration(cfg.robot)  # uncached: what the first bridge of a thruster layout pays
    brake = time.perf_counter() - t0
    after = cpu_times()

    print(f"testbed {cfg.source} (robot {cfg.robot.name}, {cfg.rate:g} Hz: {period_us:.0f} µs a control period)")
    print()
    print("| quantity | median µs | p90 µs | share of a control period |")
    print("|---|---:|---:|---:|")
    for c in bench:
        med, p90 = float(np.median(c.samples)) / 1e3, float(np.percentile(c.samples, 90)) / 1e3
        print(f"| {c.quantity} | {med:.1f} | {p90:.1f} | {100 * med / period_us:.1f} % |")
    per_tick = [w / ticks * 1e6 for w in loops]
    med = float(np.median(per_tick))
    print(f"| run_hil, one whole tick (emulator + bridge + controller + log; {args.runs} run(s) of "
          f"{args.hil_seconds:g} s) | {med:.1f} | {max(per_tick):.1f} | {100 * med / period_us:.1f} % |")
    print()
    rtf = args.hil_seconds / float(np.median(loops))
    print(f"run_hil real-time factor (Wilde, floating, computed torque, {args.hil_seconds:g} s simulated): "
          f"{rtf:.1f} (loop wall {np.median(loops):.2f} s; whole call incl. set-up {np.median(calls):.2f} s)")
    print(f"building a TestbedBridge: {build * 1e3:.0f} ms (braking capability cached per thruster layout; "
          f"computing it: {brake * 1e3:.0f} ms)")
    print(load_during(before, after))
    for line in machine_facts():
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
