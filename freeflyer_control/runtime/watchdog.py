"""Staleness of inputs: the first thing a controller on real hardware must check."""

from __future__ import annotations

from dataclasses import dataclass, field


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
        """Inputs never received or older than the timeout, with their age in the message."""
        out = []
        for name in self.inputs:
            t = self.last.get(name)
            if t is None:
                out.append(f"{name} never received")
            elif now - t > self.timeout:
                out.append(f"{name} stale for {now - t:.3f} s (timeout {self.timeout:.3f} s)")
        return out

    def reset(self) -> None:
        self.last.clear()
