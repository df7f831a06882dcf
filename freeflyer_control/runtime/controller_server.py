"""The controller node's logic: inputs, references, mode, watchdog, e-stop, one tick.

Safety rules (DESIGN.md §7):

* until both joint states and base odometry have arrived, and whenever either is older than the
  watchdog timeout, the command is zero joint and wheel torques and all thrusters off;
* an e-stop latches the same zero command until it is reset through the service;
* a refused input (NaN, missing joint, bad quaternion) is counted and ignored: the last good
  state is kept, so a bad message cannot produce a command, and repeated bad messages end in the
  watchdog's zero command;
* a finite but implausible input (:mod:`freeflyer_control.runtime.plausibility`: a joint rate of
  1e154 rad/s, a base 1e308 m away) is refused and counted too, and the command is zero
  (``implausible``) until the same input sends a plausible message;
* a step of the clock (back, or forward by more than ``MAX_TICK_GAP``) discards every input
  time and restarts from scratch: zero commands (``clock_step``) until both inputs have been
  fresh for ``CLOCK_SETTLE_TIME``, then the robot holds the pose it is in. The control law runs
  on a clock of its own that never steps, so maneuvers, references and mode blends go on;
* nothing raises out of :meth:`ControllerServer.tick`: a control law that raises, returns
  non-finite or wildly over-limit commands, or overruns its period (control.law_guard) gives a
  zero command (``fault``), counted, with the law's name and the reason; the law is asked again
  at the next tick (the node latches an e-stop on it, which trips a testbed bridge);
* the capture target's odometry (``capture_obj``) is guarded like the robot's own inputs while
  the controller approaches it: refused when implausible for the object's model
  (:class:`~freeflyer_control.runtime.plausibility.ObjectBounds`), watched for staleness (its own
  ``object_timeout``: the plant publishes it at a lower rate), its arrival times discarded on a
  clock step; while it is stale, implausible or not yet received the command is zero (status
  ``stale``, ``implausible`` or ``waiting``, with the reason) and :attr:`capture_ready` is False,
  so no capture is requested on a pose that is old or absurd;
* the mode is validated before it is accepted; an impossible one is refused with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from freeflyer_control.control.capture import CAPTURE_MODES
from freeflyer_control.control.capture_mission import CaptureOptions, options_problem
from freeflyer_control.control.law import ControlLaw
from freeflyer_control.control.law_guard import OVERRUN_LIMIT
from freeflyer_control.control.loop import ControlLoop, TickInfo
from freeflyer_control.control.maneuvers import ExternalReferences, Maneuver
from freeflyer_control.control.mode_switch import ModeSwitch
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.model.objects import ObjectConfig
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.actuators import Actuation, mode_support, saturate
from freeflyer_control.physics.linalg import all_finite
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import State, joint_positions
from freeflyer_control.ros.conversions import (
    BaseReading,
    ErrorCounter,
    JointStateReader,
    MessageError,
    state_from_readings,
)
from freeflyer_control.runtime.plausibility import (
    DEFAULT_MAX_BASE_RATE,
    DEFAULT_MAX_BASE_SPEED,
    ObjectBounds,
    PlausibilityBounds,
)
from freeflyer_control.runtime.capture_control import CaptureControl
from freeflyer_control.runtime.law_set import not_loaded
from freeflyer_control.runtime.object_control import ObjectControl
from freeflyer_control.runtime.watchdog import ClockGuard, Watchdog

# After a clock step, inputs must have been fresh this long before commands resume: a message
# or two stamped on the old clock cannot re-arm the controller.
CLOCK_SETTLE_TIME = 0.25   # s
INPUTS = ("joint_states", "base_odometry")
OBJECT_INPUT = "object_odometry"
# The capture target's odometry comes at the plant's object_rate (50 Hz by default), not at the
# control rate: five of its periods.
DEFAULT_OBJECT_TIMEOUT = 0.1   # s


@dataclass(frozen=True)
class ControllerOutput:
    """One tick's result.

    Attributes:
        actuation: saturated commands to publish (zero when not ``ok``).
        status: ``ok``; ``waiting`` (inputs not yet received), ``stale`` (an input older than the
            watchdog timeout), ``estop`` (latched), ``clock_step`` (the clock stepped: waiting for
            fresh inputs), ``implausible`` (an input's latest message was refused as implausible)
            or ``fault`` (the control law raised or gave non-finite commands).
        reason: why the command is zero, for logs and diagnostics.
        info: the control loop's tick info when ``ok``.
    """

    actuation: Actuation
    status: str
    reason: str = ""
    info: TickInfo | None = None


@dataclass
class ControllerStats:
    """Counters for /diagnostics. ``errors`` counts refused inputs by kind (``implausible``
    among them); ``trips`` lists (node clock s, reason) each time commands stopped."""

    ticks: int = 0
    zero_ticks: int = 0
    errors: ErrorCounter = field(default_factory=ErrorCounter)
    trips: list[tuple[float, str]] = field(default_factory=list)
    clock_steps: int = 0
    last_clock_step: str = ""
    faults: int = 0
    last_fault: str = ""


class ControllerServer:
    """Args:
    ff: the controller's robot model.
    rate: control rate, Hz.
    controller: the control law in force at the start: a law object, or a name among ``laws``
        (without ``laws``: a built-in's name, control.loop.CONTROLLERS).
    laws: the laws :meth:`set_controller` may switch to, by name (fixed here: switching at run
        time chooses among them, it never loads a law); None: the built-in three.
    overrun_limit: control periods running over which the law's CPU time may exceed the period
        before it is stopped (control.law_guard; None: count only).
    mode: initial mode.
    watchdog_timeout: seconds (default 1.5 control periods: a stopped input is answered with a
        zero command at the second tick after its last message).
    base_actuation: thrusters or ideal.
    maneuver: a scripted maneuver to run instead of the external references (topics); after an
        e-stop reset (or a clock step) the controller then holds the pose it is in.
    max_base_speed, max_base_rate: m/s and rad/s; base odometry beyond them is implausible.
    obj: the object the robot holds: the cooperative law (runtime.object_control, floating or
        flying mode, flying with base_actuation ideal) replaces ``controller``, moving the object
        to :meth:`set_object_target` and squeezing it to ``internal_force`` (N).
    capture_obj: a free object to capture (runtime.capture_control: floating, rotation-floating
        or flying): the capture mission drives the first grasping end-effector onto its grasp
        frame, measured by :meth:`on_object_odometry`; :attr:`capture_ready` says when the plant's
        capture service would close the grasp being approached (the first, then the second);
        after :meth:`captured` the mission stows the target, closes the second grasp and brings
        the stack to rest. ``capture_options``: approach, bias, both_arms
        (runtime.capture_control.CaptureControl).
    object_timeout: s; while approaching, object odometry older than this zeroes the command.
    """

    def __init__(self, ff: FreeFlyerModel, *, rate: float, controller: ControlLaw | str = "computed_torque",
                 laws: dict[str, ControlLaw] | None = None,
                 mode: Mode | str = Mode.FLOATING, watchdog_timeout: float | None = None,
                 base_actuation: str = "thrusters", maneuver: Maneuver | None = None,
                 max_base_speed: float = DEFAULT_MAX_BASE_SPEED, max_base_rate: float = DEFAULT_MAX_BASE_RATE,
                 obj: ObjectConfig | None = None, internal_force: float = 0.0,
                 capture_obj: ObjectConfig | None = None, capture_options: dict | None = None,
                 overrun_limit: int | None = OVERRUN_LIMIT, object_timeout: float = DEFAULT_OBJECT_TIMEOUT):
        if not rate > 0:
            raise ValueError(f"rate must be > 0 Hz, got {rate}")
        self.ff = ff
        self.period = 1.0 / rate
        self.references = ExternalReferences()
        # Without end-effectors only joint trajectories make sense (a bare URDF still gets a node).
        self.references.task_space = bool(ff.end_effectors)
        self.laws = dict(laws) if laws is not None else None
        for law in (self.laws or {}).values():  # now, not inside a run-time switch's control period
            law.prepare(ff)
        if isinstance(controller, str) and self.laws is not None:
            controller = self._law_named(controller)
        self.loop = ControlLoop(ff, maneuver or self.references, controller=controller, mode=mode,
                                base_actuation=base_actuation, period=self.period, overrun_limit=overrun_limit)
        self.base_actuation = base_actuation
        self.objects: ObjectControl | None = None
        if obj is not None:
            refusal = _holding_refuses(ff, Mode.parse(mode))
            if refusal:
                raise ValueError(f"mode '{Mode.parse(mode).value}' refused: {refusal}")
            self.objects = ObjectControl(ff, obj, mode, internal_force, base_actuation)
        self.capture: CaptureControl | None = None
        if capture_obj is not None:
            if obj is not None:
                raise ValueError("object and capture_object are exclusive: the robot holds an object or captures one")
            refusal = _capturing_refuses(Mode.parse(mode), base_actuation)
            if refusal:
                raise ValueError(f"mode '{Mode.parse(mode).value}' refused: {refusal}")
            options = capture_options or {}
            problem = options_problem(ff, CaptureOptions(mode=Mode.parse(mode).value, base_actuation=base_actuation,
                                                         **options))
            if problem:
                raise ValueError(problem)
            self.capture = CaptureControl(ff, capture_obj, mode, base_actuation=base_actuation,
                                          **(capture_options or {}))
        self.watchdog = Watchdog(watchdog_timeout or 1.5 * self.period, INPUTS)
        self.bounds = PlausibilityBounds.from_model(ff, max_base_speed=max_base_speed, max_base_rate=max_base_rate)
        self.object_watchdog = Watchdog(object_timeout, (OBJECT_INPUT,))
        self.object_bounds = None if capture_obj is None else ObjectBounds.from_object(
            capture_obj, max_speed=max_base_speed, max_rate=max_base_rate)
        self._object_guard = ""          # why the object odometry was unusable at the last tick
        self._grasp_closed = False       # the plant closed a grasp: the next tick's state says how
        self.clock = ClockGuard()
        self.reader = JointStateReader(ff.joint_names)
        self.joints = None
        self.base: BaseReading | None = None
        self.state: State | None = None
        self.started = False
        self.estopped = False
        self.estop_reason = ""
        self.stats = ControllerStats()
        self._last_status = "waiting"
        fastpath.warm("saturation")   # every tick saturates its commands: compiled now, not on a tick
        self._zero_actuation = saturate(ff, Actuation())
        self._implausible = dict.fromkeys(INPUTS + (OBJECT_INPUT,), "")  # the latest message's refusal, per input
        # The control law's clock: the node clock plus an offset that absorbs clock steps.
        self._offset = 0.0
        self._control_time = 0.0
        self._rearm: str = ""            # the clock step being recovered from
        self._fresh_since: float | None = None
        self._warned: set[str] = set()

    # --- inputs ---------------------------------------------------------------------------
    def on_joint_state(self, names, positions, velocities, now: float) -> bool:
        """A JointState's fields (any order of names; rad, rad/s) arriving at ``now`` (s)."""
        tc = self._time(now)
        try:
            joints = self.reader.read(names, positions, velocities)
        except MessageError as exc:
            self.stats.errors.record(exc)
            return False
        if tc is None or not self._plausible("joint_states", self.bounds.joints(joints.positions, joints.velocities,
                                                                               "joint_states")):
            return False  # (a message at no usable time is neither fresh nor the latest state)
        self.joints = joints
        self.watchdog.feed("joint_states", tc)
        return True

    def on_base_odometry(self, reading: BaseReading | MessageError, now: float) -> bool:
        """Base pose and twist in world (or the reader's refusal) arriving at ``now`` (s)."""
        tc = self._time(now)
        if isinstance(reading, MessageError):
            self.stats.errors.record(reading)
            return False
        if tc is None or not self._plausible("base_odometry", self.bounds.base(
                reading.position, reading.linear_velocity, reading.angular_velocity, "base odometry")):
            return False
        self.base = reading
        self.watchdog.feed("base_odometry", tc)
        return True

    def _plausible(self, name: str, problem: str | None) -> bool:
        self._implausible[name] = problem or ""
        if problem:
            self.stats.errors.record(MessageError("implausible", problem))
        return not problem

    # --- the clock ------------------------------------------------------------------------
    def _time(self, now: float, tick: bool = False) -> float | None:
        """The control law's time for node time ``now`` (None if ``now`` is not a time). A clock
        step is recorded and starts the re-arm; the offset then keeps the law's time going on."""
        step = self.clock.observe(now, tick)
        if step:
            self._clock_step(now, step)
        if not math.isfinite(now):
            return None
        if step:
            self._offset = self._control_time + self.period - now
        tc = now + self._offset
        if tick:
            self._control_time = tc
        return tc

    def _clock_step(self, now: float, reason: str) -> None:
        self.stats.clock_steps += 1
        self.stats.last_clock_step = reason
        self.stats.trips.append((now, reason))
        self._rearm = reason
        self._fresh_since = None
        self.watchdog.reset()  # arrival times on the old clock say nothing about age on the new one
        self.object_watchdog.reset()

    def record_error(self, error: MessageError) -> None:
        self.stats.errors.record(error)

    def set_ee_target(self, frame: str, position, orientation_xyzw) -> None:
        self._require_started()
        self.references.set_ee_target(frame, position, orientation_xyzw)

    def set_ee_twist(self, frame: str, now: float, linear, angular) -> None:
        """Move ``frame``'s target with a twist (world axes). Without a target for the frame the
        motion starts from the frame's current measured pose (not from its pose at start-up,
        which after a trajectory or an e-stop reset may be far away)."""
        self._require_started()
        now = self._reference_time(now)
        if frame in self.ff.end_effectors and frame not in {r.frame for r in self.references.task_references(now)}:
            data = self.ff.create_data()
            pin.framesForwardKinematics(self.ff.model, data, self.state.q)
            pose = data.oMf[self.ff.frame_id(frame)]
            self.references.set_ee_target(frame, pose.translation.copy(),
                                          pin.Quaternion(pose.rotation).coeffs().copy())
        self.references.set_ee_twist(frame, now, linear, angular)

    def set_joint_trajectory(self, names, points, now: float) -> None:
        """points: (time_from_start s, positions, velocities) with joint ``names`` order."""
        self._require_started()
        arm = list(self.ff.arm_joint_names)
        if sorted(names) != sorted(arm):
            raise ValueError(f"trajectory joints {list(names)} must be the arm joints {arm}")
        order = [list(names).index(n) for n in arm]
        now = self._reference_time(now)
        self.references.set_joint_trajectory(
            [(now + t, np.asarray(q, float)[order], np.asarray(v, float)[order] if len(v) else np.zeros(len(arm)))
             for t, q, v in points])

    def _reference_time(self, now: float) -> float:
        tc = self._time(now)
        if tc is None:
            raise ValueError(f"clock reads {now} s: references need a time")
        return tc

    def _require_started(self) -> None:
        if not self.started:
            raise ValueError("no joint states and odometry received yet: references need a start pose")

    # --- mode, controller, e-stop -----------------------------------------------------------
    def validate_mode(self, name: str) -> str | None:
        """Why ``name`` cannot be used (a sentence), or None."""
        try:
            mode = Mode.parse(name)
        except ValueError as exc:
            return str(exc)
        return mode_support(self.ff, mode) or self._object_refuses(mode) or self.loop.law_refuses(mode)

    def _object_refuses(self, mode: Mode) -> str | None:
        if self.capture is not None:
            return _capturing_refuses(mode, self.base_actuation)
        return None if self.objects is None else _holding_refuses(self.ff, mode)

    # --- capture ----------------------------------------------------------------------------
    def on_object_odometry(self, reading: BaseReading | MessageError, now: float) -> bool:
        """The free object's odometry (its frame, the CoM, in world; twist world axes at the CoM)
        arriving at ``now`` (s, node clock), or the reader's refusal; an implausible one is
        refused and counted (:class:`ObjectBounds`)."""
        tc = self._time(now)
        if isinstance(reading, MessageError):
            self.stats.errors.record(reading)
            return False
        if self.capture is None:
            return False
        if tc is None or not self._plausible(OBJECT_INPUT, self.object_bounds.reading(reading)):
            return False
        self.object_watchdog.feed(OBJECT_INPUT, tc)
        quat = reading.orientation_xyzw
        R = pin.Quaternion(quat[3], *quat[:3]).normalized().toRotationMatrix()
        self.capture.set_object(pin.SE3(R, np.asarray(reading.position, float)),
                                np.concatenate([reading.linear_velocity, reading.angular_velocity]))
        return True

    @property
    def capture_ready(self) -> bool:
        """Approaching on good inputs (the last tick was ``ok``: the object's odometry fresh and
        plausible), and within the capture tolerances now: time to call the plant's capture."""
        return (self.capture is not None and self.state is not None and self._last_status == "ok"
                and not self._object_guard and not self._grasp_closed and self.capture.ready(self.state))

    def captured(self) -> None:
        """The plant closed the grasp being approached: the mission goes on to its next phase at
        the next tick, from the state measured then.

        Not from the state of the last tick: the plant closed the grasp on its own state when
        its capture service ran, which need not be that one (over topics it is newer by up to
        a period and the transport; sim_loop_node steps the plant before serving its services).
        The grasp's placement is the hand's relative to the object as the plant closed it, and
        a closed grasp keeps it: so the first state measured after the closure gives it, where
        the older state gave it off by the relative motion in between (enough, at 100 Hz, for
        the second hand's loop as the controller modelled it to keep the stack from rest)."""
        if self.capture is not None:
            self._grasp_closed = True

    def capture_diagnostics(self) -> dict[str, str]:
        """Capture phase (``approach``, ``stow``, ``reach``, ``hold``, ``rest``, or ``at_rest``
        once the stack is at rest) and, approaching a grasp, why it would be refused, for /diagnostics."""
        if self.capture is None:
            return {}
        c = self.capture
        if self.state is None:
            return {"capture_state": c.phase}
        phase = "at_rest" if c.at_rest(self.state) else c.phase
        out = {"capture_state": phase}
        if c.phase in ("approach", "reach"):  # a grasp is being approached
            guard = self._object_guard if c.phase == "approach" and c.object_pose is not None else ""
            out["capture_refusal"] = guard or c.refusal(self.state) or ""  # (no pose: the law's refusal says it)
        if c.phase == "approach":  # the only phase that acts on the object's odometry
            out["object_odometry"] = self._object_guard or "ok"
        return out

    def set_object_target(self, position, orientation_xyzw) -> None:
        """The held object's target pose (world, m and x-y-z-w quaternion); MessageError if unusable."""
        if self.objects is None:
            raise ValueError("no object held: start the controller with parameter object:=NAME|PATH")
        self.objects.set_target(position, orientation_xyzw)

    def set_internal_force(self, newtons: float) -> None:
        if self.objects is not None:
            self.objects.set_internal_force(newtons)

    def request_mode(self, name: str, now: float, cause: str) -> ModeSwitch:
        return self.loop.request_mode(name, self._reference_time(now), cause)

    @property
    def mode(self) -> Mode:
        return self.loop.mode

    def _law_named(self, name: str) -> ControlLaw:
        law = self.laws.get(name)
        if law is None:
            raise ValueError(not_loaded(name, self.laws))
        return law

    def set_controller(self, name: str) -> None:
        """Switch to the law called ``name`` (among ``laws``; without them, a built-in), from the
        measured state; ValueError with the reason if it cannot run here."""
        self.loop.set_controller(self._law_named(name) if self.laws is not None else name)

    @property
    def warnings(self) -> list[str]:
        """The control laws' one-time warnings so far (ControlLoop.warnings), for /diagnostics."""
        return self.loop.warnings

    def new_warnings(self) -> list[str]:
        """The warnings not returned by an earlier call: what the node logs, once each."""
        warnings = self.loop.warnings
        fresh = [w for w in warnings if w not in self._warned]
        self._warned.update(fresh)
        return fresh

    def estop(self, now: float, reason: str = "e-stop") -> None:
        if not self.estopped:
            self.stats.trips.append((now, reason))
        self.estopped, self.estop_reason = True, reason

    def reset_estop(self) -> tuple[bool, str]:
        """Clear the latch (the references restart from the current pose)."""
        if not self.estopped:
            return True, "not e-stopped"
        self.estopped, self.estop_reason = False, ""
        self._hold_current_pose()
        return True, "e-stop cleared; holding the current pose"

    def _hold_current_pose(self) -> None:
        if self.state is None:
            pass
        elif self.loop.maneuver is self.references:
            self.references.clear_tasks(joint_positions(self.ff, self.state.q)[self.ff.arm_v_indices - self.ff.nb])
        elif self.started:
            # A scripted maneuver would jump to wherever its clock has got to: hold instead.
            self.loop.maneuver = Maneuver(name="hold")
            self.loop.start(self.state)

    # --- the tick -------------------------------------------------------------------------
    def tick(self, now: float, law_tick: Callable[[float], ControllerOutput | None] | None = None) -> ControllerOutput:
        """Commands for the period from ``now`` (s, node clock). Never raises.

        ``law_tick``: where the control loop would tick on :attr:`state` (every check before it
        passed; no object held or captured), it is called first with the law's time (s) and may
        do that tick itself, returning its output, or return None to leave it to the loop
        (sim_loop_node's compiled period, runtime.compiled_period)."""
        self.stats.ticks += 1
        try:
            return self._tick(now, law_tick)
        except Exception as exc:  # noqa: BLE001  the last line of defence: a node must outlive its law
            return self._fault(f"control law raised {type(exc).__name__}: {exc}", now)

    def _tick(self, now: float, law_tick=None) -> ControllerOutput:
        tc = self._time(now, tick=True)
        stale = self.watchdog.stale(tc) if tc is not None else [f"clock reads {now} s"]
        if self.joints is not None and self.base is not None and not (stale and self.started):
            try:
                self.state = state_from_readings(self.ff, self.joints, self.base)
            except ValueError as exc:
                self.stats.errors.record(MessageError("state", str(exc)))
        rearming = self._rearming(tc, stale) if self._rearm else None  # settles under an e-stop too
        if self.estopped:
            return self._zero("estop", self.estop_reason, now)
        if rearming:
            return self._zero("clock_step", rearming, now)
        if stale:
            status = "stale" if self.started else "waiting"
            return self._zero(status, "; ".join(stale), now)
        implausible = "; ".join(reason for name, reason in self._implausible.items() if reason and name in INPUTS)
        if implausible:
            return self._zero("implausible", implausible, now)
        if not self.started:
            self.loop.start(self.state)
            if self.objects is not None:
                self.objects.start(self.state)
            self.started = True
        if self.objects is not None:
            return self._object_tick(now)
        if self.capture is not None:
            return self._capture_tick(now, tc)
        if law_tick is not None:
            out = law_tick(tc)
            if out is not None:
                self._last_status = "ok"
                return out
        actuation, info = self.loop.tick(tc, self.state, self.period)
        if info.fault is not None:
            return self._fault(str(info.fault), now)
        if not all_finite(actuation.arm_torques, actuation.wheel_torques, actuation.thruster_forces,
                          actuation.base_wrench_world):
            return self._fault("control law gave non-finite commands", now)
        self._last_status = "ok"
        return ControllerOutput(saturate(self.ff, actuation, self.state.v), "ok", "", info)

    def _object_tick(self, now: float) -> ControllerOutput:
        self.objects.set_mode(self.loop.mode)
        tick = self.objects.tick(self.state)
        if tick.status == "implausible":
            return self._zero("implausible", "object state or target implausible (non-finite or out of bounds)", now)
        if tick.status != "ok":
            return self._fault("cooperative law gave no finite command", now)
        self._last_status = "ok"
        return ControllerOutput(saturate(self.ff, tick.actuation, self.state.v), "ok", "", None)

    def _capture_tick(self, now: float, tc: float) -> ControllerOutput:
        if self._grasp_closed:   # (captured)
            self._grasp_closed = False
            self.capture.captured(self.state)
        guard = self._object_inputs(tc)
        if guard:
            return self._zero(*guard, now)
        actuation = self.capture.tick(self.state, tc)
        if actuation is None:
            return self._zero("waiting", f"no odometry of '{self.capture.obj.name}' yet (/object/odom)", now)
        if not all_finite(actuation.arm_torques, actuation.wheel_torques, actuation.thruster_forces,
                          actuation.base_wrench_world):
            return self._fault("capture law gave non-finite commands", now)
        self._last_status = "ok"
        return ControllerOutput(saturate(self.ff, actuation, self.state.v), "ok", "", None)

    def _object_inputs(self, tc: float) -> tuple[str, str] | None:
        """(status, reason) of a zero command while the object odometry the approach acts on is
        not received, stale or implausible; None when it is good (or no longer needed: captured)."""
        self._object_guard = ""
        if self.capture.phase != "approach":
            return None
        name = self.capture.obj.name
        if self._implausible[OBJECT_INPUT]:
            self._object_guard = self._implausible[OBJECT_INPUT]
            return "implausible", self._object_guard
        stale = self.object_watchdog.stale(tc)
        if stale and self.capture.object_pose is None:
            self._object_guard = f"no odometry of '{name}' yet (/object/odom)"
            return "waiting", self._object_guard
        if stale:
            since = f" since the {self.stats.last_clock_step}" if OBJECT_INPUT not in self.object_watchdog.last \
                and self.stats.clock_steps else ""
            self._object_guard = f"odometry of '{name}': {stale[0]}{since}"
            return "stale", self._object_guard
        return None

    def _rearming(self, tc: float | None, stale: list[str]) -> str | None:
        """After a clock step: why commands stay zero (until both inputs have been fresh for
        CLOCK_SETTLE_TIME), or None once re-armed, holding the current pose."""
        if tc is None:
            self._fresh_since = None
            return self._rearm if self._rearm.startswith("clock reads") else f"{self._rearm}; {stale[0]}"
        if stale:
            self._fresh_since = None
            return f"{self._rearm}; waiting for fresh inputs ({'; '.join(stale)})"
        if self._fresh_since is None:
            self._fresh_since = tc
        if tc - self._fresh_since < CLOCK_SETTLE_TIME - 1e-9:  # 1e-9: k periods in floating point
            return f"{self._rearm}; inputs fresh for {tc - self._fresh_since:.3f} of {CLOCK_SETTLE_TIME} s"
        self._rearm = ""
        self._hold_current_pose()
        return None

    def _fault(self, reason: str, now: float) -> ControllerOutput:
        self.stats.faults += 1
        self.stats.last_fault = reason
        return self._zero("fault", reason, now)

    def _zero(self, status: str, reason: str, now: float) -> ControllerOutput:
        self.stats.zero_ticks += 1
        if status in ("stale", "implausible", "fault") and self._last_status == "ok":
            self.stats.trips.append((now, reason))
        self._last_status = status
        return ControllerOutput(self._zero_actuation, status, reason)


def _holding_refuses(ff: FreeFlyerModel, mode: Mode) -> str | None:
    """Why the cooperative law cannot fly ``mode`` (one line), or None."""
    return ObjectControl.refuses_mode(ff, mode)


def _capturing_refuses(mode: Mode, base_actuation: str) -> str | None:
    """Why the capture laws cannot fly ``mode`` (one line), or None."""
    if mode not in CAPTURE_MODES:
        return f"capturing an object, the controller flies {[m.value for m in CAPTURE_MODES]} only"
    return None
