"""The Generalized Jacobian Matrix (GJM) of any frame, or point on a link, in each mode.

Write the twist of a point as t = J nu (J: Pinocchio frame Jacobian, world-aligned, over the
full velocity nu = [v_base; qdot]). A mode splits the base coordinates into commanded (c) and
free (f) ones (physics.modes). Its conserved momenta are the free rows of the base equations,
M_f nu = h_f, so

    v_f = M_ff^-1 (h_f - M_fc v_c - M_fj qdot)

and the twist becomes

    t = J*_j qdot + J*_c u_c + drift,    J* = J - J_f M_ff^-1 M_f:,
    drift = J_f M_ff^-1 h_f + J*_w qdot_w

with u_c the commanded base velocities in world axes and qdot_w the reaction-wheel rates (which
are not GJM columns). With zero momentum and no wheel spin the drift is zero and J*_j is the
GJM of Umetani & Yoshida / Wilde et al. (doc 001 eq. 110, J* = Jm - J0 H0^-1 H0m): the product
J_f M_ff^-1 M_f: does not depend on the base velocity coordinates, so Pinocchio's local
free-flyer coordinates give the papers' GJM.

Rows: the point's linear then angular velocity in world axes, spatial (vx, vy, vz, wx, wy, wz),
planar (vx, vy, wz).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.linalg import cholesky_failure, solve
from freeflyer_control.physics.dynamics import mass_matrix
from freeflyer_control.physics.modes import Mode, base_partition
from freeflyer_control.physics.momentum import conserved_to_base_rows
from freeflyer_control.physics.state import State, world_to_local_base_map

SPATIAL_ROWS = ("vx", "vy", "vz", "wx", "wy", "wz")
PLANAR_ROWS = ("vx", "vy", "wz")
_PLANAR_ROW_INDEX = np.array([0, 1, 5])


@dataclass(frozen=True)
class GJM:
    """A mode's generalized Jacobian at one state.

    Attributes:
        matrix: (rows, cols): the twist of the point per unit actuated velocity.
        drift: (rows,): the twist with all actuated velocities zero (momentum, wheel spin).
        mode: the maneuvering mode.
        frame: the frame the point is attached to.
        point: the point in that frame, m.
        row_names: twist components, world axes.
        column_names: arm joint names, then the commanded base velocities (world axes).
    """

    matrix: np.ndarray
    drift: np.ndarray
    mode: Mode
    frame: str
    point: np.ndarray
    row_names: tuple[str, ...]
    column_names: tuple[str, ...]

    def twist(self, actuated: np.ndarray) -> np.ndarray:
        """Predicted twist of the point for actuated velocities ordered like the columns."""
        return self.matrix @ np.asarray(actuated, dtype=float) + self.drift

    @property
    def n_joint_columns(self) -> int:
        return self.matrix.shape[1] - sum(n.startswith("base_") for n in self.column_names)


def frame_jacobian(
    ff: FreeFlyerModel,
    data: pin.Data,
    q: np.ndarray,
    frame: str,
    point: np.ndarray | None = None,
) -> np.ndarray:
    """Full Jacobian (6 x nv) of a point on ``frame``: twist [v_point; omega] in world axes.

    Args:
        point: the point's coordinates in ``frame``, m; None for the frame origin.
    """
    fid = _frame_id(ff, frame)
    J = pin.computeFrameJacobian(ff.model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)
    if point is not None and (point := np.asarray(point, dtype=float)).any():
        r = data.oMf[fid].rotation @ point  # frame origin -> point, world axes
        # v_point = v_origin + omega x r = v_origin - [r]x omega
        J[:3] -= pin.skew(r) @ J[3:]
    return J


def _frame_id(ff: FreeFlyerModel, frame: str) -> int:
    """The Pinocchio id of ``frame``, once per model (ff.frame_id asks Pinocchio twice,
    existFrame and getFrameId, ~1.5 us). Unknown names are not kept: ff.frame_id raises."""
    return ff.derived((_frame_id, frame), ff.frame_id, frame)


def generalized_jacobian(
    ff: FreeFlyerModel,
    data: pin.Data,
    state: State,
    mode: Mode | str,
    frame: str,
    *,
    point: np.ndarray | None = None,
    conserved: np.ndarray | None = None,
    M: np.ndarray | None = None,
) -> GJM:
    """GJM of a point on ``frame`` in ``mode`` at ``state``.

    Args:
        state: the current state (the free base velocities in it are not used, only the base
            pose, the joint angles, the wheel rates and, by default, the momentum).
        mode: maneuvering mode.
        frame: URDF link (or joint) name.
        point: point in ``frame`` coordinates, m (default: the frame origin).
        conserved: the mode's conserved momentum, world axes, as returned by
            :func:`~freeflyer_control.physics.momentum.conserved_momentum` (e.g. its value at
            the start of a maneuver). Default: its value at ``state``.
        M: the mass matrix (full symmetric, as :func:`mass_matrix` returns it) at ``state.q``
            if the caller already has it.
    """
    kernels = fastpath.kernels()
    if kernels is None:
        return _generalized_jacobian_numpy(ff, data, state, Mode.parse(mode), frame, point,
                                           conserved, M)
    # The compiled path: Pinocchio's calls, then one call of physics.kernels.reduced.gjm_post.
    plan = ff.derived((_gjm_plan, mode, frame), _gjm_plan, kernels, ff, mode, frame)
    q = state.q
    if point is None:
        point_arr = np.zeros(3)
        J = pin.computeFrameJacobian(ff.model, data, q, plan.frame_id, pin.LOCAL_WORLD_ALIGNED)
    else:
        point_arr = np.asarray(point, dtype=float)
        J = frame_jacobian(ff, data, q, frame, point_arr)
    h = _NO_VECTOR  # empty: the kernel uses the momentum at state
    if plan.has_free:
        if M is None:
            M = pin.crba(ff.model, data, q)  # the kernel reads its upper triangle only
        if conserved is not None:
            h = conserved_to_base_rows(ff, data, q, plan.mode, conserved)
    else:
        M = _NO_MATRIX
    matrix, drift, info = kernels.gjm_post(M, J, state.v, q, plan.layout, h)
    if info:
        raise cholesky_failure(info, M)
    return fastpath.frozen(GJM, {
        "matrix": matrix, "drift": drift, "mode": plan.mode, "frame": frame, "point": point_arr,
        "row_names": plan.row_names, "column_names": plan.column_names})


def _generalized_jacobian_numpy(ff, data, state, mode, frame, point, conserved, M) -> GJM:
    """The NumPy / LAPACK path of :func:`generalized_jacobian`: the reference."""
    # This runs on every control tick, where NumPy's per-call overhead (~0.3-1 us a call on
    # these small arrays) outweighs the arithmetic: it uses slices (views) and np.take rather
    # than fancy indexing, few temporaries, and one LAPACK call (two with ``conserved``).
    # bench/bench_core.py times it.
    q, v = state.q, state.v
    if point is None:
        point_arr = np.zeros(3)
        J = frame_jacobian(ff, data, q, frame)
    else:
        point_arr = np.asarray(point, dtype=float)
        J = frame_jacobian(ff, data, q, frame, point_arr)
    planar = ff.base == "planar"
    if planar:
        # Every step below is linear in the rows of J, so keep the in-plane rows from the start.
        J = J.take(_PLANAR_ROW_INDEX, axis=0)
    part = base_partition(ff.base, mode)
    f, c = part.free_slice, part.commanded_slice

    if part.free.size:
        if M is None:
            M = mass_matrix(ff, data, q)
        M_f = M[f]  # the free rows, all columns
        M_ff, J_f = M_f[:, f], J[:, f]
        correction = J_f.dot(solve(M_ff, M_f))  # J_f M_ff^-1 M_f:
        if conserved is None:
            # h_f = M_f v, so J_f M_ff^-1 h_f = correction v: no second solve per tick.
            drift = correction.dot(v)
        else:
            drift = J_f.dot(solve(M_ff, conserved_to_base_rows(ff, data, q, mode, conserved)))
        Jstar = J  # J is this call's own array: update it in place
        Jstar -= correction
    else:
        Jstar = J
        drift = np.zeros(J.shape[0])

    wheels = ff.wheel_v_indices
    if wheels.size:
        drift += Jstar.take(wheels, axis=1).dot(v.take(wheels))
    matrix = Jstar.take(ff.arm_v_indices, axis=1)
    if part.commanded.size:
        T = world_to_local_base_map(ff, q)  # v_local = T u_world, block diagonal
        matrix = np.concatenate((matrix, Jstar[:, c].dot(T[c, c])), axis=1)
    return GJM(
        matrix=matrix,
        drift=drift,
        mode=mode,
        frame=frame,
        point=point_arr,
        row_names=PLANAR_ROWS if planar else SPATIAL_ROWS,
        column_names=tuple(ff.arm_joint_names) + part.names,
    )


_NO_VECTOR = np.zeros(0)
_NO_MATRIX = np.zeros((0, 0))


@dataclass(frozen=True)
class _GJMPlan:
    """What a GJM of one frame in one mode needs besides the state, built once per model,
    mode and frame: the parsed mode, the frame id, the index layout of the compiled kernel,
    the names."""

    mode: Mode
    frame_id: int
    layout: np.ndarray
    has_free: bool
    row_names: tuple[str, ...]
    column_names: tuple[str, ...]


def mode_layout(kernels, ff: FreeFlyerModel, mode: Mode) -> np.ndarray:
    """The index layout ``kernels.gjm_post`` (physics/kernels/reduced.py) reads for a GJM of ``ff`` in
    ``mode``, the same for every frame (read-only)."""
    planar = ff.base == "planar"
    part = base_partition(ff.base, mode)
    layout = kernels.gjm_layout(planar, _PLANAR_ROW_INDEX if planar else range(6), part.free,
                                part.commanded, ff.arm_v_indices, ff.wheel_v_indices)
    layout.setflags(write=False)
    return layout


def _gjm_plan(kernels, ff: FreeFlyerModel, mode: Mode | str, frame: str) -> _GJMPlan:
    parsed = Mode.parse(mode)
    planar = ff.base == "planar"
    part = base_partition(ff.base, parsed)
    layout = mode_layout(kernels, ff, parsed)
    plan = _GJMPlan(
        mode=parsed, frame_id=_frame_id(ff, frame), layout=layout, has_free=part.free.size > 0,
        row_names=PLANAR_ROWS if planar else SPATIAL_ROWS,
        column_names=tuple(ff.arm_joint_names) + part.names,
    )
    return plan


def actuated_velocities(ff: FreeFlyerModel, state: State, mode: Mode | str) -> np.ndarray:
    """The state's actuated velocities in GJM column order: arm joint rates, then the
    commanded base velocities in world axes."""
    part = base_partition(ff.base, Mode.parse(mode))
    rates = state.v[ff.arm_v_indices]
    if not part.commanded.size:
        return rates
    u_world = world_to_local_base_map(ff, state.q).T @ state.v[: ff.nb]  # T is a rotation
    return np.concatenate([rates, u_world[part.commanded]])
