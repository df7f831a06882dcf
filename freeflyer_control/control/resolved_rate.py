"""Resolved-rate control through the current mode's Generalized Jacobian.

    qdot_d = J*^+ (xdot_d + K (x_d - x) - drift)

J* holds the arm-joint columns of the mode's GJM; the commanded base velocities (measured) and
the momentum drift are moved to the right-hand side, so the arm corrects for how the base is
moving. The pseudo-inverse is damped least squares, J^T (J J^T + lambda^2 I)^-1, with a damping
that rises as the smallest singular value sigma of J* falls below sigma_0:

    lambda^2 = lambda_max^2 (1 - (sigma / sigma_0)^2)   for sigma < sigma_0, else 0

(Nakamura & Hanafusa; Maciejewski & Klein). Near a *dynamic* singularity of a free-floating
robot the commanded joint rates therefore stay bounded, and the measure that triggered the
damping is reported. Joint-rate limits scale the whole vector (keeping its direction).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pinocchio as pin

from freeflyer_control.control.references import TaskReference
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.gjm import actuated_velocities, generalized_jacobian
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.singularity import singularity_measures
from freeflyer_control.physics.state import State, rotation_from_xyzw


@dataclass(frozen=True)
class ResolvedRateGains:
    """Attributes:
    k_position: 1/s, task-space position gain.
    k_orientation: 1/s, task-space orientation gain (0 ignores orientation).
    sigma_0: smallest singular value (m/rad-ish) below which damping starts.
    lambda_max: damping at sigma = 0.
    max_joint_rate: rad/s, per joint (scalar or one per arm joint).
    """

    k_position: float = 1.0
    k_orientation: float = 1.0
    sigma_0: float = 0.02
    lambda_max: float = 0.05
    max_joint_rate: float | Sequence[float] = 0.5

    def __post_init__(self) -> None:
        for name in ("k_position", "k_orientation", "sigma_0", "lambda_max"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"resolved-rate gain {name} must be finite and >= 0, got {value}")
        if np.any(np.asarray(self.max_joint_rate, dtype=float) <= 0):
            raise ValueError(f"max_joint_rate must be > 0, got {self.max_joint_rate}")


@dataclass(frozen=True)
class ResolvedRateResult:
    """Attributes:
    joint_rates: commanded arm joint rates, rad/s, ``ff.arm_joint_names`` order.
    sigma_min: smallest singular value of the task GJM (the singularity measure).
    manipulability, condition_number: the other measures of that GJM.
    damping: lambda^2 used (0 away from singularities).
    limited: True when the joint-rate limit scaled the command down.
    task_error: stacked task error (position m, then orientation rad), world axes.
    """

    joint_rates: np.ndarray
    sigma_min: float
    manipulability: float
    condition_number: float
    damping: float
    limited: bool
    task_error: np.ndarray = field(repr=False)


class ResolvedRate:
    """Resolved-rate controller of one or more end-effectors (their tasks are stacked)."""

    def __init__(self, model: FreeFlyerModel, gains: ResolvedRateGains = ResolvedRateGains()):
        self.model = model
        self.data = model.create_data()
        self.gains = gains
        self.rate_limit = np.broadcast_to(
            np.asarray(gains.max_joint_rate, dtype=float), (len(model.arm_joint_names),)
        )

    def joint_rates(self, state: State, mode: Mode, targets: Sequence[TaskReference]) -> ResolvedRateResult:
        ff, g = self.model, self.gains
        rows_J, rows_rhs, errors = [], [], []
        u = actuated_velocities(ff, state, mode)
        n_arm = len(ff.arm_joint_names)
        for target in targets:
            G = generalized_jacobian(ff, self.data, state, mode, target.frame)
            # Commanded base velocities are not ours to choose here: move them to the drift.
            drift = G.drift + G.matrix[:, n_arm:] @ u[n_arm:]
            J = G.matrix[:, :n_arm]
            err, gain, ff_twist, use = self._task(target)
            rows_J.append(J[use])
            rows_rhs.append((ff_twist + gain * err)[use] - drift[use])
            errors.append(err[use])
        J = np.vstack(rows_J)
        rhs = np.concatenate(rows_rhs)
        m = singularity_measures(J)
        lam2 = 0.0
        if m.sigma_min < g.sigma_0:
            lam2 = g.lambda_max**2 * (1.0 - (m.sigma_min / g.sigma_0) ** 2)
        qdot = J.T @ np.linalg.solve(J @ J.T + lam2 * np.eye(J.shape[0]), rhs)
        ratio = np.max(np.abs(qdot) / self.rate_limit) if qdot.size else 0.0
        limited = bool(ratio > 1.0)
        if limited:
            qdot = qdot / ratio
        return ResolvedRateResult(qdot, m.sigma_min, m.manipulability, m.condition_number,
                                  lam2, limited, np.concatenate(errors))

    def _task(self, target: TaskReference) -> tuple[np.ndarray, ...]:
        """(error, gains, feed-forward twist, which rows to use) in the GJM's row layout."""
        ff, g = self.model, self.gains
        fid = ff.frame_id(target.frame)
        pin.updateFramePlacement(ff.model, self.data, fid)  # after generalized_jacobian's FK
        pose = self.data.oMf[fid]
        e_pos = np.asarray(target.position, float) - pose.translation
        if target.orientation_xyzw is not None:
            R_d = rotation_from_xyzw(target.orientation_xyzw)
            e_ang = pin.log3(R_d @ pose.rotation.T)
        else:
            e_ang = np.zeros(3)
        err = np.concatenate([e_pos, e_ang])
        gain = np.repeat([g.k_position, g.k_orientation], 3)
        twist = np.concatenate([target.linear_velocity, target.angular_velocity])
        use = np.ones(6, dtype=bool)
        if target.orientation_xyzw is None or g.k_orientation == 0.0:
            use[3:] = False
        if ff.base == "planar":
            keep = np.array([0, 1, 5])
            return err[keep], gain[keep], twist[keep], use[keep]
        return err, gain, twist, use
