#!/usr/bin/env python3
"""A law that keeps the base still: the arm moves in the null space of the coupling inertia.

With zero momentum the base velocity of a free-floating robot is v_b = -M_bb^-1 M_bm qdot
(M_bb: the base block of the mass matrix, M_bm: its coupling to the arm joints, Pinocchio's
base_link axes). Joint rates with M_bm qdot = 0 (the reaction null space) leave the base where it
is. The law asks for joint accelerations that keep the base acceleration at -k v_b,

    M_bm qdd = -b_b + k M_bb v_b          (the base rows of M a + b = 0 with a_b = -k v_b)
    qdd = M_bm^+ (-b_b + k M_bb v_b) + N kd (qdot_nominal - qdot),   N = I - M_bm^+ M_bm

(the maneuver's joint rates as the nominal motion, projected on the null space), and realises
them with the mode's exact inverse dynamics, tau = H* qdd + C*. Everything comes from the law's
context: the mass matrix, the bias b, the reduced dynamics H*, C*.

Run: python examples/reactionless.py [--duration S]. It flies the Wilde maneuver's joint rates on
planar_4link from its ready pose twice, with the built-in computed torque (the naive law: the
base turns by tens of degrees) and with this law (the base turns by less than a micro-radian),
and prints both. (From the stretched arm the coupling M_bm loses rank: no reaction-null-space
motion is well defined there, and its pseudo-inverse asks for large joint rates.)
"""

from __future__ import annotations

import argparse

import numpy as np

from freeflyer_control.control.law import ControlLaw, Parameter
from freeflyer_control.sim.config import SimConfig
from freeflyer_control.sim.runner import run_simulation


class Reactionless(ControlLaw):
    """Arm motion in the reaction null space (M_bm qdot = 0): the floating base does not move."""

    name = "reactionless"
    parameters = (
        Parameter("k", float, 20.0, (0.0, 1e3), "base velocity feedback, 1/s"),
        Parameter("kd", float, 5.0, (0.0, 1e3), "joint-rate servo towards the projected nominal rates, 1/s"),
    )

    def refuses_mode(self, mode):
        return None if mode.value == "floating" else "reactionless flies floating mode (no base actuators)"

    def effort(self, state, reference, context):
        model, p = context.model, self.params
        nb, arm = model.nb, model.arm_v_indices
        M, b = context.mass_matrix(), context.nonlinear_effects()
        M_bb, M_bm = M[:nb, :nb], M[:nb][:, arm]
        v_b, qdot = state.v[:nb], context.joint_velocities()
        pinv = np.linalg.pinv(M_bm)
        N = np.eye(arm.size) - pinv @ M_bm
        qdd = pinv @ (-b[:nb] + p.k * (M_bb @ v_b)) + N @ (p.kd * (reference.joint.velocity - qdot))
        rd = context.reduced_dynamics()  # floating mode: the arm joints, the wheels idle
        return context.joint_effort(rd.H @ qdd + rd.C)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=30.0, help="s of the Wilde maneuver (default 30)")
    args = ap.parse_args(argv)
    from freeflyer_control.model import load_robot

    ready = load_robot("planar_4link").ready_pose
    config = dict(robot="planar_4link", maneuver="wilde", mode="floating", duration=args.duration, rate=250.0,
                  initial_joint_positions=ready)
    naive = run_simulation(SimConfig(controller="computed_torque", **config)).summary
    still = run_simulation(SimConfig(controller=Reactionless(), **config)).summary
    for label, s in (("computed_torque (naive)", naive), ("reactionless", still)):
        print(f"{label:<24} base attitude change {s['base_attitude_change_rad']:.3g} rad "
              f"({np.degrees(s['base_attitude_change_rad']):.3g} deg), base moved {s['base_position_change_m']:.3g} m")
    return {"naive": naive, "reactionless": still}


if __name__ == "__main__":
    main()
