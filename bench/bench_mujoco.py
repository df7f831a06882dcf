#!/usr/bin/env python3
"""One plant step called from Python, next to MuJoCo's ``mj_step`` on the same URDF.

Robot: SPART's 7-DOF arm on a free-flying base, ``floating_7dof_manipulator.urdf`` as shipped in
PyPI ``spartpy`` (bench/bench_spart.py finds it), loaded here like ``--robot <that file> --base
spatial --ee Link_EE`` and into MuJoCo by its own URDF parser with a free joint on the root body,
RK4, 1 ms, contacts, joint limits and gravity off: the same rigid-body system (the bench checks
it: mass matrix, kinetic energy and momentum of the same state agree to round-off, printed).

Measured in one process, interleaved (bench_core's method: warm-up, then repeats that rotate the
order of the functions, each sample a batch of consecutive steps from a reset state; medians):

* MuJoCo ``mj_step``, the peer (joint torques in ``qfrc_applied``, held over the step);
* ``CompiledPlant.step(tau=...)`` (physics/kernels/plant.py): the compiled CF4 step with
  momentum projection, divergence check and the State it returns, called from Python;
* ``Plant.step(tau=...)`` (physics/plant.py): the Python engine, Pinocchio's ABA four times;
* the compiled kernel alone (``rigid_body.plant_step``, no checks, no State): the floor of the
  compiled plant's step.

The last column divides each row's median by ``mj_step``'s. Then each engine integrates the same
torque-free motion (base tumbling, every joint moving) for 20 s at 1 ms, and the table gives the
largest drift of the linear momentum P, the angular momentum about the system CoM L_C (both in
world axes) and the kinetic energy T from their initial values: all three are conserved.

``mujoco`` and ``spartpy`` are optional benchmark peers (``pip install -e '.[bench]'``), never
dependencies: without them the bench says so and exits.

Usage (from the repository root):

    python bench/bench_mujoco.py [--repeats N] [--batch N] [--drift-seconds S] [--markdown FILE]

This is a benchmark, not a test: nothing in test/ depends on timings.
"""

from __future__ import annotations

import argparse
import sys
import time
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_core  # noqa: E402  (also puts the working tree first on sys.path)
from bench_spart import URDF, load_spart_robot, spart_urdf  # noqa: E402

import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

from freeflyer_control.physics.dynamics import kinetic_energy, mass_matrix  # noqa: E402
from freeflyer_control.physics.momentum import centroidal_momentum  # noqa: E402
from freeflyer_control.physics.plant import Plant  # noqa: E402
from freeflyer_control.physics.state import State, base_rotation, make_state  # noqa: E402

PEER = "MuJoCo mj_step (RK4, 1 ms, free joint, no contacts)"
DT = 1e-3  # s
N_STATES = 16


class MuJoCoRobot:
    """The URDF in MuJoCo, and the map between Pinocchio's state and MuJoCo's.

    Pinocchio's free flyer: q = [p, quaternion (x, y, z, w), joints], v = [v_local, w_local,
    joint rates] (base twist in base_link axes). MuJoCo's free joint: qpos = [p, quaternion
    (w, x, y, z), joints], qvel = [velocity of the body origin in world axes, w in body axes,
    joint rates]. Joint order is the chain's in both.
    """

    def __init__(self, mujoco, urdf: Path):
        self.mj = mujoco
        spec = mujoco.MjSpec.from_file(str(urdf))
        spec.worldbody.first_body().add_freejoint()
        self.model = spec.compile()
        opt = self.model.opt
        opt.timestep = DT
        opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
        opt.gravity[:] = 0.0
        flags = mujoco.mjtDisableBit
        opt.disableflags |= flags.mjDSBL_CONTACT | flags.mjDSBL_GRAVITY | flags.mjDSBL_LIMIT
        opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
        self.data = mujoco.MjData(self.model)

    def set_state(self, state: State, tau: np.ndarray) -> None:
        """Pinocchio's (q, v) and generalized forces tau (nv,) as MuJoCo's qpos, qvel and
        qfrc_applied (the base force's linear part turned into world axes)."""
        q, v, d = state.q, state.v, self.data
        R = base_rotation_of(q)
        d.qpos[:3] = q[:3]
        d.qpos[3:7] = (q[6], q[3], q[4], q[5])
        d.qpos[7:] = q[7:]
        d.qvel[:3] = R @ v[:3]
        d.qvel[3:] = v[3:]
        d.qfrc_applied[:3] = R @ tau[:3]
        d.qfrc_applied[3:] = tau[3:]
        d.time = 0.0

    def state(self) -> State:
        """MuJoCo's current state in Pinocchio's convention."""
        d = self.data
        q = np.concatenate([d.qpos[:3], d.qpos[4:7], d.qpos[3:4], d.qpos[7:]])
        R = base_rotation_of(q)
        return State(q, np.concatenate([R.T @ d.qvel[:3], d.qvel[3:]]))

    def invariants(self) -> tuple[np.ndarray, float]:
        """([P; L_C] world axes, kinetic energy J) at the current qpos, qvel."""
        mj, m, d = self.mj, self.model, self.data
        mj.mj_forward(m, d)
        mj.mj_subtreeVel(m, d)
        P = m.body_subtreemass[1] * d.subtree_linvel[1]
        return np.concatenate([P, d.subtree_angmom[1]]), float(d.energy[1])

    def mass_matrix(self) -> np.ndarray:
        """MuJoCo's M at the current qpos (dense), in MuJoCo's velocity coordinates."""
        M = np.zeros((self.model.nv, self.model.nv))
        self.mj.mj_forward(self.model, self.data)
        self.mj.mj_fullM(self.model, self.data, M)
        return M


