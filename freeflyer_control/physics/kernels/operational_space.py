"""Alg. 8 (Lambda(k) = P(k) + S(k) for every body) as one compiled loop (optional: numba).

The same recursions as sweeps.p_sweep / sweeps.s_sweep, inertias only, on a tree whose bodies
are referred to one common point (all phi = I) and whose arm hinges have one DOF: then a hinge
step is a rank-one update, A - (A h)(A h)^T / (h^T A h), and the base side of hinge k is
S(parent) + P(parent) - P+(k) (the parent and all its other subtrees). Import this module only
when numba is installed (:func:`freeflyer_control.physics.kernels.available` tells); the pure-NumPy
sweeps give the same numbers (test/test_base_invariant.py).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from freeflyer_control.physics.base_invariant.tree import Tree


@njit(cache=True, fastmath=False)
def _alg8(M: np.ndarray, hinge: np.ndarray, parent: np.ndarray) -> np.ndarray:
    n, d = M.shape[0], M.shape[1]
    P = M.copy()
    P_plus = np.zeros_like(M)
    for k in range(n - 1, 1, -1):  # tip to base; the base (1) has a free hinge: P+(1) = 0
        Ah = P[k] @ hinge[k]
        s = 1.0 / (hinge[k] @ Ah)
        for i in range(d):
            for j in range(d):
                P_plus[k, i, j] = P[k, i, j] - Ah[i] * Ah[j] * s
        P[parent[k]] += P_plus[k]
    S = np.zeros_like(M)
    for k in range(2, n):  # base to tip; S(1) = 0
        p = parent[k]
        S_plus = S[p] + P[p] - P_plus[k]
        Ah = S_plus @ hinge[k]
        s = 1.0 / (hinge[k] @ Ah)
        for i in range(d):
            for j in range(d):
                S[k, i, j] = S_plus[i, j] - Ah[i] * Ah[j] * s
    return P + S


def alg8_common_point(tree: Tree) -> np.ndarray:
    """P(k) + S(k) (n, d, d) about the common point, for a ``common_point`` tree with 1-DOF
    arm hinges (what build_tree makes: it refuses other joints)."""
    hinge = np.zeros((tree.n, tree.dim))
    for k in range(2, tree.n):
        hinge[k] = tree.H[k][:, 0]
    return _alg8(np.ascontiguousarray(tree.M), hinge, tree.parent.astype(np.int64))
