"""The approach to a tumbling target's grasp frame: a plan against its predicted motion, and the law
that tracks it, naive (the mode's GJM) or reactionless (inside the reaction null space).

Plan (:func:`plan_approach`). The grasp frame moves as the target's torque-free dynamics say
(physics.free_body: Euler's equations, nutation included). The hand's reference is the grasp
frame carrying an offset that closes on a minimum-jerk profile over the approach time T:

    X_ref(t) = X_g(t) Exp((1 - s(tau)) xi_0),    xi_0 = log(X_g(t0)^-1 X_hand(t0)),  tau = (t - t0) / T

so at t0 + T the reference is the grasp frame itself, with its velocity and spin: the hand
arrives matching position, velocity, attitude and spin, and the tolerance gate
(control.capture.CaptureTolerances) decides when the grasp closes. Its twist is exact:
V_ref^body = Ad(Exp(-xi)) V_g^body + J_exp(xi) xi'. T is the shortest time at the planning
speeds for which the grasp frame's predicted pose at t0 + T is within the arm's reach (inverse
kinematics, physics.grasp_pose, base where it is); the prediction runs forward from the target's
measured state.

Law (:class:`ApproachLaw`). v* = V_ref + K_p e(X_ref, X_hand) (bounded closing speed), then

* naive: u* = J^+ (v* - drift) through the mode's GJM (damped least squares; the columns not
  given to the hand hold their angles / the base its pose);
* reactionless: the joint rates that do the task with the base not turning, through the
  attitude reaction null space (physics.reaction_null_space; the base translates as the
  momentum says, or, in flying mode, as the thrusters hold it). While the base's attitude error
  is inside ``attitude_bound`` the hand's task comes first and the base's rotation second
  (physics.reaction_null_space.reaction_minimal_rates: exactly reactionless wherever the null
  space allows the task, the least rotation elsewhere); outside it the base comes first
  (reactionless_rates: the hand waits for what the null space gives). The other arm balances
  and, last, returns to its start angles. What the null space could not do (the base rate the
  task forced, the task left undone, ranks) is kept in :attr:`ApproachLaw.last_reactionless`,
  not hidden;

and computed torque on the mode-reduced dynamics for u' = K_v (u* - u) (control.capture); the
reactionless law adds the acceleration that keeps a reactionless motion reactionless as the
coupling inertia changes along it, -H^+ (dH/dt) qdot (physics.reaction_null_space.coupling_rate):
without it the velocity loop's lag on that term turns the base. Both
damp near a singularity (the damping grows to ``damping_max`` below ``sigma0``) and scale the
joint rates down, all together, to the URDF velocity limits.

Frames and units: poses in world; twists [v; w] in world axes at the frame's origin (m/s, rad/s).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.control.capture import PLANAR_ROWS, bounded, capture_mode, effort_for_accelerations
from freeflyer_control.control.effort import ControlEffort
from freeflyer_control.control.maneuvers import min_jerk
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.free_body import BodyState, FreeBody, frame_motion, propagate
from freeflyer_control.physics.gjm import actuated_velocities, generalized_jacobian
from freeflyer_control.physics.grasp_pose import arm_joints, solve_reach
from freeflyer_control.physics.modes import Mode, base_partition
from freeflyer_control.physics.reaction_null_space import (ReactionlessRates, coupling_rate, reaction_minimal_rates,
                                                           reaction_null_space, reactionless_rates, singular_damping)
from freeflyer_control.physics.state import State, base_position, base_rotation, joint_positions

APPROACHES = ("naive", "reactionless")


@dataclass(frozen=True)
class ApproachPlan:
    """The hand's reference: the grasp frame with an offset closing over ``duration`` s from
    ``t0`` (see the module docstring). ``offset``: xi_0, the hand in the grasp frame (se(3),
    [v; w]); ``reachable``: the predicted grasp pose at t0 + duration passed the reach check."""

    t0: float
    duration: float
    offset: np.ndarray
    reachable: bool = True

    def reference(self, t: float, grasp: pin.SE3, grasp_twist: np.ndarray) -> tuple[pin.SE3, np.ndarray]:
        """(pose, twist) of the hand's reference at ``t`` for the grasp frame at ``grasp`` moving
        with ``grasp_twist`` (world axes at its origin)."""
        s, ds, _ = min_jerk((t - self.t0) / self.duration)
        xi = (1.0 - s) * self.offset
        xi_dot = -ds / self.duration * self.offset if 0.0 < t - self.t0 < self.duration else np.zeros(6)
        D = pin.exp6(pin.Motion(xi))
        pose = grasp * D
        R_g = grasp.rotation
        body_g = np.concatenate([R_g.T @ grasp_twist[:3], R_g.T @ grasp_twist[3:]])
        body = D.inverse().action @ body_g + pin.Jexp6(pin.Motion(xi)) @ xi_dot
        R = pose.rotation
        return pose, np.concatenate([R @ body[:3], R @ body[3:]])


def plan_approach(ff: FreeFlyerModel, state: State, end_effector: str, body: FreeBody, target: BodyState,
                  grasp: pin.SE3, t0: float, *, speed: float = 0.08, angular_speed: float = 0.15,
                  min_duration: float = 3.0, max_duration: float = 30.0) -> ApproachPlan:
    """The approach from ``state`` (robot) to the grasp frame ``grasp`` (in the target's frame)
    of the target at ``target`` (measured at ``t0``), see the module docstring.

    ``speed`` (m/s) and ``angular_speed`` (rad/s): the average closing speeds that set the
    shortest duration; longer durations are tried, 1 s apart, until the predicted grasp pose is
    reachable (up to ``max_duration``; if none is, the shortest, ``reachable`` False)."""
    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, state.q)
    hand = data.oMf[ff.frame_id(end_effector)].copy()
    X_g = target.pose * grasp
    offset = pin.log6(X_g.inverse() * hand).vector.copy()
    if ff.base == "planar":  # in-plane offsets only (z, roll, pitch are zero up to round-off)
        offset[[2, 3, 4]] = 0.0
    distance = np.linalg.norm(hand.translation - X_g.translation)
    angle = np.linalg.norm(pin.log3(hand.rotation @ X_g.rotation.T))
    shortest = max(min_duration, distance / speed, angle / angular_speed)
    joints = arm_joints(ff, end_effector)
    duration = shortest
    while duration <= max_duration:
        predicted = frame_motion(body, propagate(body, target, duration), grasp).pose
        if solve_reach(ff, data, state.q, end_effector, joints, predicted)[1] < 1e-3:
            return ApproachPlan(t0, duration, offset, True)
        duration += 1.0
    return ApproachPlan(t0, shortest, offset, False)


@dataclass(frozen=True)
class ApproachGains:
    """position: 1/s (pose error -> twist); velocity: 1/s (velocity error -> acceleration);
    damping: damped least squares of the GJM inverse (twist units); max_speed m/s and
    max_angular_speed rad/s: bound on the closing twist; attitude: 1/s (base attitude error ->
    base rate, reactionless and held bases); hold: 1/s (joint and base pose errors of the columns
    the hand does not use -> rates); posture: 1/s (reactionless: the other arm back to its start);
    sigma0, damping_max: where the singularity damping starts and what it grows to (twist units);
    attitude_bound: rad, the base attitude error a reactionless approach lets the task cause
    before it puts the base first; base_kp 1/s^2, base_kd 1/s: the PD that holds a base the hand
    does not use (flying: thrusters; rotation-floating: wheels, attitude); reaction_sigma0,
    reaction_damping_max: kg m^2, where the damping of the reaction-cancelling step of the
    task-first reactionless law starts and what it grows to
    (physics.reaction_null_space.reaction_minimal_rates: undamped, a tumbling target's grasp frame
    drove it to 40-100 times the joint velocity limits and the scaled-down hand stalled)."""

    position: float = 1.5
    velocity: float = 20.0
    damping: float = 1e-2
    max_speed: float = 0.1
    max_angular_speed: float = 0.3
    attitude: float = 2.0
    hold: float = 2.0
    posture: float = 0.5
    sigma0: float = 0.05
    damping_max: float = 0.05
    attitude_bound: float = 0.02
    base_kp: float = 1.0
    base_kd: float = 2.0
    reaction_sigma0: float = 0.3
    reaction_damping_max: float = 0.3


class ApproachLaw:
    """Drives ``end_effector`` onto a moving reference (see the module docstring).

    Args:
        ff: the robot (possibly holding an object: the reach of the second hand).
        end_effector: the hand.
        mode: floating, rotation-floating or flying.
        approach: ``"naive"`` or ``"reactionless"``.
        columns: indices into ``ff.arm_joint_names`` of the joints the hand may use (default: all
            arm joints); the others hold the angles they had at :meth:`reset`.
        use_base: flying only: the base velocity is an input of the hand's task (else held by
            the thrusters).
    """

    def __init__(self, ff: FreeFlyerModel, end_effector: str, mode: Mode | str, approach: str = "naive",
                 gains: ApproachGains = ApproachGains(), columns: np.ndarray | None = None, use_base: bool = True):
        self.mode = capture_mode(mode)
        if approach not in APPROACHES:
            raise ValueError(f"approach must be one of {APPROACHES}, got {approach!r}")
        self.ff, self.ee, self.approach, self.gains = ff, end_effector, approach, gains
        self.data = ff.create_data()
        n_arm = ff.arm_v_indices.size
        self.columns = np.arange(n_arm) if columns is None else np.asarray(columns, dtype=int)
        self.others = np.setdiff1d(np.arange(n_arm), self.columns)
        self.commanded = base_partition(ff.base, self.mode).commanded
        self.use_base = use_base and self.mode is Mode.FLYING
        self.rows = PLANAR_ROWS if ff.base == "planar" else slice(None)
        self.last_reactionless: ReactionlessRates | None = None
        limits = np.asarray(ff.model.velocityLimit, dtype=float)[ff.arm_v_indices]
        self.rate_limits = np.where(np.isfinite(limits) & (limits > 0) & (limits < 1e300), limits, np.inf)
        self.hold_angles: np.ndarray | None = None
        self.hold_base: tuple[np.ndarray, np.ndarray] | None = None

    def reset(self, state: State) -> None:
        """Hold what the hand does not use where it is now."""
        ff = self.ff
        self.hold_angles = joint_positions(ff, state.q)[ff.arm_v_indices - ff.nb]
        self.hold_base = (base_position(ff, state.q), base_rotation(ff, state.q))

    def _base_error(self, state: State) -> np.ndarray:
        """Base pose error to the held pose, world axes (m, rad; planar (x, y, yaw))."""
        p0, R0 = self.hold_base
        ff = self.ff
        e = np.concatenate([p0 - base_position(ff, state.q), pin.log3(R0 @ base_rotation(ff, state.q).T)])
        return e[PLANAR_ROWS] if ff.base == "planar" else e

    def effort(self, state: State, ref_pose: pin.SE3, ref_twist: np.ndarray,
               base_torque: np.ndarray | None = None) -> ControlEffort:
        """The effort that drives the hand to ``ref_pose`` moving with ``ref_twist`` (world);
        rotation-floating: ``base_torque`` (world, N m) added by the thrusters and taken in by the
        wheels (control.capture.effort_for_accelerations)."""
        if self.hold_angles is None:
            self.reset(state)
        ff, g = self.ff, self.gains
        pin.framesForwardKinematics(ff.model, self.data, state.q)
        hand = self.data.oMf[ff.frame_id(self.ee)]
        lin = bounded(g.position * (ref_pose.translation - hand.translation), g.max_speed)
        ang = bounded(g.position * pin.log3(ref_pose.rotation @ hand.rotation.T), g.max_angular_speed)
        v_star = (np.asarray(ref_twist, dtype=float) + np.concatenate([lin, ang]))[self.rows]
        q_arm = joint_positions(ff, state.q)[ff.arm_v_indices - ff.nb]
        hold = g.hold * (self.hold_angles - q_arm)
        base_error = self._base_error(state)
        n_arm = ff.arm_v_indices.size
        u_star = np.zeros(n_arm + self.commanded.size)
        if self.approach == "reactionless":
            u_star[:n_arm] = self._reactionless(state, v_star, q_arm)
        else:
            gjm = generalized_jacobian(ff, self.data, state, self.mode, self.ee)
            J, task = gjm.matrix, v_star - gjm.drift
            used = list(self.columns) + (list(range(n_arm, n_arm + self.commanded.size)) if self.use_base else [])
            fixed = np.setdiff1d(np.arange(J.shape[1]), used)
            u_star[self.others] = hold[self.others]
            task = task - J[:, fixed] @ u_star[fixed]  # the held base's velocity is zero in u_star
            Ju = J[:, used]
            sv = np.linalg.svd(Ju, compute_uv=False)
            lam = max(g.damping, singular_damping(float(sv[-1]) if sv.size else 0.0, g.sigma0, g.damping_max))
            u_star[used] = Ju.T @ np.linalg.solve(Ju @ Ju.T + lam ** 2 * np.eye(Ju.shape[0]), task)
        # All joint rates scaled together (a null-space motion stays one) to the URDF limits.
        over = float(np.max(np.abs(u_star[:n_arm]) / self.rate_limits, initial=0.0))
        if over > 1.0:
            u_star[:n_arm] /= over
        u = actuated_velocities(ff, state, self.mode)
        u_dot = g.velocity * (u_star - u)
        if self.commanded.size and not self.use_base:
            # The held base: a PD on its pose (1 rad/s, critically damped), not the stiff velocity
            # loop of the arm: the wrench it asks of small thrusters or wheels stays in reach.
            u_dot[n_arm:] = g.base_kp * base_error[self.commanded] - g.base_kd * u[n_arm:]
        if self.approach == "reactionless":
            rns = self._rns
            u_dot[:n_arm] -= np.linalg.pinv(rns.coupling, rcond=1e-9) @ (
                coupling_rate(ff, self.data, state) @ state.v[ff.arm_v_indices])
        return effort_for_accelerations(ff, self.data, state, self.mode, u_dot, base_torque)

    def _reactionless(self, state: State, v_star: np.ndarray, q_arm: np.ndarray) -> np.ndarray:
        """Arm joint rates inside the reaction null space (see the module docstring)."""
        ff, g = self.ff, self.gains
        rns = self._rns = reaction_null_space(ff, self.data, state, "attitude")
        # The hand's twist with the base moving as the momentum says (floating; held by the
        # thrusters, flying: its translation then is theirs).
        gjm = generalized_jacobian(ff, self.data, state, Mode.FLYING if self.mode is Mode.FLYING else Mode.FLOATING,
                                   self.ee)
        R = base_rotation(ff, state.q)
        error = self._base_error(state)
        turn = error[2:] if ff.base == "planar" else R.T @ error[3:]  # base_link axes
        posture = np.zeros(ff.arm_v_indices.size)
        posture[self.others] = g.posture * (self.hold_angles - q_arm)[self.others]
        J = gjm.matrix[:, :ff.arm_v_indices.size]  # flying: the base held still, its columns dropped
        common = dict(damping=g.damping, base_velocity=g.attitude * turn, posture=posture, sigma0=g.sigma0,
                      damping_max=g.damping_max)
        if np.linalg.norm(turn) <= g.attitude_bound:
            result = reaction_minimal_rates(rns, J, v_star - gjm.drift, reaction_sigma0=g.reaction_sigma0,
                                            reaction_damping_max=g.reaction_damping_max, **common)
        else:
            result = reactionless_rates(rns, J, v_star - gjm.drift, **common)
        self.last_reactionless = result
        return result.rates
