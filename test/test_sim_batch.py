"""run_batch gives, run for run, what run_simulation gives for the same configuration."""

from __future__ import annotations

import numpy as np
import pytest

from freeflyer_control.sim.batch import run_batch
from freeflyer_control.sim.config import SimConfig
from freeflyer_control.sim.runner import run_simulation

# Figures of the wall clock, which differ between any two runs.
WALL_CLOCK = {"real_time_factor", "wall_time_s"}

CONFIGS = [
    # The compiled engine (floating computed torque on a joint maneuver, when numba is present)...
    SimConfig(robot="spatial_6link", mode="floating", maneuver="wilde", duration=0.3, rate=250.0),
    # ...and the Python one: another mode, controller, maneuver, a mass error and its seed.
    SimConfig(robot="planar_4link", mode="flying", controller="resolved_rate", maneuver="ee-point",
              duration=0.3, rate=250.0),
    SimConfig(robot="spatial_6link", mode="rotation-flying", maneuver="station-keeping",
              mass_error=0.1, seed=3, duration=0.3, rate=250.0),
]


def same_result(batched, single):
    assert batched.config is not None and batched.robot.name == single.robot.name
    assert batched.column_names == single.column_names
    assert batched.series.keys() == single.series.keys()
    for name, values in single.series.items():
        # The same code on the same inputs in another process: bit for bit, but allow round-off
        # should a BLAS pick another kernel in a fresh process.
        np.testing.assert_allclose(batched.series[name], values, rtol=1e-12, atol=1e-12, err_msg=name)
    differing = {k: (batched.summary[k], single.summary[k]) for k in set(single.summary) - WALL_CLOCK
                 if not _close(batched.summary[k], single.summary[k])}
    assert not differing, differing


def _close(a, b) -> bool:
    """Equal, floats to 1e-12 relative (the series' round-off allowance), NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= 1e-12 * max(1.0, abs(b)) or (np.isnan(a) and np.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("workers", [1, 2])
def test_batched_runs_equal_single_runs_of_the_same_configs(workers):
    batched = run_batch(CONFIGS, workers=workers)
    assert len(batched) == len(CONFIGS)
    for config, result in zip(CONFIGS, batched):
        assert result.config is config
        same_result(result, run_simulation(config))


def test_a_bad_config_is_refused_with_its_position_in_the_batch():
    bad = SimConfig(robot="planar_4link", duration=-1.0)
    with pytest.raises(ValueError, match=r"^run 1 of the batch: duration must be a positive number of seconds, got -1.0$"):
        run_batch([CONFIGS[1], bad], workers=2)


def test_workers_below_one_are_refused():
    with pytest.raises(ValueError, match="^workers must be at least 1, got 0$"):
        run_batch(CONFIGS[:1], workers=0)
