"""Options and parsing shared by several subcommands."""

from __future__ import annotations

import argparse
import json

import numpy as np

from freeflyer_control.model import DEFAULT_ROBOT, FreeFlyerModel, load_robot


def add_robot_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--robot", default=DEFAULT_ROBOT,
        help=f"bundled robot name, robot config .yaml or .urdf path (default {DEFAULT_ROBOT})",
    )
    parser.add_argument(
        "--base", choices=("planar", "spatial"),
        help="floating base to add to a bare URDF (overrides the robot config)",
    )
    parser.add_argument(
        "--ee", action="append", metavar="FRAME",
        help="end-effector frame of a bare URDF (repeat for several arms)",
    )


def robot_from_args(args: argparse.Namespace) -> FreeFlyerModel:
    return load_robot(args.robot, base=args.base, end_effectors=args.ee)


def frame_from_args(ff: FreeFlyerModel, frame: str | None) -> str:
    """``--frame``, or the robot's first end-effector."""
    frame = frame or (ff.end_effectors[0] if ff.end_effectors else None)
    if frame is None:
        raise ValueError("the robot names no end-effector; give --frame (or --ee)")
    return frame


def parse_joint_positions(ff: FreeFlyerModel, text: str | None) -> dict[str, float]:
    """Joint angles from JSON: {"joint": rad, ...}, or a list for the arm joints (in
    ``ff.arm_joint_names`` order) or for all joints (``ff.joint_names`` order)."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--q is not valid JSON ({exc.msg}): {text!r}") from None
    if isinstance(value, dict):
        return {str(k): _angle(v, f"--q[{k!r}]") for k, v in value.items()}
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list):
        raise ValueError("--q must be a JSON list of angles or an object {joint: angle}")
    arr = np.array([_angle(v, f"--q[{i}]") for i, v in enumerate(value)], dtype=float)
    for names in (ff.arm_joint_names, ff.joint_names):
        if arr.size == len(names):
            return dict(zip(names, arr.tolist()))
    raise ValueError(
        f"--q has {arr.size} angles; give {len(ff.arm_joint_names)} (arm joints "
        f"{list(ff.arm_joint_names)}) or {len(ff.joint_names)} (all joints), or an object"
    )


def _angle(value: object, what: str) -> float:
    """One joint angle from JSON: a finite number (json accepts NaN and Infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a number (rad), got {value!r}")
    x = float(value)
    if not np.isfinite(x):
        raise ValueError(f"{what} must be a finite number (rad), got {value!r}")
    return x


def add_mode_frame_arguments(parser: argparse.ArgumentParser) -> None:
    """--mode, --frame, --q and --json: what a per-frame, per-mode query takes (osi)."""
    from freeflyer_control.physics.modes import Mode

    parser.add_argument("--mode", default="floating", choices=[m.value for m in Mode])
    parser.add_argument("--frame", help="frame (link) name; default: the first end-effector")
    parser.add_argument("--q", metavar="JSON",
                        help='joint angles, rad: [0.1, 0.2, ...] or {"joint1": 0.1}')
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
