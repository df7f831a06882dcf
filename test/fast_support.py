"""What the compiled-engine tests share: a run on both engines, compared to round-off."""

import numpy as np

from freeflyer_control.physics import fastpath
from freeflyer_control.sim.fast.runner import run_fast
from freeflyer_control.sim.runner import run_simulation

# Round-off of two evaluations of the same dynamics over <= 2 s of closed loop (measured:
# <= 4e-13 on every series of the bundled robots).
CLOSED_LOOP_ATOL = 1e-9


def assert_same_run(config):
    """Every logged series and summary figure of the compiled run (``run_fast``) equals the
    Python engine's on its NumPy / LAPACK definitions (``fastpath.forced("numpy")``: with numba
    the Python engine's GJM, H*, C* and resolved rate call compiled kernels too, the very code
    under test here); returns the compiled result."""
    fast = run_fast(config)
    with fastpath.forced("numpy"):
        slow = run_simulation(config, fast=False)
    assert list(fast.series) == list(slow.series)
    assert fast.column_names == slow.column_names
    for key, expected in slow.series.items():
        got = fast.series[key]
        assert got.shape == expected.shape, key
        np.testing.assert_allclose(got, expected, rtol=0, atol=CLOSED_LOOP_ATOL, err_msg=key)
    assert set(fast.summary) == set(slow.summary)
    for key, value in slow.summary.items():
        # Timing, the engine's own words, and the Python law's CPU time per tick (the compiled
        # engine runs its laws in its compiled loop, not timed per tick: None there).
        if key in ("real_time_factor", "wall_time_s", "engine", "engine_reason", "plant_step", "law_overruns",
                   "law_longest_tick_s"):
            continue
        if isinstance(value, float):
            assert abs(fast.summary[key] - value) < CLOSED_LOOP_ATOL, key
        else:
            assert fast.summary[key] == value, key
    return fast
