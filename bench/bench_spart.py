#!/usr/bin/env python3
"""One dynamics right-hand side, and one plant step, next to SPARTpy's ``space_robot_ode``.

Robot: SPART's own 7-DOF arm on a free-flying base, ``floating_7dof_manipulator.urdf`` as
shipped in PyPI ``spartpy``, loaded like ``--robot <that file> --base spatial --ee Link_EE``.

Measured, in one process, interleaved (bench_core's method: warm-up, then repeats that rotate
the order of all the functions, each sample a batch of consecutive calls; medians and p90):

* SPARTpy ``space_robot_ode(t, y, tau)``: one right-hand side of the free-floating dynamics
  (its compiled C core behind a ctypes call), the peer;
* ``pin.aba`` alone: the floor of a right-hand side through Pinocchio;
* ``forward_dynamics``: this package's right-hand side, accelerations from generalized forces
  (the ODE's right-hand side: the plant holds the forces over a step);
* ``generalized_forces`` + ``forward_dynamics``: the same with the actuator map and
  saturation in front (done once per plant step, not once per right-hand side);
* ``Plant.step`` / 4: a whole CF4 step (4 right-hand sides, 5 exponentials, the momentum
  projection with its mass matrix, the divergence checks), per right-hand side;
* the compiled engine's plant step (physics/kernels, numba, where numba is installed: ABA in
  three stages, M and b at the new state for the projection and the next step) / 4: what the same step
  costs compiled (no saturation, no divergence checks), called from Python, and in a compiled
  loop as the compiled engine runs it; and the fixed costs of a call from Python (numba's
  dispatch of its arguments, the scratch allocation), not divided.

The last column divides SPARTpy's median by each row's. SPARTpy is an optional benchmark peer
(``pip install -e '.[bench]'``), never a dependency: without it the URDF cannot be found either,
and the bench says so and exits.

Usage (from the repository root):

    python bench/bench_spart.py [--repeats N] [--batch N] [--markdown FILE]

This is a benchmark, not a test: nothing in test/ depends on timings.
"""

from __future__ import annotations

import argparse
import logging
import re
from importlib import metadata
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_core  # noqa: E402  (also puts the working tree first on sys.path)

import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

from freeflyer_control.model import load_robot  # noqa: E402
from freeflyer_control.physics.actuators import Actuation, generalized_forces  # noqa: E402
from freeflyer_control.physics.dynamics import forward_dynamics  # noqa: E402
from freeflyer_control.physics.plant import Plant  # noqa: E402
from freeflyer_control.physics.state import make_state  # noqa: E402

PEER = "SPARTpy space_robot_ode"
URDF = "floating_7dof_manipulator.urdf"
N_STATES = 16
PLANT_DT = 1e-3  # s; a step costs the same whatever dt is
LOOP = 4  # plant steps per call of the compiled loop row (short: a long batch absorbs preemption)


def spart_urdf():
    """(SPARTpy module, path of its 7-DOF URDF), or None where spartpy is not installed."""
    try:
        import SPARTpy
    except ImportError:
        return None
    return SPARTpy, Path(SPARTpy.__file__).parent / "urdf" / URDF


def load_spart_robot(urdf: Path):
    """SPART's 7-DOF URDF as this package's robot: ``--base spatial --ee Link_EE``."""
    loader_log = logging.getLogger("freeflyer_control.model.loader")
    level = loader_log.level
    loader_log.setLevel(logging.ERROR)  # the URDF's joints have no <limit>: one warning each
    try:
        return load_robot(str(urdf), base="spatial", end_effectors=["Link_EE"])
    finally:
        loader_log.setLevel(level)


