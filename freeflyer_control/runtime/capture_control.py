"""The controller server's law for a capture: control.capture_mission.CaptureMission behind the
object's odometry and the plant's capture service.

The controller knows the free object (its config) and measures it from the plant's /object/odom
(pose of the object frame, CoM, in world; twist [v; w] in world axes at the CoM). The mission's
phases (``approach``, ``stow``, ``reach``, ``hold``, ``rest``) run here as in
``freeflyer sim --maneuver capture``. :meth:`CaptureControl.ready` says when the grasp being
approached is within the capture tolerances, the same check the plant makes before it closes it
(so the node's request is not refused for a tolerance the controller could have known about);
:meth:`CaptureControl.captured` is the plant's yes: the first grasp (the object fixed to the hand
where it was measured) or the second (the loop closed where the hand is).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from freeflyer_control.control.capture import CaptureTolerances
from freeflyer_control.control.capture_mission import CaptureMission, CaptureOptions
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.model.objects import ObjectConfig, with_grasp_placement
from freeflyer_control.physics.actuators import Actuation
from freeflyer_control.physics.capture import close_loop
from freeflyer_control.physics.free_body import BodyState, predicted_frame_path
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import State, base_rotation


class CaptureControl:
    """Args: ff: the robot (without the object); obj: the free object; mode: floating,
    rotation-floating or flying; tolerances: when a grasp may close (the plant's); approach,
    bias, both_arms, base_actuation: control.capture_mission.CaptureOptions."""

    def __init__(self, ff: FreeFlyerModel, obj: ObjectConfig, mode: Mode | str,
                 tolerances: CaptureTolerances = CaptureTolerances(), *, approach: str = "naive",
                 bias: bool = False, both_arms: bool = True, base_actuation: str = "thrusters"):
        self.ff, self.obj = ff, obj
        self.mission = CaptureMission(ff, obj, CaptureOptions(
            mode=Mode.parse(mode).value, approach=approach, bias=bias, both_arms=both_arms,
            base_actuation=base_actuation, tolerances=tolerances))
        self.object_pose: pin.SE3 | None = None
        self.object_twist = np.zeros(6)
        self.t = 0.0
        self.start_attitude: np.ndarray | None = None  # the base's, at the first tick (world <- base)

    @property
    def phase(self) -> str:
        return self.mission.phase

    @property
    def mode(self) -> Mode:
        return self.mission.mode

    def set_object(self, pose: pin.SE3, twist) -> None:
        """The object frame (CoM) in world and its twist [v; w] (m/s, rad/s; world axes at the CoM)."""
        self.object_pose, self.object_twist = pose, np.asarray(twist, dtype=float).reshape(6)

    def _target(self) -> BodyState | None:
        if self.object_pose is None:
            return None
        return BodyState(self.object_pose, self.object_twist[:3].copy(), self.object_twist[3:].copy())

    def _needs_odometry(self) -> bool:
        return self.mission.phase == "approach" and self.object_pose is None

    def refusal(self, state: State) -> str | None:
        """Why the grasp being approached may not close now (the plant's refusal line), or None."""
        if self._needs_odometry():
            return f"capture refused: no odometry of '{self.obj.name}' yet; is the plant publishing /object/odom?"
        return self.mission.grasp_refusal(state, self._target())

    def ready(self, state: State) -> bool:
        return self.mission.phase in ("approach", "reach") and self.refusal(state) is None

    def captured(self, state: State) -> None:
        """The plant closed the grasp being approached: hold the object where it is now."""
        mission = self.mission
        if mission.phase == "approach":
            ee = mission.first.end_effector
            data = self.ff.create_data()
            pin.framesForwardKinematics(self.ff.model, data, state.q)
            hand = data.oMf[self.ff.frame_id(ee)]
            placement = self.object_pose.inverse() * hand if self.object_pose is not None else mission.first.placement
            mission.grasped(state, with_grasp_placement(self.obj, ee, placement), self.t)
        elif mission.phase == "reach":
            closure = close_loop(self.ff, mission.held_obj, mission.second.end_effector, state)
            mission.loop_closed(state, closure.held, closure.obj, self.t)

    def at_rest(self, state: State) -> bool:
        """Every actuated velocity of the stack at rest (control.capture_mission.REST_SPEED)."""
        return self.mission.at_rest(state)

    def tick(self, state: State, t: float | None = None) -> Actuation | None:
        """The command for the period from ``t`` (s; default: one period after the last); None
        while the target is needed and not yet measured (hold still)."""
        if t is not None:
            self.t = t
        if self.start_attitude is None:
            self.start_attitude = base_rotation(self.ff, state.q)
        if self._needs_odometry():
            return None
        return self.mission.actuation(state, self.t, self._target())

    def predicted_grasp_path(self, horizon: float = 10.0, samples: int = 40) -> np.ndarray:
        """(samples, 3) positions (world, m) of the first grasp frame over the next ``horizon`` s,
        from the target's measured state and its torque-free motion (physics.free_body); empty
        once the grasp has closed or before the target is measured."""
        target = self._target()
        if self.mission.phase != "approach" or target is None:
            return np.zeros((0, 3))
        path = predicted_frame_path(self.mission.body, target, self.mission.first.placement, horizon, samples)
        return np.array([m.pose.translation for m in path])

    def base_attitude_error(self, state: State) -> np.ndarray:
        """The base's attitude change since the first tick, a rotation vector (world axes, rad)."""
        if self.start_attitude is None:
            return np.zeros(3)
        return pin.log3(base_rotation(self.ff, state.q) @ self.start_attitude.T)
