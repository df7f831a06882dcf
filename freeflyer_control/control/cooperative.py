"""Cooperative manipulation of a held object: object pose/twist tracking and internal-force control.

Two layers, one tick:

1. Resolved rate through the multi-arm GJM with the object included (Swain Eqs. 23-24; in flying
   mode Eq. 26 with the base velocity as an input): the object's wanted twist
   v_o* = v_ref + K_p e(X_ref, X_o) becomes the end-effector twists W v_o*, and

       u* = J^+ (W v_o* - drift)

   the actuated velocities (arm joint rates, plus the base twist in world axes in flying mode)
   that move the object so, with the free base motion set by the momentum of base, arms and object.

2. Torques from the closed-chain dynamics (physics.closed_chain.closed_chain_response, affine in
   the generalized forces, nu' = A tau + a): the least-norm torques whose accelerations are
   K_v (u* - u) in the least-squares sense, plus torques in null(A), which move nothing, chosen
   so that the whole internal wrench (the part of the end-effector wrenches f_e in null(W^T),
   which moves nothing either) is the commanded squeeze: each of the first two hands presses
   with F_int* N towards the other, and no internal moment or shear. Setting only the squeeze
   component would leave the rest of the internal wrench to chance (it carried ~0.3 N m of
   twist per N of squeeze at the planar grasps). The squeeze therefore leaves the motion
   untouched by construction, not only in the limit.

Modes (``COOPERATIVE_MODES``, each where the robot's actuators allow it, else refused with
physics.actuators.mode_support's reason):

* floating: arm torques only;
* flying: arm torques and a base wrench, the base velocity an input chosen by the GJM inverse;
* rotation-floating: the reaction wheels hold the base attitude (their torque is an actuated
  column of the closed chain, the attitude rows are task rows), no external force;
* rotation-flying, translation-flying: thruster couples / forces hold the mode's commanded base
  coordinates.

In the partial modes the commanded base coordinates are held by a base pose loop, as computed
torque does: their velocity command is K_p times the error to the pose they had at the first
tick, and the arms solve the GJM for what is left of the object's twist.

The base wrench goes to the thrusters through the allocator (``base_actuation="thrusters"``) or
is applied as an ideal wrench (``"ideal"``), as control.effort.ActuatorMapper does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.errors import ModeError
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.model.objects import ObjectConfig
from freeflyer_control.control.effort import ActuatorMapper, ControlEffort
from freeflyer_control.physics.actuators import Actuation, mode_support
from freeflyer_control.physics.closed_chain import closed_chain_response, multi_arm_gjm, object_net_wrench
from freeflyer_control.physics.gjm import actuated_velocities
from freeflyer_control.physics.grasp import (grasp_matrix, internal_force_basis, internal_moments,
                                            squeeze_direction, squeeze_of)
from freeflyer_control.physics.modes import Mode, base_partition
from freeflyer_control.physics.state import State, base_position, base_rotation, world_to_local_base_map

COOPERATIVE_MODES = tuple(Mode)
_PLANAR_ROWS = np.array([0, 1, 5])


@dataclass(frozen=True)
class ObjectReference:
    """Where the object should be: pose of its frame (CoM) in world, and its twist [v; w]
    (world axes, at the CoM; m/s, rad/s)."""

    pose: pin.SE3
    twist: np.ndarray


@dataclass(frozen=True)
class CooperativeGains:
    """position: 1/s, pose error -> object twist; velocity: 1/s, velocity error -> acceleration;
    damping: rad/s, damped least squares of the GJM inverse."""

    position: float = 2.0
    velocity: float = 20.0
    damping: float = 1e-3


@dataclass(frozen=True)
class CooperativeTick:
    """One tick's command and what it was computed from.

    Attributes:
        actuation: arm torques (N m) and, in flying mode, the base wrench (world axes).
        object_pose: measured object frame in world.
        object_twist: measured object twist, world axes at the CoM (6,).
        internal_force: the squeeze this command gives at this state: the force each hand
            presses with, N (physics.grasp.squeeze_of).
        internal_moment: the largest internal moment at a grasp under this command, N m
            (physics.grasp.internal_moments; zero when the whole internal wrench is met).
        twist_command: v_o*, world axes at the CoM (6,).
        status: ``"ok"``, or why the tick refused to command (then every command is zero):
            ``"implausible"`` (a non-finite state or reference, or a reference rotation that is
            not one), ``"fault"`` (the control law gave a non-finite command).
    """

    actuation: Actuation
    object_pose: pin.SE3
    object_twist: np.ndarray
    internal_force: float
    twist_command: np.ndarray
    status: str = "ok"
    internal_moment: float = 0.0


# A reference past these is taken for a corrupt message, not a wish: an object twist over 10 m/s
# or 10 rad/s, a pose over 1 km from the world origin along an axis (no table, no servicing).
REFERENCE_SPEED_BOUND = 10.0
REFERENCE_DISTANCE_BOUND = 1e3


def _plausible(state: State, ref: ObjectReference) -> bool:
    """Finite state; a reference inside the bounds above with a rotation that is one (1e-6)."""
    R = ref.pose.rotation
    twist = np.asarray(ref.twist, dtype=float)
    if not (np.isfinite(state.q).all() and np.isfinite(state.v).all() and twist.shape == (6,)
            and np.isfinite(R).all() and np.isfinite(ref.pose.translation).all()):
        return False
    # A state faster than 1000 m/s or rad/s is not one the plant (divergence bound 100) produces.
    return bool(np.abs(twist).max() <= REFERENCE_SPEED_BOUND and np.abs(state.v).max() <= 1e3
                and np.abs(ref.pose.translation).max() <= REFERENCE_DISTANCE_BOUND
                and np.abs(R).max() <= 1.0 + 1e-6  # first: R^T R of absurd entries overflows
                and np.abs(R.T @ R - np.eye(3)).max() < 1e-6 and np.linalg.det(R) > 0)


def cooperative_mode_problem(ff: FreeFlyerModel, mode: Mode | str) -> str | None:
    """Why cooperative control cannot fly ``mode`` on ``ff`` (one line), or None."""
    mode = Mode.parse(mode)
    reason = mode_support(ff, mode)
    if reason:
        return f"cooperative control cannot fly mode '{mode.value}': {reason}; choose a mode its actuators allow"
    return None


class CooperativeController:
    """Moves a held object and squeezes it (see the module docstring).

    Args:
        ff: the robot holding the object (model.objects.attach_object).
        obj: the object.
        mode: any mode the robot's actuators allow (physics.actuators.mode_support).
        internal_force: squeeze setpoint: the force each of the first two hands presses the object
            with, N (positive pushes them together; physics.grasp.squeeze_direction).
        base_actuation: ``"ideal"`` (an ideal base wrench) or ``"thrusters"`` (the wrench
            allocated to the robot's thrusters).
    """

    def __init__(self, ff: FreeFlyerModel, obj: ObjectConfig, mode: Mode | str, internal_force: float = 0.0,
                 gains: CooperativeGains = CooperativeGains(), base_actuation: str = "ideal"):
        mode = Mode.parse(mode)
        problem = cooperative_mode_problem(ff, mode)
        if problem:
            raise ModeError(problem)
        if len(obj.grasps) < 2:
            raise ModeError(f"object '{obj.name}' has {len(obj.grasps)} grasp; cooperative control needs two or more")
        if not np.isfinite(internal_force):
            raise ValueError(f"internal force setpoint must be a finite number of N, got {internal_force}")
        self.ff, self.obj, self.mode, self.gains = ff, obj, mode, gains
        self.internal_force = float(internal_force)
        self.data = ff.create_data()
        self.planar = ff.base == "planar"
        self.rows = _PLANAR_ROWS if self.planar else slice(None)
        self.object_frame = ff.frame_id(obj.name)
        self.ee_frames = [ff.frame_id(g.end_effector) for g in obj.grasps]
        self.ees = tuple(g.end_effector for g in obj.grasps)
        self.commanded = base_partition(ff.base, mode).commanded  # local = world index order
        self.wheels = mode is Mode.ROTATION_FLOATING
        base = list(ff.wheel_v_indices) if self.wheels else list(self.commanded)
        self.actuated = np.array(base + list(ff.arm_v_indices), dtype=int)  # tau entries we choose
        self.mapper = ActuatorMapper(ff, base_actuation)
        self.base_hold: tuple[np.ndarray, np.ndarray] | None = None  # (position, rotation) at the first tick

    def measure(self, state: State) -> tuple[pin.SE3, np.ndarray]:
        model, data = self.ff.model, self.data
        pin.forwardKinematics(model, data, state.q, state.v)
        pin.updateFramePlacements(model, data)
        pose = data.oMf[self.object_frame].copy()
        twist = pin.getFrameVelocity(model, data, self.object_frame, pin.LOCAL_WORLD_ALIGNED).vector.copy()
        return pose, twist

    def tick(self, state: State, ref: ObjectReference) -> CooperativeTick:
        """One control period: never raises on bad numbers; a tick whose inputs are implausible
        or whose law fails commands zero (see :class:`CooperativeTick`)."""
        if not _plausible(state, ref):
            return self._refused("implausible")
        try:
            out = self._tick(state, ref)
        except (np.linalg.LinAlgError, ValueError, RuntimeError):
            return self._refused("fault")
        a = out.actuation
        if not (np.isfinite(a.arm_torques).all() and np.isfinite(a.base_wrench_world).all()
                and np.isfinite(a.wheel_torques).all() and np.isfinite(a.thruster_forces).all()
                and np.isfinite(out.internal_force) and np.isfinite(out.twist_command).all()
                and np.isfinite(out.object_twist).all()):
            return self._refused("fault")
        return out

    def _refused(self, status: str) -> CooperativeTick:
        zero = np.zeros(6)
        thrusting = self.commanded.size and not self.wheels
        wrench = np.zeros(3 if self.planar else 6) if thrusting and self.mapper.base_actuation == "ideal" else np.zeros(0)
        return CooperativeTick(Actuation(arm_torques=np.zeros(self.ff.arm_v_indices.size),
                                         wheel_torques=np.zeros(self.ff.wheel_v_indices.size),
                                         thruster_forces=np.zeros(len(self.ff.thrusters)), base_wrench_world=wrench),
                               pin.SE3.Identity(), zero, 0.0, zero.copy(), status)

    def _base_hold_velocity(self, state: State) -> np.ndarray:
        """The base pose loop: the commanded base coordinates' velocity (world axes, m/s and
        rad/s), K_p times their error to the pose held since the first tick."""
        p, R = base_position(self.ff, state.q), base_rotation(self.ff, state.q)
        if self.base_hold is None:
            self.base_hold = (p.copy(), R.copy())
        p0, R0 = self.base_hold
        error = np.concatenate([p0 - p, pin.log3(R0 @ R.T)])
        error = error[[0, 1, 5]] if self.planar else error
        return self.gains.position * error[self.commanded]

    def _tick(self, state: State, ref: ObjectReference) -> CooperativeTick:
        ff, data, g = self.ff, self.data, self.gains
        pose, twist = self.measure(state)
        ee_pos = np.array([data.oMf[f].translation for f in self.ee_frames])
        W = grasp_matrix(ee_pos, pose.translation, self.planar)
        error = np.concatenate([ref.pose.translation - pose.translation, pin.log3(ref.pose.rotation @ pose.rotation.T)])
        v_star = np.asarray(ref.twist, dtype=float) + g.position * error
        # Layer 1: the multi-arm GJM with the object included.
        J, drift = multi_arm_gjm(ff, data, state, self.mode, self.ees)
        rhs = W @ v_star[self.rows] - drift
        n_arm, cmd = ff.arm_v_indices.size, self.commanded
        if self.mode is Mode.FLYING or not cmd.size:
            u_star = J.T @ np.linalg.solve(J @ J.T + g.damping ** 2 * np.eye(J.shape[0]), rhs)
        else:  # the base pose loop sets the commanded base velocities; the arms do the rest
            u_base = self._base_hold_velocity(state)
            Ja = J[:, :n_arm]
            rhs = rhs - J[:, n_arm:] @ u_base
            u_star = np.concatenate([Ja.T @ np.linalg.solve(Ja @ Ja.T + g.damping ** 2 * np.eye(J.shape[0]), rhs),
                                     u_base])
        u = actuated_velocities(ff, state, self.mode)
        u_dot = g.velocity * (u_star - u)
        # Layer 2: torques from the closed-chain dynamics.
        resp = closed_chain_response(ff, data, self.obj, state.q, state.v)
        if cmd.size:
            # u's base part is in world axes; nu_b' = T u_b' (dropping the w x v term, a
            # feedforward). T is block diagonal per translation / attitude, so the commanded
            # block maps alone.
            T = world_to_local_base_map(ff, state.q)[np.ix_(cmd, cmd)]
            task_rows = np.concatenate([ff.arm_v_indices, cmd])
            target = np.concatenate([u_dot[:n_arm], T @ u_dot[n_arm:]])
        else:
            task_rows, target = ff.arm_v_indices, u_dot
        A = resp.A[task_rows][:, self.actuated]
        a = resp.a[task_rows]
        F, f0 = self._wrench_map(state, resp, W)
        s = squeeze_direction(ee_pos, self.planar)
        # The internal wrench: its coordinates in an orthonormal basis of null(W^T).
        B = internal_force_basis(W)
        C, c0 = (B.T @ F)[:, self.actuated], B.T @ f0
        wanted = B.T @ (self.internal_force * s)  # the squeeze, no internal moment or shear
        # Motion torques: least squares on the accelerations (min-norm, SVD). Internal-wrench
        # torques: in null(A), so they change no acceleration; the least-norm ones that meet the
        # whole internal wrench (least squares where null(A) is too small for all of it).
        U, sv, Vt = np.linalg.svd(A, full_matrices=True)
        rank = int((sv > 1e-9 * sv[0]).sum())
        tau_m = Vt[:rank].T @ ((U[:, :rank].T @ (target - a)) / sv[:rank])
        N = Vt[rank:].T
        tau_a = tau_m
        if N.size:
            tau_a = tau_m + N @ np.linalg.lstsq(C @ N, wanted - c0 - C @ tau_m, rcond=1e-12)[0]
        tau = np.zeros(ff.model.nv)
        tau[self.actuated] = tau_a
        f_e = F @ tau + f0  # what this command presses with at this state
        moment = float(np.abs(internal_moments(W, f_e, self.planar)).max(initial=0.0))
        return CooperativeTick(self._actuation(state, tau), pose, twist, squeeze_of(s, f_e), v_star,
                               internal_moment=moment)

    def _wrench_map(self, state: State, resp, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(F, f0): stacked end-effector wrenches on the object f_e = F tau + f0 (world axes)."""
        ff, obj = self.ff, self.obj
        n = 3 if self.planar else 6
        # Net object wrench is affine in nu' (evaluate at nu' = 0 and per unit column).
        net0 = object_net_wrench(ff, self.data, obj, state.q, state.v, np.zeros(ff.model.nv))
        pin.computeJointJacobians(ff.model, self.data, state.q)
        Jo = pin.getFrameJacobian(ff.model, self.data, self.object_frame, pin.LOCAL_WORLD_ALIGNED)
        R = self.data.oMf[self.object_frame].rotation
        Mo = np.zeros((6, 6))
        Mo[:3, :3] = obj.mass * np.eye(3)
        Mo[3:, 3:] = R @ obj.inertia @ R.T
        Nrow = (Mo @ Jo)[self.rows]  # d(net)/d(nu')
        others_F, others_0 = -resp.B, -resp.c  # loop wrenches act on end-effectors 2..m
        W1T_inv = np.linalg.inv(W[:n].T)
        restT = W[n:].T
        F1 = W1T_inv @ (Nrow @ resp.A - restT @ others_F)
        f10 = W1T_inv @ (Nrow @ resp.a + net0 - restT @ others_0)
        return np.vstack([F1, others_F]), np.concatenate([f10, others_0])

    def _actuation(self, state: State, tau: np.ndarray) -> Actuation:
        """Arm torques clipped to the URDF effort limits, wheel torques (rotation-floating) to the
        wheels' limits; the base wrench (thrusting modes, world axes) to the thrusters or as an
        ideal wrench bounded like any ideal base actuation (control.effort.ActuatorMapper)."""
        ff = self.ff
        limits = ff.arm_effort_limits
        arm = np.clip(tau[ff.arm_v_indices], -limits, limits)
        wheels = np.zeros(ff.wheel_v_indices.size)
        if self.wheels:
            wheels = np.clip(tau[ff.wheel_v_indices], -ff.wheel_max_torques, ff.wheel_max_torques)
        if not self.commanded.size or self.wheels:
            return Actuation(arm_torques=arm, wheel_torques=wheels)
        R = base_rotation(ff, state.q)
        if self.planar:
            f = R[:2, :2] @ tau[:2]
            wrench = np.array([f[0], f[1], tau[2]])
        else:
            wrench = np.concatenate([R @ tau[:3], R @ tau[3:6]])
        return self.mapper.actuation(state.q, ControlEffort(arm, wheels, wrench))
