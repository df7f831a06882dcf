"""Joint positions as users give them: JSON text (a list of angles, or ``{"joint": rad}``),
checked against a robot's joints and the URDF limits. The command line (``--q``, ``--q0``),
campaign specs (``q0``) and node parameters read them through here."""

from __future__ import annotations

import json

import numpy as np

from freeflyer_control.inputs.values import ANGLE, UsageError, shown
from freeflyer_control.model.joint_limits import limit_violations
from freeflyer_control.model.loader import FreeFlyerModel


def parse_joint_positions(ff: FreeFlyerModel, text: str | None, option: str = "--q") -> dict[str, float]:
    """Joint angles from JSON: {"joint": rad, ...}, or a list for the arm joints (in
    ``ff.arm_joint_names`` order) or for all joints (``ff.joint_names`` order).

    Raises:
        UsageError: naming ``option`` (the option as the user typed it).
    """
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError; ints past Python's digit limit
        raise UsageError(f"{option} is not valid JSON ({getattr(exc, 'msg', 'nested too deep')}): "
                         f"{shown(text)}") from None
    if isinstance(value, dict):
        unknown = [str(k) for k in value if str(k) not in ff.joint_names]
        if unknown:
            raise UsageError(f"{option} names joint {shown(unknown[0])}, which robot '{ff.name}' "
                             f"does not have; joints: {list(ff.joint_names)}")
        return {str(k): _angle(v, f"{option}[{str(k)!r}]") for k, v in value.items()}
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list):
        raise UsageError(f"{option} must be a JSON list of angles or an object {{joint: angle}}, "
                         f"got {shown(text)}")
    arr = np.array([_angle(v, f"{option}[{i}]") for i, v in enumerate(value)], dtype=float)
    for names in (ff.arm_joint_names, ff.joint_names):
        if arr.size == len(names):
            return dict(zip(names, arr.tolist()))
    raise UsageError(
        f"{option} has {arr.size} angles; give {len(ff.arm_joint_names)} (arm joints "
        f"{list(ff.arm_joint_names)}) or {len(ff.joint_names)} (all joints), or an object"
    )


def joint_limit_problem(ff: FreeFlyerModel, positions: dict[str, float], option: str) -> str | None:
    """The joint angles of ``positions`` (rad) outside the URDF limits, as one line naming
    ``option`` (the input as the user typed it), or None when all are inside."""
    outside = limit_violations(ff, positions)
    if not outside:
        return None
    more = f" (and {len(outside) - 1} more)" if len(outside) > 1 else ""
    return f"{option}: {outside[0]}{more}"


def _angle(value: object, what: str) -> float:
    """One joint angle from JSON: a finite number (json accepts NaN and Infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{what} must be a number (rad), got {shown(value)}")
    try:
        x = float(value)
    except OverflowError:  # a JSON integer of hundreds of digits
        x = float("inf")
    if not ANGLE.accepts(x):
        raise UsageError(f"{what} must be {ANGLE.describe()}, got {shown(value)}")
    return x
