"""The compiled (numba) engine of ``freeflyer sim``: the lockstep runner (:mod:`.runner`), its
tick loop (:mod:`.loop`: plant step and control law in one compiled loop) and the logged series
(:mod:`.record`). The kernels it runs live at the level of what they implement
(``physics.kernels``, ``control.kernels``). Import :mod:`.runner` only when numba is installed
(``physics.kernels.available()`` tells)."""

from __future__ import annotations

from freeflyer_control.physics.kernels import available

__all__ = ["available"]
