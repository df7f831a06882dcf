"""Momentum of groups of bodies (base vs arm), as Wilde et al. plot it."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.state import State


def base_joint_ids(ff: FreeFlyerModel) -> list[int]:
    """Pinocchio joints that move with the base: the base joint and the reaction wheels."""
    return [1] + [ff.model.getJointId(n) for n in ff.wheel_joint_names]


def group_momenta(ff: FreeFlyerModel, data: pin.Data, state: State) -> dict[str, np.ndarray]:
    """[P; L] (6,) of the base (with its wheels), the arm(s) and the whole system.

    P in world axes; L about the current system CoM, world axes. Base + arm = total.
    """
    model = ff.model
    pin.forwardKinematics(model, data, state.q, state.v)
    com = pin.centerOfMass(model, data, state.q, False)
    base_ids = set(base_joint_ids(ff))
    sums = {"base": np.zeros(6), "arm": np.zeros(6)}
    for j in range(1, model.njoints):
        h_local = model.inertias[j] * data.v[j]  # body momentum in the joint frame
        h = data.oMi[j].act(h_local)  # about the world origin, world axes
        sums["base" if j in base_ids else "arm"] += np.concatenate([h.linear, h.angular])
    out = {}
    for key, h in sums.items():
        P, L_O = h[:3], h[3:]
        out[key] = np.concatenate([P, L_O - np.cross(com, P)])
    out["total"] = out["base"] + out["arm"]
    return out
