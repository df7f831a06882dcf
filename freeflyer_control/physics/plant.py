"""The simulated plant: fixed-step integration of the full floating-base dynamics.

The integrator is the Runge-Kutta-Munthe-Kaas method of order 4 (RKMK4) on the configuration
manifold. Each step writes q(t) = q0 (+) theta(t) (Pinocchio's ``integrate``, the group
exponential: SE(3) for a free-flyer base, SE(2) for a planar one, SO(2) for continuous joints)
and integrates theta in the Lie algebra, where it is an ODE in a vector space:

    theta' = dexp^-1_theta(v),      v' = a(q0 (+) theta, v)

with dexp^-1_theta(v) = v + 1/2 [theta, v] + 1/12 [theta, [theta, v]] + O(theta^4) for
body-frame velocities (the truncation keeps order 4). Only the base joint has a non-zero
bracket; the joints are abelian. Quaternions are never normalised by hand: they only ever
come out of the exponential map.

Momentum projection. The total momentum about the world origin, h = [P; L_O], obeys
h' = (external wrench), whatever the joints do. The plant integrates h alongside (q, v) with
the same RK4 weights (exactly, when no external wrench acts) and, after each step, re-solves
the base velocity from it: v_b = M_bb^-1 (h_b(q) - M_bj qdot). This is the standard projection
method for an invariant (Hairer, Lubich & Wanner, Geometric Numerical Integration, IV.4): the
correction is of the size of the RK4 local error, so the order stays 4, and in floating mode
P and L stay at their initial values to round-off instead of drifting by O(dt^4) per second.

Actuation is held constant over a step (zero-order hold), as a digital controller would.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.actuators import Actuation, generalized_forces
from freeflyer_control.physics.linalg import solve_spd_upper
from freeflyer_control.physics.dynamics import forward_dynamics, kinetic_energy
from freeflyer_control.physics.momentum import (
    base_wrench_about_world_origin,
    centroidal_momentum,
    world_momentum,
    world_momentum_to_base_rows,
)
from freeflyer_control.physics.state import State


def base_bracket(base: str, xi: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """Lie bracket [xi, eta] of two base velocities in Pinocchio's local coordinates.

    Spatial, se(3) with (v, w) order: [w1 x v2 + v1 x w2; w1 x w2].
    Planar, se(2) with (vx, vy, wz): [w1 J v2 - w2 J v1; 0] with J the 90-degree rotation.
    """
    if base == "planar":
        w1, w2 = xi[2], eta[2]
        return np.array([
            -w1 * eta[1] + w2 * xi[1],
            w1 * eta[0] - w2 * xi[0],
            0.0,
        ])
    return pin.Motion(xi).cross(pin.Motion(eta)).vector  # Pinocchio's se(3) bracket


def dexp_inv(base: str, nb: int, theta: np.ndarray, v: np.ndarray) -> np.ndarray:
    """theta' for body velocity ``v`` at algebra point ``theta`` (base part corrected)."""
    out = v.copy()
    t, vb = theta[:nb], v[:nb]
    first = base_bracket(base, t, vb)
    out[:nb] += 0.5 * first + base_bracket(base, t, first) / 12.0
    return out


@dataclass(frozen=True)
class PlantDiagnostics:
    """Conserved-quantity bookkeeping at the current state.

    Attributes:
        t: time, s.
        momentum: [P; L_C] in world axes (kg m/s, kg m^2/s).
        com: system CoM in world, m.
        kinetic_energy: J.
    """

    t: float
    momentum: np.ndarray
    com: np.ndarray
    kinetic_energy: float


class Plant:
    """Fixed-step simulator of a free-flyer under actuator commands.

    Args:
        ff: the robot.
        state: initial state (copied).
        dt: integration step, s.
        t0: initial time, s.
    """

    def __init__(self, ff: FreeFlyerModel, state: State, dt: float, t0: float = 0.0):
        if not (dt > 0 and np.isfinite(dt)):
            raise ValueError(f"dt must be a positive number of seconds, got {dt}")
        self.ff = ff
        self.data = ff.create_data()
        self.dt = float(dt)
        self.t = float(t0)
        self.last_acceleration = np.zeros(ff.model.nv)
        self.state = state

    @property
    def state(self) -> State:
        """The current state. Assigning one (a reset) also resets the integrated momentum."""
        return self._state

    @state.setter
    def state(self, state: State) -> None:
        self._state = state.copy()
        self.momentum_world = world_momentum(self.ff, self.data, self._state)

    def acceleration(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
        return forward_dynamics(self.ff, self.data, q, v, tau)

    def step(self, actuation: Actuation | None = None, *, tau: np.ndarray | None = None) -> State:
        """Advance one step under ``actuation`` (or raw generalized forces ``tau``)."""
        ff, model, h = self.ff, self.ff.model, self.dt
        q0, v0 = self.state.q, self.state.v
        if tau is None:
            # Saturation (e.g. wheel speed limits) is decided once per step, at its start.
            tau = generalized_forces(ff, q0, actuation or Actuation(), v0)
        base, nb = ff.base, ff.nb

        k1v = self.acceleration(q0, v0, tau)
        k1t = v0
        th = 0.5 * h * k1t
        v2 = v0 + 0.5 * h * k1v
        k2t = dexp_inv(base, nb, th, v2)
        q2 = pin.integrate(model, q0, th)
        k2v = self.acceleration(q2, v2, tau)
        th = 0.5 * h * k2t
        v3 = v0 + 0.5 * h * k2v
        k3t = dexp_inv(base, nb, th, v3)
        q3 = pin.integrate(model, q0, th)
        k3v = self.acceleration(q3, v3, tau)
        th = h * k3t
        v4 = v0 + h * k3v
        k4t = dexp_inv(base, nb, th, v4)
        q4 = pin.integrate(model, q0, th)
        k4v = self.acceleration(q4, v4, tau)

        theta = (h / 6.0) * (k1t + 2.0 * k2t + 2.0 * k3t + k4t)
        q_new = pin.integrate(model, q0, theta)
        v_new = v0 + (h / 6.0) * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)

        tau_b = tau[:nb]
        if np.any(tau_b):
            # h' = wrench about the world origin, evaluated at the same stages (base pose only).
            w1 = base_wrench_about_world_origin(ff, q0, tau_b)
            w2 = base_wrench_about_world_origin(ff, q2, tau_b)
            w3 = base_wrench_about_world_origin(ff, q3, tau_b)
            w4 = base_wrench_about_world_origin(ff, q4, tau_b)
            self.momentum_world = self.momentum_world + (h / 6.0) * (w1 + 2 * w2 + 2 * w3 + w4)
        M = pin.crba(model, self.data, q_new)  # upper triangle; the base rows are complete
        rows = world_momentum_to_base_rows(ff, q_new, self.momentum_world)
        v_new[:nb] = solve_spd_upper(M[:nb, :nb], rows - M[:nb, nb:] @ v_new[nb:])

        self.last_acceleration = k1v
        self._state = State(q_new, v_new)
        self.t += h
        return self._state

    def run(self, duration: float, actuation: Actuation | None = None) -> State:
        """Integrate for ``duration`` seconds (rounded to whole steps) under constant commands."""
        for _ in range(int(round(duration / self.dt))):
            self.step(actuation)
        return self.state

    def diagnostics(self) -> PlantDiagnostics:
        h = centroidal_momentum(self.ff, self.data, self.state)
        return PlantDiagnostics(
            t=self.t,
            momentum=h,
            com=self.data.com[0].copy(),
            kinetic_energy=kinetic_energy(self.ff, self.data, self.state.q, self.state.v),
        )
