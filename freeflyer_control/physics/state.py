"""The free-flyer state and the one place where its conventions are converted.

Internally a state is Pinocchio's pair (q, v):

* spatial base: q = [p_world (3), quaternion (x, y, z, w) (4), joints...],
  v = [v_base_local (3), omega_base_local (3), joint rates...]
* planar base: q = [x, y, cos(yaw), sin(yaw), joints...], v = [vx_local, vy_local, wz, ...]

where "local" means expressed in the base_link frame (Pinocchio's free-flyer convention).
The public convention of this package (DESIGN.md §3) is base linear velocity (of the base_link
origin) and angular velocity both expressed in ``world``. Everything that crosses that boundary
goes through the functions of this module.

Continuous joints are stored by Pinocchio as (cos, sin); joint angles <-> q always go through
``pin.integrate`` / ``pin.difference`` from the neutral configuration, never by hand.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel


@dataclass
class State:
    """Configuration and velocity in Pinocchio's convention (see the module docstring).

    Attributes:
        q: configuration, shape (model.nq,).
        v: velocity, shape (model.nv,); base part in the base_link frame.
    """

    q: np.ndarray
    v: np.ndarray

    def copy(self) -> "State":
        return State(self.q.copy(), self.v.copy())


def base_rotation(ff: FreeFlyerModel, q: np.ndarray) -> np.ndarray:
    """Rotation matrix world <- base_link (3x3) for configuration ``q``."""
    if ff.base == "planar":
        c, s = q[2], q[3]
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return pin.Quaternion(q[6], q[3], q[4], q[5]).toRotationMatrix()  # ~0.3 µs faster than
    # base_rotation_into interpreted; the same bits (test/test_compiled_post.py)


def base_rotation_into(planar, q, Rb) -> None:
    """Write :func:`base_rotation` of configuration ``q`` into Rb (3x3).

    Spatial: from q's quaternion (x, y, z, w) = q[3:7] with the formula of Eigen's
    ``Quaternion::toRotationMatrix`` (the same bits as ``pin.Quaternion``; unit norm assumed,
    as Pinocchio does); planar: from (cos yaw, sin yaw) = q[2:4]. Plain scalar code, compiled as
    is for the GJM and H*/C* (physics.kernels.reduced) and the compiled simulation (physics/kernels/rigid_body.py:
    ``base_rotation``); interpreted, Pinocchio's call is faster.
    """
    if planar:
        c, s = q[2], q[3]
        Rb[0, 0], Rb[0, 1], Rb[0, 2] = c, -s, 0.0
        Rb[1, 0], Rb[1, 1], Rb[1, 2] = s, c, 0.0
        Rb[2, 0], Rb[2, 1], Rb[2, 2] = 0.0, 0.0, 1.0
        return
    x, y, z, w = q[3], q[4], q[5], q[6]
    tx, ty, tz = 2.0 * x, 2.0 * y, 2.0 * z
    twx, twy, twz = tx * w, ty * w, tz * w
    txx, txy, txz = tx * x, ty * x, tz * x
    tyy, tyz, tzz = ty * y, tz * y, tz * z
    Rb[0, 0], Rb[0, 1], Rb[0, 2] = 1.0 - (tyy + tzz), txy - twz, txz + twy
    Rb[1, 0], Rb[1, 1], Rb[1, 2] = txy + twz, 1.0 - (txx + tzz), tyz - twx
    Rb[2, 0], Rb[2, 1], Rb[2, 2] = txz - twy, tyz + twx, 1.0 - (txx + tyy)


def rotation_from_xyzw(xyzw: Sequence[float]) -> np.ndarray:
    """Rotation matrix (3x3) of a unit quaternion given in (x, y, z, w) order, as geometry_msgs
    and Pinocchio's ``coeffs()`` store it (Pinocchio's constructor takes w first)."""
    x, y, z, w = xyzw
    return pin.Quaternion(w, x, y, z).toRotationMatrix()


def xyzw_from_rotation(R: np.ndarray) -> np.ndarray:
    """The unit quaternion (x, y, z, w) of rotation matrix ``R``, with w >= 0."""
    q = pin.Quaternion(R).coeffs().copy()
    return q if q[3] >= 0 else -q


def base_position(ff: FreeFlyerModel, q: np.ndarray) -> np.ndarray:
    """Position of the base_link origin in world, m (3,); z = 0 for a planar base."""
    if ff.base == "planar":
        return np.array([q[0], q[1], 0.0])
    return q[:3].copy()


def base_quaternion_xyzw(ff: FreeFlyerModel, q: np.ndarray) -> np.ndarray:
    """Base orientation as a unit quaternion in (x, y, z, w) order (ROS and Pinocchio order)."""
    if ff.base == "planar":
        half = 0.5 * math.atan2(q[3], q[2])   # Python floats: a third of NumPy's scalar calls
        return np.array([0.0, 0.0, math.sin(half), math.cos(half)])
    return q[3:7].copy()


def base_yaw(ff: FreeFlyerModel, q: np.ndarray) -> float:
    """Planar base heading, rad in (-pi, pi]."""
    if ff.base != "planar":
        raise ValueError("base_yaw is defined for a planar base; use base_quaternion_xyzw")
    return float(np.arctan2(q[3], q[2]))


def base_twist_world(ff: FreeFlyerModel, state: State) -> tuple[np.ndarray, np.ndarray]:
    """Base velocity in world: (linear velocity of the base_link origin, angular velocity).

    Returns two 3-vectors, m/s and rad/s, both expressed in world.
    """
    if ff.base == "planar":
        # The 2x2 rotation on Python floats (~1 us; the 3x3 product 5 us): every plant
        # measurement and controller state on a table goes through here.
        c, s, vx, vy, wz = state.q[2], state.q[3], state.v[0], state.v[1], state.v[2]
        return np.array([c * vx - s * vy, s * vx + c * vy, 0.0]), np.array([0.0, 0.0, wz])
    R = base_rotation(ff, state.q)
    return R @ state.v[:3], R @ state.v[3:6]


def base_velocity_local(
    ff: FreeFlyerModel, q: np.ndarray, linear_world: np.ndarray, angular_world: np.ndarray
) -> np.ndarray:
    """Pinocchio base velocity coordinates (nb,) from a base twist expressed in world.

    Args:
        q: configuration (for the base attitude).
        linear_world: velocity of the base_link origin, world frame, m/s (3,).
        angular_world: base angular velocity, world frame, rad/s (3,).
    """
    if ff.base == "planar":   # R^T on the plane, Python floats, as base_twist_world
        c, s = q[2], q[3]
        lx, ly, wz = float(linear_world[0]), float(linear_world[1]), float(angular_world[2])
        return np.array([c * lx + s * ly, c * ly - s * lx, wz])
    Rt = base_rotation(ff, q).T
    lin = Rt @ np.asarray(linear_world, dtype=float)
    ang = Rt @ np.asarray(angular_world, dtype=float)
    return np.concatenate([lin, ang])


def world_to_local_base_map(ff: FreeFlyerModel, q: np.ndarray) -> np.ndarray:
    """Matrix T (nb x nb) with v_base_local = T @ u_world.

    u_world is the base twist in world coordinates, ordered like the local one: spatial
    (vx, vy, vz, wx, wy, wz), planar (vx, vy, wz).
    """
    T = np.empty((ff.nb, ff.nb))
    world_to_local_base_map_into(ff.base == "planar", base_rotation(ff, q), T)
    return T


def world_to_local_base_map_into(planar, Rb, T) -> None:
    """Write :func:`world_to_local_base_map` into T (nb x nb), given the base rotation Rb
    (world <- base_link, 3x3): R^T on the translation block and on the spatial attitude block,
    1 on the planar yaw rate. Compiled as is by physics.kernels.reduced and the compiled simulation;
    scalar loops because the latter runs without numba's runtime, where an array assignment
    from a transposed view does not compile."""
    n = T.shape[0]
    for r in range(n):
        for c in range(n):
            T[r, c] = 0.0
    if planar:
        for r in range(2):
            for c in range(2):
                T[r, c] = Rb[c, r]
        T[2, 2] = 1.0
        return
    for r in range(3):
        for c in range(3):
            T[r, c] = Rb[c, r]
            T[3 + r, 3 + c] = Rb[c, r]


def joint_positions(ff: FreeFlyerModel, q: np.ndarray) -> np.ndarray:
    """Joint angles (rad) / positions (m) in ``ff.joint_names`` order; continuous joints wrap
    to (-pi, pi]."""
    model = ff.model
    # difference() reads the (cos, sin) pairs the way Pinocchio itself defines them.
    return pin.difference(model, pin.neutral(model), q)[ff.nb:]


def make_state(
    ff: FreeFlyerModel,
    *,
    base_position: Sequence[float] = (0.0, 0.0, 0.0),
    base_orientation_xyzw: Sequence[float] | None = None,
    base_yaw: float | None = None,
    base_linear_velocity: Sequence[float] = (0.0, 0.0, 0.0),
    base_angular_velocity: Sequence[float] = (0.0, 0.0, 0.0),
    joint_positions: Mapping[str, float] | Sequence[float] | None = None,
    joint_velocities: Mapping[str, float] | Sequence[float] | None = None,
) -> State:
    """Build a :class:`State` from public quantities.

    Args:
        base_position: base_link origin in world, m. Planar: z must be 0.
        base_orientation_xyzw: unit quaternion (x, y, z, w), world <- base_link. Planar bases
            may give ``base_yaw`` (rad) instead; a planar quaternion must be a pure yaw.
        base_linear_velocity: velocity of the base_link origin, world frame, m/s.
        base_angular_velocity: angular velocity of the base, world frame, rad/s.
        joint_positions, joint_velocities: a mapping joint name -> value, or a sequence in
            ``ff.joint_names`` order. Missing names default to 0.

    Raises:
        ValueError: wrong sizes, unknown joint names, a non-unit quaternion, or motion out of
            the plane for a planar base.
    """
    model = ff.model
    nj = ff.nj
    qj = _joint_vector(ff, joint_positions, "joint_positions")
    vj = _joint_vector(ff, joint_velocities, "joint_velocities")

    pos = np.asarray(base_position, dtype=float)
    if pos.shape != (3,):
        raise ValueError(f"base_position must have 3 entries, got {pos.shape}")

    if ff.base == "planar":
        if base_orientation_xyzw is not None:
            if base_yaw is not None:
                raise ValueError("give base_yaw or base_orientation_xyzw, not both")
            quat = _unit_quaternion(base_orientation_xyzw)
            if math.hypot(quat[0], quat[1]) > 1e-9:
                raise ValueError(f"a planar base can only yaw; quaternion {quat.tolist()} tilts it")
            base_yaw = 2.0 * np.arctan2(quat[2], quat[3])
        yaw = float(base_yaw or 0.0)
        if abs(pos[2]) > 0.0:
            raise ValueError("a planar base stays at z = 0; base_position[2] must be 0")
        base_q = np.array([pos[0], pos[1], np.cos(yaw), np.sin(yaw)])
    else:
        if base_yaw is not None:
            raise ValueError("base_yaw is for a planar base; give base_orientation_xyzw")
        quat = _unit_quaternion(base_orientation_xyzw if base_orientation_xyzw is not None
                                else (0.0, 0.0, 0.0, 1.0))
        base_q = np.concatenate([pos, quat])

    lin_w = np.asarray(base_linear_velocity, dtype=float)
    ang_w = np.asarray(base_angular_velocity, dtype=float)
    if ff.base == "planar" and (abs(lin_w[2]) > 0 or math.hypot(ang_w[0], ang_w[1]) > 0):
        raise ValueError("a planar base moves in x, y and yaws about z only")
    assert qj.size == vj.size == nj
    return assembled_state(ff, base_q, qj, lin_w, ang_w, vj)


def assembled_state(ff: FreeFlyerModel, base_q: np.ndarray, qj: np.ndarray, linear_world: np.ndarray,
                    angular_world: np.ndarray, vj: np.ndarray) -> State:
    """The :class:`State` of quantities already checked (finite, the right sizes, a unit
    quaternion; :func:`make_state` checks them, the controller's message readers do too).

    Args:
        base_q: the base's configuration coordinates: spatial (x, y, z, qx, qy, qz, qw), planar
            (x, y, cos yaw, sin yaw); m and unit quaternion / unit complex number.
        qj, vj: joint positions (rad, m) and velocities, ``ff.joint_names`` order.
        linear_world, angular_world: the base twist, world axes, m/s and rad/s (3,) each.
    """
    model = ff.model
    # Joint angles -> q through Pinocchio's own exponential map (handles continuous joints).
    dq = np.zeros(model.nv)
    dq[ff.nb:] = qj
    q = pin.integrate(model, pin.neutral(model), dq)
    q[: base_q.size] = base_q
    v = np.empty(model.nv)
    v[: ff.nb] = base_velocity_local(ff, q, linear_world, angular_world)
    v[ff.nb:] = vj
    return State(q, v)


def _unit_quaternion(xyzw: Sequence[float]) -> np.ndarray:
    quat = np.asarray(xyzw, dtype=float)
    if quat.shape != (4,) or not np.isfinite(quat).all():
        raise ValueError(f"a quaternion has 4 finite entries (x, y, z, w); got {xyzw!r}")
    norm = np.linalg.norm(quat)
    if abs(norm - 1.0) > 1e-6:
        raise ValueError(f"quaternion (x, y, z, w) {quat.tolist()} is not unit (norm {norm:.6g})")
    return quat / norm


def _joint_vector(ff: FreeFlyerModel, values, what: str) -> np.ndarray:
    out = np.zeros(ff.nj)
    if values is None:
        return out
    if isinstance(values, Mapping):
        index = {n: i for i, n in enumerate(ff.joint_names)}
        for name, value in values.items():
            if name not in index:
                raise ValueError(f"{what}: unknown joint '{name}'; joints: {list(ff.joint_names)}")
            out[index[name]] = float(value)
        return out
    arr = np.asarray(values, dtype=float)
    if arr.shape != (ff.nj,):
        raise ValueError(
            f"{what} must have {ff.nj} entries, one per joint {list(ff.joint_names)}; "
            f"got shape {arr.shape}"
        )
    return arr.copy()


def with_joint_positions(ff: FreeFlyerModel, q: np.ndarray, v_indices: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """A copy of configuration ``q`` with the joints at velocity indices ``v_indices`` set to
    ``angles`` (rad); the base pose and the other joints are kept."""
    model = ff.model
    dq = pin.difference(model, pin.neutral(model), q)
    dq[v_indices] = angles
    out = pin.integrate(model, pin.neutral(model), dq)
    base = 4 if ff.base == "planar" else 7
    out[:base] = q[:base]  # the base pose exactly as given, not through log/exp
    return out


def minus_omega_cross_into(v, planar, out) -> None:
    """Write T' u = -omega_b x nu_b (nb,) into ``out``: the rate of change of the base
    coordinates nu_b = T u (base_link axes) at fixed world velocities u, from Pinocchio's
    velocity ``v`` (base part in base_link axes: linear m/s, then angular rad/s); zero on the
    angular rows. Plain scalar code: the compiled H*/C* (physics.kernels.reduced) compile it too."""
    if planar:
        wz = v[2]
        out[0], out[1], out[2] = wz * v[1], -wz * v[0], 0.0
        return
    w0, w1, w2, v0, v1, v2 = v[3], v[4], v[5], v[0], v[1], v[2]
    out[0], out[1], out[2] = -(w1 * v2 - w2 * v1), -(w2 * v0 - w0 * v2), -(w0 * v1 - w1 * v0)
    out[3], out[4], out[5] = 0.0, 0.0, 0.0
