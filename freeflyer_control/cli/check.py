"""``freeflyer check MODEL``: load and validate a model, print its summary."""

from __future__ import annotations

import argparse

import numpy as np

from freeflyer_control.model import load_robot
from freeflyer_control.physics.actuators import mode_support
from freeflyer_control.physics.dynamics import mass_matrix
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import make_state


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="validate a robot model and print its summary")
    p.add_argument("model", help="bundled robot name, robot config .yaml, or .urdf path")
    p.add_argument("--base", choices=("planar", "spatial"), help="base type for a bare URDF")
    p.add_argument("--ee", action="append", metavar="FRAME", help="end-effector frame")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    ff = load_robot(args.model, base=args.base, end_effectors=args.ee)
    print(ff.summary())
    data = ff.create_data()
    eig = np.linalg.eigvalsh(mass_matrix(ff, data, make_state(ff).q))
    print(f"mass matrix    eigenvalues {eig.min():.3g} .. {eig.max():.3g} at the neutral pose")
    for mode in Mode:
        reason = mode_support(ff, mode)
        print(f"mode {mode.value:<19} {'ok' if reason is None else 'unavailable: ' + reason}")
    print("ok")
    return 0
