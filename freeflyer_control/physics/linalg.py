"""Small dense linear algebra for the hot paths (control ticks, plant steps).

NumPy's generic ufunc machinery costs several microseconds per call on 3-vectors and 6x6
systems, more than the arithmetic; these do the same work with less overhead (their effect
shows in the GJM and H*/C* rows of bench/bench_core.py). Use them only where a call sits in a
per-tick or per-step loop.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg.blas import dsymv
from scipy.linalg.lapack import dgesv, dposv


def all_finite(*vectors: np.ndarray) -> bool:
    """Every entry of these vectors is finite (no NaN, no inf).

    One Python sum each: NaN and inf propagate into it, so a finite sum proves the vector finite;
    only where it is not (a non-finite entry, or finite entries whose sum overflows) does the
    exact elementwise test decide. On Python floats, so nothing raises NumPy's floating-point
    warnings (x.x, as fast, warns "overflow" on entries above ~1e154). ~0.2 us on the few
    entries of a command vector, where ``np.isfinite(x).all()`` costs ~1.3 us: the control
    tick checks every command this way.
    """
    for x in vectors:
        if not math.isfinite(sum(x.tolist())) and not np.isfinite(x).all():
            return False
    return True


def cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b for 3-vectors (same result as np.cross, ~20x faster on single vectors)."""
    a0, a1, a2 = a.tolist()
    b0, b1, b2 = b.tolist()
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])


def solve(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Solve A X = B for a small square A (LAPACK gesv, LU with partial pivoting).

    Raises:
        np.linalg.LinAlgError: if A is exactly singular, as np.linalg.solve would.
    """
    _, _, x, info = dgesv(A, B)
    if info != 0:
        raise np.linalg.LinAlgError(
            f"singular matrix in solve (LAPACK gesv info={info}): a zero-mass body or a "
            "degenerate joint makes the inertia singular"
        )
    return x


def solve_spd_upper(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Solve A X = B for a symmetric positive definite A of which only the upper triangle is
    read (Pinocchio's CRBA fills only that one). LAPACK posv, Cholesky.

    Raises:
        np.linalg.LinAlgError: if A is not positive definite.
    """
    _, x, info = dposv(A, B, 0)  # lower=0, positional: f2py parses keywords slowly (~0.2 us)
    if info != 0:
        raise np.linalg.LinAlgError(not_positive_definite_message(info))
    return x


def cholesky_failure(info: int, M: np.ndarray) -> np.linalg.LinAlgError:
    """The error to raise when a compiled Cholesky of a block of the mass matrix M failed with
    potrf's ``info``: a non-finite M (NaN or Inf in the configuration) is said as such, since
    the NumPy path would not raise but return NaN."""
    if not np.isfinite(M).all():
        return np.linalg.LinAlgError(
            "mass matrix not finite: the configuration q holds a NaN or Inf; check the state")
    return np.linalg.LinAlgError(not_positive_definite_message(info))


def not_positive_definite_message(info: int) -> str:
    """The one-line error of a failed Cholesky factorisation (LAPACK potrf/posv ``info``)."""
    return (f"matrix not positive definite in solve (LAPACK posv info={info}): a zero-mass "
            "body or a degenerate joint makes the inertia singular")


def quadratic_form_upper(A: np.ndarray, x: np.ndarray) -> float:
    """x^T A x for a symmetric A of which only the upper triangle is read (BLAS symv; e.g. the
    kinetic energy 1/2 v^T M v from Pinocchio's CRBA, ~6x faster than symmetrising M first)."""
    return float(x @ dsymv(1.0, A, x, lower=0))
