"""``freeflyer replay RUN_DIR``: the 3-D replay (replay.html) of an earlier run, from its records."""

from __future__ import annotations

import argparse
from pathlib import Path

from freeflyer_control.inputs.values import UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="write replay.html, a run's 3-D replay in any browser, from its folder")
    p.add_argument("run_dir", metavar="RUN_DIR",
                   help="the --out folder of a freeflyer sim run (or a campaign's worst/run_NNNNN)")
    p.add_argument("--out", metavar="FILE", help="the page to write (default RUN_DIR/replay.html)")
    p.set_defaults(run=run, validate=validate)


def validate(args: argparse.Namespace) -> None:
    """The folder holds a run's records and the viewer is installed; --out can be written."""
    from freeflyer_control.sim.replay import replay_missing
    from freeflyer_control.sim.run_record import RUN_JSON

    folder = Path(args.run_dir)
    if not folder.is_dir():
        raise UsageError(f"RUN_DIR {args.run_dir}: not a folder; give the --out folder of a freeflyer sim run")
    if not (folder / RUN_JSON).is_file():
        raise UsageError(f"RUN_DIR {args.run_dir}: no {RUN_JSON} (not a run folder, or written before run.json "
                         "existed: fly it again)")
    if args.out is not None:
        out = Path(args.out)
        if out.is_dir() or not out.parent.is_dir():
            raise UsageError(f"--out {args.out}: give a file in an existing folder (e.g. {folder / 'replay.html'})")
    missing = replay_missing()
    if missing:
        raise UsageError(missing)


def run(args: argparse.Namespace) -> int:
    from freeflyer_control.sim.replay import write_replay

    path = write_replay(args.run_dir, args.out)
    print(f"wrote {path.resolve()} (open it in a browser)")
    return 0
