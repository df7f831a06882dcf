"""What a controller asks of the actuators, before it is mapped onto real ones.

A :class:`ControlEffort` holds joint torques, wheel torques and a base wrench in world axes.
:class:`ActuatorMapper` turns it into an :class:`~freeflyer_control.physics.actuators.Actuation`:
the base wrench goes to the thrusters through the allocator, or, for studies that want ideal
base actuation, straight through as an external wrench. Keeping the two apart lets the mode
switcher blend efforts (bumpless transfer) before anything is allocated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.actuators import Actuation, limit_base_wrench, world_wrench_to_local

BASE_ACTUATION = ("thrusters", "ideal")


@dataclass(frozen=True)
class ControlEffort:
    """Attributes:
    arm_torques: N m, ``ff.arm_joint_names`` order.
    wheel_torques: N m, robot-config wheel order.
    base_wrench_world: about the base_link origin, world axes; spatial (fx, fy, fz, mx, my, mz),
        planar (fx, fy, mz).
    """

    arm_torques: np.ndarray
    wheel_torques: np.ndarray
    base_wrench_world: np.ndarray

    @classmethod
    def zero(cls, ff: FreeFlyerModel) -> "ControlEffort":
        return cls(np.zeros(len(ff.arm_joint_names)), np.zeros(len(ff.wheel_joint_names)), np.zeros(ff.nb))

    def blend(self, other: "ControlEffort", s: float) -> "ControlEffort":
        """(1 - s) self + s other."""
        return ControlEffort(
            (1 - s) * self.arm_torques + s * other.arm_torques,
            (1 - s) * self.wheel_torques + s * other.wheel_torques,
            (1 - s) * self.base_wrench_world + s * other.base_wrench_world,
        )


class ActuatorMapper:
    """Maps efforts onto the robot's actuators.

    Args:
        ff: the robot.
        base_actuation: ``"thrusters"`` (allocate the base wrench to the thrusters, bounded least
            squares) or ``"ideal"`` (apply it as an external wrench on the base, bounded by
            :func:`~freeflyer_control.physics.actuators.base_wrench_limits`).
    """

    def __init__(self, ff: FreeFlyerModel, base_actuation: str = "thrusters"):
        if base_actuation not in BASE_ACTUATION:
            raise ValueError(f"base_actuation must be one of {BASE_ACTUATION}, got '{base_actuation}'")
        if base_actuation == "thrusters" and not ff.thrusters:
            base_actuation = "none"
        self.ff = ff
        self.base_actuation = base_actuation
        self.allocator = None
        if base_actuation == "thrusters":
            from freeflyer_control.control.allocation import ThrusterAllocator

            self.allocator = ThrusterAllocator(ff)
        # achieved - requested (base_link axes): what the thrusters, or the bounded ideal
        # actuator, could not produce.
        self.last_residual = np.zeros(ff.nb)

    def actuation(self, q: np.ndarray, effort: ControlEffort) -> Actuation:
        """The actuator commands for ``effort`` at configuration ``q``."""
        ff = self.ff
        wrench = effort.base_wrench_world
        thrust = np.zeros(len(ff.thrusters))
        external = np.zeros(ff.nb)
        self.last_residual = np.zeros(ff.nb)
        if wrench.any():
            if self.base_actuation == "thrusters":
                result = self.allocator.allocate(world_wrench_to_local(ff, q, wrench))
                thrust = result.forces
                self.last_residual = result.residual
            elif self.base_actuation == "ideal":
                external = limit_base_wrench(ff, wrench)
                self.last_residual = world_wrench_to_local(ff, q, external - wrench)
            else:
                self.last_residual = -world_wrench_to_local(ff, q, wrench)
        return Actuation(effort.arm_torques, effort.wheel_torques, thrust, external)
