"""Operational-space inertia Lambda of any frame (or point on a link), in each mode.

Lambda is the inertia the point presents to a wrench applied there: with the joints
torque-controlled (free to yield) and the wrench W = [force; moment] at the point, its
acceleration is Lambda^-1 W (velocity terms aside). In a maneuvering mode the commanded base
coordinates are held by their actuators, as in the mode's GJM (physics.gjm); the free ones
yield too. So with u the velocity coordinates that are not held,

    Lambda^-1 = J_u  M_uu^-1  J_u^T

(floating mode: u = everything, the paper's Lambda^-1(k) = J(k) M^-1 J(k)^T; flying mode: the
fixed-base operational-space inertia of the arm). Holding Pinocchio's local base velocity
coordinates is holding the world ones: the map between them is a rotation per block.

Rows, like the GJM's: the point's linear then angular acceleration in world axes, spatial
(vx, vy, vz, wx, wy, wz), planar (vx, vy, wz). Units: the force rows in kg, kg m and kg m^2
blocks of Lambda (force = Lambda acceleration).

Two routes give the same matrix (test/test_operational_space.py):

* :func:`operational_space_inertia`: Pinocchio's CRBA and frame Jacobian, one frame at a time;
* :func:`osi_all_links`: the paper's sweeps (physics.base_invariant, Eq. 4.7, Alg. 8) for
  every link at once.

At a kinematic singularity of the mode (e.g. a stretched arm in flying mode) Lambda^-1 loses
rank and Lambda does not exist: the result says so and carries only Lambda^-1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.base_invariant.spatial import PLANAR, SWAP, phi
from freeflyer_control.physics.base_invariant.sweeps import inverse_osi_all_links, osi_all_links as _alg8
from freeflyer_control.physics.base_invariant.tree import build_tree
from freeflyer_control.physics.dynamics import mass_matrix
from freeflyer_control.physics.gjm import PLANAR_ROWS, SPATIAL_ROWS, frame_jacobian
from freeflyer_control.physics.modes import Mode, base_partition, spec

#: Lambda^-1 eigenvalues below this fraction of the largest count as zero (same bound as the
#: GJM's singularity rank, physics.singularity): the inverse of such a Lambda^-1 would be
#: dominated by round-off.
SINGULAR_TOL = 1e-9

_PLANAR_ROW_INDEX = np.array([0, 1, 5])
# planar algebra (omega_z, v_x, v_y) -> GJM rows (vx, vy, wz)
_PLANAR_FROM_PAPER = np.array([1, 2, 0])


@dataclass(frozen=True)
class OperationalSpaceInertia:
    """Lambda of one point in one mode.

    Attributes:
        matrix: Lambda (rows x rows), or None when it is singular (not inverted).
        inverse: Lambda^-1, always present.
        rank: numerical rank of Lambda^-1 (tolerance :data:`SINGULAR_TOL`).
        mode, frame, point: what it is of; ``point`` in ``frame``, m.
        row_names: acceleration components, world axes.
    """

    matrix: np.ndarray | None
    inverse: np.ndarray
    rank: int
    mode: Mode
    frame: str
    point: np.ndarray
    row_names: tuple[str, ...]

    @property
    def singular(self) -> bool:
        return self.matrix is None


def _finish(inverse: np.ndarray, mode: Mode, frame: str, point, row_names) -> OperationalSpaceInertia:
    inverse = 0.5 * (inverse + inverse.T)
    eig = np.linalg.eigvalsh(inverse)
    rank = int(np.sum(eig > SINGULAR_TOL * max(eig[-1], np.finfo(float).tiny)))
    matrix = None
    if rank == inverse.shape[0]:
        matrix = np.linalg.inv(inverse)
        matrix = 0.5 * (matrix + matrix.T)
    return OperationalSpaceInertia(matrix, inverse, rank, mode, frame,
                                   np.zeros(3) if point is None else np.asarray(point, float),
                                   row_names)


def operational_space_inertia(
    ff: FreeFlyerModel,
    data: pin.Data,
    q: np.ndarray,
    mode: Mode | str,
    frame: str,
    point: np.ndarray | None = None,
) -> OperationalSpaceInertia:
    """Lambda of a point on ``frame`` at configuration ``q`` in ``mode`` (Pinocchio route).

    Args:
        q: Pinocchio configuration (physics.state.State.q).
        point: the point in ``frame``'s axes, m; None for the frame origin.
    """
    mode = Mode.parse(mode)
    if not np.all(np.isfinite(q)):
        raise ValueError(f"operational_space_inertia: q has non-finite entries {np.asarray(q).tolist()}; "
                         "give a finite configuration")
    J = frame_jacobian(ff, data, q, frame, point)
    planar = ff.base == "planar"
    if planar:
        J = J[_PLANAR_ROW_INDEX]
    held = base_partition(ff.base, mode).commanded
    keep = np.setdiff1d(np.arange(ff.model.nv), held)
    M = mass_matrix(ff, data, q)[np.ix_(keep, keep)]
    J = J[:, keep]
    inverse = J @ np.linalg.solve(M, J.T)
    return _finish(inverse, mode, frame, point, PLANAR_ROWS if planar else SPATIAL_ROWS)


def base_free_directions(base: str, mode: Mode | str) -> np.ndarray:
    """The base directions a mode leaves free, as the columns of the base hinge H*(n) in the
    paper's algebra (angular first, world axes; planar (omega_z, v_x, v_y))."""
    s = spec(mode)
    if base == "planar":
        cols = ([] if s.commands_attitude else [0]) + ([] if s.commands_translation else [1, 2])
        return np.eye(3)[:, cols]
    cols = ([] if s.commands_attitude else [0, 1, 2]) + ([] if s.commands_translation else [3, 4, 5])
    return np.eye(6)[:, cols]


