"""The paper's per-link data (doc 004 §2), built from a Pinocchio model at one state.

Pinocchio's joint i moves body i (fixed joints are merged into their parent body), and its
parent array is the kinematic tree, root (the base, joint 1) first. The paper numbers a serial
chain tip to base (link 1 the tip, link n the base, hinge k between link k+1 and link k); here
bodies keep Pinocchio's indices and "tip to base" means decreasing index, which visits every
child before its parent on trees too.

For every body k this module holds, in world axes and the paper's angular-first order:

* O_k: the origin of joint k (the URDF link frame), the body's reference point;
* M(k): spatial inertia about O_k;
* phi_in(k) = phi(parent(k), k): moves a spatial force from O_k to O_parent;
* H*(k): the hinge's velocity directions (6 x r); the base hinge is 6-DOF with H*(n) = I, so
  its generalized velocity is the base's spatial velocity V(n) = [omega; v(O_n)] in world axes;
* V(k), a(k), b(k): velocity, Coriolis acceleration and gyroscopic force (DIGEST §6.2).

Accelerations alpha(k) = [d omega/dt; d v(O_k)/dt] are the inertial time derivatives of V(k):
for the base they are the classical accelerations, not Pinocchio's spatial ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.errors import ModelError
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.base_invariant.spatial import (
    PLANAR, from_pinocchio, phi, spatial_inertia,
)


@dataclass
class Tree:
    """The paper's quantities for every body, indexed like Pinocchio's joints (0 = ground,
    unused). ``dim`` is 6 (spatial) or 3 (planar sub-algebra [omega_z; v_x; v_y])."""

    dim: int
    parent: np.ndarray  # (n,) parent body, 0 for the base
    children: tuple[tuple[int, ...], ...]
    origin: np.ndarray  # (n, 3) O_k in world, m
    rotation: np.ndarray  # (n, 3, 3) world <- joint k frame
    M: np.ndarray  # (n, d, d)
    phi_in: np.ndarray  # (n, d, d) phi(parent(k), k)
    H: tuple[np.ndarray, ...]  # H*(k), (d, r_k); H[0] unused
    V: np.ndarray  # (n, d)
    a: np.ndarray  # (n, d)
    b: np.ndarray  # (n, d)
    names: tuple[str, ...]  # joint names; names[1] is the base joint

    @property
    def n(self) -> int:
        return self.parent.shape[0]


def build_tree(
    ff: FreeFlyerModel, data: pin.Data, q: np.ndarray, v: np.ndarray | None = None
) -> Tree:
    """The paper's data at configuration ``q`` and velocity ``v`` (Pinocchio's convention;
    ``v=None`` for rest: then a = b = 0, all that the inertias need).

    Raises:
        ModelError: a non-base joint that is not a 1-DOF revolute joint (the paper's Coriolis
            term a(k) is written for revolute hinges).
    """
    model = ff.model
    n = model.njoints
    v = np.zeros(model.nv) if v is None else v
    pin.computeJointJacobians(model, data, q)
    pin.forwardKinematics(model, data, q, v)
    J = data.J  # world frame: column = [velocity of the point at the world origin; omega]

    origin = np.zeros((n, 3))
    rotation = np.zeros((n, 3, 3))
    M = np.zeros((n, 6, 6))
    V = np.zeros((n, 6))
    H: list[np.ndarray] = [np.zeros((6, 0)), np.eye(6)]
    for k in range(1, n):
        oMi = data.oMi[k]
        origin[k], rotation[k] = oMi.translation, oMi.rotation
        inertia = model.inertias[k]
        R = oMi.rotation
        M[k] = spatial_inertia(inertia.mass, R @ inertia.lever, R @ inertia.inertia @ R.T)
        V[k] = from_pinocchio(R, data.v[k].vector)
        if k == 1:
            continue
        joint = model.joints[k]
        omega = J[3:, joint.idx_v] if joint.nv == 1 else None
        if omega is None or np.linalg.norm(omega) < 0.5:
            raise ModelError(
                f"joint '{model.names[k]}' of robot '{ff.name}' is not a revolute joint; the "
                "base-invariant (Jain-Rodriguez) module handles revolute arm joints only"
            )
        H.append(np.concatenate([omega, J[:3, joint.idx_v] + np.cross(omega, origin[k])])[:, None])

    parent = np.array(model.parents, dtype=int)
    phi_in = np.zeros((n, 6, 6))
    a = np.zeros((n, 6))
    b = np.zeros((n, 6))
    for k in range(1, n):
        p = parent[k]
        phi_in[k] = phi(origin[k] - origin[p]) if p else np.eye(6)
        w = V[k, :3]
        J_O = M[k, :3, :3]
        mp = mass_times_lever(M[k])
        b[k, :3] = np.cross(w, J_O @ w)
        b[k, 3:] = np.cross(w, np.cross(w, mp))
        if p:
            wp = V[p, :3]
            a[k, :3] = np.cross(wp, w)
            a[k, 3:] = np.cross(wp, V[k, 3:] - V[p, 3:])
    children = tuple(tuple(int(c) for c in range(1, n) if parent[c] == k) for k in range(n))
    tree = Tree(6, parent, children, origin, rotation, M, phi_in, tuple(H), V, a, b,
                tuple(model.names))
    return planar_projection(tree) if ff.base == "planar" else tree


def planar_projection(tree: Tree) -> Tree:
    """The same tree in the planar sub-algebra [omega_z; v_x; v_y] (see spatial.py)."""
    E = PLANAR

    def square(X: np.ndarray) -> np.ndarray:
        return X[..., E[:, None], E]

    H = (np.zeros((3, 0)), np.eye(3)) + tuple(h[E] for h in tree.H[2:])
    return Tree(3, tree.parent, tree.children, tree.origin, tree.rotation, square(tree.M),
                square(tree.phi_in), H, tree.V[:, E], tree.a[:, E], tree.b[:, E], tree.names)


def mass_times_lever(M: np.ndarray) -> np.ndarray:
    """m p (3,) read back from a 6 x 6 spatial inertia's m p~ block."""
    return np.array([M[2, 4], M[0, 5], M[1, 3]])

