"""The two articulated-body sweeps of doc 004 and what they give (DIGEST §6.3, errata §6.6).

* :func:`p_sweep`: Alg. 2 (articulated-body inertia P, tip to base) and Alg. 3's residual
  forces z, for a tree: a body gathers phi P+ phi* and phi z+ from all its children.
* :func:`s_sweep`: the dual sweep (Alg. 4/5, base to tip): S(k) is the articulated inertia of
  everything on the base side of hinge k, seen at O_k. For a tree (the gather/scatter remark)
  the base side of hinge k is the parent's base side plus the parent plus the parent's other
  subtrees, so S+ of hinge k also takes the siblings' P+ (a P-type sweep inward from every
  extremal body). On a serial chain the siblings are absent and the two sweeps are independent.
* :func:`link_accelerations`: Lemma 3.2, alpha(k) = -[P + S]^-1 [z_p + z_s - P a].
* :func:`hinge_accelerations`: Eq. 3.13 from either side.
* :func:`osi_all_links`: Alg. 8, Lambda(k) = P(k) + S(k) for every body at once.
* :func:`inverse_osi_all_links`: Eq. 4.7's Upsilon(k) = Lambda(k)^-1 recursion, with a base
  hinge that may leave some base directions held (the maneuvering modes).

Sign and bookkeeping of the dual residuals: with f(k) the force of the parent on body k at
O_k, the base side obeys -f(k) = S+ alpha+ + z_s+ = S alpha + z_s (Lemma 3.1, dual) where
alpha+(k) = phi*(parent, k) alpha(parent). Hinge torques are T(k) = H(k) f(k) as in Alg. 1,
so the dual hinge equation reads D_s beta' = T + H S+ alpha - H (S+ a - z_s+); the
Coriolis term a(k) is kept in the hinge's own step rather than carried to the next link as
Eq. 3.6's a_s. The quantities S, S+, G_s, D_s and the results are the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from freeflyer_control.physics.base_invariant.spatial import PLANAR, phi_batch
from freeflyer_control.physics.base_invariant.tree import Tree


@dataclass
class Sweep:
    """One sweep's per-body results (index = body; entry 0 unused).

    P sweep: ``inertia`` = P(k), ``inertia_plus`` = P+(k), ``gain`` = G(k), ``d_inv`` = D^-1(k),
    ``z``, ``z_plus``, ``nu``. S sweep: the same names for S, S+, G_s, D_s^-1, z_s, z_s+, nu_s.
    The residual entries are None for an inertia-only sweep.
    """

    inertia: np.ndarray
    inertia_plus: np.ndarray
    gain: list
    d_inv: list
    z: np.ndarray | None = None
    z_plus: np.ndarray | None = None
    nu: list | None = None


def _inv(D: np.ndarray) -> np.ndarray:
    return np.linalg.inv(D) if D.size else D


def _through_hinge(A: np.ndarray, H: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An articulated inertia ``A`` seen through hinge H*: returns (A H* D^-1, D^-1, the
    projected A - A H* D^-1 H A) with D = H A H*. One-DOF hinges take the scalar path
    (np.linalg.inv costs ~10 us even on 1 x 1)."""
    if H.shape[1] == 1:
        AH = A @ H[:, 0]
        d_inv = 1.0 / (H[:, 0] @ AH)
        g = AH * d_inv
        return g[:, None], np.array([[d_inv]]), A - g[:, None] * AH
    AH = A @ H
    D_inv = _inv(H.T @ AH)
    G = AH @ D_inv
    return G, D_inv, A - G @ AH.T


