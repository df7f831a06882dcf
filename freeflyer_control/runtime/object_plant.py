"""The plant server's object: held in closed chains, or floating free until a capture closes a grasp.

Held (``free=False``): the robot starts at the pose that holds the object (physics.grasp_pose.check_object)
and the closed-chain plant (physics.closed_chain.ClosedChainPlant) integrates robot and object
with the loops held. Free (``free=True``): the object starts where its config's
``initial_state`` says (or, without one, a few centimetres from the first grasping
end-effector's grasp: sim.capture.target_start, as the batch capture run) and tumbles on its own
plant; a capture request either refuses with the reason or closes the grasp being approached:
the first as a plastic impact (physics.capture.capture_impact), the robot holding the object by
one hand from then on; the second, once the first is closed, as a loop closure
(physics.capture.close_loop), the closed chain from then on.

States: ``held`` (the loops of the object config), ``free`` (before a capture), ``captured``
(``grasps_closed`` says how many).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.control.capture import CaptureTolerances, capture_refusal, relative_motion
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.grasp_pose import check_object
from freeflyer_control.model.objects import ObjectConfig, attach_object, free_object_model
from freeflyer_control.physics.actuators import Actuation, generalized_forces
from freeflyer_control.physics.capture import capture_impact, close_loop, held_frame_motion
from freeflyer_control.physics.closed_chain import ClosedChainPlant
from freeflyer_control.physics.plant import Plant
from freeflyer_control.physics.state import State, base_position, base_rotation, make_state
from freeflyer_control.sim.capture import _object_pose_twist, free_state, request_capture, target_start


@dataclass(frozen=True)
class ObjectReading:
    """The object at one instant: its frame (CoM) pose in world, its twist [v; w] (world axes at
    the CoM; m/s, rad/s), and the wrench each grasping end-effector applies to it ([f; m], N and
    N m, world axes about the end-effector origin; planar robots fill fx, fy, mz). ``wrenches`` is
    empty while the object floats free; ``ee_rotations`` are the end-effector frames' rotations
    in world (a wrench in its end-effector frame is R^T f, R^T m)."""

    pose: pin.SE3
    twist: np.ndarray
    wrenches: dict[str, np.ndarray]
    ee_rotations: dict[str, np.ndarray]


def held_initial_state(ff: FreeFlyerModel, obj: ObjectConfig, base_position_world, base_yaw: float = 0.0) -> State:
    """The robot's state holding ``obj`` (arm angles from check_object, which refuses an object
    no arm reaches with the fix), base at ``base_position_world`` (m, world) and, planar robots,
    heading ``base_yaw`` (rad)."""
    angles = check_object(ff, obj)
    extra = {"base_yaw": base_yaw} if ff.base == "planar" else {}
    return make_state(ff, base_position=base_position_world, joint_positions=angles, **extra)


def free_object_start(ff: FreeFlyerModel, obj: ObjectConfig, robot_state: State) -> tuple[FreeFlyerModel, State]:
    """The free object's model and state: its ``initial_state`` relative to the robot at
    ``robot_state``, or off its held pose (sim.capture.target_start)."""
    free = free_object_model(obj)
    return free, free_state(free, target_start(ff, obj, robot_state))


class ObjectPlant:
    """The robot's plant with the object (see the module docstring); ``plant`` is the robot's
    plant (the closed-chain plant once the object is held or captured)."""

    def __init__(self, ff: FreeFlyerModel, obj: ObjectConfig, state: State, dt: float, *, free: bool = False,
                 tolerances: CaptureTolerances = CaptureTolerances()):
        self.ff, self.obj, self.dt, self.tolerances = ff, obj, dt, tolerances
        self.capture_ee = obj.grasps[0].end_effector
        ff.frame_id(self.capture_ee)  # refuses an end-effector the robot lacks, naming its links
        if free:
            self.plant: Plant = Plant(ff, state, dt)
            self.free, free_state = free_object_start(ff, obj, state)
            self.object_plant: Plant | None = Plant(self.free, free_state, dt)
            self.held_obj = obj
            self.capture_state = "free"
        else:
            self.plant = ClosedChainPlant(attach_object(ff, obj), obj, state, dt)
            self.free, self.object_plant, self.held_obj = None, None, obj
            self.capture_state = "held"
        self.last_refusal = ""
        self.capture_time: float | None = None
        self.impulse: np.ndarray | None = None
        self.grasps_closed = 0 if free else len(obj.grasps)
        second = obj.grasps[1].end_effector if len(obj.grasps) > 1 else None
        self.second_ee = second if second in ff.end_effectors else None

    def step(self, actuation: Actuation) -> None:
        """One period: the robot under ``actuation``, and the free object on its own. Raises
        PlantDiverged like Plant.step."""
        self.plant.step(actuation)
        if self.object_plant is not None:
            self.object_plant.step()

    def request_capture(self) -> tuple[bool, str]:
        """(success, message): the refusal line, or the grasp being approached closed: the first
        (plastic impact, momentum conserved; the impulse on the object), then the second (a loop
        closure, momentum conserved)."""
        if self.capture_state == "captured" and self.grasps_closed == 1 and self.second_ee is not None:
            return self._close_second()
        if self.capture_state != "free":
            return False, (f"capture refused: '{self.obj.name}' is already {self.capture_state}; "
                           "reset the plant to let it float free again")
        refusal = request_capture(self.ff, self.obj, self.capture_ee, self.plant.state, self.free,
                                  self.object_plant.state, self.tolerances)
        if refusal is not None:
            self.last_refusal = refusal
            return False, refusal
        pose, twist = _object_pose_twist(self.free, self.object_plant.state)
        impact = capture_impact(self.ff, self.obj, self.capture_ee, self.plant.state, pose, twist)
        t = self.plant.t
        self.plant = ClosedChainPlant(impact.held, impact.obj, impact.state, self.dt, t)
        self.held_obj, self.object_plant = impact.obj, None
        self.capture_state, self.capture_time, self.impulse, self.last_refusal = "captured", t, impact.impulse, ""
        self.grasps_closed = 1
        return True, (f"captured '{self.obj.name}' with '{self.capture_ee}' at t = {t:.3f} s; impulse on the object "
                      f"{np.array2string(impact.impulse, precision=4)}")

    def _close_second(self) -> tuple[bool, str]:
        """The second hand's grasp on the captured object, within the tolerances."""
        plant, ee = self.plant, self.second_ee
        s = plant.state
        model, data = plant.ff.model, plant.data
        pin.forwardKinematics(model, data, s.q, s.v)
        pin.updateFramePlacements(model, data)
        fe = plant.ff.frame_id(ee)
        grasp, grasp_twist = held_frame_motion(plant.ff, data, self.obj, self.obj.grasps[1].placement)
        rel = relative_motion(data.oMf[fe], pin.getFrameVelocity(model, data, fe, pin.LOCAL_WORLD_ALIGNED).vector,
                              grasp, grasp_twist)
        refusal = capture_refusal(ee, self.obj.name, rel, self.tolerances)
        if refusal is not None:
            self.last_refusal = refusal
            return False, refusal
        closure = close_loop(self.ff, self.held_obj, ee, s)
        self.plant = ClosedChainPlant(closure.held, closure.obj, closure.state, self.dt, plant.t)
        self.held_obj, self.grasps_closed, self.last_refusal = closure.obj, 2, ""
        return True, (f"closed the second grasp on '{self.obj.name}' with '{ee}' at t = {plant.t:.3f} s; impulse "
                      f"{np.array2string(closure.impulse, precision=4)}")

    def reading(self, actuation: Actuation) -> ObjectReading:
        """The object now; grasp wrenches under ``actuation`` (the command being held)."""
        if self.object_plant is not None:
            pose, twist = _object_pose_twist(self.free, self.object_plant.state)
            return ObjectReading(pose, twist, {}, {})
        plant: ClosedChainPlant = self.plant
        s = plant.state
        tau = generalized_forces(plant.ff, s.q, actuation, s.v)
        rows = plant.grasp_wrenches(tau)
        wrenches, rotations = {}, {}
        pin.framesForwardKinematics(plant.ff.model, plant.data, s.q)
        for g, w in zip(self.held_obj.grasps, rows):
            if w.size == 3:  # planar (fx, fy, mz)
                w = np.array([w[0], w[1], 0.0, 0.0, 0.0, w[2]])
            wrenches[g.end_effector] = w
            rotations[g.end_effector] = plant.data.oMf[plant.ff.frame_id(g.end_effector)].rotation.copy()
        return ObjectReading(plant.object_pose(), plant.object_twist(), wrenches, rotations)

    def diagnostics(self) -> dict[str, float | str]:
        """Capture state, the last refusal, when the grasp closed (s) and the loop error (m)."""
        out: dict[str, float | str] = {"object": self.obj.name, "capture_state": self.capture_state}
        if self.last_refusal:
            out["capture_refusal"] = self.last_refusal
        if self.capture_time is not None:
            out["capture_time"] = f"{self.capture_time:.3f}"
        if self.capture_state == "captured":
            out["grasps_closed"] = str(self.grasps_closed)
        if isinstance(self.plant, ClosedChainPlant):
            out["max_grasp_constraint_error_m"] = f"{self.plant.max_constraint_error:.3g}"
            out["max_grasp_constraint_rotation_error_rad"] = f"{self.plant.max_constraint_rotation_error:.3g}"
        return out
