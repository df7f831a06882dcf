"""The thruster allocator's two stages as plain functions on arrays: the one definition that
:class:`~freeflyer_control.control.allocation.ThrusterAllocator` runs and the compiled engine
compiles (numba, :mod:`freeflyer_control.control.kernels.allocation`).

The problem and the algorithms are those of :mod:`freeflyer_control.control.allocation`:
stage 1 BVLS (min ||B f - w|| s.t. 0 <= f <= u), stage 2 a bounded-variable primal simplex
with Bland's rule (min sum f s.t. A f = A f*, 0 <= f <= u, A the independent rows of B).

Plain loops over scalars and preallocated scratch on purpose: no Python objects, exceptions
or allocations inside, so that numba compiles these same functions (nothing here imports
numba). Every subset solve is a direct one, from a Householder QR with column pivoting of the
subset's columns (m <= 6 rows): the minimum-norm least-squares solution, which is what the
Moore-Penrose pseudo-inverse gives, so a rank-deficient subset (opposing thrusters) is solved
exactly as by ``pinv``. Compiled, one ``allocate_forces`` costs a few microseconds; run by
the interpreter it is far slower than the list-based code in ``allocation``, which is why
that code stays as the path without numba.

Inputs, built by :func:`allocator_arrays` (frames and units of ``allocation``):

- ``B`` (nb, n) float64: wrench per newton of each thruster, base_link axes about the base
  origin (``physics.actuators.thruster_matrix``);
- ``A2`` (m2, n) float64: independent rows spanning range(B) (m2 = rank B);
- ``u`` (n,) float64: max force of each thruster, N, > 0;
- ``params`` (N_PARAMS,) float64: see ``P_*`` below;
- ``work``, ``iwork``: scratch from :func:`allocation_workspace` (float64 / int64, 1-D). They
  also carry the warm start from call to call (:func:`allocate_forces`): the last optimal
  stage-2 basis and stage-1 partition, with the QR factors of their columns. Fresh (zero)
  scratch, or :func:`forget_basis`, starts cold.
"""

from __future__ import annotations

import math

import numpy as np

# params[...] of allocate_forces
P_RTOL_B, P_RTOL_A2, P_WRENCH_SCALE, P_COLNORM_MAX, P_ACHIEVABLE_RTOL, P_FUEL_OPTIMAL, P_WARM_START = range(7)
N_PARAMS = 7

# Bits of the status allocate_forces returns (0: achievable and solved).
SATURATED = 1  # the request is out of reach: f makes the achievable wrench closest to it
STAGE1_GUARD = 2  # BVLS hit its iteration guard (not expected): f is its last feasible iterate
STAGE2_KEPT = 4  # stage 2 gave up or would lose accuracy (not expected): f is the stage-1 answer
INVALID = 8  # the wrench has NaN or Inf entries: f is zero

# A request larger than this (inf-norm, N or N m) is scaled down to it before solving: the
# thrusters' reach is a few newtons, so the closest achievable wrench no longer depends on the
# magnitude, and squares of the wrench stay far from overflow.
WRENCH_CAP = 1e100


def allocator_arrays(B, max_forces, fuel_optimal: bool = True, achievable_rtol: float = 1e-9,
                     warm_start: bool = True):
    """(B, A2, u, params) for :func:`allocate_forces` from a checked thruster matrix B (nb, n)
    and max forces (n,), N. Runs once per allocator (NumPy, not compiled)."""
    # Fresh writable C-ordered copies: numba compiles one signature per array layout.
    B = np.array(B, dtype=float, order="C")
    u = np.array(max_forces, dtype=float).reshape(-1)
    nb, n = B.shape
    rank = 0
    A2 = np.zeros((0, n))
    if n:
        U, s, _ = np.linalg.svd(B, full_matrices=False)
        rank = int(np.sum(s > 1e-12 * max(B.shape) * s[0])) if s[0] > 0 else 0
        # U^T B f = U^T a has full row rank and is equivalent to B f = a for a in range(B).
        A2 = np.ascontiguousarray(U[:, :rank].T @ B)
    colnorm = np.linalg.norm(B, axis=0)
    params = np.zeros(N_PARAMS)
    params[P_RTOL_B] = 1e-12 * max(nb, n)
    params[P_RTOL_A2] = 1e-12 * max(rank, n)
    params[P_WRENCH_SCALE] = float(colnorm @ u)  # rounding in a residual is ~eps (|w| + this)
    params[P_COLNORM_MAX] = float(colnorm.max()) if n else 0.0
    params[P_ACHIEVABLE_RTOL] = achievable_rtol
    params[P_FUEL_OPTIMAL] = 1.0 if fuel_optimal else 0.0
    params[P_WARM_START] = 1.0 if warm_start else 0.0
    return B, A2, u, params


def workspace_sizes(nb, n):
    """Lengths (float64, int64) of the scratch arrays for nb rows and n thrusters: the stages'
    scratch (:func:`_scratch`), four vectors of allocate_forces, then what the warm start
    remembers (:func:`_remembered`)."""
    return (2 * nb * n + 2 * nb + 6 * max(nb, n) + (3 * nb + n) + (nb * nb + nb + 1) + (nb * n + nb),
            11 * n + N_WARM_FLAGS)


