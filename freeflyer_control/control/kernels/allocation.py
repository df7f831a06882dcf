"""The thruster allocator compiled (needs numba; import only when
:func:`freeflyer_control.physics.kernels.available`).

The allocator has one definition, the plain functions of
:mod:`freeflyer_control.control.allocation_kernel`; they are compiled here as they are. The
helpers are registered with ``register_jitable`` (which leaves them plain Python functions) so
that numba compiles them where :func:`allocate_forces` calls them. Call ``allocate_forces``
from Python or from other compiled code (the simulation loop) with the arguments documented
there.
"""

from __future__ import annotations

from numba import njit
from numba.extending import register_jitable

from freeflyer_control.control import allocation_kernel as _kernel

for _helper in _kernel.HELPERS:
    register_jitable(_helper)

# Without numba's runtime (NRT): the kernel allocates nothing, and its many views of the scratch
# (a dozen per call) are then not reference-counted, an atomic increment and decrement each
# that cost ~15-20 ns a view (as in physics/kernels/rigid_body.py: _NO_NRT).
_JIT = {"cache": True, "nogil": True, "error_model": "numpy", "_nrt": False}

allocate_forces = njit(**_JIT)(_kernel.allocate_forces)
