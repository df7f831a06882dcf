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

A second hand closing on the held object (:func:`close_loop`) closes a loop of the same system:
an impulse Lambda between that hand and the object brings their relative twist J nu to zero,

    M nu^+ = M nu^- + J^T Lambda,   J nu^+ = 0   =>   Lambda = -(J M^-1 J^T)^-1 J nu^-

(J the loop's relative Jacobian, physics.closed_chain.loop_terms). It acts between two bodies of
one system, so momentum is conserved through it too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.model.objects import ObjectConfig, attach_object, with_grasp_placement, with_grasps
from freeflyer_control.physics.closed_chain import loop_terms
from freeflyer_control.physics.dynamics import mass_matrix
from freeflyer_control.physics.linalg import cross3, solve
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


@dataclass(frozen=True)
class LoopClosure:
    """A second grasp closing on the held object.

    Attributes:
        held: the robot holding the object with both grasps (attach_object of ``obj``).
        obj: the object with its grasps as they closed (the first one carries it).
        state: just after the closure (the loop's relative twist zero).
        impulse: Lambda on the closing end-effector, world axes about its origin (planar
            (fx, fy, mz) N s and N m s).
    """

    held: FreeFlyerModel
    obj: ObjectConfig
    state: State
    impulse: np.ndarray


def close_loop(ff: FreeFlyerModel, obj: ObjectConfig, end_effector: str, state: State) -> LoopClosure:
    """Close ``end_effector``'s grasp on the object that ``obj`` (one grasp, as captured: the robot
    ``ff`` without the object) describes, where the hand is now (see the module docstring).

    Args:
        state: the robot holding the object by its first grasp (attach_object(ff, obj)'s
            coordinates, which the second grasp does not change) just before the closure.
    """
    first = attach_object(ff, obj)
    data = first.create_data()
    pin.framesForwardKinematics(first.model, data, state.q)
    placement = data.oMf[first.frame_id(obj.name)].inverse() * data.oMf[first.frame_id(end_effector)]
    both = with_grasps(obj, [(g.end_effector, g.placement) for g in obj.grasps] + [(end_effector, placement)])
    held = attach_object(ff, both)
    hdata = held.create_data()
    loops = loop_terms(held, hdata, both, state.q, state.v)
    M = mass_matrix(held, hdata, state.q)
    J = loops.J
    MinvJt = solve(M, J.T)
    impulse = -solve(J @ MinvJt, J @ state.v)
    v_after = state.v + MinvJt @ impulse
    return LoopClosure(held, both, State(state.q.copy(), v_after), impulse)


def held_frame_motion(held: FreeFlyerModel, data: pin.Data, obj: ObjectConfig, placement: pin.SE3) -> tuple[pin.SE3, np.ndarray]:
    """(pose in world, twist [v; w] world axes at its origin) of the frame ``placement`` (in the
    object frame) of the object ``held`` carries, from ``data`` holding the forward kinematics
    with velocities and the frame placements (a second hand's grasp frame on a captured target)."""
    fid = held.frame_id(obj.name)
    X_o = data.oMf[fid]
    pose = X_o * placement
    v_o = pin.getFrameVelocity(held.model, data, fid, pin.LOCAL_WORLD_ALIGNED)
    r = pose.translation - X_o.translation
    return pose, np.concatenate([v_o.linear + cross3(v_o.angular, r), v_o.angular])
