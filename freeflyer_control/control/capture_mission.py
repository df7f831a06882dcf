"""A capture from start to rest: the sequence of capture laws, one object that sim and the ROS
controller both run (they own the plants; this owns the decisions).

Phases (``CaptureMission.phase``):

* ``approach``: control.approach plans against the target's predicted motion and tracks it,
  naive or reactionless; the first grasp may close once :meth:`grasp_refusal` is None (the
  plant checks again and closes it: physics.capture.capture_impact), then :meth:`grasped`.
  With bias momentum (rotation-floating), the thrusters meanwhile apply a torque
  k (h* - h_w) on the base that the wheels, holding the attitude, take in, until they hold the
  bias h* that will cancel the target's angular momentum at the grasp (physics.bias_momentum);
* ``stow`` (a second arm and grasp): the first hand stops the target relative to the base where
  it is, if the second hand can reach it there, else brings it to its held pose (a larger, slower
  move: its momentum is exchanged with the base); the second arm goes to a pre-grasp pose 5 cm
  back from its grasp frame (control.detumble.StowLaw); the base as the mode holds it;
* ``reach``: the second hand onto its grasp frame (control.approach, its own arm only); the loop
  closes once :meth:`grasp_refusal` is None (physics.capture.close_loop), then :meth:`loop_closed`;
* ``hold``: the closed chain held at rest by the cooperative law on the closed-chain dynamics
  (control.cooperative: the object held still, a light squeeze);
* ``rest`` (one grasp only): every actuated velocity to zero (control.detumble.RestLaw).

The mission is at rest (:meth:`at_rest`) in ``hold`` or ``rest`` once every actuated velocity of
the mode is below ``REST_SPEED``: flying, base and joints (the stack stopped, what the target
brought removed by the thrusters); rotation-floating, the joints and the base's rotation (its
momentum in the wheels); floating, the joints (the stack drifts and turns on as one body).

Frames and units as in control.approach; efforts become actuator commands here (arm and wheel
torques clipped to their limits, the base wrench allocated to the thrusters or applied ideal).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from freeflyer_control.control.approach import APPROACHES, ApproachLaw, ApproachPlan, plan_approach
from freeflyer_control.control.capture import (
    CaptureTolerances,
    capture_mode,
    capture_refusal,
    limited,
    relative_motion,
)
from freeflyer_control.control.cooperative import CooperativeController, ObjectReference
from freeflyer_control.control.detumble import RestLaw, StowLaw
from freeflyer_control.control.effort import ActuatorMapper, ControlEffort
from freeflyer_control.errors import FreeFlyerError, ModeError, ModelError
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.model.objects import ObjectConfig, attach_object, with_grasps
from freeflyer_control.physics.actuators import Actuation
from freeflyer_control.physics.bias_momentum import stack_momentum
from freeflyer_control.physics.capture import held_frame_motion
from freeflyer_control.physics.free_body import BodyState, frame_motion, free_body
from freeflyer_control.physics.gjm import actuated_velocities
from freeflyer_control.physics.grasp_pose import REACH_TOL, arm_joints, check_object, solve_reach
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.linalg import cross3
from freeflyer_control.physics.state import State, base_position, base_rotation, base_twist_world

# At rest: every actuated velocity of the mode below this (m/s, rad/s).
REST_SPEED = 1e-3
# rad/s: rotation-floating, the second hand closes only once the base turns slower than this: the
# closed chain's law (control.cooperative) is not saturation-aware, and stopping a turning stack
# with 0.2 N m wheels would saturate them; the reach's law stops it first, saturation-aware.
QUIET_BASE_RATE = 2e-3
# The second hand waits this far from its grasp frame (m, back towards its shoulder) while the
# first one stows the target.
PRE_GRASP_STANDOFF = 0.05
PHASES = ("approach", "stow", "reach", "hold", "rest")
# 1/s: the bias loading's torque per N m s of the stack's angular momentum to remove; its
# tolerance (relative to the target's, and N m s absolute) for calling the bias loaded.
BIAS_GAIN, BIAS_TOLERANCE, BIAS_FLOOR = 1.0, 0.02, 1e-4


@dataclass(frozen=True)
class CaptureOptions:
    """How to capture.

    Attributes:
        mode: floating, rotation-floating or flying.
        approach: ``naive`` (the mode's GJM) or ``reactionless`` (the reaction null space).
        bias: load bias momentum into the wheels during the approach (rotation-floating, with
            thrusters).
        both_arms: close the target's second grasp with the second arm (if it has one).
        base_actuation: ``thrusters`` or ``ideal``.
        tolerances: when a grasp may close.
        stow_time: s, the first hand's move of the target to its held pose.
        reach_time: s, shortest second-hand approach.
        internal_force: N, the squeeze each hand holds the target with once both have it.
    """

    mode: str = "flying"
    approach: str = "naive"
    bias: bool = False
    both_arms: bool = True
    base_actuation: str = "thrusters"
    tolerances: CaptureTolerances = field(default_factory=CaptureTolerances)
    stow_time: float = 8.0
    reach_time: float = 2.0
    internal_force: float = 1.0


def options_problem(ff: FreeFlyerModel, options: CaptureOptions) -> str | None:
    """Why ``options`` cannot be flown on ``ff`` (one line with the fix), or None."""
    try:
        mode = capture_mode(options.mode)
    except ModeError as exc:
        return str(exc)
    if options.approach not in APPROACHES:
        return f"approach must be one of {list(APPROACHES)}, got {options.approach!r}"
    if mode is Mode.ROTATION_FLOATING and not ff.wheel_v_indices.size:
        return f"rotation-floating needs reaction wheels; robot '{ff.name}' has none"
    if mode is Mode.FLYING and not ff.thrusters and options.base_actuation == "thrusters":
        return f"flying needs thrusters; robot '{ff.name}' has none (or use --base-actuation ideal)"
    if options.bias:
        if mode is not Mode.ROTATION_FLOATING:
            return ("bias momentum is held in the reaction wheels through the capture: fly it in --mode "
                    "rotation-floating")
        if not ff.thrusters:
            return f"bias momentum is loaded with the thrusters holding the base; robot '{ff.name}' has none"
    return None


@dataclass
class MissionEvents:
    """When each phase began (s) and what the laws reported along the way."""

    started: dict[str, float] = field(default_factory=dict)
    bias: np.ndarray | None = None
    bias_loaded: float | None = None
    reactionless_task_rank_min: int | None = None
    reactionless_residual_max: float = 0.0
    approach_plan: ApproachPlan | None = None
    second_grasp_problem: str | None = None


class CaptureMission:
    """Capture ``obj`` with robot ``ff`` (see the module docstring)."""

    def __init__(self, ff: FreeFlyerModel, obj: ObjectConfig, options: CaptureOptions = CaptureOptions()):
        problem = options_problem(ff, options)
        if problem:
            raise ModeError(problem)
        self.ff, self.obj, self.options = ff, obj, options
        self.mode = capture_mode(options.mode)
        self.body = free_body(obj)
        ees = [g.end_effector for g in obj.grasps]
        self.first = obj.grasps[0]
        self.second = obj.grasps[1] if options.both_arms and len(ees) > 1 and ees[1] in ff.end_effectors else None
        self.model = ff  # what the phase's law controls: the robot, then the robot holding the target
        self.held_obj: ObjectConfig | None = None
        self.mapper = ActuatorMapper(ff, options.base_actuation)
        self.phase = "approach"
        try:  # the joint angles that hold the target as configured (a start for the stow's IK)
            self._held_angles = check_object(ff, obj) if self.second is not None else None
        except ModelError:
            self._held_angles = None
        self.events = MissionEvents()
        self.data = ff.create_data()
        self._law = None
        self._plan: ApproachPlan | None = None
        self._held_in_base: pin.SE3 | None = None
        self._held_in_world: pin.SE3 | None = None

    # --- what the target looks like to the hands -------------------------------------------------
    def grasp_motion(self, state: State, target: BodyState | None) -> tuple[str, pin.SE3, np.ndarray, pin.SE3, np.ndarray]:
        """(hand, hand pose, hand twist, grasp pose, grasp twist) of the grasp now being
        approached: the first on the free target (``target``, measured), the second on the held
        one (from the robot's state); twists [v; w] world axes at each frame's origin."""
        model, data = self.model, self.data
        pin.forwardKinematics(model.model, data, state.q, state.v)
        pin.updateFramePlacements(model.model, data)
        if self.phase == "approach":
            hand = self.first.end_effector
            m = frame_motion(self.body, target, self.first.placement)
            grasp, grasp_twist = m.pose, m.twist
        else:
            hand = self.second.end_effector
            grasp, grasp_twist = held_frame_motion(model, data, self.obj, self.second.placement)
        fe = model.frame_id(hand)
        ee = data.oMf[fe].copy()
        ee_twist = pin.getFrameVelocity(model.model, data, fe, pin.LOCAL_WORLD_ALIGNED).vector.copy()
        return hand, ee, ee_twist, grasp, grasp_twist

    def grasp_refusal(self, state: State, target: BodyState | None) -> str | None:
        """Why the grasp being approached may not close now (one line), or None; always a
        refusal outside ``approach`` and ``reach``."""
        if self.phase not in ("approach", "reach"):
            return f"capture refused: no grasp is being approached (phase {self.phase})"
        hand, ee, ee_twist, grasp, grasp_twist = self.grasp_motion(state, target)
        refusal = capture_refusal(hand, self.obj.name, relative_motion(ee, ee_twist, grasp, grasp_twist),
                                  self.options.tolerances)
        if refusal is None and self.phase == "reach" and self.mode is Mode.ROTATION_FLOATING:
            turning = float(np.linalg.norm(base_twist_world(self.model, state)[1]))
            if turning > QUIET_BASE_RATE:
                return (f"capture refused: the base still turns at {turning:.3g} rad/s (the wheels are stopping "
                        f"it; closing at under {QUIET_BASE_RATE:g} rad/s); wait")
        return refusal

    # --- the plant's news -----------------------------------------------------------------------
    def grasped(self, state: State, held_obj: ObjectConfig, t: float) -> None:
        """The first grasp closed: ``held_obj`` is the target with that grasp as it closed
        (model.objects.with_grasp_placement); ``state`` the robot holding it just after."""
        self.held_obj = held_obj
        self.model = attach_object(self.ff, held_obj)
        self.data = self.model.create_data()
        self.mapper = ActuatorMapper(self.model, self.options.base_actuation)
        if self.second is None:
            self._begin("rest", t)
            self._law = RestLaw(self.model, self.mode)
            return
        try:
            angles, duration = self._stow(state, held_obj)
        except FreeFlyerError as exc:
            self.events.second_grasp_problem = str(exc)
            self._begin("rest", t)
            self._law = RestLaw(self.model, self.mode)
            return
        self._begin("stow", t)
        self._law = StowLaw(self.model, self.mode, angles, duration)
        self._law.reset(state, t)

    def _pre_grasp(self) -> pin.SE3:
        """The second hand's pre-grasp frame in the object frame: its grasp frame moved
        PRE_GRASP_STANDOFF back towards the arm's shoulder (at the held pose)."""
        ff, g2, X = self.ff, self.second.placement, self.obj.pose_in_base
        first_v = arm_joints(ff, self.second.end_effector)[0]
        shoulder = next(ff.model.jointPlacements[j] for j in range(2, ff.model.njoints)
                        if ff.model.joints[j].idx_v == first_v)  # its parent is the base
        back = shoulder.translation - (X * g2).translation  # base_link frame
        back = X.rotation.T @ back / np.linalg.norm(back)  # object frame
        return pin.SE3(g2.rotation, g2.translation + PRE_GRASP_STANDOFF * back)

    def _stow(self, state: State, held_obj: ObjectConfig) -> tuple[np.ndarray, float]:
        """(arm angles at the end of the stow, its duration s): stop the target where it is and
        bring the second hand to its pre-grasp pose if it reaches that, else move the target to its
        held pose (physics.grasp_pose.check_object; ModelError if nothing reaches)."""
        ff, T = self.ff, self.options.stow_time
        arm = ff.arm_v_indices
        first, second = arm_joints(ff, self.first.end_effector), arm_joints(ff, self.second.end_effector)
        # Where the first hand stops the target: a symmetric deceleration, half the rate times T.
        q = state.q.copy()
        q[:(7 if ff.base == "spatial" else 4)] = pin.neutral(ff.model)[:(7 if ff.base == "spatial" else 4)]
        angles = pin.difference(ff.model, pin.neutral(ff.model), q)[ff.nb:]
        angles[np.array(first) - ff.nb] += 0.5 * T * state.v[first]
        q_stop = pin.integrate(ff.model, pin.neutral(ff.model), np.concatenate([np.zeros(ff.nb), angles]))
        data = ff.create_data()
        pin.framesForwardKinematics(ff.model, data, q_stop)
        X_obj = data.oMf[ff.frame_id(self.first.end_effector)] * held_obj.grasps[0].placement.inverse()
        q_reach, residual = solve_reach(ff, data, q_stop, self.second.end_effector, second, X_obj * self._pre_grasp())
        if residual < REACH_TOL:
            return pin.difference(ff.model, pin.neutral(ff.model), q_reach)[arm], T
        staged = with_grasps(self.obj, [(held_obj.grasps[0].end_effector, held_obj.grasps[0].placement),
                                        (self.second.end_effector, self._pre_grasp())])
        # Newton from a start in the right basin: the arms holding the target as configured (the
        # grasp closed a few mm and hundredths of a radian off it), then where the arms are, then
        # the ready pose.
        starts = ([self._held_angles] if self._held_angles is not None else []) + [angles, None]
        for i, start in enumerate(starts):
            try:
                return check_object(ff, staged, start=start)[arm - ff.nb], 2.0 * T
            except ModelError:
                if i == len(starts) - 1:
                    raise

    def loop_closed(self, state: State, held: FreeFlyerModel, held_obj: ObjectConfig, t: float) -> None:
        """The second grasp closed: ``held`` holds ``held_obj`` (both grasps as they closed,
        physics.capture.close_loop); the closed chain is held where the target is now."""
        self.model, self.held_obj = held, held_obj
        self.data = held.create_data()
        self.mapper = ActuatorMapper(held, self.options.base_actuation)
        law = CooperativeController(held, held_obj, self.mode, self.options.internal_force,
                                    base_actuation=self.options.base_actuation)
        pose, _ = law.measure(state)
        self._held_in_world = pose
        self._held_in_base = self._base_pose(state).inverse() * pose
        self._law = law
        self._begin("hold", t)

    def _base_pose(self, state: State) -> pin.SE3:
        return pin.SE3(base_rotation(self.model, state.q), base_position(self.model, state.q))

    def _hold_reference(self, state: State) -> ObjectReference:
        """Flying: the target held still in the world where the loop closed (the thrusters stop the
        stack). Floating and rotation-floating: held still relative to the base, where the loop
        closed: the stack keeps the momentum it has (and, floating, turns as one body); holding the
        target still in the world would spin the base up instead."""
        if self.mode is Mode.FLYING:
            return ObjectReference(self._held_in_world, np.zeros(6))
        X = self._base_pose(state) * self._held_in_base
        v_b, w_b = base_twist_world(self.model, state)
        r = X.translation - base_position(self.model, state.q)
        return ObjectReference(X, np.concatenate([v_b + cross3(w_b, r), w_b]))

    # --- every tick ----------------------------------------------------------------------------
    def _begin(self, phase: str, t: float) -> None:
        self.phase = phase
        self.events.started.setdefault(phase, t)

    def actuation(self, state: State, t: float, target: BodyState | None = None) -> Actuation:
        """The actuator commands for the period from ``t`` (s): ``target`` the free target's
        measured state (needed until the first grasp closes)."""
        if self.phase == "hold":
            return self._law.tick(state, self._hold_reference(state)).actuation
        return self.mapper.actuation(state.q, limited(self.model, self.effort(state, t, target)))

    def effort(self, state: State, t: float, target: BodyState | None = None) -> ControlEffort:
        """The phase law's effort (before clipping and allocation); not in ``hold``."""
        if self.phase == "approach":
            return self._approach(state, t, target)
        if self.phase == "stow":
            if not self._law.done(state, t):
                return self._law.effort(state, t)
            self._begin("reach", t)
            self._law = self._plan = None
        if self.phase == "reach":
            return self._approach(state, t, None)
        return self._law.effort(state)  # rest

    def _approach(self, state: State, t: float, target: BodyState | None) -> ControlEffort:
        hand, ee, _, grasp, grasp_twist = self.grasp_motion(state, target)
        if self._law is None:
            self._begin(self.phase, t)
            first = self.phase == "approach"
            if first:
                self._plan = plan_approach(self.ff, state, hand, self.body, target, self.first.placement, t)
                self.events.approach_plan = self._plan
                # Flying: the thrusters hold the base and the arm reaches (the plan's reach check
                # assumes as much); moving the base instead costs fuel.
                law = ApproachLaw(self.ff, hand, self.mode, self.options.approach, columns=self._arm_columns(hand),
                                  use_base=False)
            else:
                offset = pin.log6(grasp.inverse() * ee).vector.copy()
                distance = float(np.linalg.norm(ee.translation - grasp.translation))
                self._plan = ApproachPlan(t, max(self.options.reach_time, distance / 0.05), offset)
                law = ApproachLaw(self.model, hand, self.mode, "naive", columns=self._arm_columns(hand),
                                  use_base=False)
            law.reset(state)
            self._law = law
        pose, twist = self._plan.reference(t, grasp, grasp_twist)
        torque = self._bias_torque(state, t, target) if self.options.bias and self.phase == "approach" else None
        effort = self._law.effort(state, pose, twist, torque)
        r = self._law.last_reactionless
        if r is not None:
            ev = self.events
            ev.reactionless_task_rank_min = r.task_rank if ev.reactionless_task_rank_min is None else \
                min(ev.reactionless_task_rank_min, r.task_rank)
            ev.reactionless_residual_max = max(ev.reactionless_residual_max, float(np.linalg.norm(r.task_residual)))
        return effort

    def _bias_torque(self, state: State, t: float, target: BodyState) -> np.ndarray:
        """The thrusters' torque on the base (world axes; planar: z) that takes the stack's future
        angular momentum (servicer's and target's, about their common CoM) to zero, -k L_stack,
        the wheels holding the attitude take the servicer's share in: the bias. Zero once loaded
        (``events.bias``: the wheel momentum then)."""
        ev = self.events
        if ev.bias_loaded is not None:
            return np.zeros(1 if self.ff.base == "planar" else 3)
        stack = stack_momentum(self.ff, self.data, state, self.body, target)
        scale = np.linalg.norm(stack.target[1])
        if np.linalg.norm(stack.angular) <= BIAS_TOLERANCE * scale + BIAS_FLOOR:
            ev.bias_loaded, ev.bias = t, stack.wheels
            return np.zeros_like(stack.angular)
        return -BIAS_GAIN * stack.angular

    def _arm_columns(self, hand: str) -> np.ndarray | None:
        """The columns (indices into ``arm_joint_names``) of the arm that moves ``hand``; None (all
        arm joints) for a reactionless approach, whose other arm balances the reaction."""
        if self.options.approach == "reactionless" and self.phase == "approach":
            return None
        arm = list(self.ff.arm_v_indices)
        return np.array([arm.index(v) for v in arm_joints(self.ff, hand)])

    def at_rest(self, state: State) -> bool:
        """In ``hold`` or ``rest`` with every actuated velocity of the mode below REST_SPEED."""
        if self.phase not in ("hold", "rest"):
            return False
        u = actuated_velocities(self.model, state, self.mode)
        if self.mode is Mode.ROTATION_FLOATING:  # the base's rotation too, not its drift
            _, w = base_twist_world(self.model, state)
            u = np.concatenate([u, w])
        return bool(np.abs(u).max(initial=0.0) < REST_SPEED)
