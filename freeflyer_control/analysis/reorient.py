"""Self-correcting planning: re-orient a planar free-floating base with closed joint loops.

Physics (Papadopoulos' nonholonomy, restated in /work/shared/seeds/README.md). For a planar robot
with zero momentum the base yaw rate is linear in the arm-joint rates,

    theta_dot = G(q) . q_dot          (G: rad of base yaw per rad of joint, no units)

and G depends on the joint angles only (not on the base pose). G is not a gradient, so a closed
loop in joint space brings the joints back but leaves the base turned. By Green's theorem a loop
in the (q_i, q_j) plane turns the base by the integral of

    g(q) = dG_j/dq_i - dG_i/dq_j      (rad per rad^2, the Lie-bracket / curl term)

over the enclosed area: a square of side dq turns it by about g(q) dq^2.

Conventions of this module:

* **Loop sense.** ``direction = +1`` runs the square counter-clockwise in the (q_i, q_j) plane
  with q_i on the horizontal axis: +dq on q_i, then +dq on q_j, then -dq on q_i, then -dq on q_j.
  It turns the base by +g dq^2; ``direction = -1`` runs it the other way and turns it by -g dq^2.
  The planner picks the sense whose sign matches the requested change.
* **Loops centred on the start.** Each square is centred on the starting joint angles q0, so that
  g(q0) is the right value to predict with (a square with a corner at q0 encloses g around
  q0 + dq/2 and its prediction from g(q0) would be off by O(dq)). The joints go from q0 to the
  square's corner and back along the diagonal line through q0: that back-and-forth retraces one
  line segment, so it turns the base by exactly zero.
* **Landing.** ``m = |dtheta| / (|g| dq^2)`` loops are needed. The plan runs floor(m) loops of
  side dq and, for the fractional rest, one last smaller square of side dq sqrt(m - floor(m)),
  so that the prediction lands exactly on the request. ``loops_predicted`` is ceil(m).
* **Self-correction.** After executing, the base attitude is measured and, if the error is larger
  than a tolerance, a new plan corrects it (``self_correcting_reorientation``).

Joints are 0-based indices into ``ff.arm_joint_names`` in the API (the CLI counts from 1, as
the papers do). Angles in rad, times in s. Reaction wheels, if any, are left idle (zero torque),
so their inertial spin stays zero and they take no part in the momentum balance (see
:func:`attitude_map`).

This module also holds what the three planners of this package share: the zero-momentum
precondition, joint paths (minimum-jerk polylines, sampled plans) and their execution on the
simulated plant under the computed-torque loop in floating mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol, Sequence

import numpy as np
import pinocchio as pin

from freeflyer_control.control.computed_torque import JointGains
from freeflyer_control.control.loop import ControlLoop
from freeflyer_control.control.maneuvers import Maneuver, min_jerk
from freeflyer_control.control.references import JointReference
from freeflyer_control.errors import FreeFlyerError
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.dynamics import mass_matrix
from freeflyer_control.physics.linalg import solve
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.momentum import conserved_momentum
from freeflyer_control.physics.plant import Plant
from freeflyer_control.physics.state import State, base_yaw, joint_positions

# ---------------------------------------------------------------------------------------------
# Errors and preconditions


class PlanningError(FreeFlyerError, ValueError):
    """A nonholonomic plan cannot be made for the given robot, state or request."""


class ZeroMomentumRequired(PlanningError):
    """The planner assumes zero momentum and the state has some."""


class DegenerateLoopError(PlanningError):
    """Joint loops in the chosen plane (almost) do not turn the base here: g(q) ~ 0."""


# The plant keeps momentum at round-off (~1e-15); anything a user means as "at rest" is far
# below this, anything meant as moving is far above.
MOMENTUM_TOL = 1e-8


def require_planar(ff: FreeFlyerModel, what: str) -> None:
    if ff.base != "planar":
        raise PlanningError(
            f"{what} is implemented for a planar base (x, y, yaw); robot '{ff.name}' has a "
            f"{ff.base} base. Load it with base='planar' (--base planar) if it is a table robot."
        )


def free_momentum(ff: FreeFlyerModel, data: pin.Data, state: State) -> np.ndarray:
    """The momenta conjugate to the unactuated coordinates: the base rows of M v (linear
    momentum in base_link axes, angular momentum about the base_link origin) followed by each
    reaction wheel's own angular momentum about its axis (it is conserved while the wheel is
    idle). All zero exactly when the system is at rest in the zero-momentum sense."""
    M = mass_matrix(ff, data, state.q)
    free, _ = _free_and_arm(ff)
    return M[free] @ state.v


def require_zero_momentum(
    ff: FreeFlyerModel, data: pin.Data, state: State, what: str, tol: float = MOMENTUM_TOL
) -> None:
    """Raise :class:`ZeroMomentumRequired`, saying why, unless P, L and the wheel momenta are 0."""
    h = free_momentum(ff, data, state)
    if np.max(np.abs(h), initial=0.0) <= tol:
        return
    PL = conserved_momentum(ff, data, state, Mode.FLOATING)
    wheels = h[ff.nb:]
    detail = f"P = ({PL[0]:.3g}, {PL[1]:.3g}) kg m/s, L_C = {PL[2]:.3g} kg m^2/s"
    if wheels.size:
        detail += f", wheel momenta {np.array2string(wheels, precision=3)} kg m^2/s"
    raise ZeroMomentumRequired(
        f"{what} assumes zero momentum (theta_dot = G(q) q_dot with no drift term), but the state "
        f"has {detail} (tolerance {tol:g}). Bring the system to rest first (e.g. null the base "
        "rates with thrusters or wheels), then plan."
    )


# ---------------------------------------------------------------------------------------------
# The attitude map G(q) and its curl g(q)


def arm_angles(ff: FreeFlyerModel, q: np.ndarray) -> np.ndarray:
    """Arm joint angles (rad), ``ff.arm_joint_names`` order, of a Pinocchio configuration."""
    return joint_positions(ff, q)[ff.arm_v_indices - ff.nb]


def configuration(ff: FreeFlyerModel, arm: Sequence[float], theta: float = 0.0,
                  base_xy: Sequence[float] = (0.0, 0.0)) -> np.ndarray:
    """Pinocchio configuration with the base at ``base_xy`` (m), yaw ``theta`` (rad) and the arm
    at ``arm`` (rad, ``ff.arm_joint_names`` order); wheels at zero. Planar base only.

    Same construction as :func:`~freeflyer_control.physics.state.make_state` (joint angles
    through Pinocchio's exponential map from the neutral configuration, the planar base written
    as (x, y, cos, sin)) without its validation: the planners call it in their inner loops.
    """
    arm = np.asarray(arm, dtype=float)
    if arm.shape != (len(ff.arm_joint_names),):
        raise ValueError(f"give {len(ff.arm_joint_names)} arm angles {list(ff.arm_joint_names)}, "
                         f"got {arm.shape}")
    dv = np.zeros(ff.model.nv)
    dv[ff.arm_v_indices] = arm
    q = pin.integrate(ff.model, pin.neutral(ff.model), dv)
    q[:4] = (base_xy[0], base_xy[1], math.cos(theta), math.sin(theta))
    return q


def attitude_map(ff: FreeFlyerModel, data: pin.Data, q: np.ndarray,
                 M: np.ndarray | None = None) -> np.ndarray:
    """G(q): base yaw rate per unit arm-joint rate (``ff.arm_joint_names`` order), planar base,
    zero momentum, idle wheels.

    The unactuated coordinates f (the base, and the wheels: an idle wheel's own momentum is
    conserved like the base's) obey M_f v = 0, so v_f = -M_ff^-1 M_fa q_dot and G is the
    yaw entry of that. Without wheels this is the wz row of the floating-mode GJM of base_link
    (physics.gjm); with wheels the GJM keeps the wheel rate as an input instead, which is not
    what an idle wheel does. ``M``: the mass matrix at ``q`` if the caller has it.
    """
    if M is None:
        M = mass_matrix(ff, data, q)
    free, arm = _free_and_arm(ff)
    # take() on rows then columns: ~3x cheaper than np.ix_ on these small matrices; this sits in
    # the planners' integration loops.
    X = solve(M.take(free, axis=0).take(free, axis=1), M.take(free, axis=0).take(arm, axis=1))
    return -X[2]  # planar base velocity (vx, vy, wz): wz is the yaw rate in any axes


def _free_and_arm(ff: FreeFlyerModel) -> tuple[np.ndarray, np.ndarray]:
    """(the unactuated velocity indices: base then wheels, the arm-joint velocity indices), once
    per model (``FreeFlyerModel.derived``)."""
    return ff.derived(_free_and_arm, _free_and_arm_of, ff)


def _free_and_arm_of(ff: FreeFlyerModel) -> tuple[np.ndarray, np.ndarray]:
    free = np.concatenate([np.arange(ff.nb), ff.wheel_v_indices]).astype(int)
    return free, np.asarray(ff.arm_v_indices, dtype=int)


def loop_gain(ff: FreeFlyerModel, data: pin.Data, arm: Sequence[float], i: int, j: int,
              step: float = 1e-5) -> float:
    """g = dG_j/dq_i - dG_i/dq_j at arm angles ``arm`` (rad per rad^2), central differences.

    A small counter-clockwise loop in the (q_i, q_j) plane (q_i horizontal) turns the base by
    g times the enclosed area. The step (1e-5 rad) keeps the truncation error (~step^2 times the
    third derivative of G) and the round-off (~1e-16 / step) both below 1e-9.
    """
    arm = np.asarray(arm, dtype=float)

    def G(x: np.ndarray) -> np.ndarray:
        return attitude_map(ff, data, configuration(ff, x))

    ei = np.zeros_like(arm)
    ej = np.zeros_like(arm)
    ei[i] = ej[j] = step
    dGj_dqi = (G(arm + ei)[j] - G(arm - ei)[j]) / (2 * step)
    dGi_dqj = (G(arm + ej)[i] - G(arm - ej)[i]) / (2 * step)
    return float(dGj_dqi - dGi_dqj)


# ---------------------------------------------------------------------------------------------
# Joint paths and their execution on the plant


class JointPath(Protocol):
    """A joint-space trajectory of the arm: absolute angles, rad, ``ff.arm_joint_names`` order."""

    duration: float

    def sample(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(position rad, velocity rad/s, acceleration rad/s^2) at time t (s), held after the end."""
        ...


@dataclass(frozen=True)
class MinJerkPath:
    """Straight segments between waypoints, each with a minimum-jerk (quintic) time law, so the
    joints stop at every waypoint (zero velocity and acceleration there).

    Attributes:
        waypoints: (k+1, n) arm angles, rad.
        durations: (k,) seconds per segment.
    """

    waypoints: np.ndarray
    durations: np.ndarray
    starts: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.durations) != len(self.waypoints) - 1 or np.any(np.asarray(self.durations) <= 0):
            raise ValueError("MinJerkPath needs k+1 waypoints and k positive durations")
        object.__setattr__(self, "starts", np.concatenate([[0.0], np.cumsum(self.durations)]))

    @property
    def duration(self) -> float:
        return float(self.starts[-1])

    def sample(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        k = int(np.clip(np.searchsorted(self.starts, t, side="right") - 1, 0, len(self.durations) - 1))
        T = self.durations[k]
        s, ds, dds = min_jerk((t - self.starts[k]) / T)
        a, b = self.waypoints[k], self.waypoints[k + 1]
        return a + s * (b - a), (ds / T) * (b - a), (dds / T**2) * (b - a)


@dataclass(frozen=True)
class SampledPath:
    """A planned joint path given by samples, interpolated by cubic Hermite splines (C1:
    positions and velocities match the plan at every sample; accelerations are the spline's).

    Attributes:
        t: (k,) increasing sample times, s (starting at 0).
        q: (k, n) arm angles, rad.
        qd: (k, n) arm rates, rad/s.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray

    def __post_init__(self) -> None:
        from scipy.interpolate import CubicHermiteSpline

        object.__setattr__(self, "_spline", CubicHermiteSpline(self.t, self.q, self.qd, axis=0))

    @property
    def duration(self) -> float:
        return float(self.t[-1] - self.t[0])

    def sample(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if t >= self.t[-1]:
            return self.q[-1].copy(), np.zeros(self.q.shape[1]), np.zeros(self.q.shape[1])
        t = max(t, float(self.t[0]))
        sp = self._spline
        return sp(t), sp(t, 1), sp(t, 2)

    def reversed(self) -> "SampledPath":
        """The same path run backwards in the same time (velocities negated)."""
        T = self.t[-1]
        return SampledPath(T - self.t[::-1], self.q[::-1].copy(), -self.qd[::-1])

    @staticmethod
    def concatenate(paths: Sequence["SampledPath"]) -> "SampledPath":
        """One path running ``paths`` one after the other (each must start where the last ended)."""
        ts, qs, qds, t0 = [], [], [], 0.0
        for k, p in enumerate(paths):
            skip = 1 if k else 0  # the first sample of each path repeats the last one
            ts.append(p.t[skip:] - p.t[0] + t0)
            qs.append(p.q[skip:])
            qds.append(p.qd[skip:])
            t0 = ts[-1][-1]
        return SampledPath(np.concatenate(ts), np.concatenate(qs), np.concatenate(qds))


@dataclass
class JointPathManeuver(Maneuver):
    """A joint-space maneuver that follows a :class:`JointPath`, then holds its end for
    ``settle`` seconds. The base reference (unused in floating mode) holds the initial pose."""

    path: JointPath | None = None
    settle: float = 1.0

    def __post_init__(self) -> None:
        if self.path is None:
            raise ValueError("JointPathManeuver needs a path")
        self.name = self.name or "joint-path"
        self.duration = self.path.duration + self.settle

    def joint_reference(self, t: float) -> JointReference:
        q, qd, qdd = self.path.sample(t)
        return JointReference(np.asarray(q, float), np.asarray(qd, float), np.asarray(qdd, float))


@dataclass(frozen=True)
class Execution:
    """What the plant did under the computed-torque loop (floating mode), sampled every tick.

    Attributes:
        t: s.
        theta: base yaw, rad, unwrapped (continuous) from the initial value.
        q: (k, n) arm angles, rad.
        q_ref: (k, n) the reference tracked, rad.
        ee: (k, 2) end-effector position relative to the initial system CoM, world axes, m
            (empty if no end-effector was asked for).
        final_state: the plant's state at the end.
        max_tracking_error: max over time and joints of |q - q_ref|, rad.
        momentum_drift: max |free momentum| at the end (round-off in floating mode).
    """

    t: np.ndarray
    theta: np.ndarray
    q: np.ndarray
    q_ref: np.ndarray
    ee: np.ndarray
    final_state: State
    max_tracking_error: float
    momentum_drift: float

    @property
    def theta_final(self) -> float:
        return float(self.theta[-1])


@dataclass(frozen=True)
class ExecutionSettings:
    """How plans are run on the plant.

    Attributes:
        rate: control rate, Hz; the plant steps once per control period (RK4).
        gains: computed-torque PD gains (1/s^2, 1/s); the defaults (natural frequency 8 rad/s,
            critically damped) are fast next to the planned motions and well inside the
            sampling limit at 50-100 Hz.
        settle: s the last reference is held after the path ends.
    """

    rate: float = 100.0
    gains: JointGains = JointGains(kp=64.0, kd=16.0)
    settle: float = 0.5


def execute_joint_path(
    ff: FreeFlyerModel,
    state: State,
    path: JointPath,
    settings: ExecutionSettings = ExecutionSettings(),
    *,
    ee_frame: str | None = None,
) -> Execution:
    """Track ``path`` from ``state`` on the full-dynamics plant (floating mode: arm torques
    only, no base actuation), the controller in lockstep; record attitude and joints."""
    if not settings.rate > 0:
        raise ValueError(f"rate must be a positive number of Hz, got {settings.rate}")
    dt = 1.0 / settings.rate
    maneuver = JointPathManeuver(path=path, settle=settings.settle)
    loop = ControlLoop(ff, maneuver, controller="computed_torque", mode=Mode.FLOATING,
                       joint_gains=settings.gains, base_actuation="ideal")
    loop.start(state)
    plant = Plant(ff, state, dt)
    data = plant.data
    com0 = pin.centerOfMass(ff.model, data, state.q).copy()
    fid = ff.frame_id(ee_frame) if ee_frame else None
    n_ticks = int(math.ceil(maneuver.duration / dt))
    ts, thetas, qs, refs, ees = [], [], [], [], []
    yaw_prev = base_yaw(ff, state.q)
    theta = yaw_prev
    for k in range(n_ticks + 1):
        t = k * dt
        s = plant.state
        yaw = base_yaw(ff, s.q)
        theta += math.remainder(yaw - yaw_prev, 2 * math.pi)  # unwrap: steps are << pi
        yaw_prev = yaw
        actuation, info = loop.tick(t, s, dt)
        ts.append(t)
        thetas.append(theta)
        qs.append(arm_angles(ff, s.q))
        refs.append(info.joint_reference.position)
        if fid is not None:
            pin.framesForwardKinematics(ff.model, data, s.q)
            ees.append((data.oMf[fid].translation - com0)[:2].copy())
        if k < n_ticks:
            plant.step(actuation)
    q_arr, r_arr = np.array(qs), np.array(refs)
    return Execution(
        t=np.array(ts), theta=np.array(thetas), q=q_arr, q_ref=r_arr,
        ee=np.array(ees).reshape(-1, 2), final_state=plant.state,
        max_tracking_error=float(np.max(np.abs(q_arr - r_arr))),
        momentum_drift=float(np.max(np.abs(free_momentum(ff, data, plant.state)))),
    )


# ---------------------------------------------------------------------------------------------
# Self-correcting planning


@dataclass(frozen=True)
class LoopPlan:
    """A plan of square joint loops that turns the base by ``dtheta``.

    Attributes:
        joints: (i, j), 0-based indices into ``ff.arm_joint_names``.
        joint_names: their names.
        q0: arm angles at the start (and the end), rad.
        theta0: base yaw at the start, rad.
        dtheta: requested change of base yaw, rad.
        side: dq, side of the full squares, rad.
        g: g(q0), rad/rad^2 (see the module docstring).
        direction: +1 counter-clockwise in the (q_i, q_j) plane, -1 clockwise.
        loops_fractional: |dtheta| / (|g| dq^2).
        full_loops: floor(loops_fractional).
        last_side: side of the last, smaller square (0 if none), rad.
        edge_time: s per square edge of side dq.
    """

    joints: tuple[int, int]
    joint_names: tuple[str, str]
    q0: np.ndarray
    theta0: float
    dtheta: float
    side: float
    g: float
    direction: int
    loops_fractional: float
    full_loops: int
    last_side: float
    edge_time: float

    @property
    def loops_predicted(self) -> int:
        """Loops to run (the last may be the smaller one): ceil(loops_fractional)."""
        return self.full_loops + (1 if self.last_side > 0 else 0)

    @property
    def theta_final_predicted(self) -> float:
        """theta0 + g dq^2 (direction) per square: exactly theta0 + dtheta by construction."""
        area = self.full_loops * self.side**2 + self.last_side**2
        return self.theta0 + self.direction * self.g * area

    def path(self) -> MinJerkPath:
        """The joint path: q0 -> corner, the squares, (corner of the small square, its loop),
        back to q0. Every move is a straight minimum-jerk segment."""
        n = self.q0.size
        ei, ej = np.zeros(n), np.zeros(n)
        ei[self.joints[0]] = 1.0
        ej[self.joints[1]] = 1.0
        # Counter-clockwise: +q_i first; clockwise: +q_j first (same square, reversed).
        first, second = (ei, ej) if self.direction > 0 else (ej, ei)
        points, times = [self.q0], []

        def square(side: float) -> None:
            corner = self.q0 - 0.5 * side * (ei + ej)  # on the diagonal through q0
            go_to(corner)
            for step in (first, second, -first, -second):
                go_to(points[-1] + side * step)

        def go_to(p: np.ndarray) -> None:
            length = float(np.max(np.abs(p - points[-1])))
            if length > 0:
                points.append(p)
                # Edge time scales with length (same peak rate), but never below half an edge.
                times.append(self.edge_time * max(length / self.side, 0.5))

        for _ in range(self.full_loops):
            square(self.side)
        if self.last_side > 0:
            square(self.last_side)
        go_to(self.q0)
        return MinJerkPath(np.array(points), np.array(times))


@dataclass(frozen=True)
class ReorientResult:
    """A plan and what the plant did with it.

    Attributes:
        plan: the loop plan.
        execution: the plant run.
        theta_final_simulated: base yaw at the end of the run, rad (unwrapped from theta0).
        loops_equivalent: loops of side dq the plant would have needed for ``dtheta``, from the
            turn it achieved per unit enclosed area (compare with ``plan.loops_fractional``).
    """

    plan: LoopPlan
    execution: Execution
    theta_final_simulated: float
    loops_equivalent: float

    def as_dict(self) -> dict:
        p = self.plan
        return {
            "joints": [p.joints[0] + 1, p.joints[1] + 1],  # 1-based, as the CLI and papers
            "joint_names": list(p.joint_names),
            "g": p.g,
            "direction": "ccw" if p.direction > 0 else "cw",
            "side": p.side,
            "last_side": p.last_side,
            "loops_fractional": p.loops_fractional,
            "loops_predicted": p.loops_predicted,
            "loops_executed": p.loops_predicted,
            "loops_equivalent_simulated": self.loops_equivalent,
            "theta0": p.theta0,
            "dtheta": p.dtheta,
            "theta_final_predicted": p.theta_final_predicted,
            "theta_final_simulated": self.theta_final_simulated,
            "theta_error_simulated": p.theta0 + p.dtheta - self.theta_final_simulated,
            "duration_s": float(self.execution.t[-1]),
            "max_tracking_error_rad": self.execution.max_tracking_error,
            "momentum_drift": self.execution.momentum_drift,
        }


def plan_reorientation(
    ff: FreeFlyerModel,
    state: State,
    dtheta: float,
    side: float,
    joints: tuple[int, int],
    *,
    edge_time: float = 0.5,
    g_min: float = 1e-3,
    max_loops: int = 500,
    momentum_tol: float = MOMENTUM_TOL,
) -> LoopPlan:
    """Plan square joint loops that turn the base of a planar robot by ``dtheta`` (rad).

    Args:
        state: where the plan starts; must have zero momentum.
        side: dq, side of the squares, rad (small: the prediction's error is O(dq^2) relative).
        joints: (i, j), 0-based arm-joint indices, i != j.
        edge_time: s per edge of side dq (peak joint rate 1.875 dq / edge_time).
        g_min: |g| (rad/rad^2) below which the loops are refused as doing nothing.
        max_loops: refuse plans that need more loops than this.

    Raises:
        ZeroMomentumRequired: the state has momentum.
        DegenerateLoopError: |g(q0)| < g_min, or too many loops needed.
        PlanningError / ValueError: not planar, bad joints, bad numbers.
    """
    require_planar(ff, "self-correcting planning")
    n = len(ff.arm_joint_names)
    i, j = (int(joints[0]), int(joints[1]))
    if not (0 <= i < n and 0 <= j < n) or i == j:
        raise ValueError(f"joints must be two different arm joints in 0..{n - 1} "
                         f"({list(ff.arm_joint_names)}), got {joints}")
    for name, value in (("dtheta", dtheta), ("side", side), ("edge_time", edge_time)):
        if not np.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value}")
    if not side > 0 or not edge_time > 0:
        raise ValueError(f"side and edge_time must be > 0, got side={side}, edge_time={edge_time}")
    data = ff.create_data()
    require_zero_momentum(ff, data, state, "self-correcting planning", momentum_tol)
    q0 = arm_angles(ff, state.q)
    g = loop_gain(ff, data, q0, i, j)
    names = (ff.arm_joint_names[i], ff.arm_joint_names[j])
    if abs(g) < g_min:
        raise DegenerateLoopError(
            f"g(q) = {g:.3g} rad/rad^2 in the ({names[0]}, {names[1]}) plane at q = "
            f"{np.round(q0, 4).tolist()}: |g| < {g_min:g}, so joint loops here (almost) do not "
            "turn the base. Choose another joint pair or first move the arm to a configuration "
            "where |g| is larger."
        )
    m = abs(dtheta) / (abs(g) * side**2)
    if m > max_loops:
        raise DegenerateLoopError(
            f"turning the base by {dtheta:g} rad needs {m:.0f} loops of side {side:g} rad "
            f"(g = {g:.3g}), more than max_loops = {max_loops}: use a larger side or another "
            "configuration"
        )
    full = int(math.floor(m))
    rest = m - full
    # A remainder below 1e-9 of a loop would be a square of side < 3e-5 dq: skip it.
    last = side * math.sqrt(rest) if rest > 1e-9 else 0.0
    direction = 1 if dtheta * g >= 0 else -1
    return LoopPlan((i, j), names, q0, base_yaw(ff, state.q), float(dtheta), float(side), g,
                    direction, m, full, last, float(edge_time))


def execute_reorientation(
    ff: FreeFlyerModel, state: State, plan: LoopPlan, settings: ExecutionSettings = ExecutionSettings()
) -> ReorientResult:
    """Run ``plan`` on the plant from ``state``; report the attitude reached."""
    run = execute_joint_path(ff, state, plan.path(), settings)
    theta_sim = plan.theta0 + (run.theta_final - run.theta[0])
    achieved = theta_sim - plan.theta0
    per_area = achieved / (plan.full_loops * plan.side**2 + plan.last_side**2)
    loops_eq = abs(plan.dtheta) / (abs(per_area) * plan.side**2) if per_area else float("inf")
    return ReorientResult(plan, run, theta_sim, loops_eq)


def self_correcting_reorientation(
    ff: FreeFlyerModel,
    state: State,
    dtheta: float,
    side: float,
    joints: tuple[int, int],
    *,
    passes: int = 2,
    tol: float = 1e-3,
    settings: ExecutionSettings = ExecutionSettings(),
    **plan_options,
) -> list[ReorientResult]:
    """Plan, execute, measure the remaining attitude error and re-plan (up to ``passes`` times)
    until it is below ``tol`` rad. Later passes keep the side unless the correction is smaller
    than one square, in which case the single (smaller) square lands it."""
    target = base_yaw(ff, state.q) + dtheta
    results: list[ReorientResult] = []
    current, remaining = state, float(dtheta)
    for _ in range(max(int(passes), 1)):
        plan = plan_reorientation(ff, current, remaining, side, joints, **plan_options)
        result = execute_reorientation(ff, current, plan, settings)
        results.append(result)
        current = result.execution.final_state
        # Both angles are unwrapped from different starts: compare them modulo a turn.
        remaining = math.remainder(target - result.theta_final_simulated, 2 * math.pi)
        if abs(remaining) <= tol:
            break
    return results
