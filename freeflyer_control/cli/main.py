"""``freeflyer``: the package's objects from the command line, without ROS.

Each subcommand lives in its own module and registers itself through ``add_parser``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Sequence

from freeflyer_control import __version__
from freeflyer_control.cli import check, gjm, plan, sim, testbed, workspace
from freeflyer_control.errors import FreeFlyerError

SUBCOMMANDS = (check, gjm, sim, workspace, plan, testbed)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="freeflyer",
        description="Free-flying space robots: models, Generalized Jacobians, simulation.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s: %(message)s",
    )
    try:
        return int(args.run(args) or 0)
    except (FreeFlyerError, ValueError, FileNotFoundError) as exc:
        print(f"freeflyer {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: the shell's status for SIGINT, and no traceback
        print(f"freeflyer {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