# What the warm start remembers (a fresh zero iwork remembers nothing; :func:`_remembered`):
# one code per thruster of the stage-2 basis and of the stage-1 partition (BVLS's free forces
# and the bounds of the others), the QR factors of the basis's columns of B, and these flags.
AT_ZERO, BASIC, AT_MAX = 0, 1, 2  # BASIC: in the stage-2 basis, or free in stage 1
# != 0: remembered / the last request achieved; then the partition's free count and their rank
WARM_BASIS, WARM_PARTITION, WARM_ACHIEVED, PARTITION_SIZE, PARTITION_RANK = range(5)
N_WARM_FLAGS = 5


def _remembered(work, iwork, nb, n):
    """Views of what the warm start keeps between calls: the basis codes (n), the partition
    codes (n), the basis's columns (n, the first k used) and the pivots, R and Householder
    factors and snap tolerance of their QR (:func:`_qr_pivoted` of B's columns, nb x k), and
    the flags. Past everything the stages and allocate_forces use."""
    o = 2 * nb * n + 2 * nb + 6 * max(nb, n) + 3 * nb + n
    W = work[o:o + nb * nb].reshape((nb, nb))
    tau = work[o + nb * nb:o + nb * nb + nb]
    rel = work[o + nb * nb + nb:o + nb * nb + nb + 1]
    basis, partition = iwork[5 * n:6 * n], iwork[6 * n:7 * n]
    cols, piv, flags = iwork[7 * n:8 * n], iwork[8 * n:9 * n], iwork[11 * n:11 * n + N_WARM_FLAGS]
    return basis, partition, cols, piv, W, tau, rel, flags


def _partition_factors(work, iwork, nb, n):
    """Views of the remembered stage-1 partition's QR (:func:`_qr_pivoted` of its free columns
    of B): R and Householder factors (nb, n), tau (nb), the free columns and the pivots (n)."""
    o = 2 * nb * n + 2 * nb + 6 * max(nb, n) + 3 * nb + n + nb * nb + nb + 1
    return (work[o:o + nb * n].reshape((nb, n)), work[o + nb * n:o + nb * n + nb],
            iwork[9 * n:10 * n], iwork[10 * n:11 * n])


def forget_basis(iwork):
    """Drop what the warm start remembers (its flags, the last entries of iwork): the next
    :func:`allocate_forces` with this scratch solves cold."""
    for i in range(iwork.shape[0] - N_WARM_FLAGS, iwork.shape[0]):
        iwork[i] = 0


