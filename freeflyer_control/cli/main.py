"""``freeflyer``: the package's objects from the command line, without ROS.

Each subcommand lives in its own module and registers itself through ``add_parser``; a module
with a ``validate(args)`` checks there everything that can be checked before any work (option
combinations, JSON values, the run's size). :func:`parse` is that layer alone: it parses and
validates without running anything, refusing with one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Sequence

from freeflyer_control import __version__
from freeflyer_control.cli import (
    campaign,
    check,
    controllers,
    gjm,
    osi,
    plan,
    reactionless,
    replay,
    sim,
    testbed,
    warm,
    workspace,
)
from freeflyer_control.inputs.values import Number, Whole
from freeflyer_control.cli.options import EXIT_INTERRUPTED, EXIT_WRITE_FAILED, OneLineParser, write_failure
from freeflyer_control.errors import FreeFlyerError

SUBCOMMANDS = (check, gjm, sim, replay, workspace, reactionless, plan, testbed, osi, campaign, controllers, warm)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="freeflyer",
        description="Free-flying space robots: models, Generalized Jacobians, simulation.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.add_parser(sub)
    return parser


def _prog(args: argparse.Namespace) -> str:
    sub = getattr(args, "plan", None) if args.command == "plan" else None
    return f"freeflyer {args.command}" + (f" {sub}" if sub else "")


# A refusal quotes what the user gave, cut short at its source; this bounds the line whatever
# the source (a 100 kB name must not give a 100 kB line).
MAX_LINE = 1000


def _one_line(exc: BaseException) -> str:
    line = " ".join(str(exc).split())
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 24] + " ... (message cut short)"


def parse(argv: Sequence[str] | None = None,
          parser: argparse.ArgumentParser | None = None) -> argparse.Namespace:
    """Parse and validate ``argv`` without running anything.

    Raises:
        SystemExit(2): after one line on stderr naming the option as typed and the fix.
    """
    parser = parser or build_parser()
    args = parser.parse_args(argv)
    leaf = _leaf_parser(parser, args)
    for action in leaf._actions:  # argparse skips type= for "--opt=--" (Python 3.11: a [])
        value = getattr(args, action.dest, None)
        if isinstance(action.type, (Number, Whole)) and not _typed(action, value):
            leaf.error(f"argument {'/'.join(action.option_strings)}: give {action.type.describe()}")
        if type(action) is argparse._StoreAction and action.nargs is None and isinstance(value, list):
            leaf.error(f"argument {'/'.join(action.option_strings)}: expected one argument")
        if action.option_strings and isinstance(value, str) and not value.strip() and value != action.default:
            # "--q ''" (an unset shell variable) would silently mean the default
            leaf.error(f"argument {'/'.join(action.option_strings)}: empty; give a value, or leave the option out")
    validate = getattr(args, "validate", None)
    if validate is not None:
        try:
            validate(args)
        except (FreeFlyerError, ValueError, OSError) as exc:
            print(f"{_prog(args)}: error: {_one_line(exc)}", file=sys.stderr)
            raise SystemExit(2) from None
    return args


def _leaf_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the subcommand ``args`` came from (``plan reorient``: two levels down)."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or getattr(args, subs[0].dest, None) is None:
            return parser
        parser = subs[0].choices[getattr(args, subs[0].dest)]


def _typed(action: argparse.Action, value: object) -> bool:
    """A parsed number or unset; for an append option, a list of numbers."""
    def number(v: object) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if isinstance(action, argparse._AppendAction):
        return isinstance(value, list) and all(number(v) for v in value)
    return value is None or number(value)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _run(argv)
        sys.stdout.flush()  # inside the try: a reader that went away raises here
        return code
    except BrokenPipeError:
        # `freeflyer check ... | head -1`: the reader has what it wanted. Point stdout at
        # devnull so the interpreter's own flush at exit does not raise again (Python docs,
        # "Note on SIGPIPE").
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _run(argv: Sequence[str] | None) -> int:
    try:
        args = parse(argv)
    except SystemExit as exc:  # a refusal (2), --help or --version (0): the line is printed
        return exc.code if isinstance(exc.code, int) else 2
    except KeyboardInterrupt:  # while checking the input (a campaign's spec loads its robots)
        print("freeflyer: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s: %(message)s",
    )
    try:
        return int(args.run(args) or 0)
    except (FreeFlyerError, ValueError, FileNotFoundError) as exc:
        print(f"{_prog(args)}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: the shell's status for SIGINT, and no traceback
        print(f"freeflyer {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:  # a full disk, a folder gone read-only: one line, not a traceback
        failure = write_failure(exc)
        if failure is None:
            raise
        print(f"{_prog(args)}: error: {failure}", file=sys.stderr)
        return EXIT_WRITE_FAILED


if __name__ == "__main__":
    sys.exit(main())
