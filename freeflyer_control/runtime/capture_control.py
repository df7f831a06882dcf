"""The controller server's law for a capture: approach the free object's grasp frame, then rest.

The controller knows the free object (its config) and measures it from the plant's /object/odom
(pose of the object frame, CoM, in world; twist [v; w] in world axes at the CoM). Phases:

* ``approach``: control.capture.ApproachController drives the capturing end-effector (the
  object's first grasp) onto the grasp frame, matching its motion. :meth:`CaptureControl.ready`
  says when the relative pose and speed are within the capture tolerances, the same check the
  plant makes before it closes the grasp (so the node's request is not refused for a
  tolerance the controller could have known about).
* ``captured``: once the plant has closed the grasp, control.capture.RestController stops the
  combined system (the object fixed to the end-effector where it was measured at the grasp).
  In floating mode it stops the joints (the momentum the object brought stays: robot and object
  drift on as one rigid body); in flying mode it stops the base too.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from freeflyer_control.control.capture import (
    ApproachController,
    CaptureTolerances,
    RestController,
    capture_refusal,
    relative_motion,
)
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.model.objects import ObjectConfig, attach_object, with_grasp_placement
from freeflyer_control.physics.actuators import Actuation
from freeflyer_control.physics.gjm import actuated_velocities
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import State

# At rest: every actuated velocity of the combined system below this (m/s, rad/s), as the batch
# capture run (sim.capture.REST_SPEED) counts it.
REST_SPEED = 1e-3


class CaptureControl:
    """Args: ff: the robot (without the object); obj: the free object; mode: floating or flying;
    tolerances: when the grasp may close (the plant's, control.capture.CaptureTolerances)."""

    def __init__(self, ff: FreeFlyerModel, obj: ObjectConfig, mode: Mode | str,
                 tolerances: CaptureTolerances = CaptureTolerances()):
        self.ff, self.obj, self.mode, self.tolerances = ff, obj, Mode.parse(mode), tolerances
        self.ee = obj.grasps[0].end_effector
        self.grasp = obj.grasps[0].placement  # grasp frame in the object frame
        self.approach = ApproachController(ff, self.ee, self.mode)
        self.data = ff.create_data()
        self.phase = "approach"
        self.rest: RestController | None = None
        self.object_pose: pin.SE3 | None = None
        self.object_twist = np.zeros(6)

    def set_object(self, pose: pin.SE3, twist) -> None:
        """The object frame (CoM) in world and its twist [v; w] (m/s, rad/s; world axes at the CoM)."""
        self.object_pose, self.object_twist = pose, np.asarray(twist, dtype=float).reshape(6)

    def _frames(self, state: State):
        """(end-effector pose, its twist, grasp frame pose, its twist), world axes at each origin."""
        pin.forwardKinematics(self.ff.model, self.data, state.q, state.v)
        pin.updateFramePlacements(self.ff.model, self.data)
        fid = self.ff.frame_id(self.ee)
        ee = self.data.oMf[fid]
        ee_twist = pin.getFrameVelocity(self.ff.model, self.data, fid, pin.LOCAL_WORLD_ALIGNED).vector
        grasp = self.object_pose * self.grasp
        v, w = self.object_twist[:3], self.object_twist[3:]
        grasp_twist = np.concatenate([v + np.cross(w, grasp.translation - self.object_pose.translation), w])
        return ee, ee_twist, grasp, grasp_twist

    def refusal(self, state: State) -> str | None:
        """Why the grasp may not close now (the plant's refusal line), or None."""
        if self.object_pose is None:
            return f"capture refused: no odometry of '{self.obj.name}' yet; is the plant publishing /object/odom?"
        return capture_refusal(self.ee, self.obj.name, relative_motion(*self._frames(state)), self.tolerances)

    def ready(self, state: State) -> bool:
        return self.phase == "approach" and self.refusal(state) is None

    def captured(self, state: State) -> None:
        """The plant closed the grasp: hold the object where it is now relative to the end-effector."""
        if self.phase == "captured":
            return
        pin.framesForwardKinematics(self.ff.model, self.data, state.q)
        placement = (self.object_pose.inverse() * self.data.oMf[self.ff.frame_id(self.ee)]
                     if self.object_pose is not None else self.grasp)
        held = attach_object(self.ff, with_grasp_placement(self.obj, self.ee, placement))
        self.rest = RestController(held, self.mode)
        self.phase = "captured"

    def at_rest(self, state: State) -> bool:
        """Captured and every actuated velocity below REST_SPEED."""
        if self.rest is None:
            return False
        return bool(np.abs(actuated_velocities(self.rest.ff, state, self.mode)).max(initial=0.0) < REST_SPEED)

    def tick(self, state: State) -> Actuation | None:
        """The command; None while approaching without a measurement of the object (hold still)."""
        if self.rest is not None:
            return self.rest.actuation(state)
        if self.object_pose is None:
            return None
        ee, _, grasp, grasp_twist = self._frames(state)
        return self.approach.actuation(state, ee, grasp, grasp_twist)
