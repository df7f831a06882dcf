#!/usr/bin/env python3
"""Resolved-rate tick (``ResolvedRate.joint_rates``) now and at an earlier commit, side by side.

One interleaved run (bench_core.py's method: warm-up, batches of consecutive calls, the order
rotated each repeat, median and p90 of the per-call samples) of the current controller (with
numba: its compiled path, ``[now]``, and its NumPy / LAPACK path, ``[now, NumPy]``) and of
``control/resolved_rate.py`` read from ``--before GITREF`` with ``git show`` (the rest of the
package is the current tree). Per robot: a pose task (position and orientation) and a
position-only task, a few cm from the end-effector, on random states. The planar 2-link arm
(test/conftest.py's TWO_LINK_PLANAR_URDF) has a tall 3 x 2 pose task: the old solve raised
"Singular matrix" there, so only the current one is timed.

    python bench/bench_resolved_rate.py [--before 939e85e] [--repeats 300]

This is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import REPO, Case, StatePool, machine_facts, random_states, run  # noqa: E402

import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

from freeflyer_control.control.references import TaskReference  # noqa: E402
from freeflyer_control.control.resolved_rate import ResolvedRate  # noqa: E402
from freeflyer_control.model import load_model, load_robot  # noqa: E402
from freeflyer_control.physics import fastpath  # noqa: E402
from freeflyer_control.physics.modes import Mode  # noqa: E402

sys.path.insert(0, str(REPO / "test"))
from conftest import TWO_LINK_PLANAR_URDF  # noqa: E402


def load_before(ref: str):
    """The ResolvedRate class of ``control/resolved_rate.py`` at commit ``ref``."""
    src = subprocess.run(["git", "-C", str(REPO), "show", f"{ref}:freeflyer_control/control/resolved_rate.py"],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    tmp = Path(tempfile.mkdtemp(prefix="ffc_rr_before_"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    path = tmp / "resolved_rate_before.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("resolved_rate_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module.ResolvedRate


def targets(ff, state, orientation: bool) -> list[TaskReference]:
    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, state.q)
    out = []
    for ee in ff.end_effectors:
        pose = data.oMf[ff.frame_id(ee)]
        quat = pin.Quaternion(pose.rotation).coeffs().copy() if orientation else None
        out.append(TaskReference(ee, pose.translation + np.array([0.02, -0.01, 0.0]), quat, np.zeros(3), np.zeros(3)))
    return out


def cases(label: str, ff, rng, old_cls, ref: str) -> list[Case]:
    states = random_states(ff, rng, 16)
    out = []
    for orientation, task in ((True, "pose task"), (False, "position task")):
        pool = StatePool(states)
        tasks = [targets(ff, s, orientation) for s in states]
        rows = sum(3 if ff.base == "planar" else 6 for _ in ff.end_effectors) if orientation else \
            sum(2 if ff.base == "planar" else 3 for _ in ff.end_effectors)
        shape = f"{rows}x{len(ff.arm_joint_names)}"
        now = ResolvedRate(ff)
        ways = [(now.joint_rates, "now"), (now.joint_rates_numpy, "now, NumPy"),
                (old_cls(ff).joint_rates, f"before {ref}")]
        if fastpath.kernels() is None:  # no numba: joint_rates is the NumPy path
            del ways[1]
        for call, tag in ways:
            try:
                for state, task_list in zip(states, tasks):
                    call(state, Mode.FLOATING, task_list)
            except np.linalg.LinAlgError as exc:
                print(f"{label} {task} ({shape}) {tag}: raises {exc}")
                continue
            out.append(Case(label, f"{task} {shape} [{tag}]",
                            lambda call=call, pool=pool, tasks=tasks: call(pool.next(), Mode.FLOATING,
                                                                           tasks[pool.i])))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="939e85e", help="git ref of the old controller")
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--batch", type=int, default=20)
    args = parser.parse_args(argv)
    old_cls = load_before(args.before)
    rng = np.random.default_rng(0)
    all_cases = []
    for name in ("planar_4link", "spatial_6link", "dual_arm_planar"):
        all_cases += cases(name, load_robot(name), rng, old_cls, args.before)
    two = load_model(TWO_LINK_PLANAR_URDF, base="planar", end_effectors=["ee_link"])
    all_cases += cases("two_link (bare URDF)", two, rng, old_cls, args.before)
    run(all_cases, args.repeats, args.batch, warmup=50)
    print("\n".join(machine_facts()))
    print("| robot | task | median µs | p90 µs |\n|---|---|---:|---:|")
    for c in all_cases:
        print(f"| {c.robot} | {c.quantity} | {np.median(c.samples) / 1e3:.1f} | "
              f"{np.percentile(c.samples, 90) / 1e3:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
