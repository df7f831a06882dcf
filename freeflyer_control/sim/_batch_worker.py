"""Imported once by :func:`freeflyer_control.sim.batch.run_batch`'s fork server, before it forks
any worker: the simulation modules, and the compiled engine's kernels loaded from numba's cache
(compiled there on first use, 30-80 s once per machine), so that every worker starts with them
instead of loading them itself (~0.3-1 s each on a busy machine)."""

from freeflyer_control.sim import fast
from freeflyer_control.sim import runner  # noqa: F401  (the import is the point)

if fast.available():
    from freeflyer_control.sim.fast.runner import warm_up

    try:
        warm_up()
    except Exception:  # noqa: BLE001  a failure here would kill the fork server and every batch:
        pass  # the workers then load (or fail on) the kernels themselves, as without this module
