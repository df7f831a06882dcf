"""Throughput of ``freeflyer campaign`` on the local Dask pool, and its scheduling overhead.

Two campaigns, each flown on 1 and on 2 local worker processes (the same path as a cluster):

* the bundled spec (config/campaigns/wilde_dispersed.yaml: Wilde on planar_4link, floating,
  computed torque, 30 s at 250 Hz, with mass properties, sensor noise, latency and the start
  pose dispersed), once on the Python engine and once on the compiled one (the speed-up of
  dispersions on the compiled engine);
* station keeping through the emulated testbed (planar_4link testbed), 10 s, with capture noise
  and latency dispersed.

Runs per minute are counted from the first submitted task to the last result; the pool's start
and the workers' preparation (parsing the spec, loading the robot: a few seconds, paid once per
campaign) are shown apart. The overhead per run is what the
workers did not spend flying runs: (wall time x workers - sum of the runs' own times) / runs,
shown as a share of a run; it includes the tail where one worker finishes before the other
(and, on a shared machine, a worker that gets less CPU than the other). The scheduler's own cost
is measured apart with empty tasks. "CPU s per run" is the CPU time a run got: when it stays
the same from 1 to 2 workers while "s per run" grows, the runs waited for CPUs other jobs held.

    PYTHONPATH=. python bench/bench_campaign.py [--runs 12] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import cpu_times, load_during, machine_facts

from freeflyer_control.campaign.engine import run_campaign
from freeflyer_control.campaign.journal import Journal
from freeflyer_control.campaign.spec import parse_spec

BUNDLED = Path(__file__).resolve().parents[1] / "config" / "campaigns" / "wilde_dispersed.yaml"


def cases() -> dict[str, dict]:
    """The bundled spec on each engine (the "before" and "after" of dispersions on the compiled
    engine), and a campaign through the emulated testbed."""
    import yaml

    bundled = yaml.safe_load(BUNDLED.read_text())
    return {
        "bundled spec (Wilde, 30 s), Python engine": {**bundled, "engine": "python"},
        "bundled spec (Wilde, 30 s), compiled engine": {**bundled, "engine": "compiled"},
        "station keeping via testbed, 10 s": {
            "via_testbed": "planar_4link", "mode": "flying", "maneuver": "station-keeping", "duration": 10,
            "seed": 1, "dispersions": {"capture_position_noise": {"uniform": [0, 0.002]},
                                       "capture_latency": {"uniform": [0, 0.02]}}},
    }


def measure(raw: dict, workers: int):
    spec = parse_spec(raw)
    with tempfile.TemporaryDirectory() as folder:
        journal = Journal(Path(folder), spec)
        outcome = run_campaign(spec, journal, workers=workers)
        journal.close()
    per_run = outcome.compute_s / outcome.flown
    overhead = (outcome.wall_s * outcome.workers - outcome.compute_s) / outcome.flown
    return (outcome.flown / outcome.wall_s * 60, per_run, overhead, outcome.tasks, outcome.startup_s,
            outcome.cpu_s / outcome.flown)


def _noop(x):
    return x


def scheduling_cost(workers: int = 2, tasks: int = 400) -> float:
    """Seconds of pool time per task for tasks that do nothing: the scheduler's own cost, which
    a batch of b runs pays once (so b times less per run)."""
    import time

    from freeflyer_control.campaign.engine import connect

    client, cluster = connect(None, workers)
    try:
        client.gather(client.map(_noop, range(20), pure=False))  # warm the connections
        t0 = time.perf_counter()
        client.gather(client.map(_noop, range(tasks), pure=False))
        return (time.perf_counter() - t0) * workers / tasks
    finally:
        client.close()
        cluster.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12, help="runs per campaign (default 12)")
    parser.add_argument("--quick", action="store_true", help="4 runs of a tenth of the duration")
    parser.add_argument("--compiled-factor", type=int, default=8,
                        help="the compiled engine's campaign flies this many times --runs (default 8), so that "
                             "its wall time is not all start-up")
    args = parser.parse_args()
    before = cpu_times()
    print("| campaign | workers | runs | tasks | start-up s | runs/min | speed-up | s per run | CPU s per run "
          "| overhead per run |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rates = {}
    for name, raw in cases().items():
        runs = args.runs if "Python" in name or "testbed" in name else args.runs * args.compiled_factor
        raw = {**raw, "runs": 4 if args.quick else runs}
        if args.quick:
            raw["duration"] = raw["duration"] / 10
        base = None
        for workers in (1, 2):
            rate, per_run, overhead, tasks, startup, cpu = measure(raw, workers)
            base = base or rate
            rates[name, workers] = rate
            print(f"| {name} | {workers} | {raw['runs']} | {tasks} | {startup:.1f} | {rate:.1f} | {rate / base:.2f}x | "
                  f"{per_run:.3f} | {cpu:.3f} | {overhead * 1000:.0f} ms ({100 * overhead / per_run:.1f} %) |", flush=True)
    print()
    names = list(cases())
    for workers in (1, 2):
        ratio = rates[names[1], workers] / rates[names[0], workers]
        print(f"bundled spec, {workers} worker(s): compiled engine {ratio:.1f}x the runs per minute of the Python engine")
    print()
    cost = scheduling_cost()
    print(f"scheduling cost of an empty task on 2 local workers: {cost * 1000:.1f} ms of pool time "
          "(a batch of b runs pays it once)")
    print(load_during(before, cpu_times()))
    for fact in machine_facts():
        print(fact)


if __name__ == "__main__":
    main()
