"""``freeflyer workspace``: reachable, path-independent and path-dependent workspaces.

Radii about the system CoM (fixed at zero momentum), m, of a frame of a planar robot
(``freeflyer_control.analysis.workspace``). A single arm of two joints gets exact intervals; any
other planar robot gets a raster of rings, only when ``--map`` asks for its picture (the raster
is a search, not a proof: the picture shows what it found). Spatial robots are refused.
"""

from __future__ import annotations

import argparse
import json

from freeflyer_control.analysis.singularity_map import planar_chain
from freeflyer_control.analysis.workspace import (
    MAX_BINS,
    MAX_GRID,
    MAX_SAMPLES,
    MIN_GRID,
    exact_method_applies,
    planar_workspace,
    reachable_annulus,
)
from freeflyer_control.cli.common import add_robot_arguments, frame_from_args, robot_from_args
from freeflyer_control.cli.options import require_matplotlib
from freeflyer_control.inputs.values import SEED, Whole
from freeflyer_control.errors import ModelError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "workspace", help="reachable / path-independent / path-dependent workspaces (planar)"
    )
    add_robot_arguments(p)
    p.add_argument("--frame", help="end-effector frame; default: the first end-effector")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--map", metavar="FILE.png",
                   help="write a picture of the workspaces (and allow the raster method)")
    p.add_argument("--grid", type=Whole(MIN_GRID, MAX_GRID, what="grid points per joint"), default=512,
                   help=f"exact method: grid points per joint, {MIN_GRID}..{MAX_GRID} (default 512)")
    p.add_argument("--samples", type=Whole(1, MAX_SAMPLES, what="random configurations"),
                   default=1_000_000,
                   help=f"raster: random configurations, at most {MAX_SAMPLES:.0e} (default 1000000)")
    p.add_argument("--bins", type=Whole(1, MAX_BINS, what="rings"), default=200,
                   help=f"raster: rings, at most {MAX_BINS} (default 200)")
    p.add_argument("--seed", type=SEED, default=0, help="raster: random seed (default 0)")
    p.set_defaults(run=run, validate=validate)


def validate(args: argparse.Namespace) -> None:
    """A --map needs matplotlib: said before the workspaces are computed."""
    if args.map:
        require_matplotlib("--map")


def run(args: argparse.Namespace) -> int:
    ff = robot_from_args(args)
    frame = frame_from_args(ff, args.frame)
    if ff.base != "planar":
        raise ModelError(
            f"workspaces are computed for planar bases; robot '{ff.name}' has a spatial base"
        )
    chain = planar_chain(ff, frame)
    if not exact_method_applies(chain) and not args.map:
        reach = reachable_annulus(chain)
        raise ValueError(
            f"PIW/PDW radii are computed exactly for a single arm of two joints; '{frame}' of "
            f"robot '{ff.name}' is moved by {len(chain.frame_joints)} joints and the robot has "
            f"{chain.n_joints} arm joints (its reachable annulus: r_min {reach.r_min:.6g} m, "
            f"r_max {reach.r_max:.6g} m); use --map FILE.png for a raster"
        )
    ws = planar_workspace(ff, frame, grid=args.grid, samples=args.samples, bins=args.bins,
                          seed=args.seed)
    written = ws.plot(args.map) if args.map else None
    if args.json:
        out = ws.to_dict()
        if written is not None:
            out["map"] = str(written)
        print(json.dumps(out))
        return 0
    print(f"workspaces of '{frame}' (robot {ff.name}), radii about the system CoM, m "
          f"({ws.method}, ends good to {ws.resolution:.2g} m)")
    print(f"reachable  [{ws.reachable.r_min:.6f}, {ws.reachable.r_max:.6f}]")
    for name, intervals in (("PIW", ws.piw), ("PDW", ws.pdw)):
        text = "  ".join(f"[{lo:.6f}, {hi:.6f}]" for lo, hi in intervals) or "-"
        print(f"{name:<10} {text}")
    if written is not None:
        print(f"map        {written}")
    return 0