def p_sweep(tree: Tree, T: list | None = None) -> Sweep:
    """Alg. 2 (and Alg. 3 if ``T`` is given), tip to base.

    Args:
        T: per body, the hinge force T(k) (r_k,): joint torque, N m; for the base the wrench
            on it [moment about O_n; force], world axes. None: inertias only.
    """
    n, d = tree.n, tree.dim
    P = tree.M.copy()
    P_plus = np.zeros_like(P)
    G: list = [None] * n
    D_inv: list = [None] * n
    with_z = T is not None
    z = np.zeros((n, d)) if with_z else None
    z_plus = np.zeros((n, d)) if with_z else None
    nu: list | None = [None] * n if with_z else None
    common = tree.common_point
    for k in range(n - 1, 0, -1):  # children have larger indices: all gathered by now
        H = tree.H[k]
        G[k], D_inv[k], P_plus[k] = _through_hinge(P[k], H)  # P+ = tau_bar P, tau_bar = I - G H
        if with_z:
            z[k] += tree.b[k] + P[k] @ tree.a[k]
            eps = T[k] - H.T @ z[k]
            z_plus[k] = z[k] + G[k] @ eps
            nu[k] = D_inv[k] @ eps
        p = tree.parent[k]
        if p:
            X = tree.phi_in[k]
            P[p] += P_plus[k] if common else X @ P_plus[k] @ X.T
            if with_z:
                z[p] += X @ z_plus[k]
    return Sweep(P, P_plus, G, D_inv, z, z_plus, nu)


def s_sweep(tree: Tree, ps: Sweep, T: list | None = None) -> Sweep:
    """The dual sweep (Alg. 4, and Alg. 5 if ``T`` is given), base to tip.

    S(base) = 0: the ground, seen through the 6-DOF (planar: 3-DOF) base hinge, resists
    nothing; z_s(base) = -T(base), the base wrench's reaction. ``ps`` supplies the siblings'
    P+ and z+ on trees (unused on a serial chain).
    """
    n, d = tree.n, tree.dim
    S = np.zeros((n, d, d))
    S_plus = np.zeros_like(S)
    G: list = [None] * n
    D_inv: list = [None] * n
    with_z = T is not None
    zs = np.zeros((n, d)) if with_z else None
    zs_plus = np.zeros((n, d)) if with_z else None
    nu: list | None = [None] * n if with_z else None
    if with_z:
        zs[1] = -T[1]
    I = np.eye(d)
    common = tree.common_point
    for k in range(2, n):
        p = tree.parent[k]
        X = tree.phi_in[k]
        X_inv = 2.0 * I - X  # phi(-l): the lever block is nilpotent
        S_hat = S[p] + tree.M[p]
        z_hat = zs[p] + tree.b[p] if with_z else None
        for s in tree.children[p]:
            if s != k:  # scatter: the parent's other subtrees join the base side of hinge k
                Xs = tree.phi_in[s]
                S_hat = S_hat + (ps.inertia_plus[s] if common else Xs @ ps.inertia_plus[s] @ Xs.T)
                if with_z:
                    z_hat = z_hat + Xs @ ps.z_plus[s]
        S_plus[k] = S_hat if common else X_inv @ S_hat @ X_inv.T
        H = tree.H[k]
        G_p, D_inv[k], S[k] = _through_hinge(S_plus[k], H)  # S = tau_bar_s S+
        G[k] = -G_p  # G_s = -S+ H* D_s^-1, tau_bar_s = I + G_s H
        if with_z:
            zs_plus[k] = X_inv @ z_hat
            r = zs_plus[k] - S_plus[k] @ tree.a[k]
            c = T[k] + H.T @ r
            nu[k] = D_inv[k] @ c
            zs[k] = r + G[k] @ c
    return Sweep(S, S_plus, G, D_inv, zs, zs_plus, nu)


def link_accelerations(tree: Tree, ps: Sweep, ss: Sweep) -> np.ndarray:
    """Lemma 3.2: alpha(k) (n, d) of every body from the two sweeps, each body on its own.

    alpha(k) = [d omega/dt; d v(O_k)/dt], world axes (rad/s^2, m/s^2).
    """
    alpha = np.zeros((tree.n, tree.dim))
    for k in range(1, tree.n):
        rhs = ps.z[k] + ss.z[k] - ps.inertia[k] @ tree.a[k]
        alpha[k] = -np.linalg.solve(ps.inertia[k] + ss.inertia[k], rhs)
    return alpha


