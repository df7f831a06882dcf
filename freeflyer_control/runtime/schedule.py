"""The lockstep loop's schedule: periods on a monotonic clock, late ones run at once, the lag
bounded.

A period starts at ``t0 + k * period`` (s, the monotonic clock). A loop that wakes late (the
machine stalled: a VM pause, a page fault, another process holding the core) runs the late
periods back to back until it is on time again, so the simulation keeps wall-clock time through
short stalls. Behind by more than ``max_lag`` it drops the fewest periods that bring it back to
``max_lag`` behind: each dropped period is a period of simulated time the plant never steps, so
the simulation then runs that much behind wall-clock time.

Dropping only the excess matters on a loaded machine. Before (issue 22), a lag past the bound
restarted the schedule, dropping the whole lag: a lag of 51 ms at 500 Hz cost 26 periods where
one brings it back within the bound; on the emulated slower machine those restarts were most of
the periods the lockstep loop lost.
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
        max_lag: s behind schedule the loop may be; beyond it periods are dropped.
    """

    period: float
    t0: float
    max_lag: float = MAX_LAG
    k: int = 0                      # the next period's index
    dropped: int = 0                # periods dropped so far
    drops: int = 0                  # times the lag passed max_lag

    def __post_init__(self):
        if not self.period > 0:
            raise ValueError(f"period must be > 0 s, got {self.period}")
        if not self.max_lag >= 0:
            raise ValueError(f"max_lag must be >= 0 s, got {self.max_lag}")

    def wait(self, now: float) -> tuple[float, int]:
        """Where the next period stands at ``now`` (s, the monotonic clock): (s to sleep before
        it starts, 0 when it is due or late; periods dropped just now to bound the lag)."""
        delay = self.t0 + self.k * self.period - now
        if delay >= -self.max_lag:
            return max(delay, 0.0), 0
        # The fewest whole periods that bring the lag back within max_lag (the 1e-9 keeps an
        # exact multiple, up to the clock's round-off, from dropping one more).
        skip = math.ceil((-delay - self.max_lag) / self.period - 1e-9)
        self.k += skip
        self.dropped += skip
        self.drops += 1
        return 0.0, skip

    def ran(self) -> None:
        """The period :meth:`wait` announced has run."""
        self.k += 1

    def lag(self, now: float) -> float:
        """s the next period is behind its start at ``now`` (negative: ahead)."""
        return now - (self.t0 + self.k * self.period)
