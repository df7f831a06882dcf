"""States and velocity maps between two rootings of the same robot (model/reroot.py).

The joint angles and rates of a re-rooted robot equal the original's (each reversed joint keeps
its angle: axis and direction both flip); only the base coordinates change, to the pose and
twist of the new root link. So the map of generalized velocities is

    nu_src = T nu_dst,   T = [J_dst(src base link, LOCAL) ; joint selection by name]

(doc 004 App. A's T_{n,k}, built here from a frame Jacobian), and M_dst = T^T M_src T.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.state import State, joint_positions, make_state, xyzw_from_rotation

_PLANAR_ROWS = np.array([0, 1, 5])


def map_state(src: FreeFlyerModel, state: State, dst: FreeFlyerModel) -> State:
    """The state of ``dst`` (same robot, rooted elsewhere) that is the same physical state as
    ``state`` of ``src``. Planar: the new root moves in the plane z = 0 (a constant z offset
    of the root link changes no planar quantity)."""
    model, data = src.model, src.create_data()
    fid = src.frame_id(dst.base_link)
    pin.forwardKinematics(model, data, state.q, state.v)
    pin.updateFramePlacements(model, data)
    pose = data.oMf[fid]
    twist = pin.getFrameVelocity(model, data, fid, pin.LOCAL_WORLD_ALIGNED)
    angles = dict(zip(src.joint_names, joint_positions(src, state.q)))
    rates = {n: float(state.v[src.joint_v_index(n)]) for n in src.joint_names}
    if dst.base == "planar":
        R = pose.rotation
        base = dict(base_position=(*pose.translation[:2], 0.0),
                    base_yaw=float(np.arctan2(R[1, 0], R[0, 0])),
                    base_linear_velocity=(*twist.linear[:2], 0.0),
                    base_angular_velocity=(0.0, 0.0, twist.angular[2]))
    else:
        base = dict(base_position=pose.translation,
                    base_orientation_xyzw=xyzw_from_rotation(pose.rotation),
                    base_linear_velocity=twist.linear, base_angular_velocity=twist.angular)
    return make_state(dst, **base, joint_positions=angles, joint_velocities=rates)


def velocity_map(src: FreeFlyerModel, dst: FreeFlyerModel, q_dst: np.ndarray) -> np.ndarray:
    """T (src.nv x dst.nv) with nu_src = T nu_dst at the configuration ``q_dst`` of ``dst``."""
    data = dst.create_data()
    fid = dst.frame_id(src.base_link)
    J = pin.computeFrameJacobian(dst.model, data, q_dst, fid, pin.LOCAL)
    T = np.zeros((src.model.nv, dst.model.nv))
    T[: src.nb] = J[_PLANAR_ROWS] if src.base == "planar" else J
    for name in src.joint_names:
        T[src.joint_v_index(name), dst.joint_v_index(name)] = 1.0
    return T