def hinge_accelerations(
    tree: Tree, ps: Sweep, ss: Sweep, alpha: np.ndarray
) -> tuple[list, list]:
    """Eq. 3.13 from the P side, beta'(k) = nu_p - G_p* alpha+(k), and from the S side,
    beta'(k) = nu_s - G_s* alpha(k). The base hinge has no S side (S+ = 0 there); both lists
    give it alpha(base) - a(base)."""
    from_p: list = [None] * tree.n
    from_s: list = [None] * tree.n
    from_p[1] = from_s[1] = alpha[1] - tree.a[1]
    for k in range(2, tree.n):
        alpha_plus = tree.phi_in[k].T @ alpha[tree.parent[k]]
        from_p[k] = ps.nu[k] - ps.gain[k].T @ alpha_plus
        from_s[k] = ss.nu[k] - ss.gain[k].T @ alpha[k]
    return from_p, from_s


def osi_all_links(tree: Tree, *, compiled: bool = False) -> np.ndarray:
    """Alg. 8: Lambda(k) = P(k) + S(k) (n, d, d) for every body, free-flying (floating mode).

    Lambda(k) is the operational-space inertia of body k at O_k, world axes, angular first.

    Args:
        compiled: run the two sweeps as one numba loop (physics.kernels.operational_space; needs numba
            and a ``common_point`` tree).
    """
    if compiled:
        from freeflyer_control.physics.kernels.operational_space import alg8_common_point

        if not tree.common_point:
            raise ValueError("the compiled Alg. 8 needs a common_point tree")
        lam = alg8_common_point(tree)
    else:
        ps = p_sweep(tree)
        ss = s_sweep(tree, ps)
        lam = ps.inertia + ss.inertia
    if tree.common_point:  # referred to the world origin: move each Lambda(k) to O_k
        X = _point_transforms(tree, -1.0)
        lam = X @ lam @ X.transpose(0, 2, 1)
    return lam


def _point_transforms(tree: Tree, sign: float) -> np.ndarray:
    """phi(sign * O_k) (n, d, d) for every body, in the tree's algebra."""
    X = phi_batch(sign * tree.origin)
    return X[:, PLANAR[:, None], PLANAR] if tree.dim == 3 else X


def inverse_osi_all_links(tree: Tree, base_free: np.ndarray, ps: Sweep | None = None) -> np.ndarray:
    """Eq. 4.7: Upsilon(k) = Lambda(k)^-1 (n, d, d) for every body, base to tip.

    Args:
        base_free: (d, r) the base directions left free (angular-first, world axes); the
            others are held by their actuators. ``np.eye(d)``: floating, Upsilon(n) = P(n)^-1.
        ps: an inertia P sweep of ``tree`` to reuse.
    """
    ps = ps or p_sweep(tree)
    n, d = tree.n, tree.dim
    U = np.zeros((n, d, d))
    I = np.eye(d)
    for k in range(1, n):
        if k == 1:
            H = base_free
            if tree.common_point:  # the directions at O_n, seen at the world origin
                H = _point_transforms(tree, -1.0)[1].T @ base_free
            PH = ps.inertia[1] @ H
            D_inv = _inv(H.T @ PH)
            G = PH @ D_inv
            U_plus = np.zeros((d, d))
        else:
            H, D_inv, G = tree.H[k], ps.d_inv[k], ps.gain[k]
            X = tree.phi_in[k]
            U_plus = X.T @ U[tree.parent[k]] @ X
        tau_bar = I - G @ H.T
        U[k] = tau_bar.T @ U_plus @ tau_bar + H @ D_inv @ H.T
    if tree.common_point:  # Upsilon(O_k) = phi(O_k)^T Upsilon(origin) phi(O_k)
        X = _point_transforms(tree, 1.0)
        U = X.transpose(0, 2, 1) @ U @ X
    return U
