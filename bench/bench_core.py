#!/usr/bin/env python3
"""Per-call cost of the physics hot paths, next to the raw Pinocchio calls they build on.

Measured, per robot:

* raw Pinocchio, the floors: ``pin.crba`` + ``pin.computeFrameJacobian`` (what a GJM needs
  from C++), ``pin.crba`` + ``pin.nonLinearEffects`` (what H*/C* need), ``pin.aba`` (what forward
  dynamics needs); the ratio column divides each row by its own floor (the plant step by the
  first), so the Python overhead is visible;
* GJM in each mode (``generalized_jacobian``, first end-effector);
* H*/C* in each mode (``reduced_dynamics``);
* with numba installed, the GJM and H*/C* rows take the compiled path
  (:mod:`freeflyer_control.physics.fastpath`) and rows tagged ``[NumPy]`` time the NumPy
  reference path as well; the ``path`` column says which path each row took;
* forward dynamics: ``generalized_forces`` of an :class:`Actuation` + ``forward_dynamics``;
* one plant step (``Plant.step``: CF4, four ABA calls, momentum projection).

Method: every measured function is warmed up, then the repeats interleave all of them (all
robots, the order rotated each repeat) so that machine noise hits them alike and the ratios
are side by side. Each sample is ``time.perf_counter_ns`` around a batch of consecutive calls,
divided by the batch size; the table gives the median and the 90th percentile of those
per-call samples. The garbage collector is off while a batch runs (as in ``timeit``).

Usage (from the repository root):

    python bench/bench_core.py [--repeats N] [--robots planar_4link,spatial_6link]
                               [--modes all | floating,flying,...]
                               [--markdown FILE] [--before GITREF]

``--before GITREF`` also times the GJM and H*/C* of an earlier commit, in the same interleaved
run: the hot-path modules (physics/{gjm,reduced,dynamics,modes,linalg}.py) of GITREF are read
with ``git show`` into a temporary package that uses the current tree for everything else.

This is a benchmark, not a test: nothing in test/ depends on timings.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import gc
import importlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
# Benchmark the working tree next to this script, not an installed copy of the package.
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

import freeflyer_control  # noqa: E402
from freeflyer_control.model import FreeFlyerModel, load_robot  # noqa: E402
from freeflyer_control.physics import fastpath  # noqa: E402
from freeflyer_control.physics.actuators import Actuation, generalized_forces  # noqa: E402
from freeflyer_control.physics.dynamics import forward_dynamics  # noqa: E402
from freeflyer_control.physics.gjm import generalized_jacobian  # noqa: E402
from freeflyer_control.errors import ModeError  # noqa: E402
from freeflyer_control.physics.modes import Mode  # noqa: E402
from freeflyer_control.physics.plant import Plant  # noqa: E402
from freeflyer_control.physics.reduced import reduced_dynamics  # noqa: E402
from freeflyer_control.physics.state import State, make_state  # noqa: E402

DEFAULT_ROBOTS = ("planar_4link", "spatial_6link", "spatial_7dof")
DEFAULT_MODES = tuple(m.value for m in Mode)  # all five; --modes floating,flying for fewer rows
RAW = "raw Pinocchio (crba + computeFrameJacobian)"
RAW_DYN = "raw Pinocchio (crba + nonLinearEffects)"
# Which raw row each quantity's ratio divides by: the Pinocchio calls it is built on.
FLOOR_OF = {"H*/C*": RAW_DYN, "forward dynamics": "raw Pinocchio (aba)"}
TARGET = ("spatial_6link", "GJM floating", 30.0)  # robot, quantity, median budget in us
FLOOR_RATIO_TARGET = 3.0  # issue 13: GJM and H*/C* within 3x the Pinocchio calls they build on
PLANT_DT = 1e-3  # s; a step costs the same whatever dt is
N_STATES = 16  # distinct random states per robot, cycled through by the calls
HOT_PATHS = ("gjm", "reduced", "dynamics", "modes", "linalg")  # what --before swaps in


# --------------------------------------------------------------------------------------------
# Inputs


def random_states(ff: FreeFlyerModel, rng: np.random.Generator, n: int) -> list[State]:
    """n random states with every velocity non-zero (so momentum and wheel terms are active):
    any base pose, joints within +-1.2 rad, joint rates within +-0.5 rad/s."""
    states = []
    for _ in range(n):
        if ff.base == "planar":
            pose = dict(base_position=(*rng.uniform(-1, 1, 2), 0.0),
                        base_yaw=float(rng.uniform(-np.pi, np.pi)))
            lin = (*rng.uniform(-0.1, 0.1, 2), 0.0)
            ang = (0.0, 0.0, float(rng.uniform(-0.2, 0.2)))
        else:
            quat = rng.normal(size=4)
            pose = dict(base_position=rng.uniform(-1, 1, 3),
                        base_orientation_xyzw=quat / np.linalg.norm(quat))
            lin = rng.uniform(-0.1, 0.1, 3)
            ang = rng.uniform(-0.2, 0.2, 3)
        states.append(make_state(
            ff, **pose, base_linear_velocity=lin, base_angular_velocity=ang,
            joint_positions=rng.uniform(-1.2, 1.2, ff.nj),
            joint_velocities=rng.uniform(-0.5, 0.5, ff.nj),
        ))
    return states


def random_actuation(ff: FreeFlyerModel, rng: np.random.Generator) -> Actuation:
    """Every actuator busy, within its limits (so saturation has work but clips little)."""
    return Actuation(
        arm_torques=0.5 * rng.uniform(-1, 1, len(ff.arm_joint_names)) * ff.arm_effort_limits,
        wheel_torques=0.5 * rng.uniform(-1, 1, len(ff.wheel_joint_names)) * ff.wheel_max_torques,
        thruster_forces=0.5 * rng.uniform(0, 1, len(ff.thrusters)) * ff.thruster_max_forces,
    )


# --------------------------------------------------------------------------------------------
# Measured functions


@dataclass
class Case:
    robot: str
    quantity: str
    call: Callable[[], object]  # one call on the next state of the pool
    reset: Callable[[], None] = lambda: None  # run before each batch, outside the timing
    path: str = "-"  # the GJM / H*/C* path: fastpath.COMPILED or fastpath.NUMPY
    samples: list[float] = field(default_factory=list)  # per-call ns, one per batch

    def on_its_path(self):
        """Context in which the calls take this case's path (entered outside the timing)."""
        return fastpath.forced("numpy") if self.path == fastpath.NUMPY else contextlib.nullcontext()


