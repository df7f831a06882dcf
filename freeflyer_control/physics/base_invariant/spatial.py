"""Spatial algebra in the paper's convention: angular first, world axes, about a link point.

Doc 004 writes a spatial velocity V = [omega; v] (v: velocity of the link's reference point O_k)
and a spatial force f = [N; F] (N: moment about O_k). Every quantity here uses world axes, so
the paper's transforms are pure translations: phi(k, k-1) only moves the reference point.

Pinocchio is linear first ([v; omega], [f; tau]) and expresses joint quantities in local
frames. :func:`from_pinocchio` / :func:`to_pinocchio` are the ONLY conversion between the two:
a 6-vector in Pinocchio's local linear-first order, and the rotation world <- local, give the
world angular-first vector, and back.

Planar robots (every hinge about z, a planar base) are run in the 3-D sub-algebra
[omega_z; v_x; v_y] (:data:`PLANAR`): every quantity of a planar motion lies in it, and the
recursions on the projected quantities equal the projections of the 6-D ones (the force
transforms map the sub-space into itself whatever the links' z offsets).
"""

from __future__ import annotations

import numpy as np

#: Indices of (omega_z, v_x, v_y) in an angular-first 6-vector.
PLANAR = np.array([2, 3, 4])

#: Permutation angular-first -> linear-first (and back: it is its own inverse).
SWAP = np.array([3, 4, 5, 0, 1, 2])


def skew(x: np.ndarray) -> np.ndarray:
    """The cross-product matrix: skew(x) @ y = x cross y, for 3-vectors."""
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def phi(l: np.ndarray) -> np.ndarray:
    """Force transform phi(k, k-1) = [[I, l~], [0, I]] (6 x 6).

    Moves a spatial force from the point O_{k-1} to O_k, with ``l`` the vector from O_k to
    O_{k-1} (world axes, m): N_k = N + l x F. Its transpose moves velocities the other way
    (V_{k-1} = phi^T V_k for a rigid link) and phi(-l) is its inverse.
    """
    out = np.eye(6)
    out[:3, 3:] = skew(l)
    return out


def skew_batch(x: np.ndarray) -> np.ndarray:
    """(n, 3) -> (n, 3, 3) cross-product matrices."""
    out = np.zeros(x.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2] = -x[..., 2], x[..., 1]
    out[..., 1, 0], out[..., 1, 2] = x[..., 2], -x[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -x[..., 1], x[..., 0]
    return out


def phi_batch(l: np.ndarray) -> np.ndarray:
    """(n, 3) levers -> (n, 6, 6) force transforms phi(l) (spatial.phi, batched)."""
    out = np.zeros(l.shape[:-1] + (6, 6))
    out[..., range(6), range(6)] = 1.0
    out[..., :3, 3:] = skew_batch(l)
    return out


def cross(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Row-wise x cross y for (..., 3) arrays (np.cross costs ~40 us per call here)."""
    out = np.empty(np.broadcast_shapes(x.shape, y.shape))
    out[..., 0] = x[..., 1] * y[..., 2] - x[..., 2] * y[..., 1]
    out[..., 1] = x[..., 2] * y[..., 0] - x[..., 0] * y[..., 2]
    out[..., 2] = x[..., 0] * y[..., 1] - x[..., 1] * y[..., 0]
    return out


def from_pinocchio(R: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Pinocchio local [linear; angular] 6-vector -> paper world [angular; linear].

    Args:
        R: rotation world <- local frame.
        x: motion [v; omega] or force [f; tau] in the local frame; the reference point does
            not change.
    """
    return np.concatenate([R @ x[3:], R @ x[:3]])


def to_pinocchio(R: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Inverse of :func:`from_pinocchio`: paper world [angular; linear] -> Pinocchio local
    [linear; angular]."""
    return np.concatenate([R.T @ x[3:], R.T @ x[:3]])


def matrix_from_pinocchio(R: np.ndarray, X: np.ndarray) -> np.ndarray:
    """A 6 x 6 inertia-like matrix (force = X motion) from Pinocchio's local linear-first
    convention to the paper's world angular-first one, about the same point."""
    T = np.zeros((6, 6))
    T[:3, 3:] = R  # paper-world vector = T @ pinocchio-local vector
    T[3:, :3] = R
    return T @ X @ T.T
