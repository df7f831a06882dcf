"""The bound of an ideal base wrench, as plain scalar code: the one definition that
:func:`freeflyer_control.physics.actuators.limit_base_wrench` runs interpreted and the compiled
kernels (``physics/kernels/actuators.py``) compile as it is.

A module of its own so that the kernels can compile it without importing
``physics/actuators.py``, which calls them.
"""

from __future__ import annotations

import math


def limit_wrench_into(planar, w, max_force, max_torque) -> None:
    """:func:`~freeflyer_control.physics.actuators.limit_base_wrench` in place on w (nb,: force
    N, then torque N m; any axes): each part scaled down to its bound if longer, its direction
    kept, also for entries whose squares would overflow; a zero part is left alone."""
    n_lin = 2 if planar else 3
    for part in range(2):
        lo, hi, limit = (0, n_lin, max_force) if part == 0 else (n_lin, len(w), max_torque)
        big = 0.0
        for k in range(lo, hi):
            big = max(big, abs(w[k]))
        if big > 1e150:  # far over any limit, and its square would overflow: keep only the direction
            for k in range(lo, hi):
                w[k] = w[k] / big
        else:
            s = 0.0
            for k in range(lo, hi):
                s += w[k] * w[k]
            if math.sqrt(s) <= limit:
                continue
        s = 0.0
        for k in range(lo, hi):
            s += w[k] * w[k]
        f = limit / math.sqrt(s)
        for k in range(lo, hi):
            w[k] = w[k] * f