def osi_all_links(
    ff: FreeFlyerModel, data: pin.Data, q: np.ndarray, mode: Mode | str = Mode.FLOATING,
    *, compiled: bool = False,
) -> dict[str, OperationalSpaceInertia]:
    """Lambda of every body at its URDF link frame's origin, through the paper's sweeps:
    Alg. 8 (P + S) in floating mode, Eq. 4.7's Upsilon with the held base directions in the
    others. Keyed by link name (the joint's child link).

    Args:
        compiled: Alg. 8 as one numba loop (needs numba; the first call compiles, ~10 s).
    """
    mode = Mode.parse(mode)
    tree = build_tree(ff, data, q, common_point=True)
    free = base_free_directions(ff.base, mode)
    upsilon = inverse_osi_all_links(tree, free)
    lam = _alg8(tree, compiled=compiled) if mode is Mode.FLOATING else None
    planar = ff.base == "planar"
    rows = PLANAR_ROWS if planar else SPATIAL_ROWS
    order = _PLANAR_FROM_PAPER if planar else SWAP
    out = {}
    for k, (link, placement) in body_links(ff).items():
        # From O_k to the link frame's origin (they differ on re-rooted models).
        X = phi(tree.rotation[k] @ placement.translation)
        if planar:
            X = X[np.ix_(PLANAR, PLANAR)]
        osi = _finish((X.T @ upsilon[k] @ X)[np.ix_(order, order)], mode, link, None, rows)
        if lam is not None and not osi.singular:  # Alg. 8 gives Lambda without inverting
            X_inv = 2.0 * np.eye(X.shape[0]) - X  # phi(-l)
            matrix = (X_inv @ lam[k] @ X_inv.T)[np.ix_(order, order)]
            osi = OperationalSpaceInertia(matrix, osi.inverse, osi.rank, mode, link, osi.point, rows)
        out[link] = osi
    return out


def body_links(ff: FreeFlyerModel) -> dict[int, tuple[str, pin.SE3]]:
    """Pinocchio body (joint) index -> (the joint's child URDF link, its frame's placement in
    the joint frame: identity, except for links moved by re-rooting)."""
    model = ff.model
    out: dict[int, tuple[str, pin.SE3]] = {}
    for f in model.frames:
        if f.type != pin.FrameType.BODY or f.parentJoint == 0 or f.parentJoint in out:
            continue
        previous = model.frames[f.parentFrame]
        if previous.type == pin.FrameType.JOINT or f.parentJoint == 1:
            out[f.parentJoint] = (f.name, f.placement)
    return dict(sorted(out.items()))
