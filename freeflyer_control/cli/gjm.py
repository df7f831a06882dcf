"""``freeflyer gjm``: print a mode's Generalized Jacobian at a joint configuration.

The base is at the world origin with identity attitude and the system has zero momentum, so
the GJM has no drift term. Rows: linear then angular velocity of the frame origin in world
axes (planar: vx, vy, wz); columns: arm joints, then the mode's commanded base velocities.

Singularity measures are given for the translational rows, the rotational rows and the whole
matrix (physics.singularity explains why the whole alone can hide a singular block); a block
whose sigma_min is below ``--sigma-warn`` gets one warning line on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from freeflyer_control.cli.common import (
    add_robot_arguments,
    check_joint_limits,
    frame_from_args,
    parse_joint_positions,
    robot_from_args,
    validation_robot,
)
from freeflyer_control.physics.gjm import generalized_jacobian
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.singularity import SIGMA_NEAR, block_measures, near_singular, singularity_warning
from freeflyer_control.physics.state import make_state


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gjm", help="Generalized Jacobian of a frame in a maneuvering mode")
    add_robot_arguments(p)
    p.add_argument("--mode", default="floating", choices=[m.value for m in Mode])
    p.add_argument("--frame", help="frame (link) name; default: the first end-effector")
    p.add_argument("--q", metavar="JSON", help='joint angles, rad: [0.1, 0.2, ...] or {"joint1": 0.1}')
    p.add_argument("--sigma-warn", type=float, default=SIGMA_NEAR, metavar="SIGMA",
                   help="warn when a block's smallest singular value is below this (m/rad on "
                        f"translational rows; default {SIGMA_NEAR:g}, where resolved rate starts damping)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=run, validate=validate)


def validate(args: argparse.Namespace) -> None:
    """``--q``: valid JSON angles for this robot; outside the URDF limits only warned about
    (a Jacobian may be queried anywhere, e.g. to study a singular configuration)."""
    if args.q:
        ff = validation_robot(args)
        positions = parse_joint_positions(ff, args.q, "--q")
        check_joint_limits(ff, positions, "--q", refuse=False, command="gjm")


def run(args: argparse.Namespace) -> int:
    threshold = args.sigma_warn
    if not (math.isfinite(threshold) and threshold >= 0):
        raise ValueError(f"--sigma-warn must be a finite number >= 0 (m/rad on translational rows), "
                         f"got {threshold:g}")
    ff = robot_from_args(args)
    frame = frame_from_args(ff, args.frame)
    state = make_state(ff, joint_positions=parse_joint_positions(ff, args.q))
    G = generalized_jacobian(ff, ff.create_data(), state, Mode.parse(args.mode), frame)
    blocks = block_measures(G.matrix, G.row_names)
    if args.json:
        print(json.dumps({
            "mode": G.mode.value,
            "frame": frame,
            "joint_names": list(G.column_names),
            "row_names": list(G.row_names),
            "rows": int(G.matrix.shape[0]),
            "cols": int(G.matrix.shape[1]),
            "matrix": G.matrix.tolist(),
            "singularity": {name: b.as_dict() for name, b in blocks.items()},
            "sigma_warn": threshold,
            "near_singular": [b.name for b in near_singular(blocks, threshold)],
        }))
    else:
        print(f"GJM of '{frame}' in {G.mode.value} mode (robot {ff.name})")
        print(" " * 6 + "".join(f"{c:>12}" for c in G.column_names))
        for name, row in zip(G.row_names, G.matrix):
            print(f"{name:>6}" + "".join(f"{x:12.6f}" for x in row))
        print(f"{'block':<24}{'sigma_min':>12}{'manipulability':>16}{'condition':>12}{'rank':>6}")
        for b in blocks.values():
            m = b.measures
            label = f"{b.name} ({' '.join(b.rows)})" if b.rows else f"{b.name} (no rows)"
            print(f"{label:<24}{m.sigma_min:12.6g}{m.manipulability:16.6g}{m.condition_number:12.6g}{m.rank:6d}")
    warning = singularity_warning(frame, blocks, threshold, "--sigma-warn")
    if warning:
        print(f"freeflyer gjm: warning: {warning}", file=sys.stderr)
    return 0
