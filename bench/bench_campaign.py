"""Throughput of ``freeflyer campaign`` on the local Dask pool, and its scheduling overhead.

Two campaigns, each flown on 1 and on 2 local worker processes (the same path as a cluster):

* Wilde on planar_4link, floating, computed torque, 30 s at 250 Hz, with mass-property error,
  encoder noise and latency dispersed (the pure-Python lockstep: dispersions need it);
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

CASES = {
    "Wilde, planar_4link floating, 30 s": {
        "robot": "planar_4link", "mode": "floating", "controller": "computed_torque", "maneuver": "wilde",
        "duration": 30, "seed": 1,
        "dispersions": {"mass_error": {"uniform": [-0.1, 0.1]}, "joint_noise": {"normal": [0, 0.001], "min": 0},
                        "latency": {"uniform": [0, 0.008]}}},
    "station keeping via testbed, 10 s": {
        "via_testbed": "planar_4link", "mode": "flying", "maneuver": "station-keeping", "duration": 10, "seed": 1,
        "dispersions": {"capture_position_noise": {"uniform": [0, 0.002]}, "capture_latency": {"uniform": [0, 0.02]}}},
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
    args = parser.parse_args()
    before = cpu_times()
    print("| campaign | workers | runs | tasks | start-up s | runs/min | speed-up | s per run | CPU s per run "
          "| overhead per run |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, raw in CASES.items():
        raw = {**raw, "runs": 4 if args.quick else args.runs}
        if args.quick:
            raw["duration"] = raw["duration"] / 10
        base = None
        for workers in (1, 2):
            rate, per_run, overhead, tasks, startup, cpu = measure(raw, workers)
            base = base or rate
            print(f"| {name} | {workers} | {raw['runs']} | {tasks} | {startup:.1f} | {rate:.1f} | {rate / base:.2f}x | "
                  f"{per_run:.2f} | {cpu:.2f} | {overhead * 1000:.0f} ms ({100 * overhead / per_run:.1f} %) |", flush=True)
    print()
    cost = scheduling_cost()
    print(f"scheduling cost of an empty task on 2 local workers: {cost * 1000:.1f} ms of pool time "
          "(a batch of b runs pays it once)")
    print(load_during(before, cpu_times()))
    for fact in machine_facts():
        print(fact)


if __name__ == "__main__":
    main()
