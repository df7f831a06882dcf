"""Cartesian planning through the path-independent workspace (PIW), Papadopoulos, planar, zero momentum.

Positions are of the end-effector relative to the system CoM (which stays fixed in ``world``
when the momentum is zero), in world axes, m; the base attitude theta is the base yaw, rad.

Why: a free-floating arm's end-effector velocity is J*(q, theta) q_dot (J*: the floating-mode
GJM). J* loses rank at *dynamic singularities*, which depend on the mass properties. Measured by
the distance R of the end-effector from the system CoM, the reachable annulus [R_min, R_max]
splits into the path-dependent workspace (PDW: some configuration reaching that R is singular)
and the path-independent workspace (PIW, an annulus [R_1, R_2] for a planar arm: no
configuration reaching it is singular). Inside the PIW every path is singularity-free, so
resolved-rate motion is safe there; in the PDW a straight line may meet a singularity.

The plan from A (the current state) to D with the final base attitude theta_D:

1. Find the configuration q_D with the end-effector at D and the base at theta_D (same elbow
   branch as the start). From (q_D, theta_D) move the end-effector radially into the PIW, to D'
   (skipped when D is in the PIW), and **record** that joint path.
2. From A move radially into the PIW, to A'.
3. Inside the PIW go from A' to D' (radius and polar angle interpolated linearly: the path
   stays between the two radii, so inside the PIW).
4. At D' re-orient the base with small closed end-effector circles (the sense that turns the base
   the way needed, found from a trial circle; the last circle is shrunk so that the attitude
   lands on the recorded theta_D'; each circle is integrated, so errors are corrected as they
   arise).
5. Replay the recorded path of step 1 in reverse: theta_dot = G(q) q_dot, so a joint path run
   backwards undoes its attitude change exactly, and the robot arrives at (q_D, theta_D).

With a 2-joint arm the end-effector position and the base attitude fix the configuration, which
is why the attitude must be set inside the PIW before the last leg. Each leg is planned
kinematically (resolved rate with a small position feedback, RK4) and checked against the
singularity measure; the concatenated joint path is then tracked on the plant by the
computed-torque loop (:func:`execute_piw`). :func:`straight_line_resolved_rate` is the naive
alternative for comparison: resolved-rate control along the straight line A-D on the plant.

PIW radii come from :mod:`freeflyer_control.analysis.workspace` (:func:`piw_radii`). Only arms
with two joints are planned (their J* is square; a redundant arm needs a redundancy resolution
this planner does not choose).
"""

from __future__ import annotations

import math
from pathlib import Path
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pinocchio as pin

from freeflyer_control.analysis.reorient import (
    MOMENTUM_TOL,
    Execution,
    ExecutionSettings,
    PlanningError,
    SampledPath,
    arm_angles,
    attitude_map,
    configuration,
    execute_joint_path,
    require_planar,
    require_zero_momentum,
)
from freeflyer_control.control.loop import ControlLoop
from freeflyer_control.control.maneuvers import Maneuver, min_jerk
from freeflyer_control.control.references import TaskReference
from freeflyer_control.control.resolved_rate import ResolvedRateGains
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.dynamics import mass_matrix
from freeflyer_control.physics.gjm import generalized_jacobian
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.plant import Plant
from freeflyer_control.physics.state import State, base_yaw

# ---------------------------------------------------------------------------------------------
# Kinematics of the end-effector relative to the system CoM