class StatePool:
    """Hands out the states in turn, so consecutive calls do not see identical inputs."""

    def __init__(self, states: list[State]):
        self.states, self.i = states, 0

    def next(self) -> State:
        self.i = (self.i + 1) % len(self.states)
        return self.states[self.i]


def load_before(ref: str):
    """(generalized_jacobian, reduced_dynamics) of commit ``ref`` (see the module docstring)."""
    tmp = Path(tempfile.mkdtemp(prefix="ffc_bench_before_"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    pkg = tmp / "_ffc_before"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for module in HOT_PATHS:
        try:
            src = subprocess.run(
                ["git", "-C", str(REPO), "show", f"{ref}:freeflyer_control/physics/{module}.py"],
                capture_output=True, text=True, timeout=30, check=True,
            ).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            sys.exit(f"--before {ref}: cannot read physics/{module}.py from git: {exc}")
        for other in HOT_PATHS:  # the old modules import each other, not the current ones
            src = src.replace(f"freeflyer_control.physics.{other} import",
                              f"_ffc_before.{other} import")
        (pkg / f"{module}.py").write_text(src)
    sys.path.insert(0, str(tmp))
    gjm = importlib.import_module("_ffc_before.gjm")
    reduced = importlib.import_module("_ffc_before.reduced")
    return gjm.generalized_jacobian, reduced.reduced_dynamics


def robot_cases(name: str, rng: np.random.Generator, before=None,
                modes: tuple[str, ...] = DEFAULT_MODES) -> list[Case]:
    ff = load_robot(name)
    model, data = ff.model, ff.create_data()
    ee = ff.end_effectors[0]
    fid = model.getFrameId(ee)
    pool = StatePool(random_states(ff, rng, N_STATES))
    act = random_actuation(ff, rng)
    plant = Plant(ff, pool.states[0], PLANT_DT)
    LWA = pin.LOCAL_WORLD_ALIGNED

    def raw():
        q = pool.next().q
        pin.crba(model, data, q)
        pin.computeFrameJacobian(model, data, q, fid, LWA)

    def raw_dyn():
        s = pool.next()
        pin.crba(model, data, s.q)
        pin.nonLinearEffects(model, data, s.q, s.v)

    tau_fd = np.zeros(model.nv)

    def raw_aba():
        s = pool.next()
        pin.aba(model, data, s.q, s.v, tau_fd)

    def gjm(mode: str) -> Callable[[], object]:
        return lambda: generalized_jacobian(ff, data, pool.next(), mode, ee)

    def reduced(mode: str) -> Callable[[], object]:
        return lambda: reduced_dynamics(ff, data, pool.next(), mode)

    def fd():
        s = pool.next()
        tau = generalized_forces(ff, s.q, act, s.v)
        return forward_dynamics(ff, data, s.q, s.v, tau)

    def plant_reset():
        plant.state = pool.next()  # a batch of steps starts from a fresh random state

    default = fastpath.path()
    cases = [
        Case(name, RAW, raw),
        Case(name, RAW_DYN, raw_dyn),
        Case(name, FLOOR_OF["forward dynamics"], raw_aba),
        *(Case(name, f"GJM {mode}", gjm(mode), path=default) for mode in modes),
        *(Case(name, f"H*/C* {mode}", reduced(mode), path=default) for mode in modes),
        Case(name, "forward dynamics (generalized_forces + aba)", fd),
        Case(name, "Plant.step", lambda: plant.step(act), plant_reset),
    ]
    if default != fastpath.NUMPY:  # the reference path too, side by side
        for mode in modes:
            cases.append(Case(name, f"GJM {mode} [NumPy]", gjm(mode), path=fastpath.NUMPY))
        for mode in modes:
            cases.append(Case(name, f"H*/C* {mode} [NumPy]", reduced(mode), path=fastpath.NUMPY))
    if before is not None:
        ref, old_gjm, old_reduced = before
        for mode in modes:
            cases.append(Case(name, f"GJM {mode} [before {ref}]", lambda m=mode: old_gjm(
                ff, data, pool.next(), m, ee), path=fastpath.NUMPY))
        for mode in modes:
            cases.append(Case(name, f"H*/C* {mode} [before {ref}]", lambda m=mode: old_reduced(
                ff, data, pool.next(), m), path=fastpath.NUMPY))
    return cases


def run(cases: list[Case], repeats: int, batch: int, warmup: int, clock=time.perf_counter_ns) -> None:
    """Warm every case up, then time ``repeats`` batches of ``batch`` calls each, interleaved (see
    the module docstring). ``clock``: ns; ``time.thread_time_ns`` counts only this thread's CPU
    time, so the time other processes of a loaded machine take the core away is left out."""
    for case in cases:
        with case.on_its_path():
            for i in range(warmup):
                if i % batch == 0:  # as in the timed batches: a plant at half its effort limits
                    case.reset()    # for 200 steps in a row spins a light wrist past the divergence bound
                case.call()
    gc_was_enabled = gc.isenabled()
    try:
        for r in range(repeats):
            k = r % len(cases)  # rotate the order: no case always runs right after another
            for case in cases[k:] + cases[:k]:
                case.reset()
                call = case.call
                with case.on_its_path():
                    gc.disable()
                    t0 = clock()
                    for _ in range(batch):
                        call()
                    t1 = clock()
                if gc_was_enabled:
                    gc.enable()
                case.samples.append((t1 - t0) / batch)
    finally:
        if gc_was_enabled:
            gc.enable()


# --------------------------------------------------------------------------------------------
# Report


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of process ``pid`` so far, s (None once it is gone or off Linux)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")   # utime, stime (fields 14, 15)


def cpu_times() -> list[int] | None:
    """The aggregate 'cpu' line of /proc/stat (jiffies: user nice system idle iowait irq
    softirq steal ...), or None off Linux."""
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None


def load_during(before: list[int] | None, after: list[int] | None) -> str:
    """How busy the machine was while we measured: all CPUs' busy share (this benchmark
    included: it keeps one CPU busy) and the steal share (a VM's CPUs given to other guests)."""
    if not before or not after or len(before) < 8:
        return "machine load during the run: unknown"
    d = [b - a for a, b in zip(before, after)]
    total = sum(d[:8]) or 1
    busy = total - d[3] - d[4]  # minus idle and iowait
    return (f"during the run: all CPUs {100 * busy / total:.0f}% busy (this benchmark included), "
            f"{100 * d[7] / total:.0f}% stolen by the hypervisor; load average "
            f"{os.getloadavg()[0]:.2f}")


def machine_facts() -> list[str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = "unknown"
    import scipy

    facts = [
        f"date {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; "
        f"freeflyer_control {freeflyer_control.__version__} (git {commit})",
        f"python {platform.python_version()} ({platform.python_implementation()}), "
        f"numpy {np.__version__}, scipy {scipy.__version__}, pinocchio {pin.__version__}",
        f"cpu {cpu}; {os.cpu_count()} logical CPUs; {platform.system()} {platform.release()}",
    ]
    env = [f"{k}={os.environ[k]}" for k in
           ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS") if k in os.environ]
    if env:
        facts.append("env " + " ".join(env))
    return facts


def emit(facts: list[str], table: str, markdown: Path | None) -> None:
    """Print the machine facts and a result table; also write them to ``markdown`` if given."""
    text = "\n".join(facts) + "\n\n" + table
    print("\n" + text)
    if markdown:
        markdown.write_text(text + "\n")
        print(f"wrote {markdown}")


def summarise(cases: list[Case]) -> list[tuple[str, str, str, float, float, float]]:
    medians = {(c.robot, c.quantity): float(np.median(c.samples)) for c in cases}
    rows = []
    for c in cases:
        med = float(np.median(c.samples)) / 1e3
        p90 = float(np.percentile(c.samples, 90)) / 1e3
        floor = next((raw for prefix, raw in FLOOR_OF.items() if c.quantity.startswith(prefix)), RAW)
        if c.quantity.startswith("raw Pinocchio"):
            floor = c.quantity
        rows.append((c.robot, c.quantity, c.path, med, p90, med * 1e3 / medians[(c.robot, floor)]))
    return rows


def markdown_table(rows) -> str:
    lines = ["| robot | quantity | path | median µs | p90 µs | ratio to its raw Pinocchio floor |",
             "|---|---|---|---:|---:|---:|"]
    for robot, quantity, path, med, p90, ratio in rows:
        lines.append(f"| {robot} | {quantity} | {path} | {med:.1f} | {p90:.1f} | {ratio:.1f} |")
    return "\n".join(lines)


def target_line(rows) -> str:
    robot, quantity, budget = TARGET
    for r, q, _, med, _, _ in rows:
        if (r, q) == (robot, quantity):
            verdict = "PASS" if med <= budget else "FAIL"
            return (f"GJM {robot} floating median {med:.1f} µs "
                    f"(target ≤ {budget:.0f} µs): {verdict}")
    return f"GJM {robot} floating: not measured (add {robot} to --robots)"


def floor_ratio_line(rows) -> str:
    """Issue 13's target 2: every GJM and H*/C* row on the default path within 3x its floor."""
    mine = [(r, q, ratio) for r, q, path, _, _, ratio in rows
            if q.startswith(("GJM ", "H*/C* ")) and "[" not in q]
    if not mine:
        return "GJM and H*/C* against their floors: not measured"
    robot, quantity, worst = max(mine, key=lambda row: row[2])
    verdict = "PASS" if worst <= FLOOR_RATIO_TARGET else "FAIL"
    return (f"GJM and H*/C* ({fastpath.path()} path): worst ratio to the raw Pinocchio floor "
            f"{worst:.1f}x ({robot}, {quantity}; target <= {FLOOR_RATIO_TARGET:.0f}x): {verdict}")


def speedup_lines(rows) -> list[str]:
    """'before -> after' per robot and quantity, when --before was given."""
    medians = {(r, q): med for r, q, _, med, _, _ in rows}
    lines = []
    for (robot, quantity), med in medians.items():
        if " [before " in quantity:
            now = medians[(robot, quantity.split(" [before ")[0])]
            lines.append(f"{robot:<14} {quantity.split(' [')[0]:<15} before {med:6.1f} µs -> "
                         f"now {now:6.1f} µs ({med / now:.1f}x faster)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=400,
                        help="timed batches per measured function (default 400)")
    parser.add_argument("--batch", type=int, default=10,
                        help="consecutive calls per timed batch (default 10)")
    parser.add_argument("--warmup", type=int, default=200,
                        help="untimed calls per function before timing (default 200)")
    parser.add_argument("--robots", nargs="+", default=list(DEFAULT_ROBOTS),
                        help="bundled robot names, space- or comma-separated "
                             f"(default {','.join(DEFAULT_ROBOTS)})")
    parser.add_argument("--modes", default="all",
                        help="GJM and H*/C* modes, comma-separated, or 'all' (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="random states and commands")
    parser.add_argument("--markdown", type=Path, metavar="FILE",
                        help="also write the machine facts, the table and the target line here")
    parser.add_argument("--before", metavar="GITREF",
                        help="also time the GJM and H*/C* of this earlier commit (opt-in)")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.batch < 1 or args.warmup < 0:
        parser.error("--repeats and --batch must be >= 1, --warmup >= 0")
    robots = [r for item in args.robots for r in item.split(",") if r]
    try:
        modes = tuple(m.value for m in Mode) if args.modes == "all" else tuple(
            Mode.parse(m).value for m in args.modes.split(",") if m)
    except ModeError as exc:
        parser.error(f"--modes: {exc}")

    rng = np.random.default_rng(args.seed)
    before = (args.before, *load_before(args.before)) if args.before else None
    cases = [case for name in robots for case in robot_cases(name, rng, before, modes)]
    t0, stat0 = time.perf_counter(), cpu_times()
    run(cases, args.repeats, args.batch, args.warmup)
    elapsed, stat1 = time.perf_counter() - t0, cpu_times()

    rows = summarise(cases)
    facts = machine_facts() + [
        load_during(stat0, stat1),
        f"{args.repeats} repeats x {args.batch} calls per function, interleaved "
        f"({len(cases)} functions, {elapsed:.1f} s)",
    ]
    table = markdown_table(rows)
    verdict = target_line(rows) + "\n" + floor_ratio_line(rows)
    speedups = speedup_lines(rows)
    print("\n".join(facts) + "\n")
    print(table)
    print()
    if speedups:
        print("\n".join(speedups) + "\n")
    print(verdict)
    if args.markdown:
        args.markdown.write_text("\n".join(
            [*(f"    {f}" for f in facts), "", table, "",
             *(f"    {s}" for s in speedups), *([""] if speedups else []), verdict, ""]))
        print(f"wrote {args.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
