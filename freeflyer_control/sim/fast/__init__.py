"""Optional compiled (numba) path for ``freeflyer sim``: rigid-body kernels, plant step and
computed-torque law in one compiled loop. Import :mod:`.runner` only when numba is installed
(:func:`available` tells).

Importing this package first clears numba's kernel cache where a source compiled into a kernel
changed since it was built (:mod:`.cache`): every kernel module under it, and the two outside
it, go through here before their first cached kernel loads."""

from __future__ import annotations

import importlib.util


def available() -> bool:
    """True when numba can be imported (the compiled path is usable)."""
    return importlib.util.find_spec("numba") is not None


if available():
    from freeflyer_control.sim.fast.cache import ensure_fresh

    ensure_fresh()
