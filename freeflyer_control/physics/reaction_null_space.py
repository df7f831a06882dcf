"""The reaction null space (Nenchev, Yoshida & Umetani): joint motions that leave the base undisturbed.

The base rows of the floating-base equations are the system momentum about the base_link origin
(base_link axes), and with no external wrench they are constant:

    M_bb nu_b + H_bm qdot = h_b        H_bm = M[base rows, joint columns]: the coupling inertia

so a joint motion with H_bm qdot = 0 leaves the base with the velocity the momentum alone gives it
(none, from rest): the **full** reaction null space, nb rows (planar 3, spatial 6).

Attitude only: the base may translate (its linear momentum moves the CoM nowhere: it is the
system's), as long as it does not turn. Eliminating the linear rows (v the base's linear
velocity coordinates, w its angular ones; M_vv = m_total I):

    S w_b + H~_wm qdot = h~,   H~_wm = M_wm - M_wv M_vv^-1 M_vm,   S = M_ww - M_wv M_vv^-1 M_vw

(S: the rotational inertia of the whole system locked at q, about its CoM, in base_link axes;
h~: the same rows of M nu, conserved). qdot in null(H~_wm) gives w_b = S^-1 h~: the base does not turn from rest. That is 3
rows in space, 1 in the plane. Both sets of rows are in base_link axes, which changes neither
null space nor rank.

A joint motion the null space cannot produce is not hidden: :func:`reactionless_rates` returns
what of a task it leaves undone, what base rotation it could not avoid, and the ranks.

Frames and units: joint rates rad/s (m/s for prismatic joints) over ``columns`` (Pinocchio
velocity indices, by default the arm joints); base velocity rows in base_link axes (m/s, rad/s);
momentum rows kg m/s and kg m^2/s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.dynamics import mass_matrix
from freeflyer_control.physics.linalg import solve
from freeflyer_control.physics.state import State

KINDS = ("attitude", "full")
# Relative singular-value threshold for the rank of the coupling and of the task in the null
# space: well above round-off of a mass matrix (cond ~1e5, eps 2e-16), well below any physical
# coupling of a joint that moves mass.
RANK_RTOL = 1e-9


def base_rows(ff: FreeFlyerModel) -> tuple[np.ndarray, np.ndarray]:
    """(linear, angular) base velocity indices: planar ([0, 1], [2]), spatial ([0, 1, 2], [3, 4, 5])."""
    if ff.base == "planar":
        return np.array([0, 1]), np.array([2])
    return np.array([0, 1, 2]), np.array([3, 4, 5])


@dataclass(frozen=True)
class ReactionNullSpace:
    """The reaction null space at one state.

    Attributes:
        kind: ``"attitude"`` (the base does not turn) or ``"full"`` (the base does not move).
        columns: the joint velocity indices it spans (Pinocchio velocity order).
        coupling: (k, n) H~_wm (attitude) or H_bm (full) over ``columns``, base_link axes.
        locked_inertia: (k, k) S (attitude) or M_bb (full): base velocity rows -> momentum rows.
        momentum: (k,) h~ or h_b (conserved on a floating base) less what the joints outside
            ``columns`` hold at their current rates: what the base and the column joints share.
        singular_values: of ``coupling``, descending.
        rank: the number of independent base rows the column joints disturb.
        basis: (n, n - rank) orthonormal columns spanning the null space.
        projector: (n, n) I - H^+ H, the orthogonal projector onto it.
    """

    kind: str
    columns: np.ndarray
    coupling: np.ndarray
    locked_inertia: np.ndarray
    momentum: np.ndarray
    singular_values: np.ndarray
    rank: int
    basis: np.ndarray
    projector: np.ndarray

    @property
    def dimension(self) -> int:
        return self.basis.shape[1]

    def base_velocity(self, rates: np.ndarray) -> np.ndarray:
        """The base velocity rows (attitude: angular, full: all; base_link axes) that momentum
        conservation gives for joint rates ``rates`` over ``columns``, the other joints at their
        current rates (floating base)."""
        return solve(self.locked_inertia, self.momentum - self.coupling @ np.asarray(rates, dtype=float))

    def rates_for_base_velocity(self, base_velocity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(least-norm joint rates that give the base velocity rows ``base_velocity``, what of
        it they cannot give): H rates = momentum - S w, by the pseudo-inverse."""
        need = self.momentum - self.locked_inertia @ np.asarray(base_velocity, dtype=float)
        rates = np.linalg.pinv(self.coupling, rcond=RANK_RTOL) @ need
        missing = solve(self.locked_inertia, need - self.coupling @ rates)
        return rates, missing


