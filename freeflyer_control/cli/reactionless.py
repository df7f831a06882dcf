"""``freeflyer reactionless``: the reactionless workspace against the naive one (analysis.reactionless).

Where an end-effector gets from the ready pose (or ``--q0``) with the base attitude held within
``--bound`` degrees: straight-line moves to the points of a grid, integrated with the base moving
as momentum conservation says (floating, zero momentum), by the naive GJM inverse and by the
reaction null space. Prints the counts and areas, writes the picture with ``--map``.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from freeflyer_control.analysis.reactionless import MAX_GRID, PLANES, reactionless_workspace
from freeflyer_control.cli.common import add_robot_arguments, check_joint_limits, frame_from_args, robot_from_args
from freeflyer_control.inputs.values import Number, Whole
from freeflyer_control.model.joint_positions import parse_joint_positions
from freeflyer_control.physics.state import make_state

BOUND_DEG = Number(0.0, 180.0, lo_open=True, unit="deg")
HALF_WIDTH = Number(0.0, 10.0, lo_open=True, unit="m")
SPEED = Number(0.0, 10.0, lo_open=True, unit="m/s")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reactionless", help="reactionless workspace vs the naive one, for an attitude bound")
    add_robot_arguments(p)
    p.add_argument("--frame", help="end-effector frame; default: the first end-effector")
    p.add_argument("--bound", type=BOUND_DEG, default=1.0, help="base attitude bound, deg (default 1)")
    p.add_argument("--half-width", type=HALF_WIDTH, default=0.4,
                   help="half-width of the grid around the end-effector's start, m (default 0.4)")
    p.add_argument("--grid", type=Whole(2, MAX_GRID, what="grid points a side"), default=9,
                   help=f"grid points a side, 2..{MAX_GRID} (default 9; each point is two integrations)")
    p.add_argument("--plane", choices=sorted(PLANES), default="xz",
                   help="spatial robots: the grid's plane through the start, world axes (default xz)")
    p.add_argument("--speed", type=SPEED, default=0.1, help="end-effector speed along each line, m/s (default 0.1)")
    p.add_argument("--q0", metavar="JSON", help="start joint angles, rad (default: the ready pose)")
    p.add_argument("--map", metavar="FILE.png", help="write the picture of both workspaces")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(run=run, validate=validate)


def validate(args: argparse.Namespace) -> None:
    ff = robot_from_args(args)
    frame_from_args(ff, args.frame)
    if args.q0:
        check_joint_limits(ff, parse_joint_positions(ff, args.q0, "--q0"), "--q0", refuse=True,
                           command="freeflyer reactionless")


def run(args: argparse.Namespace) -> int:
    ff = robot_from_args(args)
    frame = frame_from_args(ff, args.frame)
    q0 = make_state(ff, joint_positions=parse_joint_positions(ff, args.q0, "--q0") if args.q0 else ff.ready_pose).q
    ws = reactionless_workspace(ff, frame, np.radians(args.bound), half_width=args.half_width, grid=args.grid,
                                plane=args.plane, speed=args.speed, q0=q0)
    written = ws.plot(args.map) if args.map else None
    out = ws.to_dict()
    if args.json:
        if written is not None:
            out["map"] = str(written)
        print(json.dumps(out))
        return 0
    cell = f"{args.grid} x {args.grid} points, {ws.spacing:.3g} m apart, plane {ws.plane}"
    print(f"reachable from the start with the base attitude within {args.bound:g} deg ('{frame}' of {ff.name}; {cell})")
    for law in ("naive", "reactionless"):
        r = out[law]
        worst = r["max_attitude_change_rad_reached"]
        print(f"  {law:<13} {r['points_reached']:>4} points, {r['area_m2']:.3g} m^2; median attitude change "
              f"{np.degrees(r['median_attitude_change_rad']):.3g} deg"
              + ("" if worst is None else f", worst reached {np.degrees(worst):.3g} deg"))
    if written is not None:
        print(f"wrote {written}")
    return 0
