"""Numbers and choices typed by a user (command-line options, JSON on the command line, spec
entries), checked as they are parsed, with refusals that name the input and the accepted range.

:class:`Number` and :class:`Whole` are argparse ``type=`` callables (argparse names the option
as typed in its refusal) whose ``accepts`` / ``describe`` serve the other front ends too.
"""

from __future__ import annotations

import argparse
import math


class UsageError(ValueError):
    """A refused combination of options; the message names the options as typed and the fix."""


def _interval(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> str:
    left = "(" if lo_open or lo is None else "["
    right = ")" if hi_open or hi is None else "]"
    lo_text = "-inf" if lo is None else f"{lo:g}"
    hi_text = "inf" if hi is None else f"{hi:g}"
    return f"{left}{lo_text}, {hi_text}{right}"


class Number:
    """argparse ``type=``: a finite float in [lo, hi] (lo excluded when ``lo_open``).

    ``unit`` is named in the refusal, and ``why`` the range is what it is; ``accepts(x)`` is the
    same test on a parsed value.
    """

    def __init__(self, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
                 hi_open: bool = False, unit: str = "", why: str = ""):
        self.lo, self.hi, self.lo_open, self.hi_open, self.unit = lo, hi, lo_open, hi_open, unit
        self.why = why
        self.__name__ = "number"  # argparse names the type in some messages

    def accepts(self, x: float) -> bool:
        if not math.isfinite(x):
            return False
        if self.lo is not None and (x <= self.lo if self.lo_open else x < self.lo):
            return False
        return self.hi is None or (x < self.hi if self.hi_open else x <= self.hi)

    def describe(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        why = f" ({self.why})" if self.why else ""
        if self.lo is None and self.hi is None:
            return f"a finite number{unit}"
        return f"a number in {_interval(self.lo, self.hi, self.lo_open, self.hi_open)}{unit}{why}"

    def __call__(self, text: str) -> float:
        try:
            x = float(text)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"give {self.describe()}, got {text!r}") from None
        if not self.accepts(x):
            raise argparse.ArgumentTypeError(f"give {self.describe()}, got {text!r}")
        return x


class Whole:
    """argparse ``type=``: a whole number in [lo, hi]."""

    def __init__(self, lo: int | None = None, hi: int | None = None, *, what: str = ""):
        self.lo, self.hi, self.what = lo, hi, what
        self.__name__ = "whole number"

    def accepts(self, n: int) -> bool:
        return (self.lo is None or n >= self.lo) and (self.hi is None or n <= self.hi)

    def describe(self) -> str:
        what = f" ({self.what})" if self.what else ""
        if self.hi is None:
            return f"a whole number >= {self.lo}{what}"
        return f"a whole number from {self.lo} to {self.hi}{what}"

    def __call__(self, text: str) -> int:
        s = str(text).strip()
        try:
            n = int(s, 10) if s.lstrip("+-").isdigit() and len(s) <= 40 else None
        except ValueError:  # "--1", non-ASCII digits
            n = None
        if n is None or not self.accepts(n):
            raise argparse.ArgumentTypeError(f"give {self.describe()}, got {text!r}")
        return n


SEED = Whole(0, 2**63 - 1, what="a random seed")
ANGLE = Number(-1e3, 1e3, unit="rad")  # finite; beyond a thousand radians is a typo, not a plan


def shown(value: object, limit: int = 60) -> str:
    """``value`` for a message, cut to one short line: text quoted (``'abc'``), anything else as
    Python writes it (``2``, ``1e+300``, ``True``, ``[1, 2]``), so a number is not taken for text."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return text[: limit - 4] + "...'" if isinstance(value, str) else text[: limit - 3] + "..."


def shown_path(path) -> str:
    """A file path for a message: relative to the working folder when it lies inside it (as the
    user most likely wrote it), else as it is."""
    import os

    text = str(path)
    try:
        relative = os.path.relpath(text)
    except ValueError:
        return text
    return relative if not relative.startswith("..") and os.path.isabs(text) else text
