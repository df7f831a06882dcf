"""Options and parsing shared by several subcommands."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

from freeflyer_control.inputs.values import UsageError
from freeflyer_control.cli.options import warn
from freeflyer_control.model import DEFAULT_ROBOT, FreeFlyerModel, load_robot
from freeflyer_control.model.joint_positions import joint_limit_problem, parse_joint_positions


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


def validation_robot(args: argparse.Namespace) -> FreeFlyerModel:
    """The robot of ``args`` for checking options against (read-only: callers must not change
    it). Loads are cached by source and file time, so validating many argument sets (the CLI
    fuzz test) does not re-read the same URDF each time; a run loads its own copy."""
    ee = tuple(args.ee) if args.ee is not None else None
    return _cached_robot(args.robot, args.base, ee, _file_stamp(args.robot))


def validation_testbed(source: str):
    """The testbed config ``source`` (read-only), cached like :func:`validation_robot`."""
    return _cached_testbed(source, _file_stamp(source))


def _file_stamp(source: str) -> int | None:
    """Modification time of ``source`` if it names a file (a changed file is read again)."""
    path = Path(source)
    try:
        return path.stat().st_mtime_ns if path.is_file() else None
    except (OSError, ValueError):
        return None


@functools.lru_cache(maxsize=16)
def _cached_robot(robot: str, base: str | None, ee: tuple[str, ...] | None, stamp: int | None):
    return load_robot(robot, base=base, end_effectors=ee)


@functools.lru_cache(maxsize=8)
def _cached_testbed(source: str, stamp: int | None):
    from freeflyer_control.hil.config import load_testbed_config

    return load_testbed_config(source)


def frame_from_args(ff: FreeFlyerModel, frame: str | None) -> str:
    """``--frame``, or the robot's first end-effector."""
    frame = frame or (ff.end_effectors[0] if ff.end_effectors else None)
    if frame is None:
        raise ValueError("the robot names no end-effector; give --frame (or --ee)")
    return frame


def check_joint_limits(ff: FreeFlyerModel, positions: dict[str, float], option: str, *,
                       refuse: bool, command: str) -> None:
    """Refuse (``refuse``: a pose the run starts from or drives to) or warn about (a pose only
    queried) joint angles outside the URDF limits."""
    problem = joint_limit_problem(ff, positions, option)
    if problem is None:
        return
    if refuse:
        raise UsageError(f"{problem}; give angles inside the limits")
    warn(command, f"{problem}; the robot cannot reach this pose")


def add_mode_frame_arguments(parser: argparse.ArgumentParser) -> None:
    """--mode, --frame, --q and --json: what a per-frame, per-mode query takes (gjm, osi)."""
    from freeflyer_control.physics.modes import Mode

    parser.add_argument("--mode", default="floating", choices=[m.value for m in Mode])
    parser.add_argument("--frame", help="frame (link) name; default: the first end-effector")
    parser.add_argument("--q", metavar="JSON",
                        help='joint angles, rad: [0.1, 0.2, ...] or {"joint1": 0.1}')
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def validate_query_pose(args: argparse.Namespace) -> None:
    """``--q`` of a query (gjm, osi): valid JSON angles for this robot; outside the URDF limits
    only warned about (a query may look anywhere, e.g. to study a singular configuration)."""
    if args.q:
        ff = validation_robot(args)
        positions = parse_joint_positions(ff, args.q, "--q")
        check_joint_limits(ff, positions, "--q", refuse=False, command=args.command)


def replay_wanted(args: argparse.Namespace, command: str = "sim") -> bool:
    """Whether to write replay.html: unless ``--no-replay``, and only with the viewer installed;
    without it, one warning line now (before the run) and everything else is written."""
    if getattr(args, "no_replay", False):
        return False
    from freeflyer_control.sim.replay import replay_missing

    missing = replay_missing()
    if missing:
        warn(command, f"no replay.html: {missing}; --no-replay skips it without this warning")
        return False
    return True


def engine_words(s: dict) -> str:
    """"<engine> engine", with why a run is on the Python one and which plant step it took, when
    the summary says (e.g. "python engine: not compiled: controller impedance (...); plant step:
    compiled (numba, ready in 0.9 s)")."""
    words = f"{s['engine']} engine"
    reason, step = s.get("engine_reason"), s.get("plant_step")
    if reason and step and "numba not installed" in reason:
        step = None   # the plant step's note would say the same
    details = [d for d in (reason, step) if d]
    return words + (": " + "; ".join(details) if details else "")
