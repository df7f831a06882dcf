"""Run-time switching between maneuvering modes (DESIGN.md §4).

One owner of the current mode. A request is refused, with the reason, when the robot lacks the
actuators the mode needs; an accepted one starts a blend: for ``blend_time`` seconds the
controller runs both the old and the new mode's law and mixes their efforts with a smooth ramp,
so the commanded torques have no step (bumpless transfer). Every request is logged with its
time and cause, accepted or not.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from freeflyer_control.inputs.values import shown
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.actuators import mode_support
from freeflyer_control.physics.modes import Mode

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModeSwitch:
    """One request: when, from which mode to which, why, and what came of it."""

    t: float
    from_mode: Mode
    to_mode: Mode
    cause: str
    accepted: bool
    reason: str = ""

    def as_dict(self) -> dict:
        return {"t": self.t, "from": self.from_mode.value, "to": self.to_mode.value,
                "cause": self.cause, "accepted": self.accepted, "reason": self.reason}


class ModeSwitcher:
    """The current mode of one robot, and its history.

    Args:
        ff: the robot (its actuators decide which modes are possible).
        mode: the initial mode (must be possible).
        blend_time: seconds over which efforts are blended after a switch (0: no blending).
    """

    def __init__(self, ff: FreeFlyerModel, mode: Mode | str = Mode.FLOATING, blend_time: float = 1.0):
        if not blend_time >= 0:
            raise ValueError(f"blend_time must be >= 0 s, got {blend_time}")
        self.ff = ff
        mode = Mode.parse(mode)
        reason = mode_support(ff, mode)
        if reason:
            from freeflyer_control.errors import ModeError

            raise ModeError(reason)
        self.mode = mode
        self.previous: Mode | None = None
        self.switched_at = float("-inf")
        self.blend_time = float(blend_time)
        self.history: list[ModeSwitch] = []
        # The control law's own refusals (mode -> reason or None), asked after the actuators:
        # set by the owner of the law (ControlLoop), e.g. a law that cannot fly some mode.
        self.law_refuses = lambda mode: None

    def request(self, mode: Mode | str, t: float, cause: str = "request") -> ModeSwitch:
        """Ask for ``mode`` at time ``t``; returns the logged outcome (never raises for a
        mode the robot cannot fly: the refusal and its reason are in the result)."""
        target = Mode.parse(mode)
        reason = mode_support(self.ff, target) or self.law_refuses(target)
        accepted = reason is None and target is not self.mode
        if reason is None and target is self.mode:
            reason = f"already in {target.value}"
        entry = ModeSwitch(t, self.mode, target, cause, accepted, reason or "")
        self.history.append(entry)
        if accepted:
            self.previous, self.mode, self.switched_at = self.mode, target, float(t)
            log.info("t=%.3f s: mode %s -> %s (%s)", t, entry.from_mode.value, target.value, cause)
        else:
            log.warning("t=%.3f s: mode switch to %s refused: %s", t, target.value, entry.reason)
        return entry

    def blend(self, t: float) -> float:
        """Weight of the new mode's effort at time ``t``: 0 at the switch, 1 after blend_time
        (smoothstep, so the effort's rate of change is continuous too)."""
        if self.previous is None or self.blend_time == 0.0:
            return 1.0
        return blend_weight(t, self.switched_at, self.blend_time)


def blend_weight(t, switched_at, blend_time):
    """Weight of the new mode's effort at ``t`` (s) after a switch at ``switched_at`` (s) with a
    blend of ``blend_time`` > 0 s: smoothstep from 0 to 1.

    Plain scalar arithmetic on purpose: the compiled simulation engine compiles this same
    function (numba), so the blend has one definition.
    """
    x = (t - switched_at) / blend_time
    if x >= 1.0:
        return 1.0
    x = max(x, 0.0)
    return x * x * (3.0 - 2.0 * x)


# ---------------------------------------------------------------------------------------------
# Mode schedules: [(t s, mode)], the run-time switches a simulation or HIL run applies.
#
# Times must be finite, >= 0 and strictly increasing as written. An out-of-order schedule is
# refused rather than sorted: its times are absolute, so "0:floating,20:flying,10:floating" is
# most likely a typo, and sorting it would fly a sequence nobody wrote (fixing it is one edit).
# An entry at t = 0 sets the initial mode; entries at or after the end of a run are never
# flown, which the caller reports (the run's length is not known here).

SCHEDULE_SYNTAX = "TIME:MODE,... with times in s, >= 0 and increasing, e.g. 0:floating,20:flying"


def parse_schedule(text: str, option: str = "mode schedule") -> list[tuple[float, str]]:
    """'0:floating,20:flying' -> [(0.0, 'floating'), (20.0, 'flying')], in the order written.

    Raises:
        ValueError: naming ``option`` (the option or key the text came from), the entry at
            fault and the syntax.
    """
    out = []
    for item in filter(None, (part.strip() for part in str(text).split(","))):
        t, sep, mode = item.partition(":")
        if not sep:
            raise ValueError(f"{option} entry {shown(item)} must look like TIME:MODE ({SCHEDULE_SYNTAX})")
        try:
            time_s = float(t)
        except ValueError:
            raise ValueError(f"{option} entry {shown(item)}: {shown(t)} is not a time in seconds "
                             f"({SCHEDULE_SYNTAX})") from None
        try:
            out.append((time_s, Mode.parse(mode.strip()).value))
        except ValueError:
            raise ValueError(f"{option} entry {shown(item)}: unknown mode {shown(mode.strip())}; modes: "
                             f"{[m.value for m in Mode]}") from None
    if not out:
        raise ValueError(f"{option} is empty; write {SCHEDULE_SYNTAX}")
    problem = schedule_problem(out, option)
    if problem:
        raise ValueError(problem)
    return out


def schedule_problem(schedule, option: str = "mode schedule") -> str | None:
    """Why ``schedule`` ([(t s, mode)]) cannot be flown as written, or None."""
    previous = None
    for t, mode in schedule:
        entry = f"{t:g}:{mode}"
        if not (isinstance(t, (int, float)) and math.isfinite(t)) or t < 0:
            return f"{option} entry {shown(entry)}: the time must be a finite number of seconds >= 0"
        if previous is not None and t <= previous:
            return (f"{option} entry {shown(entry)} comes after an entry at {previous:g} s; give the "
                    f"entries once each in increasing time ({SCHEDULE_SYNTAX})")
        previous = t
    return None


def initial_mode(mode: str, schedule) -> tuple[str, list[tuple[float, str]]]:
    """The mode a run starts in and the switches left to apply: an entry at t = 0 of
    ``schedule`` replaces ``mode``."""
    remaining = list(schedule)
    if remaining and remaining[0][0] == 0.0:
        return Mode.parse(remaining.pop(0)[1]).value, remaining
    return Mode.parse(mode).value, remaining


def entries_never_flown(schedule, duration: float) -> list[tuple[float, str]]:
    """The entries of ``schedule`` at or after the end of a ``duration`` s run."""
    return [(t, m) for t, m in schedule if t >= duration]
