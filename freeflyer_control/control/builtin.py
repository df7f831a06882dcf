"""The package's own three laws, written against the same interface as a user's (control.law).

* ``computed_torque``: joint-space computed torque on the mode-reduced dynamics
  (:mod:`~freeflyer_control.control.computed_torque`). Joint-space maneuvers give the joint
  references directly; for task-space maneuvers the resolved-rate law generates them (its joint
  rates are integrated into joint positions and tracked).
* ``resolved_rate``: resolved-rate control through the mode's GJM with task feedback every tick
  (:mod:`~freeflyer_control.control.resolved_rate`), and a joint-velocity servo on the reduced
  dynamics underneath (tau = H* K_v (qdot_d - qdot) + C*).
* ``impedance``: operational-space impedance of the end-effector with the mode's Lambda* and GJM
  (:mod:`~freeflyer_control.control.impedance`); one end-effector; a task reference with a force
  axis (the ``ee-contact`` maneuver) is pressed with its force, corrected by an integral of the
  measured contact force error (``context.contact_force``). While no task reference is active
  (external references) the arm holds its joint reference by computed torque. Joint-space
  maneuvers are refused (they give no end-effector target; following their joint angles is what
  computed_torque does). In rotation-floating mode the wheels hold the base attitude at the
  maneuver's base reference (the base pose loop, as under computed torque) and the arm alone
  drives the end-effector.

Each declares its gains as parameters (``--controller-param kp=2``); :meth:`BuiltinLaw.with_gains`
takes the gain objects themselves (per-joint arrays). The compiled simulation engine implements
computed_torque and resolved_rate at their default parameters (:attr:`BuiltinLaw.compiled_name`).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from freeflyer_control.control.base_control import BaseGains, base_accelerations
from freeflyer_control.control.computed_torque import ComputedTorque, JointGains
from freeflyer_control.control.context import LawContext
from freeflyer_control.control.effort import ControlEffort
from freeflyer_control.control.impedance import ImpedanceController, ImpedanceGains, TaskTarget
from freeflyer_control.control.law import ControlLaw, Parameter, Reference
from freeflyer_control.control.references import JointReference
from freeflyer_control.control.resolved_rate import ResolvedRate, ResolvedRateGains
from freeflyer_control.physics.modes import Mode, base_partition
from freeflyer_control.physics.singularity import SIGMA_NEAR
from freeflyer_control.physics.state import State, joint_positions, rotation_from_xyzw, with_joint_positions

# 1/s: integral gain of the contact-force loop on top of the impedance push (N of push per N s
# of force error). The push alone balances the contact when nothing moves along the force axis;
# in floating mode the whole robot recoils from the wall and the damping along the axis eats
# part of the push, which this integral gives back. 2/s settles that in ~1.5 s, slower than the
# contact oscillation (7-22 rad/s, physics.contact) so the two loops do not fight.
FORCE_INTEGRAL_GAIN = 2.0

JOINT_PARAMETERS = (
    Parameter("kp", float, 1.0, (0.0, 1e4), "arm joint stiffness K_P, 1/s^2 (Wilde et al.: 1)"),
    Parameter("kd", float, 1.0, (0.0, 1e4), "arm joint damping K_D, 1/s (Wilde et al.: 1)"),
)
BASE_PARAMETERS = (
    Parameter("base_kp_linear", float, 0.25, (0.0, 1e3), "base position stiffness, 1/s^2"),
    Parameter("base_kd_linear", float, 1.0, (0.0, 1e3), "base position damping, 1/s"),
    Parameter("base_kp_attitude", float, 0.25, (0.0, 1e3), "base attitude stiffness, 1/s^2"),
    Parameter("base_kd_attitude", float, 1.0, (0.0, 1e3), "base attitude damping, 1/s"),
)
TASK_PARAMETERS = (
    Parameter("k_position", float, 1.0, (0.0, 100.0), "task position gain, 1/s"),
    Parameter("k_orientation", float, 1.0, (0.0, 100.0), "task orientation gain, 1/s (0: position only)"),
    Parameter("sigma_0", float, SIGMA_NEAR, (0.0, 10.0), "smallest singular value of the task rows below "
              "which damping starts"),
    Parameter("lambda_max", float, 0.05, (0.0, 10.0), "damped-least-squares damping at sigma = 0"),
    Parameter("max_joint_rate", float, 0.5, (1e-6, 100.0), "arm joint rate limit, rad/s"),
)


class BuiltinLaw(ControlLaw):
    """What the three built-in laws share: their gains, the base pose loop, the joint hold."""

    #: The compiled engine implements this law (at its default gains).
    compiled: bool = False
    #: The gain objects :meth:`with_gains` takes for this law.
    gains: tuple[str, ...] = ("joint_gains", "base_gains", "rr_gains")

    def __init__(self, **values):
        super().__init__(**values)
        p = self.params
        self.joint_gains = JointGains(p.kp, p.get("kd", 1.0))
        self.base_gains = BaseGains(p.base_kp_linear, p.base_kd_linear, p.base_kp_attitude, p.base_kd_attitude)
        self._defaults = not values
        self._model = None
        self.ct: ComputedTorque | None = None
        self.rr: ResolvedRate | None = None

    @classmethod
    def with_gains(cls, *, joint_gains: JointGains | None = None, base_gains: BaseGains | None = None,
                   **gains) -> "BuiltinLaw":
        """The law with gain objects the parameter table cannot hold (per-joint arrays):
        ``joint_gains``, ``base_gains`` and the law's own (``rr_gains``, ``velocity_gain``,
        ``impedance_gains``)."""
        law = cls()
        law.joint_gains = joint_gains or law.joint_gains
        law.base_gains = base_gains or law.base_gains
        for key, value in gains.items():
            if key not in cls.gains:
                raise ValueError(f"{cls.label()} takes the gains {', '.join(cls.gains)}, not '{key}'")
            setattr(law, key, value)
        law._defaults = law._defaults and not (joint_gains or base_gains or gains)
        return law

    @property
    def compiled_name(self) -> str | None:
        """The name the compiled engine knows this law by, when it can fly it (a compiled law at
        its default gains), else None."""
        return self.label() if self.compiled and self._defaults else None

    def _servo_gains(self) -> JointGains:
        return self.joint_gains

    def _bind(self, model) -> None:
        """The law's objects for ``model`` (once per model: a run, a restart keeps them)."""
        if self._model is model:
            return
        self._model = model
        self.rr = ResolvedRate(model, self.rr_gains) if model.end_effectors else None

    def prepare(self, model) -> None:
        super().prepare(model)  # the compiled H*, C*, GJM now, not inside a run-time switch
        self._bind(model)
        # A servo built here loads the computed-torque kernel (ComputedTorque warms it), so the
        # first tick does not: that load took 43 ms of the first period here (~120 ms on the
        # issue-22 slower machine), and a machine's first use compiles it for ~20 s.
        self.ct = ComputedTorque(model, self._servo_gains(), self.base_gains)

    def reset(self, context: LawContext) -> None:
        self._bind(context.model)
        # A fresh servo each (re)start, as ControlLoop.set_controller always made one.
        self.ct = ComputedTorque(context.model, self._servo_gains(), self.base_gains)
        self.q_integrated = context.joint_positions().copy()
        self.joint_reference = None
        self.resolved_rate = None

    def effort(self, state: State, reference: Reference, context: LawContext) -> ControlEffort:
        """Computed torque on the joint reference: the maneuver's, or one made from its task
        references (:meth:`_task_reference`)."""
        if context.leaving:  # the blend's second call: this tick's reference, the mode being left
            return self.ct.effort(state, context.mode, self.joint_reference, reference.base)
        self.resolved_rate = None
        if reference.tasks:
            jref = self._task_reference(state, reference.tasks, context)
        else:
            jref = reference.joint
            # Task references may come and go (external targets): restart the integration at
            # the joint reference so a later task does not jump.
            self.q_integrated = jref.position.copy()
        self.joint_reference = jref
        return self.ct.effort(state, context.mode, jref, reference.base)

    def _task_reference(self, state: State, tasks, context: LawContext) -> JointReference:
        """The joint reference that tracks ``tasks`` (world axes)."""
        raise NotImplementedError

    @property
    def warnings(self) -> list[str]:
        return list(self.rr.warnings) if self.rr is not None else []


