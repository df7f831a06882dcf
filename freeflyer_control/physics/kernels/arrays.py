"""Flat arrays of a FreeFlyerModel for the compiled kernels (no numba needed here).

Body ``i`` of the arrays is Pinocchio joint ``i + 1`` (the universe is dropped; the base joint
is body 0, whose parent is -1). Every body carries:

* ``jint[i] = (parent, kind, idx_q, idx_v, nv)``, kind one of the ``KIND_*`` codes;
* ``placement_R[i]``, ``placement_p[i]``: Pinocchio's ``jointPlacements[i + 1]`` (parent joint
  frame <- joint frame at q = neutral);
* ``axis[i]``: the joint axis in the joint frame (revolute / prismatic joints);
* the body's rigid inertia about the joint origin in joint axes: ``mass[i]``, first moment
  ``h[i] = m c`` and rotational inertia ``Ibar[i]`` about the joint origin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from freeflyer_control.model.loader import FreeFlyerModel

KIND_FREEFLYER, KIND_PLANAR, KIND_REVOLUTE, KIND_REVOLUTE_UNBOUNDED, KIND_PRISMATIC = range(5)

_UNIT = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}


class NotCovered(ValueError):
    """The model (or run configuration) is outside what the compiled path implements."""


def _unaligned_axis(joint) -> np.ndarray:
    """The unit axis of a 1-DOF unaligned joint in its own frame: its motion subspace S at any
    q, angular half for revolute joints, linear for prismatic (the bindings give no ``axis`` for
    the unbounded revolute one)."""
    data = joint.createData()
    q = np.zeros(joint.idx_q + joint.nq)
    q[joint.idx_q] = 1.0  # (cos, sin) = (1, 0) for the unbounded revolute; 1 rad / 1 m otherwise
    joint.calc(data, q)
    S = np.asarray(data.S, dtype=float).reshape(6)
    return (S[:3] if joint.shortname() == "JointModelPrismaticUnaligned" else S[3:]).copy()


def _joint_kind(joint) -> tuple[int, np.ndarray]:
    name = joint.shortname()
    if name == "JointModelFreeFlyer":
        return KIND_FREEFLYER, np.zeros(3)
    if name == "JointModelPlanar":
        return KIND_PLANAR, np.zeros(3)
    for prefix, kind in (("JointModelRUB", KIND_REVOLUTE_UNBOUNDED), ("JointModelR", KIND_REVOLUTE),
                         ("JointModelP", KIND_PRISMATIC)):
        rest = name[len(prefix):]
        if name.startswith(prefix) and rest in _UNIT:
            return kind, np.array(_UNIT[rest])
    unaligned = {
        "JointModelRevoluteUnaligned": KIND_REVOLUTE,
        "JointModelRevoluteUnboundedUnaligned": KIND_REVOLUTE_UNBOUNDED,
        "JointModelPrismaticUnaligned": KIND_PRISMATIC,
    }
    if name in unaligned:
        return unaligned[name], _unaligned_axis(joint)
    raise NotCovered(f"joint type {name} is not implemented by the compiled kernels")


@dataclass(frozen=True)
class KernelModel:
    """The arrays (see the module docstring) plus the index maps the controller needs."""

    jint: np.ndarray  # (N, 5) int64
    placement_R: np.ndarray  # (N, 3, 3)
    placement_p: np.ndarray  # (N, 3)
    axis: np.ndarray  # (N, 3)
    mass: np.ndarray  # (N,)
    h: np.ndarray  # (N, 3)
    Ibar: np.ndarray  # (N, 3, 3)
    nq: int
    nv: int
    nb: int
    planar: bool
    arm_v: np.ndarray  # velocity indices of the arm joints (arm order)
    arm_q: np.ndarray  # configuration index of each arm joint
    arm_kind: np.ndarray  # joint kind of each arm joint
    wheel_v: np.ndarray  # velocity indices of the wheels (config order)
    effort: np.ndarray  # arm effort limits (arm order)

    def arrays(self) -> tuple:
        """The tuple the kernels take as ``km``."""
        return (self.jint, self.placement_R, self.placement_p, self.axis, self.mass, self.h, self.Ibar)


def kernel_model(ff: FreeFlyerModel) -> KernelModel:
    """Extract the kernel arrays from ``ff`` (raises :class:`NotCovered` for other joint types)."""
    model = ff.model
    n = model.njoints - 1
    jint = np.zeros((n, 5), dtype=np.int64)
    R = np.zeros((n, 3, 3))
    p = np.zeros((n, 3))
    axis = np.zeros((n, 3))
    mass = np.zeros(n)
    h = np.zeros((n, 3))
    Ibar = np.zeros((n, 3, 3))
    for i in range(1, model.njoints):
        joint = model.joints[i]
        kind, ax = _joint_kind(joint)
        if (i == 1) != (kind in (KIND_FREEFLYER, KIND_PLANAR)):
            raise NotCovered("the base joint must be joint 1 and the only free-flyer / planar joint")
        b = i - 1
        jint[b] = (model.parents[i] - 1, kind, joint.idx_q, joint.idx_v, joint.nv)
        placement = model.jointPlacements[i]
        R[b], p[b] = placement.rotation, placement.translation
        axis[b] = ax
        inertia = model.inertias[i]
        m, c, Ic = float(inertia.mass), np.asarray(inertia.lever, float), np.asarray(inertia.inertia, float)
        cx = np.array([[0.0, -c[2], c[1]], [c[2], 0.0, -c[0]], [-c[1], c[0], 0.0]])
        mass[b], h[b], Ibar[b] = m, m * c, Ic - m * cx @ cx
    arm_v = np.asarray(ff.arm_v_indices, dtype=np.int64)
    v_to_body = {int(jint[b, 3]): b for b in range(n)}
    arm_bodies = [v_to_body[int(i)] for i in arm_v]
    return KernelModel(
        jint=jint, placement_R=R, placement_p=p, axis=axis, mass=mass, h=h, Ibar=Ibar,
        nq=model.nq, nv=model.nv, nb=ff.nb, planar=ff.base == "planar",
        arm_v=arm_v,
        arm_q=np.array([jint[b, 2] for b in arm_bodies], dtype=np.int64),
        arm_kind=np.array([jint[b, 1] for b in arm_bodies], dtype=np.int64),
        wheel_v=np.asarray(ff.wheel_v_indices, dtype=np.int64).reshape(-1),
        effort=np.asarray(ff.arm_effort_limits, dtype=float),
    )


def frames_in_bodies(ff: FreeFlyerModel, names) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(body (k,) int64, R (k, 3, 3), p (k, 3)) of the frames ``names``: the kernel body each is
    fixed to (:func:`kernel_model`'s numbering: joint i moves body i - 1) and its placement in
    that body (rotation, translation m), as the kernels' frame arguments take them."""
    frames = [ff.model.frames[ff.frame_id(name)] for name in names]
    return (np.array([f.parentJoint - 1 for f in frames], dtype=np.int64),
            np.array([f.placement.rotation for f in frames], dtype=float).reshape(-1, 3, 3),
            np.array([f.placement.translation for f in frames], dtype=float).reshape(-1, 3))
