"""The GJM and H*/C* post-processing as one compiled call each (optional: numba).

After Pinocchio's calls (CRBA, frame Jacobian, nonlinear effects) a GJM or an H*/C* is a few
hundred flops on matrices of 6 to 16 rows. Done with NumPy / LAPACK that is about fifteen calls
of 0.3-2 µs each, several times the C++ work (bench/bench_core.py); here it is one call:
~1 µs of numba dispatch and ~0.5 µs of arithmetic. Import this module only when numba is installed
(:func:`freeflyer_control.physics.kernels.available` tells).

The math is that of :mod:`freeflyer_control.physics.gjm` and
:mod:`freeflyer_control.physics.reduced`, whose NumPy expressions stay the reference: written as
loops these kernels would cost ~100 µs a call interpreted, so the NumPy path cannot share
them. test/test_compiled_post.py checks that both give the same GJM and H*/C* to round-off for
every mode, robot, frame and option. The small laws both paths need (the base rotation, the
world-to-base map T, -omega x nu) are plain functions of :mod:`~freeflyer_control.physics.state`
and :mod:`~freeflyer_control.physics.reduced` compiled here, not copies.

Differences from the NumPy path, all exact in exact arithmetic:

* M_ff is factored by Cholesky (a principal block of the SPD mass matrix) from the upper
  triangle of M only, instead of LU of the mirrored matrix;
* the GJM solves M_ff W = [J_f', h_f] and forms J* = J - W' M_f: only on the columns it
  returns (arm, commanded base, wheels for the drift); the free columns of J* are zero;
* H* = M_aa - Y'Y with Y = U'^-1 M_fa (M_ff = U'U) is symmetric by construction;
* where a caller needs only H* acc + C* (the compiled simulation's computed torque), that
  product is taken without H* (:func:`reduced_effort_into`): O(n^2) after the factorisation.

And one outside exact arithmetic: a NaN or Inf in q (so in M) fails the Cholesky, and the
callers raise ``LinAlgError`` ("mass matrix not finite ..."), where the NumPy path returns NaN.

numba caches the compiled code on disk (``cache=True``): the first use on a machine compiles
for ~5-35 s (:mod:`~freeflyer_control.physics.fastpath` logs it), later processes load it in
0.2-0.7 s. numba does not notice edits to the plain functions compiled here from other modules,
nor, in the compiled simulation (``control/kernels/computed_torque.py`` calls :func:`reduced_post` in
its loop), edits of this module; :func:`~freeflyer_control.physics.kernels.cache.ensure_fresh` clears
the caches when any of them changes.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.extending import register_jitable

from freeflyer_control.physics.state import base_rotation_into, minus_omega_cross_into, world_to_local_base_map_into

_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}
# For kernels that allocate nothing: no reference counting of the views their loops take.
_NO_NRT = dict(_JIT, _nrt=False)

_base_rotation = njit(**_JIT)(base_rotation_into)
_base_map_from_rotation = njit(**_JIT)(world_to_local_base_map_into)


@njit(**_JIT)
def _base_map(q, planar, T):
    """T = world_to_local_base_map at configuration q (physics.state)."""
    Rb = np.empty((3, 3))
    _base_rotation(planar, q, Rb)
    _base_map_from_rotation(planar, Rb, T)


_minus_omega_cross = njit(**_JIT)(minus_omega_cross_into)


# inline="always" (numba IR) for the small helpers of the kernels' inner loops: a call each
# (~150 per GJM) would otherwise stay a call, numba's calling convention keeping LLVM from
# inlining it.
@njit(inline="always", **_JIT)
def _upper(M, i, j):
    """M[i, j] of a symmetric M of which only the upper triangle is read."""
    return M[i, j] if i <= j else M[j, i]


@njit(inline="always", **_JIT)
def _factor(M, layout, p, U):
    """U'U = M[idx, idx] (upper triangle of M read; U upper, its strict lower triangle left as
    it is), idx the section of ``layout`` that starts at p (its length, then the indices): read
    in place, since a view per section would cost a reference count each in a tick's loop.
    U's diagonal holds the reciprocals of the factor's: the solves then multiply where they
    would divide (a division's latency is several multiplications', and these loops are chains
    of them). Returns LAPACK potrf's info: 0, or k > 0 when the leading minor of order k is
    not positive definite (U is then unusable)."""
    n = layout[p]
    for i in range(n):
        ii = layout[p + 1 + i]
        s = _upper(M, ii, ii)
        for k in range(i):
            s -= U[k, i] * U[k, i]
        if not s > 0.0:  # also catches NaN
            return i + 1
        r = 1.0 / math.sqrt(s)
        U[i, i] = r
        for j in range(i + 1, n):
            s = _upper(M, ii, layout[p + 1 + j])
            for k in range(i):
                s -= U[k, i] * U[k, j]
            U[i, j] = s * r
    return 0


@njit(inline="always", **_JIT)
def _solve_column(U, n, X, c, transposed_only):
    """X[:n, c] <- U'^-1 X[:n, c], then (unless ``transposed_only``) U^-1 of that, in place:
    with U'U = A that is A^-1 X[:n, c]. U: :func:`_factor`'s (>= n x n; reciprocal diagonal)."""
    for i in range(n):
        s = X[i, c]
        for k in range(i):
            s -= U[k, i] * X[k, c]
        X[i, c] = s * U[i, i]
    if not transposed_only:
        for i in range(n - 1, -1, -1):
            s = X[i, c]
            for k in range(i + 1, n):
                s -= U[i, k] * X[k, c]
            X[i, c] = s * U[i, i]


@njit(inline="always", **_JIT)
def _block(planar, c0, nc, x):
    """(lo, hi) - c0: the commanded coordinates c0:c0+nc that share coordinate x's diagonal block
    of the world-to-base map T (block diagonal: R' on the translations and on the spatial
    attitude, 1 on the planar yaw), so that products with T's commanded block skip its zeros
    (exact zeros: the sums are the same to the bit)."""
    if planar:
        lo, hi = (0, 2) if x < 2 else (2, 3)
    else:
        lo = x // 3 * 3
        hi = lo + 3
    return max(lo, c0) - c0, min(hi, c0 + nc) - c0


@njit(inline="always", **_JIT)
def _turned(planar, T, c0, nc, i, x, transposed):
    """Entry i of T x (or T' x, ``transposed``) on the commanded coordinates c0:c0+nc, x[:nc]
    in their order, over i's block of T only (:func:`_block`)."""
    lo, hi = _block(planar, c0, nc, c0 + i)
    s = 0.0
    for k in range(lo, hi):
        s += (T[c0 + k, c0 + i] if transposed else T[c0 + i, c0 + k]) * x[k]
    return s


def gjm_layout(planar, rows, free, commanded, arm, wheels) -> np.ndarray:
    """The index arrays of a GJM packed into the one int64 array :func:`gjm_post` reads:
    [planar, len(rows), *rows, len(free), *free, len(commanded), ...]. (Each array argument
    of a compiled call costs ~0.1 µs to dispatch; one array instead of six saves ~1 µs.)

    Args:
        planar: the base is planar (x, y, yaw).
        rows: rows of the frame Jacobian kept (spatial all six; planar vx, vy, wz).
        free, commanded: the mode's base coordinates (each contiguous, ascending).
        arm, wheels: velocity indices of the arm joints and of the wheels.
    """
    out = [int(planar)]
    for a in (rows, free, commanded, arm, wheels):
        out += [len(a), *(int(i) for i in a)]
    return np.array(out, dtype=np.int64)


@njit(**_JIT)
def gjm_post(M, J, v, q, layout, h):
    """(matrix, drift, info) of :func:`~freeflyer_control.physics.gjm.generalized_jacobian`.

    Args:
        M: mass matrix (nv, nv; kg, kg m, kg m^2), upper triangle read (unused when the mode
            has no free base coordinate). Not modified, nor is any other argument.
        J: frame Jacobian (6, nv), twist [v_point (m/s); omega (rad/s)] in world axes.
        v: velocity (nv,), Pinocchio's (base part in base_link axes; m/s, rad/s).
        q: configuration (nq,).
        layout: :func:`gjm_layout`.
        h: the conserved momentum as base rows M_f nu (physics.momentum.conserved_to_base_rows;
            kg m/s, kg m^2/s, base_link axes), or empty: M_f nu at ``v``.
    Returns:
        info: 0, or potrf's > 0 when M_ff is not positive definite (matrix, drift unusable).
    """
    nr = layout[1]
    pc = 3 + nr + layout[2 + nr]
    nc = layout[pc]
    matrix = np.empty((nr, layout[pc + 1 + nc] + nc))
    drift = np.empty(nr)
    info = gjm_post_into(M, J, v, q, layout, h, matrix, drift, gjm_workspace(nr, 3 if layout[0] != 0 else 6))
    return matrix, drift, info


@register_jitable  # allocations, once per run: plain Python there, compiled where a kernel calls it
def gjm_workspace(nr, nb):
    """Scratch of :func:`gjm_post_into` for nr rows and nb base coordinates: W, U, T, Jc, Rb."""
    return np.empty((nb, nr + 1)), np.zeros((nb, nb)), np.empty((nb, nb)), np.empty((nr, nb)), np.empty((3, 3))


@njit(**_JIT)
def gjm_post_into(M, J, v, q, layout, h, matrix, drift, ws):
    """:func:`gjm_post` into ``matrix`` (nr, na + nc) and ``drift`` (nr,), allocating nothing
    (``ws``: :func:`gjm_workspace`); returns info. For compiled callers that take a GJM every
    tick (the compiled simulation's resolved rate). Indices are read from ``layout`` in place:
    a view of it per section would cost a reference count each in a tick's loop."""
    planar = layout[0] != 0
    nr = layout[1]
    pf = 2 + nr  # layout[pf]: the number of free base coordinates, their indices after it
    nf = layout[pf]
    pc = pf + 1 + nf
    nc = layout[pc]
    pa = pc + 1 + nc
    na = layout[pa]
    pw = pa + 1 + na
    nw = layout[pw]
    nv = J.shape[1]
    W, U, T, Jc, Rb = ws
    for r in range(nr):
        drift[r] = 0.0
    f0 = layout[pf + 1] if nf else 0
    # W = M_ff^-1 [J_f', h_f]: J* = J - W' M_f: on the columns used, drift = J_f M_ff^-1 h_f
    if nf:
        info = _factor(M, layout, pf, U)
        if info:
            return info
        for i in range(nf):
            for r in range(nr):
                W[i, r] = J[layout[2 + r], f0 + i]
            if h.shape[0]:
                W[i, nr] = h[i]
            else:  # h_f = M_f nu at this state
                s = 0.0
                for k in range(nv):
                    s += _upper(M, f0 + i, k) * v[k]
                W[i, nr] = s
        for c in range(nr + 1):
            _solve_column(U, nf, W, c, False)
        for r in range(nr):
            s = 0.0
            for i in range(nf):
                s += J[layout[2 + r], f0 + i] * W[i, nr]
            drift[r] = s
    for t in range(nw):
        w = layout[pw + 1 + t]
        for r in range(nr):
            drift[r] += _jstar(M, J, W, layout[2 + r], r, w, f0, nf) * v[w]
    for j in range(na):
        col = layout[pa + 1 + j]
        for r in range(nr):
            matrix[r, j] = _jstar(M, J, W, layout[2 + r], r, col, f0, nf)
    if nc:
        _base_rotation(planar, q, Rb)
        _base_map_from_rotation(planar, Rb, T)
        c0 = layout[pc + 1]  # the commanded coordinates are contiguous
        for i in range(nc):
            for r in range(nr):
                Jc[r, i] = _jstar(M, J, W, layout[2 + r], r, c0 + i, f0, nf)
        for j in range(nc):
            lo, hi = _block(planar, c0, nc, c0 + j)
            for r in range(nr):
                s = 0.0
                for i in range(lo, hi):
                    s += Jc[r, i] * T[c0 + i, c0 + j]
                matrix[r, na + j] = s
    return 0


@njit(inline="always", **_JIT)
def _jstar(M, J, W, row, r, k, f0, nf):
    """J*[row, k] = J[row, k] - sum_i W[i, r] M[f0 + i, k] (k not a free column)."""
    s = J[row, k]
    for i in range(nf):
        s -= W[i, r] * _upper(M, f0 + i, k)
    return s


def reduced_layout(planar, n_commanded, actuated, eliminated) -> np.ndarray:
    """The index arrays of a reduced dynamics packed into the one int64 array
    :func:`reduced_post` reads (see :func:`gjm_layout`).

    Args:
        planar: the base is planar (x, y, yaw).
        n_commanded: how many of the actuated coordinates are commanded base ones (first).
        actuated: the actuated velocity indices, the commanded base ones first.
        eliminated: the eliminated ones (free base coordinates, and idle wheels).
    """
    out = [int(planar), int(n_commanded)]
    for a in (actuated, eliminated):
        out += [len(a), *(int(i) for i in a)]
    return np.array(out, dtype=np.int64)


@njit(**_JIT)
def reduced_post(M, b, v, q, layout):
    """(H, C, info) of :func:`~freeflyer_control.physics.reduced.reduced_dynamics`.

    Args:
        M: mass matrix (nv, nv; kg, kg m, kg m^2), upper triangle read; not modified.
        b: nonlinear effects (nv,), N or N m (base rows: base_link axes).
        v: velocity (nv,; m/s, rad/s, base part in base_link axes); q: configuration (nq,).
        layout: :func:`reduced_layout`.
    Returns:
        info: 0, or potrf's > 0 when M over the eliminated coordinates is not positive
        definite (H, C unusable).
    """
    na = layout[2]
    H = np.empty((na, na))
    C = np.empty(na)
    info = reduced_post_into(M, b, v, q, layout, H, C, reduced_workspace(v.shape[0], 3 if layout[0] != 0 else 6))
    return H, C, info


@njit(**_JIT)
def reduced_effort_into(M, b, v, q, layout, acc, out, ws, cols, Hcols):
    """out[:na] = H* acc + C* for the reduced dynamics of ``layout`` (:func:`reduced_post`'s
    H*, C*), without forming H*, and Hcols[:na, j] = H*[:, cols[j]] for the few columns a
    hybrid solve needs (``cols``: actuated positions; empty for none); returns info (as
    :func:`reduced_post`'s).

    The same law by another route, exact in exact arithmetic: with a the actuated coordinates,
    e the eliminated ones and T the commanded block of the world-to-base map,
    H* acc + C* = T'(M_aa y + b_a - M_ae M_ee^-1 (M_ea y + b_e)) on the commanded rows (T' on
    them only), where y = acc with its commanded part taken to base_link axes, T acc_c, plus
    -omega x nu. That is one Cholesky factorisation and matrix-vector products, O(n^2) after the
    factorisation, where H* itself is O(n^3): what a computed-torque tick needs. A column of H*
    is a column of the Schur complement S = M_aa - M_ae M_ee^-1 M_ea, its commanded rows
    turned by T' (and, for a commanded column, the commanded columns of S combined by T).

    Args:
        M, b, v, q, layout: as :func:`reduced_post`.
        acc: the actuated coordinates' accelerations (na,): the commanded base ones in world
            axes (m/s^2, rad/s^2), then the joints' (rad/s^2 or m/s^2).
        out: (na,) receives the forces: commanded base wrench in world axes (N, N m, about the
            base_link origin), then joint forces (N m or N).
        ws: :func:`reduced_workspace`.
        cols, Hcols: int64 (k,), and (>= na, >= k).
    """
    planar, nc = layout[0] != 0, layout[1]
    na = layout[2]
    pe = 3 + na
    nf = layout[pe]
    U, Y, w, T, Rb, tmp = ws
    y, f = tmp[0], tmp[1]
    c0 = layout[3] if nc else 0
    if nc:
        _minus_omega_cross(v, planar, w)
        _base_rotation(planar, q, Rb)
        _base_map_from_rotation(planar, Rb, T)
        for i in range(nc):
            y[i] = w[c0 + i] + _turned(planar, T, c0, nc, i, acc, False)
    for i in range(nc, na):
        y[i] = acc[i]
    for i in range(na):  # f = M_aa y + b_a
        ai = layout[3 + i]
        f[i] = b[ai] + _row_times_actuated(M, layout, ai, y)
    if nf:
        info = _factor(M, layout, pe, U)
        if info:
            return info
        for i in range(nf):  # z = M_ee^-1 (M_ea y + b_e), in Y[:, 0]
            ei = layout[pe + 1 + i]
            Y[i, 0] = b[ei] + _row_times_actuated(M, layout, ei, y)
        _solve_column(U, nf, Y, 0, False)
        for i in range(na):
            ai = layout[3 + i]
            s = f[i]
            for k in range(nf):
                s -= _upper(M, ai, layout[pe + 1 + k]) * Y[k, 0]
            f[i] = s
    for i in range(nc):  # the commanded rows back to world axes: T' f_c
        out[i] = _turned(planar, T, c0, nc, i, f, True)
    for i in range(nc, na):
        out[i] = f[i]
    reduced_columns_into(M, layout, ws, cols, Hcols)
    return 0


@njit(**_JIT)
def reduced_columns_into(M, layout, ws, cols, Hcols):
    """Hcols[:na, j] = H*[:, cols[j]] (``cols``: actuated positions) from what the last
    :func:`reduced_effort_into` call at this M and configuration left in ``ws`` (the factor of
    M_ee and T): more columns for the same tick without factoring again."""
    planar, nc = layout[0] != 0, layout[1]
    na = layout[2]
    U, Y, w, T, Rb, tmp = ws
    S = tmp[2:]  # S[k]: column k of the Schur complement (k < nc), then the column being made
    c0 = layout[3] if nc else 0
    ncol = cols.shape[0]
    commanded = False
    for j in range(ncol):
        commanded = commanded or cols[j] < nc
    if commanded:
        for k in range(nc):
            _schur_column(M, layout, U, Y, k, S[k])
    for j in range(ncol):
        p = cols[j]
        col = S[nc]
        if p < nc:  # S T e_p: the commanded columns of S in p's block of T
            lo, hi = _block(planar, c0, nc, c0 + p)
            for i in range(na):
                s = 0.0
                for k in range(lo, hi):
                    s += S[k, i] * T[c0 + k, c0 + p]
                col[i] = s
        else:
            _schur_column(M, layout, U, Y, p, col)
        for i in range(nc):  # T' on the commanded rows
            Hcols[i, j] = _turned(planar, T, c0, nc, i, col, True)
        for i in range(nc, na):
            Hcols[i, j] = col[i]


@njit(inline="always", **_JIT)
def _row_times_actuated(M, layout, row, y):
    """sum_j M[row, a_j] y[j] over the actuated coordinates a of ``layout`` (upper triangle of
    M read)."""
    s = 0.0
    for j in range(layout[2]):
        s += _upper(M, row, layout[3 + j]) * y[j]
    return s


@njit(inline="always", **_JIT)
def _schur_column(M, layout, U, Y, p, out):
    """out[:na] = column p (an actuated position) of the Schur complement
    S = M_aa - M_ae M_ee^-1 M_ea of ``layout`` (base_link axes), U: :func:`_factor`'s of M_ee;
    Y[:, 1]: scratch."""
    na = layout[2]
    pe = 3 + na
    nf = layout[pe]
    ap = layout[3 + p]
    for i in range(nf):
        Y[i, 1] = _upper(M, layout[pe + 1 + i], ap)
    _solve_column(U, nf, Y, 1, False)
    for i in range(na):
        ai = layout[3 + i]
        s = _upper(M, ai, ap)
        for k in range(nf):
            s -= _upper(M, ai, layout[pe + 1 + k]) * Y[k, 1]
        out[i] = s


@register_jitable  # allocations, once per run: plain Python there, compiled where a kernel calls it
def reduced_workspace(nv, nb):
    """Scratch of :func:`reduced_post_into` and :func:`reduced_effort_into` for nv velocities
    and nb base coordinates: U, Y, -omega x nu, T, Rb, and rows of intermediate results."""
    return (np.empty((nv, nv)), np.empty((nv, nv + 1)), np.empty(nb), np.empty((nb, nb)), np.empty((3, 3)),
            np.empty((nv, nv)))


@njit(**_JIT)
def reduced_post_into(M, b, v, q, layout, H, C, ws):
    """:func:`reduced_post` into H (na, na) and C (na,), allocating nothing (``ws``:
    :func:`reduced_workspace`); returns info. For compiled callers that take H*, C* every tick
    (the compiled simulation's computed torque). Indices are read from ``layout`` in place:
    a view of it per section would cost a reference count each in a tick's loop."""
    planar, nc = layout[0] != 0, layout[1]
    na = layout[2]
    pe = 3 + na  # layout[pe] = the number eliminated, their indices after it
    nf = layout[pe]
    U, Y, w, T, Rb, tmp = ws
    for i in range(na):
        ai = layout[3 + i]
        C[i] = b[ai]
        for j in range(i, na):
            H[i, j] = _upper(M, ai, layout[3 + j])
    if nf:
        info = _factor(M, layout, pe, U)
        if info:
            return info
        for c in range(na + 1):  # Y = U'^-1 [M_fa, b_f]
            for i in range(nf):
                ei = layout[pe + 1 + i]
                Y[i, c] = _upper(M, ei, layout[3 + c]) if c < na else b[ei]
            _solve_column(U, nf, Y, c, True)
        for i in range(na):
            s = C[i]
            for k in range(nf):
                s -= Y[k, i] * Y[k, na]
            C[i] = s
            for j in range(i, na):
                s = H[i, j]
                for k in range(nf):
                    s -= Y[k, i] * Y[k, j]
                H[i, j] = s
    for i in range(na):
        for j in range(i):
            H[i, j] = H[j, i]
    if nc:
        c0 = layout[3]
        _minus_omega_cross(v, planar, w)
        for i in range(na):
            for j in range(nc):
                C[i] += H[i, j] * w[c0 + j]
        _base_rotation(planar, q, Rb)
        _base_map_from_rotation(planar, Rb, T)
        # H <- T' H T on the commanded rows and columns, C <- T' C on its rows (T = T[c, c]):
        # T' on the commanded rows, then T on their commanded block; the rest of the commanded
        # columns are those rows mirrored (H T's entries there are the same sums, H being
        # symmetric), the commanded block the mean of its two triangles
        for i in range(nc):
            lo, hi = _block(planar, c0, nc, c0 + i)
            for j in range(na):
                s = 0.0
                for k in range(lo, hi):
                    s += T[c0 + k, c0 + i] * H[k, j]
                tmp[i, j] = s
        for i in range(nc):
            for j in range(na):
                H[i, j] = tmp[i, j]
        for i in range(nc):
            for j in range(nc):
                lo, hi = _block(planar, c0, nc, c0 + j)
                s = 0.0
                for k in range(lo, hi):
                    s += H[i, k] * T[c0 + k, c0 + j]
                tmp[i, j] = s
        for i in range(nc):
            for j in range(nc):
                H[i, j] = tmp[i, j]
        for i in range(nc):
            tmp[i, 0] = _turned(planar, T, c0, nc, i, C, True)
        for i in range(nc):
            C[i] = tmp[i, 0]
        for i in range(nc):
            for j in range(i):
                s = 0.5 * (H[i, j] + H[j, i])
                H[i, j] = s
                H[j, i] = s
            for j in range(nc, na):
                H[j, i] = H[i, j]
    return 0
