"""Momentum bookkeeping of a capture, and bias momentum (after Dimitrov & Yoshida, 2004).

Once a servicer grasps a tumbling target, servicer and target are one system (the stack) whose
momentum is the sum of theirs: the grasp is internal (physics.capture). About the stack's CoM C
(the only point about which a free stack's angular momentum is a property of the stack, whatever
its drift), world axes:

    L_stack = L_servicer(C) + L_target(C),   L_x(C) = L_x(c_x) + (c_x - C) x P_x

Brought to rest with its base not turning, everything but the reaction wheels stops, so the
wheels end holding L_stack (and a stack with linear momentum drifts on: only thrusters remove
P). A servicer that has to hold its attitude through the capture therefore needs room in its
wheels for the target's momentum, and the arm's reaction to stopping the target goes into the
base unless the wheels take it.

Bias momentum: load the servicer, before contact, with angular momentum -L_target(C), in its
wheels (and whatever its arm is doing: the servicer's total counts), so that L_stack = 0. Then
the target's momentum arriving at the grasp cancels the bias instead of adding to it: the base
can be held still through the detumble by wheels that spin down, not up, and at rest the stack
holds no momentum at all. Dimitrov & Yoshida distribute the momentum so between the arm and the
wheels; this module does the bookkeeping (what to load, what the stack will hold), the loading
itself is a control law (control.momentum). A servicer's own momentum changes only under an
external torque (thrusters): loading it takes fuel, before contact rather than during it.

Frames and units: world axes, about the points stated; kg m/s and kg m^2/s (N m s). Planar
robots: the z component of angular momenta (a one-entry array) and in-plane linear momentum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.free_body import BodyState, FreeBody
from freeflyer_control.physics.linalg import cross3
from freeflyer_control.physics.momentum import centroidal_momentum
from freeflyer_control.physics.reaction_null_space import base_rows
from freeflyer_control.physics.state import State, base_rotation


def wheel_momentum(ff: FreeFlyerModel, data: pin.Data, state: State) -> np.ndarray:
    """The angular momentum the reaction wheels hold by spinning relative to the base: the wheel
    columns of the base's angular momentum rows times the wheel rates, world axes (kg m^2/s;
    planar: the z component, one entry; no wheels: zeros)."""
    _, ang = base_rows(ff)
    w = ff.wheel_v_indices
    if not w.size:
        return np.zeros(ang.size)
    M_aw = pin.crba(ff.model, data, state.q)[np.ix_(ang, w)]  # upper triangle: base rows are complete
    local = M_aw @ state.v[w]
    return local if ff.base == "planar" else base_rotation(ff, state.q) @ local


def body_momentum(body: FreeBody, state: BodyState, point: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P, L about ``point``) of a free rigid body, world axes, 3-vectors."""
    P = body.mass * np.asarray(state.linear_velocity, dtype=float)
    L = state.angular_momentum(body) + cross3(state.pose.translation - point, P)
    return P, L


@dataclass(frozen=True)
class StackMomentum:
    """What servicer and target bring to the stack, about the stack's CoM, world axes.

    Attributes:
        com: the stack's CoM (world, m).
        servicer: (P, L) of the servicer (base, arms, wheels).
        target: (P, L) of the target.
        wheels: the wheels' share of the servicer's angular momentum.
        bias: the wheel momentum that would make the stack's angular momentum zero:
            wheels - (L_servicer + L_target).
    """

    com: np.ndarray
    servicer: tuple[np.ndarray, np.ndarray]
    target: tuple[np.ndarray, np.ndarray]
    wheels: np.ndarray
    bias: np.ndarray

    @property
    def linear(self) -> np.ndarray:
        return self.servicer[0] + self.target[0]

    @property
    def angular(self) -> np.ndarray:
        return self.servicer[1] + self.target[1]


def stack_momentum(ff: FreeFlyerModel, data: pin.Data, state: State, body: FreeBody,
                   target: BodyState) -> StackMomentum:
    """The momentum a grasp now would leave in the stack of servicer ``ff`` at ``state`` and the
    free target ``body`` at ``target`` (see the module docstring). Planar: (Px, Py) and Lz."""
    h = centroidal_momentum(ff, data, state)  # [P; L about the servicer's CoM], leaves the CoM in data
    c_s = data.com[0].copy()
    m_s, m_t = ff.total_mass, body.mass
    C = (m_s * c_s + m_t * target.pose.translation) / (m_s + m_t)
    P_s = h[:3]
    L_s = h[3:] + cross3(c_s - C, P_s)
    P_t, L_t = body_momentum(body, target, C)
    wheels = wheel_momentum(ff, data, state)
    if ff.base == "planar":
        P_s, L_s, P_t, L_t = P_s[:2], L_s[2:], P_t[:2], L_t[2:]
    return StackMomentum(C, (P_s, L_s), (P_t, L_t), wheels, wheels - (L_s + L_t))
