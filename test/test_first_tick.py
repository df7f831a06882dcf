"""A node's first control periods never compile or load a kernel.

numba compiles a kernel the first time a process calls it with new argument types, or loads it
from its on-disk cache: a compile takes 10-60 s, a load 10-50 ms (43 ms for the computed-torque
kernel here, ~120 ms on issue 22's slower machine). Either inside a control period is a stall the
loop cannot absorb (the lockstep loop drops its schedule after 50 ms behind; a testbed's bridge
e-stops after ~10 ms without commands). So the servers load everything a run flies while they are
built, and these tests hold that: a fresh interpreter builds the plant and controller servers as
the nodes do, then counts every kernel a dispatcher has to find (compile or load) during the
periods that follow: the first ticks, an end-effector target, mode switches.
"""

import json
import subprocess
import sys

import pytest

pytest.importorskip("numba", reason="the compiled kernels need numba (pip extra 'pypi' or 'fast')")

# Counts, from now on, each call numba has no compiled code for in this process
# (Dispatcher._compile_for_args: it loads the kernel from the cache, or compiles it), with the
# argument types numba sees.
WATCH = """
import json
from numba.core.dispatcher import Dispatcher
found = []
def watch():
    original = Dispatcher._compile_for_args
    def recorded(self, *args, **kws):
        types = ", ".join(str(self.typeof_pyval(a)) for a in args)
        found.append(f"{self.py_func.__module__}.{self.py_func.__name__}({types})")
        return original(self, *args, **kws)
    Dispatcher._compile_for_args = recorded
"""

# The servers built as the nodes build them, then the periods they fly.
BUILD = """
import numpy as np, pinocchio as pin
from freeflyer_control.model import load_robot
from freeflyer_control.physics.state import make_state
from freeflyer_control.runtime.controller_server import ControllerServer
from freeflyer_control.runtime.lockstep import LockstepLoop
from freeflyer_control.runtime.plant_server import PlantServer

ff = load_robot(ROBOT)
plant = PlantServer(ff, make_state(ff, joint_positions=ff.ready_pose), rate=500.0, compiled=None)
ctl = ControllerServer(ff, rate=500.0, mode="floating", base_actuation="thrusters")
loop = LockstepLoop(plant, ctl)
"""
# sim_loop_node's period (nodes.sim_loop_node.LockstepDriver.period): floating mode's periods
# take the compiled period (runtime.compiled_period), the flying modes' the Python calls.
FLY = """
def period(k):
    now = k / 500
    loop.handover(loop.opening(now)[1], now)
    loop.tick_and_step(now)
    loop.measure_ahead()
for k in range(5):
    period(k)
data = ff.create_data()
pin.framesForwardKinematics(ff.model, data, plant.plant.state.q)
ee = ff.end_effectors[0]
ctl.set_ee_target(ee, data.oMf[ff.frame_id(ee)].translation + np.array([0.05, -0.03, 0.0]), None)
for k in range(5, 10):
    period(k)
for j, mode in enumerate(MODES):
    ctl.request_mode(mode, (10 + 5 * j) / 500, "test")
    for k in range(10 + 5 * j, 15 + 5 * j):
        period(k)
print(json.dumps({"found": found, "mode": ctl.mode.value, "compiled": loop.compiled.compiled}))
"""
PERIODS = BUILD + "watch()\n" + FLY   # what the periods find, after the servers are built
NODES = "watch()\n" + BUILD + FLY     # what the nodes' servers find, their construction included
WARM = """
watch()
from freeflyer_control.cli.main import main
code = main(["warm", "--robot", ROBOT])
print(json.dumps({"found": found, "code": code}))
"""


def kernels_found(script: str, robot: str, modes: tuple[str, ...] = ("flying",)) -> dict:
    code = WATCH + script.replace("ROBOT", repr(robot)).replace("MODES", repr(modes))
    # A cold cache compiles at construction (minutes): the timeout covers that.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("robot", ["planar_4link", "spatial_6link"])
def test_the_first_periods_load_no_kernel(robot):
    """The first ticks, an end-effector target and switches to the flying modes find every kernel
    already loaded (before ComputedTorque's kernel was loaded by the law's prepare, the first
    tick loaded it: control.kernels.computed_torque.joint_space_effort)."""
    result = kernels_found(PERIODS, robot, ("flying", "rotation-flying"))
    assert result["mode"] == "rotation-flying", "the switches did not happen: nothing was exercised"
    assert result["compiled"] == 10, "the floating periods did not take the compiled period"
    assert result["found"] == [], f"kernels loaded or compiled inside control periods: {result['found']}"


@pytest.mark.parametrize("robot", ["planar_4link", "spatial_6link"])
def test_freeflyer_warm_loads_every_kernel_the_nodes_find(robot):
    """What the nodes' servers load or compile, from construction through a target and a mode
    switch, `freeflyer warm` loads too, for the same argument types (so after it, a first start
    compiles nothing)."""
    nodes = kernels_found(NODES, robot)
    warm = kernels_found(WARM, robot)
    assert warm["code"] == 0
    assert nodes["found"], "the watch saw nothing: the check would pass vacuously"
    assert set(nodes["found"]) <= set(warm["found"]), (
        f"kernels the nodes need that freeflyer warm leaves out: {set(nodes['found']) - set(warm['found'])}")
