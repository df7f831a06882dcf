#!/usr/bin/env python3
"""Dynamic singularity maps: vectorised closed form against a plain per-configuration loop.

Measured, side by side in one run, in configurations per second:

* ``singularity_sample(..., method="closed-form")``: the floating-mode GJM of every
  configuration in closed form (numpy over the batch) and sigma_min, sigma_max of its planar
  position block (closed-form 2-row singular values); ``--n`` configurations;
* ``singularity_map``: the same on a sqrt(n) x sqrt(n) grid of two joints, grid set-up included;
* the plain loop: per configuration ``make_state`` + the package's ``generalized_jacobian``
  (Pinocchio) + ``np.linalg.svd`` of the same block; ``--loop-n`` configurations (a million
  would take about a minute), the rate being per configuration all the same.

Both compute the same numbers: the script checks that sigma_min agrees on the loop's
configurations before timing. The ratio column divides each rate by the loop's.

Robot: by default the planar base + 2-link arm of ``test/test_workspace.py`` (imported from
there, so that the benchmark and the tests share one set of numbers); ``--robot`` takes a
bundled planar robot or a URDF (with ``--base planar --ee FRAME``).

Method: one warm-up call each, then ``--repeats`` rounds alternating the methods (machine noise
hits them alike); the table gives the median rate (and the spread, min-max) over the rounds.

Usage (from the repository root):

    python bench/bench_analysis.py [--n 1000000] [--loop-n 5000] [--repeats 5]
                                   [--robot NAME|URDF --base planar --ee FRAME]

This is a benchmark, not a test: nothing in test/ depends on timings.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Benchmark the working tree next to this script, not an installed copy of the package.
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from bench_core import machine_facts  # noqa: E402  (bench/ is on sys.path: it holds this file)
from freeflyer_control.analysis.singularity_map import (  # noqa: E402
    singularity_map,
    singularity_sample,
)
from freeflyer_control.model import FreeFlyerModel, load_model, load_robot  # noqa: E402
from freeflyer_control.physics.gjm import generalized_jacobian  # noqa: E402
from freeflyer_control.physics.state import make_state  # noqa: E402


def test_robot() -> tuple[FreeFlyerModel, str]:
    """The two-link arm of test/test_workspace.py and its end-effector frame."""
    path = REPO / "test" / "test_workspace.py"
    spec = importlib.util.spec_from_file_location("test_workspace", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it executes
    spec.loader.exec_module(module)
    urdf = module.two_link_urdf(module.TwoLinkArm())
    return load_model(urdf, base="planar", end_effectors=[module.EE]), module.EE


def plain_loop(ff: FreeFlyerModel, frame: str, q: np.ndarray, columns: list[int]) -> np.ndarray:
    """sigma_min per configuration the plain way: state, package GJM, SVD."""
    data = ff.create_data()
    out = np.empty(q.shape[0])
    for k, angles in enumerate(q):
        state = make_state(ff, joint_positions=dict(zip(ff.arm_joint_names, angles)))
        G = generalized_jacobian(ff, data, state, "floating", frame).matrix
        out[k] = np.linalg.svd(G[:2][:, columns], compute_uv=False)[-1]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="configurations, vectorised")
    parser.add_argument("--loop-n", type=int, default=5000, help="configurations, plain loop")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds (median)")
    parser.add_argument("--robot", help="bundled planar robot or URDF (default: the test arm)")
    parser.add_argument("--base", choices=("planar",), help="base of a bare URDF")
    parser.add_argument("--ee", help="end-effector frame (default: the robot's first)")
    args = parser.parse_args(argv)
    if args.n < 4 or args.loop_n < 1 or args.repeats < 1:
        parser.error("--n must be >= 4, --loop-n and --repeats >= 1")

    if args.robot:
        ff = load_robot(args.robot, base=args.base, end_effectors=[args.ee] if args.ee else None)
        frame = args.ee or ff.end_effectors[0]
    else:
        ff, frame = test_robot()
    if ff.base != "planar":
        parser.error(f"robot '{ff.name}' is spatial: the closed form is for planar robots")

    rng = np.random.default_rng(0)
    q = rng.uniform(-np.pi, np.pi, (args.n, len(ff.arm_joint_names)))
    q_loop = q[: args.loop_n]
    side = int(np.sqrt(args.n))
    fast = singularity_sample(ff, frame, q_loop, method="closed-form")  # also the warm-up
    columns = [ff.arm_joint_names.index(c) for c in fast.columns]
    error = np.abs(fast.sigma_min - plain_loop(ff, frame, q_loop, columns)).max()

    cases = {
        f"vectorised closed form (`singularity_sample`), n = {args.n}":
            (args.n, lambda: singularity_sample(ff, frame, q, method="closed-form")),
        f"`singularity_map`, {side} x {side} grid":
            (side * side, lambda: singularity_map(ff, frame, resolution=side)),
        f"plain loop (`make_state` + `generalized_jacobian` + `np.linalg.svd`), n = {args.loop_n}":
            (args.loop_n, lambda: plain_loop(ff, frame, q_loop, columns)),
    }
    rates: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.repeats):
        for name, (count, call) in cases.items():
            start = time.perf_counter()
            call()
            rates[name].append(count / (time.perf_counter() - start))

    loop_rate = statistics.median(rates[list(cases)[-1]])
    print(f"Singularity map of '{frame}' on robot '{ff.name}' ({len(ff.arm_joint_names)} arm "
          f"joints; sigma_min of J*_xy over {list(fast.columns)}), "
          f"median of {args.repeats} rounds.")
    print(f"Closed form vs loop on {args.loop_n} configurations: max |d sigma_min| = {error:.1e}")
    print()
    print("| method | configurations/s (median) | min - max | time for 10^6 | ratio to loop |")
    print("|---|---:|---:|---:|---:|")
    for name, values in rates.items():
        med = statistics.median(values)
        print(f"| {name} | {med:,.0f} | {min(values):,.0f} - {max(values):,.0f} | "
              f"{1e6 / med:.2f} s | {med / loop_rate:.0f}x |")
    print()
    for fact in machine_facts():
        print(f"- {fact}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
