"""The five maneuvering modes of Wilde et al. (2018), as data.

| mode               | commanded base DOFs | free base DOFs | conserved (used by the GJM)        |
|--------------------|---------------------|----------------|------------------------------------|
| floating           | none                | all            | P and L (about the system CoM)     |
| rotation-floating  | attitude            | translation    | P (L of the whole system, wheels   |
|                    |                     |                | included, too)                     |
| rotation-flying    | attitude            | translation    | P                                  |
| translation-flying | translation         | attitude       | L_B, about the base_link origin    |
| flying             | all                 | none           | nothing                            |

Assumptions (also in docs/modes.md):

* floating: no external wrench; wheels (if any) are unactuated.
* rotation-floating: attitude is driven by internal torques (reaction wheels) only.
* rotation-flying: attitude is driven by thruster couples: pure torque, zero net force.
* translation-flying: thrust acts through the base_link origin (put it at the base CoM) and
  exerts no torque about it. Then dL_B/dt = -v_B x P, so L_B is conserved exactly while the
  base origin is held still (v_B = 0) or moves parallel to P; otherwise the GJM's drift term
  must be fed the current L_B (the default), which it is by every caller in this package.
* flying: all six (planar: three) base DOFs commanded; nothing is conserved.

The free base DOFs of a mode are eliminated from the dynamics by the rows of the floating-base
equations on which no actuator acts; the same rows, integrated once, are the conserved momenta.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field

import numpy as np

from freeflyer_control.errors import ModeError
from freeflyer_control.inputs.values import shown


class Mode(str, enum.Enum):
    FLOATING = "floating"
    ROTATION_FLOATING = "rotation-floating"
    ROTATION_FLYING = "rotation-flying"
    TRANSLATION_FLYING = "translation-flying"
    FLYING = "flying"

    @classmethod
    def parse(cls, value: "str | Mode") -> "Mode":
        """Mode from its name (``rotation-floating``; underscores are accepted too)."""
        if isinstance(value, Mode):
            return value
        # Exact names are looked up directly: parse() runs on every GJM / reduced-dynamics
        # call, and the normalising loop below costs ~1 us.
        mode = _MODE_BY_NAME.get(value) if isinstance(value, str) else None
        if mode is not None:
            return mode
        key = str(value).strip().lower().replace("_", "-")
        for mode in cls:
            if mode.value == key:
                return mode
        raise ModeError(f"unknown mode {shown(value)}; modes: {[m.value for m in cls]}")

    def __str__(self) -> str:
        return self.value


_MODE_BY_NAME: dict[str, Mode] = {m.value: m for m in Mode}


@dataclass(frozen=True)
class ModeSpec:
    """What a mode commands, what it leaves to momentum, and what it needs.

    Attributes:
        mode: the mode.
        commands_translation, commands_attitude: which base DOF groups are commanded.
        needs_wheels: attitude is actuated by reaction wheels.
        needs_thruster_torque: thrusters must produce pure torques (couples).
        needs_thruster_force: thrusters must produce pure forces.
        conserved: human-readable names of the conserved quantities.
    """

    mode: Mode
    commands_translation: bool
    commands_attitude: bool
    needs_wheels: bool
    needs_thruster_torque: bool
    needs_thruster_force: bool
    conserved: tuple[str, ...]
    actuation: str


MODE_SPECS: dict[Mode, ModeSpec] = {
    Mode.FLOATING: ModeSpec(Mode.FLOATING, False, False, False, False, False,
                            ("linear momentum P", "angular momentum L about the system CoM"),
                            "joint motors only"),
    Mode.ROTATION_FLOATING: ModeSpec(Mode.ROTATION_FLOATING, False, True, True, False, False,
                                     ("linear momentum P",
                                      "angular momentum L of the system incl. wheels"),
                                     "joint motors + reaction wheels (internal torques)"),
    Mode.ROTATION_FLYING: ModeSpec(Mode.ROTATION_FLYING, False, True, False, True, False,
                                   ("linear momentum P",),
                                   "joint motors + thruster couples (pure external torque)"),
    Mode.TRANSLATION_FLYING: ModeSpec(Mode.TRANSLATION_FLYING, True, False, False, False, True,
                                      ("angular momentum L_B about the base origin "
                                       "(exact while the base origin is still)",),
                                      "joint motors + thruster forces through the base origin"),
    Mode.FLYING: ModeSpec(Mode.FLYING, True, True, False, True, True, (),
                          "joint motors + thrusters (full base wrench)"),
}


def spec(mode: "Mode | str") -> ModeSpec:
    return MODE_SPECS[Mode.parse(mode)]


@dataclass(frozen=True)
class BasePartition:
    """Indices of the base velocity coordinates (Pinocchio local order) by role in a mode.

    Instances are shared (see :func:`base_partition`): the index arrays are read-only.

    Attributes:
        commanded: base coordinates whose velocity the mode commands.
        free: base coordinates eliminated by the conserved momenta.
        names: world-frame names of the commanded coordinates (GJM column labels).
        commanded_slice, free_slice: the same indices as slices. Each group is contiguous
            (translation block, attitude block, or both), and a slice gives views instead of
            the copies fancy indexing makes, which matters in the per-tick hot paths.
    """

    commanded: np.ndarray
    free: np.ndarray
    names: tuple[str, ...]
    commanded_slice: slice = field(init=False, repr=False, compare=False)
    free_slice: slice = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "commanded_slice", _contiguous_slice(self.commanded))
        object.__setattr__(self, "free_slice", _contiguous_slice(self.free))


def _contiguous_slice(indices: np.ndarray) -> slice:
    if indices.size == 0:
        return slice(0, 0)
    start, stop = int(indices[0]), int(indices[-1]) + 1
    if not np.array_equal(indices, np.arange(start, stop)):
        raise ValueError(f"base coordinates {indices.tolist()} are not contiguous")
    return slice(start, stop)


def base_partition(base: str, mode: "Mode | str") -> BasePartition:
    """Split the base coordinates of a ``planar`` or ``spatial`` base for ``mode``."""
    return _base_partition(base, Mode.parse(mode))


# Cached (2 bases x 5 modes): the GJM and the reduced dynamics ask for the partition on every
# call, and building it costs several microseconds. The result is immutable.
@functools.lru_cache(maxsize=None)
def _base_partition(base: str, mode: Mode) -> BasePartition:
    s = MODE_SPECS[mode]
    if base == "planar":
        translation, attitude = [0, 1], [2]
        t_names, a_names = ("base_vx", "base_vy"), ("base_wz",)
    else:
        translation, attitude = [0, 1, 2], [3, 4, 5]
        t_names, a_names = ("base_vx", "base_vy", "base_vz"), ("base_wx", "base_wy", "base_wz")
    commanded: list[int] = []
    names: tuple[str, ...] = ()
    free: list[int] = []
    for group, group_names, is_cmd in (
        (translation, t_names, s.commands_translation),
        (attitude, a_names, s.commands_attitude),
    ):
        if is_cmd:
            commanded += group
            names += group_names
        else:
            free += group
    commanded_arr, free_arr = np.array(commanded, dtype=int), np.array(free, dtype=int)
    commanded_arr.setflags(write=False)  # shared by every caller: nobody may edit them
    free_arr.setflags(write=False)
    return BasePartition(commanded_arr, free_arr, names)
