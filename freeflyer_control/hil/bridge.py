"""The testbed bridge: the controller's topics on one side, the testbed's hardware on the other.

Inbound from the testbed: marker-body poses from motion capture (capture frame, axes, units and
stamps of the capture system) and encoder readings (hardware names, signs, offsets). They become
the base pose and twist of base_link in world and the joint angles and rates in URDF convention,
estimated at each control tick (:mod:`freeflyer_control.hil.estimator`), which the controller
receives as if from the simulated plant.

Outbound to the testbed: the controller's joint efforts, wheel torques and base wrench (world
axes, ``base_actuation: ideal``) become hardware commands: efforts with hardware signs in
channel order, wheel torques or speed set-points, and valve duty cycles (or on/off bits) from
thruster allocation and pulse-width modulation, all saturated.

Every tick first runs the safety checks (:mod:`freeflyer_control.hil.safety`): a trip latches
the safe reaction until :meth:`TestbedBridge.reset` succeeds. A fault that arrives with a
message (NaN, a jump, an e-stop) trips at that message; data that stops trips when its watchdog
timeout expires; either way the next tick (at most one control period later) sends the safe
commands. The bridge arms itself when every input has arrived and passes the checks.

Time: every call carries the bridge's clock (``now``). A step of that clock (back, or forward by
more than ``watchdog.MAX_TICK_GAP`` between ticks), or sample stamps that step back, makes
every kept time meaningless (watchdogs, estimators, PWM periods): the bridge trips
(``clock_step``, if armed) and starts from scratch, re-acquiring the estimates; it arms again,
or a reset succeeds, once the inputs have been fresh for the settle time on the new clock.
Finite but absurd samples (:mod:`freeflyer_control.runtime.plausibility`) are refused like NaN
ones; and a tick never raises: an internal error trips ``fault`` and sends the safe commands.

No ROS here: the node (``testbed_bridge``) and the in-process runner feed the same object.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import pinocchio as pin

from freeflyer_control.control.allocation import PulseWidthModulator, ThrusterAllocator
from freeflyer_control.control.law_guard import OVER_LIMIT_FACTOR
from freeflyer_control.physics.actuators import Actuation, local_wrench_to_world, saturate, world_wrench_to_local
from freeflyer_control.physics.state import State, xyzw_from_rotation
from freeflyer_control.ros.conversions import (
    BaseReading,
    ErrorCounter,
    JointReading,
    JointStateReader,
    MessageError,
    finite_array,
    state_from_readings,
)
from freeflyer_control.runtime.plausibility import PlausibilityBounds
from freeflyer_control.runtime.watchdog import ClockGuard, Watchdog

from .config import TestbedConfig
from .estimator import BaseEstimator, BaseEstimatorConfig, JointEstimator, KalmanNoise, SampleVerdict
from .frames import tilt
from .safety import BRAKE, BRAKE_DEADBAND_RATE, BRAKE_DEADBAND_SPEED, BRAKE_GAIN, MotionLimits, SafetyLatch, Trip
from .safety import brake_acceleration as thruster_brake_acceleration

# The estimators start with unknown rates: the bridge arms (and the limits are checked) only
# after this long of fresh data, when the rate estimates have settled.
ARM_SETTLE_TIME = 0.25               # s
# A header stamp this far from the bridge clock is from another clock, not a late sample.
MAX_CLOCK_SKEW = 0.5                 # s
# A base wrench request this many times what all thrusters together give (force, N; torque
# about base_link, N m) is a corrupt command, not a large one: refused like a NaN command.
PLAUSIBLE_WRENCH_FACTOR = OVER_LIMIT_FACTOR


@dataclass(frozen=True)
class HardwareCommand:
    """What the bridge sends to the testbed this tick (wire order and signs).

    Attributes:
        joint_efforts: arm joint efforts, N m, arm channels in encoder-config order, hardware sign.
        wheels: per wheel: torque N m or speed set-point rad/s (config), hardware sign.
        thrusters: per valve in channel order: duty cycles [0, 1] or bits {0, 1}; None when no
            valve command is due this tick (duty cycles go out once per PWM period, and at once
            when the reaction changes).
    """

    joint_efforts: np.ndarray
    wheels: np.ndarray
    thrusters: np.ndarray | None


@dataclass(frozen=True)
class BridgeOutput:
    """One tick: the hardware command, the state for the controller, the status.

    status: ``waiting`` (inputs not yet valid), ``active`` (forwarding the controller),
    ``tripped`` (safe reaction latched; ``trip`` says why: its ``kind`` is a key of
    ``safety.REACTIONS``, e.g. ``clock_step`` or ``fault``).
    """

    command: HardwareCommand
    status: str
    joints: JointReading | None = None
    base: BaseReading | None = None
    trip: Trip | None = None


@dataclass
class BridgeStats:
    """Counters for /diagnostics: ``rejected`` counts refused samples and commands by kind
    (``implausible`` among them); clock steps and internal faults with their last reason."""

    ticks: int = 0
    safe_ticks: int = 0
    rejected: ErrorCounter = field(default_factory=ErrorCounter)
    saturated_efforts: int = 0
    allocation_residual: float = 0.0
    clock_steps: int = 0
    last_clock_step: str = ""
    faults: int = 0
    last_fault: str = ""


class TestbedBridge:
    """Args:
    config: the validated testbed config (its robot carries the testbed's thruster layout).
    """

    __test__ = False

    def __init__(self, config: TestbedConfig):
        self.config = config
        self.ff = ff = config.robot
        self.period = config.period
        cap = config.capture
        self.base_estimator = BaseEstimator(BaseEstimatorConfig(
            KalmanNoise(cap.position_noise, cap.acceleration_noise),
            KalmanNoise(cap.attitude_noise, cap.angular_acceleration_noise),
            cap.max_position_jump, cap.max_attitude_jump, planar=ff.base == "planar"))
        enc = config.encoders
        self.joint_estimator = JointEstimator(len(ff.joint_names), KalmanNoise(enc.position_noise, enc.acceleration_noise))
        self.watchdogs = {
            "capture": Watchdog(cap.timeout, ("capture",)),
            "encoders": Watchdog(config.encoders.timeout, ("encoders",)),
            "commands": Watchdog(config.command_timeout, ("commands",)),
        }
        ch = config.encoders.channels
        self._names = tuple(c.name for c in ch)
        self._sign = np.array([c.sign for c in ch])
        self._effort_sign = np.array([c.effort_sign for c in ch])
        self._offset = np.array([c.offset for c in ch])
        self._arm = np.array([ff.joint_names.index(n) for n in ff.arm_joint_names], dtype=int)
        self._wheels = np.array([ff.joint_names.index(n) for n in ff.wheel_joint_names], dtype=int)
        # Duplicated, missing or non-finite channels are refused as the controller's reader does.
        self._encoder_reader = JointStateReader(self._names, require_velocity=False, topic="encoders")
        self.bounds = PlausibilityBounds.from_model(ff)
        self.clock = ClockGuard()
        # Continuous joints (wheels) read modulo 2 pi: unwrapped against the prediction so the
        # rate filter sees the motion, not a 2 pi jump (valid below pi * encoder rate rad/s).
        self._continuous = np.array([ff.model.joints[ff.model.getJointId(n)].nq == 2 for n in ff.joint_names])
        thr = config.actuators.thrusters
        self.allocator = ThrusterAllocator(ff) if thr else None
        self.pwm = PulseWidthModulator(ff.thruster_max_forces, thr.pwm_period, thr.min_on_time) if thr else None
        lever = max((float(np.linalg.norm(t.position)) for t in ff.thrusters), default=0.0)
        self._max_wrench = PLAUSIBLE_WRENCH_FACTOR * float(ff.thruster_max_forces.sum()) * max(1.0, lever)
        self._channels = np.array([[t.name for t in ff.thrusters].index(c) for c in thr.channels]) if thr else None
        reaction = 2 * self.period + (thr.pwm_period if thr else 0.0)
        self.limits = MotionLimits(config.limits, thruster_brake_acceleration(ff), reaction)
        self.latch = SafetyLatch()
        self.stats = BridgeStats()
        self.data = ff.model.createData()
        # Each wheel's inertia about its spin axis: its diagonal entry of the mass matrix (a
        # wheel is a leaf body on the base, so the entry does not depend on the configuration).
        H0 = pin.crba(ff.model, self.data, pin.neutral(ff.model))
        self._wheel_inertia = np.array([H0[i, i] for i in ff.wheel_v_indices])
        self._commands = Actuation()
        self._last_capture: tuple[float, np.ndarray, np.ndarray] | None = None
        self._wheel_setpoint: np.ndarray | None = None
        self._pwm_period_index: int | None = None
        self._wrench_sum, self._wrench_count = np.zeros(ff.nb), 0
        self._forces = np.zeros(len(ff.thrusters))
        self._last_reaction = "none"
        self._armed = False
        self._heard_controller = False
        self._fresh_since: float | None = None
        self._last_fault: tuple[float, str] = (-np.inf, "")

    # --- inputs from the testbed --------------------------------------------------------------
    def _sample_time(self, stamp: float, now: float, stamp_source: str, latency: float, what: str) -> float | None:
        if stamp_source == "receipt" or stamp <= 0.0:  # an unset header stamp: fall back to arrival
            return now - latency
        if abs(now - stamp) > MAX_CLOCK_SKEW:
            self.stats.rejected.record(MessageError(
                "clock", f"{what} stamped {now - stamp:+.3f} s from the bridge clock: synchronise the clocks "
                         f"(chrony, PTP) or set {what}.stamp: receipt in the testbed config"))
            return None
        return stamp

    def on_capture(self, stamp: float, position, orientation_xyzw, now: float) -> None:
        """A marker-body pose from the capture system: ``position`` (capture frame and units),
        ``orientation_xyzw`` (capture frame), sample time ``stamp`` and arrival ``now`` (s)."""
        cap = self.config.capture
        if not self._observe(now):
            return
        t = self._sample_time(stamp, now, cap.stamp, cap.latency, "capture")
        if t is None:
            return
        try:
            p = finite_array(position, "capture position", 3)
            q = finite_array(orientation_xyzw, "capture orientation", 4)
            norm = math.hypot(*q)  # no overflow warning for a corrupt 1e308 component: inf, refused
            if abs(norm - 1.0) > 1e-3:
                raise MessageError("quaternion", f"capture orientation is not a unit quaternion (norm {norm:.4g})")
        except MessageError as exc:
            self._reject(exc, now, "capture_invalid", f"capture sample refused: {exc}")
            return
        p_w, R_w = cap.transform.to_world(p, q)
        implausible = self.bounds.base(p_w, None, None, "capture")
        if implausible:
            self._reject(MessageError("implausible", implausible), now, "capture_invalid", implausible)
            return
        self._last_capture = (t, p_w, R_w)
        problem = self._frame_problem(p_w, R_w)
        if problem:
            self._reject(MessageError("frame", problem), now, "capture_frame", problem)
            return
        verdict = self.base_estimator.update(t, p_w, xyzw_from_rotation(R_w))
        verdict = self._unless_stamps_stepped_back(
            verdict, "capture", t, now, lambda: self.base_estimator.update(t, p_w, xyzw_from_rotation(R_w)))
        if verdict.accepted:
            self.watchdogs["capture"].feed("capture", now)
        elif verdict.kind == "jump":
            self._reject(MessageError("jump", verdict.reason), now, "capture_jump", f"capture pose {verdict.reason}")
            if self.latch.tripped or not self._armed:
                # No controller commands are out (safe commands, or not armed yet): follow the
                # capture from here (re-acquire) so the filter has settled wherever it now says
                # the base is by the time someone resets, or the bridge arms.
                self.base_estimator.reset()
                self.base_estimator.update(t, p_w, xyzw_from_rotation(R_w))
        elif verdict.kind != "out_of_order" or t != self.base_estimator.t:
            # A repeated stamp is a repeated message (not new data: the watchdog is not fed);
            # anything else refused is counted.
            self.stats.rejected.record(MessageError(verdict.kind or "capture", verdict.reason))

    def _frame_problem(self, p_w: np.ndarray, R_w: np.ndarray) -> str | None:
        """Why a capture pose (base_link in world) cannot be a base on the table, or None. A
        planar base must be level and at the table height (world z = 0): a wrong axis convention
        shows as a base on its side, or (when the body axes are wrong the same way) as a base
        whose height changes as it moves across the table."""
        cap = self.config.capture
        angle = tilt(R_w)
        if angle > cap.max_tilt:
            return (f"capture says base_link is tilted {math.degrees(angle):.0f} deg from level (limit "
                    f"{math.degrees(cap.max_tilt):.0f} deg): wrong capture.axes / body_axes in the testbed config "
                    "(a y-up capture system read as z-up?), or a mis-identified marker body")
        if self.ff.base == "planar" and abs(p_w[2]) > cap.max_height:
            return (f"capture puts base_link {p_w[2]:+.3f} m off the table plane (limit {cap.max_height} m): check "
                    "capture.axes / body_axes (is the capture system y-up?), base_in_body and "
                    "world_from_capture.translation (world z = 0 is base_link's height on the table)")
        return None

    def on_encoders(self, stamp: float, names, positions, velocities, now: float) -> None:
        """An encoder message: hardware ``names``, raw ``positions`` (rad) and ``velocities``
        (rad/s, may be empty), sample time ``stamp``, arrival ``now`` (s)."""
        if not self._observe(now):
            return
        t = self._sample_time(stamp, now, "header", 0.0, "encoders")
        if t is None:
            return
        use_rates = self.config.encoders.velocities == "measured"
        try:
            if use_rates and len(velocities) == 0:
                raise MessageError("missing", "encoder message has no velocities (encoders.velocities: measured)")
            reading = self._encoder_reader.read(names, positions, velocities if use_rates else [])
        except MessageError as exc:
            self._reject(exc, now, "encoders_invalid", f"encoder message refused: {exc}")
            return
        q = self._sign * (reading.positions - self._offset)
        rates = self._sign * reading.velocities if use_rates else None
        implausible = self.bounds.joints(q, rates, "encoders")
        if implausible:
            self._reject(MessageError("implausible", implausible), now, "encoders_invalid",
                         f"encoder message refused: {implausible}")
            return
        if self.joint_estimator.initialized and self._continuous.any():
            # Against the angle predicted for this sample (the last one carried on at the
            # estimated rate): a lost message then does not halve the speed that unwraps.
            turns = np.round((q - self.joint_estimator.estimate(t)[0]) / (2 * np.pi))
            q = np.where(self._continuous, q - 2 * np.pi * turns, q)
        verdict = self.joint_estimator.update(t, q, rates)
        verdict = self._unless_stamps_stepped_back(verdict, "encoders", t, now,
                                                   lambda: self.joint_estimator.update(t, q, rates))
        if verdict.accepted:
            self.watchdogs["encoders"].feed("encoders", now)
        elif verdict.kind == "out_of_order":
            # A repeated stamp is a hung driver repeating its last message: not new data, the
            # watchdog decides. An older stamp is counted.
            if t != self.joint_estimator.t:
                self.stats.rejected.record(MessageError("out_of_order", verdict.reason))
        else:
            self._reject(MessageError(verdict.kind, verdict.reason), now, "encoders_invalid",
                         f"encoder message refused: {verdict.reason}")

    def _observe(self, now: float, tick: bool = False) -> bool:
        """Watch the clock; False if ``now`` is not a time (nothing can be done with the call)."""
        step = self.clock.observe(now, tick)
        if step:
            self._clock_step(now, step)
        return math.isfinite(now)

    def _unless_stamps_stepped_back(self, verdict: SampleVerdict, name: str, t: float, now: float,
                                    again: Callable[[], SampleVerdict]) -> SampleVerdict:
        """The verdict on a sample stamped far before the last accepted one. One late message
        is refused like any sample out of order; once the input has gone stale as well (nothing
        accepted for its timeout: a trip, if armed) it is the stamp clock that stepped back:
        the bridge starts from scratch and the sample is used ``again``."""
        if verdict.kind != "clock_step":
            return verdict
        watchdog = self.watchdogs[name]
        if not watchdog.stale(now):
            return replace(verdict, kind="out_of_order")
        last = (self.base_estimator if name == "capture" else self.joint_estimator).t
        self._clock_step(now, f"{name} stamps stepped back by {last - t:.3f} s (stamp {t:.6f} s, last accepted "
                              f"{last:.6f} s; nothing later for the {watchdog.timeout} s timeout)")
        return again()

    def _clock_step(self, now: float, reason: str) -> None:
        """Start from scratch: every kept time is on the old clock (a trip, if armed)."""
        self.stats.clock_steps += 1
        self.stats.last_clock_step = reason
        if self._armed:
            self.latch.trip(now, "clock_step", reason)
        self._armed = self._heard_controller = False
        self._commands = Actuation()
        for watchdog in self.watchdogs.values():
            watchdog.reset()
        self.base_estimator.reset()
        self.joint_estimator.reset()
        self._fresh_since = None
        self._last_fault = (-np.inf, "")
        if self.pwm is not None:
            self.pwm.reset()
        self._pwm_period_index = None
        self._wrench_sum, self._wrench_count = np.zeros(self.ff.nb), 0

    def _reject(self, error: MessageError, now: float, kind: str, reason: str) -> None:
        self.stats.rejected.record(error)
        self._last_fault = (now, reason)
        if self._armed or kind == "capture_frame":
            self.latch.trip(now, kind, reason)

    # --- inputs from the controller -----------------------------------------------------------
    def on_controller(self, actuation: Actuation, now: float) -> None:
        """The controller's commands: arm torques (arm order, N m), wheel torques (N m), base
        wrench about base_link in world axes (planar [fx, fy, mz], spatial 6). Thruster forces
        are ignored: the bridge allocates with the testbed's own layout."""
        if not self._observe(now):
            return
        try:
            act = saturate(self.ff, Actuation(actuation.arm_torques, actuation.wheel_torques, np.zeros(0),
                                              actuation.base_wrench_world))
        except ValueError as exc:
            self.stats.rejected.record(MessageError("command", str(exc)))
            return
        wrench = float(np.abs(act.base_wrench_world).max(initial=0.0))
        if self.allocator is not None and wrench > self._max_wrench:
            self.stats.rejected.record(MessageError("command", (
                f"base wrench component {wrench:.4g} beyond {self._max_wrench:.4g} N or N m ({PLAUSIBLE_WRENCH_FACTOR:g} x "
                "what the thrusters give together): a corrupt command")))
            return
        self._commands = act
        self._heard_controller = True
        self.watchdogs["commands"].feed("commands", now)

    def estop(self, now: float, reason: str = "e-stop requested") -> None:
        self._observe(now)
        self.latch.trip(now, "estop", reason)

    def law_fault(self, now: float, reason: str) -> None:
        """The controller's law failed (control.law_guard): trip ``law_fault`` with its reason
        (the law's name, when, why) until a reset, as for any other fault."""
        self._observe(now)
        self.latch.trip(now, "law_fault", reason)

    def reset(self, now: float) -> tuple[bool, str]:
        """Clear the latched trip if its cause is gone; else say what is still wrong."""
        if not self._observe(now):
            return False, f"cannot reset: clock reads {now} s"
        if not self.latch.tripped:
            return True, "nothing to reset"
        problems = self._input_problems(now)
        if self._heard_controller:  # the controller was running: it must be again
            problems += [f"controller silent: {p}" for p in self.watchdogs["commands"].stale(now)]
        if not problems:
            state = self._estimates(now)
            problems = [reason for _, reason in self._limit_violations(*state)]
        if problems:
            return False, "cannot reset: " + "; ".join(problems)
        cleared = self.latch.active
        self.latch.clear()
        self._wheel_setpoint = None
        # (The valves restart by themselves: the next tick's reaction differs from the last.)
        return True, f"reset: cleared '{cleared.kind}' ({cleared.reason})"

    # --- the tick ----------------------------------------------------------------------------
    def _input_problems(self, now: float) -> list[str]:
        """What keeps the inputs from being trusted now: staleness, a recent refused sample
        (the data must have been steady for ARM_SETTLE_TIME), a capture pose off the table."""
        problems = []
        for name in ("capture", "encoders"):
            problems += self.watchdogs[name].stale(now)
        if not problems and (self._fresh_since is None or now - self._fresh_since < ARM_SETTLE_TIME):
            problems.append(f"inputs fresh for less than {ARM_SETTLE_TIME} s")
        since = now - self._last_fault[0]
        if since < ARM_SETTLE_TIME:
            problems.append(f"a sample was refused {since:.3f} s ago ({self._last_fault[1]}); the data must be "
                            f"steady for {ARM_SETTLE_TIME} s")
        if self._last_capture is not None:
            problem = self._frame_problem(self._last_capture[1], self._last_capture[2])
            problems += [problem] if problem else []
        return problems

    def _estimates(self, now: float) -> tuple[JointReading, BaseReading]:
        q, v = self.joint_estimator.estimate(now)
        return JointReading(q, v), self.base_estimator.estimate(now)

    def _limit_violations(self, joints: JointReading, base: BaseReading) -> list[tuple[str, str]]:
        out = []
        fence = self.limits.geofence(base.position, base.linear_velocity)
        if fence:
            out.append(("geofence", fence))
        motion = self.limits.motion(base.linear_velocity, base.angular_velocity, joints.positions[self._arm],
                                    joints.velocities[self._arm], joints.velocities[self._wheels],
                                    self.ff.arm_joint_names)
        if motion:
            out.append(motion)
        return out

    def tick(self, now: float) -> BridgeOutput:
        """Check, then command the testbed for the period [now, now + 1/rate). Never raises."""
        self.stats.ticks += 1
        try:
            if not self._observe(now, tick=True):
                return self._safe_output()
            return self._tick(now)
        except Exception as exc:  # noqa: BLE001  the last line of defence: the hardware needs a command
            reason = f"bridge tick raised {type(exc).__name__}: {exc}"
            self.stats.faults += 1
            self.stats.last_fault = reason
            self.latch.trip(now, "fault", reason)
            return self._safe_output()

    def _safe_output(self) -> BridgeOutput:
        """Zero efforts, shut valves, wheels held (computed from nothing that could fail)."""
        self.stats.safe_ticks += 1
        wheels = np.zeros(self._wheels.size)
        if self.config.actuators.wheel_command != "torque" and self._wheel_setpoint is not None:
            wheels = self._effort_sign[self._wheels] * np.nan_to_num(self._wheel_setpoint)
        valves = np.zeros(len(self._channels)) if self._channels is not None else None
        self._last_reaction = "safe"  # the next tick's reaction differs: the valves restart at once
        trip = self.latch.active
        return BridgeOutput(HardwareCommand(np.zeros(self._arm.size), wheels, valves),
                            "tripped" if trip is not None else "waiting", None, None, trip)

    def _implausible_estimate(self, now: float, joints: JointReading, base: BaseReading) -> bool:
        """Refuse (and, armed, trip on) an estimate extrapolated to absurd values."""
        for kind, problem in (
                ("encoders_invalid", self.bounds.joints(joints.positions, joints.velocities, "joint estimate")),
                ("capture_invalid", self.bounds.base(base.position, base.linear_velocity, base.angular_velocity,
                                                     "base estimate"))):
            if problem:
                self._reject(MessageError("implausible", problem), now, kind, problem)
                return True
        return False

    def _tick(self, now: float) -> BridgeOutput:
        stale = {name: self.watchdogs[name].stale(now) for name in ("capture", "encoders")}
        joints = base = None
        if not any(stale.values()):
            joints, base = self._estimates(now)
            if self._implausible_estimate(now, joints, base):
                joints = base = None
        if joints is None:
            self._fresh_since = None
        else:
            if self._fresh_since is None:
                self._fresh_since = now
            if (not self._armed and not self.latch.tripped and now - self._fresh_since >= ARM_SETTLE_TIME
                    and now - self._last_fault[0] >= ARM_SETTLE_TIME):
                self._armed = True
        if self._armed:
            for name, problems in stale.items():
                if problems:
                    self.latch.trip(now, f"{name}_stale", "; ".join(problems))
            # The controller's watchdog runs from its first command: a bridge without a controller
            # (on blocks, or before the controller has started) sends zero commands, which is safe.
            for problem in (self.watchdogs["commands"].stale(now) if self._heard_controller else ()):
                self.latch.trip(now, "commands_stale", f"controller silent: {problem}")
            if joints is not None:
                for kind, reason in self._limit_violations(joints, base):
                    self.latch.trip(now, kind, reason)
        trip = self.latch.active
        if trip is None and self._armed:
            status, command = "active", self._command(now, self._commands, joints, base, "active")
        elif trip is not None and trip.reaction == BRAKE and joints is not None:
            status, command = "tripped", self._command(now, self._brake(joints, base), joints, base, "brake")
        else:
            status = "tripped" if trip is not None else "waiting"
            command = self._command(now, Actuation(), joints, base, "off")
        if status != "active":
            self.stats.safe_ticks += 1
        return BridgeOutput(command, status, joints, base, trip)

    def _brake(self, joints: JointReading, base: BaseReading) -> Actuation:
        """Bring the base to rest with the thrusters (a world wrench against the locked robot's
        momentum) and damp the joints, which would otherwise swing as the base decelerates."""
        state = self._state(joints, base)
        H = pin.crba(self.ff.model, self.data, state.q)
        arm_v, nb = self.ff.arm_v_indices, self.ff.nb
        # The arm's inertia with the base free (H* of floating mode): the joint rates then decay
        # at BRAKE_GAIN whatever the coupling. Diagonal entries of H alone overstate it several
        # times over for a chain, and the delayed, filtered rates then ring.
        H_ab = H[np.ix_(arm_v, np.arange(nb))]
        H_star = H[np.ix_(arm_v, arm_v)] - H_ab @ np.linalg.solve(H[:nb, :nb], H_ab.T)
        arm = -BRAKE_GAIN * H_star @ state.v[arm_v]
        wrench = np.zeros(nb)
        moving = (np.hypot(*base.linear_velocity[:2]) > BRAKE_DEADBAND_SPEED
                  or np.linalg.norm(base.angular_velocity) > BRAKE_DEADBAND_RATE)
        if self.allocator is not None and moving:
            local = -BRAKE_GAIN * H[:nb, :nb] @ state.v[:nb]  # base axes, like the thruster matrix
            wrench = local_wrench_to_world(self.ff, state.q, local)
        return saturate(self.ff, Actuation(arm, np.zeros(self._wheels.size), np.zeros(0), wrench))

    def _state(self, joints: JointReading, base: BaseReading) -> State:
        return state_from_readings(self.ff, joints, base)

    def _command(self, now: float, act: Actuation, joints, base, reaction: str) -> HardwareCommand:
        ff = self.ff
        arm_sign = self._effort_sign[self._arm]
        efforts = arm_sign * (act.arm_torques if act.arm_torques.size else np.zeros(self._arm.size))
        wheels = self._wheel_command(act, joints, reaction)
        thrusters = None
        if self.allocator is not None:
            wrench = act.base_wrench_world if act.base_wrench_world.size else np.zeros(ff.nb)
            local = np.zeros(ff.nb)
            if base is not None and np.any(wrench):
                local = world_wrench_to_local(ff, self._state(joints, base).q, wrench)
            thrusters = self._valves(now, local, reaction)
        self._last_reaction = reaction
        return HardwareCommand(efforts, wheels, thrusters)

    def _wheel_command(self, act: Actuation, joints: JointReading | None, reaction: str) -> np.ndarray:
        n = self._wheels.size
        torque = act.wheel_torques if act.wheel_torques.size else np.zeros(n)
        sign = self._effort_sign[self._wheels]
        if self.config.actuators.wheel_command == "torque":
            return sign * torque
        # Speed set-points: integrate the torque through the wheel inertia, from the measured
        # speed; safe reactions hold the measured speed (zero torque on the base).
        if joints is None:
            # No speed estimate (an input stale, or none yet): hold the last set-point, the last
            # measured speed. A zero set-point would brake a spinning wheel at full torque.
            if self._wheel_setpoint is None:
                self._wheel_setpoint = np.zeros(n)
        elif reaction != "active" or self._wheel_setpoint is None:
            self._wheel_setpoint = joints.velocities[self._wheels].copy()
        else:
            self._wheel_setpoint = self._wheel_setpoint + torque / self._wheel_inertia * self.period
        limit = self.config.limits.wheel_speed
        self._wheel_setpoint = np.clip(self._wheel_setpoint, -limit, limit)
        return sign * self._wheel_setpoint

    def _valves(self, now: float, wrench_local: np.ndarray, reaction: str) -> np.ndarray | None:
        """Valve commands for the base wrench (base_link axes) requested this tick.

        Valves take one command per PWM period, so the wrench allocated at a period start is the
        mean of the requests since the previous one: sampling a single tick would alias the
        request's tick-rate noise (estimate noise through the controller's gains) into a random
        torque held for a whole period, which the slow base loop cannot average away.
        """
        thr = self.config.actuators.thrusters
        changed = reaction != self._last_reaction
        if changed:  # a new reaction acts now, on the current request alone
            self.pwm.reset()
            self._pwm_period_index = None
            self._wrench_sum, self._wrench_count = np.zeros(self.ff.nb), 0
        self._wrench_sum = self._wrench_sum + wrench_local
        self._wrench_count += 1
        k = math.floor(now / thr.pwm_period + 1e-9)
        if self._pwm_period_index is None or k > self._pwm_period_index:
            self._pwm_period_index = k
            alloc = self.allocator.allocate(self._wrench_sum / self._wrench_count)
            self._forces = alloc.forces
            self.stats.allocation_residual = float(np.linalg.norm(alloc.residual))
            self._wrench_sum, self._wrench_count = np.zeros(self.ff.nb), 0
            if thr.command == "duty":
                return (self.pwm.duty(self._forces) / thr.pwm_period)[self._channels]
        if thr.command == "bits":
            return self.pwm.update(now, self._forces).astype(float)[self._channels]
        return None

