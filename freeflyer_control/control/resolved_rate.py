"""Resolved-rate control through the current mode's Generalized Jacobian.

    qdot_d = J*^+ (xdot_d + K (x_d - x) - drift)

J* holds the arm-joint columns of the mode's GJM, restricted to the task rows actually commanded
(a position-only target uses the translational rows, vx vy (vz); a target with an orientation
all of them); the commanded base velocities (measured) and the momentum drift are moved to the
right-hand side, so the arm corrects for how the base is moving.

The pseudo-inverse is damped least squares through the thin SVD J* = U diag(s) V^T (k = min(m, n)
singular values):

    qdot = V diag(s_i / (s_i^2 + lambda^2)) U^T rhs

which is J^T (J J^T + lambda^2 I)^-1 rhs for a wide or square J* and (J^T J + lambda^2 I)^-1 J^T
rhs for a tall one (fewer joints than task rows: a planar 2-link arm asked for vx, vy, wz), where
J J^T is singular whatever the configuration. The damping rises as the smallest of the k singular
values, sigma, falls below sigma_0:

    lambda^2 = lambda_max^2 (1 - (sigma / sigma_0)^2)   for sigma < sigma_0, else 0

(Nakamura & Hanafusa; Maciejewski & Klein). sigma is that of the commanded rows, so a singular
translational block damps a position-only task even where the full matrix looks healthy. Near a
*dynamic* singularity of a free-floating robot the commanded joint rates therefore stay bounded,
and the measure that triggered the damping is reported. A tall J* cannot follow every task
direction: the task is then tracked in the least-squares sense (the part of the command in the
left null space of J* is dropped) and one warning per controller and task layout names the
directions given up. Joint-rate limits scale the whole vector (keeping its direction).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pinocchio as pin

from freeflyer_control.control.damping import damping_lambda2
from freeflyer_control.control.references import TaskReference
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.gjm import PLANAR_ROWS, SPATIAL_ROWS, actuated_velocities, generalized_jacobian
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.singularity import SIGMA_NEAR, measures_from_singular_values, thin_svd
from freeflyer_control.physics.state import State, rotation_from_xyzw

log = logging.getLogger(__name__)


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
    sigma_0: float = SIGMA_NEAR
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
    sigma_min: smallest of the min(m, n) singular values of the commanded task rows of the GJM
        (the singularity measure the damping follows).
    manipulability, condition_number: the other measures of those rows.
    damping: lambda^2 used (0 away from singularities).
    limited: True when the joint-rate limit scaled the command down.
    task_error: stacked task error (position m, then orientation rad), world axes.
    task_rows: (frame, row) of each commanded task row, e.g. ("ee_link", "vx"), in stacking order.
    """

    joint_rates: np.ndarray
    sigma_min: float
    manipulability: float
    condition_number: float
    damping: float
    limited: bool
    task_error: np.ndarray = field(repr=False)
    task_rows: tuple[tuple[str, str], ...] = ()


def damping(sigma_min: float, gains: ResolvedRateGains) -> float:
    """lambda^2 for the smallest singular value ``sigma_min`` of the task rows (module docstring)."""
    return damping_lambda2(sigma_min, gains.sigma_0, gains.lambda_max)


def damped_least_squares(
    svd: tuple[np.ndarray, np.ndarray, np.ndarray], rhs: np.ndarray, lam2: float, tol: float = 1e-9
) -> np.ndarray:
    """x = V diag(s / (s^2 + lambda^2)) U^T rhs from the thin SVD (U, s, Vt) of J, any shape.

    Equals J^T (J J^T + lambda^2 I)^-1 rhs (wide or square J) and (J^T J + lambda^2 I)^-1 J^T rhs
    (tall J); with lambda^2 = 0 it is the Moore-Penrose pseudo-inverse, singular values below
    ``tol * sigma_max`` counting as zero (the minimum-norm least-squares solution).
    Units: x in the columns' units (rad/s) for rhs in the rows' (m/s, rad/s).
    """
    U, s, Vt = svd
    if s.size == 0:
        return np.zeros(Vt.shape[1])
    if lam2 > 0.0:
        gain = s / (s * s + lam2)
    else:
        keep = s > tol * s[0]
        gain = np.divide(1.0, s, out=np.zeros_like(s), where=keep)
    return Vt.T @ (gain * (U.T @ rhs))


# The rows a task commands: all six, or the translational three when the target has no attitude
# (or its attitude gain is zero). Read only.
_USE_ALL = np.ones(6, dtype=bool)
_USE_POSITION = np.array([True, True, True, False, False, False])
_USE_ALL.flags.writeable = False
_USE_POSITION.flags.writeable = False


