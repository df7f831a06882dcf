"""The one-line refusal and warning every subcommand shares.

A value that argparse converts with :class:`~freeflyer_control.inputs.values.Number` or
:class:`~freeflyer_control.inputs.values.Whole` is refused by argparse itself, which names the option as the user typed it (``argument --rate: ...``). Checks that
need several options or the robot model raise
:class:`~freeflyer_control.inputs.values.UsageError` from a subcommand's
``validate(args)``; :func:`freeflyer_control.cli.main.parse` turns both into one line on stderr
and exit status 2.
"""

from __future__ import annotations

import argparse
import re
import sys

# What argparse takes for a negative number (a value, not an option): its own test knows only
# -5 and -0.5, so "--duration -inf", "--internal-force -1e3" and "--mode-schedule -0:flying"
# failed with "expected one argument". Any token starting with a minus and a digit, a point
# and a digit, or inf / nan is a value; options are words.
NEGATIVE_VALUE = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose refusals are one line (argparse prints the usage block first,
    which buries the reason in a script's log); ``--help`` still shows the usage. Negative
    numbers in any notation are values (:data:`NEGATIVE_VALUE`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_VALUE

    def error(self, message: str):  # noqa: D401 - argparse's signature
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def warn(command: str, message: str) -> None:
    """One warning line on stderr, in the form of the refusals."""
    print(f"freeflyer {command}: warning: {message}", file=sys.stderr)
