"""Imported once by :func:`freeflyer_control.sim.batch.run_batch`'s fork server, before it forks
any worker: the simulation modules, and the compiled engine's kernels loaded from numba's cache
(compiled there on first use), so that every worker starts with them instead of loading them
itself (~0.3-1 s each on a busy machine)."""

from freeflyer_control.sim import fast
from freeflyer_control.sim import runner  # noqa: F401  (the import is the point)

if fast.available():
    from freeflyer_control.sim.fast.runner import warm_up

    warm_up()
