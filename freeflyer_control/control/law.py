"""A control law: the protocol every law implements, the package's three and the user's own.

A law is a class derived from :class:`ControlLaw`. It declares its parameters (name, type,
default, range, description) and implements one method::

    class SlidingMode(ControlLaw):
        \"\"\"Sliding-mode joint control on the mode-reduced dynamics.\"\"\"
        name = "sliding_mode"
        parameters = (Parameter("slope", float, 2.0, (0.0, 50.0), "sliding surface slope, 1/s"),
                      Parameter("gain", float, 0.5, (0.0, 10.0), "switching gain, N m"))

        def effort(self, state, reference, context):
            H, C = context.reduced_dynamics()  ...
            return context.joint_effort(tau)

Everything around the law is the package's (:class:`~freeflyer_control.control.loop.ControlLoop`):
the maneuver gives the :class:`Reference` each tick, the :class:`~freeflyer_control.control.context.LawContext`
gives the robot's quantities (model, mode, GJM, H*, C*, Lambda, limits, period, time), and the
effort the law returns is checked, blended across mode switches, allocated to thrusters and
wheels per mode and clipped to the actuator limits. A law that raises, returns a non-finite or
wildly over-limit effort, or is slower than its period is stopped there (:class:`LawFault`).

Parameters are checked before anything runs: ``SlidingMode(slope=-1)`` raises ValueError naming
the parameter and its range, as ``--controller-param slope=-1`` and a campaign spec's
``controller_params: {slope: -1}`` do. The law reads them as ``self.params.slope``.

The same object runs in ``freeflyer sim`` (Python engine), campaigns, the ROS-free controller
server (so ``controller_node``) and the HIL runner; how a law is named on a command line or a
node parameter (an import path ``my_lab.laws:SlidingMode`` or an installed entry point) is the
front ends' business (:mod:`freeflyer_control.laws`), not this module's.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Iterator, Mapping

from freeflyer_control.control.effort import ControlEffort
from freeflyer_control.control.references import BaseReference, JointReference, TaskReference
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import State

if TYPE_CHECKING:  # annotations only: the context imports nothing of this module at run time
    from freeflyer_control.control.context import LawContext
    from freeflyer_control.control.maneuvers import Maneuver
    from freeflyer_control.control.resolved_rate import ResolvedRateResult
    from freeflyer_control.model.loader import FreeFlyerModel

_TYPES = (float, int, bool, str)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Parameter:
    """One declared parameter of a law.

    Attributes:
        name: a Python identifier (the law reads ``self.params.<name>``).
        type: float, int, bool or str.
        default: the value when none is given (must pass the checks below).
        range: (low, high), inclusive, for float and int; None: any finite value.
        description: one line with the unit, e.g. "sliding surface slope, 1/s".
        choices: for str, the accepted values (None: any string).
    """

    name: str
    type: type
    default: Any
    range: tuple[float, float] | None = None
    description: str = ""
    choices: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"parameter name '{self.name}' must be a Python identifier")
        if self.type not in _TYPES:
            raise ValueError(f"parameter '{self.name}': type must be one of float, int, bool, str; got {self.type}")
        if self.range is not None and (self.type not in (float, int) or not self.range[0] <= self.range[1]):
            raise ValueError(f"parameter '{self.name}': a range (low, high) with low <= high is for float and int")
        self.check(self.default, "default")  # a declaration whose default it refuses is a bug

    def accepted(self) -> str:
        """What the parameter accepts, for messages and listings: "float in [0, 50]"."""
        if self.choices is not None:
            return f"one of {', '.join(self.choices)}"
        if self.range is not None:
            return f"{self.type.__name__} in [{self.range[0]:g}, {self.range[1]:g}]"
        return self.type.__name__

    def check(self, value: Any, law: str = "") -> Any:
        """``value`` as this parameter's type, or ValueError naming the law, the parameter and
        what it accepts. Strings are parsed (command lines, node parameters, YAML): "2", "2.5",
        "true"/"false"; numbers must be finite."""
        where = f"{law}: " if law else ""
        problem = f"{where}parameter {self.name} must be {self.accepted()}, got {value!r}"
        parsed = _parse(value, self.type)
        if parsed is None:
            raise ValueError(problem)
        if self.type in (float, int) and not math.isfinite(parsed):
            raise ValueError(problem)
        if self.range is not None and not self.range[0] <= parsed <= self.range[1]:
            raise ValueError(problem)
        if self.choices is not None and parsed not in self.choices:
            raise ValueError(problem)
        return parsed


def _parse(value: Any, kind: type) -> Any:
    """``value`` as ``kind`` (None if it is not one): what a command line, a YAML file or a ROS
    parameter hands over. bool is not an int here, and an int is a float."""
    if isinstance(value, str):
        text = value.strip()
        if kind is str:
            return value
        if kind is bool:
            return {"true": True, "false": False}.get(text.lower())
        try:
            return kind(text) if kind is float else int(text, 10)
        except ValueError:
            return None
    if isinstance(value, bool):
        return value if kind is bool else None
    if kind is float and isinstance(value, (int, float)):
        return float(value)
    if kind is int and isinstance(value, int):
        return value
    if kind is int and isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, kind) and kind is not bool else None


class Params(Mapping):
    """A law's checked parameter values: ``params.slope`` or ``params["slope"]``; read-only."""

    def __init__(self, values: Mapping[str, Any]):
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"no parameter '{name}'; parameters: {list(self._values)}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a law's parameters are fixed when it is made; make a new law to change them")

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Params({self._values})"


