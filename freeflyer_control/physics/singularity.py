"""How close a (generalized) Jacobian is to losing rank.

For a free-floating robot these are *dynamic* singularities (Papadopoulos): they depend on the
mass properties as well as the kinematics, and resolved-rate control fails at them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SingularityMeasures:
    """Attributes:
    sigma_min: smallest singular value (0 at a singularity); units of the matrix entries.
    manipulability: Yoshikawa's sqrt(det(J J^T)) = product of the singular values.
    condition_number: sigma_max / sigma_min (inf at a singularity).
    rank: numerical rank (singular values above ``tol``).
    """

    sigma_min: float
    manipulability: float
    condition_number: float
    rank: int


def singularity_measures(matrix: np.ndarray, tol: float = 1e-9) -> SingularityMeasures:
    """Measures of an (m x n) Jacobian over its min(m, n) singular values.

    Args:
        matrix: e.g. ``GJM.matrix``; for a redundant arm (n > m) the measures concern the task
            directions, for a deficient one (n < m) the reachable ones.
        tol: singular values below ``tol * sigma_max`` count as zero for the rank.
    """
    s = np.linalg.svd(np.asarray(matrix, dtype=float), compute_uv=False)
    if s.size == 0:
        return SingularityMeasures(0.0, 0.0, float("inf"), 0)
    smin, smax = float(s[-1]), float(s[0])
    cond = smax / smin if smin > 0 else float("inf")
    rank = int(np.sum(s > tol * max(smax, np.finfo(float).tiny)))
    return SingularityMeasures(smin, float(np.prod(s)), cond, rank)
