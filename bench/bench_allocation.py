"""Thruster allocation speed: the list-based path, the one definition compiled and interpreted.

Prints a Markdown table of median per-call times (interleaved batches, like bench_core.py) of,
for achievable and saturated requests on each robot:

* ``allocate, list-based`` : ``ThrusterAllocator.allocate`` without numba (cached subset SVDs
  on Python lists; what allocate ran before the kernel);
* ``allocate, compiled``   : ``ThrusterAllocator.allocate`` with numba (the default): checks,
  the compiled kernel, the Allocation record;
* ``kernel, compiled, from Python``: ``sim.fast.allocation.allocate_forces`` called directly;
* ``kernel, compiled, in a compiled loop``: the same function called from numba code, as the
  compiled simulation engine calls it (per call; one timed call runs CHUNK requests, so under
  load its batches are CHUNK times as long and absorb more of other processes' time slices);
* ``kernel, interpreted``  : ``control.allocation_kernel.allocate_forces`` run by Python (the
  same source, not compiled; timed in a pass of its own with a tenth of the calls: it is slow);

with the ratio of each to the list-based ``allocate``. Needs numba (pip extra ``fast``).

    python bench/bench_allocation.py [--robots planar_4link spatial_6link] [--repeats 15]
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
    from freeflyer_control.sim.fast.allocation import allocate_forces

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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--robots", nargs="+", default=["planar_4link", "spatial_6link"])
    p.add_argument("--repeats", type=int, default=15, help="timed batches per case")
    p.add_argument("--batch", type=int, default=40, help="calls per timed batch")
    p.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = p.parse_args(argv)
    if not fast.available():
        print("bench_allocation needs numba (pip install 'freeflyer_control[fast]')", file=sys.stderr)
        return 2
    from numba import njit

    from freeflyer_control.sim.fast.allocation import allocate_forces

    @njit(cache=False)
    def loop_kernel(B, A2, u, params, W, F, work, iwork, start):
        for k in range(start, start + CHUNK):
            allocate_forces(B, A2, u, params, W[k], F[k], work, iwork)

    rng = np.random.default_rng(0)
    all_cases = [c for name in args.robots for c in cases(name, rng, loop_kernel)]
    before = cpu_times()
    # The interpreted kernel runs ~100 times longer per call: timed in its own pass, so that its
    # long batches do not sit between the others' (under load they change what follows them).
    slow = [c for c in all_cases if c.quantity == "kernel, interpreted"]
    run([c for c in all_cases if c not in slow], args.repeats, args.batch, warmup=args.batch)
    run(slow, args.repeats, max(1, args.batch // 10), warmup=1)
    load = load_during(before, cpu_times())

    lines = ["| robot, requests | allocation | median µs per call | p90 µs | ratio to list-based allocate |",
             "|---|---|---:|---:|---:|"]
    base = {}
    for case in all_cases:
        per_call = CHUNK if "compiled loop" in case.quantity else 1
        med = float(np.median(case.samples)) / 1e3 / per_call
        p90 = float(np.percentile(case.samples, 90)) / 1e3 / per_call
        if case.quantity == "allocate, list-based":
            base[case.robot] = med
        lines.append(f"| {case.robot} | {case.quantity} | {med:.2f} | {p90:.2f} | "
                     f"{med / base[case.robot]:.2f} |")
    facts = machine_facts() + [load, f"load average at the end (1, 5, 15 min): {os.getloadavg()}"]
    emit(facts, "\n".join(lines), args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