def cases(rng: np.random.Generator, spartpy, urdf: Path) -> list[bench_core.Case]:
    ff = load_spart_robot(urdf)
    model, data = ff.model, ff.create_data()
    nj = ff.nj
    states = [make_state(ff, base_orientation_xyzw=(quat := rng.normal(size=4)) / np.linalg.norm(quat),
                         base_position=rng.uniform(-1, 1, 3),
                         base_linear_velocity=rng.uniform(-0.1, 0.1, 3),
                         base_angular_velocity=rng.uniform(-0.2, 0.2, 3),
                         joint_positions=rng.uniform(-1.2, 1.2, nj),
                         joint_velocities=rng.uniform(-0.5, 0.5, nj)) for _ in range(N_STATES)]
    # The URDF has no effort limits (treated as unlimited): torques of a few N m, as SPART's examples.
    act = Actuation(arm_torques=rng.uniform(-1.0, 1.0, nj))
    taus = [generalized_forces(ff, s.q, act, s.v) for s in states]
    pool = bench_core.StatePool(states)
    plant = Plant(ff, states[0], PLANT_DT)
    robot = "SPART 7-DOF"

    def aba():
        i = pool.i = (pool.i + 1) % N_STATES
        s = states[i]
        return pin.aba(model, data, s.q, s.v, taus[i])

    def rhs():
        i = pool.i = (pool.i + 1) % N_STATES
        s = states[i]
        return forward_dynamics(ff, data, s.q, s.v, taus[i])

    def rhs_with_actuators():
        s = pool.next()
        return forward_dynamics(ff, data, s.q, s.v, generalized_forces(ff, s.q, act, s.v))

    def plant_reset():
        plant.state = pool.next()

    out = []
    if spartpy is not None:
        sp = spartpy.SPART(str(urdf))
        inputs = []
        for s in states:
            R = pin.Quaternion(s.q[6], s.q[3], s.q[4], s.q[5]).toRotationMatrix()
            # SPART's state: R0 inertial->body, base CoM position, [w0; r0dot] (body; inertial),
            # joint angles and rates. Any consistent values do: only the cost is compared.
            inputs.append(sp.space_robot_ode_input(
                0.0, R.T, s.q[:3], np.concatenate([s.v[3:6], R @ s.v[:3]]), s.q[7:], s.v[6:],
                np.zeros(6), act.arm_torques)[1:])

        def spart():
            i = pool.i = (pool.i + 1) % N_STATES
            y, tau = inputs[i]
            return sp.space_robot_ode(0.0, y, tau)

        out.append(bench_core.Case(robot, PEER, spart))
    out += [
        bench_core.Case(robot, "pin.aba alone (floor)", aba),
        bench_core.Case(robot, "forward_dynamics (the right-hand side)", rhs),
        bench_core.Case(robot, "generalized_forces + forward_dynamics", rhs_with_actuators),
        bench_core.Case(robot, "Plant.step / 4 (per right-hand side)", lambda: plant.step(act),
                        plant_reset),
    ]
    return out + compiled_case(ff, robot, states, taus)


