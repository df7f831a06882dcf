"""Capture of a free-floating object: the grasp closes as a plastic impact (impulse dynamics).

Before the grasp the robot (nu^-, Pinocchio velocity coordinates) and the object (twist v_o^-,
world axes at its CoM) move independently. The grasp fixes the object to the end-effector where
it is (model.objects.with_grasp_placement, attach_object), and an impulsive grasp wrench brings
both to a common motion nu^+ in one instant. Integrating the equations of motion over the
impact, with G the object's twist per unit nu in the combined system and M_o its inertia (world
axes at the CoM):

    M_held nu^+ = M_robot nu^- + G^T M_o v_o^-       (M_held = M_robot + G^T M_o G)

the generalized momentum of robot plus object is the same just before and just after, so in
floating mode the system's linear and angular momentum are conserved through the impact (the
kinetic energy is not: a plastic impact dissipates). The impulse on the object is
M_o (G nu^+ - v_o^-).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.model.objects import ObjectConfig, attach_object, with_grasp_placement
from freeflyer_control.physics.dynamics import mass_matrix
from freeflyer_control.physics.linalg import solve
from freeflyer_control.physics.state import State

_PLANAR_ROWS = np.array([0, 1, 5])


def object_inertia_world(obj: ObjectConfig, R: np.ndarray, planar: bool) -> np.ndarray:
    """M_o: [m I, 0; 0, R I R^T] (6x6; planar (vx, vy, wz) rows 3x3), world axes at the CoM."""
    Mo = np.zeros((6, 6))
    Mo[:3, :3] = obj.mass * np.eye(3)
    Mo[3:, 3:] = R @ obj.inertia @ R.T
    return Mo[np.ix_(_PLANAR_ROWS, _PLANAR_ROWS)] if planar else Mo


@dataclass(frozen=True)
class CaptureImpact:
    """The outcome of a grasp closing.

    Attributes:
        held: the robot holding the object where it was grasped.
        obj: the object with that one grasp.
        state: the combined system just after the impact.
        impulse: on the object, world axes at its CoM: spatial [N s; N m s], planar (x, y, z-moment).
    """

    held: FreeFlyerModel
    obj: ObjectConfig
    state: State
    impulse: np.ndarray


def capture_impact(ff: FreeFlyerModel, obj: ObjectConfig, end_effector: str, robot_state: State,
                   object_pose: pin.SE3, object_twist: np.ndarray) -> CaptureImpact:
    """Close ``end_effector``'s grasp on the free object (see the module docstring).

    Args:
        robot_state: the robot just before the impact.
        object_pose: the object frame (CoM) in world.
        object_twist: [v; w] of the object, world axes at its CoM (6,), m/s and rad/s.
    """
    planar = ff.base == "planar"
    data = ff.create_data()
    q = robot_state.q
    pin.framesForwardKinematics(ff.model, data, q)
    placement = object_pose.inverse() * data.oMf[ff.frame_id(end_effector)]
    grasped = with_grasp_placement(obj, end_effector, placement)
    held = attach_object(ff, grasped)
    hdata = held.create_data()
    pin.computeJointJacobians(held.model, hdata, q)
    pin.updateFramePlacements(held.model, hdata)
    G = pin.getFrameJacobian(held.model, hdata, held.frame_id(obj.name), pin.LOCAL_WORLD_ALIGNED)
    v_o = np.asarray(object_twist, dtype=float)
    if planar:
        G, v_o = G[_PLANAR_ROWS], v_o[_PLANAR_ROWS]
    Mo = object_inertia_world(obj, hdata.oMf[held.frame_id(obj.name)].rotation, planar)
    p = mass_matrix(ff, data, q) @ robot_state.v + G.T @ Mo @ v_o
    v_after = solve(mass_matrix(held, hdata, q), p)
    impulse = Mo @ (G @ v_after - v_o)
    return CaptureImpact(held, grasped, State(q.copy(), v_after), impulse)
