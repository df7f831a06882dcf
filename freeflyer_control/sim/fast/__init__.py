"""Optional compiled (numba) path for ``freeflyer sim``: rigid-body kernels, plant step and
computed-torque law in one compiled loop. Import :mod:`.runner` only when numba is installed
(:func:`available` tells)."""

from __future__ import annotations

import importlib.util


def available() -> bool:
    """True when numba can be imported (the compiled path is usable)."""
    return importlib.util.find_spec("numba") is not None
