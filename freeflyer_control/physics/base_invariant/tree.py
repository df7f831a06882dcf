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
    PLANAR, cross, from_pinocchio, phi_batch, skew_batch,
)


@dataclass
class Tree:
    """The paper's quantities for every body, indexed like Pinocchio's joints (0 = ground,
    unused). ``dim`` is 6 (spatial) or 3 (planar sub-algebra [omega_z; v_x; v_y]).

    ``common_point``: every body's reference point is the world origin instead of O_k (the
    recursions hold for any choice of body points; with one common point every phi is the
    identity, which :func:`sweeps.osi_all_links` uses to save two 6 x 6 products per body).
    Only for inertias: V, a and b are zero in such a tree.
    """

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
    common_point: bool = False

    @property
    def n(self) -> int:
        return self.parent.shape[0]


@dataclass(frozen=True)
class _Static:
    """What does not change with the state: read from the model once."""

    mass: np.ndarray  # (n,)
    lever: np.ndarray  # (n, 3) CoM in the joint frame
    inertia: np.ndarray  # (n, 3, 3) about the CoM, joint frame
    axis: np.ndarray  # (n, 3) revolute axis in the joint frame (row 1: unused)
    parent: np.ndarray
    children: tuple[tuple[int, ...], ...]


def _static(ff: FreeFlyerModel) -> _Static:
    """The model's constants the sweeps read, once per model (``FreeFlyerModel.derived``)."""
    return ff.derived(_static, _static_of, ff)


def _static_of(ff: FreeFlyerModel) -> _Static:
    model = ff.model
    n = model.njoints
    data = model.createData()
    q0 = pin.neutral(model)
    pin.computeJointJacobians(model, data, q0)
    axis = np.zeros((n, 3))
    for k in range(2, n):
        joint = model.joints[k]
        omega = data.J[3:, joint.idx_v] if joint.nv == 1 else np.zeros(3)
        if np.linalg.norm(omega) < 0.5:
            raise ModelError(
                f"joint '{model.names[k]}' of robot '{ff.name}' is not a revolute joint; the "
                "base-invariant (Jain-Rodriguez) module handles revolute arm joints only"
            )
        axis[k] = data.oMi[k].rotation.T @ omega  # Pinocchio's axes pass through the origin
    parent = np.array(model.parents, dtype=int)
    static = _Static(
        mass=np.array([model.inertias[k].mass for k in range(n)]),
        lever=np.array([model.inertias[k].lever for k in range(n)]),
        inertia=np.array([model.inertias[k].inertia for k in range(n)]),
        axis=axis,
        parent=parent,
        children=tuple(tuple(c for c in range(1, n) if parent[c] == k) for k in range(n)),
    )
    return static


def build_tree(
    ff: FreeFlyerModel,
    data: pin.Data,
    q: np.ndarray,
    v: np.ndarray | None = None,
    *,
    common_point: bool = False,
) -> Tree:
    """The paper's data at configuration ``q`` and velocity ``v`` (Pinocchio's convention;
    ``v=None`` for rest: then a = b = 0, all that the inertias need).

    Args:
        common_point: refer every body to the world origin (see :class:`Tree`); needs
            ``v=None``.

    Raises:
        ModelError: a non-base joint that is not a 1-DOF revolute joint (the paper's Coriolis
            term a(k) is written for revolute hinges).
    """
    if common_point and v is not None:
        raise ValueError("common_point trees carry inertias only: call with v=None")
    st = _static(ff)
    model = ff.model
    n = model.njoints
    if v is None:
        pin.forwardKinematics(model, data, q)
    else:
        pin.forwardKinematics(model, data, q, v)
    origin = np.zeros((n, 3))
    rotation = np.zeros((n, 3, 3))
    rotation[0] = np.eye(3)
    for k in range(1, n):
        oMi = data.oMi[k]
        origin[k], rotation[k] = oMi.translation, oMi.rotation

    # The paper's M(k) = [[J, m p~], [-m p~, m I]] about O_k (or the world origin), with p the
    # vector from that point to the CoM and J = I_com - m p~ p~ (parallel axes), batched.
    com = np.einsum("kij,kj->ki", rotation, st.lever)  # O_k -> CoM, world axes
    point = origin + com if common_point else com  # reference point -> CoM
    pt = skew_batch(point)
    m = st.mass[:, None, None]
    M = np.zeros((n, 6, 6))
    M[:, :3, :3] = rotation @ st.inertia @ rotation.transpose(0, 2, 1) - m * pt @ pt
    M[:, :3, 3:] = m * pt
    M[:, 3:, :3] = -m * pt
    M[:, 3:, 3:] = m * np.eye(3)

    axis = np.einsum("kij,kj->ki", rotation, st.axis)
    hinge = np.zeros((n, 6))
    hinge[:, :3] = axis
    if common_point:  # velocity of the body point at the world origin: O_k x axis per unit rate
        hinge[:, 3:] = cross(origin, axis)
    H = (np.zeros((6, 0)), np.eye(6)) + tuple(hinge[k][:, None] for k in range(2, n))

    parent = st.parent
    if common_point:
        phi_in = np.broadcast_to(np.eye(6), (n, 6, 6))
    else:
        phi_in = phi_batch(origin - origin[parent])
        phi_in[1] = np.eye(6)
    V = np.zeros((n, 6))
    a = np.zeros((n, 6))
    b = np.zeros((n, 6))
    if v is not None:
        for k in range(1, n):
            V[k] = from_pinocchio(rotation[k], data.v[k].vector)
        w = V[:, :3]
        J_O = M[:, :3, :3]
        mp = st.mass[:, None] * com
        b[:, :3] = cross(w, np.einsum("kij,kj->ki", J_O, w))
        b[:, 3:] = cross(w, cross(w, mp))
        wp = w[parent]
        a[:, :3] = cross(wp, w)
        a[:, 3:] = cross(wp, V[:, 3:] - V[parent, 3:])
        a[:2] = 0.0  # the base's hinge is to the (still) ground
    tree = Tree(6, parent, st.children, origin, rotation, M, phi_in, H, V, a, b,
                tuple(model.names), common_point)
    return planar_projection(tree) if ff.base == "planar" else tree


def planar_projection(tree: Tree) -> Tree:
    """The same tree in the planar sub-algebra [omega_z; v_x; v_y] (see spatial.py)."""
    E = PLANAR

    def square(X: np.ndarray) -> np.ndarray:
        return X[..., E[:, None], E]

    H = (np.zeros((3, 0)), np.eye(3)) + tuple(h[E] for h in tree.H[2:])
    return Tree(3, tree.parent, tree.children, tree.origin, tree.rotation, square(tree.M),
                square(tree.phi_in), H, tree.V[:, E], tree.a[:, E], tree.b[:, E], tree.names,
                tree.common_point)
