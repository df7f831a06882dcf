"""The plant's divergence check, compiled: ``Plant._divergence`` of one compiled plant step, and
the plant step and its check as one compiled call (``CompiledPlant.step``'s).

The power balance has one definition, :func:`freeflyer_control.physics.energy_balance.energy_explained`,
compiled here as it is; the kinetic energy and the work of the applied forces over the step are
computed from the plant step's own stage velocities, as ``Plant.step`` computes them.
"""

from __future__ import annotations

from numba import njit

from freeflyer_control.physics.kernels.rigid_body import _JIT, _carve, plant_step_wall, workspace_views
from freeflyer_control.physics.energy_balance import energy_explained

STEPPING, DIVERGED_SPEED, DIVERGED_ENERGY = -1.0, 1.0, 2.0
energy_explained_compiled = njit(**_JIT)(energy_explained)


@njit(**_JIT)
def step_check(v0, tau, h, v, M, stages, v_bounds, energy_before):
    """``Plant._divergence`` of the plant step from velocity v0 to v (nv,) under tau (nv,) held
    over h s: (code, kinetic energy of the new state J, work of tau J), code 0 (accepted),
    DIVERGED_SPEED (a speed over v_bounds, or NaN) or DIVERGED_ENERGY. M: M at the new state (full);
    stages: plant_step's scratch, k1v, k2v, k3v in rows 2-4; work = h/6 tau . (v0 + 2 v2 + 2 v3
    + v4), the stage velocities v2 = v0 + h/2 k1, v3 = v0 + h/2 k2, v4 = v0 + h k3 (Plant's)."""
    return _step_check(v0, tau, h, v, M, stages, v_bounds, energy_before, 0.0)


@njit(inline="always", **_JIT)
def _step_check(v0, tau, h, v, M, stages, v_bounds, energy_before, extra_work):
    """:func:`step_check` with ``extra_work`` (J) done over the step besides tau's (a wall's)."""
    nv = v.shape[0]
    work = 0.0
    for i in range(nv):
        work += tau[i] * (6.0 * v0[i] + h * (stages[2, i] + stages[3, i] + stages[4, i]))
    work = work * (h / 6.0) + extra_work
    energy = 0.0
    for i in range(nv):
        s = 0.0
        for j in range(nv):
            s += M[i, j] * v[j]
        energy += v[i] * s
    energy *= 0.5
    for i in range(nv):
        if not abs(v[i]) <= v_bounds[i]:
            return DIVERGED_SPEED, energy, work
    if not energy_explained_compiled(energy_before, energy, work):
        return DIVERGED_ENERGY, energy, work
    return 0.0, energy, work


@njit(**_JIT)
def checked_plant_step(km, planar, nb, q0, v0, tau, h, mom0, energy_before, buf, current, q_new, v_new, mom_new,
                       wall, wall_out):
    """One plant step and its check in one compiled call, the step of
    :class:`~freeflyer_control.physics.kernels.plant.CompiledPlant`: ``rigid_body.plant_step_wall``
    from (q0, v0) with world momentum mom0 into q_new, v_new, mom_new, then :func:`step_check` of
    it, the wall's work included: (code, kinetic energy J, work J). mom0 is read only: a refused
    step leaves the plant's momentum as it was. ``wall``, ``wall_out``: as plant_step_wall's (empty:
    no wall).

    ``buf`` holds the rest, so that a call from Python unboxes one array where plant_step and
    step_check take 25 (numba's dispatch: ~60 ns an array): the workspace
    (``rigid_body.workspace_views``), then M (2, nv, nv), b (2, nv) and the velocity bounds (nv,).
    M[current], b[current] are M(q0), b(q0, v0); the step writes M(q_new), b(q_new, v_new) into
    M[1 - current], b[1 - current], the next step's current pair once this one is accepted.
    """
    nq, nv = q0.shape[0], v0.shape[0]
    ws, o = workspace_views(buf, km[0].shape[0], nq, nv, nb)
    M, o = _carve(buf, o, (2, nv, nv))
    b, o = _carve(buf, o, (2, nv))
    v_bounds = buf[o:o + nv]
    for k in range(mom0.shape[0]):
        mom_new[k] = mom0[k]
    nxt = 1 - current
    plant_step_wall(km, planar, nb, q0, v0, tau, h, mom_new, M[current], b[current], q_new, v_new, M[nxt], b[nxt],
                    ws, wall, wall_out)
    wall_work = wall_out[nb] if wall.shape[0] > 0 else 0.0
    return _step_check(v0, tau, h, v_new, M[nxt], ws[14], v_bounds, energy_before, wall_work)
