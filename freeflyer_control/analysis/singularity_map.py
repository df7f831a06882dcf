"""Dynamic singularity maps: how close the floating-mode GJM is to losing rank, over joint space.

A free-floating robot's end-effector moves in inertial space as t = J*(q, base attitude) q_dot
(J*: the floating-mode Generalized Jacobian at zero momentum). Where J* loses rank the point
cannot move in some direction whatever the joints do: a *dynamic singularity* (Papadopoulos),
which depends on the mass properties as well as on the kinematics. A map evaluates the smallest
singular value sigma_min of J* (and, for a square 2x2 block, its determinant) over many joint
configurations.

Two ways to get J* at many configurations:

* ``method="closed-form"`` (planar bases, revolute joints about z; vectorised over the batch).
  At the neutral configuration with the base_link at the world origin and zero yaw
  ("neutral world") Pinocchio gives, once, each body's mass m_k, its inertia about z I_k, its CoM
  c_k and its joint's position p_k and axis sign s_k (+1 for +z). Every axis stays parallel to z,
  so the product of exponentials places everything at joint angles q (base yaw theta0):

      phi_k = phi_parent + s_k q_k                 (absolute angle; base: theta0)
      P_k   = P_parent + Rot(phi_parent) (p_k - p_parent)          (joint k; base: 0)
      C_k   = P_k + Rot(phi_k) (c_k - p_k),   E = P_e + Rot(phi_e) (e - p_e)  (CoMs, the point)

  Zero momentum eliminates the base velocity (v, w) in closed form. With M the total mass,
  c = sum m_k C_k / M the system CoM, and for the subtree moved by joint i (bodies beyond it)
  S_i = sum m_k C_k, Q_i = sum (m_k |C_k|^2 + I_k), u_i = S_i - m_sub,i P_i:

      P = 0:  v = -w z x c - sum_i p_i qdot_i / M,          p_i = s_i z x u_i
      L = 0:  w = -sum_i k_i qdot_i / I_C,                  k_i = s_i (Q_i - S_i.P_i - c.u_i)
              I_C = Q_all - M |c|^2   (inertia of the whole system about its CoM)
      J*_xy[:, i] = [i moves E] s_i z x (E - P_i) - p_i / M - (k_i / I_C) z x (E - c)
      J*_wz[i]    = [i moves E] s_i - k_i / I_C

  (p_i and k_i are the linear momentum and the angular momentum about c per unit rate of joint
  i with the base held.) Base yaw only rotates the vx, vy rows, so sigma_min depends on the
  joint angles only. This is the Schur complement J - J_b M_bb^-1 M_bq of physics.gjm with its
  3x3 base block (the composite inertia) inverted by hand; ``test/test_workspace.py`` checks it
  against :func:`~freeflyer_control.physics.gjm.generalized_jacobian` to 1e-10.
* ``method="pinocchio"`` (any robot, spatial too): a plain loop over configurations, each one a
  :func:`~freeflyer_control.physics.state.make_state` and a
  :func:`~freeflyer_control.physics.gjm.generalized_jacobian` call. It is the reference for the
  closed form and the baseline of ``bench/bench_analysis.py``; it is not vectorised.

Conventions: configurations are arrays (n_configs, n) of joint angles in rad, columns in
``ff.arm_joint_names`` order; reaction wheels are held at angle 0 with zero rate (they do not
enter J* then, unless a wheel's CoM is off its axis, which the bundled robots avoid). The base
is at the world origin, zero momentum. Rows are the point's velocity in world axes (m/s per
rad/s, planar (vx, vy) by default); the angular row wz is in rad/s per rad/s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pinocchio as pin

from freeflyer_control.errors import ModelError
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.gjm import PLANAR_ROWS, SPATIAL_ROWS, generalized_jacobian
from freeflyer_control.physics.state import make_state

# "Marked singular": sigma_min <= SINGULAR_RTOL * sigma_max, the rule
# physics.singularity.singularity_measures uses for the rank. 1e-6 is far above round-off (the
# closed form and Pinocchio agree to ~1e-13 on entries of order 0.1-1, so no regular
# configuration is marked singular by numerical noise) and far below any usable margin: there
# resolved-rate control would need joint rates 1e6 times the commanded end-effector speed.
SINGULAR_RTOL = 1e-6

# Configurations per vectorised chunk: a few MB of temporaries per body, whatever the batch size.
CHUNK = 1 << 16


# ---------------------------------------------------------------------------------------------
# The planar robot's numbers


@dataclass(frozen=True)
class PlanarChain:
    """What the closed-form zero-momentum kinematics of a planar robot needs (module docstring).

    Bodies are Pinocchio's joints 1.. (body 0 is the base), in Pinocchio order: a parent always
    comes before its children. Positions are in "neutral world": base_link at the world origin,
    yaw 0, every joint angle 0; metres.

    Attributes:
        robot, frame: names; ``point``: the analysed point in ``frame`` coordinates, m.
        joint_names: configuration variables (``ff.arm_joint_names``), the columns of J*.
        parent: (n_bodies,) parent body index, -1 for the base.
        q_index: (n_bodies,) column of the joint that turns the body, -1 for the base and for
            reaction wheels (held at angle 0).
        axis_sign: (n_bodies,) +1 if the joint turns about +z, -1 about -z.
        joint_pos: (n_bodies, 2) joint position (base: the base_link origin, 0).
        mass: (n_bodies,) kg; ``izz``: (n_bodies,) inertia about the world z axis through the
            body's CoM, kg m^2; ``com``: (n_bodies, 2) CoM.
        frame_body: body carrying the point; ``frame_pos``: (2,) the point.
        moves_frame: (n_bodies,) True for the bodies between the base and ``frame_body``.
    """

    robot: str
    frame: str
    point: np.ndarray
    joint_names: tuple[str, ...]
    parent: np.ndarray
    q_index: np.ndarray
    axis_sign: np.ndarray
    joint_pos: np.ndarray
    mass: np.ndarray
    izz: np.ndarray
    com: np.ndarray
    frame_body: int
    frame_pos: np.ndarray
    moves_frame: np.ndarray = field(repr=False)

    @property
    def n_bodies(self) -> int:
        return int(self.mass.size)

    @property
    def n_joints(self) -> int:
        return len(self.joint_names)

    @property
    def frame_joints(self) -> tuple[str, ...]:
        """The configuration joints between the base and the frame (its own arm)."""
        return tuple(self.joint_names[i] for i in self.q_index[self.moves_frame] if i >= 0)


def planar_chain(
    ff: FreeFlyerModel, frame: str, point: Sequence[float] | None = None
) -> PlanarChain:
    """Read a planar robot's numbers out of its Pinocchio model (see :class:`PlanarChain`).

    Raises:
        ModelError: the base is spatial, or a joint is not a revolute joint about z.
    """
    if ff.base != "planar":
        raise ModelError(
            f"robot '{ff.name}' has a spatial base: the closed-form GJM is for planar bases; "
            "use method='pinocchio' (a per-configuration loop) for spatial robots"
        )
    model = ff.model
    data = model.createData()
    q0 = pin.neutral(model)  # base at the origin, yaw 0, every joint at 0
    pin.computeJointJacobians(model, data, q0)  # also runs the forward kinematics
    pin.updateFramePlacements(model, data)
    fid = ff.frame_id(frame)
    point_arr = np.zeros(3) if point is None else np.asarray(point, dtype=float)
    if point_arr.shape != (3,):
        raise ValueError(f"point must be 3 coordinates in frame '{frame}' (m), got {point!r}")

    n_bodies = model.njoints - 1
    parent = np.array([model.parents[j] - 1 for j in range(1, model.njoints)], dtype=int)
    q_index = np.full(n_bodies, -1, dtype=int)
    axis_sign = np.ones(n_bodies)
    joint_pos = np.zeros((n_bodies, 2))
    mass, izz, com = np.zeros(n_bodies), np.zeros(n_bodies), np.zeros((n_bodies, 2))
    column = {name: i for i, name in enumerate(ff.arm_joint_names)}
    for j in range(1, model.njoints):
        b = j - 1
        oMi = data.oMi[j]
        inertia = model.inertias[j]
        mass[b] = inertia.mass
        com[b] = oMi.act(inertia.lever)[:2]
        # The body turns about world z; its inertia about that axis, whatever its frame's tilt.
        izz[b] = (oMi.rotation @ inertia.inertia @ oMi.rotation.T)[2, 2]
        if j == 1:
            continue  # the base: position 0, angle theta0
        name = model.names[j]
        joint_pos[b] = oMi.translation[:2]
        axis = data.J[3:, model.joints[j].idx_v]  # world angular velocity per unit rate
        if model.joints[j].nv != 1 or abs(abs(axis[2]) - 1.0) > 1e-9:
            raise ModelError(
                f"joint '{name}' of robot '{ff.name}' is not a revolute joint about z; the "
                "closed-form GJM handles planar chains of revolute joints only; use "
                "method='pinocchio'"
            )
        axis_sign[b] = np.sign(axis[2])
        q_index[b] = column.get(name, -1)  # wheels are not configuration variables

    frame_body = model.frames[fid].parentJoint - 1
    moves_frame = np.zeros(n_bodies, dtype=bool)
    b = frame_body
    while b >= 0:
        moves_frame[b] = True
        b = parent[b]
    return PlanarChain(
        robot=ff.name, frame=frame, point=point_arr, joint_names=tuple(ff.arm_joint_names),
        parent=parent, q_index=q_index, axis_sign=axis_sign, joint_pos=joint_pos, mass=mass,
        izz=izz, com=com, frame_body=int(frame_body),
        frame_pos=data.oMf[fid].act(point_arr)[:2], moves_frame=moves_frame,
    )


# ---------------------------------------------------------------------------------------------
# Vectorised kinematics and GJM (planar)


@dataclass(frozen=True)
class ChainPose:
    """Positions at a batch of configurations, world frame, base_link origin at the world origin.

    Attributes (m): joint_x, joint_y, com_x, com_y: (n_bodies, n); point: (n, 2); com: (n, 2)
    the system CoM. cos, sin: (n_bodies, n) of each body's absolute angle.
    """

    cos: np.ndarray
    sin: np.ndarray
    joint_x: np.ndarray
    joint_y: np.ndarray
    com_x: np.ndarray
    com_y: np.ndarray
    point: np.ndarray
    com: np.ndarray


def chain_pose(chain: PlanarChain, q: np.ndarray, base_yaw: float = 0.0) -> ChainPose:
    """Joint, body-CoM, point and system-CoM positions at configurations ``q`` (n, n_joints)."""
    q = _as_batch(chain, q)
    n = q.shape[0]
    nb = chain.n_bodies
    cos, sin = np.empty((nb, n)), np.empty((nb, n))
    jx, jy = np.zeros((nb, n)), np.zeros((nb, n))
    cx, cy = np.empty((nb, n)), np.empty((nb, n))
    angle = np.empty((nb, n))
    for b in range(nb):
        p = chain.parent[b]
        if p < 0:
            angle[b] = base_yaw
        else:
            i = chain.q_index[b]
            angle[b] = angle[p] + chain.axis_sign[b] * q[:, i] if i >= 0 else angle[p]
            # Product of exponentials: the parent's joint, then the parent-fixed offset.
            dx, dy = chain.joint_pos[b] - chain.joint_pos[p]
            jx[b] = jx[p] + cos[p] * dx - sin[p] * dy
            jy[b] = jy[p] + sin[p] * dx + cos[p] * dy
        np.cos(angle[b], out=cos[b])
        np.sin(angle[b], out=sin[b])
        dx, dy = chain.com[b] - chain.joint_pos[b]
        cx[b] = jx[b] + cos[b] * dx - sin[b] * dy
        cy[b] = jy[b] + sin[b] * dx + cos[b] * dy
    f = chain.frame_body
    dx, dy = chain.frame_pos - chain.joint_pos[f]
    point = np.stack([jx[f] + cos[f] * dx - sin[f] * dy, jy[f] + sin[f] * dx + cos[f] * dy], axis=1)
    m = chain.mass[:, None]
    com = np.stack([(m * cx).sum(0), (m * cy).sum(0)], axis=1) / chain.mass.sum()
    return ChainPose(cos, sin, jx, jy, cx, cy, point, com)


def point_from_com(chain: PlanarChain, q: np.ndarray, base_yaw: float = 0.0) -> np.ndarray:
    """Position of the analysed point relative to the system CoM, world axes, m (n, 2).

    At zero momentum the system CoM is fixed in inertial space: this is the end-effector
    position the workspaces are measured in.
    """
    pose = chain_pose(chain, q, base_yaw)
    return pose.point - pose.com


def gjm_batch(chain: PlanarChain, q: np.ndarray, base_yaw: float = 0.0) -> np.ndarray:
    """Floating-mode GJM at zero momentum for every configuration, closed form, vectorised.

    Args:
        q: (n, n_joints) joint angles, rad, columns ``chain.joint_names``.
        base_yaw: base heading, rad (rotates the vx, vy rows only).

    Returns:
        (n, 3, n_joints): rows vx, vy (m/s per rad/s) and wz (rad/s per rad/s) of the point in
        world axes; columns ``chain.joint_names``. Equals
        ``generalized_jacobian(ff, data, state, "floating", frame, point=point).matrix``.
    """
    return gjm_and_position(chain, q, base_yaw)[0]


def gjm_and_position(
    chain: PlanarChain, q: np.ndarray, base_yaw: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`gjm_batch` and :func:`point_from_com` together (one pass of the kinematics)."""
    q = _as_batch(chain, q)
    J = np.empty((q.shape[0], 3, chain.n_joints))
    rel = np.empty((q.shape[0], 2))
    for start in range(0, q.shape[0], CHUNK):
        part = slice(start, start + CHUNK)
        pose = chain_pose(chain, q[part], base_yaw)
        J[part] = _gjm_chunk(chain, pose)
        rel[part] = pose.point - pose.com
    return J, rel


