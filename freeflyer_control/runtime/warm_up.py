"""Load, or on a machine's first use compile, every kernel the ROS nodes fly, before they start.

numba compiles a kernel the first time a process on a machine calls it, then loads it from its
on-disk cache. The nodes warm what they fly while they are built (never inside a period:
test/test_first_tick.py), so a node's first start on a machine waits for the compiles (the plant
step, the GJM and H*, C*, the saturation, the computed-torque and resolved-rate laws, the
thruster allocator, sim_loop_node's compiled period: 104 s here, 84 s before the last, measured
with ``freeflyer warm`` on an empty numba cache).
:func:`warm_robot` does the same work outside ROS, through the servers the nodes wrap, so that
it can run once after an install or a ``colcon build`` (``freeflyer warm``); the nodes then load
the cache at start (a second).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.control.builtin import ComputedTorqueLaw, ImpedanceLaw, ResolvedRateLaw
from freeflyer_control.model import FreeFlyerModel
from freeflyer_control.physics.actuators import mode_support
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import make_state
from freeflyer_control.runtime.controller_server import ControllerServer
from freeflyer_control.runtime.gjm_server import GjmServer
from freeflyer_control.runtime.lockstep import LockstepLoop
from freeflyer_control.runtime.plant_server import PlantServer

RATE = 500.0            # Hz; kernels do not depend on it
PERIODS_PER_STAGE = 3   # periods after each change (start, target, mode): the kernels' first calls


@dataclass(frozen=True)
class WarmUp:
    """What :func:`warm_robot` ran for one robot."""

    robot: str
    modes: tuple[str, ...]   # the modes flown (those the robot's actuators allow)
    plant: str               # the plant step's engine (PlantServer.plant_note)
    seconds: float           # wall time, compiles or cache loads included


def warm_robot(ff: FreeFlyerModel) -> WarmUp:
    """Build the servers plant_node, controller_node (the three built-in laws) and gjm_node
    build for ``ff``, then fly a few lockstep periods: at start, after an end-effector target
    (robots with one), and after a switch to each mode the robot's actuators allow."""
    t0 = time.perf_counter()
    plant = PlantServer(ff, make_state(ff, joint_positions=ff.ready_pose), rate=RATE, compiled=None)
    laws = {law.name: law() for law in (ComputedTorqueLaw, ResolvedRateLaw, ImpedanceLaw)}
    ctl = ControllerServer(ff, rate=RATE, laws=laws, controller=ComputedTorqueLaw.name)
    GjmServer(ff)
    loop = LockstepLoop(plant, ctl)
    k = 0

    def periods() -> None:
        nonlocal k
        for _ in range(PERIODS_PER_STAGE):
            loop.period(k / RATE)
            k += 1

    periods()
    if ff.end_effectors:
        ee = ff.end_effectors[0]
        data = ff.create_data()
        pin.framesForwardKinematics(ff.model, data, plant.plant.state.q)
        ctl.set_ee_target(ee, data.oMf[ff.frame_id(ee)].translation + np.array([0.01, 0.0, 0.0]), None)
        periods()
    flown = [ctl.mode.value]
    for mode in Mode:
        if mode is not ctl.mode and mode_support(ff, mode) is None:
            ctl.request_mode(mode.value, k / RATE, "warm-up")
            periods()
            flown.append(mode.value)
    return WarmUp(ff.name, tuple(flown), plant.plant_note, time.perf_counter() - t0)
