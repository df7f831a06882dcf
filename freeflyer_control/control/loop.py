"""One control tick: maneuver -> references -> control law -> effort -> actuators.

The same object runs in ``freeflyer sim`` (lockstep with the simulated plant), in campaigns, in
the Gymnasium environment and inside the ROS controller node (on measured joint states from a
plant node or a testbed); it holds all the logic, the node only converts messages.

The loop holds a law object (:class:`~freeflyer_control.control.law.ControlLaw`): the package's
three (:mod:`~freeflyer_control.control.builtin`: ``computed_torque``, ``resolved_rate``,
``impedance``, also accepted here by name) or a user's own. Around it the loop owns what every
law gets alike: the references of the maneuver, the per-tick context, the mode and its bumpless
switching (both modes' efforts blended), allocation of the base wrench to the mode's actuators,
and the guard (:mod:`~freeflyer_control.control.law_guard`): a law that raises, returns a
non-finite or wildly over-limit effort, or overruns its period is stopped with a
:class:`~freeflyer_control.control.law.LawFault`, and the loop commands zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from freeflyer_control.control.base_control import BaseGains
from freeflyer_control.control.builtin import BUILTIN_LAWS, builtin_law
from freeflyer_control.control.computed_torque import JointGains
from freeflyer_control.control.context import LawContext
from freeflyer_control.control.effort import ActuatorMapper, ControlEffort
from freeflyer_control.control.impedance import ImpedanceGains
from freeflyer_control.control.law import ControlLaw, LawFault, Reference
from freeflyer_control.control.law_guard import OVERRUN_LIMIT, LawGuard, cpu_time, fault, raised
from freeflyer_control.control.maneuvers import Maneuver
from freeflyer_control.control.mode_switch import ModeSwitch, ModeSwitcher
from freeflyer_control.control.references import BaseReference, JointReference, TaskReference
from freeflyer_control.control.resolved_rate import ResolvedRateGains, ResolvedRateResult
from freeflyer_control.errors import interrupted_by_user
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.actuators import Actuation
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import State

#: The package's own laws, by name (control.builtin); other laws are objects.
CONTROLLERS = tuple(BUILTIN_LAWS)


@dataclass(frozen=True)
class TickInfo:
    """What one tick decided, for logs and diagnostics.

    Attributes:
        mode: the mode in force.
        blend: weight of the current mode's effort (< 1 right after a switch).
        effort: the blended effort before actuator mapping (zero after a fault).
        joint_reference: the arm reference tracked this tick (the law's, else the maneuver's).
        tasks: the task references (task-space maneuvers), else empty.
        resolved_rate: the law's resolved-rate result (task-space maneuvers), else None.
        allocation_residual: base wrench the thrusters could not produce (base_link axes).
        fault: the law's fault this tick (then every command is zero), else None.
        base_reference: the base pose reference of this tick (None: not given).
    """

    mode: Mode
    blend: float
    effort: ControlEffort
    joint_reference: JointReference
    tasks: tuple[TaskReference, ...]
    resolved_rate: ResolvedRateResult | None
    allocation_residual: np.ndarray
    fault: LawFault | None = None
    base_reference: BaseReference | None = None


class ControlLoop:
    """Control law, mode owner and actuator mapping for one robot.

    Args:
        model: the controller's model (may differ from the plant's).
        maneuver: what to do (see :mod:`freeflyer_control.control.maneuvers`).
        controller: the law (a :class:`~freeflyer_control.control.law.ControlLaw`), or the name
            of a built-in one (:data:`CONTROLLERS`), made with the gains below.
        mode: the initial maneuvering mode.
        joint_gains, base_gains, rr_gains, impedance_gains, velocity_gain: a built-in law's gains
            when ``controller`` is a name (None: its defaults).
        base_actuation: ``thrusters`` or ``ideal`` (see :class:`ActuatorMapper`).
        blend_time: s, bumpless-transfer time after a mode switch.
        period: s, the control period (the law's context; :meth:`tick`'s ``dt`` replaces it).
        overrun_limit: ticks running over the period that stop the law (None: count only;
            :mod:`~freeflyer_control.control.law_guard`).
    """

    def __init__(
        self,
        model: FreeFlyerModel,
        maneuver: Maneuver,
        *,
        controller: ControlLaw | str = "computed_torque",
        mode: Mode | str = Mode.FLOATING,
        joint_gains: JointGains | None = None,
        base_gains: BaseGains | None = None,
        rr_gains: ResolvedRateGains | None = None,
        impedance_gains: ImpedanceGains | None = None,
        velocity_gain: float | None = None,
        base_actuation: str = "thrusters",
        blend_time: float = 1.0,
        period: float = 0.004,
        overrun_limit: int | None = OVERRUN_LIMIT,
    ):
        if maneuver.task_space and not model.end_effectors:
            raise ValueError(f"maneuver '{maneuver.name}' needs end-effectors; the robot names none")
        self.model = model
        self.maneuver = maneuver
        self.switcher = ModeSwitcher(model, mode, blend_time)
        self._gains = {"joint_gains": joint_gains, "base_gains": base_gains, "rr_gains": rr_gains,
                       "impedance_gains": impedance_gains, "velocity_gain": velocity_gain}
        self.mapper = ActuatorMapper(model, base_actuation)
        self.context = LawContext(model, period, self.mapper.base_actuation)
        self.guard = LawGuard(model, overrun_limit)
        self.state_seen: State | None = None
        self.started = False
        self.fault: LawFault | None = None
        self.law: ControlLaw | None = None
        self._laws_run: list[ControlLaw] = []
        self.switcher.law_refuses = self.law_refuses
        self.set_controller(controller)

    @property
    def controller(self) -> str:
        """The name of the law in force."""
        return self.law.label()

    def law_refuses(self, mode: Mode) -> str | None:
        """Why the current control law cannot fly ``mode``, or None (asked by the mode switcher
        after the actuators)."""
        return self.law.refuses_mode(mode) if self.law is not None else None

    def set_controller(self, controller: ControlLaw | str) -> None:
        """Run ``controller`` (a law, or a built-in's name) from now on (at run time too: it starts
        from the measured state); refused, with the reason, where the law cannot run (ValueError)."""
        law = builtin_law(controller, **self._gains) if isinstance(controller, str) else controller
        if not isinstance(law, ControlLaw):
            raise ValueError(f"a control law must be a ControlLaw (freeflyer_control.control.law), "
                             f"got {type(law).__name__}")
        reason = law.refuses(self.model, self.maneuver) or law.refuses_mode(self.mode)
        if reason:
            raise ValueError(reason)
        law.prepare(self.model)
        self.law = law
        if law not in self._laws_run:
            self._laws_run.append(law)
        if self.started and self.state_seen is not None:
            self._reset_law(self.state_seen)

    @property
    def mode(self) -> Mode:
        return self.switcher.mode

    @property
    def warnings(self) -> list[str]:
        """The control laws' one-time warnings so far, oldest first (each a line, also logged
        once where it arose), of every law this loop has run."""
        out: list[str] = []
        for law in self._laws_run:
            out += [w for w in law.warnings if w not in out]
        return out

    # The built-in laws' objects, for the compiled engine (sim.fast reads their gains).
    @property
    def ct(self):
        return getattr(self.law, "ct", None)

    @property
    def rr(self):
        return getattr(self.law, "rr", None)

    @property
    def q_integrated(self):
        return getattr(self.law, "q_integrated", None)

    def start(self, state: State) -> None:
        """Capture the initial pose (references are relative to it) and reset the law. The
        thruster allocator restarts cold, so a restarted loop gives what a fresh one gives (its
        warm start remembers the last optimum; see ThrusterAllocator)."""
        self.maneuver.start(self.model, state)
        if self.mapper.allocator is not None:
            self.mapper.allocator.reset()
        self.fault = None
        self.started = True
        self.state_seen = state
        self._reset_law(state)

    def _reset_law(self, state: State) -> None:
        """The law (re)starts from ``state`` at the loop's current time and mode."""
        self.law.reset(self.context.begin(self.context.t, state, self.mode))

    def request_mode(self, mode: Mode | str, t: float, cause: str = "request") -> ModeSwitch:
        return self.switcher.request(mode, t, cause)

    def reference(self, t: float) -> Reference:
        """What the maneuver asks for at ``t`` (s)."""
        tasks = tuple(self.maneuver.task_references(t)) if self.model.end_effectors else ()
        return Reference(self.maneuver.joint_reference(t), tasks, self.maneuver.base_reference(t))

    def tick(self, t: float, state: State, dt: float,
             contact_force: np.ndarray | None = None) -> tuple[Actuation, TickInfo]:
        """Commands for the period [t, t + dt) from the measured ``state``.

        ``contact_force``: the measured contact force on the end-effector, world axes, N (3,)
        (a force sensor; the simulation's wall): the law reads it as ``context.contact_force``.

        A law that fails (module docstring) gives zero commands and ``info.fault``; the fault is
        also kept in :attr:`fault` (the first one) for the caller to end the run or trip.
        """
        if not self.started:
            raise RuntimeError("call start(state) before the first tick")
        self.state_seen = state
        mode = self.switcher.mode
        law = self.law
        reference = self.reference(t)
        context = self.context.begin(t, state, mode, dt, contact_force)
        s = self.switcher.blend(t)
        t0 = cpu_time()
        try:
            effort = law.effort(state, reference, context)
            problem = self.guard.problem(effort)
            if problem is None and s < 1.0:
                before = law.effort(state, reference, context.leaving_view(self.switcher.previous))
                problem = self.guard.problem(before)
                effort = before.blend(effort, s) if problem is None else effort
        except Exception as exc:  # noqa: BLE001  any law, any bug: the loop must outlive it
            if interrupted_by_user(exc):  # Ctrl-C inside a compiled call the law made: the user's stop
                raise
            problem = raised(exc)
        slow = self.guard.tick_time(cpu_time() - t0, dt)
        problem = problem or slow
        if problem is not None:
            return self._failed(fault(law.label(), t, problem), mode, s, reference, state)
        actuation = self.mapper.actuation(state.q, effort)
        jref = law.joint_reference if law.joint_reference is not None else reference.joint
        info = TickInfo(mode, s, effort, jref, reference.tasks, law.resolved_rate, self.mapper.last_residual,
                        base_reference=reference.base)
        return actuation, info

    def _failed(self, law_fault: LawFault, mode, s, reference, state) -> tuple[Actuation, TickInfo]:
        """Zero commands for a law that failed this tick."""
        if self.fault is None:
            self.fault = law_fault
        zero = ControlEffort.zero(self.model)
        info = TickInfo(mode, s, zero, reference.joint, reference.tasks, None, np.zeros(self.model.nb), law_fault,
                        reference.base)
        return Actuation(zero.arm_torques, zero.wheel_torques, np.zeros(len(self.model.thrusters)),
                         np.zeros(self.model.nb)), info
