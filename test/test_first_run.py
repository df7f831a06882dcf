"""The first run on a machine: what it compiles, and what never waits for a compile.

numba compiles a kernel the first time a process calls it with new argument types, then loads
it from its on-disk cache. A fresh cache (a new ``NUMBA_CACHE_DIR``) in a subprocess is a fresh
machine: these tests look at what that first process compiles.
"""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("numba", reason="the compiled engine needs numba (pip extra 'pypi' or 'fast')")

# What a first run must not compile when it does not fly it (module.function of the kernels).
NOT_FOR_A_JOINT_MANEUVER = ("resolved_rate.",)          # the end-effector reference and its SVD
NOT_WITHOUT_A_THRUSTER_WRENCH = ("allocation.", "allocation_kernel.")  # the thruster allocator
NOT_WITHOUT_ROTATION_FLOATING = ("computed_torque.rotation_floating_effort", "computed_torque.hybrid_solve")
NOT_IN_THE_COMPILED_LOOP = ("reduced.gjm_post", "reduced.reduced_post")  # the Python laws' kernels

LISTEN = """
import json, sys
from numba.core import event
compiled = []
class Listener(event.Listener):
    def on_start(self, ev):
        f = ev.data["dispatcher"].py_func
        compiled.append(f.__module__.rsplit(".", 1)[-1] + "." + f.__name__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Listener())
"""


def first_process(code: str, tmp_path) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    out = subprocess.run([sys.executable, "-c", LISTEN + code], env=env, capture_output=True, text=True,
                         timeout=900, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_one_shot_query_never_imports_numba(tmp_path):
    result = first_process("""
from freeflyer_control.cli.main import main
pose = ["--q", "[0.3, -0.5, 0.8, 0.2, 0.4, -0.3]"]
codes = [main(["gjm", "--robot", "spatial_6link", "--mode", "rotation-floating", "--json", *pose]),
         main(["osi", "--robot", "spatial_6link", "--mode", "flying", "--json", *pose])]
print(json.dumps({"codes": codes, "compiled": compiled}))
""", tmp_path)
    assert result["codes"] == [0, 0]
    assert result["compiled"] == [], "a one-shot query compiled a kernel"


def test_a_first_joint_maneuver_compiles_only_what_it_flies(tmp_path):
    """The README's main command's run (Wilde, floating, thrusters on the robot): no resolved
    rate, no allocator, no wheel solve, none of the Python laws' kernels."""
    result = first_process("""
from freeflyer_control.sim.config import SimConfig
from freeflyer_control.sim.runner import run_simulation
run = run_simulation(SimConfig(robot="planar_4link", mode="floating", maneuver="wilde", duration=0.1))
print(json.dumps({"engine": run.summary["engine"], "compiled": compiled}))
""", tmp_path)
    assert result["engine"] == "compiled (numba)"
    names = result["compiled"]
    assert "loop.run_ticks" in names and "rigid_body.plant_step" in names
    for unused in NOT_FOR_A_JOINT_MANEUVER + NOT_WITHOUT_A_THRUSTER_WRENCH + NOT_WITHOUT_ROTATION_FLOATING \
            + NOT_IN_THE_COMPILED_LOOP:
        assert not [n for n in names if n.startswith(unused)], f"compiled {unused} it does not fly: {names}"


def test_a_warm_up_that_compiles_says_what_and_one_that_loads_says_nothing(package_log):
    """The servers' warm-ups (fastpath.warm, the laws' compiled paths) run inside
    fastpath.with_compile_notice: a compile (a machine's first use: ~20 s for a law) is
    announced once, before the wait; a call numba already has code for is silent."""
    import logging

    import numba

    from freeflyer_control.physics import fastpath

    kernel = numba.njit(cache=False)(lambda x: 2.0 * x)   # new to this process: it compiles
    with package_log.at_level(logging.WARNING):
        assert fastpath.with_compile_notice("the test kernel", lambda: kernel(1.5)) == 3.0
        assert fastpath.with_compile_notice("the test kernel", lambda: kernel(2.5)) == 5.0
    notices = [m for m in package_log.messages if "the test kernel" in m]
    assert notices == ["compiling the test kernel (numba, first use on this machine, 10-60 s; "
                       "cached for later runs)"]
