"""``freeflyer controllers [NAME|MODULE:CLASS]``: the control laws that can be named, one line
each (the package's own and those installed packages register); with a law, its parameters."""

from __future__ import annotations

import argparse

from freeflyer_control.laws import ENTRY_POINT_GROUP, available, clashes, describe, load_law_class, parameter_table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("controllers", help="list the control laws --controller can name, or one law's parameters")
    p.add_argument("law", nargs="?", metavar="NAME|MODULE:CLASS",
                   help="show this law's parameters (name, default, accepted values, description)")
    p.set_defaults(run=run, validate=validate)


def validate(args: argparse.Namespace) -> None:
    if args.law is not None:
        args.law_class = load_law_class(args.law)  # refuses an unknown name or a bad path in one line


def run(args: argparse.Namespace) -> int:
    if args.law is None:
        for entry in available().values():
            print(describe(entry))
        for line in clashes():
            print(f"note: {line}")
        print(f"(a law of your own: --controller my_module:MyLaw, or register it under the entry-point group "
              f"{ENTRY_POINT_GROUP}; freeflyer controllers NAME shows a law's parameters)")
        return 0
    cls = args.law_class
    print(f"{cls.label()}: {cls.summary()}")
    rows = parameter_table(cls)
    if not rows:
        print("  no parameters")
    widths = [max(len(r[i]) for r in rows) for i in range(3)] if rows else []
    for name, default, accepted, description in rows:
        print(f"  {name:<{widths[0]}}  {default:<{widths[1]}}  {accepted:<{widths[2]}}  {description}")
    return 0
