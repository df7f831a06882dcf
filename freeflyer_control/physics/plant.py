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

Contact. ``Plant.contact`` (None by default) may hold a contact model with ``sample(q, v)`` and
``after_step(impulse, dt)`` methods (:class:`~freeflyer_control.physics.contact.WallContact`;
``after_step`` moves a floating wall once per accepted step). Its generalized force is
added to the actuation in :meth:`Plant.acceleration`, so at every RK4 stage (it depends on the
stage's q and v, unlike the held actuation); the contact is external, so its wrench about the
world origin joins the momentum rate (d/dt [P; L_O] = contact wrench + base actuation) with the
same RK4 weights, and its power joins the work of the energy check. ``last_contact_impulse`` is
the step's integrated contact wrench (the momentum coordinates: N s, N m s).

Divergence. A step too large for the dynamics (a stiff maneuver at a low rate, a large base
wrench) makes RK4 unstable: the state grows without bound and turns into NaN. Every step is
checked, and a step that fails is not taken: the plant holds its last state, records why in
:attr:`Plant.diverged` and raises :class:`PlantDiverged` (on this and every later step, until a
new state is assigned). A step fails when

* the new state is not finite;
* a velocity leaves the model's domain: a joint faster than ``VELOCITY_MARGIN`` times its URDF
  velocity limit and than ``SPEED_BOUND``, the base or an unlimited joint faster than
  ``SPEED_BOUND``;
* the kinetic energy grows by more than the work the applied forces did over the step (the
  power balance dT/dt = tau . v, exact for the ODE, integrated with the step's own RK4 stages),
  beyond ``ENERGY_RTOL`` of the energy involved: energy that no actuation explains.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from scipy.linalg.blas import dnrm2

from freeflyer_control.errors import FreeFlyerError
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.actuators import Actuation, generalized_forces
from freeflyer_control.physics.linalg import quadratic_form_upper, solve_spd_upper
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

    Spatial, se(3) with (v, w) order: [w1 x v2 + v1 x w2; w1 x w2] (Pinocchio's
    ``Motion.cross``; test_plant checks the two agree).
    Planar, se(2) with (vx, vy, wz): [w1 J v2 - w2 J v1; 0] with J the 90-degree rotation.
    """
    return np.array(_bracket(base, xi.tolist(), eta.tolist()))


def _bracket(base: str, xi: list, eta: list) -> list:
    """:func:`base_bracket` on Python floats. It runs six times per plant step, on 3- and
    6-vectors, where scalar arithmetic costs less than NumPy's per-call overhead (or wrapping
    the vectors in ``pin.Motion``: ~3 us a bracket)."""
    if base == "planar":
        w1, w2 = xi[2], eta[2]
        return [-w1 * eta[1] + w2 * xi[1], w1 * eta[0] - w2 * xi[0], 0.0]
    v1x, v1y, v1z, w1x, w1y, w1z = xi
    v2x, v2y, v2z, w2x, w2y, w2z = eta
    return [
        (w1y * v2z - w1z * v2y) + (v1y * w2z - v1z * w2y),
        (w1z * v2x - w1x * v2z) + (v1z * w2x - v1x * w2z),
        (w1x * v2y - w1y * v2x) + (v1x * w2y - v1y * w2x),
        w1y * w2z - w1z * w2y,
        w1z * w2x - w1x * w2z,
        w1x * w2y - w1y * w2x,
    ]


def dexp_inv(base: str, nb: int, theta: np.ndarray, v: np.ndarray) -> np.ndarray:
    """theta' for body velocity ``v`` at algebra point ``theta`` (base part corrected)."""
    out = v.copy()
    t, vb = theta[:nb].tolist(), v[:nb].tolist()
    first = _bracket(base, t, vb)
    second = _bracket(base, t, first)
    out[:nb] = [x + 0.5 * a + b / 12.0 for x, a, b in zip(vb, first, second)]
    return out


# A velocity past these is taken for a blow-up, not physics: a joint faster than VELOCITY_MARGIN
# times its URDF velocity limit (and than SPEED_BOUND), the base (m/s, rad/s) or a joint without a
# limit faster than SPEED_BOUND. The URDF limit is a motor rating: a light wrist whipped by the
# passive dynamics of a floating arm can pass it (measured: over 10 rad/s from 2 rad/s on
# spatial_6link, whose limit is 1 rad/s), hence the margin and the floor. 100 m/s or rad/s is two
# orders of magnitude beyond any table or orbital manipulation maneuver.
VELOCITY_MARGIN = 10.0
SPEED_BOUND = 100.0
# Unexplained energy gain over one step, relative to the energy involved (T before + T after +
# |work|). A stable step leaves round-off to ~1e-4 (the power balance holds to RK4's O(h^5);
# measured on the bundled robots with joint rates up to 1 rad/s: < 2e-4 at 20 Hz, up to 4e-3 for
# spatial_7dof at 10 Hz); an unstable one multiplies the energy step after step, so the residual is
# O(1) (5 % in the first step of a 10 Hz arm at its effort limits, 36 % at the end of a 1 Hz
# end-effector maneuver). 1 % stops that in its first step or two, long before NaN.
ENERGY_RTOL = 1e-2
# J: below this the power balance is round-off (a robot at rest, a zero-torque step).
ENERGY_ATOL = 1e-9


def energy_explained(energy_before: float, energy: float, work: float) -> bool:
    """True when a step's kinetic energy change (J) is the work of the applied forces (J) within
    ``ENERGY_RTOL`` of the energy involved (+ ``ENERGY_ATOL``); only a gain counts. False for NaN.

    A plain function of floats on purpose: the compiled simulation engine runs this same
    function after each of its plant steps (control/kernels/computed_torque.py).
    """
    unexplained = energy - energy_before - work
    return unexplained <= ENERGY_RTOL * (energy_before + energy + abs(work)) + ENERGY_ATOL


def energy_reason(energy_before: float, energy: float, work: float) -> str:
    """The divergence reason of a step whose energy gain the work does not explain."""
    return (f"kinetic energy went from {energy_before:.3g} J to {energy:.3g} J while the applied forces "
            f"did {work:.3g} J of work (tolerance {ENERGY_RTOL:g} of the energy involved); the step is "
            "too large for the dynamics: raise the rate")


def velocity_reason(ff: FreeFlyerModel, q: np.ndarray, v: np.ndarray, bounds: np.ndarray) -> str:
    """The divergence reason of a step to (q, v) with a speed over its bound (``velocity_bounds``)
    or a non-finite entry."""
    if not (np.isfinite(v).all() and np.isfinite(q).all()):
        return "NaN or Inf in the state; the step is too large for the dynamics: raise the rate"
    names, units = _coordinate_names(ff)
    i = int(np.argmax(np.abs(v) > bounds))
    bound = (f"{VELOCITY_MARGIN:g} x its URDF velocity limit, {bounds[i]:.3g} {units[i]}"
             if bounds[i] > SPEED_BOUND else f"{bounds[i]:.3g} {units[i]}")
    return (f"{names[i]} speed {abs(v[i]):.3g} {units[i]} is over the divergence bound ({bound}); "
            "the commands or the step are too large: lower them or raise the rate")


class PlantDiverged(FreeFlyerError, RuntimeError):
    """The plant's integration diverged: ``reason`` says when, which check and what to do (one
    line); ``t`` is the time of the last good state, which the plant holds (s)."""

    def __init__(self, reason: str, t: float):
        super().__init__(reason)
        self.reason, self.t = reason, t


def _coordinate_names(ff: FreeFlyerModel) -> tuple[list[str], list[str]]:
    """Names and units of the velocity coordinates (base ones in base_link axes)."""
    base = (["base vx", "base vy", "base wz"] if ff.base == "planar"
            else ["base vx", "base vy", "base vz", "base wx", "base wy", "base wz"])
    base_units = (["m/s", "m/s", "rad/s"] if ff.base == "planar" else ["m/s"] * 3 + ["rad/s"] * 3)
    units = []
    for name in ff.joint_names:
        prismatic = ff.model.joints[ff.model.getJointId(name)].shortname().startswith("JointModelP")
        units.append("m/s" if prismatic else "rad/s")
    return base + [f"joint '{n}'" for n in ff.joint_names], base_units + units


def velocity_bounds(ff: FreeFlyerModel) -> np.ndarray:
    """Speeds (nv,) past which the plant counts as diverged: m/s or rad/s, Pinocchio's velocity
    coordinates (base ones in base_link axes). See ``VELOCITY_MARGIN`` and ``SPEED_BOUND``."""
    limits = np.asarray(ff.model.velocityLimit, dtype=float).copy()
    bounds = np.full(ff.model.nv, SPEED_BOUND)
    joints = slice(ff.nb, None)
    limited = np.isfinite(limits[joints]) & (limits[joints] > 0) & (limits[joints] < 1e300)
    bounds[joints] = np.where(limited, np.maximum(VELOCITY_MARGIN * limits[joints], SPEED_BOUND), SPEED_BOUND)
    return bounds


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
        self.v_bounds = velocity_bounds(ff)
        self.contact = None
        self.last_contact_impulse = np.zeros(ff.nb)
        self._contact_stages: list | None = None  # (contact sample, v) of each stage of a step
        self.state = state

    @property
    def state(self) -> State:
        """The current state. Assigning one (a reset) also resets the integrated momentum."""
        return self._state

    @state.setter
    def state(self, state: State) -> None:
        if not (np.isfinite(state.q).all() and np.isfinite(state.v).all()):
            raise ValueError("plant state must be finite; got NaN or Inf in q or v")
        self._state = state.copy()
        self.momentum_world = world_momentum(self.ff, self.data, self._state)
        self._energy = kinetic_energy(self.ff, self.data, self._state.q, self._state.v)
        self.diverged: str | None = None

    def acceleration(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """a (nv,) under generalized forces ``tau`` and the contact, if any."""
        if self.contact is not None:
            c = self.contact.sample(q, v)
            if self._contact_stages is not None:
                self._contact_stages.append((c, v))
            tau = tau + c.tau
        return forward_dynamics(self.ff, self.data, q, v, tau)

    def step(self, actuation: Actuation | None = None, *, tau: np.ndarray | None = None) -> State:
        """Advance one step under ``actuation`` (or raw generalized forces ``tau``, (nv,),
        Pinocchio's velocity coordinates: base wrench in base_link axes, joint torques).

        Raises:
            ValueError: a command of the wrong size or not finite (nothing is integrated).
            PlantDiverged: the step diverged, or an earlier one did (the state is held).
        """
        if self.diverged is not None:
            raise PlantDiverged(self.diverged, self.t)
        q0, v0 = self.state.q, self.state.v
        if tau is None:
            # Saturation (e.g. wheel speed limits) is decided once per step, at its start.
            tau = generalized_forces(self.ff, q0, actuation or Actuation(), v0)
        try:
            # A diverging step overflows on its way to the check below, which says why in one
            # line: numpy's overflow warnings would only repeat it, less clearly (0.7 us a step).
            with np.errstate(over="ignore", invalid="ignore"):
                q_new, v_new, momentum, work, M = self._integrate(q0, v0, tau)
            reason = self._divergence(q_new, v_new, work, M)
        except (np.linalg.LinAlgError, ValueError, RuntimeError) as exc:  # NaN inside Pinocchio or LAPACK
            reason = f"the dynamics could not be evaluated ({exc})"
        if reason is not None:
            self.diverged = f"plant diverged at t = {self.t + self.dt:.6g} s: {reason}"
            raise PlantDiverged(self.diverged, self.t)
        self.momentum_world = momentum
        self._state = State(q_new, v_new)
        self.t += self.dt
        if self.contact is not None:  # a floating wall moves by the step's impulse
            self.contact.after_step(self.last_contact_impulse, self.dt)
        return self._state

    def _integrate(self, q0: np.ndarray, v0: np.ndarray, tau: np.ndarray):
        """One RKMK4 step with momentum projection (see the module docstring).

        Returns (q, v, world momentum, work of ``tau`` over the step J, upper-triangular M at q).
        """
        ff, model, h = self.ff, self.ff.model, self.dt
        base, nb = ff.base, ff.nb

        self._contact_stages = [] if self.contact is not None else None
        # Stage arithmetic on whole vectors, a few temporaries each: at nv ~ 13 a NumPy call costs
        # more than its flops, so the stage sums are written with as few calls as possible.
        hh = 0.5 * h
        k1v = self.acceleration(q0, v0, tau)
        th = hh * v0
        v2 = hh * k1v
        v2 += v0
        k2t = dexp_inv(base, nb, th, v2)
        q2 = pin.integrate(model, q0, th)
        k2v = self.acceleration(q2, v2, tau)
        th = hh * k2t
        v3 = hh * k2v
        v3 += v0
        k3t = dexp_inv(base, nb, th, v3)
        q3 = pin.integrate(model, q0, th)
        k3v = self.acceleration(q3, v3, tau)
        th = h * k3t
        v4 = h * k3v
        v4 += v0
        k4t = dexp_inv(base, nb, th, v4)
        q4 = pin.integrate(model, q0, th)
        k4v = self.acceleration(q4, v4, tau)

        h6 = h / 6.0
        theta = k2t + k3t
        theta *= 2.0
        theta += v0  # k1t = v0
        theta += k4t
        theta *= h6
        q_new = pin.integrate(model, q0, theta)
        v_new = k2v + k3v
        v_new *= 2.0
        v_new += k1v
        v_new += k4v
        v_new *= h6
        v_new += v0

        tau_b = tau[:nb]
        momentum = self.momentum_world
        if tau_b.any():
            # h' = wrench about the world origin, evaluated at the same stages (base pose only).
            w1 = base_wrench_about_world_origin(ff, q0, tau_b)
            w2 = base_wrench_about_world_origin(ff, q2, tau_b)
            w3 = base_wrench_about_world_origin(ff, q3, tau_b)
            w4 = base_wrench_about_world_origin(ff, q4, tau_b)
            momentum = momentum + h6 * (w1 + 2 * w2 + 2 * w3 + w4)
        contact_work = 0.0
        if self._contact_stages is not None:
            weights = (h6, 2.0 * h6, 2.0 * h6, h6)
            stages, self._contact_stages = self._contact_stages, None
            self.last_contact_impulse = sum(w * c.wrench_origin for w, (c, _) in zip(weights, stages))
            momentum = momentum + self.last_contact_impulse
            contact_work = sum(w * float(c.tau @ sv) for w, (c, sv) in zip(weights, stages))
        M = pin.crba(model, self.data, q_new)  # upper triangle; the base rows are complete
        rows = world_momentum_to_base_rows(ff, q_new, momentum)
        v_new[:nb] = solve_spd_upper(M[:nb, :nb], rows - M[:nb, nb:] @ v_new[nb:])
        # Work of the held forces: the power tau . v (body velocities, so the base wrench in
        # base_link axes pairs with the base twist in base_link axes) by the same RK4 quadrature.
        stages = v2 + v3
        stages *= 2.0
        stages += v0
        stages += v4
        work = h6 * float(tau @ stages) + contact_work

        self.last_acceleration = k1v
        return q_new, v_new, momentum, work, M

    def _divergence(self, q: np.ndarray, v: np.ndarray, work: float, M: np.ndarray) -> str | None:
        """Why the step to (q, v) diverged (one line), or None; keeps the energy of an accepted
        step. ``M``: the mass matrix at q, upper triangle."""
        # The comparisons catch NaN and Inf too (they compare false); the reason is sorted out
        # only on failure. q needs no check of its own: a non-finite q makes M (attitude, joints)
        # or the momentum rows (base position) non-finite, and the base velocity solved from them.
        energy = 0.5 * quadratic_form_upper(M, v)
        # Every bound is at least SPEED_BOUND, so a norm |v| <= SPEED_BOUND clears all of them at
        # once (BLAS nrm2: no overflow, ~0.2 us); a finite energy rules out NaN in v, whatever the
        # BLAS does with NaN in nrm2. Only a fast or broken state pays for the full comparison.
        if not (dnrm2(v) <= SPEED_BOUND and math.isfinite(energy)) and not (np.abs(v) <= self.v_bounds).all():
            return velocity_reason(self.ff, q, v, self.v_bounds)
        # Only a gain counts: an unstable step amplifies, while a step that loses energy is merely
        # inaccurate (RK4 damps at large steps) and stays bounded.
        if not energy_explained(self._energy, energy, work):
            return energy_reason(self._energy, energy, work)
        self._energy = energy
        return None

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