def allocation_workspace(nb, n):
    """Scratch (work float64, iwork int64) for :func:`allocate_forces`; allocate once, reuse."""
    nf, ni = workspace_sizes(nb, n)
    return np.zeros(nf), np.zeros(ni, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# Minimum-norm least squares on a subset of columns


def _gather(mask, cols):
    """cols[:k] = the indices j (ascending) with mask[j] != 0; returns k."""
    k = 0
    for j in range(mask.shape[0]):
        if mask[j] != 0:
            cols[k] = j
            k += 1
    return k


def _qr_pivoted(A, cols, k, rtol, W, tau, piv):
    """Householder QR with column pivoting of A[:, cols[:k]] (m x k) into W, tau, piv
    (LAPACK geqp3 storage: R on and above the diagonal, the reflectors below, unit leading
    entry implied). A column counts while its pivot exceeds rtol times the first; returns
    that numerical rank r (the reflectors stop there)."""
    m = A.shape[0]
    for j in range(k):
        piv[j] = j
        for i in range(m):
            W[i, j] = A[i, cols[j]]
    r0 = 0.0
    for p in range(min(m, k)):
        best, jb = -1.0, p
        for j in range(p, k):
            s = 0.0
            for i in range(p, m):
                s += W[i, j] * W[i, j]
            if s > best:
                best, jb = s, j
        if jb != p:
            for i in range(m):
                W[i, p], W[i, jb] = W[i, jb], W[i, p]
            piv[p], piv[jb] = piv[jb], piv[p]
        norm = math.sqrt(best)
        if p == 0:
            r0 = norm
        if norm == 0.0 or norm <= rtol * r0:
            return p
        _householder(W, tau, p, m, k, norm)
    return min(m, k)


def _householder(W, tau, p, rows, ncols, norm):
    """One Householder step of a QR in place: the reflector I - tau[p] v v^T that maps
    W[p:rows, p] (of 2-norm ``norm``) onto the axis, stored LAPACK-style (v[0] = 1 implied,
    the rest below the diagonal), applied to columns p+1 .. ncols-1."""
    alpha = W[p, p]
    beta = -norm if alpha >= 0.0 else norm
    v0 = alpha - beta
    tau[p] = (beta - alpha) / beta if beta != 0.0 else 0.0
    if v0 != 0.0:
        for i in range(p + 1, rows):
            W[i, p] /= v0
    W[p, p] = beta
    for j in range(p + 1, ncols):
        s = W[p, j]
        for i in range(p + 1, rows):
            s += W[i, p] * W[i, j]
        s *= tau[p]
        W[p, j] -= s
        for i in range(p + 1, rows):
            W[i, j] -= s * W[i, p]


def _reflect(V, tau, p, y, n):
    """y[p:n] = (I - tau[p] v v^T) y[p:n], v = (1, V[p+1:n, p])."""
    s = y[p]
    for i in range(p + 1, n):
        s += V[i, p] * y[i]
    s *= tau[p]
    y[p] -= s
    for i in range(p + 1, n):
        y[i] -= s * V[i, p]


def _min_norm_solve(W, tau, piv, m, k, r, rhs, z, W2, tau2, y):
    """z[:k] = pinv(A_S) rhs, from the factors of _qr_pivoted (rank r) of A_S (m x k): the
    least-squares solution of least norm. Full column rank: back substitution in R. Otherwise
    the trapezoid [R11 R12] is factored once more, [R11 R12]^T = Q2 L (QR, no pivoting), and
    the least-norm solution of [R11 R12] x = c is Q2 L^-T c."""
    for i in range(m):
        y[i] = rhs[i]
    for p in range(r):
        _reflect(W, tau, p, y, m)  # y = Q^T rhs
    if r == k:
        for p in range(r - 1, -1, -1):
            s = y[p]
            for j in range(p + 1, r):
                s -= W[p, j] * y[j]
            y[p] = s / W[p, p]
        for p in range(k):
            z[piv[p]] = y[p]
        return
    for i in range(k):  # W2 = [R11 R12]^T, k x r
        for j in range(r):
            W2[i, j] = W[j, i] if i >= j else 0.0
    for p in range(r):
        norm = 0.0
        for i in range(p, k):
            norm += W2[i, p] * W2[i, p]
        _householder(W2, tau2, p, k, r, math.sqrt(norm))
    for p in range(r):  # L^T s = c (L = upper triangle of W2), forward
        s = y[p]
        for j in range(p):
            s -= W2[j, p] * y[j]
        y[p] = s / W2[p, p]
    for i in range(r, k):
        y[i] = 0.0
    for p in range(r - 1, -1, -1):  # y = Q2 [s; 0]
        _reflect(W2, tau2, p, y, k)
    for p in range(k):
        z[piv[p]] = y[p]


def _ones_transposed_solve(W, tau, m, y):
    """y = A_B^-T 1 for a nonsingular basis A_B (m x m) factored by _qr_pivoted: A_B P = Q R,
    so R^T (Q^T y) = P^T 1 = 1 (forward substitution), then y = Q (Q^T y)."""
    for p in range(m):
        s = 1.0
        for j in range(p):
            s -= W[j, p] * y[j]
        y[p] = s / W[p, p]
    for p in range(m - 1, -1, -1):
        _reflect(W, tau, p, y, m)


def _subset_rhs(A, x, mask, w, rhs):
    """rhs = w - A (x with the columns in mask zeroed): what the subset's forces must make."""
    m, n = A.shape
    for i in range(m):
        s = w[i]
        for j in range(n):
            if mask[j] == 0:
                s -= A[i, j] * x[j]
        rhs[i] = s


def _solve_free(B, x, free, w, rtol, cols, piv, W, tau, W2, tau2, y, rhs, z):
    """z[:k] = the least-norm forces of the k free thrusters (cols[:k], ascending) that bring
    B x closest to w, the others held at x. Returns k (0: nothing free, z untouched)."""
    k = _gather(free, cols)
    if k:
        _subset_rhs(B, x, free, w, rhs)
        r = _qr_pivoted(B, cols, k, rtol, W, tau, piv)
        _min_norm_solve(W, tau, piv, B.shape[0], k, r, rhs, z, W2, tau2, y)
    return k


def _norm(v, m):
    """Euclidean norm of v[:m] without overflow or underflow of the squares."""
    big = 0.0
    for i in range(m):
        big = max(big, abs(v[i]))
    if big == 0.0 or not big < math.inf:
        return big
    s = 0.0
    for i in range(m):
        s += (v[i] / big) ** 2
    return big * math.sqrt(s)


# ---------------------------------------------------------------------------------------------
# Stage 1: bounded-variable least squares


def _descent(B, x, w, g):
    """g (n,) = B^T (w - B x): minus the gradient of 1/2 ||B x - w||^2."""
    m, n = B.shape
    for j in range(n):
        g[j] = 0.0
    for i in range(m):
        ri = w[i]
        for j in range(n):
            ri -= B[i, j] * x[j]
        for j in range(n):
            g[j] += B[i, j] * ri


def kkt_tolerance(w, m, wrench_scale, colnorm_max):
    """The gradient size under which BVLS takes a force on a bound as optimal: rounding of
    B^T (w - B x), ~eps |B| (|w| + the thrusters' reach)."""
    return 1e-13 * colnorm_max * (_norm(w, m) + wrench_scale)


def bounded_least_squares(B, u, w, rtol, wrench_scale, colnorm_max, x, work, iwork):
    """BVLS (Stark & Parker 1995): x = argmin ||B x - w|| s.t. 0 <= x <= u (x: (n,) N; w: (nb,)
    base_link axes, N and N m). Returns False when the iteration guard trips (not expected;
    x is then the last feasible iterate).

    Start: solve with every force free, put those that leave their box on the bound they
    crossed, solve again for the rest, until none leaves (scipy's start too). Then each outer
    step frees the bound force whose gradient points into the box most steeply, and the inner
    loop moves the free forces towards their unconstrained optimum, putting back on its bound
    any force that reaches one. The objective falls strictly at every outer step, so no active
    set repeats; the loop ends at a KKT point.
    """
    m, n = B.shape
    W, tau, W2, tau2, y, z, rhs, g, hstep, hbound = _scratch(work, m, n)
    cols, piv, free, skip = iwork[:n], iwork[n:2 * n], iwork[2 * n:3 * n], iwork[3 * n:4 * n]
    for j in range(n):
        x[j] = 0.0
        free[j] = 1
        skip[j] = 0
    while True:
        k = _solve_free(B, x, free, w, rtol, cols, piv, W, tau, W2, tau2, y, rhs, z)
        if k == 0:
            break
        crossed = False
        for p in range(k):
            j, zj = cols[p], z[p]
            if zj <= 0.0:
                x[j], free[j], crossed = 0.0, 0, True
            elif zj >= u[j]:
                x[j], free[j], crossed = u[j], 0, True
            else:
                x[j] = zj
        if not crossed:
            break

    tol = kkt_tolerance(w, m, wrench_scale, colnorm_max)
    for _ in range(10 * n + 10):
        _descent(B, x, w, g)
        t, best = -1, tol
        for j in range(n):
            if free[j] != 0 or skip[j] != 0:
                continue
            gj = g[j] if x[j] == 0.0 else -g[j]  # > 0: moving off the bound helps
            if gj > best:
                t, best = j, gj
        if t < 0:
            return True
        t_from = x[t]
        free[t] = 1
        first = True
        while True:
            k = _solve_free(B, x, free, w, rtol, cols, piv, W, tau, W2, tau2, y, rhs, z)
            if k == 0:
                break
            if first:
                first = False
                zt = 0.0
                for p in range(k):
                    if cols[p] == t:
                        zt = z[p]
                if (zt <= t_from) if t_from == 0.0 else (zt >= t_from):
                    free[t], skip[t] = 0, 1  # its gradient was at the rounding level: try another
                    break
            # Step from x towards z up to the first bound; forces that reach one leave.
            alpha, hits = 1.0, 0
            for p in range(k):
                j, zj, xj = cols[p], z[p], x[cols[p]]
                hstep[p] = math.inf
                if zj <= 0.0:
                    hstep[p], hbound[p] = xj / (xj - zj), 0.0  # xj > 0 >= zj: no 0/0
                elif zj >= u[j]:
                    hstep[p], hbound[p] = (u[j] - xj) / (zj - xj), u[j]  # xj < u <= zj
                else:
                    continue
                hits += 1
                alpha = min(alpha, hstep[p])
            if hits == 0:
                for p in range(k):
                    x[cols[p]] = z[p]
                break
            for p in range(k):
                j = cols[p]
                x[j] = x[j] + alpha * (z[p] - x[j])
            for p in range(k):
                j = cols[p]
                if hstep[p] < math.inf and (hstep[p] <= alpha or x[j] <= 0.0 or x[j] >= u[j]):
                    x[j] = hbound[p]
                    free[j] = 0
        if skip[t] == 0:
            for j in range(n):
                skip[j] = 0  # progress was made: every force may be tried again
    return False


# ---------------------------------------------------------------------------------------------
# Stage 2: least fuel


def step_to_bound(x, u, cols, k, d):
    """The crossover's move: the free forces ``cols[:k]`` move along ``d`` (their change per unit
    step) until the first of them reaches a bound (0 or its u), which is set exactly on it; the
    others are kept in [0, u]. Returns that force, or -1 (nothing moved) when no force moves.
    Shared by the compiled kernel and the list-based path (plain sequences work too)."""
    alpha, leave, bound = math.inf, -1, 0.0
    for p in range(k):
        j, dk = cols[p], d[p]
        if dk < 0.0:
            step, b = x[j] / -dk, 0.0
        elif dk > 0.0:
            step, b = (u[j] - x[j]) / dk, u[j]
        else:
            continue
        if step < alpha:
            alpha, leave, bound = step, j, b
    if leave < 0:
        return -1
    for p in range(k):
        j = cols[p]
        x[j] = min(max(x[j] + alpha * d[p], 0.0), u[j])
    x[leave] = bound
    return leave


def ratio_test(x, u, cols, k, col, s, enter):
    """The simplex ratio test of stage 2: how far the entering force ``enter`` moves (direction
    ``s``: +1 up from 0, -1 down from its bound u) before a basic force ``cols[:k]`` hits a
    bound, given the tableau column ``col`` (change of each basic force per unit move).

    Returns (step, leaving force or -1 for a bound flip of the entering one, whether it leaves
    at its upper bound). Shared by the compiled kernel and the list-based path (plain
    sequences work too)."""
    tmin, leave, leave_hi = u[enter], -1, False  # a bound flip unless a basic force stops it
    for p in range(k):
        j = cols[p]
        dk = -s * col[p]  # change of this basic force per unit move of the entering one
        if dk < -1e-12:
            ratio, hi = max(x[j], 0.0) / -dk, False
        elif dk > 1e-12:
            ratio, hi = max(u[j] - x[j], 0.0) / dk, True
        else:
            continue
        if ratio < tmin:
            tmin, leave, leave_hi = ratio, j, hi
    return tmin, leave, leave_hi


def least_fuel(A, u, f_star, rtol, x, work, iwork):
    """x = argmin sum(x) s.t. A x = A f*, 0 <= x <= u (A (m2, n): the independent rows of B;
    f*, x: (n,) N), from the stage-1 forces f*. Returns False if a guard trips (not expected;
    the caller then keeps f*).

    Crossover: while the free forces' columns are dependent, move along their null space
    (downhill in fuel, or where it is flat along the null-space part of the first free force
    that has one) until a force reaches a bound; this keeps A x and never adds fuel. The free
    columns, completed with bound ones in index order, then form a basis, and a bounded-
    variable primal simplex with Bland's rule (lowest index enters, lowest index leaves among
    ties) finishes. The basic forces come from a direct solve with the basis.
    """
    m, n = A.shape
    W, tau, W2, tau2, y, z, rhs, d, a, col = _scratch(work, m, n)
    cols, piv, free = iwork[:n], iwork[n:2 * n], iwork[4 * n:5 * n]
    for i in range(m):
        s = 0.0
        for j in range(n):
            s += A[i, j] * f_star[j]
        a[i] = s
    for j in range(n):
        x[j] = f_star[j]
        free[j] = 1 if 0.0 < x[j] < u[j] else 0  # stage 1 leaves the others exactly on a bound

    vertex = False
    for _ in range(n + 1):  # crossover to a vertex
        k = _gather(free, cols)
        r = _qr_pivoted(A, cols, k, rtol, W, tau, piv)
        if r == k:
            vertex = True
            break
        # d = -(c - pinv(A_S) A_S c), c = 1: the fuel gradient projected onto the null space.
        for i in range(m):
            s = 0.0
            for p in range(k):
                s += A[i, cols[p]]
            rhs[i] = s
        _min_norm_solve(W, tau, piv, m, k, r, rhs, z, W2, tau2, y)
        slope = 0.0
        for p in range(k):
            d[p] = z[p] - 1.0
            slope += d[p]
        if slope > -1e-12 * k:
            # Flat: the null-space part of e_p for the first p whose part has at least the mean
            # squared norm (k - r) / k, so it is far from zero.
            for q in range(k):
                for i in range(m):
                    rhs[i] = A[i, cols[q]]
                _min_norm_solve(W, tau, piv, m, k, r, rhs, z, W2, tau2, y)
                size = 0.0
                for p in range(k):
                    d[p] = (1.0 if p == q else 0.0) - z[p]
                    size += d[p] * d[p]
                if size >= 0.5 * (k - r) / k:
                    break
        leave = step_to_bound(x, u, cols, k, d)
        if leave < 0:
            return False
        free[leave] = 0
    if not vertex:
        return False

    # Complete the basis with bound columns, in index order, that keep it nonsingular: W, tau
    # hold the QR of the free columns; a column joins when its part outside their span exceeds
    # rtol times the largest column norm (the pivoted QR's rank test), and extends the QR.
    size = _gather(free, cols)
    r0 = abs(W[0, 0]) if size > 0 else 0.0
    for j in range(n):
        if size == m:
            break
        if free[j] != 0:
            continue
        norm2 = 0.0
        for i in range(m):
            y[i] = A[i, j]
            norm2 += y[i] * y[i]
        for p in range(size):
            _reflect(W, tau, p, y, m)
        out2 = 0.0
        for i in range(size, m):
            out2 += y[i] * y[i]
        scale = max(r0, math.sqrt(norm2))
        if out2 > 0.0 and math.sqrt(out2) > rtol * scale:
            for i in range(m):
                W[i, size] = y[i]
            _householder(W, tau, size, m, size + 1, math.sqrt(out2))
            free[j] = 1
            size += 1
            r0 = scale
    if size != m:
        return False
    basis = free

    tol_d = 1e-11  # on reduced costs (the cost is 1 per newton)
    for _ in range(50 * n + 50):
        k = _gather(basis, cols)
        if _qr_pivoted(A, cols, k, rtol, W, tau, piv) != m:
            return False
        _subset_rhs(A, x, basis, a, rhs)
        _min_norm_solve(W, tau, piv, m, k, m, rhs, z, W2, tau2, y)
        for p in range(k):
            x[cols[p]] = z[p]
        _ones_transposed_solve(W, tau, m, y)  # y = A_B^-T c_B (the prices), c = 1
        enter = -1
        for j in range(n):  # nonbasic forces sit exactly on 0 or u
            if basis[j] != 0:
                continue
            red = 1.0  # reduced cost c_j - A_j . y
            for i in range(m):
                red -= A[i, j] * y[i]
            if (red < -tol_d) if x[j] == 0.0 else (red > tol_d):
                enter = j
                break
        if enter < 0:
            # The rounding error of the basic forces is ~eps cond(A_B) |x|; the pivots' ratio
            # estimates the condition number.
            snap_to_bounds(x, u, cols, k, snap_tolerance(abs(W[0, 0]) / abs(W[m - 1, m - 1])))
            return True
        for i in range(m):
            rhs[i] = A[i, enter]
        _min_norm_solve(W, tau, piv, m, k, m, rhs, col, W2, tau2, y)  # its tableau column
        s = 1.0 if x[enter] == 0.0 else -1.0  # raise it from 0, or lower it from u
        tmin, leave, leave_hi = ratio_test(x, u, cols, k, col, s, enter)
        if leave < 0:
            x[enter] = u[enter] if s > 0 else 0.0
            continue
        x[enter] = tmin if s > 0 else u[enter] - tmin
        x[leave] = u[leave] if leave_hi else 0.0
        basis[enter], basis[leave] = 1, 0
    return False


def snap_to_bounds(x, u, cols, k, rel):
    """Basic forces x[cols[:k]] a rounding error away from a bound go onto it (no 1e-18 N
    commands to valves): those within ``rel`` times the largest basic force of 0, and those
    within ``rel u`` of u (rel: :func:`snap_tolerance` of the basis). The end of stage 2 on
    both paths and :func:`warm_basis_holds` (plain sequences work too)."""
    xb_max = -math.inf
    for p in range(k):
        xb_max = max(xb_max, x[cols[p]])
    snap = rel * xb_max
    for p in range(k):
        j = cols[p]
        if x[j] <= snap:
            x[j] = 0.0
        elif x[j] >= u[j] * (1 - rel):
            x[j] = u[j]


def snap_tolerance(cond):
    """Relative distance under which a basic force is taken to sit on its bound, for a basis of
    condition number ``cond``: 1e-12, or 100 eps cond where the basis is ill-conditioned."""
    return max(1e-12, 100.0 * 2.220446049250313e-16 * cond)


def _scratch(work, m, n):
    """Views of work: W (m, n), tau (m), W2 (n, m), tau2 (m), and six of max(m, n)."""
    o = 0
    W = work[o:o + m * n].reshape((m, n))
    o += m * n
    tau = work[o:o + m]
    o += m
    W2 = work[o:o + n * m].reshape((n, m))
    o += n * m
    tau2 = work[o:o + m]
    o += m
    L = max(m, n)
    y = work[o:o + L]
    v1 = work[o + L:o + 2 * L]
    v2 = work[o + 2 * L:o + 3 * L]
    v3 = work[o + 3 * L:o + 4 * L]
    v4 = work[o + 4 * L:o + 5 * L]
    v5 = work[o + 5 * L:o + 6 * L]
    return W, tau, W2, tau2, y, v1, v2, v3, v4, v5


# ---------------------------------------------------------------------------------------------
# Warm start: the last optimal basis, when it still holds


def warm_basis_holds(x, u, cols, k, rel):
    """Whether the remembered stage-2 basis is still primal feasible for a new request: its
    basic forces x[cols[:k]] (solved from the request with the non-basic forces on their
    bounds) all lie in [0, u] up to rounding (``rel``: :func:`snap_tolerance` of the basis).
    If so they are snapped as stage 2 snaps them (:func:`snap_to_bounds`) and True returned.

    Why that is the optimum: only the right-hand side of the stage-2 LP (the wrench) changed,
    so the basis's reduced costs are those it ended stage 2 with, non-negative at the forces
    on 0 and non-positive at those on u (dual feasible); primal feasible too, the basis is
    optimal. The one check of both paths (compiled kernel :func:`warm_start`, and
    ``ThrusterAllocator`` without numba); plain sequences work too."""
    xb_max = 0.0
    for p in range(k):
        xb_max = max(xb_max, x[cols[p]])
    for p in range(k):
        j = cols[p]
        if x[j] < -rel * xb_max or x[j] > u[j] * (1 + rel):
            return False
    snap_to_bounds(x, u, cols, k, rel)
    return True


def warm_start(B, u, w, f, memory, y, z, rhs):
    """f (n,), N = the least-fuel forces for the wrench w (nb,; base_link axes, N and N m)
    from the basis remembered in ``memory`` (:func:`_remembered`), when
    :func:`warm_basis_holds`: the other forces on their remembered bounds, the basic ones the
    least squares of the rest of w with the basis's columns of B (full column rank; from
    their QR, factored once when the basis was remembered). y, z, rhs: scratch (max(nb, n),).
    Returns False (f is then scratch) when no basis is remembered or it no longer holds; the
    caller then solves cold. That f makes w is for the caller to check (B f is the
    projection of w onto range(B))."""
    nb, n = B.shape
    state, _, cols, piv, Wc, tauc, rel, flags = memory
    if flags[WARM_BASIS] == 0:
        return False
    k = 0
    for j in range(n):
        f[j] = u[j] if state[j] == AT_MAX else 0.0
        k += state[j] == BASIC
    for i in range(nb):  # the basic forces are zero in f here
        s = w[i]
        for j in range(n):
            s -= B[i, j] * f[j]
        rhs[i] = s
    _min_norm_solve(Wc, tauc, piv, nb, k, k, rhs, z, Wc, tauc, y)  # full rank: R alone
    for p in range(k):
        f[cols[p]] = z[p]
    return warm_basis_holds(f, u, cols, k, rel[0])


def _remember_basis(B, x, u, rtol, work, iwork):
    """Keep the basis stage 2 ended with (iwork[4 n: 5 n], least_fuel's), the bound of each
    non-basic force of x, and the QR of the basis's columns of B, for :func:`warm_start`.
    Nothing is kept if those columns are numerically dependent (not expected: they are
    independent in A2 = U^T B)."""
    nb, n = B.shape
    basis = iwork[4 * n:5 * n]
    state, _, cols, piv, Wc, tauc, rel, flags = _remembered(work, iwork, nb, n)
    for j in range(n):
        state[j] = BASIC if basis[j] != 0 else (AT_MAX if x[j] == u[j] else AT_ZERO)
    k = _gather(basis, cols)
    if k == 0 or _qr_pivoted(B, cols, k, rtol, Wc, tauc, piv) != k:
        flags[WARM_BASIS] = 0
        return
    # The rounding of the basic forces is ~eps cond |x|; the pivots' ratio estimates cond.
    rel[0] = snap_tolerance(abs(Wc[0, 0]) / abs(Wc[k - 1, k - 1]))
    flags[WARM_BASIS] = 1


def partition_holds(x, g, u, state, n, tol):
    """Whether a remembered stage-1 partition (``state``: BASIC for a free force, AT_ZERO /
    AT_MAX for one on that bound) still solves BVLS for a new request: with the free forces x
    solved by least squares and g = B^T (w - B x) (:func:`_descent`), every free force lies in
    [0, u] and no bound force's gradient points into its box by more than ``tol``
    (:func:`kkt_tolerance`, BVLS's own stopping test). Those are the KKT conditions of the
    convex problem, so x is a minimiser; the achieved wrench B x is the unique optimal one.
    The one check of both paths; plain sequences work too."""
    for j in range(n):
        if state[j] == BASIC:
            if not 0.0 <= x[j] <= u[j]:
                return False
        elif (g[j] if state[j] == AT_ZERO else -g[j]) > tol:
            return False
    return True


def warm_least_squares(B, u, params, w, x, work, iwork):
    """Stage 1 from the remembered partition: x (n,), N = the free forces' least-norm least
    squares for w (nb,; base_link axes, N and N m), the others on their remembered bounds,
    when :func:`partition_holds`. Returns False (x is then scratch) when nothing is
    remembered or the partition no longer holds. The free columns' QR is the one factored
    when the partition was remembered."""
    nb, n = B.shape
    _, state, _, _, _, _, _, flags = _remembered(work, iwork, nb, n)
    if flags[WARM_PARTITION] == 0:
        return False
    Wp, taup, cols, piv = _partition_factors(work, iwork, nb, n)
    W2, tau2, y, z, rhs, g = _scratch(work, nb, n)[2:8]
    for j in range(n):
        x[j] = u[j] if state[j] == AT_MAX else 0.0
    for i in range(nb):  # the free forces are zero in x here
        s = w[i]
        for j in range(n):
            s -= B[i, j] * x[j]
        rhs[i] = s
    k = flags[PARTITION_SIZE]
    _min_norm_solve(Wp, taup, piv, nb, k, flags[PARTITION_RANK], rhs, z, W2, tau2, y)
    for p in range(k):
        x[cols[p]] = z[p]
    _descent(B, x, w, g)
    tol = kkt_tolerance(w, nb, params[P_WRENCH_SCALE], params[P_COLNORM_MAX])
    return partition_holds(x, g, u, state, n, tol)


def _remember_partition(B, x, u, rtol, work, iwork):
    """Keep stage 1's partition of x (free forces strictly inside their box) and the QR of its
    free columns of B, for :func:`warm_least_squares`."""
    nb, n = B.shape
    _, state, _, _, _, _, _, flags = _remembered(work, iwork, nb, n)
    Wp, taup, cols, piv = _partition_factors(work, iwork, nb, n)
    free = iwork[2 * n:3 * n]
    for j in range(n):
        state[j] = AT_ZERO if x[j] <= 0.0 else (AT_MAX if x[j] >= u[j] else BASIC)
        free[j] = 1 if state[j] == BASIC else 0
    k = _gather(free, cols)
    flags[PARTITION_SIZE] = k
    flags[PARTITION_RANK] = _qr_pivoted(B, cols, k, rtol, Wp, taup, piv)
    flags[WARM_PARTITION] = 1


# ---------------------------------------------------------------------------------------------
# Both stages


def allocate_forces(B, A2, u, params, w, f, work, iwork):
    """Thruster forces f (n,), N, each in [0, u], for the desired base wrench w (nb,): base_link
    axes about the base_link origin, N and N m. Returns the status bits (SATURATED,
    STAGE1_GUARD, STAGE2_KEPT, INVALID; 0: achieved to rounding).

    Stage 1 fixes the wrench B f* (w when achievable, else the achievable wrench closest to
    w); stage 2 (params[P_FUEL_OPTIMAL] != 0) picks the least total thrust that makes it, and
    is kept only if it does not move the wrench beyond rounding.

    Warm start (params[P_WARM_START] != 0, stage 2 on, |w| below WRENCH_CAP): each call leaves in iwork the partition stage 1
    ended with and the optimal basis stage 2 ended with; the next call tries them first, as
    the exact checks they are (only the request changed, so an optimal basis stays dual
    feasible and a partition's KKT conditions are re-checked in full):

    1. after an achieved request, the stage-2 basis alone (:func:`warm_start`): if it holds and
       its forces make w (residual within params[P_ACHIEVABLE_RTOL] |w|), they are the
       answer (status 0), with no stage 1 and no simplex;
    2. else stage 1 from the partition (:func:`warm_least_squares`), or BVLS where it fails;
    3. then stage 2 from the basis with the stage-1 wrench, or the simplex where it fails.

    Where several force sets tie for least fuel, a warm answer may be another of them than a
    cold one: the same wrench and the same fuel to rounding, and the same forces for the same
    sequence of requests since the scratch was fresh (or :func:`forget_basis`).
    """
    nb, n = B.shape
    m2 = A2.shape[0]
    o = 2 * nb * n + 2 * nb + 6 * max(nb, n)  # past what the stages use
    we, r, made = work[o:o + nb], work[o + nb:o + 2 * nb], work[o + 2 * nb:o + 3 * nb]
    x2 = work[o + 3 * nb:o + 3 * nb + n]
    memory = _remembered(work, iwork, nb, n)
    flags = memory[7]
    L = max(nb, n)
    y, z, rhs = work[o - 6 * L:o - 5 * L], work[o - 5 * L:o - 4 * L], work[o - 4 * L:o - 3 * L]
    status = 0
    big = 0.0
    for i in range(nb):
        if not abs(w[i]) < math.inf:  # NaN or Inf
            for j in range(n):
                f[j] = 0.0
            forget_basis(iwork)
            return INVALID
        big = max(big, abs(w[i]))
    scale = WRENCH_CAP / big if big > WRENCH_CAP else 1.0
    for i in range(nb):
        we[i] = w[i] * scale
    w_norm = _norm(we, nb)
    fuel_optimal = params[P_FUEL_OPTIMAL] != 0.0 and m2 > 0
    # Without stage 2 the stage-1 forces are the answer, and where they are not unique
    # (opposing thrusters) a warm partition could pick others than BVLS: always cold there.
    warm = params[P_WARM_START] != 0.0 and scale == 1.0 and fuel_optimal
    if not warm:
        forget_basis(iwork)
    if warm and flags[WARM_ACHIEVED] != 0 and warm_start(B, u, we, f, memory, y, z, rhs):
        if _residual_norm(B, f, we, r) <= params[P_ACHIEVABLE_RTOL] * w_norm:
            return 0
    flags[WARM_ACHIEVED] = 0
    if not (warm and warm_least_squares(B, u, params, we, f, work, iwork)):
        flags[WARM_PARTITION] = 0
        if not bounded_least_squares(B, u, we, params[P_RTOL_B], params[P_WRENCH_SCALE],
                                     params[P_COLNORM_MAX], f, work, iwork):
            status |= STAGE1_GUARD
        elif warm:
            _remember_partition(B, f, u, params[P_RTOL_B], work, iwork)
    r_norm = _residual_norm(B, f, we, r)  # on the scaled request: no overflow
    if r_norm > params[P_ACHIEVABLE_RTOL] * w_norm:
        status |= SATURATED
    any_force = False
    for j in range(n):
        any_force = any_force or f[j] != 0.0
    if fuel_optimal and any_force:
        for i in range(nb):  # the stage-1 wrench B f*: stage 2's right-hand side
            s = 0.0
            for j in range(n):
                s += B[i, j] * f[j]
            made[i] = s
        solved = warm and warm_start(B, u, made, x2, memory, y, z, rhs)
        if not solved:
            flags[WARM_BASIS] = 0
            solved = least_fuel(A2, u, f, params[P_RTOL_A2], x2, work, iwork)
            if solved and warm:
                _remember_basis(B, x2, u, params[P_RTOL_B], work, iwork)
        if solved:
            # Stage 2 cannot spoil stage 1 in exact arithmetic; this guards against rounding
            # in a badly conditioned basis of some unusual thruster layout.
            if _residual_norm(B, x2, we, r) <= r_norm + 1e-12 * (w_norm + params[P_WRENCH_SCALE]):
                for j in range(n):
                    f[j] = x2[j]
            else:
                status |= STAGE2_KEPT
        else:
            status |= STAGE2_KEPT
    if status == 0 and warm and flags[WARM_BASIS] != 0:
        flags[WARM_ACHIEVED] = 1
    return status


def _residual_norm(B, f, w, r):
    """||B f - w|| (r: scratch (nb,))."""
    nb, n = B.shape
    for i in range(nb):
        s = -w[i]
        for j in range(n):
            s += B[i, j] * f[j]
        r[i] = s
    return _norm(r, nb)


# The helpers numba must compile with allocate_forces (control/kernels/allocation.py registers them).
HELPERS = (snap_tolerance, snap_to_bounds, warm_basis_holds, warm_start, _remember_basis, forget_basis, _descent,
           kkt_tolerance, partition_holds, warm_least_squares, _remember_partition, _remembered, _partition_factors,
           workspace_sizes, allocation_workspace, _gather, _qr_pivoted, _householder, _reflect, _min_norm_solve,
           _ones_transposed_solve, _subset_rhs, _solve_free, _norm, _scratch, bounded_least_squares, ratio_test, step_to_bound,
           least_fuel, _residual_norm)
