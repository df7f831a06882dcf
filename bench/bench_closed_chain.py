"""What holding an object costs: a closed-chain plant step against an open-chain step of the same
robot, and a cooperative control tick.

Usage (from the repository root):

    python bench/bench_closed_chain.py                 # dual_arm_planar and spatial_dual_arm
    python bench/bench_closed_chain.py --reps 101 --steps 50
    python bench/bench_closed_chain.py --stage     # also one RK stage against pin.constraintDynamics

Both plants integrate the robot in its held pose (the object attached: the open-chain plant of
the same model, loops left open, is the reference) under the same arm torques (2 % of their
limits), in interleaved batches of ``--steps`` steps timed by ``timeit`` with the process CPU
clock (time spent waiting for a core on a loaded machine does not count). Prints the median and
the minimum microseconds per step, their ratio (target: at most 2), the cooperative tick, and the
machine's load average before and after (the figures move with it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import timeit
from pathlib import Path

import numpy as np
import pinocchio as pin

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from freeflyer_control.control.cooperative import CooperativeController  # noqa: E402
from freeflyer_control.physics.actuators import Actuation  # noqa: E402
from freeflyer_control.physics.closed_chain import (  # noqa: E402
    BAUMGARTE_OMEGA,
    BAUMGARTE_ZETA,
    ClosedChainPlant,
    _loops,
    _stage_acceleration,
)
from freeflyer_control.physics.plant import Plant  # noqa: E402
from freeflyer_control.sim.cooperative import ObjectSimConfig, prepare  # noqa: E402

PAIRS = (("dual_arm_planar", "planar_box"), ("spatial_dual_arm", "spatial_box"))


def per_step(make, actuation, reps: int, steps: int) -> np.ndarray:
    """µs per step of ``steps`` steps, ``reps`` times, each batch from a fresh plant."""
    out = []
    for _ in range(reps):
        plant = make()
        t = timeit.Timer(lambda: plant.step(actuation), timer=time.process_time).timeit(steps)
        out.append(1e6 * t / steps)
    return np.array(out)


def stage_against_constraint_dynamics(held, obj, state, reps: int) -> str:
    """One RK stage (the plant's _stage_acceleration) against Pinocchio's constraintDynamics on
    the same loops (CONTACT_6D between the two grasping joints, LOCAL, the same Baumgarte gains;
    planar robots' rank-deficient 6D loop through the proximal solver): median µs of each and
    the largest difference of their accelerations relative to their size, at rest and at
    random velocities of ~0.1 (m/s, rad/s)."""
    model, data, ours_data = held.model, held.create_data(), held.create_data()  # data: Pinocchio's path only
    loops, rows = _loops(held, obj)
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for loop in loops:
        fe, fg = model.frames[loop.ee_frame], model.frames[loop.grasp_frame]
        c = pin.RigidConstraintModel(pin.ContactType.CONTACT_6D, model, fe.parentJoint, fe.placement,
                                     fg.parentJoint, fg.placement, pin.LOCAL)
        c.m_baumgarte_parameters.Kp = BAUMGARTE_OMEGA ** 2
        c.m_baumgarte_parameters.Kd = 2 * BAUMGARTE_ZETA * BAUMGARTE_OMEGA
        models.append(c)
        datas.append(c.createData())
    pin.initConstraintDynamics(model, data, models, datas)
    prox = pin.ProximalSettings(1e-12, 1e-12, 1e-10, 20)
    rng = np.random.default_rng(0)
    tau = rng.normal(size=model.nv)
    diffs = []
    for scale in (0.0, 0.1):
        v = scale * rng.normal(size=model.nv)
        ours = _stage_acceleration(model, ours_data, loops, rows, state.q, v, tau)
        theirs = pin.constraintDynamics(model, data, state.q, v, tau, models, datas, prox)
        diffs.append(np.abs(ours - theirs).max() / np.abs(ours).max())
    v = 0.1 * rng.normal(size=model.nv)

    def median_us(fn) -> float:
        return float(np.median([1e6 * timeit.Timer(fn, timer=time.process_time).timeit(100) / 100 for _ in range(reps)]))

    t_ours = median_us(lambda: _stage_acceleration(model, ours_data, loops, rows, state.q, v, tau))
    t_pin = median_us(lambda: pin.constraintDynamics(model, data, state.q, v, tau, models, datas, prox))
    t_aba = median_us(lambda: pin.aba(model, ours_data, state.q, v, tau))
    return (f"  one stage: ours {t_ours:.1f} µs, pin.constraintDynamics {t_pin:.1f} µs, aba {t_aba:.1f} µs; "
            f"accelerations differ by {diffs[0]:.1e} at rest, {diffs[1]:.1e} at v ~ 0.1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=51, help="timed batches per plant")
    parser.add_argument("--steps", type=int, default=50, help="steps per batch")
    parser.add_argument("--stage", action="store_true",
                        help="also time one RK stage against pinocchio's constraintDynamics")
    args = parser.parse_args()
    print("load average (1, 5, 15 min) before: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"{'robot':<18} {'open µs':>8} {'closed µs':>10} {'ratio':>6}   {'tick µs':>8}   (medians; min open/closed)")
    for robot, obj in PAIRS:
        ff, o, held, state, maneuver = prepare(ObjectSimConfig(robot=robot, obj=obj))
        actuation = Actuation(arm_torques=0.02 * held.arm_effort_limits)
        opened = per_step(lambda: Plant(held, state, 0.002), actuation, args.reps, args.steps)
        closed = per_step(lambda: ClosedChainPlant(held, o, state, 0.002), actuation, args.reps, args.steps)
        controller = CooperativeController(held, o, "floating", 5.0)
        ref = maneuver(1.0)
        tick = timeit.Timer(lambda: controller.tick(state, ref), timer=time.process_time)
        ticks = np.array([1e6 * tick.timeit(20) / 20 for _ in range(args.reps)])
        print(f"{robot:<18} {np.median(opened):8.0f} {np.median(closed):10.0f} "
              f"{np.median(closed) / np.median(opened):6.2f}   {np.median(ticks):8.0f}   "
              f"({opened.min():.0f} / {closed.min():.0f})")
        if args.stage:
            print(stage_against_constraint_dynamics(held, o, state, args.reps))
    print("load average (1, 5, 15 min) after: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
