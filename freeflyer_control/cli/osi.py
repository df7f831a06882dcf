"""``freeflyer osi``: print the operational-space inertia Lambda of a frame in a mode.

The base (the root link: ``--root``, else the robot's base) is at the world origin with
identity attitude. Rows and columns: linear then angular
acceleration of the frame origin in world axes (planar: vx, vy, wz), like the GJM's rows. The
commanded base coordinates of the mode are held, the joints yield (physics.operational_space).
A frame whose Lambda is singular (a kinematic singularity of the mode) is reported with exit
status 1 and Lambda^-1, not inverted.
"""

from __future__ import annotations

import argparse
import json
import sys

from freeflyer_control.cli.common import (
    add_mode_frame_arguments, add_robot_arguments, frame_from_args,
    validate_query_pose,
)
from freeflyer_control.model.joint_positions import parse_joint_positions
from freeflyer_control.model import load_robot
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.operational_space import operational_space_inertia
from freeflyer_control.physics.state import make_state


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("osi", help="operational-space inertia of a frame in a maneuvering mode")
    add_robot_arguments(p)
    add_mode_frame_arguments(p)
    p.add_argument("--root", metavar="LINK",
                   help="float this link as the base (re-rooting); default: the robot's base")
    p.set_defaults(run=run, validate=validate_query_pose)


def run(args: argparse.Namespace) -> int:
    mode = Mode.parse(args.mode)
    # Floating mode needs no base actuator, so a root away from them is fine there.
    ff = load_robot(args.robot, base=args.base, end_effectors=args.ee, root=args.root,
                    floating_only=mode is Mode.FLOATING)
    frame = frame_from_args(ff, args.frame)
    state = make_state(ff, joint_positions=parse_joint_positions(ff, args.q))
    with fastpath.forced("numpy"):  # one query: compiling a kernel would cost 1000 times the call
        osi = operational_space_inertia(ff, ff.create_data(), state.q, mode, frame)
    n = len(osi.row_names)
    if osi.singular:
        print(f"freeflyer osi: Lambda of '{frame}' in {osi.mode.value} mode is singular (Lambda^-1 "
              f"has rank {osi.rank} of {n}: a kinematic singularity); not inverted, Lambda^-1 "
              "printed instead", file=sys.stderr)
    if args.json:
        print(json.dumps({
            "mode": osi.mode.value,
            "frame": frame,
            "root": ff.base_link,
            "rows": list(osi.row_names),
            "matrix": None if osi.singular else osi.matrix.tolist(),
            "singular": osi.singular,
            "rank": osi.rank,
            "inverse": osi.inverse.tolist(),
        }))
        return 1 if osi.singular else 0
    what = "Lambda^-1" if osi.singular else "Lambda"
    print(f"{what} of '{frame}' in {osi.mode.value} mode (robot {ff.name}, root {ff.base_link})")
    print(" " * 6 + "".join(f"{c:>12}" for c in osi.row_names))
    shown = osi.inverse if osi.singular else osi.matrix
    for name, row in zip(osi.row_names, shown):
        print(f"{name:>6}" + "".join(f" {x:11.5g}" for x in row))
    return 1 if osi.singular else 0
