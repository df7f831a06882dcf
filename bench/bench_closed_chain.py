"""What holding an object costs: a closed-chain plant step against an open-chain step of the same
robot, and a cooperative control tick.

Usage (from the repository root):

    python bench/bench_closed_chain.py                 # dual_arm_planar and spatial_dual_arm
    python bench/bench_closed_chain.py --reps 101 --steps 50

Both plants integrate the robot in its held pose (the object attached: the open-chain plant of
the same model, loops left open, is the reference) under the same arm torques (2 % of their
limits), in interleaved batches of ``--steps`` steps timed by ``timeit`` with the process CPU
clock (time spent waiting for a core on a loaded machine does not count). Prints the median and
the minimum microseconds per step, their ratio (target: at most 2), the cooperative tick, and the
machine's load average before and after (the figures move with it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import timeit
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from freeflyer_control.control.cooperative import CooperativeController  # noqa: E402
from freeflyer_control.physics.actuators import Actuation  # noqa: E402
from freeflyer_control.physics.closed_chain import ClosedChainPlant  # noqa: E402
from freeflyer_control.physics.plant import Plant  # noqa: E402
from freeflyer_control.sim.cooperative import ObjectSimConfig, prepare  # noqa: E402

PAIRS = (("dual_arm_planar", "planar_box"), ("spatial_dual_arm", "spatial_box"))


def per_step(make, actuation, reps: int, steps: int) -> np.ndarray:
    """µs per step of ``steps`` steps, ``reps`` times, each batch from a fresh plant."""
    out = []
    for _ in range(reps):
        plant = make()
        t = timeit.Timer(lambda: plant.step(actuation), timer=time.process_time).timeit(steps)
        out.append(1e6 * t / steps)
    return np.array(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=51, help="timed batches per plant")
    parser.add_argument("--steps", type=int, default=50, help="steps per batch")
    args = parser.parse_args()
    print("load average (1, 5, 15 min) before: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"{'robot':<18} {'open µs':>8} {'closed µs':>10} {'ratio':>6}   {'tick µs':>8}   (medians; min open/closed)")
    for robot, obj in PAIRS:
        ff, o, held, state, maneuver = prepare(ObjectSimConfig(robot=robot, obj=obj))
        actuation = Actuation(arm_torques=0.02 * held.arm_effort_limits)
        opened = per_step(lambda: Plant(held, state, 0.002), actuation, args.reps, args.steps)
        closed = per_step(lambda: ClosedChainPlant(held, o, state, 0.002), actuation, args.reps, args.steps)
        controller = CooperativeController(held, o, "floating", 5.0)
        ref = maneuver(1.0)
        tick = timeit.Timer(lambda: controller.tick(state, ref), timer=time.process_time)
        ticks = np.array([1e6 * tick.timeit(20) / 20 for _ in range(args.reps)])
        print(f"{robot:<18} {np.median(opened):8.0f} {np.median(closed):10.0f} "
              f"{np.median(closed) / np.median(opened):6.2f}   {np.median(ticks):8.0f}   "
              f"({opened.min():.0f} / {closed.min():.0f})")
    print("load average (1, 5, 15 min) after: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
