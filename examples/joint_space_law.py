#!/usr/bin/env python3
"""A joint-space law of your own, written against the interface, flown in a simulation.

The law is computed torque with a saturating velocity: each joint is driven towards its
reference at no more than ``max_rate`` rad/s, critically damped, through the mode's reduced
dynamics from the context (tau = H* qdd + C*). In modes that command base DOFs it also holds the
base where the maneuver says, with a PD on the base pose through the same H*: the first entries
of H* qdd + C* are the base wrench (world axes), which the loop allocates to the thrusters.

Run: python examples/joint_space_law.py [--duration S] [--mode MODE]
The same law from the command line: freeflyer sim --controller joint_space_law:SaturatedJointPD
(run from this folder, or with it on PYTHONPATH), --controller-param max_rate=0.2 for its parameter.
"""

from __future__ import annotations

import argparse

import numpy as np
import pinocchio as pin

from freeflyer_control.control.law import ControlLaw, Parameter
from freeflyer_control.physics.state import rotation_from_xyzw
from freeflyer_control.sim.config import SimConfig
from freeflyer_control.sim.runner import run_simulation


class SaturatedJointPD(ControlLaw):
    """Joint-space computed torque with a rate limit, and a base pose PD where the mode commands the base."""

    name = "saturated_joint_pd"
    parameters = (
        Parameter("wn", float, 2.0, (0.01, 100.0), "joint natural frequency, rad/s"),
        Parameter("max_rate", float, 0.3, (1e-3, 10.0), "joint rate limit of the approach, rad/s"),
        Parameter("base_wn", float, 0.5, (0.0, 10.0), "base pose natural frequency, rad/s"),
    )

    def effort(self, state, reference, context):
        p, ref = self.params, reference.joint
        error = ref.position - context.joint_positions()
        rate = np.clip(ref.velocity + p.wn * error, -p.max_rate, p.max_rate)  # the approach, limited
        qdd = ref.acceleration + 2.0 * p.wn * (rate - context.joint_velocities())
        part = context.partition()
        base = self._base_acceleration(reference.base, context)[part.commanded] if part.commanded.size else []
        rd = context.reduced_dynamics()  # coordinates: commanded base DOFs (world), then the arm joints
        forces = rd.H @ np.concatenate([base, qdd]) + rd.C
        nc = part.commanded.size
        return context.joint_effort(forces[nc:], base_wrench_world=context.base_effort(forces[:nc]))

    def _base_acceleration(self, ref, context) -> np.ndarray:
        """Base pose PD, world axes, critically damped at ``base_wn``: (ax, ay, az, alpha_x, y, z),
        planar (ax, ay, alpha_z)."""
        w = self.params.base_wn
        position, R = context.base_pose()
        lin, ang = context.base_twist()
        a_lin = w * w * (ref.position - position) + 2 * w * (ref.linear_velocity - lin)
        a_ang = w * w * pin.log3(rotation_from_xyzw(ref.orientation_xyzw) @ R.T) + 2 * w * (ref.angular_velocity - ang)
        full = np.concatenate([a_lin, a_ang])
        return full[[0, 1, 5]] if context.model.base == "planar" else full


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=20.0, help="s (default 20)")
    ap.add_argument("--mode", default="flying", help="maneuvering mode (default flying)")
    args = ap.parse_args(argv)
    result = run_simulation(SimConfig(robot="planar_4link", maneuver="wilde", mode=args.mode,
                                      controller=SaturatedJointPD(max_rate=0.2), duration=args.duration))
    s = result.summary
    print(f"{s['controller']} in {s['mode']} mode on {s['robot']} ({s['engine']} engine): RMS tracking error "
          f"{s['rms_tracking_error']:.3g} {s['tracking_error_units']}, base moved {s['base_position_change_m']:.3g} m, "
          f"turned {s['base_attitude_change_rad']:.3g} rad, law fault: {s['law_fault']}")
    return s


if __name__ == "__main__":
    main()
