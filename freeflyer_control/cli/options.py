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
import sys


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose refusals are one line (argparse prints the usage block first,
    which buries the reason in a script's log); ``--help`` still shows the usage."""

    def error(self, message: str):  # noqa: D401 - argparse's signature
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def warn(command: str, message: str) -> None:
    """One warning line on stderr, in the form of the refusals."""
    print(f"freeflyer {command}: warning: {message}", file=sys.stderr)
