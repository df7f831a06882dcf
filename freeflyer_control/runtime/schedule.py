"""The lockstep loop's schedule: periods on a monotonic clock, late ones run at once, a long
stall absorbed by restarting the schedule.

A period starts at ``t0 + k * period`` (s, the monotonic clock). A loop that wakes late (the
machine stalled: a VM pause, a page fault, another process holding the core) runs the late
periods back to back until it is on time again, so the simulation keeps wall-clock time through
short stalls. Behind by more than ``max_lag`` it restarts the schedule at the current time: the
periods of the lag are dropped (each a period of simulated time the plant never steps, so the
simulation then runs that much behind wall-clock time), and the loop has its whole ``max_lag``
of slack again.

Dropping only the periods beyond the bound (the loop then stays at the bound until it catches
up; git a90f801) was tried and measured for issue 22 on the emulated slower machine, paired with
the restart: it met the 500 Hz target in 7 of 10 runs against 6 of 10, and lost far more in 2
of 3 pairs at a quarter of a core (33.9 % and 8.5 % of the periods against 8.6 % and 0.0 %), its
CPU per period rising while it ran flat out at the bound. The restart stays (the CHANGELOG's
benchmark history has the runs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_LAG = 0.05   # s behind schedule that is caught up by running late periods at once


@dataclass
class PeriodSchedule:
    """Start times of a loop's periods.

    Args:
        period: s between period starts (> 0).
        t0: s, the monotonic clock's reading at the first period's start.
        max_lag: s behind schedule the loop catches up; beyond it the schedule restarts.
    """

    period: float
    t0: float
    max_lag: float = MAX_LAG
    k: int = 0                      # the next period's index
    dropped: int = 0                # periods dropped so far
    drops: int = 0                  # restarts: times the lag passed max_lag

    def __post_init__(self):
        if not self.period > 0:
            raise ValueError(f"period must be > 0 s, got {self.period}")
        if not self.max_lag >= 0:
            raise ValueError(f"max_lag must be >= 0 s, got {self.max_lag}")

    def wait(self, now: float) -> tuple[float, int]:
        """Where the next period stands at ``now`` (s, the monotonic clock): (s to sleep before
        it starts, 0 when it is due or late; periods dropped just now by a restart)."""
        delay = self.t0 + self.k * self.period - now
        if delay >= -self.max_lag:
            return max(delay, 0.0), 0
        # Restart: the next period starts now; those due before it (the lag's whole periods)
        # are dropped.
        skip = math.floor(-delay / self.period)
        self.t0, self.k = now, 0
        self.dropped += skip
        self.drops += 1
        return 0.0, skip

    def ran(self) -> None:
        """The period :meth:`wait` announced has run."""
        self.k += 1

    def lag(self, now: float) -> float:
        """s the next period is behind its start at ``now`` (negative: ahead)."""
        return now - (self.t0 + self.k * self.period)
