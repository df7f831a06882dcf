"""The controller server's law when the robot holds an object: control.cooperative behind a target.

The object's target is a pose of its frame (CoM) in world, held (zero twist) until replaced; until
one arrives the law holds the object where it was when control started. The internal-force
setpoint (N) can change at any tick.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from freeflyer_control.control.cooperative import (CooperativeController, CooperativeTick, ObjectReference,
                                                   cooperative_mode_problem)
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.model.objects import ObjectConfig, attach_object
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import State
from freeflyer_control.ros.conversions import MessageError, finite_array

# A target quaternion whose norm is off 1 by more than this is taken for a corrupt message, not
# normalised: 1e-3 admits float32 round trips and hand-typed four-digit quaternions.
QUATERNION_NORM_TOL = 1e-3


class ObjectControl:
    """Args: ff: the robot (without the object); obj: the object it holds; mode: any mode the
    robot's actuators allow; internal_force: squeeze setpoint, N; base_actuation: "thrusters" or
    "ideal" (control.cooperative)."""

    def __init__(self, ff: FreeFlyerModel, obj: ObjectConfig, mode: Mode | str, internal_force: float = 0.0,
                 base_actuation: str = "ideal"):
        self.obj = obj
        self.held = attach_object(ff, obj)
        self.base_actuation = base_actuation
        self.law = CooperativeController(self.held, obj, mode, internal_force, base_actuation=base_actuation)
        self.target: ObjectReference | None = None

    @staticmethod
    def refuses_mode(ff: FreeFlyerModel, mode: Mode) -> str | None:
        return cooperative_mode_problem(ff, mode)

    def set_mode(self, mode: Mode) -> None:
        if mode is not self.law.mode:
            self.law = CooperativeController(self.held, self.obj, mode, self.law.internal_force,
                                             base_actuation=self.base_actuation)

    def set_internal_force(self, newtons: float) -> None:
        if not np.isfinite(newtons):
            raise ValueError(f"internal force setpoint must be a finite number of N, got {newtons}")
        self.law.internal_force = float(newtons)

    def set_target(self, position, orientation_xyzw) -> None:
        """The object frame's target pose: position m (3,), quaternion (x, y, z, w), world."""
        p = finite_array(position, "object target position", 3)
        quat = finite_array(orientation_xyzw, "object target orientation", 4)
        norm = float(np.linalg.norm(quat))
        if abs(norm - 1.0) > QUATERNION_NORM_TOL:
            raise MessageError("quaternion", f"object target orientation quaternion has norm {norm:.6g}; "
                               "send a unit quaternion")
        R = pin.Quaternion(quat[3], *quat[:3]).normalized().toRotationMatrix()
        self.target = ObjectReference(pin.SE3(R, p), np.zeros(6))

    def start(self, state: State) -> None:
        """Hold the object where it is (the target until one arrives)."""
        if self.target is None:
            pose, _ = self.law.measure(state)
            self.target = ObjectReference(pose, np.zeros(6))

    def tick(self, state: State) -> CooperativeTick:
        return self.law.tick(state, self.target)
