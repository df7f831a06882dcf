"""Thruster allocation (desired base wrench -> thruster forces) and pulse-width modulation.

:class:`ThrusterAllocator` solves, for a desired base wrench w (base_link axes, about the
base_link origin; spatial [fx fy fz mx my mz], planar [fx fy mz]; N and N m),

    stage 1   f* = argmin ||B f - w||^2   s.t. 0 <= f <= f_max               (bounded least squares)
    stage 2   f  = argmin sum(f)          s.t. B f = B f*, 0 <= f <= f_max   (least fuel)

B is :func:`~freeflyer_control.physics.actuators.thruster_matrix`. Stage 1 fixes the wrench the
thrusters will make: w itself whenever w is achievable, otherwise the achievable wrench closest
to w (least squares, newtons and newton-metres weighted alike). That wrench B f* is unique even
where f* is not, so stage 2 may trade thrusters without giving up any accuracy: it keeps
B f = B f* as an equality (to rounding) and only picks the cheapest of those solutions, so
opposing thrusters that would cancel stay off and a zero wrench gets zero forces. A regulariser
(min ||B f - w||^2 + eps sum f, one solve) would move B f off w by O(eps): hence two stages.

Both stages are exact finite active-set methods, not iterative solvers with a tolerance:

- stage 1 is BVLS (Stark & Parker 1995), the algorithm of ``scipy.optimize.lsq_linear(...,
  method='bvls')`` with the same start; it stops at a KKT point and takes the free forces
  from a direct least-squares solve;
- stage 2 is a bounded-variable primal simplex with Bland's rule (which cannot cycle), started
  from f* after a crossover to a vertex; the basic forces come from a direct basis solve.

Both have one definition, the plain functions of
:mod:`~freeflyer_control.control.allocation_kernel` (loops over scalars, preallocated scratch,
least-norm subset solves from a Householder QR with column pivoting). With numba installed
(:func:`freeflyer_control.physics.kernels.available`) ``allocate`` runs them compiled
(:mod:`freeflyer_control.control.kernels.allocation`), the same function the compiled simulation
engine calls; the first use on a machine compiles them (10-30 s, then cached on disk, and the
log says so while it happens). Without numba, ``allocate`` runs the same algorithm written on
Python lists with the SVD of every column subset cached (the kernel run by the interpreter is
7-20 times slower than that). The two paths give the same forces to rounding on the bundled
layouts; where several force sets tie for least fuel, both break the tie by the same rule.
Median cost of one ``allocate`` (``bench/bench_allocation.py``, planar_4link and
spatial_6link, load average 1.7 on 2 cores), cold (unrelated requests): compiled 6-10 us (the
kernel alone 2.4-6.4 us in a compiled loop), list-based 42-57 us (planar) and 50-85 us
(spatial, achievable/saturated), against ~80-250 us for ``lsq_linear(method='bvls')`` alone and
~1.2-2 ms with ``linprog(method='highs')`` as stage 2. Warm (a closed loop's successive
requests, see ``ThrusterAllocator``): the kernel 0.4-0.75 us in a compiled loop, ``allocate``
~3.2-3.5 us from Python.
The tests check both stages against scipy and the two paths against each other.

:class:`PulseWidthModulator` turns the continuous forces into valve on/off commands for
thrusters that can only be fully on or off.

No ROS here. To allocate a wrench given in world axes, convert it first with
:func:`~freeflyer_control.physics.actuators.world_wrench_to_local`.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
from dataclasses import dataclass

import numpy as np

from freeflyer_control.control.allocation_kernel import (
    AT_MAX,
    AT_ZERO,
    BASIC,
    INVALID,
    N_PARAMS,
    SATURATED,
    STAGE1_GUARD,
    WRENCH_CAP,
    allocation_workspace,
    allocator_arrays,
    forget_basis,
    kkt_tolerance,
    partition_holds,
    ratio_test,
    step_to_bound,
    snap_to_bounds,
    snap_tolerance,
    warm_basis_holds,
)
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.kernels import compile_warning
from freeflyer_control.physics.actuators import thruster_matrix

_log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------------------
# Allocation


@dataclass(frozen=True)
class Allocation:
    """The result of one allocation (base_link axes, about the base_link origin).

    Attributes:
        forces: thruster forces (n,), N, robot-config order, each in [0, max_force].
        achieved: the base wrench those forces make, B @ forces (nb,), N and N m.
        residual: achieved - requested (nb,); zero to rounding when the request is achievable.
        saturated: True when the request was not achievable with forces in [0, max_force]
            (its least-squares residual exceeds ``achievable_rtol * |requested|``); the
            thrusters then make the achievable wrench closest to the request.
    """

    forces: np.ndarray
    achieved: np.ndarray
    residual: np.ndarray
    saturated: bool


@dataclass(frozen=True)
class _Subset:
    """What the solvers need about one subset of the columns of a matrix A (m x n)."""

    idx: np.ndarray  # the columns, ascending
    cols: list[int]  # the same as Python ints
    outside: np.ndarray  # (n,) 1.0 off the subset, 0.0 on it: x * outside is x with the subset zeroed
    pinv: np.ndarray  # (k, m) Moore-Penrose pseudo-inverse of A[:, idx]: min-norm least squares
    null: np.ndarray  # (k, k - rank) orthonormal basis of the null space of A[:, idx]
    rank: int
    # With a cost vector c (stage 2) only:
    descent: list[float] | None = None  # a null-space direction along which c.x falls (or is flat)
    reduced: list[float] | None = None  # (n,) reduced costs c - A^T pinv^T c[idx], for a basis
    tableau: np.ndarray | None = None  # (k, n) pinv @ A: basic values per unit of each column
    cond: float = 1.0  # s_max / s_min of a basis


def _flat_direction(projector: np.ndarray, rank: int) -> np.ndarray:
    """Where the cost is flat along the null space of a subset's columns: the null-space part
    (I - pinv A_S A_S) e_q of the first unit vector e_q whose part has at least half the mean
    squared norm (k - rank) / k, so it is far from zero. ``projector`` = pinv(A_S) A_S.

    Any null direction would do; this rule is the one the compiled kernel uses
    (allocation_kernel.least_fuel), so both paths pick the same vertex among ties."""
    k = projector.shape[0]
    for q in range(k):
        d = -projector[:, q]
        d[q] += 1.0
        if d @ d >= 0.5 * (k - rank) / k:
            break
    return d


class _SubsetCache:
    """:class:`_Subset` of column subsets of A, keyed by the bitmask of their columns.

    A controller meets only a handful of active sets, so after the first ticks every solve is
    a small matrix product instead of a LAPACK call.
    """

    MAX_ENTRIES = 4096  # bounds the memory for robots with many thrusters; cleared when full

    def __init__(self, A: np.ndarray, cost: np.ndarray | None = None):
        self.A = A
        self.cost = cost
        self._rtol = 1e-12 * max(A.shape)
        self._cache: dict[int, _Subset] = {}

    def get(self, bits: int) -> _Subset:
        sub = self._cache.get(bits)
        if sub is None:
            if len(self._cache) >= self.MAX_ENTRIES:
                self._cache.clear()
            sub = self._cache[bits] = self._compute(bits)
        return sub

    def _compute(self, bits: int) -> _Subset:
        A, c = self.A, self.cost
        m, n = A.shape
        cols = [j for j in range(n) if bits >> j & 1]
        idx = np.array(cols, dtype=int)
        outside = np.ones(n)
        outside[idx] = 0.0
        k = len(cols)
        if k == 0:
            return _Subset(idx, cols, outside, np.zeros((0, m)), np.zeros((0, 0)), 0)
        U, s, Vt = np.linalg.svd(A[:, idx], full_matrices=True)
        rank = int(np.sum(s > self._rtol * s[0])) if s[0] > 0 else 0
        pinv = (Vt[:rank].T / s[:rank]) @ U[:, :rank].T
        null = Vt[rank:].T.copy()
        descent = reduced = tableau = None
        cond = 1.0
        if c is not None:
            if rank < k:
                cf = c[idx]
                d = -(null @ (null.T @ cf))
                if cf @ d > -1e-12 * np.abs(cf).sum():
                    d = _flat_direction(pinv @ A[:, idx], rank)
                descent = d.tolist()
            elif rank == k == m:  # a basis
                reduced = (c - A.T @ (pinv.T @ c[idx])).tolist()
                tableau = pinv @ A
                cond = float(s[0] / s[rank - 1])
        return _Subset(idx, cols, outside, pinv, null, rank, descent, reduced, tableau, cond)


def _kernel_function():
    """allocation_kernel.allocate_forces as numba's dispatcher (it compiles on its first
    call), or None without numba."""
    from freeflyer_control.physics import kernels

    if not kernels.available():
        return None
    from freeflyer_control.control.kernels.allocation import allocate_forces

    return allocate_forces


@functools.lru_cache(maxsize=None)
def _compiled_kernel():
    """allocation_kernel.allocate_forces compiled by numba, or None without numba. The first
    use on a machine compiles it (10-30 s, then cached on disk): the log says so while it
    happens."""
    allocate_forces = _kernel_function()
    if allocate_forces is None:
        return None
    scratch = allocation_workspace(3, 1)  # any shapes: one compiled signature serves all
    with compile_warning("the thruster allocator", _log, "10-30 s"):
        allocate_forces(np.zeros((3, 1)), np.zeros((0, 1)), np.ones(1), np.zeros(N_PARAMS), np.zeros(3),
                        np.zeros(1), *scratch)
    return allocate_forces


class ThrusterAllocator:
    """Thruster forces for a desired base wrench (the problem is in the module docstring).

    Args:
        ff: the robot; its thrusters give B (``thruster_matrix(ff)``) and the force limits.
        fuel_optimal: run stage 2 (least total thrust among the forces that make the stage-1
            wrench). Off: return the stage-1 forces, which make the same wrench but may fire
            opposing thrusters at once. Stage 2 is about half the cost of a call.
        achievable_rtol: a request counts as achievable (``saturated`` False) when its
            least-squares residual is at most this times its norm.
        warm_start: try the last optimal basis and partition first (below). Off: every
            request is solved cold, and the forces depend on the request alone.

    Stateful (warm start, on by default with ``fuel_optimal``): each call remembers the
    optimal basis stage 2 ended with (which thrusters are free, which sit on 0 or on their
    max) and the partition stage 1 ended with, and the next call tries them first, as the
    exact checks they are: only the request changed, so an optimal basis stays dual feasible
    and is optimal again wherever its basic forces, from one small direct solve, lie in
    [0, max] (``allocation_kernel.warm_basis_holds``); a partition is re-checked against the
    full KKT conditions of stage 1 (``partition_holds``). Both paths run those same checks in
    the same order (``allocation_kernel.allocate_forces``). A controller's successive
    requests differ little, so most ticks skip BVLS and the simplex, saturated ones included.

    What is guaranteed, whatever came before: for an achievable request B f = w to rounding,
    0 <= f <= max and the least total thrust to rounding; for one out of reach, the closest
    achievable wrench and the least thrust that makes it, ``saturated`` as before. Where
    several force sets tie for least fuel (e.g. a pure torque made by either couple of
    planar_4link), which one is returned may depend on the requests before (the vertex the
    remembered basis sits on): the same sequence of requests since construction or
    :meth:`reset` gives the same forces, and a fresh or reset allocator answers its first
    request as the cold solve does. A non-finite request forgets what was remembered;
    ``fuel_optimal=False``, ``warm_start=False`` and requests beyond ``WRENCH_CAP`` are always
    solved cold. Calls are serialised by a lock (the state is shared).
    """

    def __init__(self, ff: FreeFlyerModel, *, fuel_optimal: bool = True, achievable_rtol: float = 1e-9,
                 warm_start: bool = True):
        self._setup(thruster_matrix(ff), ff.thruster_max_forces, fuel_optimal, achievable_rtol, warm_start)

    @classmethod
    def from_matrix(
        cls,
        B: np.ndarray,
        max_forces: np.ndarray,
        *,
        fuel_optimal: bool = True,
        achievable_rtol: float = 1e-9,
        warm_start: bool = True,
    ) -> "ThrusterAllocator":
        """An allocator for any thruster matrix B (nb x n, wrench per newton) and force limits
        (n,), N."""
        self = cls.__new__(cls)
        self._setup(B, max_forces, fuel_optimal, achievable_rtol, warm_start)
        return self

    def _setup(self, B, max_forces, fuel_optimal: bool, achievable_rtol: float, warm_start: bool) -> None:
        B = np.array(B, dtype=float)
        u = np.array(max_forces, dtype=float).reshape(-1)
        if B.ndim != 2 or B.shape[1] != u.size:
            raise ValueError(
                f"thruster matrix must be (nb x n) with n = len(max_forces) = {u.size}, got shape {B.shape}")
        if not (np.isfinite(B).all() and np.isfinite(u).all()):
            raise ValueError("thruster matrix and max forces must be finite")
        if (u <= 0).any():
            raise ValueError(f"every thruster max force must be > 0 N, got {u.tolist()}")
        if not achievable_rtol >= 0:
            raise ValueError(f"achievable_rtol must be >= 0, got {achievable_rtol}")
        B.setflags(write=False)
        u.setflags(write=False)
        self.B = B
        self.max_forces = u
        self.fuel_optimal = bool(fuel_optimal)
        self.achievable_rtol = float(achievable_rtol)
        self.warm_start = bool(warm_start)
        self.nb, self.n = B.shape
        self._u = u.tolist()
        self._Bt = np.ascontiguousarray(B.T)
        self._ls = _SubsetCache(B)
        # Stage 2 works on independent rows: with U spanning range(B), U^T B f = U^T a has full
        # row rank (the simplex needs a square nonsingular basis) and is equivalent to
        # B f = a, because B f and a = B f* both lie in range(B).
        rank = 0
        if self.n:
            U, s, _ = np.linalg.svd(B, full_matrices=False)
            rank = int(np.sum(s > 1e-12 * max(B.shape) * s[0])) if s[0] > 0 else 0
            self._A2 = U[:, :rank].T @ B
        else:
            self._A2 = np.zeros((0, 0))
        self._m2 = rank
        self._lp = _SubsetCache(self._A2, cost=np.ones(self.n))  # every thruster burns alike
        # Rounding in a residual is ~eps (|w| + sum_j |B_j| u_j); the tolerances scale with it.
        colnorm = np.linalg.norm(B, axis=0)
        self._wrench_scale = float(colnorm @ u)
        self._colnorm_max = float(colnorm.max()) if self.n else 0.0
        # Inside fastpath.deferred() (the compiled engine's Python loop) the kernel compiles at
        # its first call, if one comes: a run that never fires a thruster never compiles it.
        self._compiled = (_compiled_kernel() if fastpath.warming() else _kernel_function()) if self.n else None
        self._lock = threading.Lock()  # the scratch and the warm start are shared state
        if self._compiled is not None:
            self._arrays = allocator_arrays(B, u, fuel_optimal, achievable_rtol, warm_start)
            self._work = allocation_workspace(self.nb, self.n)  # holds the compiled warm start
        self.reset()

    def reset(self) -> None:
        """Forget what the warm start remembers (stage 2's basis, stage 1's partition): the
        next ``allocate`` solves cold, exactly as a fresh allocator does. Never needed for
        correctness (the warm checks are exact); it makes a restart reproduce a fresh run."""
        with self._lock:
            self._forget()
            if self._compiled is not None:
                forget_basis(self._work[1])

    def allocate(self, wrench_base: np.ndarray) -> Allocation:
        """Thruster forces for ``wrench_base``: the desired base wrench (nb,) in base_link
        axes, about the base_link origin, N and N m.

        Raises:
            ValueError: for a wrench of the wrong size or with NaN/Inf entries.
        """
        w = np.asarray(wrench_base, dtype=float).reshape(-1)
        if w.size != self.nb:
            kind = "spatial [fx, fy, fz, mx, my, mz]" if self.nb == 6 else "planar [fx, fy, mz]"
            kind = kind if self.nb in (3, 6) else "one per row of the thruster matrix"
            raise ValueError(f"base wrench must have {self.nb} entries ({kind}), got {w.size}")
        if self._compiled is not None:  # the kernel checks finiteness itself (INVALID)
            f = np.empty(self.n)
            w = np.ascontiguousarray(w)
            with self._lock:
                status = self._compiled(*self._arrays, w, f, *self._work)
            if status & INVALID:
                raise ValueError(f"base wrench contains NaN or Inf: {w.tolist()}")
            if not status & STAGE1_GUARD:
                achieved = self.B.dot(f)
                return Allocation(f, achieved, achieved - w, bool(status & SATURATED))
        if not np.isfinite(w).all():
            self._forget()  # as the kernel does: a refused request restarts cold
            raise ValueError(f"base wrench contains NaN or Inf: {w.tolist()}")
        if self.n == 0:
            return Allocation(np.zeros(0), np.zeros(self.nb), -w, bool(np.any(w)))
        with self._lock:
            return self._allocate_lists(w)

    def _allocate_lists(self, w: np.ndarray) -> Allocation:
        """``allocate`` without numba (or after the kernel's stage-1 guard tripped): the same
        algorithm on Python lists with cached subset SVDs, and the same warm start, in the
        same order (``allocation_kernel.allocate_forces``)."""
        # A request beyond WRENCH_CAP is solved scaled down to it (see allocation_kernel); the
        # norms are taken on that scaled request so that no square overflows.
        big = float(np.abs(w).max()) if w.size else 0.0
        ws = w * (WRENCH_CAP / big) if big > WRENCH_CAP else w
        w_norm = math.hypot(*ws.tolist())
        warm = self.warm_start and self.fuel_optimal and ws is w  # as allocation_kernel decides
        if not warm:
            self._forget()
        if self._achieved:
            f = self._warm_basis(ws)
            if f is not None:
                achieved = self.B.dot(f)
                if math.hypot(*(achieved - w).tolist()) <= self.achievable_rtol * w_norm:
                    return Allocation(f, achieved, achieved - w, False)
        self._achieved = False
        f = self._warm_least_squares(ws) if warm else None
        if f is None:
            self._partition = None
            f = self._bounded_least_squares(ws)
            if warm:
                u = self._u
                state = [AT_ZERO if fj <= 0.0 else (AT_MAX if fj >= u[j] else BASIC)
                         for j, fj in enumerate(f.tolist())]
                self._partition = (sum(1 << j for j, c in enumerate(state) if c == BASIC), state)
        achieved = self.B.dot(f)
        r_norm = math.hypot(*(achieved - ws).tolist())
        saturated = r_norm > self.achievable_rtol * w_norm
        kept = False  # stage 2 failed or would lose accuracy
        if self.fuel_optimal and any(f.tolist()):
            f2 = self._warm_basis(achieved) if warm else None
            if f2 is None:
                self._basis = None
                f2, basis = self._least_fuel(f)
                if f2 is not None and warm:  # remembered as bitmasks: (basis, forces on their max)
                    self._basis = (basis, sum(1 << j for j, fj in enumerate(f2.tolist())
                                              if fj == self._u[j] and not basis >> j & 1))
            kept = f2 is None
            if f2 is not None:
                a2 = self.B.dot(f2)
                # Stage 2 cannot spoil stage 1 in exact arithmetic; this guards against rounding
                # in a badly conditioned basis of some unusual thruster layout.
                if math.hypot(*(a2 - ws).tolist()) <= r_norm + 1e-12 * (w_norm + self._wrench_scale):
                    f, achieved = f2, a2
                else:
                    kept = True
        self._achieved = not saturated and not kept and self._basis is not None
        r = achieved - w
        return Allocation(f, achieved, r, bool(saturated))

    # -- warm start ------------------------------------------------------------------------

    def _forget(self) -> None:
        """Drop what the warm start remembers (the list-based path's copy of the kernel's)."""
        self._basis: tuple[int, int] | None = None  # stage 2's basis, forces on their max (bitmasks)
        self._partition: tuple[int, list[int]] | None = None  # stage 1's free forces (bitmask), codes
        self._achieved = False  # the last request was achieved, with a basis remembered

    def _warm_basis(self, w: np.ndarray) -> np.ndarray | None:
        """The least-fuel forces for the wrench w from the remembered basis, or None when
        there is none or it no longer holds (``allocation_kernel.warm_basis_holds``, the
        compiled path's check): the basic forces solved with the basis's columns of B (cached
        pinv), the others on their remembered bounds. The caller checks that they make w."""
        if self._basis is None:
            return None
        basis, at_max = self._basis
        sub = self._ls.get(basis)
        if sub.rank != len(sub.cols):
            return None
        u = self._u
        x = np.array([u[j] if at_max >> j & 1 else 0.0 for j in range(self.n)])
        xl = x.tolist()
        for k, xj in zip(sub.cols, sub.pinv.dot(w - self.B.dot(x)).tolist()):
            xl[k] = xj
        if not warm_basis_holds(xl, u, sub.cols, len(sub.cols), snap_tolerance(self._lp.get(basis).cond)):
            return None
        return np.array(xl)

    def _warm_least_squares(self, w: np.ndarray) -> np.ndarray | None:
        """Stage 1 from the remembered partition, or None when there is none or it no longer
        holds (``allocation_kernel.partition_holds``, the compiled path's check): the free
        forces' least squares (cached pinv), the others on their remembered bounds."""
        if self._partition is None:
            return None
        free, state = self._partition
        u = self._u
        x = np.array([u[j] if c == AT_MAX else 0.0 for j, c in enumerate(state)])
        sub = self._ls.get(free)
        if sub.cols:
            x[sub.idx] = sub.pinv.dot(w - self.B.dot(x))
        g = self._Bt.dot(w - self.B.dot(x)).tolist()
        tol = kkt_tolerance(w, self.nb, self._wrench_scale, self._colnorm_max)
        return x if partition_holds(x.tolist(), g, u, state, self.n, tol) else None

    # -- stage 1 ---------------------------------------------------------------------------

    def _bvls_start(self, w: np.ndarray) -> tuple[np.ndarray, int]:
        """A feasible start whose free forces minimise the residual given the bound ones (BVLS
        needs that): solve with every force free, put the forces that leave their box on the
        bound they crossed, solve again for the rest, until none leaves. Often that is already
        the answer; it saves most of BVLS's one-force-at-a-time steps (scipy's start too).
        Returns the forces and the bitmask of the free ones."""
        B, u = self.B, self._u
        x = np.zeros(self.n)
        free = (1 << self.n) - 1
        while free:
            sub = self._ls.get(free)
            z = sub.pinv.dot(w - B.dot(x * sub.outside)).tolist()
            crossed = False
            for k, j in enumerate(sub.cols):
                zj = z[k]
                if zj <= 0.0:
                    x[j], free, crossed = 0.0, free ^ (1 << j), True
                elif zj >= u[j]:
                    x[j], free, crossed = u[j], free ^ (1 << j), True
                else:
                    x[j] = zj
            if not crossed:
                break
        return x, free

    def _bounded_least_squares(self, w: np.ndarray) -> np.ndarray:
        """BVLS: min ||B f - w|| s.t. 0 <= f <= u.

        Invariants: free forces lie strictly inside their bounds, the others exactly on 0 or
        u, and after each outer step the free forces minimise the residual given the bound
        ones. Each outer step frees the bound force whose gradient points into the box most
        steeply; the inner loop moves the free forces towards their unconstrained optimum,
        putting back on its bound any force that reaches one. The objective falls strictly at
        every outer step, so no active set repeats, and the loop ends at a KKT point.
        """
        B, Bt, u, n = self.B, self._Bt, self._u, self.n
        tol = kkt_tolerance(w, self.nb, self._wrench_scale, self._colnorm_max)
        x, free = self._bvls_start(w)
        skip = 0  # forces that rounding made move the wrong way when freed (rare)
        for _ in range(10 * n + 10):
            g = Bt.dot(w - B.dot(x)).tolist()  # minus the gradient of 1/2 ||B f - w||^2
            xl = x.tolist()
            t, best = -1, tol
            for j in range(n):
                if (free | skip) >> j & 1:
                    continue
                gj = g[j] if xl[j] == 0.0 else -g[j]  # > 0: moving off the bound helps
                if gj > best:
                    t, best = j, gj
            if t < 0:
                return x
            t_from = xl[t]
            free |= 1 << t
            first = True
            while free:
                sub = self._ls.get(free)
                z = sub.pinv.dot(w - B.dot(x * sub.outside))
                zl = z.tolist()
                if first:
                    first = False
                    zt = zl[sub.cols.index(t)]
                    if (zt <= t_from) if t_from == 0.0 else (zt >= t_from):
                        free ^= 1 << t  # its gradient was at the rounding level: try another
                        skip |= 1 << t
                        break
                # Step from x towards z up to the first bound; forces that reach one leave.
                xl = x.tolist()
                alpha, hits = 1.0, []
                for k, j in enumerate(sub.cols):
                    zj, xj = zl[k], xl[j]
                    if zj <= 0.0:
                        hits.append((xj / (xj - zj), j, 0.0))  # xj > 0 >= zj: no 0/0
                    elif zj >= u[j]:
                        hits.append(((u[j] - xj) / (zj - xj), j, u[j]))  # xj < u <= zj
                    else:
                        continue
                    alpha = min(alpha, hits[-1][0])
                if not hits:
                    x[sub.idx] = z
                    break
                xf = x[sub.idx]
                x[sub.idx] = xf + alpha * (z - xf)
                for step, j, bound in hits:
                    xj = x[j]
                    if step <= alpha or xj <= 0.0 or xj >= u[j]:
                        x[j] = bound
                        free ^= 1 << j
            if not skip >> t & 1:
                skip = 0  # progress was made: every force may be tried again
        # Not reached in exact arithmetic (finite active sets, strictly falling objective);
        # fall back to scipy's implementation of the same algorithm rather than fail a tick.
        from scipy.optimize import lsq_linear

        return np.clip(lsq_linear(B, w, bounds=(0.0, self.max_forces), method="bvls", tol=1e-12).x,
                       0.0, self.max_forces)

    # -- stage 2 ---------------------------------------------------------------------------

    def _least_fuel(self, f_star: np.ndarray) -> tuple[np.ndarray | None, int]:
        """min sum(f) s.t. A f = A f*, 0 <= f <= u (A = the independent rows of B), from f*.

        Crossover: while the free forces' columns are dependent, move along their null space
        (downhill in fuel, or either way where it is flat) until a force reaches a bound; this
        keeps A f and never adds fuel. The free columns, completed with bound ones, then form
        a basis, and a bounded-variable primal simplex with Bland's rule (lowest index enters,
        lowest index leaves among ties) finishes. Returns the forces and the bitmask of the
        final basis, or (None, 0) if an iteration guard trips (not expected; the caller then
        keeps f*).
        """
        A, u, n, m = self._A2, self._u, self.n, self._m2
        a = A.dot(f_star)
        xl = f_star.tolist()
        free = 0
        for j in range(n):
            if 0.0 < xl[j] < u[j]:  # stage 1 leaves the other forces exactly on a bound
                free |= 1 << j

        for _ in range(n + 1):  # crossover to a vertex
            sub = self._lp.get(free)
            if sub.rank == len(sub.cols):
                break
            leave = step_to_bound(xl, u, sub.cols, len(sub.cols), sub.descent)
            if leave < 0:
                return None, 0  # a zero null-space direction: cannot happen with an SVD basis
            free ^= 1 << leave
        else:
            return None, 0

        basis, size = free, free.bit_count()
        for j in range(n):  # complete the basis with bound columns that keep it nonsingular
            if size == m:
                break
            if not basis >> j & 1 and self._lp.get(basis | 1 << j).rank == size + 1:
                basis, size = basis | 1 << j, size + 1
        if size != m:
            return None, 0

        tol_d = 1e-11  # on reduced costs (the cost is 1 per newton)
        for _ in range(50 * n + 50):
            sub = self._lp.get(basis)
            xB = sub.pinv.dot(a - A.dot(np.array(xl) * sub.outside)).tolist()
            for k, j in enumerate(sub.cols):
                xl[j] = xB[k]
            red = sub.reduced
            enter = -1
            for j in range(n):  # nonbasic forces sit exactly on 0 or u
                if not basis >> j & 1 and ((red[j] < -tol_d) if xl[j] == 0.0 else (red[j] > tol_d)):
                    enter = j
                    break
            if enter < 0:
                snap_to_bounds(xl, u, sub.cols, len(sub.cols), snap_tolerance(sub.cond))
                return np.array(xl), basis
            s = 1.0 if xl[enter] == 0.0 else -1.0  # raise it from 0, or lower it from u
            col = sub.tableau[:, enter].tolist()
            tmin, leave, leave_hi = ratio_test(xl, u, sub.cols, len(sub.cols), col, s, enter)
            if leave < 0:
                xl[enter] = u[enter] if s > 0 else 0.0
                continue
            xl[enter] = tmin if s > 0 else u[enter] - tmin
            xl[leave] = u[leave] if leave_hi else 0.0
            basis ^= (1 << enter) | (1 << leave)
        return None, 0


# ---------------------------------------------------------------------------------------------
# Pulse-width modulation


class PulseWidthModulator:
    """On/off valve commands whose average force follows the requested forces.

    Time is cut into PWM periods [k T, (k+1) T) (k = 0, 1, ...; T = ``period``, s). At the
    first ``update`` in a period the request is sampled and turned into an on-time
    tau = f / f_max * T per thruster; the valve is open for the first tau of the period (force
    f_max) and shut for the rest. Requests arriving later in the same period wait for the next.
    Call ``update`` at every period start (a control rate that divides the period does): a
    period first seen late is sampled late, and its pulse is cut short by the delay.

    Minimum impulse bit: a valve cannot open for less than ``min_on_time``. On-times below it
    are quantized to 0 or ``min_on_time`` (whichever is nearer) and the error is carried into
    the next period's on-time (first-order delta-sigma modulation), so a small request is met
    on average by occasional minimum pulses instead of being lost (dead zone) or inflated
    (rounding every pulse up). The carry stays within +-min_on_time/2, so over N periods of a
    constant request the average force is within f_max * min_on_time / (2 N T) of it. On-times
    at or above ``min_on_time`` are used as they are (no minimum off-time; at most T). A zero
    request drops the carry: a thruster told to stop does not fire a late pulse.

    Args:
        max_forces: force of each thruster while its valve is open, N (n,), > 0.
        period: PWM period T, s, > 0.
        min_on_time: shortest valve opening, s, in [0, period].
    """

    def __init__(self, max_forces: np.ndarray, period: float, min_on_time: float = 0.0):
        f_max = np.array(max_forces, dtype=float).reshape(-1)
        if f_max.size == 0 or not np.isfinite(f_max).all() or (f_max <= 0).any():
            raise ValueError(f"max_forces must be one or more finite forces > 0 N, got {f_max.tolist()}")
        if not (np.isfinite(period) and period > 0):
            raise ValueError(f"PWM period must be a finite time > 0 s, got {period}")
        if not (np.isfinite(min_on_time) and min_on_time >= 0):
            raise ValueError(f"min_on_time must be a finite time >= 0 s, got {min_on_time}")
        if min_on_time > period:
            raise ValueError(
                f"min_on_time ({min_on_time} s) must not exceed the PWM period ({period} s): "
                "lengthen the period or shorten the minimum on-time")
        self.max_forces = f_max
        self.period = float(period)
        self.min_on_time = float(min_on_time)
        self.reset()

    def reset(self) -> None:
        """Forget the carried on-time error and the current period (e.g. after a pause)."""
        self._carry = np.zeros(self.max_forces.size)
        self._period_index: int | None = None
        self._on_times = np.zeros(self.max_forces.size)

    def duty(self, forces: np.ndarray) -> np.ndarray:
        """On-times (n,), s, in {0} U [min_on_time, period], for one period of ``forces`` (N,
        clipped to [0, max_force]). Advances the delta-sigma carry by one period."""
        f = np.asarray(forces, dtype=float).reshape(-1)
        if f.size != self.max_forces.size:
            raise ValueError(
                f"forces must have {self.max_forces.size} entries (one per thruster), got {f.size}")
        if not np.isfinite(f).all():
            raise ValueError(f"forces contain NaN or Inf: {f.tolist()}")
        f = np.minimum(np.maximum(f, 0.0), self.max_forces)
        T, t_min = self.period, self.min_on_time
        carry = np.where(f > 0, self._carry, 0.0)
        wanted = f / self.max_forces * T + carry
        small = wanted < t_min
        on = np.where(small, np.where(wanted >= 0.5 * t_min, t_min, 0.0), np.minimum(wanted, T))
        self._carry = wanted - on
        return on

    def update(self, t: float, forces: np.ndarray) -> np.ndarray:
        """Valve states (n,) bool at time ``t`` (s, non-decreasing between calls); ``forces``
        (N) are sampled when ``t`` is the first call in a new period."""
        if not np.isfinite(t):
            raise ValueError(f"time must be finite, got {t}")
        # The 1e-9 keeps t = k T computed in floating point (0.7 / 0.1 = 6.999...) in period k.
        k = math.floor(t / self.period + 1e-9)
        if self._period_index is None or k > self._period_index:
            self._on_times = self.duty(forces)
            self._period_index = k
        elif k < self._period_index:
            raise ValueError(
                f"time went backwards: t = {t} s is before the current PWM period "
                f"(starting at {self._period_index * self.period} s); call reset() to restart")
        phase = max(t - k * self.period, 0.0)
        return phase < self._on_times
