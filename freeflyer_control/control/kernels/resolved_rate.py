"""Compiled resolved rate (needs numba): the end-effector side of the compiled lockstep
(:func:`ee_joint_reference`, called in the engine's compiled loop) and, called from Python,
:meth:`~freeflyer_control.control.resolved_rate.ResolvedRate.joint_rates`' own compiled path
(:func:`task_rates` through :class:`CompiledRates`: the ROS controller's task-space tick, the
Python engine's, the Gymnasium environments').

What :meth:`freeflyer_control.control.resolved_rate.ResolvedRate.joint_rates` does, per tick,
and where it is defined on the Python path:

* the frame placement and Jacobian (Pinocchio's ``computeFrameJacobian``, LOCAL_WORLD_ALIGNED):
  :func:`world_placements` and :func:`frame_jacobian` from the kernels' forward kinematics;
* the mode's GJM of each end-effector (``physics/gjm.py: generalized_jacobian``): its compiled
  post-processing ``physics/kernels/reduced.py: gjm_post_into`` (``gjm_post``, the very kernel
  ``generalized_jacobian`` finishes with, is a wrapper that allocates its outputs), on the
  layout ``gjm.mode_layout`` builds for the mode;
* the task error (``ResolvedRate._task``): the position error and log3(R_d R^T), the feed-forward
  twist, the gains, the commanded rows, and the commanded base velocities moved to the drift;
* the damped least-squares solve with its damping law (``control.damping.damping_lambda2``,
  compiled from that same definition) and the joint-rate limit (:func:`damped_rates`).

One difference of route, not of law: where the smallest singular value of the task rows is
above sigma_0 the law is the undamped pseudo-inverse, and :func:`damped_rates` tests that with
a Cholesky factorisation of J J^T - sigma_0^2 I (J^T J for a tall J) and solves with the
Cholesky factor of J J^T; below it, the damped solution V diag(s / (s^2 + lambda^2)) U^T rhs is
the same J^T (J J^T + lambda^2 I)^-1 rhs, solved the same way once the singular value is known
(:func:`singular_values`, one-sided Jacobi, which also serves the logged ticks). Only within
round-off of the threshold, or where a singular value is to be dropped, does it take the SVD,
the Python path's formula (:func:`svd_solve`: the same one-sided Jacobi with its rotations
kept, where the Python path calls LAPACK; the tick runs without numba's runtime, which
LAPACK's wrapper needs). On a 6 x 6 task that is ~0.3 µs a tick against ~5 µs for an SVD
every tick. ``test/test_fast_tasks.py`` checks every function here against its Python
definition to round-off, and closed loops of both controllers on both end-effector maneuvers
in every mode against the Python engine; ``test/test_compiled_rates.py`` checks
:func:`task_rates`, as ``ResolvedRate`` calls it, against the NumPy / LAPACK definition.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.extending import register_jitable

from freeflyer_control.control.maneuvers import circle_point, min_jerk, ramp_point
from freeflyer_control.control.damping import damping_lambda2
from freeflyer_control.physics.kernels.reduced import gjm_post_into, gjm_workspace
from freeflyer_control.physics.kernels.rigid_body import (
    _JIT,
    _NO_NRT,
    EPS,
    FREEFLYER,
    PLANAR,
    PRISMATIC,
    REVOLUTE_UNBOUNDED,
    base_map_from_rotation,
    base_rotation,
    cholesky,
    cholesky_solve,
    crba,
    forward_kinematics,
    log3,
    translation_rows,
    workspace,
    workspace_views,
    world_placements,
)

# The task references and the damping law have one definition each, in control/; compiled
# here as they are (min_jerk registered so that numba compiles it where the references call it).
register_jitable(min_jerk)
ramp_point_compiled = njit(**_JIT)(ramp_point)
circle_point_compiled = njit(**_JIT)(circle_point)
damping_compiled = njit(**_JIT)(damping_lambda2)

REF_EE_POINT, REF_EE_CIRCLE = 2, 3  # reference kinds after the joint maneuvers' wilde (1), hold (0)
# The functions a tick calls with tuples of scratch arrays are inlined (numba IR) into their
# caller: passed by value, the tuples cost more than the arithmetic. Measured on spatial_6link at
# 1 kHz, interleaved A/B, 3 x 10 s each: ee-point 77-78x -> 82x (computed torque), 81-82x -> 87x
# (resolved rate); inlining the control law and the GJM too changed nothing.
# The Gram matrix J J^T squares the condition of J: the Cholesky routes are taken only where its
# smallest eigenvalue (plus lambda^2) exceeds this times its trace (>= sigma_max^2), so that its
# condition stays below ~1e6 and the solution within ~1e-10 (relative) of the SVD's; a smaller
# one (sigma_0 set near zero, a singular arm) goes to the SVD (svd_solve), which also drops
# singular values under 1e-9 sigma_max as the Python path does.
GRAM_CONDITION = 1e-6
# The angular feed-forward of the maneuvers' targets (task_rows' ``avel``): none, they keep
# their start attitude.
NO_ROWS = np.zeros((0, 3))


@njit(**_NO_NRT)
def frame_jacobian(km, oR, op, body, fR, fp, J, Rf, pf):
    """J (6, nv) = the frame's Jacobian: its twist [v of the frame origin (m/s); omega (rad/s)]
    in world axes per unit velocity (Pinocchio's LOCAL_WORLD_ALIGNED frame Jacobian; base
    velocities in base_link axes). The frame is fixed to ``body`` at placement (fR, fp) in it;
    Rf (3, 3) and pf (3,) receive its world placement. oR, op: :func:`world_placements`."""
    jint, axis = km[0], km[3]
    for a in range(3):
        pf[a] = op[body, a] + oR[body, a, 0] * fp[0] + oR[body, a, 1] * fp[1] + oR[body, a, 2] * fp[2]
        for c in range(3):
            Rf[a, c] = oR[body, a, 0] * fR[0, c] + oR[body, a, 1] * fR[1, c] + oR[body, a, 2] * fR[2, c]
    J[:, :] = 0.0
    i = body
    while i >= 0:
        kind, iv = jint[i, 1], jint[i, 3]
        # r: joint origin -> frame origin, world; a joint's motion is expressed in its child frame
        rx, ry, rz = pf[0] - op[i, 0], pf[1] - op[i, 1], pf[2] - op[i, 2]
        if kind == FREEFLYER or kind == PLANAR:
            for k in range(6 if kind == FREEFLYER else 3):
                row = k if kind == FREEFLYER else (0, 1, 5)[k]
                c = row % 3
                ex, ey, ez = oR[i, 0, c], oR[i, 1, c], oR[i, 2, c]
                if row < 3:  # a translation of the base: the frame moves with it
                    J[0, iv + k], J[1, iv + k], J[2, iv + k] = ex, ey, ez
                else:  # a rotation: omega = e, v = e x r
                    J[0, iv + k], J[1, iv + k], J[2, iv + k] = ey * rz - ez * ry, ez * rx - ex * rz, ex * ry - ey * rx
                    J[3, iv + k], J[4, iv + k], J[5, iv + k] = ex, ey, ez
        else:
            ax0, ax1, ax2 = axis[i, 0], axis[i, 1], axis[i, 2]
            ex = oR[i, 0, 0] * ax0 + oR[i, 0, 1] * ax1 + oR[i, 0, 2] * ax2
            ey = oR[i, 1, 0] * ax0 + oR[i, 1, 1] * ax1 + oR[i, 1, 2] * ax2
            ez = oR[i, 2, 0] * ax0 + oR[i, 2, 1] * ax1 + oR[i, 2, 2] * ax2
            if kind == PRISMATIC:
                J[0, iv], J[1, iv], J[2, iv] = ex, ey, ez
            else:
                J[0, iv], J[1, iv], J[2, iv] = ey * rz - ez * ry, ez * rx - ex * rz, ex * ry - ey * rx
                J[3, iv], J[4, iv], J[5, iv] = ex, ey, ez
        i = jint[i, 0]


@njit(**_NO_NRT)
def _gram(J, m, n, G):
    """The lower triangle of G[:k, :k] = J J^T (m <= n) or J^T J (m > n), k = min(m, n), of
    J[:m, :n]; returns its trace (the sum of the squared singular values)."""
    k = min(m, n)
    trace = 0.0
    for r in range(k):
        for c in range(r + 1):
            s = 0.0
            if m <= n:
                for j in range(n):
                    s += J[r, j] * J[c, j]
            else:
                for j in range(m):
                    s += J[j, r] * J[j, c]
            G[r, c] = s
        trace += G[r, r]
    return trace


@njit(**_NO_NRT)
def _cholesky_lower(A, L, k, shift):
    """The leading k x k block of L, lower, L L^T = A[:k, :k] - shift I; False if that is not
    positive definite."""
    return cholesky(A[:k, :k], L[:k, :k], shift)


@njit(**_NO_NRT)
def _solve_gram(J, rhs, m, n, L, y, qdot):
    """qdot = J^T (L L^T)^-1 rhs (m <= n) or (L L^T)^-1 J^T rhs (m > n), L the Cholesky factor
    of the Gram matrix of J[:m, :n] (plus lambda^2 I): the (damped) least-squares solution."""
    k = min(m, n)
    if m <= n:
        for r in range(m):
            y[r] = rhs[r]
        cholesky_solve(L[:k, :k], y[:k])
        for j in range(n):
            s = 0.0
            for r in range(m):
                s += J[r, j] * y[r]
            qdot[j] = s
    else:
        for j in range(n):
            s = 0.0
            for r in range(m):
                s += J[r, j] * rhs[r]
            qdot[j] = s
        cholesky_solve(L[:k, :k], qdot[:k])


@njit(**_NO_NRT)
def _jacobi(J, m, n, A, s, Z, vectors):
    """One-sided (Hestenes) Jacobi rotations of the k = min(m, n) rows (m <= n) or columns
    (m > n) of J[:m, :n], copied into A[:k, :max(m, n)], until they are orthogonal to working
    precision; their norms are then the singular values (high relative accuracy, as LAPACK's).
    s[:k] holds the vectors' squared norms while it runs (updated by each rotation, recomputed
    at the start of every sweep, as LAPACK's dgesvj does). With ``vectors`` the rotations are
    also applied to Z[:k, :k], which starts as the identity: then (m <= n) J = Z' A, or (m > n)
    J = A Z. Returns the orthogonal vectors' length, max(m, n)."""
    k, length = min(m, n), max(m, n)
    for i in range(k):
        for t in range(length):
            A[i, t] = J[i, t] if m <= n else J[t, i]
        if vectors:
            for t in range(k):
                Z[i, t] = 1.0 if t == i else 0.0
    tol2 = EPS * EPS  # rows i, j orthogonal: |gamma| <= EPS sqrt(s_i s_j), squared (no root)
    for _ in range(100):  # converges quadratically: ~6 sweeps for 6 rows
        for i in range(k):
            x = 0.0
            for t in range(length):
                x += A[i, t] * A[i, t]
            s[i] = x
        rotated = False
        for i in range(k - 1):
            for j in range(i + 1, k):
                gamma = 0.0
                for t in range(length):
                    gamma += A[i, t] * A[j, t]
                if gamma * gamma <= tol2 * (s[i] * s[j]):
                    continue
                rotated = True
                zeta = (s[j] - s[i]) / (2.0 * gamma)
                # hypot's care is not needed: where zeta^2 overflows, tan = 0 is its limit
                tan = (1.0 if zeta >= 0.0 else -1.0) / (abs(zeta) + math.sqrt(1.0 + zeta * zeta))
                c = 1.0 / math.sqrt(1.0 + tan * tan)
                sn = c * tan
                for t in range(length):
                    a, b = A[i, t], A[j, t]
                    A[i, t] = c * a - sn * b
                    A[j, t] = sn * a + c * b
                if vectors:
                    for t in range(k):
                        a, b = Z[i, t], Z[j, t]
                        Z[i, t] = c * a - sn * b
                        Z[j, t] = sn * a + c * b
                s[i] = max(s[i] - tan * gamma, 0.0)
                s[j] = s[j] + tan * gamma
        if not rotated:
            break
    for i in range(k):
        x = 0.0
        for t in range(length):
            x += A[i, t] * A[i, t]
        s[i] = math.sqrt(x)
    return length


@njit(**_NO_NRT)
def singular_values(J, m, n, A, s):
    """s[:k] = the k = min(m, n) singular values of J[:m, :n], largest first (one-sided Jacobi,
    :func:`_jacobi`). A (>= k x max(m, n)): scratch."""
    _jacobi(J, m, n, A, s, A, False)
    for i in range(1, min(m, n)):  # insertion, largest first
        x = s[i]
        p = i
        while p > 0 and s[p - 1] < x:
            s[p] = s[p - 1]
            p -= 1
        s[p] = x


@njit(**_NO_NRT)
def svd_solve(J, rhs, m, n, lam2, A, s, Z, qdot):
    """qdot (n,) = V diag(gain) U' rhs[:m] from the SVD J[:m, :n] = U diag(s) V' (one-sided
    Jacobi, :func:`_jacobi`): ``resolved_rate.damped_least_squares``'s formula, gain =
    s / (s^2 + lam2), or for lam2 = 0 1 / s with singular values under 1e-9 sigma_max dropped.
    A (>= k x max(m, n)), s (>= k), Z (>= k x k): scratch.

    Raises:
        np.linalg.LinAlgError: a non-finite J, as the Python path's SVD does.
    """
    k = min(m, n)
    length = _jacobi(J, m, n, A, s, Z, True)
    top = 0.0
    for i in range(k):
        if not s[i] == s[i]:  # NaN: a non-finite entry
            raise np.linalg.LinAlgError("SVD did not converge: the Jacobian has a non-finite entry")
        top = max(top, s[i])
    for j in range(n):
        qdot[j] = 0.0
    for i in range(k):  # vector i: (m <= n) A_i = s_i v_i, u_i = Z_i; (m > n) A_i = s_i u_i, v_i = Z_i
        si = s[i]
        if lam2 > 0.0:
            gain = si / (si * si + lam2)
        else:
            gain = 1.0 / si if si > 1e-9 * top else 0.0
        if gain == 0.0:
            continue
        t = 0.0
        if m <= n:
            for r in range(m):
                t += Z[i, r] * rhs[r]
            t *= gain / si
            for j in range(length):
                qdot[j] += t * A[i, j]
        else:
            for r in range(length):
                t += A[i, r] * rhs[r]
            t *= gain / si
            for j in range(k):
                qdot[j] += t * Z[i, j]


@njit(inline="always", **_JIT)
def damped_rates(J, rhs, m, n, sigma_0, lambda_max, rate_limit, qdot, G, L, y, sv, A):
    """qdot (n,) = the damped least-squares solution of J[:m, :n] qdot = rhs[:m], scaled down as
    a whole to the joint-rate limits (``ResolvedRate.joint_rates``'s solve, module docstring).

    Units: qdot in the columns' (rad/s) for rhs in the rows' (m/s, rad/s); rate_limit (n,)
    rad/s. G, L, A (>= k x max(m, n)), y (>= max(m, n)), sv (>= k): scratch. Returns
    (sigma_min, lambda^2, limited): sigma_min is NaN where the Cholesky test made it
    unnecessary (then lambda^2 = 0).

    Raises:
        np.linalg.LinAlgError: a non-finite J where the SVD is taken, as the Python path's.
    """
    k = min(m, n)
    sigma_min, lam2 = np.nan, 0.0
    if k == 0:
        for j in range(n):
            qdot[j] = 0.0
        return 0.0, 0.0, False
    floor = GRAM_CONDITION * _gram(J, m, n, G)
    if _cholesky_lower(G, L, k, max(sigma_0 * sigma_0, floor)) and _cholesky_lower(G, L, k, 0.0):
        # sigma_min > sigma_0: no damping, no singular value dropped: the pseudo-inverse
        _solve_gram(J, rhs, m, n, L, y, qdot)
    else:
        singular_values(J, m, n, A, sv)
        sigma_min = sv[k - 1]
        lam2 = damping_compiled(sigma_min, sigma_0, lambda_max)
        if lam2 > 0.0 and sigma_min * sigma_min + lam2 > floor and _cholesky_lower(G, L, k, -lam2):
            # V diag(s / (s^2 + lambda^2)) U^T = J^T (J J^T + lambda^2 I)^-1 (or the tall form)
            _solve_gram(J, rhs, m, n, L, y, qdot)
        else:  # undamped within round-off of sigma_0, or singular values to drop: the SVD's
            svd_solve(J, rhs, m, n, lam2, A, sv, L, qdot)
    ratio = 0.0
    for j in range(n):
        ratio = max(ratio, abs(qdot[j]) / rate_limit[j])
    limited = ratio > 1.0
    if limited:
        for j in range(n):
            qdot[j] = qdot[j] / ratio
    return sigma_min, lam2, limited


@njit(inline="always", **_JIT)
def task_references(kind, t, params, starts, axes, pos, vel):
    """pos[e], vel[e] (m, m/s, world): the target of end-effector e at time t, s, of the
    ee-point (``kind`` REF_EE_POINT; params = (move_time,), axes[e] = its offset, m) or
    ee-circle maneuver (REF_EE_CIRCLE; params = (period, radius), axes = the plane's two unit
    axes); starts[e]: its start position, m."""
    for e in range(starts.shape[0]):
        if kind == REF_EE_POINT:
            ramp_point_compiled(t, params[0], starts[e], axes[e], pos[e], vel[e])
        else:
            circle_point_compiled(t, params[0], params[1], starts[e], axes, pos[e], vel[e])


@njit(inline="always", **_JIT)
def task_rows(km, q, v, M, R, p, layout, nb, ee_body, ee_R, ee_p, R_d, use, pos, vel, avel, gains, base_T, tws,
              J_out, rhs_out, err_out):
    """Stack the commanded rows of every end-effector's task (``ResolvedRate.joint_rates``):
    J_out[:m, :na] = the GJM's arm columns, rhs_out[:m] = feed-forward twist + gain x error -
    drift, the drift including the commanded base velocities (world axes). Returns m.

    q, v: the configuration and velocity the GJM is taken at; M: the controller model's mass
    matrix at q (upper triangle read; not read in a mode without free base coordinates); R, p:
    its placements at q (:func:`forward_kinematics`). layout: the mode's
    ``physics.kernels.reduced.gjm_layout``.
    ee_body[e], ee_R[e], ee_p[e]: the frame's body and placement in it; R_d[e]: target attitude
    (world <- frame); use[e, r]: GJM row r is commanded; pos, vel: targets (m, m/s, world);
    avel[e]: the target's angular velocity (rad/s, world; an array of no rows: zero, as the
    maneuvers keep their start attitude); gains: (k_position, k_orientation), 1/s; base_T (nb,
    nb): scratch for the world-to-base map. tws: scratch (``task_workspace``). err_out[:m]: the
    commanded rows' task errors (m, rad; world axes).
    """
    _, _, oR, op, J, Rf, pf, E, e_att, u_world, err, ff_twist, matrix, drift, gws, no_h = tws
    world_placements(km, R, p, oR, op)
    planar = layout[0] != 0
    nr, na = layout[1], J_out.shape[1]
    # the commanded base velocities, world axes: u = T^T v_base (T is a rotation)
    nf = layout[2 + nr]
    p_c = 2 + nr + 1 + nf
    nc = layout[p_c]
    if nc:
        base_rotation(planar, q, E)
        base_map_from_rotation(planar, E, base_T)
        for i in range(nc):
            ci = layout[p_c + 1 + i]
            s = 0.0
            for r in range(nb):
                s += base_T[r, ci] * v[r]
            u_world[i] = s
    m = 0
    for e in range(ee_body.shape[0]):
        frame_jacobian(km, oR, op, ee_body[e], ee_R[e], ee_p[e], J, Rf, pf)
        if gjm_post_into(M, J, v, q, layout, no_h, matrix[:nr, :na + nc], drift[:nr], gws):
            raise np.linalg.LinAlgError("free-base inertia not positive definite")
        for a in range(3):
            for c in range(3):
                E[a, c] = R_d[e, a, 0] * Rf[c, 0] + R_d[e, a, 1] * Rf[c, 1] + R_d[e, a, 2] * Rf[c, 2]
        log3(E, e_att)
        for a in range(3):
            err[a] = pos[e, a] - pf[a]
            err[3 + a] = e_att[a]
            ff_twist[a] = vel[e, a]
            ff_twist[3 + a] = avel[e, a] if avel.shape[0] else 0.0
        for r in range(nr):
            if not use[e, r]:
                continue
            k = layout[2 + r]  # the GJM row's component of the 6-vector twist
            d = drift[r]
            for i in range(nc):
                d += matrix[r, na + i] * u_world[i]
            g = gains[0] if k < 3 else gains[1]
            rhs_out[m] = (ff_twist[k] + g * err[k]) - d
            err_out[m] = err[k]
            for j in range(na):
                J_out[m, j] = matrix[r, j]
            m += 1
    return m


@register_jitable  # allocations, once per run: plain Python there, compiled where a kernel calls it
def task_workspace(n_bodies, nv, nb):
    """Scratch of :func:`task_rows` (the GJM's too: a tick allocates nothing)."""
    return (np.empty((n_bodies, 3, 3)), np.empty((n_bodies, 3)), np.empty((n_bodies, 3, 3)),
            np.empty((n_bodies, 3)), np.empty((6, nv)), np.empty((3, 3)), np.empty(3), np.empty((3, 3)),
            np.empty(3), np.empty(nb), np.empty(6), np.empty(6), np.empty((6, nv)), np.empty(6),
            gjm_workspace(6, nb), np.zeros(0))


@register_jitable  # allocations, once per run: plain Python there, compiled where a kernel calls it
def rate_workspace(nq, nv, nb, na, m_max):
    """Scratch of :func:`ee_joint_reference`: q_ref, M_ref, the stacked task rows J and rhs,
    qdot, the Gram matrix and its factor, y, the world-to-base map, the singular values and
    the Jacobi rotations' copy of J."""
    k = max(m_max, na)
    return (np.empty(nq), np.empty((nv, nv)), np.empty((m_max, na)), np.empty(m_max), np.empty(na),
            np.empty((k, k)), np.empty((k, k)), np.empty(k), np.empty((nb, nb)), np.empty(k), np.empty((k, k)))


@njit(inline="always", **_JIT)
def ee_joint_reference(km, resolved, layout, nb, q, v, M, R_q, p_q, t, dt, task, tws, rws, ws, arm_q, arm_kind,
                       qa, pos, vel, tpos, tvel, log_now):
    """The arm's joint reference at tick time t (s) of an end-effector maneuver, as
    ``ControlLoop.tick`` builds it: pos (rad), vel (rad/s), arm order; the targets into tpos,
    tvel (ne, 3; m, m/s, world). Returns the task rows' smallest singular value (NaN when
    neither the solve nor ``log_now`` needed it).

    ``resolved``: the resolved-rate law (the GJM at the measured state; pos = the measured arm
    angles ``qa``, vel = the task's joint rates); otherwise computed torque with resolved rate
    as the reference generator (the GJM with the arm at the integrated reference task[13],
    which the rates then advance by dt). km: the controller's model; M: its mass matrix at q;
    R_q, p_q: its placements at q (what the mass matrix was computed from: the lockstep reuses
    the plant's); layout: the mode's GJM layout. task = (kind, params, starts, axes, ee_body, ee_R, ee_p,
    R_d, use, gains, (sigma_0, lambda_max), rate_limit, q_int): see :func:`task_references`
    and :func:`task_rows`.
    """
    kind, params, starts, axes, ee_body, ee_R, ee_p, R_d, use, gains, rr, rate_limit, q_int = task
    q_ref, M_ref, Jst, rhs, qdot, G, L, y, base_T, sv, A = rws
    na = qa.shape[0]
    task_references(kind, t, params, starts, axes, tpos, tvel)
    if resolved:
        q_task, M_task, R, p = q, M, R_q, p_q
    else:  # physics.state.with_joint_positions: the arm at q_int, the rest of q kept
        for k in range(q.shape[0]):
            q_ref[k] = q[k]
        for j in range(na):
            iq = arm_q[j]
            if arm_kind[j] == REVOLUTE_UNBOUNDED:  # pin.integrate from (1, 0) by q_int[j]
                x, s = math.cos(q_int[j]), math.sin(q_int[j])
                f = (3.0 - (x * x + s * s)) / 2.0
                q_ref[iq], q_ref[iq + 1] = x * f, s * f
            else:
                q_ref[iq] = q_int[j]
        R, p = tws[0], tws[1]
        forward_kinematics(km, q_ref, R, p)
        nf, f0 = layout[2 + layout[1]], layout[3 + layout[1]]
        if nf and f0 + nf <= (2 if layout[0] != 0 else 3):  # the GJM reads M's free rows only:
            translation_rows(km, R, p, M_ref, ws)  # here the translations' (linear momentum)
        elif nf:  # (none free: M is not read)
            crba(km, R, p, M_ref, ws)
        q_task, M_task = q_ref, M_ref
    # (the rows' errors are not needed here: y, scratch of the solve below, takes them)
    m = task_rows(km, q_task, v, M_task, R, p, layout, nb, ee_body, ee_R, ee_p, R_d, use, tpos, tvel, NO_ROWS,
                  gains, base_T, tws, Jst, rhs, y)
    sigma, _, _ = damped_rates(Jst, rhs, m, na, rr[0], rr[1], rate_limit, qdot, G, L, y, sv, A)
    if log_now and sigma != sigma:
        singular_values(Jst, m, na, A, sv)
        sigma = sv[min(m, na) - 1] if min(m, na) else 0.0
    for j in range(na):
        if resolved:
            pos[j] = qa[j]
        else:
            q_int[j] = q_int[j] + qdot[j] * dt
            pos[j] = q_int[j]
        vel[j] = qdot[j]
    return sigma


@njit(**_JIT)
def task_rates(km, layout, nb, q, v, targets, rr, rate_limit, tws, rws, ws_buf, qdot, err, sv):
    """Resolved rate from Python (``ResolvedRate.joint_rates`` on the compiled path): the arm's
    joint rates qdot (rad/s, arm order) that track the targets from (q, v) in the mode whose
    GJM layout is ``layout``. Returns (m, lambda^2, limited): m commanded task rows, whose errors
    go to err[:m] (m, rad; world axes) and whose min(m, na) singular values go to sv, largest
    first.

    targets = (ee_body, ee_R, ee_p, R_d, use, pos, vel, avel, gains): :func:`task_rows`'
    arguments of those names; rr = (sigma_0, lambda_max). The controller model's kinematics
    and, where the mode's GJM reads them, its mass matrix rows are computed here at q (as
    ``generalized_jacobian`` does). tws, rws: ``task_workspace``, ``rate_workspace``; ws_buf:
    the flat buffer of ``rigid_body.workspace_views`` (one array for its 29: each array
    argument costs the call from Python ~0.1 us to unbox).
    """
    ee_body, ee_R, ee_p, R_d, use, pos, vel, avel, gains = targets
    ws, _ = workspace_views(ws_buf, km[0].shape[0], q.shape[0], v.shape[0], nb)
    _, M, Jst, rhs, _, G, L, y, base_T, _, A = rws
    R, p = tws[0], tws[1]
    forward_kinematics(km, q, R, p)
    nf, f0 = layout[2 + layout[1]], layout[3 + layout[1]]
    if nf and f0 + nf <= (2 if layout[0] != 0 else 3):  # the GJM reads M's translation rows only
        translation_rows(km, R, p, M, ws)
    elif nf:
        crba(km, R, p, M, ws)
    m = task_rows(km, q, v, M, R, p, layout, nb, ee_body, ee_R, ee_p, R_d, use, pos, vel, avel, gains, base_T,
                  tws, Jst, rhs, err)
    na = qdot.shape[0]
    _, lam2, limited = damped_rates(Jst, rhs, m, na, rr[0], rr[1], rate_limit, qdot, G, L, y, sv, A)
    # The solve leaves sv unsorted or untouched on some routes: the measures get their own.
    singular_values(Jst, m, na, A, sv)
    return m, lam2, limited


class CompiledRates:
    """:func:`task_rates` for one controller model and its resolved-rate gains: the arrays it
    reads, built once, and the per-call filling of the targets' arrays (ResolvedRate's compiled
    path; every array keeps one type, so that the kernel compiles once).

    Raises:
        NotCovered: a joint type the kernels do not implement (the caller keeps the NumPy path).
    """

    def __init__(self, ff, gains, rate_limit: np.ndarray):
        from freeflyer_control.physics import fastpath
        from freeflyer_control.physics.gjm import mode_layout
        from freeflyer_control.physics.kernels.arrays import kernel_model
        from freeflyer_control.physics.modes import Mode

        km = kernel_model(ff)
        self.ff = ff
        self.km, self.nb = km.arrays(), km.nb
        self.layouts = {mode: mode_layout(fastpath.kernels(), ff, mode) for mode in Mode}
        n = km.jint.shape[0]
        self.tws = task_workspace(n, km.nv, km.nb)
        # workspace_views' buffer: zeros (its zero_nv entry must hold zeros)
        self.ws_buf = np.zeros(sum(a.size for a in workspace(n, km.nq, km.nv, km.nb)))
        self.q, self.v = np.empty(km.nq), np.empty(km.nv)
        self.qdot = np.empty(len(km.arm_v))
        self.rr = np.array([gains.sigma_0, gains.lambda_max], dtype=float)
        self.gains = np.array([gains.k_position, gains.k_orientation], dtype=float)
        self.rate_limit = np.ascontiguousarray(rate_limit, dtype=float)
        self.nr = 3 if km.planar else 6
        self._arrays: dict[int, tuple] = {}  # number of targets -> (targets tuple, rws, err, sv)
        self._frames: dict[str, tuple] = {}  # frame -> (body, placement R, p in it)
        self._attitudes: dict[bytes, np.ndarray] = {}  # a target quaternion's rotation (few distinct)

    def _frame(self, name: str) -> tuple:
        entry = self._frames.get(name)
        if entry is None:  # once per frame (Python only: no kernel compiles arrays.py)
            from freeflyer_control.physics.kernels.arrays import frames_in_bodies

            body, R, p = frames_in_bodies(self.ff, (name,))
            entry = self._frames[name] = (body[0], R[0], p[0])
        return entry

    def _for(self, count: int) -> tuple:
        entry = self._arrays.get(count)
        if entry is None:
            m_max = self.nr * count
            nq, nv, na = self.q.size, self.v.size, self.qdot.size
            targets = (np.zeros(count, dtype=np.int64), np.zeros((count, 3, 3)), np.zeros((count, 3)),
                       np.zeros((count, 3, 3)), np.zeros((count, self.nr), dtype=np.int64), np.zeros((count, 3)),
                       np.zeros((count, 3)), np.zeros((count, 3)), self.gains)
            entry = self._arrays[count] = (targets, rate_workspace(nq, nv, self.nb, na, m_max), np.zeros(m_max),
                                           np.zeros(max(min(m_max, na), 1)))
        return entry

    def _attitude(self, xyzw) -> np.ndarray:
        key = np.asarray(xyzw, dtype=float).tobytes()
        R = self._attitudes.get(key)
        if R is None:
            from freeflyer_control.physics.state import rotation_from_xyzw

            if len(self._attitudes) > 64:  # a moving attitude target: keep the table small
                self._attitudes.clear()
            R = self._attitudes[key] = rotation_from_xyzw(xyzw)
        return R

    def arguments(self, q: np.ndarray, v: np.ndarray, mode, targets, uses) -> tuple:
        """:func:`task_rates`' arguments for ``targets`` (TaskReference, world axes) at (q, v) in
        ``mode``, filled now into this object's arrays; uses[e]: target e's commanded GJM rows
        (bool, the mode's row layout). For :meth:`solve`, and for a compiled caller that makes the
        same call itself (sim.fast.period)."""
        count = len(targets)
        arrays, rws, err, sv = self._for(count)
        ee_body, ee_R, ee_p, R_d, use, pos, vel, avel, _ = arrays
        for e, target in enumerate(targets):
            body, fR, fp = self._frame(target.frame)
            ee_body[e] = body
            ee_R[e] = fR
            ee_p[e] = fp
            if target.orientation_xyzw is not None:
                R_d[e] = self._attitude(target.orientation_xyzw)
            use[e] = uses[e]
            pos[e] = target.position
            vel[e] = target.linear_velocity
            avel[e] = target.angular_velocity
        layout = self.layouts.get(mode)
        if layout is None:
            from freeflyer_control.physics.modes import Mode

            layout = self.layouts[Mode.parse(mode)]
        self.q[:] = q
        self.v[:] = v
        return (self.km, layout, self.nb, self.q, self.v, arrays, self.rr, self.rate_limit, self.tws, rws,
                self.ws_buf, self.qdot, err, sv)

    def solve(self, q: np.ndarray, v: np.ndarray, mode, targets, uses) -> tuple:
        """(qdot, m, lambda^2, limited, err[:m], sv[:min(m, na)]) of :func:`task_rates` for
        ``targets`` at (q, v) in ``mode`` (:meth:`arguments`). qdot, err and sv are this object's
        arrays, overwritten by the next call: copy what is kept."""
        args = self.arguments(q, v, mode, targets, uses)
        return self.solved(args, *task_rates(*args))

    def solved(self, args: tuple, m: int, lam2: float, limited: bool) -> tuple:
        """:meth:`solve`'s result from the call of :func:`task_rates` on ``args``
        (:meth:`arguments`) that returned (m, lam2, limited)."""
        err, sv = args[12], args[13]
        return self.qdot, m, lam2, limited, err[:m], sv[:min(m, self.qdot.size)]
