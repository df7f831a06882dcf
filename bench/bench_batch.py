#!/usr/bin/env python3
"""Throughput of batched simulation: runs x simulated seconds per wall-clock second.

``run_batch`` (freeflyer_control.sim.batch) on 1, 8 and 64 independent runs of spatial_6link at
1 kHz, each with its own mass error seed (a Monte-Carlo campaign's shape), one process and one
worker per CPU, for two engines:

* compiled: floating mode, computed torque, the Wilde maneuver (the case the compiled engine runs);
* python: flying mode, the impedance law on the end-effector point maneuver (the Python engine:
  the compiled one does not cover impedance).

Each row is timed once, after a warm-up per engine: one run in this process and one batch over
the workers (numba's compilation, loaded from its cache after the first use, and the start of
the fork server, once per process, are not counted). The machine is shared: the load line says how busy
it was. Throughput = n_runs * simulated seconds per run / wall seconds of the whole batch.

Usage (from the repository root):

    python bench/bench_batch.py [--duration S] [--runs 1,8,64] [--markdown FILE]

This is a benchmark, not a test: nothing in test/ depends on timings.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_core  # noqa: E402  (also puts the working tree first on sys.path)

from freeflyer_control.sim.batch import default_workers, run_batch  # noqa: E402
from freeflyer_control.sim.config import SimConfig  # noqa: E402

ENGINES = {
    "compiled": dict(mode="floating", controller="computed_torque", maneuver="wilde"),
    # the impedance law: a run the compiled engine does not cover
    "python": dict(mode="flying", controller="impedance", maneuver="ee-point"),
}


def configs(engine: str, n: int, duration: float) -> list[SimConfig]:
    return [SimConfig(robot="spatial_6link", rate=1000.0, duration=duration, mass_error=0.05, seed=i,
                      log_rate=50.0, **ENGINES[engine]) for i in range(n)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=2.0, help="simulated seconds per run")
    parser.add_argument("--runs", default="1,8,64", help="batch sizes, comma-separated")
    parser.add_argument("--engines", default="compiled,python", help="compiled, python or both")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="also write the result here")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.runs.split(",") if x]
    engines = [e for e in args.engines.split(",") if e]
    unknown = set(engines) - set(ENGINES)
    if unknown or not sizes or min(sizes) < 1 or not args.duration > 0:
        parser.error(f"--engines from {sorted(ENGINES)}, --runs >= 1, --duration > 0")
    cpus = default_workers(10**6)
    lines = ["| engine | runs | workers | wall s | runs x sim s / wall s | per run, x real time |",
             "|---|---:|---:|---:|---:|---:|"]
    stat0 = bench_core.cpu_times()
    for engine in engines:
        run_batch(configs(engine, 1, 0.05), workers=1)  # compile / load the engine
        if cpus > 1:  # start the fork server once (import + engine load, ~1-2 s), as a campaign would
            run_batch(configs(engine, cpus, 0.05), workers=cpus)
        for n in sizes:
            for workers in sorted({1, min(n, cpus)}):
                t0 = time.perf_counter()
                results = run_batch(configs(engine, n, args.duration), workers=workers)
                wall = time.perf_counter() - t0
                used = {r.summary["engine"] for r in results}
                assert used == {"compiled (numba)" if engine == "compiled" else "python"}, used
                rate = n * args.duration / wall
                lines.append(f"| {engine} | {n} | {workers} | {wall:.2f} | {rate:.1f} | "
                             f"{rate / min(n, workers):.1f} |")
                print(lines[-1], flush=True)
    facts = bench_core.machine_facts() + [
        bench_core.load_during(stat0, bench_core.cpu_times()),
        f"spatial_6link at 1 kHz, {args.duration:g} simulated s per run, log 50 Hz; "
        f"{cpus} worker(s) at most",
    ]
    bench_core.emit(facts, "\n".join(lines), args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
