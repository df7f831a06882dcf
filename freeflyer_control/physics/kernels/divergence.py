"""The plant's divergence check, compiled: ``Plant._divergence`` of one compiled plant step.

The power balance has one definition, :func:`freeflyer_control.physics.plant.energy_explained`,
compiled here as it is; the kinetic energy and the work of the applied forces over the step are
computed from the plant step's own stage velocities, as ``Plant.step`` computes them.
"""

from __future__ import annotations

from numba import njit

from freeflyer_control.physics.kernels.rigid_body import _JIT
from freeflyer_control.physics.plant import energy_explained

STEPPING, DIVERGED_SPEED, DIVERGED_ENERGY = -1.0, 1.0, 2.0
energy_explained_compiled = njit(**_JIT)(energy_explained)


@njit(**_JIT)
def step_check(v0, tau, h, v, M, stages, v_bounds, energy_before):
    """``Plant._divergence`` of the plant step from velocity v0 to v (nv,) under tau (nv,) held
    over h s: (code, kinetic energy of the new state J, work of tau J), code 0 (accepted),
    DIVERGED_SPEED (a speed over v_bounds, or NaN) or DIVERGED_ENERGY. M: M at the new state (full);
    stages: plant_step's scratch, k1v, k2v, k3v in rows 2-4; work = h/6 tau . (v0 + 2 v2 + 2 v3
    + v4), the stage velocities v2 = v0 + h/2 k1, v3 = v0 + h/2 k2, v4 = v0 + h k3 (Plant's)."""
    nv = v.shape[0]
    work = 0.0
    for i in range(nv):
        work += tau[i] * (6.0 * v0[i] + h * (stages[2, i] + stages[3, i] + stages[4, i]))
    work *= h / 6.0
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
