#!/usr/bin/env python3
"""Where a run on the Python engine spends its time: the plant step against everything else, for
the runs that `freeflyer sim` keeps on the Python engine (ee-contact, a held object, capture) and,
for reference, an open-chain joint maneuver forced onto it. ee-contact and capture take the
compiled plant step where numba is installed (physics.kernels.plant.make_plant); ee-contact is
also run with ``--engine python``'s Python step, for the comparison.

Each run is the CLI's own (``run_simulation``, ``run_object_simulation``, ``run_capture``) at its
defaults, shortened to ``--duration`` simulated seconds, run twice: the second is timed (the first
loads the modules, the robot and numba's cache). Every plant step is timed (thread CPU
clock, the nested ``step`` of a subclass counted once); the table gives, per run: ticks, µs per
tick in all, µs per plant step, the plant's share of the run, and the bound Amdahl puts on what a
plant step costing nothing would gain (run / (run - plant)). The last column is the same bound
with the plant step at the compiled open-chain step of the run's own model (``CompiledPlant``,
timed here on that model; contact and the closed chain would add their own work to it), where
numba is installed.

Usage (from the repository root):

    python bench/bench_plant_share.py [--duration S] [--markdown FILE]

This is a benchmark, not a test: nothing in test/ depends on timings.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_core  # noqa: E402  (also puts the working tree first on sys.path)

import numpy as np  # noqa: E402

from freeflyer_control.physics.plant import Plant  # noqa: E402

CLOCK = time.thread_time_ns


class StepTimer:
    """Times every plant step while installed (Plant.step and the ``step`` of its subclasses)."""

    def __init__(self):
        self.ns, self.steps, self.models, self._depth = 0, 0, [], 0

    def __enter__(self):
        from freeflyer_control.physics.closed_chain import ClosedChainPlant

        classes = [Plant, ClosedChainPlant]
        from freeflyer_control.physics.kernels import available
        if available():
            from freeflyer_control.physics.kernels.plant import CompiledPlant
            classes.append(CompiledPlant)
        self._saved = [(cls, cls.step) for cls in classes]
        for cls, step in self._saved:
            cls.step = self._timed(step)
        return self

    def __exit__(self, *exc):
        for cls, step in self._saved:
            cls.step = step

    def _timed(self, step):
        timer = self

        def timed(plant, *args, **kwargs):
            timer._depth += 1
            t0 = CLOCK()
            try:
                return step(plant, *args, **kwargs)
            finally:
                timer._depth -= 1
                if timer._depth == 0:
                    timer.ns += CLOCK() - t0
                    timer.steps += 1
                    if plant.ff not in timer.models:
                        timer.models.append(plant.ff)
        return timed


def runs(duration: float):
    """(name, the run's callable, its ticks) of each run measured."""
    from freeflyer_control.sim.capture import CaptureConfig, run_capture
    from freeflyer_control.sim.config import SimConfig
    from freeflyer_control.sim.cooperative import ObjectSimConfig, run_object_simulation
    from freeflyer_control.sim.runner import run_simulation

    out = [("open chain: planar_4link wilde, computed torque (--engine python)",
            lambda: run_simulation(SimConfig(maneuver="wilde", duration=duration), fast=False), 250.0),
           ("ee-contact: planar_4link, impedance on a fixed wall (--engine python: Python plant step)",
            lambda: run_simulation(SimConfig(maneuver="ee-contact", controller="impedance", duration=duration),
                                   fast=False), 250.0),
           ("the same (--engine auto: its plant step compiled where numba is installed)",
            lambda: run_simulation(SimConfig(maneuver="ee-contact", controller="impedance", duration=duration)),
            250.0)]
    for robot, obj in (("dual_arm_planar", "planar_box"), ("spatial_dual_arm", "spatial_box")):
        config = ObjectSimConfig(robot=robot, obj=obj, duration=duration)
        out.append((f"held object: {robot} + {obj}, object-transport",
                    lambda c=config: run_object_simulation(c), config.rate))
    capture = CaptureConfig(duration=duration)
    out.append((f"capture: {capture.robot} + {capture.obj} (approach, grasp, rest; plant steps compiled where "
                "numba is installed)",
                lambda: run_capture(capture), capture.rate))
    return out


def compiled_step_us(models) -> float | None:
    """Median µs of CompiledPlant.step on the heaviest of ``models`` at rest under small joint
    torques; None without numba or where the kernels do not cover a model."""
    from freeflyer_control.physics.kernels import available

    if not available():
        return None
    from freeflyer_control.physics.kernels.arrays import NotCovered
    from freeflyer_control.physics.kernels.plant import CompiledPlant
    from freeflyer_control.physics.state import make_state

    ff = max(models, key=lambda m: m.model.nv)
    try:
        plant = CompiledPlant(ff, make_state(ff), 1e-3)
    except NotCovered:
        return None
    tau = np.zeros(ff.model.nv)
    tau[ff.nb:] = 0.01
    samples = []
    for _ in range(200):
        t0 = CLOCK()
        for _ in range(10):
            plant.step(tau=tau)
        samples.append((CLOCK() - t0) / 10e3)
    return float(np.median(samples))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=4.0, help="simulated seconds per run")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="also write the result here")
    args = parser.parse_args(argv)
    stat0 = bench_core.cpu_times()
    lines = ["| run (Python engine) | ticks | µs per tick | µs per plant step | plant share | "
             "gain bound, plant free | gain bound, compiled open-chain step |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, run, rate in runs(args.duration):
        run()   # once untimed: imports, model loading and numba's cache (or compile) out of the way
        with StepTimer() as timer:
            t0 = CLOCK()
            run()
            total = CLOCK() - t0
        ticks = int(round(args.duration * rate))
        share = timer.ns / total
        compiled = compiled_step_us(timer.models)
        step_us = timer.ns / max(timer.steps, 1) / 1e3
        bound = "n/a" if compiled is None else (
            f"{total / (total - timer.ns + timer.steps * compiled * 1e3):.2f}× ({compiled:.0f} µs)")
        lines.append(f"| {name} | {ticks} | {total / ticks / 1e3:.0f} | {step_us:.0f} | {100 * share:.0f} % | "
                     f"{1 / (1 - share):.2f}× | {bound} |")
    facts = bench_core.machine_facts() + [
        bench_core.load_during(stat0, bench_core.cpu_times()),
        f"{args.duration:g} simulated s per run, timed on the thread CPU clock (the plant steps: each "
        "step; the run: from start to end, its setup included, on its second call)",
    ]
    bench_core.emit(facts, "\n".join(lines), args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
