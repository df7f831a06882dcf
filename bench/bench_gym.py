#!/usr/bin/env python3
"""Environment steps per second of ``freeflyer/Reach-v0``, single and vectorised, beside MuJoCo.

Rows, measured in one process one after the other (each the median of ``--repeats`` timed
batches of ``--steps`` steps with random actions, after a warm-up batch):

* one environment (``gymnasium.make``), env steps/s;
* ``gymnasium.vector.SyncVectorEnv`` of ``--envs`` copies (one process): env steps/s summed
  over the copies;
* ``gymnasium.vector.AsyncVectorEnv`` of ``--envs`` copies (a process each): the same (on a
  machine with fewer cores than copies, this is bounded by the cores);
* MuJoCo's ``mj_step`` on the same URDF (its floating base added as a free joint, or as slide x,
  slide y, hinge z for a planar robot; zero gravity; the plant's time step), steps/s, and the
  same divided by the environment's plant substeps: what an environment stepping MuJoCo with
  no controller, no allocation and no Python around it would reach. MuJoCo is an optional
  bench peer (``pip install mujoco``), never a dependency; without it the row says so.

Each environment step is one control period: the agent's effort through the control loop
(guard, allocation, clipping), ``substeps`` plant steps (CF4 with momentum projection,
compiled where numba is installed), an observation and a reward.

Usage (from the repository root):

    python bench/bench_gym.py [--robot planar_4link] [--envs 4] [--steps 200] [--repeats 3]

This is a benchmark, not a test: nothing in test/ depends on timings.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _rate(run, steps: int, repeats: int) -> float:
    """Median steps/s of ``repeats`` timed calls of ``run(steps)`` after one warm-up call."""
    run(max(1, steps // 10))
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        n = run(steps)
        rates.append(n / (time.perf_counter() - t0))
    return statistics.median(rates)


def single(env_id: str, kw: dict, steps: int, repeats: int) -> tuple[float, str]:
    import gymnasium as gym

    env = gym.make(env_id, **kw)
    env.reset(seed=0)
    env.action_space.seed(0)

    def run(n):
        for _ in range(n):
            _, _, term, trunc, _ = env.step(env.action_space.sample())
            if term or trunc:
                env.reset()
        return n
    rate = _rate(run, steps, repeats)
    note = env.unwrapped.plant_note
    env.close()
    return rate, note


def vector(env_id: str, kw: dict, n_envs: int, steps: int, repeats: int, asynchronous: bool) -> float:
    import gymnasium as gym

    cls = gym.vector.AsyncVectorEnv if asynchronous else gym.vector.SyncVectorEnv
    envs = cls([lambda: gym.make(env_id, **kw) for _ in range(n_envs)])
    envs.reset(seed=0)
    envs.action_space.seed(0)

    def run(n):
        for _ in range(n):
            envs.step(envs.action_space.sample())
        return n * n_envs
    rate = _rate(run, steps, repeats)
    envs.close()
    return rate


def mujoco_rate(urdf: str, planar: bool, dt: float, steps: int, repeats: int) -> tuple[float | None, str]:
    try:
        import mujoco
    except ImportError:
        return None, "MuJoCo not installed (pip install mujoco): no reference line"
    spec = mujoco.MjSpec.from_file(urdf)
    body = spec.worldbody.first_body()
    if planar:
        for kind, axis in ((mujoco.mjtJoint.mjJNT_SLIDE, [1, 0, 0]), (mujoco.mjtJoint.mjJNT_SLIDE, [0, 1, 0]),
                           (mujoco.mjtJoint.mjJNT_HINGE, [0, 0, 1])):
            body.add_joint(type=kind, axis=axis)
    else:
        body.add_freejoint()
    model = spec.compile()
    model.opt.gravity[:] = 0.0
    model.opt.timestep = dt
    data = mujoco.MjData(model)
    rng = np.random.default_rng(0)
    data.qfrc_applied[:] = 0.01 * rng.normal(size=model.nv)

    def run(n):
        for _ in range(n):
            mujoco.mj_step(model, data)
        return n
    return _rate(run, steps * 20, repeats), f"mujoco {mujoco.__version__}, nq={model.nq}, nv={model.nv}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default="planar_4link")
    ap.add_argument("--mode", default="floating")
    ap.add_argument("--envs", type=int, default=4)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    import freeflyer_control.gym as fgym  # noqa: F401 - registers the environments
    from freeflyer_control.model import load_robot

    env_id = "freeflyer/Reach-v0"
    kw = {"robot": args.robot, "mode": args.mode}
    probe = fgym.ReachEnv(**kw)
    substeps, dt = probe.substeps, probe.dt / probe.substeps
    ff = load_robot(args.robot)

    one, note = single(env_id, kw, args.steps, args.repeats)
    sync = vector(env_id, kw, args.envs, args.steps, args.repeats, asynchronous=False)
    asyn = vector(env_id, kw, args.envs, args.steps, args.repeats, asynchronous=True)
    mj, mj_note = mujoco_rate(str(ff_urdf(ff)), ff.base == "planar", dt, args.steps, args.repeats)

    print(f"{env_id} on {args.robot}, mode {args.mode}: {substeps} plant steps of {dt * 1e3:g} ms per env step; {note}")
    print(f"{'what':<44} {'steps/s':>12} {'x one env':>10}")
    print(f"{'one environment':<44} {one:>12.0f} {1.0:>10.2f}")
    print(f"{f'SyncVectorEnv x {args.envs}':<44} {sync:>12.0f} {sync / one:>10.2f}")
    print(f"{f'AsyncVectorEnv x {args.envs} (processes)':<44} {asyn:>12.0f} {asyn / one:>10.2f}")
    if mj is None:
        print(f"{'mujoco mj_step':<44} {'skipped':>12}  ({mj_note})")
    else:
        print(f"{'mujoco mj_step (' + mj_note + ')':<44} {mj:>12.0f} {mj / one:>10.2f}")
        print(f"{f'mujoco mj_step / {substeps} (env-step equivalent)':<44} {mj / substeps:>12.0f} {mj / substeps / one:>10.2f}")


def ff_urdf(ff):
    """The URDF file of a loaded robot (bundled robots: urdf/<name>.urdf of the share folder)."""
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / f"{ff.name}.urdf"
    path.write_text(ff.urdf_xml)
    return path


if __name__ == "__main__":
    main()
