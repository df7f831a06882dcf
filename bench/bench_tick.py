#!/usr/bin/env python3
"""Where a tick of the compiled engine goes: the plant step against the controller kernel.

A run of the compiled engine (``freeflyer sim``; by default floating mode, computed torque, the
Wilde maneuver, spatial_6link at 1 kHz; ``--mode``, ``--controller``, ``--maneuver`` choose
another), measured in one process:

1. the CPU time of ``run_simulation(config, fast=True)`` over ``--sim-seconds`` (after the
   kernels are compiled or loaded from numba's cache; the run's set-up included) per tick, and
   the real-time factor on it (what an idle machine's wall clock would give) and on the wall
   clock (also the time other processes ran, on a busy machine);
2. interleaved (bench_core's method: rotating order, medians of batches), per tick, each in a
   compiled loop of ``--chunk`` ticks as the engine runs them (each batch from the next of a set
   of random states):

   * the plant step(s): ``plant_step`` x plant_substeps (a Cholesky solve with the given M, b,
     the articulated-body algorithm in the other three RK stages, then CRBA + RNEA at the new
     state: the projection's base rows, and the M, b the controller of the next tick uses),
     stepping on under small held torques;
   * on an end-effector maneuver, the joint reference (``control.kernels.resolved_rate.ee_joint_reference``: the
     targets, the GJM, the damped least-squares solve; under computed torque also the kinematics
     and CRBA at the integrated reference), on states near the maneuver's start.

The rest of a tick (the computed-torque law of ``control.kernels.computed_torque.mode_effort``, the joint
reference of a joint maneuver and the PD law, saturation, the divergence check, the compiled
logging, and the Recorder's series computed after each compiled chunk) is the tick's CPU time
minus the cases above.

    python bench/bench_tick.py [--robot spatial_6link] [--rate 1000] [--sim-seconds 10]
    python bench/bench_tick.py --controller resolved_rate --maneuver ee-point [--mode flying]

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

from freeflyer_control.model import load_robot  # noqa: E402
from freeflyer_control.physics.momentum import world_momentum  # noqa: E402
from freeflyer_control.physics.state import State  # noqa: E402
from freeflyer_control.sim import fast  # noqa: E402
from freeflyer_control.sim.config import SimConfig  # noqa: E402
from freeflyer_control.sim.runner import run_simulation  # noqa: E402

N_STATES = 64


def kernel_cases(robot: str, rate: float, substeps: int, chunk: int) -> list[bench_core.Case]:
    from numba import njit

    from freeflyer_control.physics.kernels import rigid_body as K
    from freeflyer_control.physics.kernels.arrays import kernel_model

    ff = load_robot(robot)
    kmm = kernel_model(ff)
    km, m, nb = kmm.arrays(), ff.model, ff.nb
    rng = np.random.default_rng(0)
    states = bench_core.random_states(ff, rng, N_STATES)
    Q = np.ascontiguousarray([s.q for s in states])
    V = np.ascontiguousarray([s.v for s in states])
    ws = K.workspace(m.njoints - 1, m.nq, m.nv, nb)
    tau = np.zeros(m.nv)
    tau[kmm.arm_v] = rng.uniform(-0.05, 0.05, kmm.arm_v.size) * kmm.effort  # gentle: no divergence
    mom, qn, vn = np.zeros(nb), np.empty(m.nq), np.empty(m.nv)
    M, b = np.empty((m.nv, m.nv)), np.empty(m.nv)
    h = 1.0 / rate / substeps

    Mn, bn = np.empty((m.nv, m.nv)), np.empty(m.nv)
    q, v = Q[0].copy(), V[0].copy()

    # not cached: numba would not see a change of the kernels it calls; without numba's runtime,
    # as the engine's run_ticks (no reference counts)
    @njit(_nrt=False)
    def plant(n, substeps, km, planar, nb, q, v, tau, h, mom, M, b, qn, vn, Mn, bn, ws):
        for _ in range(n):  # the engine's loop: each step from the last one's state and M, b
            for _ in range(substeps):
                K.plant_step(km, planar, nb, q, v, tau, h, mom, M, b, qn, vn, Mn, bn, ws)
                for i in range(qn.shape[0]):
                    q[i] = qn[i]
                for i in range(vn.shape[0]):
                    v[i] = vn[i]
                    b[i] = bn[i]
                    for j in range(vn.shape[0]):
                        M[i, j] = Mn[i, j]

    start = [0]

    def restart():  # each batch from the next random state, its M, b and momentum
        start[0] = (start[0] + 1) % N_STATES
        q[:], v[:] = Q[start[0]], V[start[0]]
        K.mass_and_bias(km, q, v, M, b, ws)
        mom[:] = world_momentum(ff, data, State(q, v))

    def plant_ticks():
        plant(chunk, substeps, km, kmm.planar, nb, q, v, tau, h, mom, M, b, qn, vn, Mn, bn, ws)

    data = ff.create_data()
    restart()
    plant_ticks()  # compiled before the warm-up
    return [bench_core.Case(robot, f"plant step x {substeps} (per tick)", plant_ticks, restart)]


def reference_case(robot: str, mode: str, controller: str, maneuver: str, chunk: int) -> bench_core.Case:
    """The end-effector joint reference of a compiled tick (``control.kernels.resolved_rate.ee_joint_reference``:
    targets, the GJM, the damped least-squares solve; under computed torque also the kinematics
    and CRBA at the integrated reference), on states near the maneuver's start."""
    from numba import njit

    from freeflyer_control.control.loop import ControlLoop
    from freeflyer_control.control.maneuvers import make_maneuver
    from freeflyer_control.physics.kernels import reduced as PC
    from freeflyer_control.physics.gjm import mode_layout
    from freeflyer_control.physics.modes import Mode
    from freeflyer_control.physics.kernels import rigid_body as K
    from freeflyer_control.control.kernels import resolved_rate as TK
    from freeflyer_control.physics.kernels.arrays import kernel_model
    from freeflyer_control.sim.fast.runner import _task_arrays
    from freeflyer_control.sim.config import initial_state

    import pinocchio as pin

    ff = load_robot(robot)
    man = make_maneuver(maneuver)
    start = initial_state(ff, SimConfig(robot=robot, maneuver=maneuver), man)
    loop = ControlLoop(ff, man, mode=mode, controller=controller)
    loop.start(start)
    task = _task_arrays(ff, loop, man, start, Mode.parse(mode))
    kmm = kernel_model(ff)
    km, m, nb = kmm.arrays(), ff.model, ff.nb
    na, ne = kmm.arm_v.size, len(ff.end_effectors)
    rng = np.random.default_rng(1)
    Q = np.ascontiguousarray([pin.integrate(m, start.q, 0.05 * rng.normal(size=m.nv)) for _ in range(N_STATES)])
    V = np.ascontiguousarray(0.1 * rng.normal(size=(N_STATES, m.nv)))
    ws = K.workspace(m.njoints - 1, m.nq, m.nv, nb)
    args = (km, controller == "resolved_rate", mode_layout(PC, ff, Mode.parse(mode)), nb, task,
            TK.task_workspace(m.njoints - 1, m.nv, nb), TK.rate_workspace(m.nq, m.nv, nb, na, 6 * ne), ws,
            kmm.arm_q, kmm.arm_kind, np.empty(na), np.empty(na), np.empty(na), np.empty((ne, 3)), np.empty((ne, 3)))
    M, b = np.empty((m.nv, m.nv)), np.empty(m.nv)
    state = [0]

    @njit(_nrt=False)  # as plant() above
    def references(n, q, v, M, args):
        km, resolved, layout, nb, task, tws, rws, ws, arm_q, arm_kind, qa, pos, vel, tpos, tvel = args
        K.arm_positions(q, arm_q, arm_kind, qa)
        s = 0.0
        for k in range(n):
            s += TK.ee_joint_reference(km, resolved, layout, nb, q, v, M, ws[0], ws[1], 0.001 * k, 0.001, task, tws, rws, ws,
                                       arm_q, arm_kind, qa, pos, vel, tpos, tvel, False)
        return s

    def restart():
        state[0] = (state[0] + 1) % N_STATES
        K.mass_and_bias(km, Q[state[0]], V[state[0]], M, b, ws)

    def run():
        references(chunk, Q[state[0]], V[state[0]], M, args)

    restart()
    run()  # compiled before the warm-up
    what = "GJM + damped least squares" + ("" if controller == "resolved_rate" else " + kinematics and CRBA at the reference")
    return bench_core.Case(robot, f"end-effector reference: {what} (per tick)", run, restart)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robot", default="spatial_6link")
    parser.add_argument("--rate", type=float, default=1000.0, help="control rate, Hz")
    parser.add_argument("--substeps", type=int, default=1, help="plant steps per control tick")
    parser.add_argument("--sim-seconds", type=float, default=10.0)
    parser.add_argument("--chunk", type=int, default=10, help="ticks per compiled call")
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--mode", default="floating")
    parser.add_argument("--controller", default="computed_torque", choices=("computed_torque", "resolved_rate"))
    parser.add_argument("--maneuver", default="wilde", choices=("wilde", "station-keeping", "ee-point", "ee-circle"))
    args = parser.parse_args(argv)
    if args.controller == "resolved_rate" and not args.maneuver.startswith("ee-"):
        parser.error("--controller resolved_rate needs an end-effector maneuver (ee-point, ee-circle)")
    if not fast.available():
        print("numba is not installed: the compiled engine is missing (pip install '.[fast]')")
        return 0
    from freeflyer_control.sim.fast.runner import warm_up

    print(f"compiled engine: JIT warm-up (compile or cache load) {warm_up():.2f} s")
    cases = kernel_cases(args.robot, args.rate, args.substeps, args.chunk)
    if args.maneuver.startswith("ee-"):
        cases.append(reference_case(args.robot, args.mode, args.controller, args.maneuver, args.chunk))
    stat0 = bench_core.cpu_times()
    config = SimConfig(robot=args.robot, mode=args.mode, maneuver=args.maneuver, controller=args.controller,
                       duration=args.sim_seconds, rate=args.rate, plant_substeps=args.substeps)
    cpu0 = time.process_time()
    summary = run_simulation(config, fast=True).summary
    cpu = time.process_time() - cpu0
    rtf = summary["real_time_factor"]  # wall clock: on a busy machine, also the time others ran
    tick_us = 1e6 * cpu / (args.sim_seconds * args.rate)  # CPU time: what the tick costs
    bench_core.run(cases, args.repeats, args.batch, warmup=20)
    stat1 = bench_core.cpu_times()
    per_tick = {c.quantity: float(np.median(c.samples)) / args.chunk / 1e3 for c in cases}
    facts = bench_core.machine_facts() + [
        bench_core.load_during(stat0, stat1),
        f"{args.robot}, {args.mode}, {args.controller}, {args.maneuver} at {args.rate:g} Hz x {args.substeps} plant "
        f"substeps; engine {summary['engine']}; kernels timed in compiled loops of {args.chunk} ticks, "
        f"{args.repeats} repeats x {args.batch} calls, interleaved",
    ]
    lines = ["| per control tick | median µs | share of the tick |", "|---|---:|---:|",
             f"| whole tick: `freeflyer sim` CPU time, set-up included / ticks ({args.sim_seconds:g} s simulated; "
             f"real-time factor {1e6 / (tick_us * args.rate):.1f} on CPU time, {rtf:.1f} on the loop's wall clock) | "
             f"{tick_us:.2f} | 100 % |"]
    rest = tick_us
    for name, us in per_tick.items():
        lines.append(f"| {name} | {us:.2f} | {100 * us / tick_us:.0f} % |")
        rest -= us
    lines.append(f"| the rest: the control law, PD, checks, logging, the Recorder's series, the run's set-up | {rest:.2f} | "
                 f"{100 * rest / tick_us:.0f} % |")
    bench_core.emit(facts, "\n".join(lines), None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