class ResolvedRate:
    """Resolved-rate controller of one or more end-effectors (their tasks are stacked)."""

    def __init__(self, model: FreeFlyerModel, gains: ResolvedRateGains = ResolvedRateGains()):
        self.model = model
        self.data = model.create_data()
        fastpath.warm("gjm")  # compile (first use) or load it now, not on a tick
        self.gains = gains
        self.rate_limit = np.broadcast_to(
            np.asarray(gains.max_joint_rate, dtype=float), (len(model.arm_joint_names),)
        )
        self._row_names = np.array(PLANAR_ROWS if model.base == "planar" else SPATIAL_ROWS)
        self._rate_limits = self.rate_limit.tolist()  # rad/s, for the scaling test on floats
        # Per tick these would be rebuilt from constants (a few us each on a 1-6 row task).
        self._frame_ids: dict[str, int] = {}
        self._keep = np.array([0, 1, 5]) if model.base == "planar" else None
        # The two row masks in the GJM's row layout (read-only).
        self._use_all = _USE_ALL if self._keep is None else _USE_ALL[self._keep]
        self._use_position = _USE_POSITION if self._keep is None else _USE_POSITION[self._keep]
        for mask in (self._use_all, self._use_position):
            mask.flags.writeable = False
        self._gain_rows: tuple[ResolvedRateGains, np.ndarray] | None = None
        self.warnings: list[str] = []  # each emitted once (logged as a warning too)
        self._warned: set[tuple] = set()
        # The compiled path (control.kernels.resolved_rate.CompiledRates), built at its first
        # use or here; False where the kernels do not cover the model.
        self._compiled = None
        self._row_names_by_use: dict[tuple[str, bool], tuple[tuple[str, str], ...]] = {}
        if fastpath.kernels() is not None and fastpath.warming() and model.end_effectors:
            self._warm()

    def _warm(self) -> None:
        """Compile (first use) or load the compiled path now, not on a tick: one call at the
        neutral configuration."""
        compiled = self._compiled_rates()
        if compiled:
            ff = self.model
            target = TaskReference(ff.end_effectors[0], np.zeros(3), None, np.zeros(3), np.zeros(3))
            fastpath.with_compile_notice("the resolved-rate law", lambda: compiled.solve(
                pin.neutral(ff.model), np.zeros(ff.model.nv), Mode.FLOATING, (target,), (self._use(target),)))

    def _compiled_rates(self):
        """The compiled path's object (built once), or False where the kernels do not cover
        the model's joints."""
        if self._compiled is None:
            from freeflyer_control.control.kernels.resolved_rate import CompiledRates

            self._compiled = fastpath.covered(lambda: CompiledRates(self.model, self.gains, self.rate_limit),
                                              "resolved rate", self.model.name)
        return self._compiled

    def joint_rates(self, state: State, mode: Mode, targets: Sequence[TaskReference]) -> ResolvedRateResult:
        """Arm joint rates (rad/s) that track ``targets`` (world axes) from ``state`` in ``mode``.

        With numba (``physics.fastpath``) one compiled call computes it
        (``control.kernels.resolved_rate.task_rates``: the same GJM, task rows, damping law and
        rate limit, the least squares solved through Cholesky factors where the damping allows,
        the singular values by Jacobi rotations); else the NumPy / LAPACK expressions below, the
        reference. The two agree to round-off (test/test_compiled_rates.py).
        """
        if fastpath.kernels() is not None:
            compiled = self._compiled_rates()
            if compiled:
                return self._joint_rates_compiled(compiled, state, mode, targets)
        return self.joint_rates_numpy(state, mode, targets)

    def joint_rates_numpy(self, state: State, mode: Mode, targets: Sequence[TaskReference]) -> ResolvedRateResult:
        """:meth:`joint_rates` through the NumPy / LAPACK expressions below whatever numba
        offers (the reference; the GJM inside takes ``physics.fastpath``'s path)."""
        ff = self.model
        rows_J, rows_rhs, errors, rows = [], [], [], []
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
            rows.extend(self._rows(target.frame, use))
        # One target (the common case): its rows as they are, no stacking copies.
        J = rows_J[0] if len(rows_J) == 1 else np.vstack(rows_J)
        rhs = rows_rhs[0] if len(rows_rhs) == 1 else np.concatenate(rows_rhs)
        if J.shape[0] > J.shape[1]:
            self._warn_uncontrollable(tuple(rows))
        svd = thin_svd(J)
        m = measures_from_singular_values(svd[1])
        lam2 = damping(m.sigma_min, self.gains)
        qdot = damped_least_squares(svd, rhs, lam2)
        ratio = max((abs(x) / r for x, r in zip(qdot.tolist(), self._rate_limits)), default=0.0)
        limited = bool(ratio > 1.0)
        if limited:
            qdot = qdot / ratio
        return ResolvedRateResult(qdot, m.sigma_min, m.manipulability, m.condition_number,
                                  lam2, limited, errors[0] if len(errors) == 1 else np.concatenate(errors),
                                  tuple(rows))

    def _joint_rates_compiled(self, compiled, state: State, mode: Mode,
                              targets: Sequence[TaskReference]) -> ResolvedRateResult:
        uses = self.uses(targets)
        return self.compiled_result(targets, uses, compiled.solve(state.q, state.v, mode, targets, uses))

    def uses(self, targets: Sequence[TaskReference]) -> list[np.ndarray]:
        """Each target's commanded GJM rows (:meth:`_use`), as the compiled path takes them."""
        return [self._use(target) for target in targets]

    def compiled_result(self, targets: Sequence[TaskReference], uses: list[np.ndarray],
                        solved: tuple) -> ResolvedRateResult:
        """The result of the compiled path's solve (``CompiledRates.solve`` / ``solved``) for
        ``targets`` and their ``uses``: its arrays copied, the measures from its singular values;
        a task taller than the arm warns (once)."""
        qdot, m, lam2, limited, err, sv = solved
        rows: tuple[tuple[str, str], ...] = ()
        for target, use in zip(targets, uses):
            rows += self._rows(target.frame, use)
        if m > qdot.size:
            self._warn_uncontrollable(rows)
        measures = measures_from_singular_values(sv)
        return ResolvedRateResult(qdot.copy(), measures.sigma_min, measures.manipulability,
                                  measures.condition_number, lam2, bool(limited), err.copy(), rows)

    def _rows(self, frame: str, use: np.ndarray) -> tuple[tuple[str, str], ...]:
        """(frame, row name) of the rows ``use`` commands (one of the two masks of :meth:`_use`)."""
        key = (frame, use is self._use_all)
        rows = self._row_names_by_use.get(key)
        if rows is None:
            rows = self._row_names_by_use[key] = tuple((frame, r) for r in self._row_names[use].tolist())
        return rows

    def _use(self, target: TaskReference) -> np.ndarray:
        """The GJM rows ``target`` commands: all, or the translational ones when it has no
        attitude or the attitude gain is zero (read-only, one of two arrays per model)."""
        if target.orientation_xyzw is not None and self.gains.k_orientation != 0.0:
            return self._use_all
        return self._use_position

    def _warn_uncontrollable(self, rows: tuple[tuple[str, str], ...]) -> None:
        """Once per task layout: more task rows than arm joints, which directions are given up."""
        if rows in self._warned:
            return
        self._warned.add(rows)
        message = uncontrollable_message(rows, self.model.arm_joint_names)
        self.warnings.append(message)
        log.warning(message)

    def _task(self, target: TaskReference) -> tuple[np.ndarray, ...]:
        """(error, gains, feed-forward twist, which rows to use) in the GJM's row layout."""
        ff, g = self.model, self.gains
        fid = self._frame_ids.get(target.frame)
        if fid is None:
            fid = self._frame_ids[target.frame] = ff.frame_id(target.frame)
        pin.updateFramePlacement(ff.model, self.data, fid)  # after generalized_jacobian's FK
        pose = self.data.oMf[fid]
        e_pos = np.asarray(target.position, float) - pose.translation
        if target.orientation_xyzw is not None:
            R_d = rotation_from_xyzw(target.orientation_xyzw)
            e_ang = pin.log3(R_d @ pose.rotation.T)
        else:
            e_ang = np.zeros(3)
        err = np.concatenate([e_pos, e_ang])
        if self._gain_rows is None or self._gain_rows[0] is not g:  # the gains are frozen
            self._gain_rows = (g, np.repeat([g.k_position, g.k_orientation], 3))
        gain = self._gain_rows[1]
        twist = np.concatenate([target.linear_velocity, target.angular_velocity])
        use = self._use(target)
        keep = self._keep
        if keep is not None:
            return err[keep], gain[keep], twist[keep], use
        return err, gain, twist, use