def reaction_null_space(ff: FreeFlyerModel, data: pin.Data, state: State, kind: str = "attitude",
                        columns: np.ndarray | None = None, M: np.ndarray | None = None) -> ReactionNullSpace:
    """The reaction null space of ``columns`` (default: the arm joints) at ``state`` (see the
    module docstring). ``M``: the mass matrix at ``state.q`` if the caller has it."""
    if kind not in KINDS:
        raise ValueError(f"reaction null space kind must be one of {KINDS}, got {kind!r}")
    cols = ff.arm_v_indices if columns is None else np.asarray(columns, dtype=int)
    M = mass_matrix(ff, data, state.q) if M is None else M
    nb = ff.nb
    rest = np.setdiff1d(np.arange(nb, ff.model.nv), cols)
    if kind == "full":
        rows = M[:nb]
        S = M[:nb, :nb]
    else:
        lin, ang = base_rows(ff)
        E = M[np.ix_(ang, lin)] @ np.linalg.inv(M[np.ix_(lin, lin)])
        rows = M[ang] - E @ M[lin]  # the angular rows with the linear momentum eliminated
        S = rows[:, ang]
    H = rows[:, cols]
    # What the base and the column joints share of the conserved rows: all of it less what the
    # other joints (wheels) hold at their current rates.
    momentum = rows @ state.v - rows[:, rest] @ state.v[rest]
    U, sv, Vt = np.linalg.svd(H, full_matrices=True)
    rank = int((sv > RANK_RTOL * max(sv[0] if sv.size else 0.0, 1e-300)).sum())
    basis = Vt[rank:].T
    projector = basis @ basis.T
    return ReactionNullSpace(kind, cols, H, S, momentum, sv, rank, basis, projector)


def coupling_rate(ff: FreeFlyerModel, data: pin.Data, state: State, kind: str = "attitude",
                  columns: np.ndarray | None = None, eps: float = 1e-6) -> np.ndarray:
    """dH/dt (k, n): the rate of change of :func:`reaction_null_space`'s coupling as the joints
    move at ``state``'s rates (the coupling depends on the joint angles only, in base_link
    axes), by a central difference over +-``eps`` s (error ~eps^2 of its second derivative).
    A joint motion that stays reactionless needs H qddot = -(dH/dt) qdot."""
    nb = ff.nb
    step = np.zeros(ff.model.nv)
    step[nb:] = state.v[nb:]
    couple = [reaction_null_space(ff, data, State(pin.integrate(ff.model, state.q, sign * eps * step), state.v),
                                  kind, columns).coupling for sign in (1.0, -1.0)]
    return (couple[0] - couple[1]) / (2.0 * eps)


@dataclass(frozen=True)
class ReactionlessRates:
    """Joint rates for a task inside the reaction null space, and what they leave undone.

    Attributes:
        rates: joint rates over the null space's columns.
        base_velocity: the base velocity rows these rates give (base_link axes).
        base_velocity_residual: what of the commanded base velocity rows the columns cannot
            give (the coupling's rank is short); zero where the null space is complete.
        task_residual: task - J rates: what of the task is not done reactionlessly (task units).
        task_rank: rank of the task inside the null space (J P).
        null_space_rank: rank of the coupling.
    """

    rates: np.ndarray
    base_velocity: np.ndarray
    base_velocity_residual: np.ndarray
    task_residual: np.ndarray
    task_rank: int
    null_space_rank: int


def damped_pinv(A: np.ndarray, damping: float) -> np.ndarray:
    """A^T (A A^T + damping^2 I)^-1: the damped least-squares inverse (Nakamura, Wampler)."""
    return A.T @ np.linalg.solve(A @ A.T + damping ** 2 * np.eye(A.shape[0]), np.eye(A.shape[0]))


def singular_damping(sigma_min: float, sigma0: float, damping_max: float) -> float:
    """Damping of a damped least-squares inverse that grows as the smallest singular value falls
    below ``sigma0``: damping_max sqrt(1 - (sigma_min / sigma0)^2), zero above (Nakamura &
    Hanafusa; Maciejewski & Klein): bounded rates through a singularity, exact ones away from it."""
    if sigma_min >= sigma0:
        return 0.0
    return damping_max * float(np.sqrt(1.0 - (sigma_min / sigma0) ** 2))