def _refuses_force(law: ControlLaw, maneuver) -> str | None:
    if getattr(maneuver, "needs_force_control", False):
        return (f"maneuver '{maneuver.name}' presses a contact with a set force; {law.label()} cannot: "
                "use --controller impedance")
    return None


class ComputedTorqueLaw(BuiltinLaw):
    """Computed torque on the mode-reduced dynamics H*, C* (task maneuvers: resolved rate makes the joint reference)."""

    name = "computed_torque"
    parameters = JOINT_PARAMETERS + BASE_PARAMETERS + TASK_PARAMETERS
    compiled = True

    def __init__(self, **values):
        super().__init__(**values)
        p = self.params
        self.rr_gains = ResolvedRateGains(p.k_position, p.k_orientation, p.sigma_0, p.lambda_max, p.max_joint_rate)

    def refuses(self, model, maneuver) -> str | None:
        return _refuses_force(self, maneuver)

    def _task_reference(self, state: State, tasks, context: LawContext) -> JointReference:
        # Resolved rate as a reference generator: it closes its task loop on the reference joint
        # angles (with the measured base and momentum), not on the measured ones, so it does not
        # chase the tracking lag of the torque loop.
        model = context.model
        q_ref = with_joint_positions(model, state.q, model.arm_v_indices, self.q_integrated)
        rr = self.rr.joint_rates(State(q_ref, state.v), context.mode, tasks)
        self.q_integrated = self.q_integrated + rr.joint_rates * context.period
        self.resolved_rate = rr
        return JointReference(self.q_integrated.copy(), rr.joint_rates, np.zeros_like(rr.joint_rates))


