"""Forward dynamics by the decoupled two-sweep algorithm (doc 004 Alg. 6), in Pinocchio's
generalized coordinates so that it can stand in for (and be checked against) ``pin.aba``.

The base's generalized force and acceleration are the only places where Pinocchio's local
base coordinates meet the paper's world-axes base hinge; the conversion goes through
spatial.from_pinocchio / to_pinocchio.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.base_invariant.spatial import PLANAR, from_pinocchio, to_pinocchio
from freeflyer_control.physics.base_invariant.sweeps import (
    hinge_accelerations, link_accelerations, p_sweep, s_sweep,
)
from freeflyer_control.physics.base_invariant.tree import Tree, build_tree


@dataclass(frozen=True)
class TwoSweepResult:
    """Attributes:
    ddq: dv/dt (nv,) in Pinocchio's convention (Lemma 3.2 for the base, Eq. 3.13 P side for
        the joints).
    alpha: (n, d) every body's acceleration [d omega/dt; d v(O_k)/dt], world axes (Lemma 3.2).
    hinge_from_p, hinge_from_s: (nv - nb,) joint accelerations from either side of Eq. 3.13,
        rad/s^2, ordered like ``v``'s joint part.
    """

    ddq: np.ndarray
    alpha: np.ndarray
    hinge_from_p: np.ndarray
    hinge_from_s: np.ndarray


def _embed(tree: Tree, x: np.ndarray) -> np.ndarray:
    """A base vector of the tree's algebra as an angular-first 6-vector (planar: zero out of
    the plane)."""
    if tree.dim == 6:
        return x
    out = np.zeros(6)
    out[PLANAR] = x
    return out


def _pinocchio_base_6(ff: FreeFlyerModel, x: np.ndarray) -> np.ndarray:
    """Pinocchio's base part of a velocity-like vector as a local linear-first 6-vector
    (planar [vx, vy, wz] -> [vx, vy, 0, 0, 0, wz])."""
    if ff.base == "spatial":
        return x[:6]
    return np.array([x[0], x[1], 0.0, 0.0, 0.0, x[2]])


def base_wrench_to_paper(ff: FreeFlyerModel, tree: Tree, tau_base: np.ndarray) -> np.ndarray:
    """T(n): Pinocchio's base generalized force (local [f; m] about the base origin; planar
    [fx, fy, mz]) as the paper's base hinge force in the tree's algebra, world axes."""
    x = from_pinocchio(tree.rotation[1], _pinocchio_base_6(ff, tau_base))
    return x if tree.dim == 6 else x[PLANAR]


def base_acceleration_to_pinocchio(
    ff: FreeFlyerModel, tree: Tree, v: np.ndarray, alpha_base: np.ndarray
) -> np.ndarray:
    """The base's alpha (world, classical) as Pinocchio's dv/dt base part (local, spatial):
    d v_local/dt = R^T a_O - omega_local x v_local."""
    x = to_pinocchio(tree.rotation[1], _embed(tree, alpha_base))
    v6 = _pinocchio_base_6(ff, v)
    x[:3] -= np.cross(v6[3:], v6[:3])
    return x if ff.base == "spatial" else x[[0, 1, 5]]


def two_sweep_forward_dynamics(
    ff: FreeFlyerModel, data: pin.Data, q: np.ndarray, v: np.ndarray, tau: np.ndarray
) -> TwoSweepResult:
    """Accelerations under generalized forces ``tau`` (Pinocchio's order and base convention,
    as for ``pin.aba``) from the P and S sweeps run independently (Alg. 6 steps 1-3)."""
    tree = build_tree(ff, data, q, v)
    model = ff.model
    T: list = [None] * tree.n
    T[1] = base_wrench_to_paper(ff, tree, tau[: ff.nb])
    for k in range(2, tree.n):
        i = model.joints[k].idx_v
        T[k] = tau[i : i + 1]
    ps = p_sweep(tree, T)
    ss = s_sweep(tree, ps, T)
    alpha = link_accelerations(tree, ps, ss)
    from_p, from_s = hinge_accelerations(tree, ps, ss, alpha)
    ddq = np.zeros(model.nv)
    ddq[: ff.nb] = base_acceleration_to_pinocchio(ff, tree, v, alpha[1])
    hp, hs = np.zeros(ff.nj), np.zeros(ff.nj)
    for k in range(2, tree.n):
        i = model.joints[k].idx_v
        ddq[i] = from_p[k][0]
        hp[i - ff.nb], hs[i - ff.nb] = from_p[k][0], from_s[k][0]
    return TwoSweepResult(ddq, alpha, hp, hs)
