"""Full floating-base rigid-body dynamics: M(q) v' + b(q, v) = tau (zero gravity).

Thin, named wrappers over Pinocchio so that every caller gets the same conventions: a
symmetric mass matrix, accelerations as the time derivative of Pinocchio's velocity vector
(base part in the base_link frame), and generalized forces ordered like ``v``.
"""

from __future__ import annotations

import functools

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel


def mass_matrix(ff: FreeFlyerModel, data: pin.Data, q: np.ndarray) -> np.ndarray:
    """Joint-space inertia M(q), full symmetric, a new array.

    Pinocchio's CRBA (C++) fills only the upper triangle. Its Python binding mirrors it and
    returns a copy, but that is a binding detail, not a documented contract, so the lower
    triangle is mirrored here again. This sits on every GJM / H* call: the mirror is one
    take + put on cached flat indices (~1 us; np.triu + transpose took ~15 us).
    """
    M = pin.crba(ff.model, data, q)
    lower, upper = _mirror_indices(M.shape[0])
    M.put(lower, M.take(upper))
    return M


@functools.lru_cache(maxsize=None)
def _mirror_indices(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat (C-order) indices of the strict lower triangle of an n x n matrix and of the
    matching upper-triangle entries: M.flat[lower[k]] mirrors M.flat[upper[k]]."""
    rows, cols = np.tril_indices(n, -1)
    lower, upper = rows * n + cols, cols * n + rows
    lower.setflags(write=False)
    upper.setflags(write=False)
    return lower, upper


def nonlinear_effects(ff: FreeFlyerModel, data: pin.Data, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Coriolis and centrifugal generalized forces b(q, v) (gravity is zero)."""
    return pin.nonLinearEffects(ff.model, data, q, v).copy()


def forward_dynamics(
    ff: FreeFlyerModel, data: pin.Data, q: np.ndarray, v: np.ndarray, tau: np.ndarray
) -> np.ndarray:
    """Accelerations dv/dt (nv,) under generalized forces ``tau`` (articulated-body algorithm).

    ``tau`` is ordered like ``v``: base part = wrench on the base about the base_link origin in
    the base_link frame (spatial [f; m], planar [fx, fy, mz]), then joint torques.
    """
    return pin.aba(ff.model, data, q, v, tau).copy()


def inverse_dynamics(
    ff: FreeFlyerModel, data: pin.Data, q: np.ndarray, v: np.ndarray, a: np.ndarray
) -> np.ndarray:
    """Generalized forces (nv,) that produce accelerations ``a`` (recursive Newton-Euler)."""
    return pin.rnea(ff.model, data, q, v, a).copy()


def kinetic_energy(ff: FreeFlyerModel, data: pin.Data, q: np.ndarray, v: np.ndarray) -> float:
    """Kinetic energy of the whole system, J."""
    return float(pin.computeKineticEnergy(ff.model, data, q, v))