def _gjm_chunk(chain: PlanarChain, pose: ChainPose) -> np.ndarray:
    """The formulas of the module docstring on one chunk."""
    m = chain.mass
    M = float(m.sum())
    # Subtree sums, leaves first (children come after their parent in Pinocchio's order).
    S_x, S_y = m[:, None] * pose.com_x, m[:, None] * pose.com_y
    Q = m[:, None] * (pose.com_x**2 + pose.com_y**2) + chain.izz[:, None]
    m_sub = m.copy()
    for b in range(chain.n_bodies - 1, 0, -1):
        p = chain.parent[b]
        S_x[p] += S_x[b]
        S_y[p] += S_y[b]
        Q[p] += Q[b]
        m_sub[p] += m_sub[b]
    c_x, c_y = pose.com[:, 0], pose.com[:, 1]
    I_C = Q[0] - M * (c_x**2 + c_y**2)
    e_x, e_y = pose.point[:, 0], pose.point[:, 1]
    rel_x, rel_y = e_x - c_x, e_y - c_y  # point relative to the system CoM

    J = np.zeros((pose.point.shape[0], 3, chain.n_joints))
    for b in np.flatnonzero(chain.q_index >= 0):
        i, s = chain.q_index[b], chain.axis_sign[b]
        P_x, P_y = pose.joint_x[b], pose.joint_y[b]
        u_x, u_y = S_x[b] - m_sub[b] * P_x, S_y[b] - m_sub[b] * P_y
        w = -s * (Q[b] - S_x[b] * P_x - S_y[b] * P_y - c_x * u_x - c_y * u_y) / I_C
        # -p_i / M with p_i = s z x u, plus w z x (E - c):
        J[:, 0, i] = (s * u_y) / M - w * rel_y
        J[:, 1, i] = (-s * u_x) / M + w * rel_x
        J[:, 2, i] = w
        if chain.moves_frame[b]:  # the joint also carries the point (fixed-base term)
            J[:, 0, i] -= s * (e_y - P_y)
            J[:, 1, i] += s * (e_x - P_x)
            J[:, 2, i] += s
    return J