def compiled_case(ff, robot: str, states, taus) -> list[bench_core.Case]:
    """The compiled engine's plant step (physics/kernels, numba: the first stage a Cholesky solve with
    M(q0), b(q0, v0) given, the articulated-body algorithm in the other three, then M, b at the
    new state for the projection and the next step) called from Python, the same step in a compiled loop
    of LOOP steps (no per-call dispatch: what the compiled engine pays per step), and the fixed
    costs of a call from Python: numba's dispatch of plant_step's arguments (a no-op kernel with
    the same signature) and the scratch allocation (once per run in the engine). [] where numba
    is missing or the kernels do not cover the robot. The same step as Plant.step without the
    saturation and the divergence checks."""
    from freeflyer_control.sim import fast

    if not fast.available():
        return []
    from numba import njit

    from freeflyer_control.physics.momentum import world_momentum
    from freeflyer_control.physics.kernels import rigid_body as K
    from freeflyer_control.physics.kernels.arrays import NotCovered, kernel_model

    try:
        km_full = kernel_model(ff)
    except NotCovered:
        return []
    km, m, nb, planar = km_full.arrays(), ff.model, ff.nb, km_full.planar
    ws = K.workspace(m.njoints - 1, m.nq, m.nv, nb)
    M, b = np.empty((m.nv, m.nv)), np.empty(m.nv)
    qn, vn, Mn, bn = np.empty(m.nq), np.empty(m.nv), np.empty((m.nv, m.nv)), np.empty(m.nv)
    data = ff.create_data()
    prepared = []
    for s, tau in zip(states, taus):
        K.mass_and_bias(km, s.q, s.v, M, b, ws)
        prepared.append((s.q, s.v, tau, world_momentum(ff, data, s), M.copy(), b.copy()))
    i = [0]

    @njit  # not cached: numba would not see a change of the kernels it calls
    def steps(n, km, planar, nb, q, v, tau, h, mom, M0, b0, qn, vn, Mn, bn, ws):
        for _ in range(n):
            K.plant_step(km, planar, nb, q, v, tau, h, mom, M0, b0, qn, vn, Mn, bn, ws)

    @njit  # not cached: numba would not see a change of the kernels it calls
    def no_op(km, planar, nb, q, v, tau, h, mom, M0, b0, qn, vn, Mn, bn, ws):
        return None

    def step():
        i[0] = (i[0] + 1) % len(prepared)
        q, v, tau, mom, M0, b0 = prepared[i[0]]
        K.plant_step(km, planar, nb, q, v, tau, PLANT_DT, mom.copy(), M0, b0, qn, vn, Mn, bn, ws)

    def step_loop():
        i[0] = (i[0] + 1) % len(prepared)
        q, v, tau, mom, M0, b0 = prepared[i[0]]
        steps(LOOP, km, planar, nb, q, v, tau, PLANT_DT, mom.copy(), M0, b0, qn, vn, Mn, bn, ws)

    def dispatch():
        q, v, tau, mom, M0, b0 = prepared[i[0]]
        no_op(km, planar, nb, q, v, tau, PLANT_DT, mom, M0, b0, qn, vn, Mn, bn, ws)

    def allocation():
        K.workspace(m.njoints - 1, m.nq, m.nv, nb)

    for f in (step, step_loop, dispatch, allocation):
        f()  # compile, or load numba's cache, before the warm-up
    return [bench_core.Case(robot, "compiled plant_step (ABA, physics/kernels, numba) / 4", step),
            bench_core.Case(robot, f"the same, in a compiled loop of {LOOP} steps / {4 * LOOP}", step_loop),
            bench_core.Case(robot, "fixed cost: numba dispatch of plant_step's arguments (no-op)", dispatch),
            bench_core.Case(robot, "fixed cost: K.workspace, the step's scratch (once per run)", allocation)]


def table(cases_: list[bench_core.Case]) -> str:
    med = {c.quantity: float(np.median(c.samples)) for c in cases_}
    peer = med.get(PEER)
    lines = ["| per call | median µs | p90 µs | SPARTpy / this |", "|---|---:|---:|---:|"]
    for c in cases_:
        per = re.search(r" / (\d+)\b", c.quantity)  # a step's rows: per right-hand side
        div = float(per.group(1)) if per else 1.0
        m, p90 = med[c.quantity] / div / 1e3, float(np.percentile(c.samples, 90)) / div / 1e3
        ratio = f"{peer / (med[c.quantity] / div):.1f}×" if peer else "n/a"
        lines.append(f"| {c.quantity} | {m:.2f} | {p90:.2f} | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=300, help="timed batches per function")
    parser.add_argument("--batch", type=int, default=20, help="consecutive calls per batch")
    parser.add_argument("--warmup", type=int, default=200, help="untimed calls per function")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="also write the result here")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.batch < 1 or args.warmup < 0:
        parser.error("--repeats and --batch must be >= 1, --warmup >= 0")
    found = spart_urdf()
    if found is None:
        print("spartpy is not installed: the peer and its URDF are missing; "
              "install it with pip install -e '.[bench]' (an optional benchmark extra)")
        return 0
    spartpy, urdf = found
    measured = cases(np.random.default_rng(args.seed), spartpy, urdf)
    t0, stat0 = time.perf_counter(), bench_core.cpu_times()
    bench_core.run(measured, args.repeats, args.batch, args.warmup)
    elapsed, stat1 = time.perf_counter() - t0, bench_core.cpu_times()
    facts = bench_core.machine_facts() + [
        bench_core.load_during(stat0, stat1),
        f"robot SPARTpy/urdf/{URDF} of spartpy {metadata.version('spartpy')} (--base spatial "
        f"--ee Link_EE); {args.repeats} repeats x {args.batch} calls "
        f"per function, interleaved ({elapsed:.1f} s)",
    ]
    bench_core.emit(facts, table(measured), args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
