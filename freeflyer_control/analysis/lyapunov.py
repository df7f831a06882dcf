"""Lyapunov planning of base attitude and joints together (Papadopoulos), planar, zero momentum.

The output y = [theta; q] (base yaw, then the arm angles, rad) moves as y_dot = K(q) q_dot with
K = [G(q); I] (G: :func:`~freeflyer_control.analysis.reorient.attitude_map`). With a positive
definite diagonal weight A = diag(a_theta, a_q...) and the error e = y_d - y the law

    q_dot = s(t) (A K)^T e,          V = 1/2 e^T A e,         V_dot = -s |(A K)^T e|^2 <= 0

never increases V (s(t): a minimum-jerk ramp from 0 to 1 over ``ramp_time`` so the plan starts
at rest; a uniform scaling that keeps every joint rate within ``max_joint_rate`` keeps the
direction, so V still falls). V falls to zero only if the trajectory avoids the null space of
(A K)^T: K has n columns in n+1 rows, so for every q there is one error direction,
e ~ A^-1 [1; -G^T], which the joints cannot see. There the command vanishes while the error
does not: the planner **stalls**. Near the target the flow ends on that direction, so whether a
target is "reached" depends on how far from it the flow lands; typical pure re-orientations
(q_d = q0, theta_d != theta0) stall, targets whose attitude change goes along with the joint
motion converge. (The bi-directional variant of the paper, planning from both ends and meeting,
reduces this; it is not implemented here.)

Stall detection: the ratio rho = |(A K)^T e| / (|A K|_F |e|) (0: the error is invisible to the
joints) falls below ``stall_ratio`` while |e| is above the tolerances.

The kinematic plan (RK4 on y, step ``dt``) is then tracked on the plant by the computed-torque
loop (:func:`execute_lyapunov`), and :func:`plot_lyapunov` draws the paths (PNG).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from freeflyer_control.analysis.reorient import (
    MOMENTUM_TOL,
    Execution,
    ExecutionSettings,
    SampledPath,
    arm_angles,
    attitude_map,
    configuration,
    execute_joint_path,
    require_planar,
    require_zero_momentum,
)
from freeflyer_control.control.maneuvers import min_jerk
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.state import State, base_yaw

STATUSES = ("converged", "stalled", "max_time")


@dataclass(frozen=True)
class LyapunovGains:
    """Attributes:
    a_theta: weight of the attitude error, 1/s (rad/s of joint rate per rad of error, via G).
    a_q: weight of the joint errors, 1/s; a scalar or one per arm joint.
    max_joint_rate: rad/s; the command is scaled down (direction kept) to respect it.
    ramp_time: s over which the law is faded in from zero (the plan starts at rest).
    """

    a_theta: float = 1.0
    a_q: float | Sequence[float] = 1.0
    max_joint_rate: float = 0.5
    ramp_time: float = 1.0

    def weights(self, n: int) -> np.ndarray:
        """The diagonal of A (n+1,): a_theta, then a_q per joint."""
        a_q = np.broadcast_to(np.asarray(self.a_q, dtype=float), (n,))
        a = np.concatenate([[float(self.a_theta)], a_q])
        if not np.all(np.isfinite(a)) or np.any(a <= 0):
            raise ValueError(f"Lyapunov weights must be finite and > 0 (A positive definite); "
                             f"got a_theta={self.a_theta}, a_q={self.a_q}")
        if not (self.max_joint_rate > 0 and self.ramp_time >= 0):
            raise ValueError("max_joint_rate must be > 0 and ramp_time >= 0")
        return a


@dataclass(frozen=True)
class LyapunovPlan:
    """The kinematic plan, sampled every ``dt``.

    Attributes:
        status: ``converged`` (|theta error| <= tol_theta and max |q error| <= tol_q),
            ``stalled`` (the command vanished, rho < stall_ratio, with the error above them) or
            ``max_time``.
        reason: a sentence saying why the planner stopped.
        t: s. theta: rad (continuous, from the turn of the start yaw nearest the target).
        q: (k, n) rad. qd: (k, n) rad/s.
        V: 1/2 e^T A e. rho: the stall ratio (see the module docstring).
        theta_target, q_target: the target y_d.
        weights: diagonal of A.
    """

    status: str
    reason: str
    t: np.ndarray
    theta: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    V: np.ndarray
    rho: np.ndarray
    theta_target: float
    q_target: np.ndarray
    weights: np.ndarray

    @property
    def theta_error(self) -> float:
        return float(self.theta_target - self.theta[-1])

    @property
    def q_error(self) -> np.ndarray:
        return self.q_target - self.q[-1]

    def path(self) -> SampledPath:
        return SampledPath(self.t, self.q, self.qd)

    def as_dict(self) -> dict:
        return {
            "status": self.status,
            "reason": self.reason,
            "duration_s": float(self.t[-1]),
            "theta_target": self.theta_target,
            "theta_final_planned": float(self.theta[-1]),
            "theta_error_planned": self.theta_error,
            "q_target": self.q_target.tolist(),
            "q_final_planned": self.q[-1].tolist(),
            "q_error_planned_max": float(np.max(np.abs(self.q_error))),
            "V_initial": float(self.V[0]),
            "V_final": float(self.V[-1]),
            "rho_final": float(self.rho[-1]),
        }


def plan_lyapunov(
    ff: FreeFlyerModel,
    state: State,
    theta_target: float,
    q_target: Sequence[float],
    gains: LyapunovGains = LyapunovGains(),
    *,
    dt: float = 0.02,
    t_max: float = 60.0,
    tol_theta: float = 1e-3,
    tol_q: float = 1e-3,
    stall_ratio: float = 1e-3,
    momentum_tol: float = MOMENTUM_TOL,
) -> LyapunovPlan:
    """Integrate the Lyapunov law from ``state`` toward (theta_target rad, q_target rad).

    Args:
        q_target: arm angles, ``ff.arm_joint_names`` order.
        dt: RK4 step, s. t_max: give up after this long, s.
        tol_theta, tol_q: convergence tolerances, rad.
        stall_ratio: rho below which the planner reports a stall.

    Raises:
        ZeroMomentumRequired: the state has momentum (the law has no drift term).
    """
    require_planar(ff, "Lyapunov planning")
    data = ff.create_data()
    require_zero_momentum(ff, data, state, "Lyapunov planning", momentum_tol)
    n = len(ff.arm_joint_names)
    q_target = np.asarray(q_target, dtype=float)
    if q_target.shape != (n,) or not np.all(np.isfinite(q_target)) or not np.isfinite(theta_target):
        raise ValueError(f"give a finite theta_target and {n} finite target angles "
                         f"{list(ff.arm_joint_names)}; got {q_target.tolist()}")
    if not (dt > 0 and t_max > 0):
        raise ValueError(f"dt and t_max must be > 0, got dt={dt}, t_max={t_max}")
    a = gains.weights(n)
    y_d = np.concatenate([[float(theta_target)], q_target])

    def K(q: np.ndarray) -> np.ndarray:
        return np.vstack([attitude_map(ff, data, configuration(ff, q)), np.eye(n)])

    def law(t: float, y: np.ndarray) -> tuple[np.ndarray, float]:
        """(q_dot, rho) at time t and output y."""
        Kq = K(y[1:])
        e = y_d - y
        AK = a[:, None] * Kq
        grad = AK.T @ e
        scale = np.linalg.norm(AK) * np.linalg.norm(e)
        rho = float(np.linalg.norm(grad) / scale) if scale > 0 else 0.0
        s = min_jerk(t / gains.ramp_time)[0] if gains.ramp_time > 0 else 1.0
        qd = s * grad
        peak = np.max(np.abs(qd))
        if peak > gains.max_joint_rate:
            qd *= gains.max_joint_rate / peak
        return qd, rho

    def ydot(t: float, y: np.ndarray) -> np.ndarray:
        qd, _ = law(t, y)
        return K(y[1:]) @ qd

    # Yaw is an angle: start from the turn of the measured yaw nearest the target, so that a
    # target of -3.1 rad from 3.1 rad is a 0.08 rad move, not 6.2 rad.
    theta0 = float(theta_target) - math.remainder(float(theta_target) - base_yaw(ff, state.q), 2 * math.pi)
    y = np.concatenate([[theta0], arm_angles(ff, state.q)])
    t = 0.0
    rows: list[tuple] = []
    status, reason = "max_time", f"not converged after t_max = {t_max:g} s"
    while True:
        qd, rho = law(t, y)
        e = y_d - y
        rows.append((t, y.copy(), qd, 0.5 * float(e @ (a * e)), rho))
        if abs(e[0]) <= tol_theta and np.max(np.abs(e[1:])) <= tol_q:
            status = "converged"
            reason = (f"reached the target within {tol_theta:g} rad (attitude) and {tol_q:g} rad "
                      "(joints)")
            break
        if rho < stall_ratio and t >= gains.ramp_time:
            status = "stalled"
            reason = (f"stalled at t = {t:.2f} s: the error (attitude {e[0]:.4g} rad, joints up to "
                      f"{np.max(np.abs(e[1:])):.4g} rad) lies in the null space of (A K)^T "
                      f"(rho = {rho:.2g} < {stall_ratio:g}), so the command vanished. Joint loops "
                      "(self-correcting planning) or another target/weighting are needed.")
            break
        if t >= t_max:
            break
        k1 = ydot(t, y)
        k2 = ydot(t + dt / 2, y + dt / 2 * k1)
        k3 = ydot(t + dt / 2, y + dt / 2 * k2)
        k4 = ydot(t + dt, y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t += dt
    ts = np.array([r[0] for r in rows])
    ys = np.array([r[1] for r in rows])
    qds = np.array([r[2] for r in rows])
    # The executed path must end at rest: stop the last sample (its rate is already tiny when
    # the plan converged or stalled; after max_time the spline brakes over the last step).
    qds[-1] = 0.0
    return LyapunovPlan(status, reason, ts, ys[:, 0], ys[:, 1:], qds,
                        np.array([r[3] for r in rows]), np.array([r[4] for r in rows]),
                        float(theta_target), q_target, a)


@dataclass(frozen=True)
class LyapunovResult:
    """A plan and its execution on the plant.

    Attributes:
        plan: the kinematic plan.
        execution: the plant run (computed torque, floating mode).
        theta_final_simulated: base yaw at the end of the run, rad (unwrapped from the start).
    """

    plan: LyapunovPlan
    execution: Execution
    theta_final_simulated: float

    def as_dict(self) -> dict:
        out = self.plan.as_dict()
        out.update({
            "theta_final_simulated": self.theta_final_simulated,
            "theta_error_simulated": self.plan.theta_target - self.theta_final_simulated,
            "q_final_simulated": self.execution.q[-1].tolist(),
            "max_tracking_error_rad": self.execution.max_tracking_error,
            "momentum_drift": self.execution.momentum_drift,
        })
        return out


def execute_lyapunov(
    ff: FreeFlyerModel, state: State, plan: LyapunovPlan,
    settings: ExecutionSettings = ExecutionSettings(),
) -> LyapunovResult:
    """Track the planned joint path on the plant from ``state``."""
    run = execute_joint_path(ff, state, plan.path(), settings)
    theta = float(plan.theta[0] + run.theta_final - run.theta[0])
    return LyapunovResult(plan, run, theta)


def plot_lyapunov(result: LyapunovResult, path: str | Path, joint_names: Sequence[str] = ()) -> Path:
    """Write a PNG: attitude and joints vs time (plan and plant), the joint-space path of the
    first two joints, and V and rho vs time. Returns the file path."""
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    plan, run = result.plan, result.execution
    n = plan.q.shape[1]
    names = list(joint_names) or [f"q{i + 1}" for i in range(n)]
    fig, ax = plt.subplots(2, 2, figsize=(11, 8))
    a = ax[0, 0]
    a.plot(plan.t, plan.theta, label="theta planned")
    a.plot(run.t, plan.theta[0] + run.theta - run.theta[0], "--", label="theta plant")
    a.axhline(plan.theta_target, color="k", lw=0.8, label="theta target")
    a.set(xlabel="t [s]", ylabel="base yaw [rad]", title=f"attitude ({plan.status})")
    a.legend(fontsize=8)
    a = ax[0, 1]
    for i in range(n):
        line, = a.plot(plan.t, plan.q[:, i], label=f"{names[i]} planned")
        a.plot(run.t, run.q[:, i], "--", color=line.get_color(), label=f"{names[i]} plant")
        a.axhline(plan.q_target[i], color=line.get_color(), lw=0.6, ls=":")
    a.set(xlabel="t [s]", ylabel="joint angle [rad]", title="joints")
    a.legend(fontsize=7)
    a = ax[1, 0]
    if n >= 2:
        a.plot(plan.q[:, 0], plan.q[:, 1], label="planned")
        a.plot(run.q[:, 0], run.q[:, 1], "--", label="plant")
        a.plot(*plan.q[0, :2], "go", label="start")
        a.plot(*plan.q_target[:2], "k*", ms=10, label="target")
        a.set(xlabel=f"{names[0]} [rad]", ylabel=f"{names[1]} [rad]", title="joint-space path")
        a.legend(fontsize=8)
    a = ax[1, 1]
    a.semilogy(plan.t, np.maximum(plan.V, 1e-16), label="V")
    a.semilogy(plan.t, np.maximum(plan.rho, 1e-16), label="rho (stall ratio)")
    a.set(xlabel="t [s]", title="Lyapunov function and stall ratio")
    a.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out
