#!/usr/bin/env python3
"""Where a lockstep period goes without ROS: sim_loop_node's objects, in one process.

The period of ``runtime.lockstep.LockstepLoop`` (the plant server's step and measurement, the
hand-over to the controller server, its tick, the commands back), on the robot's ready pose with
an end-effector target 5 cm away (as bench_ros_loop.py sends it, so that every tick runs the
task-space law), measured on the thread's CPU clock per stage, in sim_loop_node's order: the
step and the measurement after the commands, before the sleep (``LockstepLoop.opening``,
``step_ahead``, ``measure_ahead``), or first in a checkout from before that change. What the
ROS node adds (message conversion, publication, the executor) is bench_ros_loop.py's; this
isolates the Python and compiled work the node's period wraps, on hot caches (the node's own
figures are higher: between two of its periods other processes run).

``--compare DIR`` measures another checkout (e.g. a ``git worktree`` of main) beside this one:
child processes of each, alternating, so that before and after see the same machine.

``--paced`` runs the periods on the node's schedule (each at its time on the monotonic clock,
sleeping in between, a late one at once) instead of back to back: between two periods the
caches go to whatever else runs, as in the node. ``--cpu-share F`` (root) runs each child in a
CPU bandwidth group of F of a core (bench/slow_cpu.py, the emulated slower machine of
bench_ros_loop.py) and times ``sum(range(10**7))`` in such a group before and after: what the
node's own Python and compiled work cost on that machine, without ROS.

    python bench/bench_lockstep.py [--robot planar_4link] [--rate 500] [--compare DIR]
    python bench/bench_lockstep.py --paced --cpu-share 0.37 [--compare DIR]   # root

Prints one table: per source, the median over rounds of each stage's CPU per period (us), and
of the period's compiled calls alone: the numba kernels one period calls from Python (the plant
step, the resolved-rate and computed-torque laws, the saturations), recorded with their
arguments and replayed on the same schedule, without the Python between them (what a period
compiled as one call could come down to). This is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
STAGES = ("step", "measurement", "handover", "tick", "command")
KERNELS = "compiled calls alone"   # the period's numba kernels replayed on its schedule (compiled_calls)


def _mark(times: dict[str, int], stage: str, t0: int, clock) -> int:
    t = clock()
    times[stage] = t - t0
    return t


def child(robot: str, rate: float, rounds: int, periods: int, paced: bool = False,
          python_periods: bool = False) -> dict[str, list[float]]:
    """Per round, each stage's mean CPU per period (us) and the whole period's, in this process
    (imports the freeflyer_control on sys.path: this checkout, or the one --compare names)."""
    import pinocchio as pin

    from freeflyer_control.model import load_robot
    from freeflyer_control.physics.state import make_state
    from freeflyer_control.runtime.controller_server import ControllerServer
    from freeflyer_control.runtime.lockstep import LockstepLoop
    from freeflyer_control.runtime.plant_server import PlantServer

    ff = load_robot(robot)
    dt = 1.0 / rate
    # compiled=None: plant_node's default (plant_step:=auto), the compiled step where numba is
    plant = PlantServer(ff, make_state(ff, joint_positions=dict(ff.ready_pose)), rate=rate, compiled=None)
    controller = ControllerServer(ff, rate=rate)
    # A checkout with compiled periods (runtime.compiled_period) computes plain ones in one call
    # (LockstepLoop.tick_and_step), unless python_periods: every period through the Python calls.
    fused = hasattr(LockstepLoop, "tick_and_step") and not python_periods
    loop = LockstepLoop(plant, controller, compiled=False) if python_periods else LockstepLoop(plant, controller)
    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, plant.plant.state.q)
    ee = ff.end_effectors[0]
    target = data.oMf[ff.frame_id(ee)].translation + np.array([0.05, -0.03, 0.0])
    clock = time.thread_time_ns
    # sim_loop_node's order in the checkout measured: the node now steps and measures the plant
    # right after the commands (LockstepLoop.opening / step_ahead / measure_ahead), before its
    # sleep; before, first thing after it.
    split = hasattr(loop, "measure_ahead")
    k = 0
    start = time.monotonic()

    def wait_for_period() -> None:
        """Sleep until period k starts on sim_loop_node's schedule (when paced)."""
        delay = start + k * dt - time.monotonic()
        if paced and delay > 0:
            time.sleep(delay)

    def periods_of(n: int, sums: dict[str, int] | None) -> None:
        nonlocal k
        for _ in range(n):
            wait_for_period()
            now = k * dt
            if k == 2:
                controller.set_ee_target(ee, target, None)
            times = {}
            t = clock()
            if not split:
                loop.plant.step(now)
                t = _mark(times, "step", t, clock)
            fields = loop.opening(now)[1] if split else loop.plant.measurement()
            t = _mark(times, "measurement", t, clock)
            loop.handover(fields, now)
            t = _mark(times, "handover", t, clock)
            if fused:   # the tick, the commands and the step: one compiled call where plain
                loop.tick_and_step(now)
                t = _mark(times, "tick", t, clock)
                times["command"] = times["step"] = 0
            else:
                out = loop.controller.tick(now)
                t = _mark(times, "tick", t, clock)
                loop.command(out.actuation, now)
                t = _mark(times, "command", t, clock)
            if split and not fused:   # the step and the measurement after the commands, before the sleep
                loop.step_ahead(now)
                t = _mark(times, "step", t, clock)
            if split:
                loop.measure_ahead()
                times["measurement"] += clock() - t
            if sums is not None:
                for stage, ns in times.items():
                    sums[stage] += ns
            k += 1

    periods_of(500, None)  # warm: kernels loaded, the target reached its tracking regime
    out: dict[str, list[float]] = {name: [] for name in STAGES + ("period", KERNELS)}
    for _ in range(rounds):
        sums = dict.fromkeys(STAGES, 0)
        periods_of(periods, sums)
        for stage in STAGES:
            out[stage].append(sums[stage] / periods / 1e3)
        out["period"].append(sum(sums.values()) / periods / 1e3)
    calls = compiled_calls(lambda: periods_of(1, None))
    if calls:  # (none without numba: the row stays empty)
        for _ in range(rounds):
            total = 0
            for _ in range(periods):
                wait_for_period()
                t = clock()
                for kernel, args, kwargs in calls:
                    kernel(*args, **kwargs)
                total += clock() - t
                k += 1
            out[KERNELS].append(total / periods / 1e3)
    return out


