"""The robot pose that holds an object: each grasping arm solved (inverse kinematics, base fixed)
so that its end-effector frame sits on its grasp frame (model.objects describes the object).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from freeflyer_control.errors import ModelError
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.model.objects import ObjectConfig
from freeflyer_control.physics.state import make_state

# Largest grasp pose error (m, and rad for the orientation part) that inverse kinematics may
# leave and still call the grasp frame reachable. The held pose is where the closed chain starts,
# so its loop error is this at most: 1 nm, which Baumgarte's stabilisation closes without a
# measurable transient (the bundled objects' loops start below 1e-11 m). Newton converges
# quadratically to ~1e-14 on a reachable frame; an unreachable one stalls millimetres away.
REACH_TOL = 1e-9
# Newton stops here: round-off of the forward kinematics of a ~1 m arm.
_CONVERGED = 1e-13

def check_object(ff: FreeFlyerModel, obj: ObjectConfig, start: np.ndarray | None = None) -> np.ndarray:
    """Check ``obj`` against robot ``ff`` and return the robot's joint angles (rad, ``ff.joint_names``
    order) that hold it: the ready pose (or ``start``, joint angles in the same order, e.g. where
    the arms are now), with each grasping arm solved from there so its end-effector sits on its
    grasp frame (object at ``obj.pose_in_base``, base at the origin).

    Raises:
        ModelError: wrong base type, a grasp naming no end-effector of the robot, or a grasp
            frame that its arm cannot reach (with the distance left).
    """
    if obj.base != ff.base:
        raise ModelError(f"object '{obj.name}' is for {obj.base} robots; robot '{ff.name}' is {ff.base}: "
                         f"choose an object with base: {ff.base}")
    angles = np.zeros(ff.nj)
    index = {n: i for i, n in enumerate(ff.joint_names)}
    for name, value in ff.ready_pose.items():
        angles[index[name]] = value
    if start is not None:
        angles = np.asarray(start, dtype=float).copy()
    state = make_state(ff, joint_positions=angles)
    data = ff.create_data()
    for grasp in obj.grasps:
        if grasp.end_effector not in ff.end_effectors:
            raise ModelError(f"object '{obj.name}': grasp end_effector '{grasp.end_effector}' is not an end-effector "
                             f"of robot '{ff.name}'; its end-effectors: {list(ff.end_effectors)}")
        target = obj.pose_in_base * grasp.placement
        joints = arm_joints(ff, grasp.end_effector)
        q, err = solve_reach(ff, data, state.q, grasp.end_effector, joints, target)
        if err > REACH_TOL:
            p = target.translation
            raise ModelError(
                f"object '{obj.name}': no arm can reach the grasp frame of '{grasp.end_effector}' at "
                f"({p[0]:.3g}, {p[1]:.3g}, {p[2]:.3g}) m in base_link (closest pose {err:.3g} m/rad away); "
                "move pose_in_base or the grasp frame within the arm's reach")
        state.q = q
    return pin.difference(ff.model, pin.neutral(ff.model), state.q)[ff.nb:]


def arm_joints(ff: FreeFlyerModel, end_effector: str) -> list[int]:
    """Velocity indices of the arm joints that move ``end_effector``."""
    model = ff.model
    jid = model.frames[ff.frame_id(end_effector)].parentJoint
    chain = []
    while jid > 1:  # joint 1 is the base
        if model.names[jid] in ff.arm_joint_names:
            chain.append(model.joints[jid].idx_v)
        jid = model.parents[jid]
    return sorted(chain)


def pose_error(ff: FreeFlyerModel, current: pin.SE3, target: pin.SE3) -> np.ndarray:
    """[p - p_target; log3(R R_target^T)] in world axes (m, rad); planar: (x, y, yaw) rows."""
    e = np.concatenate([current.translation - target.translation,
                        pin.log3(current.rotation @ target.rotation.T)])
    return e[[0, 1, 5]] if ff.base == "planar" else e


def solve_reach(ff, data, q0, frame, v_idx, target, iters: int = 200):
    """Newton on the joints at velocity indices ``v_idx`` (one arm; base fixed) from ``q0`` towards the
    pose ``target`` (world) of ``frame``, inside the URDF limits: (q, residual m/rad)."""
    model, fid = ff.model, ff.frame_id(frame)
    rows = [0, 1, 5] if ff.base == "planar" else slice(None)
    q = q0.copy()
    best = (q.copy(), np.inf)
    for _ in range(iters):
        pin.framesForwardKinematics(model, data, q)
        e = pose_error(ff, data.oMf[fid], target)
        err = float(np.abs(e).max())
        if err < best[1]:
            best = (q.copy(), err)
        if err < _CONVERGED:
            break
        J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)[rows][:, v_idx]
        dq = np.zeros(model.nv)
        # Damped far away (a step through a singularity stays bounded), plain Newton close to the
        # frame, where the damping would only slow the quadratic convergence down.
        damping = 1e-6 if err > 1e-6 else 0.0
        dq[v_idx] = -J.T @ np.linalg.lstsq(J @ J.T + damping * np.eye(J.shape[0]), e, rcond=None)[0]
        # Stay inside the URDF limits: a grasp held only past a joint limit is not reachable.
        q = np.clip(pin.integrate(model, q, dq), model.lowerPositionLimit, model.upperPositionLimit)
    return best
