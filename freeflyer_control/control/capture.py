"""Capture of a tumbling object: approach its grasp frame, close the grasp within tolerances, then
bring the combined system to rest.

Approach: resolved rate through the mode's GJM of the capturing end-effector (the free base
motion set by the momentum), v* = v_grasp + K_p e(X_grasp, X_ee), u* = J^+ (v* - drift), and
computed torque on the mode-reduced dynamics (physics.reduced, wheels idle) for u' = K_v (u* - u).
Rest: the same computed torque with u' = -K_v u over the combined system (object held).
Floating mode can only stop the joints: the momentum the object brought stays, and the robot and
object drift on as one rigid body; flying mode also stops the base with the base wrench. Arm
torques are clipped to the URDF effort limits here (the plant clips them too, and bounds the base
wrench), so the commands stay inside what the actuators give.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.control.allocation import ThrusterAllocator
from freeflyer_control.errors import ModeError
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.actuators import Actuation
from freeflyer_control.physics.gjm import actuated_velocities, generalized_jacobian
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.reduced import reduced_dynamics
from freeflyer_control.physics.state import State, world_to_local_base_map

CAPTURE_MODES = (Mode.FLOATING, Mode.FLYING)
_PLANAR_ROWS = np.array([0, 1, 5])


@dataclass(frozen=True)
class CaptureTolerances:
    """The grasp closes only when the end-effector is this close to its grasp frame: position m,
    angle rad, relative linear speed m/s, relative angular speed rad/s."""

    position: float = 0.005
    angle: float = 0.05
    speed: float = 0.02
    angular_speed: float = 0.05


def relative_motion(ee: pin.SE3, ee_twist: np.ndarray, grasp: pin.SE3, grasp_twist: np.ndarray) -> np.ndarray:
    """(distance m, angle rad, linear speed m/s, angular speed rad/s) of the end-effector frame
    relative to the grasp frame; twists [v; w] in world axes at each frame's origin."""
    dv = np.asarray(ee_twist) - np.asarray(grasp_twist)
    return np.array([np.linalg.norm(ee.translation - grasp.translation),
                     np.linalg.norm(pin.log3(ee.rotation @ grasp.rotation.T)),
                     np.linalg.norm(dv[:3]), np.linalg.norm(dv[3:])])


def capture_refusal(end_effector: str, object_name: str, rel: np.ndarray, tol: CaptureTolerances) -> str | None:
    """Why a grasp may not close now (one line naming the first tolerance missed), or None."""
    checks = (("is", "m from", tol.position, "m", "approach first"),
              ("is turned", "rad from", tol.angle, "rad", "align first"),
              ("moves", "m/s relative to", tol.speed, "m/s", "match the target's motion first"),
              ("turns", "rad/s relative to", tol.angular_speed, "rad/s", "match the target's spin first"))
    for value, (verb, what, limit, unit, fix) in zip(rel, checks):
        if value > limit:
            return (f"capture refused: end-effector '{end_effector}' {verb} {value:.3g} {what} the grasp frame of "
                    f"'{object_name}' (tolerance {limit:g} {unit}); {fix}")
    return None


class _ComputedTorque:
    """u' -> actuation through the mode-reduced dynamics (wheels idle), arm torques clipped."""

    def __init__(self, ff: FreeFlyerModel, mode: Mode):
        if mode not in CAPTURE_MODES:
            raise ModeError(f"capture flies {[m.value for m in CAPTURE_MODES]}; mode '{mode.value}' is not supported "
                            "yet: choose floating or flying")
        self.ff, self.mode, self.data = ff, mode, ff.create_data()
        fastpath.warm("reduced")  # compile (first use) or load it now, not on a tick
        self.allocator = ThrusterAllocator(ff) if mode is Mode.FLYING and ff.thrusters else None

    def actuation(self, state: State, u_dot: np.ndarray) -> Actuation:
        """``u_dot`` in GJM column order (arm joints, then commanded base in world axes)."""
        ff = self.ff
        n_arm = ff.arm_v_indices.size
        rd = reduced_dynamics(ff, self.data, state, self.mode, idle_wheels=True)  # (base, arm) order
        acc = np.concatenate([u_dot[n_arm:], u_dot[:n_arm]])
        tau = rd.H @ acc + rd.C
        nc = tau.size - n_arm
        limits = ff.arm_effort_limits
        arm = np.clip(tau[nc:], -limits, limits)
        if self.allocator is not None:
            # The base wrench from the thrusters, each in [0, max_force]: a wrench they cannot
            # make becomes the closest one they can (control.allocation).
            wrench = world_to_local_base_map(ff, state.q) @ tau[:nc]
            return Actuation(arm_torques=arm, thruster_forces=self.allocator.allocate(wrench).forces)
        if self.mode is Mode.FLYING:
            return Actuation(arm_torques=arm, base_wrench_world=tau[:nc].copy())
        return Actuation(arm_torques=arm)


class ApproachController:
    """Drives ``end_effector`` onto a moving grasp frame (see the module docstring)."""

    def __init__(self, ff: FreeFlyerModel, end_effector: str, mode: Mode | str,
                 position_gain: float = 1.5, velocity_gain: float = 20.0, damping: float = 1e-2,
                 max_speed: float = 0.1, max_angular_speed: float = 0.3):
        self.ct = _ComputedTorque(ff, Mode.parse(mode))
        self.ff, self.ee, self.mode = ff, end_effector, Mode.parse(mode)
        self.kp, self.kv, self.damping = position_gain, velocity_gain, damping
        self.max_speed, self.max_angular_speed = max_speed, max_angular_speed
        self.rows = _PLANAR_ROWS if ff.base == "planar" else slice(None)

    def actuation(self, state: State, ee: pin.SE3, grasp: pin.SE3, grasp_twist: np.ndarray) -> Actuation:
        """``grasp_twist``: [v; w] of the grasp frame, world axes at its origin."""
        # The closing speed is bounded (m/s, rad/s): from far away the end-effector comes in at a
        # walking pace, not in one jump that the joints' rate limits could not follow.
        lin = _bounded(self.kp * (grasp.translation - ee.translation), self.max_speed)
        ang = _bounded(self.kp * pin.log3(grasp.rotation @ ee.rotation.T), self.max_angular_speed)
        v_star = (np.asarray(grasp_twist) + np.concatenate([lin, ang]))[self.rows]
        g = generalized_jacobian(self.ff, self.ct.data, state, self.mode, self.ee)
        J = g.matrix
        u_star = J.T @ np.linalg.solve(J @ J.T + self.damping ** 2 * np.eye(J.shape[0]), v_star - g.drift)
        u = actuated_velocities(self.ff, state, self.mode)
        return self.ct.actuation(state, self.kv * (u_star - u))


def _bounded(v: np.ndarray, limit: float) -> np.ndarray:
    n = np.linalg.norm(v)
    return v if n <= limit else v * (limit / n)


class RestController:
    """Brings the actuated velocities of the combined system to zero (see the module docstring)."""

    def __init__(self, held: FreeFlyerModel, mode: Mode | str, gain: float = 2.0):
        self.ct = _ComputedTorque(held, Mode.parse(mode))
        self.ff, self.mode, self.gain = held, Mode.parse(mode), gain

    def actuation(self, state: State) -> Actuation:
        return self.ct.actuation(state, -self.gain * actuated_velocities(self.ff, state, self.mode))
