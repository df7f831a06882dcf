"""The power balance of one plant step: the energy half of the plant's divergence check.

One definition for both engines: :class:`~freeflyer_control.physics.plant.Plant` calls
:func:`energy_explained`, and physics/kernels/divergence.py compiles it as it is. It lives in a
module of its own, without NumPy or Pinocchio, because numba's kernel cache is fingerprinted on
the sources its kernels compile (physics/kernels/cache.py): here, a change to the Python plant
does not throw every compiled kernel away.
"""

from __future__ import annotations

# Unexplained energy gain over one step, relative to the energy involved (T before + T after +
# |work|). A stable step leaves round-off to ~1e-4 (the power balance holds to RK4's O(h^5);
# measured on the bundled robots with joint rates up to 1 rad/s: < 2e-4 at 20 Hz, up to 4e-3 for
# spatial_7dof at 10 Hz); an unstable one multiplies the energy step after step, so the residual is
# O(1) (5 % in the first step of a 10 Hz arm at its effort limits, 36 % at the end of a 1 Hz
# end-effector maneuver). 1 % stops that in its first step or two, long before NaN.
ENERGY_RTOL = 1e-2
# J: below this the power balance is round-off (a robot at rest, a zero-torque step).
ENERGY_ATOL = 1e-9


def energy_explained(energy_before: float, energy: float, work: float) -> bool:
    """True when a step's kinetic energy change (J) is the work of the applied forces (J) within
    ``ENERGY_RTOL`` of the energy involved (+ ``ENERGY_ATOL``); only a gain counts. False for NaN.

    A plain function of floats on purpose: the compiled plant step and the compiled simulation
    engine run this same function after each of their plant steps (physics/kernels/divergence.py).
    """
    unexplained = energy - energy_before - work
    return unexplained <= ENERGY_RTOL * (energy_before + energy + abs(work)) + ENERGY_ATOL
