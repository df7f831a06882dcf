"""Grasp matrix and internal forces of an object held by m end-effectors (Swain et al. Eqs. 39-44).

Twists and wrenches are in world axes. An end-effector twist is taken at its frame origin,
[v; w] (spatial) or (vx, vy, wz) (planar); the object twist at its CoM. A wrench is [force;
moment about the same point]. With r_i the vector from the object CoM to end-effector i:

    v_i = W_i v_o,     W_i = [[I, -[r_i]x], [0, I]]      (planar: [[1, 0, -r_y], [0, 1, r_x], [0, 0, 1]])
    f_o = W^T f_e = sum_i W_i^T f_i                      (the net wrench on the object about its CoM)

with W = [W_1; ...; W_m] (6m x 6, planar 3m x 3) and f_i the wrench end-effector i applies to the
object. The object's twist from consistent end-effector twists is v_o = W^+ v_e (DIGEST §4.4:
Swain's Eq. 18 writes W^-T, which does not exist for a non-square W). Internal (squeeze) forces
are the end-effector wrenches in the null space of W^T: they do not accelerate the object.
"""

from __future__ import annotations

import numpy as np


def grasp_matrix(ee_positions: np.ndarray, object_com: np.ndarray, planar: bool) -> np.ndarray:
    """W (6m x 6, planar 3m x 3) from the end-effector origins and the object CoM.

    Args:
        ee_positions: (m, 3) end-effector frame origins in world, m.
        object_com: (3,) object CoM in world, m.
        planar: in-plane rows (vx, vy, wz) only.
    """
    r = np.asarray(ee_positions, dtype=float) - np.asarray(object_com, dtype=float)
    n = 3 if planar else 6
    W = np.zeros((n * len(r), n))
    for i, ri in enumerate(r):
        block = np.eye(n)
        if planar:
            block[0, 2], block[1, 2] = -ri[1], ri[0]
        else:
            block[:3, 3:] = -_skew(ri)
        W[n * i:n * (i + 1)] = block
    return W


def _skew(r: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])


def object_twist(W: np.ndarray, ee_twists: np.ndarray) -> np.ndarray:
    """v_o = W^+ v_e: the object twist (world axes, at its CoM) that best explains the stacked
    end-effector twists ``ee_twists`` (exact when they are consistent with one rigid body)."""
    return np.linalg.lstsq(W, np.asarray(ee_twists, dtype=float), rcond=None)[0]


def rigidity_residual(W: np.ndarray, ee_twists: np.ndarray) -> np.ndarray:
    """(I - W W^+) v_e: the part of the stacked end-effector twists that no single rigid object
    twist explains (zero while the grasp holds); same units as ``ee_twists``."""
    v = np.asarray(ee_twists, dtype=float)
    return v - W @ object_twist(W, v)


def internal_force_basis(W: np.ndarray) -> np.ndarray:
    """Orthonormal columns spanning null(W^T): end-effector wrenches that cancel on the object."""
    _, s, Vt = np.linalg.svd(W.T)
    rank = int((s > 1e-10 * max(s.max(), 1.0)).sum())
    return Vt[rank:].T


def split_wrenches(W: np.ndarray, f_e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """f_e = (W^T)^+ f_o + f_int: the manipulating part (the least-norm wrenches that give the
    net object wrench f_o = W^T f_e) and the internal part, in null(W^T). Same units as ``f_e``."""
    f_e = np.asarray(f_e, dtype=float)
    manip = np.linalg.pinv(W.T) @ (W.T @ f_e)
    return manip, f_e - manip


def squeeze_direction(ee_positions: np.ndarray, planar: bool) -> np.ndarray:
    """The squeeze per newton of setpoint: stacked end-effector wrenches (layout of
    :func:`grasp_matrix`) in which each of the first two end-effectors pushes the object with
    1 N towards the other, along the line joining them, with no moment. A setpoint of F N is
    F times this: **each hand presses with F N** (the vector's norm is sqrt(2), not 1). It lies in
    null(W^T) for any object CoM: the two forces cancel and so do their moments."""
    p = np.asarray(ee_positions, dtype=float)
    if len(p) < 2:
        raise ValueError("a squeeze needs at least two end-effectors")
    u = p[1] - p[0]
    u /= np.linalg.norm(u)
    n = 3 if planar else 6
    f = np.zeros(n * len(p))
    f[0:2 if planar else 3] = u[:2] if planar else u           # end-effector 0 pushes towards 1
    f[n:n + (2 if planar else 3)] = -(u[:2] if planar else u)  # and 1 towards 0
    return f


def squeeze_of(direction: np.ndarray, f_e: np.ndarray) -> float:
    """The force each hand presses with (N) in the end-effector wrenches ``f_e``: the component
    of ``f_e`` along :func:`squeeze_direction`'s ``direction``, per unit of it."""
    d = np.asarray(direction, dtype=float)
    return float(d @ np.asarray(f_e, dtype=float) / (d @ d))


def internal_moments(W: np.ndarray, f_e: np.ndarray, planar: bool) -> np.ndarray:
    """The moments (N m) of the internal part of ``f_e`` at each end-effector, one row per
    end-effector (spatial: 3 entries, planar: mz): the twisting the grasps exert on each other,
    which a pure squeeze does not."""
    _, internal = split_wrenches(W, f_e)
    n = 3 if planar else 6
    rows = internal.reshape(-1, n)
    return rows[:, 2:] if planar else rows[:, 3:]
