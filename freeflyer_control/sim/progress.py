"""One progress bar for every long run (``freeflyer sim`` on either engine, ``--via-testbed``).

A run calls ``progress(t, duration)`` (simulated seconds) as often as it likes; the bar redraws
at most every ``interval`` s of wall time: in place on a terminal, as one line every
``log_interval`` s otherwise (a CI log gets a handful of lines, not thousands). From the rate
measured between two redraws it estimates the time left, shows it, and warns once on stderr
when the run will take longer than ``warn_after`` s, so an absurd ``--rate`` or ``--duration``
is noticed at once (Ctrl-C stops the run).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable


def human_duration(seconds: float) -> str:
    """'42 s', '7.5 min', '3.2 h', '12 days'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"


class ProgressBar:
    """``progress(t, duration)`` callback drawing a bar on ``stream`` (stderr)."""

    MEASURE = 1.0  # wall s of pace before the run time is estimated

    def __init__(self, stream=None, width: int = 30, *, command: str = "sim",
                 interval: float = 0.5, log_interval: float = 10.0, warn_after: float = 120.0,
                 clock: Callable[[], float] = time.perf_counter):
        self.stream = stream if stream is not None else sys.stderr
        self.width, self.command, self.clock = width, command, clock
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = interval if self.tty else log_interval
        self.warn_after = warn_after
        self.shown = self.warned = False
        self._last_draw = clock()
        self._first: tuple[float, float] | None = None  # (wall, t) of the first update

    def remaining(self, t: float, duration: float, now: float) -> float | None:
        """Wall seconds left, from the pace since the first update (None before a pace is known)."""
        if self._first is None:
            return None
        wall0, t0 = self._first
        if t <= t0 or now <= wall0:
            return None
        return (now - wall0) / (t - t0) * max(duration - t, 0.0)

    def __call__(self, t: float, duration: float) -> None:
        now = self.clock()
        done = duration <= 0 or t >= duration
        if self._first is None:
            self._first = (now, t)
        left = None if done else self.remaining(t, duration, now)
        if (left is not None and left > self.warn_after and not self.warned
                and now - self._first[0] >= self.MEASURE):
            self.warned = True
            self._line(f"freeflyer {self.command}: warning: this run will take about "
                       f"{human_duration(left)} more at the pace measured so far; Ctrl-C stops it "
                       "(lower --rate or --duration for a shorter run)")
        if not done and now - self._last_draw < self.interval:
            return
        self._last_draw = now
        frac = min(max(t / duration, 0.0), 1.0) if duration > 0 else 1.0
        filled = int(round(frac * self.width))
        text = f"[{'#' * filled}{'.' * (self.width - filled)}] {t:7.1f} / {duration:.1f} s"
        if left is not None:
            text += f", about {human_duration(left)} left"
        if self.tty:
            self.stream.write("\r" + text + "\033[K" + ("\n" if done else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self.shown = True

    def _line(self, text: str) -> None:
        if self.tty and self.shown:
            text = "\r\033[K" + text
        self.stream.write(text + "\n")


def report_progress(progress, t: float, duration: float, last: list[float]) -> None:
    """Call ``progress(t, duration)`` at most every half second of wall time (``last``: [wall s
    of the previous call], updated), the pace every engine reports at: the bar redraws no faster."""
    if progress is not None and time.perf_counter() - last[0] > 0.5:
        last[0] = time.perf_counter()
        progress(t, duration)
