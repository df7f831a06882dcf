"""Run-time switching between maneuvering modes (DESIGN.md §4).

One owner of the current mode. A request is refused, with the reason, when the robot lacks the
actuators the mode needs; an accepted one starts a blend: for ``blend_time`` seconds the
controller runs both the old and the new mode's law and mixes their efforts with a smooth ramp,
so the commanded torques have no step (bumpless transfer). Every request is logged with its
time and cause, accepted or not.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

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

    def request(self, mode: Mode | str, t: float, cause: str = "request") -> ModeSwitch:
        """Ask for ``mode`` at time ``t``; returns the logged outcome (never raises for a
        mode the robot cannot fly: the refusal and its reason are in the result)."""
        target = Mode.parse(mode)
        reason = mode_support(self.ff, target)
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
        x = (t - self.switched_at) / self.blend_time
        if x >= 1.0:
            return 1.0
        x = max(x, 0.0)
        return x * x * (3.0 - 2.0 * x)