class ResolvedRateLaw(BuiltinLaw):
    """Resolved rate through the mode's GJM (damped least squares), a joint-velocity servo on H*, C* underneath."""

    name = "resolved_rate"
    parameters = JOINT_PARAMETERS[:1] + (
        Parameter("velocity_gain", float, 5.0, (0.0, 1e4), "joint-velocity servo gain K_v, 1/s"),
    ) + BASE_PARAMETERS + TASK_PARAMETERS
    compiled = True

    gains = ("joint_gains", "base_gains", "rr_gains", "velocity_gain")

    def __init__(self, **values):
        super().__init__(**values)
        p = self.params
        self.velocity_gain = p.velocity_gain
        self.rr_gains = ResolvedRateGains(p.k_position, p.k_orientation, p.sigma_0, p.lambda_max, p.max_joint_rate)

    def _servo_gains(self) -> JointGains:
        # Under a task the reference position is the measured one (no K_P action): the loop is a
        # velocity servo; without a task K_P holds the joints where they are.
        return JointGains(kp=self.joint_gains.kp, kd=self.velocity_gain)

    def refuses(self, model, maneuver) -> str | None:
        if not maneuver.task_space:
            return (f"maneuver '{maneuver.name}' gives joint references; resolved_rate needs an "
                    "end-effector maneuver (ee-point, ee-circle): use --controller computed_torque")
        return _refuses_force(self, maneuver)

    def _task_reference(self, state: State, tasks, context: LawContext) -> JointReference:
        rr = self.rr.joint_rates(state, context.mode, tasks)
        q_now = context.joint_positions()
        self.resolved_rate = rr
        return JointReference(q_now, rr.joint_rates, np.zeros_like(q_now))


