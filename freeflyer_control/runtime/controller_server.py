"""The controller node's logic: inputs, references, mode, watchdog, e-stop, one tick.

Safety rules (DESIGN.md §7):

* until both joint states and base odometry have arrived, and whenever either is older than the
  watchdog timeout, the command is zero joint and wheel torques and all thrusters off;
* an e-stop latches the same zero command until it is reset through the service;
* a refused input (NaN, missing joint, bad quaternion) is counted and ignored: the last good
  state is kept, so a bad message cannot produce a command, and repeated bad messages end in the
  watchdog's zero command;
* the mode is validated before it is accepted; an impossible one is refused with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from freeflyer_control.control.loop import ControlLoop, TickInfo
from freeflyer_control.control.maneuvers import ExternalReferences, Maneuver
from freeflyer_control.control.mode_switch import ModeSwitch
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.actuators import Actuation, mode_support, saturate
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import State, joint_positions
from freeflyer_control.ros.conversions import (
    BaseReading,
    ErrorCounter,
    JointStateReader,
    MessageError,
    state_from_readings,
)
from freeflyer_control.runtime.watchdog import Watchdog


@dataclass(frozen=True)
class ControllerOutput:
    """One tick's result.

    Attributes:
        actuation: saturated commands to publish (zero when not ``ok``).
        status: ``ok``, ``waiting`` (inputs not yet received), ``stale`` or ``estop``.
        reason: why the command is zero, for logs and diagnostics.
        info: the control loop's tick info when ``ok``.
    """

    actuation: Actuation
    status: str
    reason: str = ""
    info: TickInfo | None = None


@dataclass
class ControllerStats:
    ticks: int = 0
    zero_ticks: int = 0
    errors: ErrorCounter = field(default_factory=ErrorCounter)
    trips: list[tuple[float, str]] = field(default_factory=list)


class ControllerServer:
    """Args:
    ff: the controller's robot model.
    rate: control rate, Hz.
    controller: computed_torque or resolved_rate.
    mode: initial mode.
    watchdog_timeout: seconds (default 1.5 control periods: a stopped input is answered with a
        zero command at the second tick after its last message).
    base_actuation: thrusters or ideal.
    maneuver: a scripted maneuver to run instead of the external references (topics); after an
        e-stop reset the controller then holds the pose it is in.
    """

    def __init__(self, ff: FreeFlyerModel, *, rate: float, controller: str = "computed_torque",
                 mode: Mode | str = Mode.FLOATING, watchdog_timeout: float | None = None,
                 base_actuation: str = "thrusters", maneuver: Maneuver | None = None):
        if not rate > 0:
            raise ValueError(f"rate must be > 0 Hz, got {rate}")
        self.ff = ff
        self.period = 1.0 / rate
        self.references = ExternalReferences()
        # Without end-effectors only joint trajectories make sense (a bare URDF still gets a node).
        self.references.task_space = bool(ff.end_effectors)
        self.loop = ControlLoop(ff, maneuver or self.references, controller=controller, mode=mode,
                                base_actuation=base_actuation)
        self.watchdog = Watchdog(watchdog_timeout or 1.5 * self.period, ("joint_states", "base_odometry"))
        self.reader = JointStateReader(ff.joint_names)
        self.joints = None
        self.base: BaseReading | None = None
        self.state: State | None = None
        self.started = False
        self.estopped = False
        self.estop_reason = ""
        self.stats = ControllerStats()
        self._last_status = "waiting"

    # --- inputs ---------------------------------------------------------------------------
    def on_joint_state(self, names, positions, velocities, now: float) -> bool:
        try:
            self.joints = self.reader.read(names, positions, velocities)
        except MessageError as exc:
            self.stats.errors.record(exc)
            return False
        self.watchdog.feed("joint_states", now)
        return True

    def on_base_odometry(self, reading: BaseReading | MessageError, now: float) -> bool:
        if isinstance(reading, MessageError):
            self.stats.errors.record(reading)
            return False
        self.base = reading
        self.watchdog.feed("base_odometry", now)
        return True

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
        self.references.set_joint_trajectory(
            [(now + t, np.asarray(q, float)[order], np.asarray(v, float)[order] if len(v) else np.zeros(len(arm)))
             for t, q, v in points])

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
        return mode_support(self.ff, mode)

    def request_mode(self, name: str, now: float, cause: str) -> ModeSwitch:
        return self.loop.request_mode(name, now, cause)

    @property
    def mode(self) -> Mode:
        return self.loop.mode

    def set_controller(self, name: str) -> None:
        self.loop.set_controller(name)  # restarts the joint reference at the measured pose

    def estop(self, now: float, reason: str = "e-stop") -> None:
        if not self.estopped:
            self.stats.trips.append((now, reason))
        self.estopped, self.estop_reason = True, reason

    def reset_estop(self) -> tuple[bool, str]:
        """Clear the latch (the references restart from the current pose)."""
        if not self.estopped:
            return True, "not e-stopped"
        self.estopped, self.estop_reason = False, ""
        if self.state is None:
            pass
        elif self.loop.maneuver is self.references:
            self.references.clear_tasks(joint_positions(self.ff, self.state.q)[self.ff.arm_v_indices - self.ff.nb])
        elif self.started:
            # A scripted maneuver would jump to wherever its clock has got to: hold instead.
            self.loop.maneuver = Maneuver(name="hold")
            self.loop.start(self.state)
        return True, "e-stop cleared; holding the current pose"

    # --- the tick -------------------------------------------------------------------------
    def tick(self, now: float) -> ControllerOutput:
        self.stats.ticks += 1
        stale = self.watchdog.stale(now)
        if self.joints is not None and self.base is not None and not (stale and self.started):
            try:
                self.state = state_from_readings(self.ff, self.joints, self.base)
            except ValueError as exc:
                self.stats.errors.record(MessageError("state", str(exc)))
        if self.estopped:
            return self._zero("estop", self.estop_reason, now)
        if stale:
            status = "stale" if self.started else "waiting"
            return self._zero(status, "; ".join(stale), now)
        if not self.started:
            self.loop.start(self.state)
            self.started = True
        actuation, info = self.loop.tick(now, self.state, self.period)
        self._last_status = "ok"
        return ControllerOutput(saturate(self.ff, actuation, self.state.v), "ok", "", info)

    def _zero(self, status: str, reason: str, now: float) -> ControllerOutput:
        self.stats.zero_ticks += 1
        if status == "stale" and self._last_status == "ok":
            self.stats.trips.append((now, reason))
        self._last_status = status
        return ControllerOutput(saturate(self.ff, Actuation()), status, reason)
