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
import sys

from freeflyer_control.cli.common import (
    add_mode_frame_arguments,
    add_robot_arguments,
    frame_from_args,
    robot_from_args,
    validate_query_pose,
)
from freeflyer_control.model.joint_positions import parse_joint_positions
from freeflyer_control.inputs.values import Number
from freeflyer_control.physics.gjm import generalized_jacobian
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.singularity import SIGMA_NEAR, block_measures, near_singular, singularity_warning
from freeflyer_control.physics.state import make_state


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gjm", help="Generalized Jacobian of a frame in a maneuvering mode")
    add_robot_arguments(p)
    add_mode_frame_arguments(p)
    p.add_argument("--sigma-warn", type=Number(0.0, unit="(m/rad on translational rows)"),
                   default=SIGMA_NEAR, metavar="SIGMA",
                   help="warn when a block's smallest singular value is below this (m/rad on "
                        f"translational rows; default {SIGMA_NEAR:g}, where resolved rate starts damping)")
    p.set_defaults(run=run, validate=validate_query_pose)


def run(args: argparse.Namespace) -> int:
    threshold = args.sigma_warn
    ff = robot_from_args(args)
    frame = frame_from_args(ff, args.frame)
    state = make_state(ff, joint_positions=parse_joint_positions(ff, args.q))
    with fastpath.forced("numpy"):  # one query: compiling a kernel would cost 1000 times the call
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