def compiled_calls(run) -> list[tuple]:
    """(kernel, arguments, keyword arguments) of every numba kernel ``run()`` calls from Python,
    in order. Replayed alone on the period's schedule, they are what a period costs without the
    Python between them: the kernels read their inputs from their arguments and write only their
    outputs and scratch, so a replay repeats the same work."""
    from numba.core.registry import CPUDispatcher

    calls = []
    own = CPUDispatcher.__dict__.get("__call__")
    call = CPUDispatcher.__call__

    def record(kernel, *args, **kwargs):
        calls.append((kernel, args, kwargs))
        return call(kernel, *args, **kwargs)

    CPUDispatcher.__call__ = record
    try:
        run()
    finally:
        if own is None:
            del CPUDispatcher.__call__
        else:
            CPUDispatcher.__call__ = own
    return calls


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robot", default="planar_4link")
    parser.add_argument("--rate", type=float, default=500.0, help="Hz, the plant's and the controller's")
    parser.add_argument("--compare", metavar="DIR", default=None, help="another checkout, measured alternately")
    parser.add_argument("--alternations", type=int, default=4, help="child processes per source")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per child process")
    parser.add_argument("--periods", type=int, default=400, help="periods per round")
    parser.add_argument("--paced", action="store_true", help="periods on the node's schedule, sleeping between them")
    parser.add_argument("--cpu-share", type=float, default=None, metavar="F",
                        help="each child in a CPU bandwidth group of F of a core (root; bench/slow_cpu.py)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--python-periods", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.robot, args.rate, args.rounds, args.periods, args.paced, args.python_periods)))
        return 0
    if args.cpu_share is None:
        return measure(args, subprocess.run)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from slow_cpu import CALIBRATION, SlowCpu, SlowCpuError

    try:
        with SlowCpu(args.cpu_share) as slow:
            print(f"each child limited to {slow.share:g} of a core (CFS quota {slow.quota_us} us every "
                  f"{slow.period_us} us); {CALIBRATION} in such a group: {slow.calibrate(3):.3f} s before")

            def run(cmd, **kwargs):
                kwargs.pop("capture_output")
                timeout = kwargs.pop("timeout")
                proc = slow.popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)
                out, err = proc.communicate(timeout=timeout)
                return subprocess.CompletedProcess(cmd, proc.returncode, out, err)

            code = measure(args, run)
            print(f"{CALIBRATION} in such a group after: {slow.calibrate(3):.3f} s")
            return code
    except SlowCpuError as exc:
        parser.error(f"--cpu-share: {exc}")


def measure(args, run) -> int:
    """The alternating child processes (``run``: subprocess.run's signature) and the table."""
    # (label, checkout, every period through the Python calls)
    if args.compare:
        sources = [("before", Path(args.compare).resolve(), False), ("after", REPO, False)]
    else:
        sources = [("Python periods", REPO, True), ("compiled periods", REPO, False)]
    results: dict[str, dict[str, list[float]]] = {label: {} for label, _, _ in sources}
    for _ in range(args.alternations):
        for label, source, python_periods in sources:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(source), os.environ.get("PYTHONPATH", "")]))
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--robot", args.robot,
                   "--rate", str(args.rate), "--rounds", str(args.rounds), "--periods", str(args.periods)]
            cmd += ["--paced"] if args.paced else []
            cmd += ["--python-periods"] if python_periods else []
            done = run(cmd, env=env, cwd=str(source), capture_output=True, text=True, timeout=1800)
            if done.returncode != 0:
                print(f"{source}: the child process failed:\n{done.stderr}", file=sys.stderr)
                return 1
            rows = json.loads(done.stdout.strip().splitlines()[-1])
            for name, values in rows.items():
                results[label].setdefault(name, []).extend(values)
    how = "paced at the rate" if args.paced else "back to back"
    share = f", each child at {args.cpu_share:g} of a core" if args.cpu_share is not None else ""
    print(f"lockstep period in process ({how}{share}): {args.robot} at {args.rate:g} Hz, end-effector target; "
          "CPU per period, us, "
          f"median of {args.alternations * args.rounds} rounds of {args.periods} periods "
          f"(load average {os.getloadavg()[0]:.2f} at the end)")
    labels = [label for label, _, _ in sources]
    print("| stage | " + " | ".join(labels) + f" | {labels[1]} / {labels[0]} |")
    print("|---|" + "---:|" * (len(labels) + 1))
    for name in STAGES + ("period", KERNELS):
        if not all(results[label].get(name) for label in labels):
            continue   # no compiled calls (numba absent)
        medians = [float(np.median(results[label][name])) for label in labels]
        ratio = f"{medians[1] / medians[0]:.2f}" if medians[0] else "-"
        print(f"| {name} | " + " | ".join(f"{m:.1f}" for m in medians) + f" | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