def base_rotation_of(q: np.ndarray) -> np.ndarray:
    """world <- base_link rotation of a spatial configuration q (quaternion x, y, z, w)."""
    return pin.Quaternion(q[6], q[3], q[4], q[5]).toRotationMatrix()


def same_robot(ff, robot: MuJoCoRobot, state: State) -> list[str]:
    """Relative differences of M, T, P and L_C between the two models at one state: the check that
    both engines integrate the same system."""
    data = ff.create_data()
    robot.set_state(state, np.zeros(ff.model.nv))
    # MuJoCo's velocity coordinates u = G v: the base's linear velocity turned into world axes.
    G = np.eye(ff.model.nv)
    G[:3, :3] = base_rotation_of(state.q)
    M_pin = G.T @ robot.mass_matrix() @ G
    M = mass_matrix(ff, data, state.q)
    h_mj, T_mj = robot.invariants()
    h = centroidal_momentum(ff, data, state)
    T = kinetic_energy(ff, data, state.q, state.v)
    rel = lambda a, b: float(np.max(np.abs(a - b)) / np.max(np.abs(b)))  # noqa: E731
    return [f"same robot in both (one random state): M, T, [P; L_C] differ by {rel(M_pin, M):.1e}, "
            f"{abs(T_mj - T) / T:.1e}, {rel(h_mj, h):.1e} (relative)"]


def timed_cases(ff, robot: MuJoCoRobot, states, taus) -> list[bench_core.Case]:
    from freeflyer_control.physics.kernels import available

    pool = bench_core.StatePool(states)
    name = "SPART 7-DOF"
    mj, m, d = robot.mj, robot.model, robot.data

    def mj_reset():
        i = pool.i = (pool.i + 1) % N_STATES
        robot.set_state(states[i], taus[i])

    plant = Plant(ff, states[0], DT)
    current = {}

    def plant_reset(p):
        def reset():
            i = pool.i = (pool.i + 1) % N_STATES
            p.state = states[i]
            current[id(p)] = taus[i]
        return reset

    cases = [bench_core.Case(name, PEER, lambda: mj.mj_step(m, d), mj_reset)]
    if available():
        from freeflyer_control.physics.kernels.plant import CompiledPlant

        compiled = CompiledPlant(ff, states[0], DT)
        compiled.step(tau=taus[0])  # compiles, or loads numba's cache
        cases.append(bench_core.Case(name, "CompiledPlant.step(tau=...)",
                                     lambda: compiled.step(tau=current[id(compiled)]),
                                     plant_reset(compiled)))
    cases.append(bench_core.Case(name, "Plant.step(tau=...) (Python engine)",
                                 lambda: plant.step(tau=current[id(plant)]), plant_reset(plant)))
    if available():
        cases.append(kernel_case(ff, name, states, taus))
    return cases


def kernel_case(ff, name: str, states, taus) -> bench_core.Case:
    """The compiled kernel alone, called from Python on prepared arrays (numba's dispatch of its
    arguments included; no divergence check, no State): CompiledPlant.step's floor."""
    from freeflyer_control.physics.kernels import rigid_body as K
    from freeflyer_control.physics.kernels.arrays import kernel_model
    from freeflyer_control.physics.momentum import world_momentum

    km_full = kernel_model(ff)
    km, planar, nb, nq, nv = km_full.arrays(), km_full.planar, ff.nb, ff.model.nq, ff.model.nv
    ws = K.workspace(km_full.jint.shape[0], nq, nv, nb)
    out = (np.empty(nq), np.empty(nv), np.empty((nv, nv)), np.empty(nv))
    data, prepared, i = ff.create_data(), [], [0]
    for s, tau in zip(states, taus):
        M, b = np.empty((nv, nv)), np.empty(nv)
        K.mass_and_bias(km, s.q, s.v, M, b, ws)
        prepared.append((s.q, s.v, tau, world_momentum(ff, data, s), M, b))
    mom = np.empty(nb)

    def step():
        q, v, tau, h0, M, b = prepared[i[0]]
        mom[:] = h0
        K.plant_step(km, planar, nb, q, v, tau, DT, mom, M, b, *out, ws)

    def reset():
        i[0] = (i[0] + 1) % len(prepared)

    step()
    return bench_core.Case(name, "rigid_body.plant_step kernel alone (floor of the compiled step)",
                           step, reset)


