"""``freeflyer warm``: compile (a machine's first use) or load the kernels the ROS nodes fly, once,
before their first start (runtime.warm_up). Run it after ``pip install`` or ``colcon build``:
``ros2 run freeflyer_control freeflyer warm``."""

from __future__ import annotations

import argparse
import time

from freeflyer_control.model import load_robot
from freeflyer_control.model.robots import robot_names
from freeflyer_control.physics import fastpath


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("warm", help="compile the kernels the ROS nodes fly before their first start "
                                    "(first use on a machine: minutes; later: seconds)")
    p.add_argument("--robot", nargs="+", metavar="ROBOT", default=None,
                   help="bundled robot names or robot config .yaml paths "
                        "(default: every bundled robot)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if fastpath.kernels() is None:
        print("freeflyer warm: numba is not installed (or FREEFLYER_NUMBA=0): the nodes run on the "
              "NumPy path, nothing to compile")
        return 0
    from freeflyer_control.runtime.warm_up import warm_robot

    t0 = time.perf_counter()
    robots = args.robot or robot_names()
    for name in robots:
        done = warm_robot(load_robot(name))
        print(f"{done.robot}: {done.seconds:.1f} s; {done.plant}; modes {', '.join(done.modes)}", flush=True)
    print(f"freeflyer warm: the kernels of {len(robots)} robot(s) ready in {time.perf_counter() - t0:.1f} s; "
          "the nodes now load them from numba's cache at start")
    return 0
