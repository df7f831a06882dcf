"""The URDF position limits of one-DOF joints, and which given joint positions break them.

Pinocchio stores ``<limit lower upper>`` of revolute (rad) and prismatic (m) joints in
``lowerPositionLimit`` / ``upperPositionLimit``. A joint without ``<limit>`` gets +-1e10 from
the URDF check (``urdf_checks``), and a continuous joint is stored as (cos, sin): neither has a
limit, and neither is reported here.
"""

from __future__ import annotations

from collections.abc import Mapping

# The URDF check fills a missing bound with +-1e10; anything this large is "no limit".
NO_LIMIT = 1e9


def position_limits(ff, joint: str) -> tuple[float, float] | None:
    """(lower, upper) of ``joint`` (rad, or m for a prismatic joint), -inf / inf for a side
    the URDF leaves open; None for a joint without position limits (continuous, no ``<limit>``)."""
    model = ff.model
    jid = model.getJointId(joint)
    if jid >= model.njoints or model.joints[jid].nq != 1:
        return None
    i = model.joints[jid].idx_q
    lo, hi = float(model.lowerPositionLimit[i]), float(model.upperPositionLimit[i])
    lo = lo if abs(lo) < NO_LIMIT else float("-inf")
    hi = hi if abs(hi) < NO_LIMIT else float("inf")
    return None if (lo, hi) == (float("-inf"), float("inf")) else (lo, hi)


def limit_violations(ff, positions: Mapping[str, float]) -> list[str]:
    """One phrase per joint of ``positions`` (joint -> rad or m) outside its URDF limits,
    e.g. "joint2 = 3 rad is outside its URDF limits [-2.5, 2.5] rad"."""
    out = []
    for joint, value in positions.items():
        limits = position_limits(ff, joint)
        if limits is None or limits[0] <= value <= limits[1]:
            continue
        unit = "m" if "P" in ff.model.joints[ff.model.getJointId(joint)].shortname()[10:] else "rad"
        out.append(f"{joint} = {value:g} {unit} is outside its URDF limits "
                   f"[{limits[0]:g}, {limits[1]:g}] {unit}")
    return out