class EEKinematics:
    """End-effector position relative to the system CoM and its GJM, for a planar robot at
    zero momentum, as functions of (arm angles q rad, base yaw theta rad)."""

    def __init__(self, ff: FreeFlyerModel, ee: str):
        self.ff, self.ee = ff, ee
        self.data = ff.create_data()
        self.fid = ff.frame_id(ee)
        self._zero_v = np.zeros(ff.model.nv)

    def evaluate(self, q: np.ndarray, theta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(p, J*, G) at arm angles q and base yaw theta, sharing one mass matrix:

        p = r_ee - r_com, world axes, m (2,), independent of where the base is;
        J* (2 x n): p_dot per arm-joint rate at zero momentum (the CoM is fixed, so it is also
        the inertial end-effector velocity); its singular values do not depend on theta;
        G (n,): base yaw rate per arm-joint rate (:func:`attitude_map`).
        """
        ff, data = self.ff, self.data
        qq = configuration(ff, q, theta)
        M = mass_matrix(ff, data, qq)
        J = generalized_jacobian(ff, data, State(qq, self._zero_v), Mode.FLOATING, self.ee,
                                 M=M).matrix[:2]
        com = pin.centerOfMass(ff.model, data, qq)  # also runs the forward kinematics
        pin.updateFramePlacement(ff.model, data, self.fid)
        p = (data.oMf[self.fid].translation - com)[:2].copy()
        return p, J, attitude_map(ff, data, qq, M=M)

    def position(self, q: np.ndarray, theta: float) -> np.ndarray:
        """p = r_ee - r_com, world axes, m (2,)."""
        qq = configuration(self.ff, q, theta)
        com = pin.centerOfMass(self.ff.model, self.data, qq)
        pin.updateFramePlacement(self.ff.model, self.data, self.fid)
        return (self.data.oMf[self.fid].translation - com)[:2].copy()

    def jacobian(self, q: np.ndarray, theta: float) -> np.ndarray:
        return self.evaluate(q, theta)[1]

    def attitude_rate_map(self, q: np.ndarray) -> np.ndarray:
        return attitude_map(self.ff, self.data, configuration(self.ff, q))


def _sigma_min(J: np.ndarray) -> float:
    return float(np.linalg.svd(J, compute_uv=False)[-1])


# ---------------------------------------------------------------------------------------------
# Workspace radii (from analysis.workspace)


@dataclass(frozen=True)
class WorkspaceRadii:
    """Radii from the system CoM, m.

    Attributes:
        reach: (R_min, R_max) of the reachable annulus.
        piw: (R_1, R_2), the path-independent annulus the planner uses.
        source: where they come from.
    """

    reach: tuple[float, float]
    piw: tuple[float, float]
    source: str = ""

    def zone(self, R: float) -> str:
        """``piw``, ``pdw`` or ``unreachable`` for a distance R (m) from the CoM."""
        if R < self.reach[0] or R > self.reach[1]:
            return "unreachable"
        return "piw" if self.piw[0] <= R <= self.piw[1] else "pdw"


def piw_radii(ff: FreeFlyerModel, ee: str | None = None, grid: int = 256) -> WorkspaceRadii:
    """Reachable annulus and PIW of the end-effector, from
    :func:`freeflyer_control.analysis.workspace.planar_workspace` (exact method for a 2-joint
    arm, ``grid`` points per joint); the widest PIW interval if it has several."""
    from freeflyer_control.analysis.workspace import planar_workspace

    require_planar(ff, "the PIW")
    ee = _end_effector(ff, ee)
    ws = planar_workspace(ff, ee, grid=grid)
    if not ws.piw:
        raise PlanningError(
            f"robot '{ff.name}' has no path-independent workspace for '{ee}' (every reachable "
            "radius has a singular configuration): PIW planning cannot be used"
        )
    piw = max(ws.piw, key=lambda i: i[1] - i[0])
    return WorkspaceRadii((ws.reachable.r_min, ws.reachable.r_max), (float(piw[0]), float(piw[1])),
                          f"analysis.workspace.planar_workspace ({ws.method}, resolution "
                          f"{ws.resolution:.1g} m)")


def _end_effector(ff: FreeFlyerModel, ee: str | None) -> str:
    if ee:
        ff.frame_id(ee)  # raises naming the links
        return ee
    if not ff.end_effectors:
        raise PlanningError(f"robot '{ff.name}' names no end-effector; give the frame (ee=...)")
    return ff.end_effectors[0]


# ---------------------------------------------------------------------------------------------
# Cartesian legs, integrated kinematically

# An end-effector path: s in [0, 1] -> (position (2,), d position / ds (2,)), m.
CartesianPath = Callable[[float], tuple[np.ndarray, np.ndarray]]


def line_path(p0: np.ndarray, p1: np.ndarray) -> CartesianPath:
    p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
    return lambda s: (p0 + s * (p1 - p0), p1 - p0)


def polar_path(p0: np.ndarray, p1: np.ndarray) -> CartesianPath:
    """Radius and polar angle (about the CoM) interpolated linearly, the short way round: the
    path stays between the two radii."""
    r0, r1 = np.linalg.norm(p0), np.linalg.norm(p1)
    a0 = math.atan2(p0[1], p0[0])
    da = math.remainder(math.atan2(p1[1], p1[0]) - a0, 2 * math.pi)

    def path(s: float) -> tuple[np.ndarray, np.ndarray]:
        r, a = r0 + s * (r1 - r0), a0 + s * da
        u = np.array([math.cos(a), math.sin(a)])
        return r * u, (r1 - r0) * u + r * da * np.array([-u[1], u[0]])

    return path


def circle_path(start: np.ndarray, radius: float, sense: int) -> CartesianPath:
    """One full circle of ``radius`` m through ``start``, centred a radius away along the
    tangential direction (so it stays at about the same distance from the CoM);
    ``sense`` +1 counter-clockwise, -1 clockwise."""
    start = np.asarray(start, float)
    u = start / np.linalg.norm(start)
    centre = start + radius * np.array([-u[1], u[0]])
    phi0 = math.atan2(start[1] - centre[1], start[0] - centre[0])

    def path(s: float) -> tuple[np.ndarray, np.ndarray]:
        phi = phi0 + sense * 2 * math.pi * s
        c, si = math.cos(phi), math.sin(phi)
        return centre + radius * np.array([c, si]), sense * 2 * math.pi * radius * np.array([-si, c])

    return path


@dataclass(frozen=True)
class Leg:
    """One kinematically planned piece of the motion.

    Attributes:
        name: what it does.
        path: the joint path (arm angles, rad, rad/s), time from 0.
        theta: base yaw at each sample, rad.
        ee: (k, 2) end-effector position relative to the CoM, m.
        sigma_min: smallest singular value of J* at each sample, m/rad.
    """

    name: str
    path: SampledPath
    theta: np.ndarray
    ee: np.ndarray
    sigma_min: np.ndarray

    @property
    def q_end(self) -> np.ndarray:
        return self.path.q[-1]

    @property
    def theta_end(self) -> float:
        return float(self.theta[-1])

    def reversed(self, name: str) -> "Leg":
        return Leg(name, self.path.reversed(), self.theta[::-1].copy(), self.ee[::-1].copy(),
                   self.sigma_min[::-1].copy())


class SingularityMet(PlanningError):
    """A planned Cartesian leg meets a dynamic singularity."""


def integrate_leg(
    kin: EEKinematics,
    name: str,
    q0: np.ndarray,
    theta0: float,
    path: CartesianPath,
    duration: float,
    *,
    dt: float = 0.02,
    k_feedback: float = 2.0,
    sigma_stop: float = 1e-3,
) -> Leg:
    """Resolved-rate kinematics along ``path`` with a minimum-jerk time law over ``duration`` s:

        q_dot = J*^-1 (p_d_dot + k (p_d - p)),   theta_dot = G(q) q_dot   (RK4, step dt)

    The feedback k (1/s) removes the integration drift from the path. Raises
    :class:`SingularityMet` if the smallest singular value of J* drops below ``sigma_stop``
    (m/rad) or det J* changes sign between two steps (a singularity was stepped over)."""
    steps = max(int(math.ceil(duration / dt)), 1)
    h = duration / steps

    def rates(t: float, q: np.ndarray, theta: float) -> tuple[np.ndarray, float, np.ndarray]:
        s, ds, _ = min_jerk(t / duration)
        p_d, dp = path(s)
        p, J, G = kin.evaluate(q, theta)
        v = dp * ds / duration + k_feedback * (p_d - p)
        qd = np.linalg.solve(J, v)
        return qd, float(G @ qd), J, p

    q, theta, t = np.asarray(q0, float).copy(), float(theta0), 0.0
    ts, qs, qds, thetas, ees, sig = [], [], [], [], [], []
    det_prev = None
    for k in range(steps + 1):
        qd, theta_d, J, p = rates(t, q, theta)
        smin, det = _sigma_min(J), float(np.linalg.det(J))
        if smin < sigma_stop or (det_prev is not None and det * det_prev < 0):
            raise SingularityMet(
                f"leg '{name}' meets a dynamic singularity at t = {t:.2f} s of {duration:.2f} s: "
                f"sigma_min(J*) = {smin:.2g} m/rad, end-effector at "
                f"{np.round(p, 4).tolist()} m from the CoM, q = "
                f"{np.round(q, 4).tolist()} rad. Choose a target in the PIW or another start."
            )
        det_prev = det
        ts.append(t); qs.append(q.copy()); thetas.append(theta)
        qds.append(qd if k < steps else np.zeros_like(qd))  # every leg ends at rest
        ees.append(p); sig.append(smin)
        if k == steps:
            break
        k1q, k1t = qd, theta_d  # the first RK4 stage is the evaluation above
        k2q, k2t, _, _ = rates(t + h / 2, q + h / 2 * k1q, theta + h / 2 * k1t)
        k3q, k3t, _, _ = rates(t + h / 2, q + h / 2 * k2q, theta + h / 2 * k2t)
        k4q, k4t, _, _ = rates(t + h, q + h * k3q, theta + h * k3t)

        q = q + h / 6 * (k1q + 2 * k2q + 2 * k3q + k4q)
        theta = theta + h / 6 * (k1t + 2 * k2t + 2 * k3t + k4t)
        t += h
    return Leg(name, SampledPath(np.array(ts), np.array(qs), np.array(qds)), np.array(thetas),
               np.array(ees), np.array(sig))


def joint_move(kin: EEKinematics, name: str, q0: np.ndarray, theta0: float, q1: np.ndarray,
               duration: float, dt: float = 0.02) -> Leg:
    """A straight minimum-jerk joint move (used to close the tiny gap left by the circles)."""
    steps = max(int(math.ceil(duration / dt)), 1)
    ts = np.linspace(0.0, duration, steps + 1)
    qs, qds, thetas = [], [], [float(theta0)]
    for k, t in enumerate(ts):
        s, ds, _ = min_jerk(t / duration)
        qs.append(q0 + s * (q1 - q0))
        qds.append(ds / duration * (q1 - q0))
        if k:  # trapezoidal theta = integral of G dq (the move is tiny)
            dq = qs[-1] - qs[-2]
            thetas.append(thetas[-1] + kin.attitude_rate_map(0.5 * (qs[-1] + qs[-2])) @ dq)
    ees = np.array([kin.position(q, th) for q, th in zip(qs, thetas)])
    sig = np.array([_sigma_min(kin.jacobian(q, th)) for q, th in zip(qs, thetas)])
    return Leg(name, SampledPath(ts, np.array(qs), np.array(qds)), np.array(thetas), ees, sig)


# ---------------------------------------------------------------------------------------------
# Inverse kinematics (end-effector position and base attitude -> arm angles), 2-joint arms


def solve_configuration(kin: EEKinematics, point: np.ndarray, theta: float, branch: float,
                        grid: int = 73, tol: float = 1e-10) -> np.ndarray:
    """Arm angles q (rad) with the end-effector at ``point`` (m from the CoM, world axes) and the
    base at yaw ``theta``, on the elbow branch sign(sin q2) = ``branch``: a coarse grid search,
    then Newton's method (finite-difference Jacobian of the fixed-attitude map)."""
    point = np.asarray(point, float)
    c, s = math.cos(theta), math.sin(theta)
    target = np.array([c * point[0] + s * point[1], -s * point[0] + c * point[1]])  # R(-theta) p
    xs = np.linspace(-math.pi, math.pi, grid)
    best, best_err = None, np.inf
    for q1 in xs:
        for q2 in xs:
            if np.sign(math.sin(q2)) != branch:
                continue
            err = np.linalg.norm(kin.position(np.array([q1, q2]), 0.0) - target)
            if err < best_err:
                best, best_err = np.array([q1, q2]), err
    q = best
    for _ in range(50):
        f = kin.position(q, 0.0) - target
        if np.linalg.norm(f) < tol:
            break
        Jf = np.empty((2, 2))
        for i in range(2):
            e = np.zeros(2)
            e[i] = 1e-6
            Jf[:, i] = (kin.position(q + e, 0.0) - kin.position(q - e, 0.0)) / 2e-6
        q = q - np.linalg.solve(Jf, f)
    if np.linalg.norm(kin.position(q, 0.0) - target) > 1e-8:
        raise PlanningError(f"no configuration puts the end-effector at {point.tolist()} m with "
                            f"the base at {theta:g} rad on this elbow branch")
    return q


# ---------------------------------------------------------------------------------------------
# The PIW plan


@dataclass(frozen=True)
class PIWPlan:
    """The five-step plan (see the module docstring).

    Attributes:
        frame: the end-effector frame.
        legs: the planned pieces in execution order.
        radii: the workspace radii used.
        start, target: end-effector positions A and D, m from the CoM.
        theta_target: requested final base yaw, rad.
        q_target: arm angles at D with that attitude, rad.
        circles: number of re-orientation circles (the last possibly smaller).
        circle_turn: base yaw change per full circle at D' (from the trial circle), rad.
    """

    frame: str
    legs: tuple[Leg, ...]
    radii: WorkspaceRadii
    start: np.ndarray
    target: np.ndarray
    theta_target: float
    q_target: np.ndarray
    circles: int
    circle_turn: float

    def path(self) -> SampledPath:
        return SampledPath.concatenate([leg.path for leg in self.legs])

    @property
    def theta_final_planned(self) -> float:
        return self.legs[-1].theta_end

    @property
    def sigma_min(self) -> float:
        return float(min(leg.sigma_min.min() for leg in self.legs))

    def as_dict(self) -> dict:
        return {
            "frame": self.frame,
            "piw": list(self.radii.piw),
            "reach": list(self.radii.reach),
            "radii_source": self.radii.source,
            "start": self.start.tolist(),
            "target": self.target.tolist(),
            "theta_target": self.theta_target,
            "theta_final_planned": self.theta_final_planned,
            "q_target": self.q_target.tolist(),
            "circles": self.circles,
            "circle_turn_rad": self.circle_turn,
            "legs": [leg.name for leg in self.legs],
            "duration_s": self.path().duration,
            "sigma_min_planned": self.sigma_min,
        }


def plan_piw(
    ff: FreeFlyerModel,
    state: State,
    target: Sequence[float],
    theta_target: float,
    *,
    ee: str | None = None,
    radii: WorkspaceRadii | None = None,
    circle_radius: float = 0.04,
    margin: float = 0.02,
    speed: float = 0.1,
    circle_time: float = 3.0,
    theta_tol: float = 1e-4,
    max_circles: int = 200,
    dt: float = 0.04,
    momentum_tol: float = MOMENTUM_TOL,
) -> PIWPlan:
    """Plan the end-effector from where it is (A) to ``target`` (D, m from the system CoM, world
    axes) arriving with base yaw ``theta_target`` (rad), through the PIW.

    Args:
        radii: workspace radii (default: :func:`piw_radii`, about a second).
        circle_radius: m, radius of the re-orientation circles.
        margin: m kept from the PIW boundaries (a safety band: the legs are tracked with errors).
        speed: m/s, average end-effector speed of the Cartesian legs.
        circle_time: s per full circle.
        theta_tol: rad; circles are added until the attitude at D' is this close to the one the
            recorded leg needs.

    Raises:
        ZeroMomentumRequired: the state has momentum (the CoM would drift, theta would drift).
        SingularityMet: a leg into the PIW meets a singularity.
        PlanningError: unreachable target, no room for circles, too many circles, ...
    """
    require_planar(ff, "PIW planning")
    ee = _end_effector(ff, ee)
    if len(ff.arm_joint_names) != 2:
        raise PlanningError(
            f"PIW planning is implemented for 2-joint arms (square J*); robot '{ff.name}' has "
            f"{len(ff.arm_joint_names)} arm joints"
        )
    kin = EEKinematics(ff, ee)
    require_zero_momentum(ff, kin.data, state, "PIW planning", momentum_tol)
    radii = radii or piw_radii(ff, ee)
    R1, R2 = radii.piw
    lo, hi = R1 + margin + circle_radius, R2 - margin - circle_radius
    if lo > hi:
        raise PlanningError(f"the PIW [{R1:.3f}, {R2:.3f}] m is too thin for circles of "
                            f"{circle_radius:g} m with a {margin:g} m margin: use smaller ones")
    target = np.asarray(target, dtype=float)
    R_D = float(np.linalg.norm(target))
    if radii.zone(R_D) == "unreachable":
        raise PlanningError(f"target {target.tolist()} is {R_D:.3f} m from the CoM, outside the "
                            f"reachable annulus [{radii.reach[0]:.3f}, {radii.reach[1]:.3f}] m")
    q_A, theta_A = arm_angles(ff, state.q), base_yaw(ff, state.q)
    branch = float(np.sign(math.sin(q_A[1]))) or 1.0
    q_D = solve_configuration(kin, target, theta_target, branch)

    def into_piw(p: np.ndarray) -> np.ndarray:
        R = float(np.linalg.norm(p))
        return p * (min(max(R, lo), hi) / R)

    def leg(name: str, q0, th0, p0, p1, path_fn=line_path) -> Leg | None:
        dist = float(np.linalg.norm(np.asarray(p1) - np.asarray(p0)))
        if dist < 1e-9:
            return None
        T = max(dist / speed, 1.0)  # average speed `speed` (the min-jerk peak is 1.875 x)
        return integrate_leg(kin, name, q0, th0, path_fn(p0, p1), T, dt=dt)

    A = kin.position(q_A, theta_A)
    D_in = into_piw(target)
    try:
        back = leg("D into the PIW (recorded)", q_D, theta_target, target, D_in)
    except SingularityMet as exc:
        raise SingularityMet(
            f"{exc} With the base at {theta_target:g} rad the arm at D is beyond a dynamic "
            "singularity from the PIW along the radial path: ask for another final attitude or "
            "another D."
        ) from None
    q_Din = back.q_end if back else q_D
    theta_Din = back.theta_end if back else float(theta_target)

    legs: list[Leg] = []
    A_in = into_piw(A)
    first = leg("A into the PIW", q_A, theta_A, A, A_in)
    if first:
        legs.append(first)
    q, th = (first.q_end, first.theta_end) if first else (q_A, theta_A)
    transfer = leg("across the PIW", q, th, A_in, D_in, polar_path)
    if transfer:
        legs.append(transfer)
        q, th = transfer.q_end, transfer.theta_end

    # Re-orientation circles at D'. A trial circle gives the turn per circle and its sense.
    circles = 0
    remaining = math.remainder(theta_Din - th, 2 * math.pi)
    trial = integrate_leg(kin, "trial circle", q, th, circle_path(D_in, circle_radius, +1),
                          circle_time, dt=dt)
    trial_turn = trial.theta_end - th  # signed turn of one counter-clockwise circle
    turn = abs(trial_turn)
    if turn < 1e-9:
        raise PlanningError("end-effector circles at D' do not turn the base (turn per circle "
                            f"{trial_turn:.2g} rad); choose another target")
    if abs(remaining) / turn > max_circles:
        raise PlanningError(
            f"re-orienting the base by {remaining:.3g} rad at D' needs about "
            f"{abs(remaining) / turn:.0f} circles of {circle_radius:g} m ({turn:.3g} rad each), "
            f"more than max_circles = {max_circles}: use larger circles or another final attitude"
        )
    while abs(remaining) > theta_tol:
        if circles >= max_circles:
            raise PlanningError(f"{max_circles} circles did not set the attitude (still "
                                f"{remaining:.3g} rad off): use larger circles")
        # The sense that turns the base the way still needed (re-chosen every circle, so an
        # overshoot is corrected by running the other way); full circles while more than one
        # is needed, the last one shrunk (the turn goes with the enclosed area, ~ r^2).
        sense = 1 if trial_turn * remaining > 0 else -1
        r = circle_radius * min(1.0, math.sqrt(abs(remaining) / turn))
        c = integrate_leg(kin, f"circle {circles + 1}", q, th, circle_path(D_in, r, sense),
                          circle_time, dt=dt)
        legs.append(c)
        circles += 1
        q, th = c.q_end, c.theta_end
        if r == circle_radius:
            turn = abs(c.theta_end - c.theta[0])  # keep the estimate current (self-correcting)
        remaining = math.remainder(theta_Din - th, 2 * math.pi)
    # Revolute angles are the same configuration modulo a turn: run the recorded leg shifted by
    # the whole turns the arm has accumulated on the way (its dynamics do not see them).
    turns = 2 * math.pi * np.round((q - q_Din) / (2 * math.pi))
    q_Din = q_Din + turns
    gap = float(np.max(np.abs(q - q_Din)))
    if gap > 0.05:
        raise PlanningError(f"after re-orienting, the arm is {gap:.3g} rad from the recorded "
                            "configuration at D' (another elbow branch?): choose a target on the "
                            "start's elbow branch")
    if gap > 0:
        legs.append(joint_move(kin, "close the gap to the recorded path", q, th, q_Din, 0.5, dt))
        th = legs[-1].theta_end
    if back:
        # Replaying the recorded leg backwards undoes its attitude change from wherever we are.
        rev = back.reversed("D' to D (recorded path reversed)")
        shifted = SampledPath(rev.path.t, rev.path.q + turns, rev.path.qd)
        legs.append(Leg(rev.name, shifted, rev.theta + (th - rev.theta[0]), rev.ee, rev.sigma_min))
    q_D = q_D + turns
    return PIWPlan(ee, tuple(legs), radii, A, target, float(theta_target), q_D, circles, turn)


@dataclass(frozen=True)
class PIWResult:
    """Attributes:
    plan: the plan.
    execution: the plant run (computed torque, floating mode); ``execution.ee`` is recorded.
    ee_error: |end-effector - D| at the end of the run, m.
    theta_error: theta_target - final base yaw, rad.
    """

    plan: PIWPlan
    execution: Execution
    ee_error: float
    theta_error: float

    def as_dict(self) -> dict:
        out = self.plan.as_dict()
        out.update({
            "theta_final_simulated": float(self.plan.theta_target - self.theta_error),
            "theta_error_simulated": self.theta_error,
            "ee_final_simulated": self.execution.ee[-1].tolist(),
            "ee_error_simulated_m": self.ee_error,
            "max_tracking_error_rad": self.execution.max_tracking_error,
        })
        return out


def execute_piw(ff: FreeFlyerModel, state: State, plan: PIWPlan,
                settings: ExecutionSettings = ExecutionSettings()) -> PIWResult:
    """Track the whole planned joint path on the plant; measure where the end-effector and the
    base attitude end up."""
    run = execute_joint_path(ff, state, plan.path(), settings, ee_frame=plan.frame)
    theta_final = base_yaw(ff, state.q) + run.theta_final - run.theta[0]
    ee_err = float(np.linalg.norm(run.ee[-1] - plan.target))
    return PIWResult(plan, run, ee_err, math.remainder(plan.theta_target - theta_final, 2 * math.pi))


# ---------------------------------------------------------------------------------------------
# The naive alternative: resolved rate along the straight line


@dataclass
class StraightLineManeuver(Maneuver):
    """End-effector from where it starts to ``target`` (m, world) along a straight line with a
    minimum-jerk time law over ``move_time`` s, then held; position only."""

    target: np.ndarray | None = None
    move_time: float = 10.0
    hold_time: float = 5.0
    frame: str = ""

    def __post_init__(self) -> None:
        self.name, self.task_space = "straight-line", True
        self.duration = self.move_time + self.hold_time

    def task_references(self, t: float) -> list[TaskReference]:
        s, ds, _ = min_jerk(t / self.move_time)
        p0 = self.ee0[self.frame].translation
        p1 = np.asarray(self.target, float)
        return [TaskReference(self.frame, p0 + s * (p1 - p0), None, (p1 - p0) * ds / self.move_time,
                              np.zeros(3))]


@dataclass(frozen=True)
class StraightLineResult:
    """Attributes:
    t: s. ee: (k, 2) end-effector relative to the CoM, m. sigma_min: of the task GJM, per tick.
    ee_error: |end-effector - D| at the end, m. max_deviation: largest distance from the
    straight segment A-D during the run, m. theta_final: base yaw at the end, rad.
    """

    t: np.ndarray
    ee: np.ndarray
    sigma_min: np.ndarray
    ee_error: float
    max_deviation: float
    theta_final: float

    def as_dict(self) -> dict:
        return {"ee_error_m": self.ee_error, "max_deviation_m": self.max_deviation,
                "sigma_min_min": float(self.sigma_min.min()), "theta_final": self.theta_final}


def straight_line_resolved_rate(
    ff: FreeFlyerModel, state: State, target: Sequence[float], *, ee: str | None = None,
    move_time: float = 10.0, hold_time: float = 5.0, rate: float = 100.0,
    gains: ResolvedRateGains = ResolvedRateGains(),
) -> StraightLineResult:
    """Run resolved-rate control (damped least squares through the floating-mode GJM) along the
    straight line from the current end-effector position to ``target`` (m from the CoM) on the
    plant, and measure how it ends."""
    require_planar(ff, "the straight-line comparison")
    ee = _end_effector(ff, ee)
    data = ff.create_data()
    com0 = pin.centerOfMass(ff.model, data, state.q).copy()
    goal = com0 + np.array([target[0], target[1], 0.0])
    maneuver = StraightLineManeuver(target=goal, move_time=move_time, hold_time=hold_time, frame=ee)
    # Offline: the law's CPU time per tick does not matter here (overrun_limit None).
    loop = ControlLoop(ff, maneuver, controller="resolved_rate", mode=Mode.FLOATING,
                       rr_gains=gains, base_actuation="ideal", overrun_limit=None)
    loop.start(state)
    dt = 1.0 / rate
    plant = Plant(ff, state, dt)
    fid = ff.frame_id(ee)
    n = int(math.ceil(maneuver.duration / dt))
    ts, ees, sig = [], [], []
    yaw0 = base_yaw(ff, state.q)
    theta, yaw_prev = yaw0, yaw0
    for k in range(n + 1):
        s = plant.state
        act, info = loop.tick(k * dt, s, dt)
        if info.fault is not None:  # the law failed (a singular pose): no comparison to give
            raise RuntimeError(str(info.fault))
        pin.framesForwardKinematics(ff.model, data, s.q)
        ts.append(k * dt)
        ees.append((data.oMf[fid].translation - com0)[:2].copy())
        sig.append(info.resolved_rate.sigma_min)
        yaw = base_yaw(ff, s.q)
        theta += math.remainder(yaw - yaw_prev, 2 * math.pi)
        yaw_prev = yaw
        if k < n:
            plant.step(act)
    ee_arr = np.array(ees)
    a, d = ee_arr[0], np.asarray(target, float)
    u = (d - a) / np.linalg.norm(d - a)
    rel = ee_arr - a
    along = np.clip(rel @ u, 0.0, np.linalg.norm(d - a))
    deviation = np.linalg.norm(rel - along[:, None] * u, axis=1)
    return StraightLineResult(np.array(ts), ee_arr, np.array(sig),
                              float(np.linalg.norm(ee_arr[-1] - d)), float(deviation.max()), theta)


def plot_piw(result: PIWResult, path: str | Path, straight: StraightLineResult | None = None) -> Path:
    """Write a PNG: the end-effector path about the system CoM (planned legs, plant, the PIW
    annulus, the straight line if given) and the base yaw over time. Returns the file path."""
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    plan, run = result.plan, result.execution
    fig, (ax, ay) = plt.subplots(1, 2, figsize=(12, 5.5))
    from matplotlib.patches import Annulus

    r_lo, r_hi = plan.radii.piw
    ax.add_patch(Annulus((0.0, 0.0), r_hi, r_hi - r_lo, color="tab:green", alpha=0.15,
                         label=f"PIW {r_lo:.3f}-{r_hi:.3f} m"))
    labelled = set()
    for leg in plan.legs:
        kind = "re-orientation circles" if leg.name.startswith("circle") else leg.name
        ax.plot(leg.ee[:, 0], leg.ee[:, 1], lw=1.2, color="tab:blue" if kind.startswith("re-") else None,
                label=None if kind in labelled else f"planned: {kind}")
        labelled.add(kind)
    if run.ee.size:
        ax.plot(run.ee[:, 0], run.ee[:, 1], "k--", lw=0.8, label="plant")
    if straight is not None:
        ax.plot(straight.ee[:, 0], straight.ee[:, 1], color="tab:red", lw=1.2,
                label="straight line, resolved rate")
    ax.plot(*plan.start[:2], "go", label="A (start)")
    ax.plot(*plan.target[:2], "k*", ms=12, label="D (target)")
    ax.plot(0.0, 0.0, "k+", ms=10, label="system CoM")
    ax.set(xlabel="x from the system CoM [m]", ylabel="y from the system CoM [m]",
           title="end-effector path through the path-independent workspace")
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(fontsize=7, loc="best")
    t0 = 0.0
    for leg in plan.legs:
        ay.plot(t0 + leg.path.t, leg.theta, lw=1.2)
        t0 += leg.path.duration
    ay.plot(run.t, plan.legs[0].theta[0] + run.theta - run.theta[0], "k--", lw=0.8, label="plant")
    ay.axhline(plan.theta_target, color="k", lw=0.6, label="requested final yaw")
    ay.set(xlabel="t [s]", ylabel="base yaw [rad]",
           title=f"base attitude (final error {result.theta_error:.2e} rad)")
    ay.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
