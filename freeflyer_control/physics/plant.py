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

Actuation is held constant over a step (zero-order hold), as a digital controller would.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.actuators import Actuation, generalized_forces
from freeflyer_control.physics.dynamics import forward_dynamics, kinetic_energy
from freeflyer_control.physics.momentum import centroidal_momentum
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
    v1, w1, v2, w2 = xi[:3], xi[3:], eta[:3], eta[3:]
    return np.concatenate([np.cross(w1, v2) + np.cross(v1, w2), np.cross(w1, w2)])


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
        self.state = state.copy()
        self.dt = float(dt)
        self.t = float(t0)
        self.last_acceleration = np.zeros(ff.model.nv)

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
        k2v = self.acceleration(pin.integrate(model, q0, th), v2, tau)
        th = 0.5 * h * k2t
        v3 = v0 + 0.5 * h * k2v
        k3t = dexp_inv(base, nb, th, v3)
        k3v = self.acceleration(pin.integrate(model, q0, th), v3, tau)
        th = h * k3t
        v4 = v0 + h * k3v
        k4t = dexp_inv(base, nb, th, v4)
        k4v = self.acceleration(pin.integrate(model, q0, th), v4, tau)

        theta = (h / 6.0) * (k1t + 2.0 * k2t + 2.0 * k3t + k4t)
        q_new = pin.integrate(model, q0, theta)
        v_new = v0 + (h / 6.0) * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)
        self.last_acceleration = k1v
        self.state = State(q_new, v_new)
        self.t += h
        return self.state

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