class ImpedanceLaw(BuiltinLaw):
    """Operational-space impedance of the end-effector through the mode's Lambda* and GJM (contact force loop)."""

    name = "impedance"
    parameters = (
        Parameter("natural_frequency", float, 2.0, (1e-3, 1e3), "task natural frequency w, rad/s"),
        Parameter("damping_ratio", float, 0.7, (0.0, 100.0), "task damping ratio z (1: critical)"),
        Parameter("null_damping", float, 1.0, (0.0, 1e3), "damping of the null-space motion d0, 1/s"),
    ) + JOINT_PARAMETERS + BASE_PARAMETERS
    gains = ("joint_gains", "base_gains", "impedance_gains")

    def __init__(self, **values):
        super().__init__(**values)
        p = self.params
        self.impedance_gains = ImpedanceGains(p.natural_frequency, p.damping_ratio, p.null_damping)
        self.rr_gains = ResolvedRateGains()
        self.impedance: ImpedanceController | None = None
        self.force_integral = 0.0  # N, the contact-force loop's correction of the push
        self._target_attitude = (b"", None)  # (quaternion bytes, its rotation matrix)
        self._zero_task_acceleration = np.zeros(6)  # the maneuvers give no task acceleration
        self._zero_task_acceleration.setflags(write=False)

    def refuses(self, model, maneuver) -> str | None:
        if not maneuver.task_space:
            return (f"maneuver '{maneuver.name}' gives joint references; impedance needs an end-effector "
                    "maneuver (ee-point, ee-circle, ee-contact): use --controller computed_torque")
        ees = model.end_effectors
        if len(ees) != 1:
            return (f"the impedance controller drives one end-effector; robot '{model.name}' has {len(ees)} "
                    f"({', '.join(ees)}): choose one with --ee")
        return None

    def _bind(self, model) -> None:
        if self._model is model:
            return
        super()._bind(model)
        if model.end_effectors:  # without one the law refuses to run (refuses)
            self.impedance = ImpedanceController(model, model.end_effectors[0], self.impedance_gains)

    def reset(self, context: LawContext) -> None:
        super().reset(context)
        self.force_integral = 0.0
        self._arm_rel = context.model.arm_v_indices - context.model.nb

    @property
    def warnings(self) -> list[str]:
        return super().warnings + (self.impedance.warnings if self.impedance is not None else [])

    def effort(self, state: State, reference: Reference, context: LawContext) -> ControlEffort:
        if not reference.tasks:  # no end-effector target: hold the joint reference by computed torque
            if not context.leaving:
                self.q_integrated = reference.joint.position.copy()
                self.joint_reference = reference.joint
                self.resolved_rate = None
            return self.ct.effort(state, context.mode, reference.joint, reference.base)
        if context.leaving:
            return self.impedance.effort(state, context.mode, self._target,
                                         self._held_attitude(state, context.mode, reference, context))
        task = reference.tasks[0]  # one end-effector
        if task.orientation_xyzw is not None:
            key = np.asarray(task.orientation_xyzw, dtype=float).tobytes()  # most targets keep their attitude
            if key != self._target_attitude[0]:
                self._target_attitude = (key, rotation_from_xyzw(task.orientation_xyzw))
            R = self._target_attitude[1]
        else:  # position only: the attitude error is zero, its damping stays
            data = self.impedance.data
            pin.framesForwardKinematics(context.model.model, data, state.q)
            R = data.oMf[self.impedance.fid].rotation.copy()
        push = 0.0
        if task.force_axis is not None:
            if context.contact_force is not None:
                measured = -float(np.dot(task.force_axis, context.contact_force))  # the wall pushes back
                self.force_integral += FORCE_INTEGRAL_GAIN * (task.force - measured) * context.period
                # Anti-windup: a lost contact (the wall receded, the robot turned away) is not
                # answered by an ever harder push; a held one needs a few % of the setpoint.
                self.force_integral = min(max(self.force_integral, -abs(task.force)), abs(task.force))
            push = task.force + self.force_integral
        else:
            self.force_integral = 0.0
        twist = np.empty(6)
        twist[:3], twist[3:] = task.linear_velocity, task.angular_velocity
        self._target = TaskTarget(task.position, R, twist, self._zero_task_acceleration, task.force_axis, push)
        effort = self.impedance.effort(state, context.mode, self._target,
                                       self._held_attitude(state, context.mode, reference, context))
        q_now = joint_positions(context.model, state.q)[self._arm_rel]
        self.q_integrated = q_now.copy()  # a later switch to another law starts here
        self.joint_reference = JointReference(q_now, np.zeros(q_now.size), np.zeros(q_now.size))
        self.resolved_rate = None
        return effort

    def _held_attitude(self, state, mode, reference, context):
        """Rotation-floating: the attitude acceleration (world axes) the wheels hold under the
        impedance law, the base pose loop's towards the base reference; None in other modes."""
        if mode is not Mode.ROTATION_FLOATING:
            return None
        return base_accelerations(context.model, state, reference.base, self.base_gains,
                                  base_partition(context.model.base, mode))


BUILTIN_LAWS: dict[str, type[BuiltinLaw]] = {law.name: law for law in (ComputedTorqueLaw, ResolvedRateLaw, ImpedanceLaw)}


def builtin_law(name: str, **gains) -> BuiltinLaw:
    """One of the three built-in laws by name, at its default parameters or with gain objects
    (:meth:`BuiltinLaw.with_gains`). The package's own names only: discovery of other laws
    (import paths, entry points) is :mod:`freeflyer_control.laws`'."""
    cls = BUILTIN_LAWS.get(name)
    if cls is None:
        raise ValueError(f"unknown controller '{name}'; controllers: {list(BUILTIN_LAWS)}")
    given = {k: v for k, v in gains.items() if v is not None and k in cls.gains}
    return cls.with_gains(**given) if given else cls()
