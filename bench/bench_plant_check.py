"""What the plant's divergence check costs: Plant.step now against Plant.step of an earlier commit.

Usage (from the repository root):

    python bench/bench_plant_check.py                 # against 939e85e, the plant before the check
    python bench/bench_plant_check.py --before REF --reps 201 --steps 50

Both plants step the same state under the same gentle actuation (arm torques at 2 % of their
limits, so no run comes near a divergence bound), in interleaved batches of ``--steps`` steps
(the order alternating each repetition) timed by ``timeit`` with the process CPU clock: time the
process spends waiting for a core on a loaded machine does not count. The old ``plant.py`` is
read from git and imported next to the current package (only that module is old: the actuators,
dynamics and linear algebra it calls are the current ones). Prints the median and the minimum
microseconds per step of each, and the difference.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "test"))

from conftest import BUNDLED_ROBOTS, random_state, robot  # noqa: E402

from freeflyer_control.physics.actuators import Actuation  # noqa: E402
from freeflyer_control.physics.plant import Plant  # noqa: E402


def old_plant(ref: str):
    """The Plant class of ``physics/plant.py`` at git ``ref``."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:freeflyer_control/physics/plant.py"],
                            check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp(prefix="ffc_plant_before_")) / "plant_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("plant_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["plant_before"] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module.Plant


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="939e85e", help="git ref of the plant to compare with")
    parser.add_argument("--reps", type=int, default=201, help="timed batches per plant")
    parser.add_argument("--steps", type=int, default=50, help="steps per batch")
    args = parser.parse_args()
    before = old_plant(args.before)
    print(f"{'robot':<16} {'before µs':>10} {'after µs':>10} {'extra µs':>9} {'extra':>7}   min before -> after")
    for name in BUNDLED_ROBOTS:
        ff = robot(name)
        s0 = random_state(ff, np.random.default_rng(0), joint_rate=0.5)
        act = Actuation(0.02 * ff.arm_effort_limits)
        plants = {"before": before(ff, s0, 2e-3), "after": Plant(ff, s0, 2e-3)}
        times: dict[str, list[float]] = {"before": [], "after": []}
        for rep in range(args.reps):
            for key in (("before", "after") if rep % 2 else ("after", "before")):
                plant = plants[key]
                plant.state = s0
                timer = timeit.Timer(lambda p=plant: p.step(act), timer=time.process_time)
                times[key].append(timer.timeit(number=args.steps) / args.steps * 1e6)
        b, a = np.median(times["before"]), np.median(times["after"])
        print(f"{name:<16} {b:10.1f} {a:10.1f} {a - b:9.1f} {100 * (a - b) / b:6.1f}%   "
              f"{min(times['before']):.1f} -> {min(times['after']):.1f}")


if __name__ == "__main__":
    main()
