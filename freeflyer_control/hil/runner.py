"""The whole HIL path in one process: emulated testbed -> bridge -> controller -> bridge -> testbed.

The same objects the ROS nodes wrap (:class:`~freeflyer_control.hil.emulator.TestbedEmulator`,
:class:`~freeflyer_control.hil.bridge.TestbedBridge`,
:class:`~freeflyer_control.runtime.controller_server.ControllerServer`), wired the way the
ROS graph of ``hil_sim.launch.py`` wires them, on one simulated clock:

* sensor messages reach the bridge at their delivery time (sample time + latency);
* at each control tick the bridge checks safety, sends the hardware commands (made from the
  controller's previous output: the one-tick delay of a topic round trip) and hands its state
  estimate to the controller, whose output it receives for the next tick;
* a bridge trip e-stops the controller (the node calls ``controller_node/estop``), and a
  successful bridge reset resets the controller's e-stop (``controller_node/reset_estop``);
* a controller fault (its control law raised, returned non-finite or over-limit commands, or
  overran its period) trips the bridge (``law_fault``, with the controller's reason), as the
  node's e-stop on /estop does in the ROS graph;
* the nodes' clock can step (``clock_steps``: a restarted simulation clock, a looping bag, an
  NTP step on the host): the bridge and the controller then read ``t + offset`` and the sample
  stamps carry the offset in force when they were taken, while the emulated plant goes on in
  true time.

Used by ``freeflyer sim --via-testbed`` and by the fault-injection tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from freeflyer_control.control.law import ControlLaw
from freeflyer_control.control.law_guard import OVERRUN_LIMIT
from freeflyer_control.control.maneuvers import Maneuver
from freeflyer_control.physics.state import State, base_position, base_twist_world, base_yaw, joint_positions
from freeflyer_control.runtime.controller_server import ControllerOutput, ControllerServer

from .bridge import BridgeOutput, TestbedBridge
from .config import TestbedConfig
from .emulator import Fault, TestbedEmulator
from .emulator_settings import EmulatorSettings

STATUS_CODES = {"waiting": 0, "active": 1, "tripped": 2}


@dataclass(frozen=True)
class Event:
    """An operator action at ``time`` (s): ``estop`` (reason in ``text``), ``reset``, or
    ``mode`` (the new mode in ``text``)."""

    time: float
    kind: str
    text: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("estop", "reset", "mode"):
            raise ValueError(f"unknown event '{self.kind}'; events: estop, reset, mode")


@dataclass
class HilLog:
    """Every control tick of a HIL run (arrays over ticks after :meth:`finish`).

    true_*: the emulated plant. est_*: the bridge's estimate (NaN while it has none).
    status: STATUS_CODES of the bridge. duty: valve commands sent this tick (NaN: none sent).
    clock: the nodes' clock at the tick (t plus the clock steps so far), s.
    """

    columns: dict[str, list] = field(default_factory=dict)
    resets: list[tuple[float, bool, str]] = field(default_factory=list)

    def add(self, **values) -> None:
        for key, value in values.items():
            self.columns.setdefault(key, []).append(np.asarray(value, dtype=float).reshape(-1))

    def finish(self) -> dict[str, np.ndarray]:
        return {k: np.vstack(v) if v[0].size > 1 else np.concatenate(v) for k, v in self.columns.items()}


@dataclass
class HilRun:
    """The objects of a run and its log (``series`` after the run)."""

    emulator: TestbedEmulator
    bridge: TestbedBridge
    controller: ControllerServer
    series: dict[str, np.ndarray]
    resets: list[tuple[float, bool, str]]
    wall_time: float

    @property
    def trips(self):
        return self.bridge.latch.history


def run_hil(testbed: TestbedConfig, maneuver: Maneuver, state: State, duration: float, *,
            mode: str = "floating", controller: ControlLaw | str = "computed_torque", faults: Sequence[Fault] = (),
            events: Sequence[Event] = (), settings: EmulatorSettings | None = None, seed: int = 0,
            emulated: TestbedConfig | None = None, clock_steps: Sequence[tuple[float, float]] = (),
            on_tick: Callable[[float, BridgeOutput], None] | None = None,
            on_control: Callable[[float, State, ControllerOutput], None] | None = None,
            overrun_limit: int | None = OVERRUN_LIMIT) -> HilRun:
    """Run ``maneuver`` on the emulated testbed for ``duration`` s from ``state``.

    Args:
        testbed: the testbed config (the emulator imitates it; the bridge speaks it).
        maneuver: what the controller does (started at the first valid state).
        state: the emulated plant's initial state.
        mode, controller: the controller's (a law object, or a built-in law's name).
        faults: injected by the emulator. events: operator actions.
        settings: the emulator's (default: the config's ``emulator`` section).
        emulated: the testbed as it really is, if not as ``testbed`` describes it (a lab's
            config with a mistake in it: the bridge reads ``testbed``, the emulator imitates this).
        clock_steps: (true time s, step s) pairs: from that time on the nodes' clock reads
            ``step`` s more (negative: back); events are at true times.
        on_tick: called after each bridge tick (tests watch commands with it).
        on_control: called after each controller tick with the true state (for recorders).
        overrun_limit: the controller's (as on the node, 3 by default; None: overruns counted
            only, as ``freeflyer sim --via-testbed`` and campaigns fly, so that their outcome
            does not depend on the machine).
    """
    ff = testbed.robot
    dt = testbed.period
    emulator = TestbedEmulator(emulated or testbed, state, settings=settings, faults=faults, seed=seed)
    bridge = TestbedBridge(testbed)
    ctrl = ControllerServer(ff, rate=testbed.rate, controller=controller, mode=mode, base_actuation="ideal",
                            maneuver=maneuver, overrun_limit=overrun_limit)
    pending = sorted(events, key=lambda e: e.time)
    steps = sorted((float(at), float(step)) for at, step in clock_steps)
    if not all(np.isfinite(at) and np.isfinite(step) for at, step in steps):
        raise ValueError(f"clock steps must be finite (time s, step s) pairs, got {list(clock_steps)}")

    def clock(t: float) -> float:
        """The nodes' clock at true time t."""
        return t + sum(step for at, step in steps if at <= t + 1e-12)

    log = HilLog()
    n_ticks = round(duration / dt)
    estopped_for: object = None
    told_divergence = False
    wall0 = time.perf_counter()
    for k in range(n_ticks + 1):
        t = k * dt
        emulator.advance(t)
        now = clock(t)
        if emulator.diverged and not told_divergence:  # the testbed died: stop at once, saying why
            bridge.estop(now, f"testbed emulator: {emulator.diverged}")
            told_divergence = True
        for s in emulator.capture_samples(t):
            bridge.on_capture(clock(s.stamp), s.position, s.orientation_xyzw, clock(s.delivery))
        for s in emulator.encoder_samples(t):
            bridge.on_encoders(clock(s.stamp), s.names, s.positions, s.velocities, clock(s.delivery))
        while pending and pending[0].time <= t + 1e-12:
            event = pending.pop(0)
            if event.kind == "estop":
                bridge.estop(now, event.text or "e-stop requested")
            elif event.kind == "mode":
                ctrl.request_mode(event.text, now, "event")
            else:
                ok, message = bridge.reset(now)
                log.resets.append((t, ok, message))
                if ok:
                    ctrl.reset_estop()
                    estopped_for = None
        out = bridge.tick(now)
        cmd = out.command
        emulator.on_joint_efforts(cmd.joint_efforts, t)
        if cmd.wheels.size:
            emulator.on_wheel_command(cmd.wheels, t)
        if cmd.thrusters is not None:
            emulator.on_thruster_command(cmd.thrusters, t)
        if out.trip is not None and out.trip is not estopped_for:
            ctrl.estop(now, f"testbed bridge: {out.trip.reason}")
            estopped_for = out.trip
        if on_tick is not None:
            on_tick(t, out)
        if out.joints is not None:
            ctrl.on_joint_state(ff.joint_names, out.joints.positions, out.joints.velocities, now)
            ctrl.on_base_odometry(out.base, now)
        control = ctrl.tick(now)
        if control.status == "fault" and not bridge.latch.tripped:
            bridge.law_fault(now, f"controller fault: {control.reason}")
        bridge.on_controller(control.actuation, now)
        if on_control is not None:
            on_control(t, emulator.state, control)
        _record(log, ff, t, emulator.state, out)
        log.add(clock=now)
    return HilRun(emulator, bridge, ctrl, log.finish(), log.resets, time.perf_counter() - wall0)


def _record(log: HilLog, ff, t: float, truth: State, out: BridgeOutput) -> None:
    lin, ang = base_twist_world(ff, truth)
    nan3 = np.full(3, np.nan)
    est_pos = out.base.position if out.base is not None else nan3
    est_yaw = 2 * np.arctan2(out.base.orientation_xyzw[2], out.base.orientation_xyzw[3]) if out.base else np.nan
    n_valves = len(ff.thrusters)
    duty = out.command.thrusters if out.command.thrusters is not None else np.full(n_valves, np.nan)
    log.add(t=t, status=STATUS_CODES[out.status], trip=out.trip is not None,
            true_base_position=base_position(ff, truth.q), true_base_yaw=base_yaw(ff, truth.q) if ff.base == "planar"
            else np.nan, true_base_velocity=lin, true_base_rate=ang,
            true_joints=joint_positions(ff, truth.q), true_joint_rates=truth.v[ff.nb:],
            est_base_position=est_pos, est_base_yaw=est_yaw,
            est_joints=out.joints.positions if out.joints is not None else np.full(ff.nj, np.nan),
            joint_efforts=out.command.joint_efforts, wheels=out.command.wheels, duty=duty)
