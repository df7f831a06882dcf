"""Thruster allocation speed: the list-based path, the one definition compiled and interpreted.

Prints a Markdown table of median per-call times (interleaved batches, like bench_core.py) of,
for achievable and saturated requests on each robot:

* ``allocate, list-based`` : ``ThrusterAllocator.allocate`` without numba (cached subset SVDs
  on Python lists; what allocate ran before the kernel);
* ``allocate, compiled``   : ``ThrusterAllocator.allocate`` with numba (the default): checks,
  the compiled kernel, the Allocation record;
* ``kernel, compiled, from Python``: ``control.kernels.allocation.allocate_forces`` called directly;
* ``kernel, compiled, in a compiled loop``: the same function called from numba code, as the
  compiled simulation engine calls it (per call; one timed call runs CHUNK requests, so under
  load its batches are CHUNK times as long and absorb more of other processes' time slices);
* ``kernel, interpreted``  : ``control.allocation_kernel.allocate_forces`` run by Python (the
  same source, not compiled; timed in a pass of its own with a tenth of the calls: it is slow);

with the ratio of each to the list-based ``allocate``. Those pools are 64 unrelated requests
taken in turn, so the warm start (the last optimal basis, tried first) rarely holds: they time
the cold solve. The warm start is timed on closed-loop sequences: the base wrenches, in
base_link axes, that the compiled engine's computed-torque loop asks of spatial_6link's
thrusters at 1 kHz, every tick in order (``--sequences``: rotation-flying on wilde, all
achievable; flying and translation-flying station-keeping, partly saturated), each with the
warm start on and off (``allocator_arrays(..., warm_start=False)``, i.e. the solver before it),
the kernel in a compiled loop and ``allocate``.

``--closed-loop`` also runs ``freeflyer sim`` (compiled engine, spatial_6link, 1 kHz,
thrusters) in those modes with the warm start on and off, interleaved, and prints the median
real-time factors.

    python bench/bench_allocation.py [--robots planar_4link spatial_6link] [--repeats 15]
    python bench/bench_allocation.py --robots --closed-loop   # the warm start only
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import Case, cpu_times, emit, load_during, machine_facts, run  # noqa: E402

from freeflyer_control.control import allocation  # noqa: E402
from freeflyer_control.control import allocation_kernel as kernel  # noqa: E402
from freeflyer_control.control.allocation import ThrusterAllocator  # noqa: E402
from freeflyer_control.model import load_robot  # noqa: E402
from freeflyer_control.sim import fast  # noqa: E402

POOL = 64  # distinct requests per case, taken in turn
CHUNK = 8  # requests per call of the compiled loop
SEQUENCES = ("rotation-flying:wilde", "flying:station-keeping", "translation-flying:station-keeping")
SEQUENCE_SECONDS = 2.0  # simulated s of each recorded sequence (2000 requests at 1 kHz)


def requests(al: ThrusterAllocator, rng: np.random.Generator, kind: str) -> np.ndarray:
    """Achievable: made by forces inside [0, u]. Saturated: 1.05-3 times the thrusters' total
    reach along a random direction."""
    if kind == "achievable":
        return rng.uniform(0.05, 0.95, (POOL, al.n)) * al.max_forces @ al.B.T
    d = rng.normal(size=(POOL, al.nb))
    reach = np.linalg.norm(al.B, axis=0) @ al.max_forces
    return d / np.linalg.norm(d, axis=1, keepdims=True) * reach * rng.uniform(1.05, 3.0, (POOL, 1))


def _cycle(pool: np.ndarray):
    """A function returning the next request of the pool at each call."""
    state = {"i": 0}

    def nxt():
        state["i"] = (state["i"] + 1) % len(pool)
        return pool[state["i"]]

    return nxt


def cases(name: str, rng: np.random.Generator, loop_kernel) -> list[Case]:
    """The cases of one robot."""
    from freeflyer_control.control.kernels.allocation import allocate_forces

    ff = load_robot(name)
    compiled = ThrusterAllocator(ff)
    real = allocation._compiled_kernel
    allocation._compiled_kernel = lambda: None
    try:
        lists = ThrusterAllocator(ff)
    finally:
        allocation._compiled_kernel = real
    args = kernel.allocator_arrays(compiled.B, compiled.max_forces)
    work, iwork = kernel.allocation_workspace(compiled.nb, compiled.n)
    f = np.zeros(compiled.n)
    out = []
    for kind in ("achievable", "saturated"):
        pool = np.ascontiguousarray(requests(compiled, rng, kind))
        forces = np.zeros((POOL, compiled.n))
        label = f"{name}, {kind}"
        nxt = [_cycle(pool) for _ in range(4)]
        out += [
            Case(label, "allocate, list-based", lambda n=nxt[0]: lists.allocate(n())),
            Case(label, "allocate, compiled", lambda n=nxt[1]: compiled.allocate(n())),
            Case(label, "kernel, compiled, from Python",
                  lambda n=nxt[2]: allocate_forces(*args, n(), f, work, iwork)),
            # One call = CHUNK requests in one compiled loop; per-call time is divided below.
            Case(label, "kernel, compiled, in a compiled loop",
                  lambda n=_cycle(np.arange(0, POOL, CHUNK)), p=pool, o=forces:
                  loop_kernel(*args, p, o, work, iwork, n())),
            Case(label, "kernel, interpreted",
                  lambda n=nxt[3]: kernel.allocate_forces(*args, n(), f, work, iwork)),
        ]
    return out


def _closed_loop_config(spec: str, seconds: float, log_every_tick: bool, actuation: str = "thrusters"):
    from freeflyer_control.sim.config import SimConfig

    mode, maneuver = spec.split(":")
    return SimConfig(robot="spatial_6link", mode=mode, maneuver=maneuver, rate=1000.0, duration=seconds,
                     base_actuation=actuation, log_rate=1000.0 if log_every_tick else 50.0)


def closed_loop_requests(spec: str) -> np.ndarray:
    """The base wrenches (base_link axes, about its origin, N and N m) the compiled engine's
    loop allocates at each 1 kHz tick of ``spec`` ("mode:maneuver") on spatial_6link, in order
    (the ticks with a non-zero wrench)."""
    from freeflyer_control.physics.state import rotation_from_xyzw
    from freeflyer_control.sim.fast.runner import run_fast

    series = run_fast(_closed_loop_config(spec, SEQUENCE_SECONDS, True)).series
    out = []
    for w, xyzw in zip(series["base_wrench_world"], series["base_orientation_xyzw"]):
        if w.any():  # spatial: both parts turn by R^T (physics.actuators.world_wrench_to_local)
            R = rotation_from_xyzw(xyzw)
            out.append(np.r_[R.T @ w[:3], R.T @ w[3:]])
    return np.ascontiguousarray(out)


def sequence_cases(spec: str, loop_kernel) -> list[Case]:
    """The warm start on and off on one closed-loop sequence: the kernel in a compiled loop
    (CHUNK requests per call, in order) and ``allocate``. Each case has its own scratch, so
    each sees the sequence in order (wrapping around once at its end)."""
    ff = load_robot("spatial_6link")
    seq = closed_loop_requests(spec)
    label = f"spatial_6link, closed-loop {spec} ({len(seq)} requests)"
    out = []
    for warm in (True, False):
        tag = "warm start on" if warm else "warm start off"
        al = ThrusterAllocator(ff, warm_start=warm)
        args = kernel.allocator_arrays(al.B, al.max_forces, warm_start=warm)
        work, iwork = kernel.allocation_workspace(al.nb, al.n)
        forces = np.zeros((len(seq), al.n))
        starts = np.arange(0, len(seq) - CHUNK + 1, CHUNK)
        out += [
            Case(label, f"kernel, compiled, in a compiled loop, {tag}",
                 lambda n=_cycle(starts), a=args, o=forces, wk=work, iw=iwork:
                 loop_kernel(*a, seq, o, wk, iw, n())),
            Case(label, f"allocate, compiled, {tag}", lambda n=_cycle(seq), a=al: a.allocate(n())),
        ]
    return out


def closed_loop_rtf(specs, seconds: float, repeats: int) -> list[str]:
    """Markdown rows: per spec, ``freeflyer sim`` (compiled engine) with thrusters and the warm
    start on and off, and with the ideal base wrench (no allocator: the ceiling), the runs
    interleaved: the median real-time factor on the wall clock (``summary``, the loop alone)
    and on CPU time (the process's CPU time for the run less that of a one-tick run, the
    set-up; a busy machine's wall clock also counts other processes' time slices)."""
    import time

    from freeflyer_control.sim.fast import runner

    build = runner._allocator

    def cold(loop, nb):  # the runner's allocator arrays with the warm start off
        alloc = build(loop, nb)
        alloc[3][kernel.P_WARM_START] = 0.0
        return alloc

    settings = ("on", "off", "ideal")
    wall = {(spec, k): [] for spec in specs for k in settings}
    cpu = {(spec, k, d): [] for spec in specs for k in settings for d in (seconds, 0.001)}
    try:
        for r in range(repeats):
            for spec in specs:
                for k in settings[r % 3:] + settings[:r % 3]:
                    runner._allocator = cold if k == "off" else build
                    for d in (seconds, 0.001):
                        config = _closed_loop_config(spec, d, False, "ideal" if k == "ideal" else "thrusters")
                        c0 = time.process_time()
                        summary = runner.run_fast(config).summary
                        cpu[spec, k, d].append(time.process_time() - c0)
                        if d == seconds:
                            wall[spec, k].append(summary["real_time_factor"])
    finally:
        runner._allocator = build
    w = {key: float(np.median(v)) for key, v in wall.items()}
    c = {(spec, k): seconds / (float(np.median(cpu[spec, k, seconds])) - float(np.median(cpu[spec, k, 0.001])))
         for spec in specs for k in settings}
    rows = [f"| {spec} | {w[spec, 'on']:.1f} / {c[spec, 'on']:.1f} | {w[spec, 'off']:.1f} / {c[spec, 'off']:.1f} | "
            f"{w[spec, 'on'] / w[spec, 'off']:.2f} / {c[spec, 'on'] / c[spec, 'off']:.2f} | "
            f"{w[spec, 'ideal']:.1f} / {c[spec, 'ideal']:.1f} |" for spec in specs]
    return [f"freeflyer sim, compiled engine, spatial_6link, 1 kHz, {seconds:g} s simulated, medians of "
            f"{repeats} interleaved runs; real-time factor on the wall clock / on CPU time:", "",
            "| mode:maneuver | thrusters, warm start on | thrusters, warm start off | ratio on / off | "
            "ideal base wrench (no allocator) |", "|---|---:|---:|---:|---:|"] + rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--robots", nargs="*", default=["planar_4link", "spatial_6link"])
    p.add_argument("--repeats", type=int, default=15, help="timed batches per case")
    p.add_argument("--batch", type=int, default=40, help="calls per timed batch")
    p.add_argument("--markdown", type=Path, help="also write the table to this file")
    p.add_argument("--sequences", nargs="*", default=list(SEQUENCES),
                   help="closed-loop request sequences (mode:maneuver on spatial_6link) for the warm start")
    p.add_argument("--closed-loop", action="store_true",
                   help="also the real-time factor of freeflyer sim with the warm start on and off")
    p.add_argument("--sim-seconds", type=float, default=3.0, help="simulated s per --closed-loop run")
    p.add_argument("--sim-repeats", type=int, default=5, help="--closed-loop runs per spec and setting")
    args = p.parse_args(argv)
    if not fast.available():
        print("bench_allocation needs numba (pip install 'freeflyer_control[fast]')", file=sys.stderr)
        return 2
    from numba import njit

    from freeflyer_control.control.kernels.allocation import allocate_forces

    @njit(cache=False)
    def loop_kernel(B, A2, u, params, W, F, work, iwork, start):
        for k in range(start, start + CHUNK):
            allocate_forces(B, A2, u, params, W[k], F[k], work, iwork)

    rng = np.random.default_rng(0)
    all_cases = [c for name in args.robots for c in cases(name, rng, loop_kernel)]
    all_cases += [c for spec in args.sequences for c in sequence_cases(spec, loop_kernel)]
    before = cpu_times()
    # The interpreted kernel runs ~100 times longer per call: timed in its own pass, so that its
    # long batches do not sit between the others' (under load they change what follows them).
    slow = [c for c in all_cases if c.quantity == "kernel, interpreted"]
    if len(slow) < len(all_cases):
        run([c for c in all_cases if c not in slow], args.repeats, args.batch, warmup=args.batch)
    if slow:
        run(slow, args.repeats, max(1, args.batch // 10), warmup=1)
    load = load_during(before, cpu_times())

    lines = ["| robot, requests | allocation | median µs per call | p90 µs | ratio to the first row of its requests |",
             "|---|---|---:|---:|---:|"]
    base = {}
    for case in all_cases:
        per_call = CHUNK if "compiled loop" in case.quantity else 1
        med = float(np.median(case.samples)) / 1e3 / per_call
        p90 = float(np.percentile(case.samples, 90)) / 1e3 / per_call
        base.setdefault(case.robot, med)
        lines.append(f"| {case.robot} | {case.quantity} | {med:.2f} | {p90:.2f} | "
                     f"{med / base[case.robot]:.2f} |")
    if args.closed_loop:
        lines += [""] + closed_loop_rtf(args.sequences, args.sim_seconds, args.sim_repeats)
    facts = machine_facts() + [load, f"load average at the end (1, 5, 15 min): {os.getloadavg()}"]
    emit(facts, "\n".join(lines), args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
