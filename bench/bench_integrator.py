#!/usr/bin/env python3
"""The Python engine's integrator against an earlier commit's: accuracy and cost of one step.

The plant integrates with CF4 (physics/plant.py); up to commit 9e2df61 it integrated with
RKMK4. This benchmark reads physics/plant.py of ``--before`` (default 9e2df61) with ``git show``
into a module of its own (everything else from the current tree) and measures, for both:

* accuracy: from a random state (every joint and the base moving; torque-free), the error after
  1 s at steps of 20, 10 and 1 ms against the current plant at 0.1 ms (pin.difference of the
  configurations plus the velocity difference; the two plants at 0.1 ms agree to ~1e-12, printed
  as ``reference gap``); and the same for the base pose alone with the base tumbling at 3 rad/s,
  where an integrator that got its Lie-group update wrong loses its order first;
* cost: ``Plant.step(tau=...)`` of both, interleaved in batches of 20 steps from reset states,
  thread CPU clock, median over the batches, on SPART's 7-DOF URDF (PyPI ``spartpy``, if
  installed: bench/bench_mujoco.py's robot) and the bundled robots.

Usage (from the repository root):

    python bench/bench_integrator.py [--before 9e2df61] [--repeats 300]

This is a benchmark, not a test: nothing in test/ depends on timings.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pinocchio as pin

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import bench_core  # noqa: E402
from bench_spart import load_spart_robot, spart_urdf  # noqa: E402

from freeflyer_control.model import load_robot  # noqa: E402
from freeflyer_control.physics import plant as current  # noqa: E402
from freeflyer_control.physics.state import State  # noqa: E402

ROBOTS = ("planar_4link", "spatial_6link", "spatial_dual_arm")


def plant_module_of(ref: str):
    """physics/plant.py of commit ``ref``, imported as a module of its own."""
    try:
        src = subprocess.run(["git", "-C", str(REPO), "show", f"{ref}:freeflyer_control/physics/plant.py"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        sys.exit(f"--before {ref}: cannot read physics/plant.py from git: {exc}")
    name = "freeflyer_control.physics._plant_before"
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module   # dataclasses look their module up
    exec(compile(src, f"{ref}:freeflyer_control/physics/plant.py", "exec"), module.__dict__)
    return module


def tumbling(ff, state: State, base_rate: float) -> State:
    """``state`` with the base angular velocity scaled to ``base_rate`` rad/s."""
    v = state.v.copy()
    w = slice(2, 3) if ff.nb == 3 else slice(3, 6)
    v[w] *= base_rate / max(np.linalg.norm(v[w]), 1e-12)
    return State(state.q.copy(), v)


def run_to(module, ff, state, tau, dt, duration=1.0) -> State:
    plant = module.Plant(ff, state, dt)
    for _ in range(int(round(duration / dt))):
        plant.step(tau=tau)
    return plant.state


def accuracy_rows(before, seed: int) -> list[tuple]:
    rows = []
    for name in ROBOTS:
        ff = load_robot(name)
        start = bench_core.random_states(ff, np.random.default_rng(seed), 1)[0]
        for case, state in (("all moving", start), ("base tumbling", tumbling(ff, start, 3.0))):
            tau = np.zeros(ff.model.nv)   # torque-free: the plant's dynamics alone
            ref = run_to(current, ff, state, tau, 1e-4)
            gap_state = run_to(before, ff, state, tau, 1e-4)
            base_only = case == "base tumbling"

            def err(s):
                d = pin.difference(ff.model, ref.q, s.q)
                if base_only:
                    return float(np.linalg.norm(d[: ff.nb]))
                return float(np.linalg.norm(d) + np.linalg.norm(s.v - ref.v))

            errors = {dt: (err(run_to(before, ff, state, tau, dt)), err(run_to(current, ff, state, tau, dt)))
                      for dt in (0.02, 0.01, 0.001)}
            rows.append((name, case + (" (base pose)" if base_only else ""), f"{err(gap_state):.1e}",
                         *(f"{errors[dt][0]:.2e} / {errors[dt][1]:.2e}" for dt in errors),
                         f"{errors[0.02][0] / errors[0.01][0]:.1f} / {errors[0.02][1] / errors[0.01][1]:.1f}"))
    return rows


def cost_rows(before, repeats: int) -> list[tuple]:
    robots = []
    found = spart_urdf()
    if found is not None:
        robots.append(("SPART 7-DOF", load_spart_robot(found[1])))
    robots += [(name, load_robot(name)) for name in ROBOTS]
    rows = []
    for label, ff in robots:
        rng = np.random.default_rng(0)
        states = bench_core.random_states(ff, rng, 16)
        taus = [np.concatenate([np.zeros(ff.nb), rng.uniform(-1.0, 1.0, ff.nj)]) for _ in states]
        plants = {"before": before.Plant(ff, states[0], 1e-3), "now": current.Plant(ff, states[0], 1e-3)}
        samples = {k: [] for k in plants}
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            for r in range(repeats):
                order = ("before", "now") if r % 2 else ("now", "before")
                for key in order:
                    plant, i = plants[key], r % len(states)
                    plant.state, tau = states[i], taus[i]
                    t0 = time.thread_time_ns()
                    for _ in range(20):
                        plant.step(tau=tau)
                    samples[key].append((time.thread_time_ns() - t0) / 20e3)
        finally:
            if gc_was_enabled:
                gc.enable()
        b, n = np.median(samples["before"]), np.median(samples["now"])
        rows.append((label, ff.model.nv, f"{b:.1f}", f"{n:.1f}", f"{n / b:.3f}"))
    return rows


def table(head, rows) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(str(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="9e2df61", help="the earlier commit (default: the last RKMK4 plant)")
    parser.add_argument("--repeats", type=int, default=300, help="timed batches of 20 steps per plant")
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args(argv)
    before = plant_module_of(args.before)
    facts = bench_core.machine_facts()
    print("\n".join(facts))
    print(f"\nAccuracy after 1 s against the current plant at 0.1 ms (before {args.before} / now):\n")
    print(table(("robot", "state", "reference gap", "dt 20 ms", "dt 10 ms", "dt 1 ms", "20 -> 10 ms ratio"),
                accuracy_rows(before, args.seed)))
    stat0 = bench_core.cpu_times()
    rows = cost_rows(before, args.repeats)
    print(f"\n{bench_core.load_during(stat0, bench_core.cpu_times())}")
    print(f"One Plant.step(tau=...), median us of {args.repeats} interleaved batches of 20 (thread CPU clock):\n")
    print(table(("robot", "nv", f"before ({args.before})", "now", "now / before"), rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
