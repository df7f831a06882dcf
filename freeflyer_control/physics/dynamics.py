"""Full floating-base rigid-body dynamics: M(q) v' + b(q, v) = tau (zero gravity).

Thin, named wrappers over Pinocchio so that every caller gets the same conventions: a
symmetric mass matrix, accelerations as the time derivative of Pinocchio's velocity vector
(base part in the base_link frame), and generalized forces ordered like ``v``.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel


def mass_matrix(ff: FreeFlyerModel, data: pin.Data, q: np.ndarray) -> np.ndarray:
    """Joint-space inertia M(q), full symmetric (Pinocchio's CRBA fills the upper triangle)."""
    M = pin.crba(ff.model, data, q)
    return np.triu(M) + np.triu(M, 1).T


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