def check_parameters(law: type[ControlLaw], values: Mapping[str, Any]) -> Params:
    """The declared parameters of ``law`` with ``values`` checked and the defaults filled in.

    Raises:
        ValueError: one line naming the law and the unknown or refused parameter.
    """
    declared = {p.name: p for p in law.parameters}
    label = law.label()
    for key in values:
        if key not in declared:
            known = ", ".join(declared) or "none"
            raise ValueError(f"{label}: unknown parameter '{key}'; its parameters: {known}")
    return Params({name: p.check(values[name], label) if name in values else p.default
                   for name, p in declared.items()})


@dataclass(frozen=True)
class Reference:
    """What the maneuver asks for at this tick, in the package's public conventions.

    Attributes:
        joint: arm joint reference (rad, rad/s, rad/s^2; ``ff.arm_joint_names`` order). For an
            end-effector maneuver, the arm's pose at the start (or, with external references,
            the joint trajectory or the pose held when no target is set).
        tasks: end-effector targets (world axes), empty for a joint-space maneuver, or while an
            external end-effector reference is not set.
        base: the base pose and twist to hold (world), for the base DOFs the mode commands.
    """

    joint: JointReference
    tasks: tuple[TaskReference, ...]
    base: BaseReference


@dataclass(frozen=True)
class LawFault:
    """Why a law was stopped: its name, the simulated or control time (s) and one line."""

    law: str
    t: float
    reason: str

    def __str__(self) -> str:
        return f"control law '{self.law}' at t = {self.t:.6g} s: {self.reason}"

    def as_dict(self) -> dict:
        return {"law": self.law, "t": self.t, "reason": self.reason}


class ControlLaw(ABC):
    """Base class of every control law (see the module docstring).

    Class attributes:
        name: the law's name in logs, summaries and ``freeflyer controllers`` (default: the class
            name in snake case).
        parameters: the declared parameters (:class:`Parameter`).

    Attributes a law may set on each tick, for the records (optional):
        joint_reference: the arm reference it tracked (recorded as ``arm_reference``); None: the
            maneuver's ``reference.joint``.
        resolved_rate: a resolved-rate result (its ``sigma_min`` is recorded); None: none.
    """

    name: ClassVar[str] = ""
    parameters: ClassVar[tuple[Parameter, ...]] = ()

    joint_reference: JointReference | None = None
    resolved_rate: ResolvedRateResult | None = None

    def __init__(self, **values: Any):
        self.params = check_parameters(type(self), values)

    @classmethod
    def label(cls) -> str:
        """The law's name: ``name``, or the class name in snake case."""
        return cls.name or re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()

    @classmethod
    def summary(cls) -> str:
        """One line: the first line of the class docstring."""
        doc = (cls.__doc__ or "").strip()
        return doc.splitlines()[0].strip() if doc else ""

    def refuses(self, model: FreeFlyerModel, maneuver: Maneuver) -> str | None:
        """Why this law cannot fly ``maneuver`` on ``model`` (one line with the fix), or None.

        Asked before anything runs, and on a run-time switch to this law. Default: None."""
        return None

    def refuses_mode(self, mode: Mode) -> str | None:
        """Why this law cannot fly ``mode`` (asked after the actuators are checked, on every
        mode request), or None. Default: None."""
        return None

    def prepare(self, model: FreeFlyerModel) -> None:
        """Load what the law needs for ``model`` before it runs (compile kernels, build tables):
        called when a loop or a node is handed the law, so that its first tick, or a switch to it
        at run time, does not stall a control period. Default: the compiled GJM and H*, C* the
        context computes with (compiled on a machine's first use, then loaded from numba's
        cache; nothing without numba)."""
        from freeflyer_control.physics import fastpath

        fastpath.warm("reduced")
        fastpath.warm("gjm")

    def reset(self, context: LawContext) -> None:
        """Start (or restart) from ``context.state``: at the start of a run, after an e-stop is
        reset, and when the loop switches to this law. Clear integrators here. Default: nothing."""

    @abstractmethod
    def effort(self, state: State, reference: Reference, context: LawContext) -> ControlEffort:
        """The effort for the control period [context.t, context.t + context.period).

        Args:
            state: the measured state (Pinocchio's (q, v): base velocity in base_link axes;
                the context gives it in the package's conventions: world axes, joint angles).
            reference: what the maneuver asks for now.
            context: the robot's quantities at this state, computed when asked, once per tick.

        Returns:
            arm joint torques (N m), wheel torques (N m) and a base wrench about the base_link
            origin in world axes (:class:`~freeflyer_control.control.effort.ControlEffort`;
            ``context.zero_effort()`` and ``context.joint_effort(tau)`` build one). The loop
            allocates the base wrench to the actuators the mode has and clips everything to
            their limits.

        During the blend after a mode switch (``blend_time``, 1 s by default) the loop asks for
        the effort twice per tick: first in the mode in force, then in the mode being left
        (``context.leaving`` True, ``context.mode`` the old mode), and mixes the two. A law with
        an integrator advances it only when ``context.leaving`` is False.
        """

    @property
    def warnings(self) -> list[str]:
        """One-time warnings so far (each a line, also logged where it arose). Default: none."""
        return []

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in getattr(self, "params", {}).items())
        return f"{type(self).__name__}({params})"
