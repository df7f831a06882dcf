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
import errno
import re
import signal
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


# What writing an output can fail with: a full disk or quota, a file-size limit, a folder made
# read-only or taken away meanwhile, a failing device. A command says so in one line (exit 1).
WRITE_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO)
EXIT_WRITE_FAILED = 1
EXIT_INTERRUPTED = 128 + signal.SIGINT  # the shell's status for a Ctrl-C


def write_failure(exc: BaseException) -> str | None:
    """"cannot write FILE: reason" when ``exc`` is a failed write of an output, else None."""
    if not isinstance(exc, OSError) or exc.errno not in WRITE_ERRORS:
        return None
    where = f" {exc.filename}" if exc.filename else ""
    return f"cannot write{where}: {exc.strerror or exc}"


def require_matplotlib(option: str) -> None:
    """Refuse ``option`` (a picture the command would draw after all its work) up front when
    matplotlib is missing."""
    from freeflyer_control.inputs.values import UsageError
    from freeflyer_control.sim.plots import matplotlib_missing

    missing = matplotlib_missing()
    if missing is not None:
        raise UsageError(f"{option} draws with matplotlib, which is not installed ({missing}): pip install "
                         "matplotlib, or install this package with its 'pypi' extra; or drop the option")