def uncontrollable_message(rows: Sequence[tuple[str, str]], joints: Sequence[str]) -> str:
    """The one-line warning for a task of ``rows`` (frame, row) on fewer ``joints`` than rows.

    m rows, n < m joints: m - n task directions cannot be set independently of the others. Which
    ones is a choice; orientation rows are named first (a position is what a task usually
    needs), and when fewer are lost than candidates the count is given ("1 of wx, wy, wz").
    """
    frames = list(dict.fromkeys(f for f, _ in rows))
    single = len(frames) == 1
    label = (lambda f, r: r) if single else (lambda f, r: f"{f} {r}")
    lost = len(rows) - len(joints)
    rotational = [fr for fr in rows if fr[1].startswith("w")]
    candidates = rotational if lost <= len(rotational) else list(rows)
    names = ", ".join(label(f, r) for f, r in candidates)
    what = names if lost == len(candidates) else f"{lost} of {names}"
    text = (f"{' + '.join(frames)}: {len(rows)} task rows ({', '.join(label(f, r) for f, r in rows)}), "
            f"{len(joints)} joints ({', '.join(joints)}): {what} cannot be controlled independently; "
            "tracked in the least-squares sense")
    translational = len(rows) - len(rotational)
    if rotational and translational <= len(joints):
        text += " (a position-only target is tracked without this compromise)"
    return text