def reactionless_rates(rns: ReactionNullSpace, J: np.ndarray, task: np.ndarray, *, damping: float = 1e-3,
                       base_velocity: np.ndarray | None = None, posture: np.ndarray | None = None,
                       sigma0: float = 0.0, damping_max: float = 0.0) -> ReactionlessRates:
    """Joint rates that do ``task`` with the base undisturbed (Nenchev's reaction-null-space
    control), by priority:

    1. the base: the least-norm rates r_b that give it ``base_velocity`` (rows of ``rns.kind``,
       base_link axes; default zero: not turning / not moving);
    2. the task: J rates = task, through the null space, rates = r_b + P (J P)^+ (task - J r_b)
       (damped least squares, ``damping`` in the task's units);
    3. ``posture`` (rates over the columns), projected into what is left of the null space.

    Near a singularity of the task inside the null space (J P's smallest non-zero singular value
    under ``sigma0``) the damping grows to ``damping_max`` (:func:`singular_damping`).

    Args:
        J: (m, n) the task's Jacobian over ``rns.columns`` (e.g. an end-effector's floating-mode
            GJM on those columns: its twist per unit joint rate with the base moving as the
            momentum says).
        task: (m,) the wanted task rate less the Jacobian's drift.
    """
    n = rns.columns.size
    want = np.zeros(rns.locked_inertia.shape[0]) if base_velocity is None else np.asarray(base_velocity, float)
    r_b, missing = rns.rates_for_base_velocity(want)
    P = rns.projector
    JP = J @ P
    sv = np.linalg.svd(JP, compute_uv=False)
    task_rank = int((sv > RANK_RTOL * max(sv[0] if sv.size else 0.0, 1e-300)).sum())
    if task_rank:
        damping = max(damping, singular_damping(float(sv[task_rank - 1]), sigma0, damping_max))
    rates = r_b + P @ (damped_pinv(JP, damping) @ (np.asarray(task, float) - J @ r_b))
    if posture is not None:
        # What of the null space the task leaves free: P - (JP)^+ (JP) (undamped, its range).
        N2 = P - np.linalg.pinv(JP, rcond=RANK_RTOL) @ JP
        rates = rates + N2 @ np.asarray(posture, float).reshape(n)
    return ReactionlessRates(rates, rns.base_velocity(rates), missing, np.asarray(task, float) - J @ rates,
                             task_rank, rns.rank)


def reaction_minimal_rates(rns: ReactionNullSpace, J: np.ndarray, task: np.ndarray, *, damping: float = 1e-3,
                           base_velocity: np.ndarray | None = None, posture: np.ndarray | None = None,
                           sigma0: float = 0.0, damping_max: float = 0.0, reaction_sigma0: float = 0.0,
                           reaction_damping_max: float = 0.0) -> ReactionlessRates:
    """Joint rates that do ``task`` first and disturb the base as little as they can, by priority:

    1. the task: J rates = task (damped least squares, as :func:`reactionless_rates`);
    2. the base: among the rates that do the task, those whose base velocity is closest to
       ``base_velocity`` (default zero), rates = J^+ task + N (H N)^+ (h - S w - H J^+ task),
       N the task's null space; exactly reactionless wherever some task solution is (the
       minimum is then zero), the least reaction the task allows elsewhere;
    3. ``posture``, in what is left.

    ``base_velocity_residual`` is the base velocity the task forces on top of ``base_velocity``
    (zero where the task can be done reactionlessly): the part of the motion that cannot be
    reactionless, reported, not hidden. Arguments as :func:`reactionless_rates`.

    Step 2 divides by the singular values of H N (kg m^2 per rad/s of joint rate); where the
    task's null space barely reaches one base direction, the smallest falls towards zero and
    cancelling the reaction there asks for joint rates without bound (40-100 rad/s measured on
    spatial_dual_arm), which the joint velocity limits then scale down with the hand's task. Its
    damping grows to ``reaction_damping_max`` (kg m^2) as that singular value falls below
    ``reaction_sigma0`` (:func:`singular_damping`; 0: undamped): bounded rates, the base
    reaction the damping leaves in ``base_velocity_residual``.
    """
    n = rns.columns.size
    task = np.asarray(task, dtype=float)
    want = np.zeros(rns.locked_inertia.shape[0]) if base_velocity is None else np.asarray(base_velocity, float)
    _, sv, Vt = np.linalg.svd(J, full_matrices=True)
    task_rank = int((sv > RANK_RTOL * max(sv[0] if sv.size else 0.0, 1e-300)).sum())
    if task_rank:
        damping = max(damping, singular_damping(float(sv[task_rank - 1]), sigma0, damping_max))
    rates = damped_pinv(J, damping) @ task if J.shape[0] else np.zeros(n)
    B = Vt[task_rank:].T  # orthonormal basis of the task's null space
    H = rns.coupling
    need = rns.momentum - rns.locked_inertia @ want  # H rates should be this
    if B.shape[1]:
        # z = (H B)^+ (need - H rates), with the rank judged against H's own scale.
        U, s_hb, Wt = np.linalg.svd(H @ B, full_matrices=True)
        r = int((s_hb > RANK_RTOL * max(rns.singular_values[0] if rns.singular_values.size else 0.0, 1e-300)).sum())
        lam = singular_damping(float(s_hb[r - 1]), reaction_sigma0, reaction_damping_max) if r else 0.0
        z = Wt[:r].T @ ((U[:, :r].T @ (need - H @ rates)) * s_hb[:r] / (s_hb[:r] ** 2 + lam ** 2))
        rates = rates + B @ z
        if posture is not None:
            B2 = B @ Wt[r:].T  # what is left: the task's and the base's null spaces
            rates = rates + B2 @ (B2.T @ np.asarray(posture, float).reshape(n))
    missing = solve(rns.locked_inertia, need - H @ rates)
    return ReactionlessRates(rates, rns.base_velocity(rates), missing, task - J @ rates, task_rank, rns.rank)
