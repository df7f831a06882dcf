"""How close a (generalized) Jacobian is to losing rank, block by block.

For a free-floating robot these are *dynamic* singularities (Papadopoulos): they depend on the
mass properties as well as the kinematics, and resolved-rate control fails at them.

Why blocks: the measures of a whole matrix can hide a singular block. A planar 2-link arm has a
3 x 2 GJM (rows vx, vy, wz). Stretched out (q2 = 0) its position block (vx, vy) is singular, the
end-effector cannot move along the arm, yet the whole matrix keeps two healthy singular values
through the wz row, so "the GJM" looks well conditioned there. Row sub-blocks of a *wide or
square* full-row-rank matrix are never worse than the whole (interlacing), but those of a *tall*
one (fewer actuated columns than rows) can be singular while the whole is not. So the measures
are reported for the translational rows, the rotational rows and the whole matrix, and whoever
damps or warns uses the block of the rows it actually commands.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.linalg.lapack import dgesdd

# Where the package calls a block "near a singularity": the smallest singular value below which
# resolved-rate control starts damping (ResolvedRateGains.sigma_0 defaults to it), so a warning
# means "the controller would damp here". Units of the block: m (m/s per rad/s) on translational
# rows, dimensionless (rad/s per rad/s) on rotational rows.
SIGMA_NEAR = 0.02

BLOCKS = ("translational", "rotational", "full")
_TINY = float(np.finfo(float).tiny)


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

    def as_dict(self) -> dict:
        """JSON-ready: an infinite condition number (sigma_min = 0) is None (JSON null)."""
        cond = self.condition_number if np.isfinite(self.condition_number) else None
        return {"sigma_min": self.sigma_min, "manipulability": self.manipulability,
                "condition_number": cond, "rank": self.rank}


def measures_from_singular_values(s: np.ndarray, tol: float = 1e-9) -> SingularityMeasures:
    """Measures from the min(m, n) singular values ``s`` of a matrix, largest first.

    ``tol``: singular values below ``tol * sigma_max`` count as zero for the rank.
    """
    if s.size == 0:
        return SingularityMeasures(0.0, 0.0, float("inf"), 0)
    # On Python floats: a control tick calls this on 2-6 values, where NumPy's reductions cost
    # more than the arithmetic (~7 -> ~1.5 us).
    values = s.tolist()
    smin, smax = values[-1], values[0]
    cond = smax / smin if smin > 0 else float("inf")
    threshold = tol * max(smax, _TINY)
    rank = sum(1 for x in values if x > threshold)
    return SingularityMeasures(smin, math.prod(values), cond, rank)


def singularity_measures(matrix: np.ndarray, tol: float = 1e-9) -> SingularityMeasures:
    """Measures of an (m x n) Jacobian over its min(m, n) singular values.

    Args:
        matrix: e.g. ``GJM.matrix``; for a redundant arm (n > m) the measures concern the task
            directions, for a deficient one (n < m) the reachable ones: the m - n eigenvalues of
            J J^T that are zero whatever the configuration are not counted (they say which task
            directions cannot be controlled, not how close the arm is to a singularity).
        tol: singular values below ``tol * sigma_max`` count as zero for the rank.
    """
    J = np.asarray(matrix, dtype=float)
    s = np.linalg.svd(J, compute_uv=False) if J.size else np.zeros(0)
    return measures_from_singular_values(s, tol)


def thin_svd(J: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(U, s, Vt) with J = U diag(s) Vt, k = min(m, n) singular values, largest first.

    LAPACK gesdd called directly: on the 2..6-row matrices of a control tick numpy's wrapper
    costs more than the factorisation (see physics/linalg.py for the same reasoning).

    Raises:
        np.linalg.LinAlgError: the SVD did not converge (a non-finite entry), as numpy's would.
    """
    m, n = J.shape
    if m == 0 or n == 0:
        k = min(m, n)
        return np.zeros((m, k)), np.zeros(k), np.zeros((k, n))
    u, s, vt, info = dgesdd(J, compute_uv=1, full_matrices=0)
    if info != 0:
        raise np.linalg.LinAlgError(
            f"SVD did not converge (LAPACK gesdd info={info}): the Jacobian has a non-finite entry"
        )
    return u, s, vt


@dataclass(frozen=True)
class BlockMeasures:
    """The measures of one row block of a Jacobian.

    Attributes:
        name: ``translational``, ``rotational`` or ``full``.
        rows: the twist rows of the block (``vx``..., ``wz``).
        measures: its :class:`SingularityMeasures` (sigma_min 0, rank 0 for a block without rows).
    """

    name: str
    rows: tuple[str, ...]
    measures: SingularityMeasures

    def as_dict(self) -> dict:
        return {"rows": list(self.rows), **self.measures.as_dict()}


def row_blocks(row_names: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """Row indices of each block: translational (v*), rotational (w*), full (all rows).

    Planar GJMs (vx, vy, wz): translational = vx, vy; rotational = wz. Spatial: 3 + 3.
    """
    rows = tuple(row_names)
    unknown = [r for r in rows if r[:1] not in ("v", "w")]
    if unknown:
        raise ValueError(f"twist rows must be named v* (linear) or w* (angular), got {unknown}")
    return {"translational": tuple(i for i, r in enumerate(rows) if r.startswith("v")),
            "rotational": tuple(i for i, r in enumerate(rows) if r.startswith("w")),
            "full": tuple(range(len(rows)))}


def block_measures(matrix: np.ndarray, row_names: Sequence[str], tol: float = 1e-9) -> dict[str, BlockMeasures]:
    """:func:`singularity_measures` of the translational rows, the rotational rows and the whole.

    Args:
        matrix: (m x n), e.g. ``GJM.matrix``; rows named by ``row_names`` (``GJM.row_names``),
            world axes; units m/s (translational) and rad/s (rotational) per actuated unit.
    """
    J = np.asarray(matrix, dtype=float)
    names = tuple(row_names)
    if J.shape[0] != len(names):
        raise ValueError(f"{J.shape[0]} matrix rows but {len(names)} row names {list(names)}")
    return {block: BlockMeasures(block, tuple(names[i] for i in idx), singularity_measures(J[list(idx)], tol))
            for block, idx in row_blocks(names).items()}


def near_singular(blocks: dict[str, BlockMeasures], threshold: float = SIGMA_NEAR) -> list[BlockMeasures]:
    """The blocks (with rows) whose sigma_min is below ``threshold``, in BLOCKS order."""
    return [b for b in blocks.values() if b.rows and b.measures.sigma_min < threshold]


def singularity_warning(frame: str, blocks: dict[str, BlockMeasures], threshold: float = SIGMA_NEAR,
                        threshold_name: str = "threshold") -> str | None:
    """One line naming every block of ``frame``'s Jacobian below ``threshold``, or None.

    ``threshold_name`` says where the threshold was set (e.g. the option ``--sigma-warn``).

    A block that is singular while the full matrix is not gets said so: that is the case the
    whole-matrix measures alone would hide.
    """
    near = near_singular(blocks, threshold)
    if not near:
        return None
    parts = [f"{'full matrix' if b.name == 'full' else b.name + ' block'} ({', '.join(b.rows)}) "
             f"sigma_min {b.measures.sigma_min:.3g}" for b in near]
    text = f"'{frame}' is near a dynamic singularity: {'; '.join(parts)} < {threshold_name} {threshold:g}"
    full = blocks["full"]
    if all(b.name != "full" for b in near):
        text += f" (the full matrix, sigma_min {full.measures.sigma_min:.3g}, does not show it)"
    return text