# ---------------------------------------------------------------------------------------------
# Per-configuration reference (any robot)


def gjm_loop(
    ff: FreeFlyerModel,
    frame: str,
    q: np.ndarray,
    *,
    point: Sequence[float] | None = None,
    base_yaw: float = 0.0,
) -> np.ndarray:
    """The package's floating-mode GJM at each configuration: a plain Pinocchio loop.

    Args:
        q: (n, len(ff.arm_joint_names)) arm-joint angles, rad; wheels at 0, zero momentum, the
            base at the world origin (planar: with heading ``base_yaw``; spatial: identity).

    Returns:
        (n, rows, len(ff.arm_joint_names)): ``GJM.matrix`` at each configuration (planar rows
        vx, vy, wz; spatial vx, vy, vz, wx, wy, wz).
    """
    q = np.atleast_2d(np.asarray(q, dtype=float))
    if q.shape[1] != len(ff.arm_joint_names):
        raise ValueError(
            f"configurations need {len(ff.arm_joint_names)} columns, one per arm joint "
            f"{list(ff.arm_joint_names)}; got shape {q.shape}"
        )
    data = ff.create_data()
    planar = ff.base == "planar"
    pose = {"base_yaw": base_yaw} if planar else {}
    out = np.empty((q.shape[0], 3 if planar else 6, q.shape[1]))
    for k, angles in enumerate(q):
        state = make_state(ff, joint_positions=dict(zip(ff.arm_joint_names, angles)), **pose)
        out[k] = generalized_jacobian(ff, data, state, "floating", frame, point=point).matrix
    return out


