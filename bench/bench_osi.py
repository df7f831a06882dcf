#!/usr/bin/env python3
"""Operational-space inertia of every link: the paper's Alg. 8 against the Pinocchio route.

Measured on one robot (default spatial_7dof), at random configurations, in one interleaved
run (bench_core's method: warm-up, batches, the order rotated every repeat, medians):

* Alg. 8, all links: ``build_tree`` (kinematics, inertias in world axes) + the P and S sweeps,
  Lambda(k) = P(k) + S(k) for every body (physics.base_invariant), no inversion; and the same
  with the sweeps as one numba loop, when numba is installed (tree building stays NumPy);
* Pinocchio route, one link: ``pin.crba`` + ``computeJointJacobians`` + J M^-1 J^T of one body,
  inverted; the table multiplies its median by the number of links (what a caller pays asking
  for each link in turn, as the issue's target states it);
* Pinocchio route, all links sharing one CRBA and one factorisation of M (the cheapest way to
  get every link from Pinocchio's Python API, for honesty);
* ``operational_space_inertia`` (the package's per-frame API, Pinocchio route, with mode
  bookkeeping and the rank check), one link;
* one impedance control tick (control.impedance, floating, flying and rotation-floating modes), against the
  50 us control-tick budget.

Usage (from the repository root):

    python bench/bench_osi.py [--robot spatial_7dof] [--repeats 200]

This is a benchmark, not a test: nothing in test/ depends on timings.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time

import numpy as np
import pinocchio as pin
from bench_core import REPO, Case, cpu_times, load_during, machine_facts, run  # noqa: F401

from freeflyer_control.control.impedance import ImpedanceController, TaskTarget
from freeflyer_control.model import load_robot
from freeflyer_control.physics.base_invariant.sweeps import osi_all_links
from freeflyer_control.physics.base_invariant.tree import build_tree
from freeflyer_control.physics.dynamics import mass_matrix
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.operational_space import operational_space_inertia
from freeflyer_control.physics.state import make_state

N_STATES = 16
HAVE_NUMBA = importlib.util.find_spec("numba") is not None
TICK_BUDGET_US = 50.0  # the control-tick budget of the issue


def cases(name: str, rng: np.random.Generator) -> tuple[list[Case], int]:
    ff = load_robot(name)
    model, data = ff.model, ff.create_data()
    qs = [pin.integrate(model, pin.neutral(model), rng.uniform(-1.2, 1.2, model.nv))
          for _ in range(N_STATES)]
    it = iter(range(10**12))

    def q():
        return qs[next(it) % N_STATES]

    n_links = model.njoints - 1
    last = model.njoints - 1

    def alg8(compiled=False):
        return lambda: osi_all_links(build_tree(ff, data, q(), common_point=True), compiled=compiled)

    def pin_one_link(k=last):
        qq = q()
        M = mass_matrix(ff, data, qq)
        pin.computeJointJacobians(model, data, qq)
        J = pin.getJointJacobian(model, data, k, pin.LOCAL_WORLD_ALIGNED)
        return np.linalg.inv(J @ np.linalg.solve(M, J.T))

    def pin_all_shared():
        qq = q()
        M_inv = np.linalg.inv(mass_matrix(ff, data, qq))
        pin.computeJointJacobians(model, data, qq)
        out = []
        for k in range(1, model.njoints):
            J = pin.getJointJacobian(model, data, k, pin.LOCAL_WORLD_ALIGNED)
            out.append(np.linalg.inv(J @ M_inv @ J.T))
        return out

    ee = ff.end_effectors[0]

    def api_one():
        return operational_space_inertia(ff, data, q(), Mode.FLOATING, ee)

    ctrl = ImpedanceController(ff, ee)
    state = make_state(ff, joint_positions=ff.ready_pose,
                       joint_velocities=rng.uniform(-0.3, 0.3, ff.nj))
    pin.framesForwardKinematics(model, data, state.q)
    pose = data.oMf[model.getFrameId(ee)]
    target = TaskTarget(pose.translation + 0.02, pose.rotation)

    def tick(mode):
        return lambda: ctrl.effort(state, mode, target)

    return [
        Case(name, "Alg. 8, all links", alg8()),
        *([Case(name, "Alg. 8, all links, compiled (numba)", alg8(True))] if HAVE_NUMBA else []),
        Case(name, "Pinocchio route, one link", pin_one_link),
        Case(name, "Pinocchio route, all links, shared CRBA", pin_all_shared),
        Case(name, "operational_space_inertia, one frame", api_one),
        Case(name, "impedance tick, floating", tick(Mode.FLOATING)),
        Case(name, "impedance tick, flying", tick(Mode.FLYING)),
        *([Case(name, "impedance tick, rotation-floating", tick(Mode.ROTATION_FLOATING))]
          if ff.wheel_v_indices.size else []),
    ], n_links


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robot", default="spatial_7dof")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    cs, n_links = cases(args.robot, rng)
    before = cpu_times()
    t0 = time.time()
    run(cs, args.repeats, args.batch, args.warmup)
    after = cpu_times()
    med = {c.quantity: float(np.median(c.samples)) / 1e3 for c in cs}
    p90 = {c.quantity: float(np.percentile(c.samples, 90)) / 1e3 for c in cs}
    print(f"# Lambda of every link of {args.robot} ({n_links} links), medians of one run "
          f"({time.time() - t0:.0f} s)")
    for line in machine_facts():
        print("# " + line)
    print("# " + load_during(before, after))
    print()
    print("| quantity | median µs | p90 µs | for all links, µs |")
    print("|---|---:|---:|---:|")
    for c in cs:
        per_all = med[c.quantity] * (n_links if "one" in c.quantity else 1)
        print(f"| {c.quantity} | {med[c.quantity]:.1f} | {p90[c.quantity]:.1f} | {per_all:.1f} |")
    target = med["Pinocchio route, one link"] * n_links
    print()
    for quantity in (c.quantity for c in cs if c.quantity.startswith("Alg. 8")):
        ok = med[quantity] < target
        print(f"{quantity} {med[quantity]:.1f} µs vs Pinocchio route per link x {n_links} links "
              f"{target:.1f} µs: {'PASS' if ok else 'FAIL'} ({target / med[quantity]:.2f}x)")
    for mode in ("floating", "flying", "rotation-floating"):
        if f"impedance tick, {mode}" not in med:
            continue
        t = med[f"impedance tick, {mode}"]
        print(f"impedance tick {mode} {t:.1f} µs (budget {TICK_BUDGET_US:.0f} µs): "
              f"{'PASS' if t <= TICK_BUDGET_US else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
