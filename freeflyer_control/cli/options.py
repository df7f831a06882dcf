"""Option values checked as they are parsed, and the one-line refusal every subcommand shares.

A value that argparse converts with :class:`Number` or :class:`Whole` is refused by argparse
itself, which names the option as the user typed it (``argument --rate: ...``). Checks that
need several options or the robot model raise :class:`UsageError` from a subcommand's
``validate(args)``; :func:`freeflyer_control.cli.main.parse` turns both into one line on stderr
and exit status 2.
"""

from __future__ import annotations

import argparse
import math
import sys


class UsageError(ValueError):
    """A refused combination of options; the message names the options as typed and the fix."""


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose refusals are one line (argparse prints the usage block first,
    which buries the reason in a script's log); ``--help`` still shows the usage."""

    def error(self, message: str):  # noqa: D401 - argparse's signature
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def warn(command: str, message: str) -> None:
    """One warning line on stderr, in the form of the refusals."""
    print(f"freeflyer {command}: warning: {message}", file=sys.stderr)


def _interval(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> str:
    left = "(" if lo_open or lo is None else "["
    right = ")" if hi_open or hi is None else "]"
    lo_text = "-inf" if lo is None else f"{lo:g}"
    hi_text = "inf" if hi is None else f"{hi:g}"
    return f"{left}{lo_text}, {hi_text}{right}"


class Number:
    """argparse ``type=``: a finite float in [lo, hi] (lo excluded when ``lo_open``).

    ``unit`` is named in the refusal; ``accepts(x)`` is the same test on a parsed value.
    """

    def __init__(self, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
                 hi_open: bool = False, unit: str = ""):
        self.lo, self.hi, self.lo_open, self.hi_open, self.unit = lo, hi, lo_open, hi_open, unit
        self.__name__ = "number"  # argparse names the type in some messages

    def accepts(self, x: float) -> bool:
        if not math.isfinite(x):
            return False
        if self.lo is not None and (x <= self.lo if self.lo_open else x < self.lo):
            return False
        return self.hi is None or (x < self.hi if self.hi_open else x <= self.hi)

    def describe(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        if self.lo is None and self.hi is None:
            return f"a finite number{unit}"
        return f"a number in {_interval(self.lo, self.hi, self.lo_open, self.hi_open)}{unit}"

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
