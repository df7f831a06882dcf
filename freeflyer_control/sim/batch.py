"""Many independent simulations at once: :func:`run_batch` (the basis of Monte-Carlo campaigns).

Each configuration is run by :func:`~freeflyer_control.sim.runner.run_simulation`, the same
function ``freeflyer sim`` calls, so a batched run gives what a single run of the same
configuration gives (same engine choice, same physics, same summary). Runs are spread over
worker processes, one per CPU by default: the physics and controllers are Python and
Pinocchio calls that hold the GIL, so threads would not run them side by side.

Workers are forked from a server process that has already imported the simulation and loaded
the compiled engine (POSIX ``forkserver``; :mod:`._batch_worker`), so a worker starts in
milliseconds and no worker inherits the caller's threads. Where numba's cache is cold (the first
compiled run on a machine), the fork server compiles the kernels once (30-80 s) before the first
batch's workers start.
A worker sends back the time series and the summary; the robot model (not picklable in every
Pinocchio build) is loaded once per distinct robot in the caller.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Sequence

from freeflyer_control.model import load_robot
from freeflyer_control.sim.config import SimConfig
from freeflyer_control.sim.result import SimResult
from freeflyer_control.sim.runner import run_simulation


def default_workers(n_runs: int) -> int:
    """One worker per CPU this process may use, and no more workers than runs."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(n_runs, cpus))


def _run_one(config: SimConfig, fast: bool | None):
    """In a worker: the picklable parts of ``run_simulation(config)``'s result."""
    result = run_simulation(config, fast=fast)
    return result.series, result.column_names, result.summary


def run_batch(configs: Sequence[SimConfig], *, workers: int | None = None,
              fast: bool | None = None) -> list[SimResult]:
    """Run every configuration to the end; results in the order of ``configs``.

    Args:
        configs: the runs (any mix of robots, modes, controllers, maneuvers, seeds). Each is
            validated before any runs, so a bad one costs nothing.
        workers: processes to use; default :func:`default_workers`. 1 runs them one after the
            other in this process.
        fast: as in ``run_simulation`` (None: the compiled engine where it covers a run).

    Raises:
        ValueError: a configuration ``run_simulation`` refuses (the first one, by position), or
            ``workers`` below 1.
    """
    configs = list(configs)
    for i, config in enumerate(configs):
        try:
            config.validate()
        except ValueError as exc:
            raise ValueError(f"run {i} of the batch: {exc}") from None
    n = default_workers(len(configs)) if workers is None else int(workers)
    if n < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if n == 1 or len(configs) <= 1:
        return [run_simulation(c, fast=fast) for c in configs]
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if ctx.get_start_method() == "forkserver":
        ctx.set_forkserver_preload(["freeflyer_control.sim._batch_worker"])
    with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
        parts = list(pool.map(_run_one, configs, [fast] * len(configs)))
    robots: dict = {}
    results = []
    for config, (series, columns, summary) in zip(configs, parts):
        key = (config.robot, config.base, tuple(config.ee) if config.ee is not None else None)
        if key not in robots:
            robots[key] = load_robot(config.robot, base=config.base, end_effectors=config.ee)
        results.append(SimResult(robots[key], config, series, columns, summary))
    return results
