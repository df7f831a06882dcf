"""One control tick: maneuver -> references -> controller -> effort -> actuators.

The same object runs in ``freeflyer sim`` (lockstep with the simulated plant) and inside the ROS
controller node (on measured joint states from a plant node or a testbed); it holds all the logic,
the node only converts messages.

Controllers:

* ``computed_torque``: joint-space computed torque on the mode-reduced dynamics. Joint-space
  maneuvers give the joint references directly; for task-space maneuvers the resolved-rate law
  generates them (its joint rates are integrated into joint positions and tracked).
* ``resolved_rate``: resolved-rate control through the mode's GJM with task feedback every tick,
  and a joint-velocity servo on the reduced dynamics underneath (tau = H* K_v (qdot_d - qdot) + C*).
* ``impedance``: operational-space impedance of the end-effector with the mode's Lambda* and GJM
  (:mod:`freeflyer_control.control.impedance`); one end-effector; a task reference with a
  force axis (the ``ee-contact`` maneuver) is pressed with its force, corrected by an integral
  of the measured contact force error when one is given to :meth:`ControlLoop.tick`. While no
  task reference is active (external references) the arm holds its joint reference by computed
  torque. Joint-space maneuvers are refused (they give no end-effector target; following their
  joint angles is what computed_torque does). In rotation-floating mode the wheels hold the
  base attitude at the maneuver's base reference (the base pose loop, as under computed torque)
  and the arm alone drives the end-effector.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.control.base_control import BaseGains, base_accelerations
from freeflyer_control.control.computed_torque import ComputedTorque, JointGains
from freeflyer_control.control.effort import ActuatorMapper, ControlEffort
from freeflyer_control.control.impedance import ImpedanceController, ImpedanceGains, TaskTarget
from freeflyer_control.control.maneuvers import Maneuver
from freeflyer_control.control.mode_switch import ModeSwitch, ModeSwitcher
from freeflyer_control.control.references import BaseReference, JointReference, TaskReference
from freeflyer_control.control.resolved_rate import ResolvedRate, ResolvedRateGains, ResolvedRateResult
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.actuators import Actuation
from freeflyer_control.physics.modes import Mode, base_partition
from freeflyer_control.physics.state import State, joint_positions, rotation_from_xyzw, with_joint_positions

CONTROLLERS = ("computed_torque", "resolved_rate", "impedance")

# 1/s: integral gain of the contact-force loop on top of the impedance push (N of push per N s
# of force error). The push alone balances the contact when nothing moves along the force axis;
# in floating mode the whole robot recoils from the wall and the damping along the axis eats
# part of the push, which this integral gives back. 2/s settles that in ~1.5 s, slower than the
# contact oscillation (7-22 rad/s, physics.contact) so the two loops do not fight.
FORCE_INTEGRAL_GAIN = 2.0


@dataclass(frozen=True)
class TickInfo:
    """What one tick decided, for logs and diagnostics.

    Attributes:
        mode: the mode in force.
        blend: weight of the current mode's effort (< 1 right after a switch).
        effort: the blended effort before actuator mapping.
        joint_reference: the arm reference tracked this tick.
        tasks: the task references (task-space maneuvers), else empty.
        resolved_rate: the resolved-rate result (task-space maneuvers), else None.
        allocation_residual: base wrench the thrusters could not produce (base_link axes).
        base_reference: the base pose reference of this tick (None: not given).
    """

    mode: Mode
    blend: float
    effort: ControlEffort
    joint_reference: JointReference
    tasks: tuple[TaskReference, ...]
    resolved_rate: ResolvedRateResult | None
    allocation_residual: np.ndarray
    base_reference: BaseReference | None = None


class ControlLoop:
    """Controller, mode owner and actuator mapping for one robot.

    Args:
        model: the controller's model (may differ from the plant's).
        maneuver: what to do (see :mod:`freeflyer_control.control.maneuvers`).
        controller: one of :data:`CONTROLLERS` (see the module docstring).
        mode: the initial maneuvering mode.
        joint_gains, base_gains, rr_gains, impedance_gains: controller gains.
        velocity_gain: 1/s, the joint-velocity servo of the resolved-rate controller.
        base_actuation: ``thrusters`` or ``ideal`` (see :class:`ActuatorMapper`).
        blend_time: s, bumpless-transfer time after a mode switch.
    """

    def __init__(
        self,
        model: FreeFlyerModel,
        maneuver: Maneuver,
        *,
        controller: str = "computed_torque",
        mode: Mode | str = Mode.FLOATING,
        joint_gains: JointGains = JointGains(),
        base_gains: BaseGains = BaseGains(),
        rr_gains: ResolvedRateGains = ResolvedRateGains(),
        impedance_gains: ImpedanceGains = ImpedanceGains(),
        velocity_gain: float = 5.0,
        base_actuation: str = "thrusters",
        blend_time: float = 1.0,
    ):
        if maneuver.task_space and not model.end_effectors:
            raise ValueError(f"maneuver '{maneuver.name}' needs end-effectors; the robot names none")
        self.model = model
        self.maneuver = maneuver
        self.switcher = ModeSwitcher(model, mode, blend_time)
        self.joint_gains, self.velocity_gain = joint_gains, velocity_gain
        self.base_gains = base_gains
        self.rr = ResolvedRate(model, rr_gains) if model.end_effectors else None
        self.mapper = ActuatorMapper(model, base_actuation)
        self.impedance_gains = impedance_gains
        self.impedance: ImpedanceController | None = None
        self.force_integral = 0.0  # N, the contact-force loop's correction of the push
        self.q_integrated: np.ndarray | None = None
        self.state_seen: State | None = None
        self.controller = None
        self.switcher.law_refuses = self.law_refuses
        self._arm_rel = model.arm_v_indices - model.nb  # arm joints among the joints
        self._zero_task_acceleration = np.zeros(6)  # the maneuvers give no task acceleration
        self._zero_task_acceleration.setflags(write=False)
        self._target_attitude = (b"", None)  # (quaternion bytes, its rotation matrix)
        self.set_controller(controller)

    def law_refuses(self, mode: Mode) -> str | None:
        """Why the current control law cannot fly ``mode``, or None (every law flies every mode
        the robot has the actuators for; the switcher checks those)."""
        return None

    def set_controller(self, controller: str) -> None:
        """Switch to one of :data:`CONTROLLERS` (at run time too); refused, with the reason, where
        the law cannot run (ValueError)."""
        if controller not in CONTROLLERS:
            raise ValueError(f"unknown controller '{controller}'; controllers: {list(CONTROLLERS)}")
        if controller == "resolved_rate" and not self.maneuver.task_space:
            raise ValueError(
                f"maneuver '{self.maneuver.name}' gives joint references; resolved_rate needs an "
                "end-effector maneuver (ee-point, ee-circle): use --controller computed_torque"
            )
        if controller == "impedance":
            self._check_impedance()
        elif getattr(self.maneuver, "needs_force_control", False):
            raise ValueError(f"maneuver '{self.maneuver.name}' presses a contact with a set force; "
                             f"{controller} cannot: use --controller impedance")
        if self.q_integrated is not None and self.state_seen is not None:
            # Restart the reference where the arm is, so the switch does not pull it back.
            self.q_integrated = joint_positions(self.model, self.state_seen.q)[self.model.arm_v_indices - self.model.nb]
        gains = self.joint_gains
        if controller == "resolved_rate":
            # Under a task the reference position is the measured one (no K_P action): the
            # loop is a velocity servo; without a task K_P holds the joints where they are.
            gains = JointGains(kp=self.joint_gains.kp, kd=self.velocity_gain)
        self.controller = controller
        self.ct = ComputedTorque(self.model, gains, self.base_gains)
        self.force_integral = 0.0

    def _check_impedance(self) -> None:
        """Refuse the impedance law where it cannot run (one line each, with the fix)."""
        if not self.maneuver.task_space:
            raise ValueError(
                f"maneuver '{self.maneuver.name}' gives joint references; impedance needs an "
                "end-effector maneuver (ee-point, ee-circle, ee-contact): use --controller computed_torque")
        ees = self.model.end_effectors
        if len(ees) != 1:
            raise ValueError(f"the impedance controller drives one end-effector; robot '{self.model.name}' "
                             f"has {len(ees)} ({', '.join(ees)}): choose one with --ee")
        if self.impedance is None:
            self.impedance = ImpedanceController(self.model, ees[0], self.impedance_gains)

    @property
    def mode(self) -> Mode:
        return self.switcher.mode

    @property
    def warnings(self) -> list[str]:
        """The control laws' one-time warnings so far, oldest first (each a line, also logged
        once where it arose): resolved rate's tall tasks, the impedance law's singular Lambda*."""
        out = list(self.rr.warnings) if self.rr is not None else []
        if self.impedance is not None:
            out += self.impedance.warnings
        return out

    def start(self, state: State) -> None:
        """Capture the initial pose (references are relative to it). The thruster allocator
        restarts cold, so a restarted loop gives what a fresh one gives (its warm start
        remembers the last optimum; see ThrusterAllocator)."""
        self.maneuver.start(self.model, state)
        self.q_integrated = self.maneuver.q0.copy()
        if self.mapper.allocator is not None:
            self.mapper.allocator.reset()

    def request_mode(self, mode: Mode | str, t: float, cause: str = "request") -> ModeSwitch:
        return self.switcher.request(mode, t, cause)

    def tick(self, t: float, state: State, dt: float,
             contact_force: np.ndarray | None = None) -> tuple[Actuation, TickInfo]:
        """Commands for the period [t, t + dt) from the measured ``state``.

        ``contact_force``: the measured contact force on the end-effector, world axes, N (3,)
        (a force sensor; the simulation's wall): closes the impedance law's force loop.
        """
        if self.q_integrated is None:
            raise RuntimeError("call start(state) before the first tick")
        self.state_seen = state
        mode = self.switcher.mode
        rr = None
        tasks = tuple(self.maneuver.task_references(t)) if self.rr is not None else ()
        arm = self.model.arm_v_indices - self.model.nb
        if tasks and self.controller == "impedance":
            return self._impedance_tick(t, state, dt, mode, tasks, contact_force)
        if tasks:
            if self.controller == "resolved_rate":
                rr = self.rr.joint_rates(state, mode, tasks)
                q_now = joint_positions(self.model, state.q)[arm]
                jref = JointReference(q_now, rr.joint_rates, np.zeros_like(q_now))
            else:
                # Resolved rate as a reference generator: it closes its task loop on the
                # reference joint angles (with the measured base and momentum), not on the
                # measured ones, so it does not chase the tracking lag of the torque loop.
                q_ref = with_joint_positions(self.model, state.q, self.model.arm_v_indices, self.q_integrated)
                rr = self.rr.joint_rates(State(q_ref, state.v), mode, tasks)
                self.q_integrated = self.q_integrated + rr.joint_rates * dt
                jref = JointReference(self.q_integrated.copy(), rr.joint_rates, np.zeros_like(rr.joint_rates))
        else:
            jref = self.maneuver.joint_reference(t)
            # Task references may come and go (external targets): restart the integration at
            # the joint reference so a later task does not jump.
            self.q_integrated = jref.position.copy()
        base_ref = self.maneuver.base_reference(t)

        effort = self.ct.effort(state, mode, jref, base_ref)
        s = self.switcher.blend(t)
        if s < 1.0:
            before = self.ct.effort(state, self.switcher.previous, jref, base_ref)
            effort = before.blend(effort, s)
        actuation = self.mapper.actuation(state.q, effort)
        info = TickInfo(mode, s, effort, jref, tasks, rr, self.mapper.last_residual, base_ref)
        return actuation, info

    def _impedance_tick(self, t, state, dt, mode, tasks, contact_force):
        """The impedance law's tick (the first task reference; one end-effector)."""
        task = tasks[0]
        data = self.impedance.data
        if task.orientation_xyzw is not None:
            key = np.asarray(task.orientation_xyzw, dtype=float).tobytes()  # most targets keep their attitude
            if key != self._target_attitude[0]:
                self._target_attitude = (key, rotation_from_xyzw(task.orientation_xyzw))
            R = self._target_attitude[1]
        else:  # position only: the attitude error is zero, its damping stays
            pin.framesForwardKinematics(self.model.model, data, state.q)
            R = data.oMf[self.impedance.fid].rotation.copy()
        push = 0.0
        if task.force_axis is not None:
            if contact_force is not None:
                measured = -float(np.dot(task.force_axis, contact_force))  # the wall pushes back
                self.force_integral += FORCE_INTEGRAL_GAIN * (task.force - measured) * dt
                # Anti-windup: a lost contact (the wall receded, the robot turned away) is not
                # answered by an ever harder push; a held one needs a few % of the setpoint.
                self.force_integral = min(max(self.force_integral, -abs(task.force)), abs(task.force))
            push = task.force + self.force_integral
        else:
            self.force_integral = 0.0
        twist = np.empty(6)
        twist[:3], twist[3:] = task.linear_velocity, task.angular_velocity
        target = TaskTarget(task.position, R, twist, self._zero_task_acceleration, task.force_axis, push)
        base_ref = self.maneuver.base_reference(t)
        effort = self.impedance.effort(state, mode, target, self._held_attitude(state, mode, base_ref))
        q_now = joint_positions(self.model, state.q)[self._arm_rel]
        self.q_integrated = q_now.copy()  # a later switch to another law starts here
        jref = JointReference(q_now, np.zeros(q_now.size), np.zeros(q_now.size))
        s = self.switcher.blend(t)
        if s < 1.0:
            previous = self.switcher.previous
            before = self.impedance.effort(state, previous, target, self._held_attitude(state, previous, base_ref))
            effort = before.blend(effort, s)
        actuation = self.mapper.actuation(state.q, effort)
        return actuation, TickInfo(mode, s, effort, jref, tasks, None, self.mapper.last_residual, base_ref)

    def _held_attitude(self, state, mode, base_ref):
        """Rotation-floating: the attitude acceleration (world axes) the wheels hold under the
        impedance law, the base pose loop's towards ``base_ref``; None in other modes."""
        if mode is not Mode.ROTATION_FLOATING:
            return None
        return base_accelerations(self.model, state, base_ref, self.base_gains, base_partition(self.model.base, mode))
