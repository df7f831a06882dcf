"""Models with deliberate mass-property errors: what a controller believes vs the real robot."""

from __future__ import annotations

import dataclasses

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel


def perturbed_mass_properties(ff: FreeFlyerModel, relative_error: float, seed: int = 0) -> FreeFlyerModel:
    """A copy of ``ff`` whose every body has its mass and rotational inertia multiplied by a
    factor drawn uniformly from [1 - e, 1 + e] (CoM positions unchanged, so the inertia stays
    physical). ``relative_error = 0.1`` is a 10 % mass-property error.
    """
    if not 0.0 <= relative_error < 1.0:
        raise ValueError(f"relative_error must be in [0, 1), got {relative_error}")
    rng = np.random.default_rng(seed)
    model = ff.model.copy()
    for j in range(1, model.njoints):
        inertia = model.inertias[j]
        k = 1.0 + rng.uniform(-relative_error, relative_error)
        model.inertias[j] = pin.Inertia(inertia.mass * k, inertia.lever, inertia.inertia * k)
    return dataclasses.replace(ff, model=model)
