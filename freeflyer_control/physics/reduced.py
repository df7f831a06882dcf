"""Mode-reduced dynamics H* a_a + C* = tau_a over a mode's actuated coordinates.

The actuated coordinates of a mode are its commanded base DOFs (world axes) followed by every
joint (arm joints and wheels, in ``ff.joint_names`` order). No actuator acts on the free base
coordinates f, so the floating-base equations M nu' + b = tau split into

    M_ff nu_f' + M_fa nu_a' + b_f = 0
    M_af nu_f' + M_aa nu_a' + b_a = tau_a

and eliminating nu_f' gives

    H* = M_aa - M_af M_ff^-1 M_fa        (the Schur complement over the free base DOFs)
    C* = b_a  - M_af M_ff^-1 b_f

This holds for any momentum (it is the dynamics, not the zero-momentum kinematics). In floating
mode H* is the generalized inertia of Wilde et al. (doc 001 eq. 45) and of Papadopoulos.
Commanded base coordinates are then changed from Pinocchio's base_link axes to world axes
(u = T^-1 nu_c): H*_w = T' H* T, C*_w = T' (C* + H* T' u), tau_w = T' tau, so a controller works
with base accelerations and wrenches in world axes (DESIGN.md §3).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.linalg import cholesky_failure, solve
from freeflyer_control.physics.dynamics import mass_matrix, nonlinear_effects
from freeflyer_control.physics.modes import Mode, base_partition
from freeflyer_control.physics.state import State, minus_omega_cross_into, world_to_local_base_map


@dataclass(frozen=True)
class ReducedDynamics:
    """H* a + C* = tau over the actuated coordinates of a mode.

    Attributes:
        H: (na, na) symmetric positive definite inertia.
        C: (na,) velocity-dependent terms, N m (or N / N m for base coordinates).
        coordinate_names: commanded base velocities (world axes) then joint names.
        mode: the mode.
    """

    H: np.ndarray
    C: np.ndarray
    coordinate_names: tuple[str, ...]
    mode: Mode

    def accelerations(self, tau: np.ndarray) -> np.ndarray:
        """Actuated accelerations under generalized forces ``tau`` (ordered like the coordinates)."""
        return solve(self.H, np.asarray(tau, dtype=float) - self.C)


def reduced_dynamics(
    ff: FreeFlyerModel,
    data: pin.Data,
    state: State,
    mode: Mode | str,
    *,
    M: np.ndarray | None = None,
    idle_wheels: bool = False,
) -> ReducedDynamics:
    """H* and C* of ``mode`` at ``state`` (see the module docstring).

    Args:
        M: the mass matrix (full symmetric, as :func:`mass_matrix` returns it) at ``state.q``
            if the caller already has it.
        idle_wheels: the reaction wheels run free (zero torque), so eliminate them together
            with the free base coordinates: the coordinates are then the commanded base DOFs and
            the arm joints only. (Same elimination: no force acts on them.)
    """
    kernels = fastpath.kernels()
    if kernels is None:
        return _reduced_dynamics_numpy(ff, data, state, Mode.parse(mode), M, idle_wheels)
    # The compiled path: Pinocchio's calls, then one call of physics.kernels.reduced.reduced_post.
    plan = ff.derived((reduced_plan, mode, idle_wheels), reduced_plan, kernels, ff, mode, idle_wheels)
    q, v = state.q, state.v
    if M is None:
        M = pin.crba(ff.model, data, q)  # the kernel reads its upper triangle only
    b = pin.nonLinearEffects(ff.model, data, q, v)
    H, C, info = kernels.reduced_post(M, b, v, q, plan.layout)
    if info:
        raise cholesky_failure(info, M)
    return fastpath.frozen(ReducedDynamics, {
        "H": H, "C": C, "coordinate_names": plan.names, "mode": plan.mode})


def _reduced_dynamics_numpy(ff, data, state, mode, M, idle_wheels) -> ReducedDynamics:
    """The NumPy / LAPACK path of :func:`reduced_dynamics`: the reference."""
    # A per-tick path (computed-torque control): np.take and slices instead of np.ix_ fancy
    # indexing, one LAPACK call. bench/bench_core.py measures it.
    q, v = state.q, state.v
    part = base_partition(ff.base, mode)
    f, c = part.free_slice, part.commanded_slice
    a = _actuated_indices(ff.nb, v.shape[0], c.start, c.stop)
    names = part.names + tuple(ff.joint_names)
    idle = idle_wheels and ff.wheel_v_indices.size > 0
    if idle:
        a, f = _with_idle_wheels(ff, part, a)
        names = part.names + tuple(ff.arm_joint_names)
    own_M = M is None
    if own_M:
        M = mass_matrix(ff, data, q)
    b = nonlinear_effects(ff, data, q, v)

    if a.size == b.size:  # flying: every coordinate is actuated, H* = M, C* = b
        M_aa = M if own_M else M.copy()  # H is edited in place below; never the caller's M
        b_a = b
    else:
        M_aa = M.take(a, axis=0).take(a, axis=1)
        b_a = b.take(a)
    if idle or part.free.size:
        M_f = M.take(f, axis=0) if idle else M[f]
        M_fa = M_f.take(a, axis=1)
        M_ff = M_f.take(f, axis=1) if idle else M_f[:, f]
        # Right-hand sides [M_fa, b_f]: one factorisation for H* and C*.
        rhs = np.empty((M_fa.shape[0], a.size + 1))
        rhs[:, :-1] = M_fa
        rhs[:, -1] = b.take(f) if idle else b[f]
        G = M_fa.T.dot(solve(M_ff, rhs))  # M_af M_ff^-1 [M_fa, b_f]
        H = M_aa - G[:, :-1]
        C = b_a - G[:, -1]
    else:
        H, C = M_aa, b_a  # this call's own arrays (np.take copies, or M and b made above)

    nc = part.commanded.size
    if nc:
        # nu_c = T u (T rotates world -> base_link); nu_c' = T u' + T' u with T' u = -w_b x nu_c.
        T = world_to_local_base_map(ff, q)[c, c]
        C += H[:, :nc].dot(_minus_omega_cross(ff, v, c))
        H[:nc, :] = T.T.dot(H[:nc, :])
        H[:, :nc] = H[:, :nc].dot(T)
        C[:nc] = T.T.dot(C[:nc])
    H = 0.5 * (H + H.T)  # remove round-off asymmetry of the Schur complement
    return ReducedDynamics(H, C, names, mode)


@dataclass(frozen=True)
class _ReducedPlan:
    """The index layout of the compiled kernel and the coordinate names of one mode's reduced
    dynamics, built once per model, mode and wheel option."""

    mode: Mode
    layout: np.ndarray
    names: tuple[str, ...]


def reduced_plan(kernels, ff: FreeFlyerModel, mode: Mode | str, idle_wheels: bool) -> _ReducedPlan:
    """The layout (for ``kernels.reduced_post``, kernels = physics.kernels.reduced) and coordinate names
    of ``mode``'s H*, C*: what :func:`reduced_dynamics` uses, and the compiled simulation
    (sim/fast/runner.py) passes into its loop."""
    parsed = Mode.parse(mode)
    part = base_partition(ff.base, parsed)
    c = part.commanded_slice
    act, elim = _actuated_indices(ff.nb, ff.model.nv, c.start, c.stop), part.free
    names = part.names + tuple(ff.joint_names)
    if idle_wheels and ff.wheel_v_indices.size > 0:
        act, elim = _with_idle_wheels(ff, part, act)
        names = part.names + tuple(ff.arm_joint_names)
    layout = kernels.reduced_layout(ff.base == "planar", part.commanded.size, act, elim)
    layout.setflags(write=False)
    plan = _ReducedPlan(parsed, layout, names)
    return plan


@functools.lru_cache(maxsize=None)
def _actuated_indices(nb: int, nv: int, c_start: int, c_stop: int) -> np.ndarray:
    """The actuated coordinates: the commanded base ones (c_start:c_stop), then every joint.
    Read-only: shared by every call with the same sizes and mode."""
    a = np.concatenate([np.arange(c_start, c_stop), np.arange(nb, nv)])
    a.setflags(write=False)
    return a


def _with_idle_wheels(ff: FreeFlyerModel, part, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(actuated, eliminated) index arrays when the wheels are eliminated with the free base."""
    return ff.derived((_with_idle_wheels, part.commanded.tobytes(), a.size), _idle_wheels_eliminated, ff, part, a)


def _idle_wheels_eliminated(ff: FreeFlyerModel, part, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    wheels = ff.wheel_v_indices
    act = np.array([i for i in a if i not in set(wheels.tolist())], dtype=int)
    free = np.concatenate([part.free, wheels]).astype(int)
    act.setflags(write=False)
    free.setflags(write=False)
    return act, free


def _minus_omega_cross(ff: FreeFlyerModel, v: np.ndarray, c: slice) -> np.ndarray:
    """-omega_b x nu for the commanded base coordinates c (zero on the angular ones)."""
    out = np.empty(ff.nb)
    minus_omega_cross_into(v, ff.base == "planar", out)
    return out[c]
