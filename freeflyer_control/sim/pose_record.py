"""The pose series every run records, so its replay and its MCAP can rebuild where everything was.

A robot's configuration is its base pose (``base_position``, ``base_orientation_xyzw``: base_link
in world, m and a unit (x, y, z, w) quaternion), its base twist (``base_linear_velocity`` of the
base_link origin and ``base_angular_velocity``, both world axes, m/s and rad/s) and its
``joint_positions`` (rad or m, ``ff.joint_names`` order: arm joints and wheels). An object's is
``object_position`` / ``object_orientation_xyzw`` (its frame, at its CoM, in world) and its
twist at the CoM (``object_linear_velocity``, ``object_angular_velocity``, world axes). The
lockstep recorder (:class:`freeflyer_control.sim.runner.Recorder`) writes the robot's under the
same names; the object and capture runs write theirs through this module.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from freeflyer_control.physics.state import (
    State,
    base_position,
    base_quaternion_xyzw,
    base_twist_world,
    joint_positions,
    xyzw_from_rotation,
)

XYZ = ["x", "y", "z"]
QUATERNION = ["qx", "qy", "qz", "qw"]


def robot_pose_columns(ff) -> dict[str, list[str]]:
    return {"base_position": XYZ, "base_orientation_xyzw": QUATERNION, "base_linear_velocity": XYZ,
            "base_angular_velocity": XYZ, "joint_positions": list(ff.joint_names)}


def robot_pose_sample(ff, state: State) -> dict[str, np.ndarray]:
    """One sample of :func:`robot_pose_columns` for ``state`` of ``ff``."""
    lin, ang = base_twist_world(ff, state)
    return {"base_position": base_position(ff, state.q), "base_orientation_xyzw": base_quaternion_xyzw(ff, state.q),
            "base_linear_velocity": lin, "base_angular_velocity": ang,
            "joint_positions": joint_positions(ff, state.q)}


def object_pose_columns() -> dict[str, list[str]]:
    return {"object_position": XYZ, "object_orientation_xyzw": QUATERNION, "object_linear_velocity": XYZ,
            "object_angular_velocity": XYZ}


def object_pose_sample(pose: pin.SE3, twist: np.ndarray) -> dict[str, np.ndarray]:
    """One sample of :func:`object_pose_columns`: ``pose`` of the object frame in world and its
    ``twist`` [v; w] at the CoM, world axes (6,)."""
    return {"object_position": pose.translation.copy(), "object_orientation_xyzw": xyzw_from_rotation(pose.rotation),
            "object_linear_velocity": np.asarray(twist[:3], dtype=float),
            "object_angular_velocity": np.asarray(twist[3:], dtype=float)}


def grasp_wrench_columns(end_effectors, planar: bool) -> dict[str, list[str]]:
    """``grasp_wrenches``: per grasp, the wrench the end-effector applies to the object, world
    axes, about the end-effector origin (planar [fx, fy, mz], spatial [fx, fy, fz, mx, my, mz])."""
    axes = ["fx", "fy", "mz"] if planar else ["fx", "fy", "fz", "mx", "my", "mz"]
    return {"grasp_wrenches": [f"{ee}_{a}" for ee in end_effectors for a in axes]}
