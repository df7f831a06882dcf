"""Staleness of inputs, and steps of the clock that would hide it.

A watchdog compares arrival times with the clock. That comparison is only as good as the clock:
when the clock steps back (a restarted simulation clock, a looping bag, an NTP step) every input
looks younger than it is, by the size of the step, and a plain ``now - last > timeout`` stays
silent for that long. A forward jump makes every input look stale at once and shifts every
time-based reference. :class:`Watchdog` itself reports a negative age as a clock step, and
:class:`ClockGuard` watches the ticks of a server, so the servers can start again from scratch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# Ticks and the inputs between them read one clock, so no reading may come before the last tick;
# this much is allowed for round-off in times computed as k * period.
CLOCK_BACK_TOLERANCE = 1e-6   # s
# Ticks this far apart mean the clock jumped forward, or the node did not run for that long:
# either way the ages and reference times kept from before are not to be trusted.
MAX_TICK_GAP = 0.5            # s


def clock_step_reason(last: float, now: float) -> str | None:
    """Why ``now`` (s) cannot follow ``last`` (s) on one clock (a sentence), or None."""
    if not math.isfinite(now):
        return f"clock reads {now} s"
    if now < last - CLOCK_BACK_TOLERANCE:
        return f"clock stepped back by {last - now:.3f} s"
    return None


@dataclass
class Watchdog:
    """Tracks when each named input last arrived.

    Args:
        timeout: seconds after which an input is stale.
        inputs: names of the inputs that must all be fresh.
    """

    timeout: float
    inputs: tuple[str, ...]
    last: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise ValueError(f"watchdog timeout must be > 0 s, got {self.timeout}")

    def feed(self, name: str, now: float) -> None:
        self.last[name] = now

    def stale(self, now: float) -> list[str]:
        """Inputs never received, older than the timeout, or received "after" ``now`` (the clock
        stepped back since: their age is unknown), with the age or step in the message."""
        out = []
        for name in self.inputs:
            t = self.last.get(name)
            if t is None:
                out.append(f"{name} never received")
                continue
            step = clock_step_reason(t, now)
            if step:
                out.append(f"{name} received before the {step}")
            elif now - t > self.timeout:
                out.append(f"{name} stale for {now - t:.3f} s (timeout {self.timeout:.3f} s)")
        return out

    def reset(self) -> None:
        self.last.clear()


@dataclass
class ClockGuard:
    """Watches the times a server is called with for steps of its clock.

    ``observe(now, tick=True)`` at every tick, ``observe(now)`` at every input between ticks.
    Returns the reason of a step (``"clock stepped back by 10.000 s"``, ``"clock jumped forward
    by 10.000 s ..."``, ``"clock reads nan s"``), else None. A step back is any reading before
    the last tick; a forward jump is a tick more than ``max_gap`` s after the previous one (an
    input cannot tell a jump from a long wait for the next message). After a step the guard
    follows the new clock.
    """

    max_gap: float = MAX_TICK_GAP
    last_tick: float | None = None
    steps: int = 0

    def observe(self, now: float, tick: bool = False) -> str | None:
        reason = None
        if self.last_tick is not None:
            reason = clock_step_reason(self.last_tick, now)
            if reason is None and tick and now - self.last_tick > self.max_gap:
                reason = (f"clock jumped forward by {now - self.last_tick:.3f} s (more than {self.max_gap:.3f} s "
                          "between ticks: a clock step, or the node stalled)")
        elif not math.isfinite(now):
            reason = f"clock reads {now} s"
        if math.isfinite(now) and (tick or reason):
            self.last_tick = now
        self.steps += reason is not None
        return reason