def drift(ff, robot: MuJoCoRobot, start: State, seconds: float) -> list[tuple[str, float, float, float, float]]:
    """(engine, max |dP| kg m/s, max |dL_C| kg m^2/s, max |dT| / T, wall s) over ``seconds`` of
    torque-free motion from ``start`` at DT."""
    from freeflyer_control.physics.kernels import available

    n = int(round(seconds / DT))
    zero = np.zeros(ff.model.nv)
    data = ff.create_data()
    rows = []

    def record(engine, step, invariants):
        h0, T0 = invariants()
        dh, dT = np.zeros(6), 0.0
        t0 = time.perf_counter()
        for _ in range(n):
            step()
            h, T = invariants()
            dh = np.maximum(dh, np.abs(h - h0))
            dT = max(dT, abs(T - T0))
        wall = time.perf_counter() - t0
        rows.append((engine, float(np.linalg.norm(dh[:3])), float(np.linalg.norm(dh[3:])), dT / T0, wall))

    robot.set_state(start, zero)
    record("MuJoCo mj_step", lambda: robot.mj.mj_step(robot.model, robot.data), robot.invariants)

    def ours(plant):
        def invariants():
            s = plant.state
            return centroidal_momentum(ff, data, s), kinetic_energy(ff, data, s.q, s.v)
        return lambda: plant.step(tau=zero), invariants

    if available():
        from freeflyer_control.physics.kernels.plant import CompiledPlant

        record("CompiledPlant.step", *ours(CompiledPlant(ff, start, DT)))
    record("Plant.step (Python engine)", *ours(Plant(ff, start, DT)))
    return rows


def timing_table(cases: list[bench_core.Case]) -> str:
    med = {c.quantity: float(np.median(c.samples)) for c in cases}
    peer = med[PEER]
    lines = ["| one step, called from Python | median µs | p90 µs | / mj_step |", "|---|---:|---:|---:|"]
    for c in cases:
        lines.append(f"| {c.quantity} | {med[c.quantity] / 1e3:.1f} | "
                     f"{float(np.percentile(c.samples, 90)) / 1e3:.1f} | {med[c.quantity] / peer:.2f}× |")
    return "\n".join(lines)


def drift_table(rows, seconds: float) -> str:
    lines = [f"| torque-free, {seconds:g} s at 1 ms | max drift P kg m/s | max drift L_C kg m²/s | "
             "max drift T / T0 | wall s (with the invariants each step) |", "|---|---:|---:|---:|---:|"]
    for engine, dP, dL, dT, wall in rows:
        lines.append(f"| {engine} | {dP:.1e} | {dL:.1e} | {dT:.1e} | {wall:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=300, help="timed batches per function")
    parser.add_argument("--batch", type=int, default=20, help="consecutive steps per batch")
    parser.add_argument("--warmup", type=int, default=200, help="untimed steps per function")
    parser.add_argument("--drift-seconds", type=float, default=20.0,
                        help="simulated seconds of the drift run (0: skip it)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="time each batch by this thread's CPU time (default: a loaded machine's "
                             "preemptions left out) or by the wall clock")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="also write the result here")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.batch < 1 or args.warmup < 0 or args.drift_seconds < 0:
        parser.error("--repeats and --batch must be >= 1, --warmup and --drift-seconds >= 0")
    try:
        import mujoco
    except ImportError:
        mujoco = None
    found = spart_urdf()
    if mujoco is None or found is None:
        print("mujoco or spartpy is not installed: the peer or the URDF is missing; install them "
              "with pip install -e '.[bench]' (optional benchmark peers)")
        return 0
    urdf = found[1]
    ff = load_spart_robot(urdf)
    robot = MuJoCoRobot(mujoco, urdf)
    rng = np.random.default_rng(args.seed)
    states = bench_core.random_states(ff, rng, N_STATES)
    # The URDF has no effort limits: joint torques of a few N m, as SPART's examples; no base force.
    taus = [np.concatenate([np.zeros(ff.nb), rng.uniform(-1.0, 1.0, ff.nj)]) for _ in states]
    facts = bench_core.machine_facts() + same_robot(ff, robot, states[1])
    cases = timed_cases(ff, robot, states, taus)
    t0, stat0 = time.perf_counter(), bench_core.cpu_times()
    clock = time.thread_time_ns if args.clock == "cpu" else time.perf_counter_ns
    bench_core.run(cases, args.repeats, args.batch, args.warmup, clock)
    elapsed, stat1 = time.perf_counter() - t0, bench_core.cpu_times()
    facts += [
        bench_core.load_during(stat0, stat1),
        f"robot SPARTpy/urdf/{URDF} of spartpy {metadata.version('spartpy')}, mujoco "
        f"{mujoco.__version__}; {args.repeats} repeats x {args.batch} steps per function, "
        f"interleaved ({elapsed:.1f} s), timed on the {'thread CPU' if args.clock == 'cpu' else 'wall'} clock",
    ]
    text = timing_table(cases)
    if args.drift_seconds > 0:
        start = states[0]
        text += "\n\n" + drift_table(drift(ff, robot, start, args.drift_seconds), args.drift_seconds)
    bench_core.emit(facts, text, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