# ---------------------------------------------------------------------------------------------
# Singular values


def singular_values(J: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Smallest and largest singular values of a batch of matrices (n, r, c), over min(r, c).

    Two-row matrices (the planar position block) in closed form: sigma_max^2 is the larger
    eigenvalue of the 2x2 Gram matrix G = J J^T and sigma_min = sqrt(det G) / sigma_max, det G
    by Cauchy-Binet as the sum of the squared 2x2 minors. That keeps sigma_min accurate to
    round-off relative to sigma_max even at a singularity (the textbook (tr - sqrt(...)) / 2
    cancels there). Other shapes go through LAPACK's batched SVD.
    """
    J = np.asarray(J, dtype=float)
    if J.ndim != 3:
        raise ValueError(f"expected a batch of matrices (n, rows, cols), got shape {J.shape}")
    n, r, c = J.shape
    if r != 2 or c < 2:
        s = np.linalg.svd(J, compute_uv=False)
        return s[:, -1], s[:, 0]
    a, d = np.einsum("nj,nj->n", J[:, 0], J[:, 0]), np.einsum("nj,nj->n", J[:, 1], J[:, 1])
    b = np.einsum("nj,nj->n", J[:, 0], J[:, 1])
    smax = np.sqrt(0.5 * (a + d) + np.hypot(0.5 * (a - d), b))
    det_g = np.zeros(n)
    for i in range(c):
        for j in range(i + 1, c):
            det_g += (J[:, 0, i] * J[:, 1, j] - J[:, 0, j] * J[:, 1, i]) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        smin = np.where(smax > 0, np.sqrt(det_g) / smax, 0.0)
    return smin, smax


@dataclass(frozen=True)
class SingularitySample:
    """sigma_min, sigma_max (and det for a square 2x2 block) of J* at a batch of configurations.

    Attributes:
        q: (n, len(joint_names)) rad.
        joint_names: the configuration columns (``ff.arm_joint_names``).
        rows, columns: the block of J* measured (row names as in physics.gjm; joint names).
        sigma_min, sigma_max: (n,), units of the block (m/s per rad/s for position rows).
        det: (n,) determinant of a 2x2 block, else None. Its sign tells the two sides of the
            singular set apart.
        method: ``"closed-form"`` or ``"pinocchio"``.
    """

    q: np.ndarray
    joint_names: tuple[str, ...]
    rows: tuple[str, ...]
    columns: tuple[str, ...]
    sigma_min: np.ndarray
    sigma_max: np.ndarray
    det: np.ndarray | None
    method: str

    def ratio(self) -> np.ndarray:
        """sigma_min / sigma_max (inverse condition number), 0 where J* vanishes."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.sigma_max > 0, self.sigma_min / self.sigma_max, 0.0)

    def singular(self, rtol: float = SINGULAR_RTOL) -> np.ndarray:
        """Marked singular: sigma_min <= rtol sigma_max (numerical rank below full)."""
        return self.sigma_min <= rtol * self.sigma_max


def singularity_sample(
    ff: FreeFlyerModel,
    frame: str,
    q: np.ndarray,
    *,
    point: Sequence[float] | None = None,
    rows: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    method: str = "auto",
) -> SingularitySample:
    """Measures of the floating-mode GJM of ``frame`` at configurations ``q``.

    Args:
        q: (n, len(ff.arm_joint_names)) arm-joint angles, rad.
        point: point in ``frame`` coordinates, m (default its origin).
        rows: twist rows to keep; default planar ("vx", "vy") (the end-effector position, as
            in Papadopoulos), spatial all six.
        columns: joint columns to keep; default the arm joints that carry ``frame`` (other arms
            held still).
        method: ``"closed-form"`` (planar, vectorised), ``"pinocchio"`` (per-configuration
            loop, any robot) or ``"auto"`` (closed form where it applies).
    """
    planar = ff.base == "planar"
    row_names = PLANAR_ROWS if planar else SPATIAL_ROWS
    rows = tuple(rows) if rows is not None else (("vx", "vy") if planar else SPATIAL_ROWS)
    unknown = [r for r in rows if r not in row_names]
    if unknown:
        raise ValueError(f"unknown GJM rows {unknown}; this robot's rows are {list(row_names)}")
    columns = tuple(columns) if columns is not None else frame_arm_joints(ff, frame)
    missing = [c for c in columns if c not in ff.arm_joint_names]
    if missing:
        raise ValueError(f"unknown arm joints {missing}; arm joints: {list(ff.arm_joint_names)}")
    chain = _closed_form_chain(ff, frame, point, method)
    q = np.atleast_2d(np.asarray(q, dtype=float))
    if chain is not None:
        J, method = gjm_batch(chain, q), "closed-form"
    else:
        J, method = gjm_loop(ff, frame, q, point=point), "pinocchio"
    J = J[:, [row_names.index(r) for r in rows]]
    J = J[:, :, [ff.arm_joint_names.index(c) for c in columns]]
    smin, smax = singular_values(J)
    det = J[:, 0, 0] * J[:, 1, 1] - J[:, 0, 1] * J[:, 1, 0] if J.shape[1:] == (2, 2) else None
    return SingularitySample(q, tuple(ff.arm_joint_names), rows, columns, smin, smax, det, method)


def frame_arm_joints(ff: FreeFlyerModel, frame: str) -> tuple[str, ...]:
    """The arm joints between the base and ``frame``, in ``ff.arm_joint_names`` order."""
    model = ff.model
    support = {model.names[j] for j in model.supports[model.frames[ff.frame_id(frame)].parentJoint]}
    joints = tuple(n for n in ff.arm_joint_names if n in support)
    if not joints:
        raise ModelError(
            f"frame '{frame}' is on the base of robot '{ff.name}': no arm joint moves it"
        )
    return joints


def _closed_form_chain(
    ff: FreeFlyerModel, frame: str, point: Sequence[float] | None, method: str
) -> PlanarChain | None:
    """The planar chain for the closed form, or None for the Pinocchio loop."""
    if method not in ("auto", "closed-form", "pinocchio"):
        raise ValueError(f"method must be 'auto', 'closed-form' or 'pinocchio', got '{method}'")
    if method == "pinocchio":
        return None
    if method == "closed-form":
        return planar_chain(ff, frame, point)  # raises saying why not
    if ff.base != "planar":
        return None
    try:
        return planar_chain(ff, frame, point)
    except ModelError:  # e.g. a prismatic joint: the loop handles it
        return None


def _as_batch(chain: PlanarChain, q: np.ndarray) -> np.ndarray:
    q = np.atleast_2d(np.asarray(q, dtype=float))
    if q.ndim != 2 or q.shape[1] != chain.n_joints:
        raise ValueError(
            f"configurations need {chain.n_joints} columns, one per arm joint "
            f"{list(chain.joint_names)}; got shape {q.shape}"
        )
    return q


# ---------------------------------------------------------------------------------------------
# Gridded maps and their plots


@dataclass(frozen=True)
class SingularityMap:
    """A singularity map over a grid of two joints (the others fixed).

    Attributes:
        robot, frame: names.
        joints: the two grid joints; ``axes``: their angles, rad (axis 0: joints[0]).
        fixed: the other arm joints' angles, rad.
        sample: the measures, flattened in C order over (axes[0], axes[1]).
    """

    robot: str
    frame: str
    joints: tuple[str, str]
    axes: tuple[np.ndarray, np.ndarray]
    fixed: dict[str, float]
    sample: SingularitySample

    @property
    def shape(self) -> tuple[int, int]:
        return (self.axes[0].size, self.axes[1].size)

    def grid(self, values: np.ndarray) -> np.ndarray:
        """A per-configuration array of the sample as a (len(axes[0]), len(axes[1])) grid."""
        return np.asarray(values).reshape(self.shape)

    def plot(self, path: str | Path, rtol: float = SINGULAR_RTOL) -> Path:
        """Write a PNG: log10(sigma_min / sigma_max) over the grid, the singular set drawn as
        the det = 0 contour (2x2 blocks) or the ratio = ``rtol`` contour."""
        import matplotlib

        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt

        ratio = self.grid(self.sample.ratio())
        fig, ax = plt.subplots(figsize=(6.4, 5.4))
        extent = (self.axes[1][0], self.axes[1][-1], self.axes[0][0], self.axes[0][-1])
        image = ax.imshow(np.log10(np.maximum(ratio, 1e-16)), origin="lower", extent=extent,
                          aspect="auto", cmap="viridis")
        fig.colorbar(image, ax=ax, label="log10(sigma_min / sigma_max)")
        X, Y = np.meshgrid(self.axes[1], self.axes[0])
        if self.sample.det is not None:
            ax.contour(X, Y, self.grid(self.sample.det), levels=[0.0], colors="red", linewidths=1.2)
            what = "red: det J* = 0"
        else:
            ax.contour(X, Y, ratio, levels=[rtol], colors="red", linewidths=1.2)
            what = f"red: sigma_min = {rtol:g} sigma_max"
        ax.set_xlabel(f"{self.joints[1]} (rad)")
        ax.set_ylabel(f"{self.joints[0]} (rad)")
        ax.set_title(f"{self.robot}: dynamic singularities of '{self.frame}' ({what})", fontsize=9)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return path


# resolution^2 configurations of a few hundred bytes each: 2048 is about 1 GB at most.
MAX_RESOLUTION = 2048


def singularity_map(
    ff: FreeFlyerModel,
    frame: str,
    *,
    joints: Sequence[str] | None = None,
    resolution: int = 512,
    span: tuple[float, float] = (-np.pi, np.pi),
    fixed: Mapping[str, float] | None = None,
    point: Sequence[float] | None = None,
    rows: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    method: str = "auto",
) -> SingularityMap:
    """Evaluate the GJM's singular values on a resolution x resolution grid of two joints.

    Args:
        joints: the two grid joints; default the first two joints that carry ``frame``.
        span: the range of both axes, rad (endpoints included).
        fixed: angles of the other arm joints, rad (default 0).
        point, rows, columns, method: as in :func:`singularity_sample`.
    """
    joints = tuple(joints) if joints is not None else frame_arm_joints(ff, frame)[:2]
    if len(joints) != 2 or any(j not in ff.arm_joint_names for j in joints):
        raise ValueError(
            f"a map needs two arm joints out of {list(ff.arm_joint_names)}, got {list(joints)}"
        )
    if not 2 <= resolution <= MAX_RESOLUTION:
        raise ValueError(f"resolution must be from 2 to {MAX_RESOLUTION} points per axis, got {resolution}")
    fixed = dict(fixed or {})
    for name in fixed:
        if name not in ff.arm_joint_names or name in joints:
            raise ValueError(
                f"fixed joint '{name}' must be an arm joint other than the grid joints {joints}; "
                f"arm joints: {list(ff.arm_joint_names)}"
            )
    axes = (np.linspace(*span, resolution), np.linspace(*span, resolution))
    a, b = np.meshgrid(*axes, indexing="ij")
    q = np.zeros((a.size, len(ff.arm_joint_names)))
    for name, value in fixed.items():
        q[:, ff.arm_joint_names.index(name)] = value
    q[:, ff.arm_joint_names.index(joints[0])] = a.ravel()
    q[:, ff.arm_joint_names.index(joints[1])] = b.ravel()
    sample = singularity_sample(ff, frame, q, point=point, rows=rows, columns=columns,
                                method=method)
    return SingularityMap(ff.name, frame, (joints[0], joints[1]), axes, fixed, sample)
