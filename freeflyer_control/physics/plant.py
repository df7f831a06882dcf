"""The simulated plant: fixed-step integration of the full floating-base dynamics.

The integrator is the commutator-free Lie group method of order 4 ("CF4") of Celledoni,
Marthinsen & Owren (Commutator-free Lie group methods, Future Generation Computer Systems 19,
2003), the classical RK4 tableau on the configuration manifold. Every configuration update is a
composition of Pinocchio's ``integrate``, q (+) w = q exp(w) for a body velocity w (the group
exponential: SE(3) for a free-flyer base, SE(2) for a planar one, SO(2) for continuous joints):

    q2 = q0 (+) h/2 V1,   q3 = q0 (+) h/2 V2,   q4 = q2 (+) (h V3 - h/2 V1),
    q(t+h) = (q0 (+) h/12 (3 V1 + 2 V2 + 2 V3 - V4)) (+) h/12 (-V1 + 2 V2 + 2 V3 + 3 V4)

with the stage velocities V1 = v0, V2 = v0 + h/2 a1, V3 = v0 + h/2 a2, V4 = v0 + h a3 and the
accelerations a_i = a(q_i, V_i); the velocity takes RK4's v(t+h) = v0 + h/6 (a1 + 2 a2 + 2 a3 + a4).
The paper writes y' = A(y) y, exponentials acting on the left; body velocities act on the right
(q' = q v), so the exponentials of a stage compose in the mirror order: the other order is of
order 2 on the base (test_momentum_and_plant holds the order on the base pose alone). On the
joints (an abelian group) the two final exponentials add up to RK4's h/6 (V1 + 2 V2 + 2 V3 + V4).
Quaternions are never normalised by hand: they only ever come out of the exponential map.

Before CF4 the plant used Runge-Kutta-Munthe-Kaas of order 4 (CHANGELOG), which integrates theta in the Lie
algebra with dexp^-1 truncated after two brackets on the base. Same order, and on the bundled
robots the same error to two digits (docs/benchmarks.md, "The integrator"); CF4 needs no bracket
series, about half of the 16-19 % the Python engine's step saved with it (the other half: the
stage sums through BLAS).

Momentum projection. The total momentum about the world origin, h = [P; L_O], obeys
h' = (external wrench), whatever the joints do. The plant integrates h alongside (q, v) with
the same RK4 weights (exactly, when no external wrench acts) and, after each step, re-solves
the base velocity from it: v_b = M_bb^-1 (h_b(q) - M_bj qdot) (here v_b + Ag_b^-1 (h - Ag v) with
Pinocchio's centroidal momentum map Ag, the same velocity; the compiled step uses M). This is the
standard projection method for an invariant (Hairer, Lubich & Wanner, Geometric Numerical
Integration, IV.4): the correction is of the size of the RK4 local error, so the order stays 4,
and in floating mode P and L stay at their initial values to round-off instead of drifting by
O(dt^4) per second.

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
from scipy.linalg.blas import daxpy as _axpy, ddot as _dot, dnrm2, dscal as _scal
from scipy.linalg.lapack import dgesv

from freeflyer_control.errors import FreeFlyerError
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.actuators import Actuation, generalized_forces
from freeflyer_control.physics.energy_balance import ENERGY_ATOL, ENERGY_RTOL, energy_explained  # noqa: F401 (API)
from freeflyer_control.physics.linalg import solve_spd_upper
from freeflyer_control.physics.dynamics import kinetic_energy
from freeflyer_control.physics.momentum import (
    base_wrench_about_world_origin,
    centroidal_from_world,
    centroidal_momentum,
    world_momentum,
    world_momentum_to_base_rows,
)
from freeflyer_control.physics.state import State


# Pinocchio's calls of every plant step as module names (an attribute lookup on pin costs ~40 ns).
# aba and crba return arrays of their own (not views of pin.Data, which the next call overwrites):
# no copy needed (test_plant_hot_paths holds the binding to it).
_aba, _ccrba, _crba, _integrate, _kinetic_energy = (pin.aba, pin.ccrba, pin.crba, pin.integrate,
                                                   pin.computeKineticEnergy)
_PLANAR_ROWS = np.array([0, 1, 5])  # Px, Py, Lz of a spatial momentum


# A velocity past these is taken for a blow-up, not physics: a joint faster than VELOCITY_MARGIN
# times its URDF velocity limit (and than SPEED_BOUND), the base (m/s, rad/s) or a joint without a
# limit faster than SPEED_BOUND. The URDF limit is a motor rating: a light wrist whipped by the
# passive dynamics of a floating arm can pass it (measured: over 10 rad/s from 2 rad/s on
# spatial_6link, whose limit is 1 rad/s), hence the margin and the floor. 100 m/s or rad/s is two
# orders of magnitude beyond any table or orbital manipulation maneuver.
VELOCITY_MARGIN = 10.0
SPEED_BOUND = 100.0
# Generalized forces (N, N m) and velocities (m/s, rad/s) whose norms are below this cannot overflow
# a step (accelerations M^-1 (tau - b) stay below ~1e110 for any physical inertia, far from the
# 1e308 of an overflow), so the step runs without numpy's error-state context (~1 us); otherwise,
# or with NaN, inside one. An accepted step leaves the velocities within the divergence bounds.
QUIET_FORCES = 1e100


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
        self._model = ff.model   # the hot path's Pinocchio calls, without ff's attribute lookups
        # The accelerations are Pinocchio's ABA unless a subclass adds to them (the closed chain).
        self._open_chain = type(self).acceleration is Plant.acceleration
        self.data = ff.create_data()
        self.dt = float(dt)
        self.t = float(t0)
        self.last_acceleration = np.zeros(ff.model.nv)
        self._v_shape = (ff.model.nv,)
        self._nb = ff.nb   # a property of ff: read once
        self._steps = (None,)   # (dt, then dt/2 and dt as 0-d arrays) of the last step
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
        self._quiet_state = dnrm2(self._state.v) <= QUIET_FORCES
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
        return _aba(self._model, self.data, q, v, tau)   # physics.dynamics.forward_dynamics

    def step(self, actuation: Actuation | None = None, *, tau: np.ndarray | None = None) -> State:
        """Advance one step under ``actuation`` (or raw generalized forces ``tau``, (nv,),
        Pinocchio's velocity coordinates: base wrench in base_link axes, joint torques).

        Raises:
            ValueError: a command of the wrong size or not finite (nothing is integrated).
            PlantDiverged: the step diverged, or an earlier one did (the state is held).
        """
        if self.diverged is not None:
            raise PlantDiverged(self.diverged, self.t)
        q0, v0 = self._state.q, self._state.v
        # Saturation (e.g. wheel speed limits) is decided once per step, at its start.
        tau = generalized_forces(self.ff, q0, actuation or Actuation(), v0) if tau is None else self.forces(tau)
        try:
            if dnrm2(tau) <= QUIET_FORCES and self._quiet_state:
                q_new, v_new, momentum, work = self._integrate(q0, v0, tau)
            else:
                # A diverging step overflows on its way to the check below, which says why in one
                # line: numpy's overflow warnings would only repeat it, less clearly.
                with np.errstate(over="ignore", invalid="ignore"):
                    q_new, v_new, momentum, work = self._integrate(q0, v0, tau)
            reason = self._divergence(q_new, v_new, work)
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

    def forces(self, tau) -> np.ndarray:
        """Raw generalized forces ``tau`` as the step takes them: a contiguous float array (nv,)
        (Pinocchio's velocity coordinates: base wrench in base_link axes, N and N m; joint
        forces, N m or N).

        Raises:
            ValueError: ``tau`` has not nv entries.
        """
        tau = np.ascontiguousarray(tau, dtype=float)
        if tau.shape != self._v_shape:
            raise ValueError(f"tau must have {self._v_shape[0]} entries (the model's velocity "
                             f"coordinates: base wrench, then joint forces); got shape {tau.shape}")
        return tau

    def _integrate(self, q0: np.ndarray, v0: np.ndarray, tau: np.ndarray):
        """One CF4 step with momentum projection (see the module docstring).

        Returns (q, v, world momentum, work of ``tau`` over the step J).
        """
        ff, model, data, h = self.ff, self._model, self.data, self.dt
        nb = self._nb
        integrate = _integrate

        self._contact_stages = [] if self.contact is not None else None
        # Pinocchio's ABA straight away unless a contact or a subclass (the closed chain) adds to
        # the accelerations: the hook's two Python calls cost more than their arithmetic.
        acc = None if self.contact is None and self._open_chain else self.acceleration
        # At nv ~ 13 a NumPy call costs more than its flops, so the stage sums are written with
        # as few calls as possible: BLAS axpy (y += a x in place, returned) and scal where NumPy
        # needs a product and a sum; a product by a 0-d array where a new vector is needed
        # (NumPy converts a Python float on every call, a third of a product's cost here). The
        # stages are written out, not looped or factored into a helper: a Python call costs about
        # 0.3 us a stage, a hundredth of the step.
        hh, h6, h12 = 0.5 * h, h / 6.0, h / 12.0
        if self._steps[0] != h:
            self._steps = (h, np.array(hh), np.array(h))
        _, hh_, h_ = self._steps
        k1v = _aba(model, data, q0, v0, tau) if acc is None else acc(q0, v0, tau)
        half1 = hh_ * v0  # h/2 V1, V1 = v0
        q2 = integrate(model, q0, half1)
        v2 = _axpy(k1v, v0.copy(), a=hh)  # V2 = v0 + h/2 a1
        k2v = _aba(model, data, q2, v2, tau) if acc is None else acc(q2, v2, tau)
        q3 = integrate(model, q0, hh_ * v2)
        v3 = _axpy(k2v, v0.copy(), a=hh)
        k3v = _aba(model, data, q3, v3, tau) if acc is None else acc(q3, v3, tau)
        q4 = integrate(model, q2, _axpy(half1, h_ * v3, a=-1.0))  # q2 exp(h V3 - h/2 V1)
        v4 = _axpy(k3v, v0.copy(), a=h)
        k4v = _aba(model, data, q4, v4, tau) if acc is None else acc(q4, v4, tau)

        v23 = v2 + v3
        first = _axpy(v23, _axpy(v4, 3.0 * v0, a=-1.0), a=2.0)  # 3 V1 + 2 V2 + 2 V3 - V4
        second = _axpy(v23, _axpy(v0, 3.0 * v4, a=-1.0), a=2.0)  # -V1 + 2 V2 + 2 V3 + 3 V4
        q_new = integrate(model, integrate(model, q0, _scal(h12, first)), _scal(h12, second))
        a_sum = _axpy(k3v, _axpy(k2v, k1v + k4v, a=2.0), a=2.0)  # a1 + 2 a2 + 2 a3 + a4
        v_new = _axpy(a_sum, v0.copy(), a=h6)

        tau_b = tau[:nb]
        momentum = self.momentum_world
        if any(tau_b.tolist()):  # NaN counts as non-zero, as in ndarray.any, at a fifth of its cost
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
        # The projection: the base velocity that gives the integrated momentum, v_b + Ag_b^-1 (h - Ag v)
        # with Pinocchio's centroidal momentum matrix Ag at q_new (world axes, about the CoM: one
        # call computes it, the momentum Ag v of the unprojected velocity and the CoM).
        Ag = _ccrba(model, data, q_new, v_new)
        error = centroidal_from_world(ff, momentum, data.com[0])
        if nb == 3:
            error -= data.hg.vector.take(_PLANAR_ROWS)
            Ag_b = Ag[_PLANAR_ROWS, :3]
        else:
            error -= data.hg.vector
            Ag_b = Ag[:, :6]
        _, _, correction, info = dgesv(Ag_b, error)
        if info == 0:
            v_new[:nb] += correction
        else:  # a configuration a diverging step broke: the mass-matrix form, which says why if it fails
            M = _crba(model, data, q_new)  # upper triangle; the base rows are complete
            rows = world_momentum_to_base_rows(ff, q_new, momentum)
            rows -= M[:nb, nb:] @ v_new[nb:]
            v_new[:nb] = solve_spd_upper(M[:nb, :nb], rows)
        # Work of the held forces: the power tau . v (body velocities, so the base wrench in
        # base_link axes pairs with the base twist in base_link axes) by the same RK4 quadrature.
        work = h6 * (_dot(tau, v0) + 2.0 * _dot(tau, v23) + _dot(tau, v4)) + contact_work

        self.last_acceleration = k1v
        return q_new, v_new, momentum, work

    def _divergence(self, q: np.ndarray, v: np.ndarray, work: float) -> str | None:
        """Why the step to (q, v) diverged (one line), or None; keeps the energy of an accepted
        step."""
        # The comparisons catch NaN and Inf too (they compare false); the reason is sorted out
        # only on failure. q needs no check of its own: a non-finite q makes M (attitude, joints)
        # or the momentum rows (base position) non-finite, and the base velocity solved from them.
        energy = _kinetic_energy(self._model, self.data, q, v)   # 1/2 v^T M v, at half the cost
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
