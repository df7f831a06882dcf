"""Base pose control: desired base accelerations for the base DOFs a mode commands.

A PD law in world axes on the base pose, with the reference's velocity as feed-forward:

    a_lin = Kp_lin (p_d - p) + Kd_lin (v_d - v)
    a_ang = Kp_att log(R_d R^T) + Kd_att (w_d - w)

log(R_d R^T) is the rotation vector (world axes) that takes the current attitude to the desired
one; for a planar base it is the wrapped yaw error. The computed-torque controller turns these
accelerations into wheel torques, thruster couples or thruster forces, whichever the mode allows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.control.references import BaseReference
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.modes import BasePartition
from freeflyer_control.physics.state import State, base_position, base_rotation, base_twist_world, rotation_from_xyzw


@dataclass(frozen=True)
class BaseGains:
    """PD gains of the base pose loop (1/s^2 and 1/s; the same for every axis of a group).

    Defaults give a natural frequency of 0.5 rad/s, critically damped: slow enough for the
    small thrusters of an air-bearing table.
    """

    kp_linear: float = 0.25
    kd_linear: float = 1.0
    kp_attitude: float = 0.25
    kd_attitude: float = 1.0

    def __post_init__(self) -> None:
        for name in ("kp_linear", "kd_linear", "kp_attitude", "kd_attitude"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"base gain {name} must be finite and >= 0, got {value}")


def attitude_error(R_desired: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Rotation vector (world axes, rad) taking R to R_desired: log(R_desired R^T)."""
    return pin.log3(R_desired @ R.T)


def base_pose_error(ff: FreeFlyerModel, state: State, ref: BaseReference) -> tuple[np.ndarray, np.ndarray]:
    """(position error m, attitude error rad), world axes (3,) each."""
    R_d = rotation_from_xyzw(ref.orientation_xyzw)
    return ref.position - base_position(ff, state.q), attitude_error(R_d, base_rotation(ff, state.q))


def base_accelerations(
    ff: FreeFlyerModel,
    state: State,
    ref: BaseReference,
    gains: BaseGains,
    partition: BasePartition,
) -> np.ndarray:
    """Desired accelerations of the commanded base coordinates (world axes, partition order).

    Spatial coordinates are (vx, vy, vz, wx, wy, wz), planar (vx, vy, wz): the order of
    ``partition.commanded`` (see :func:`freeflyer_control.physics.modes.base_partition`).
    """
    e_pos, e_att = base_pose_error(ff, state, ref)
    lin, ang = base_twist_world(ff, state)
    a_lin = gains.kp_linear * e_pos + gains.kd_linear * (ref.linear_velocity - lin)
    a_ang = gains.kp_attitude * e_att + gains.kd_attitude * (ref.angular_velocity - ang)
    full = np.array([a_lin[0], a_lin[1], a_ang[2]]) if ff.base == "planar" else np.concatenate([a_lin, a_ang])
    return full[partition.commanded]
