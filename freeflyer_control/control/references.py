"""References a maneuver hands to the controllers, in the package's public conventions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class JointReference:
    """Desired arm motion, ``ff.arm_joint_names`` order.

    Attributes:
        position: rad (m for prismatic joints).
        velocity: rad/s.
        acceleration: rad/s^2 (feed-forward; zero where the profile has a step in velocity).
    """

    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray

    @classmethod
    def hold(cls, position: np.ndarray) -> "JointReference":
        position = np.array(position, dtype=float)   # a copy
        # np.zeros, not zeros_like: a third of its cost, and every tick holds a reference
        return cls(position, np.zeros(position.shape), np.zeros(position.shape))


@dataclass(frozen=True)
class BaseReference:
    """Desired base pose and twist, for the base DOFs a mode commands.

    Attributes:
        position: base_link origin in world, m (3,).
        orientation_xyzw: world <- base_link quaternion, (x, y, z, w).
        linear_velocity: of the base_link origin, world axes, m/s (3,).
        angular_velocity: world axes, rad/s (3,).
    """

    position: np.ndarray
    orientation_xyzw: np.ndarray
    linear_velocity: np.ndarray
    angular_velocity: np.ndarray

    @classmethod
    def hold(cls, position: np.ndarray, orientation_xyzw: np.ndarray) -> "BaseReference":
        return cls(np.asarray(position, float).copy(), np.asarray(orientation_xyzw, float).copy(),
                   np.zeros(3), np.zeros(3))


@dataclass(frozen=True)
class TaskReference:
    """Desired pose and twist of an end-effector frame, world axes.

    Attributes:
        frame: the end-effector frame.
        position: m (3,); planar robots use x, y.
        orientation_xyzw: quaternion (x, y, z, w), or None to track position only.
        linear_velocity: feed-forward, m/s (3,).
        angular_velocity: feed-forward, rad/s (3,).
        force_axis: unit vector, world (3,), or None: along it the end-effector pushes with
            ``force`` N instead of tracking ``position`` (contact; the impedance controller's
            hybrid force mode, :class:`~freeflyer_control.control.impedance.TaskTarget`).
        force: N, the push along ``force_axis``.
    """

    frame: str
    position: np.ndarray
    orientation_xyzw: np.ndarray | None
    linear_velocity: np.ndarray
    angular_velocity: np.ndarray
    force_axis: np.ndarray | None = None
    force: float = 0.0
