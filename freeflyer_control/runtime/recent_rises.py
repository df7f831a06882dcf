"""Which of a node's cumulative counters rose lately: a diagnostics level that clears again.

A node's ``/diagnostics`` carry counters for the whole run (step overruns, refused commands,
periods the lockstep schedule dropped). The status level says how the node is doing *now*: WARN
while one of them rose within the last ``hold`` seconds, OK again after. A level latched at WARN
by one overrun at start-up (a cold cache, a compile) would hide the next problem from whoever
watches it (rqt_robot_monitor, a diagnostic aggregator); the counters still say it happened.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

RISE_HOLD = 10.0   # s a risen counter keeps the level at WARN: long enough to be seen at 1-2 Hz


@dataclass
class RecentRises:
    """Tracks counters' rises on a monotonic clock.

    Args:
        hold: s a rise counts as recent (> 0).
    """

    hold: float = RISE_HOLD
    # name -> (the count last seen, s of its last rise or None)
    _seen: dict[str, tuple[int, float | None]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        if not self.hold > 0:
            raise ValueError(f"hold must be > 0 s, got {self.hold}")

    def update(self, now: float, counts: Mapping[str, int]) -> list[str]:
        """The names among ``counts`` (cumulative counts) that rose within the last ``hold`` s
        at ``now`` (s, a monotonic clock), in ``counts``' order.

        A counter's first reading counts as a rise if it is above zero (it rose before anyone
        looked). A counter that went down was reset: its new value is the base, not a rise.
        """
        recent = []
        for name, count in counts.items():
            count = int(count)
            before, last = self._seen.get(name, (0, None))
            if count > before:
                last = now
            self._seen[name] = (count, last)
            if last is not None and now - last < self.hold:
                recent.append(name)
        return recent

    def message(self, names: list[str]) -> str:
        """``names`` (from :meth:`update`) as a status message's tail, e.g. ``"step_overruns
        rose in the last 10 s"``; empty when there are none."""
        return f"{', '.join(names)} rose in the last {self.hold:g} s" if names else ""
