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
from scipy.linalg.blas import dnrm2
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
    out[:nb] = _dexp_inv_base(base, theta.tolist()[:nb], v.tolist()[:nb])
    return out


def _dexp_inv_base(base: str, theta: list, v: list) -> list:
    """The base part of :func:`dexp_inv` on floats: v + 1/2 [theta, v] + 1/12 [theta, [theta, v]]
    of the base parts of theta and v (lists)."""
    if base == "planar":
        first = _bracket(base, theta, v)
        second = _bracket(base, theta, first)
        return [x + 0.5 * a + b / 12.0 for x, a, b in zip(v, first, second)]
    # Spatial: the two brackets of _bracket written out (three plant stages a step, where the calls
    # and their lists cost as much as the arithmetic).
    v1x, v1y, v1z, w1x, w1y, w1z = theta
    v2x, v2y, v2z, w2x, w2y, w2z = v
    f0 = (w1y * v2z - w1z * v2y) + (v1y * w2z - v1z * w2y)
    f1 = (w1z * v2x - w1x * v2z) + (v1z * w2x - v1x * w2z)
    f2 = (w1x * v2y - w1y * v2x) + (v1x * w2y - v1y * w2x)
    f3, f4, f5 = w1y * w2z - w1z * w2y, w1z * w2x - w1x * w2z, w1x * w2y - w1y * w2x
    g0 = (w1y * f2 - w1z * f1) + (v1y * f5 - v1z * f4)
    g1 = (w1z * f0 - w1x * f2) + (v1z * f3 - v1x * f5)
    g2 = (w1x * f1 - w1y * f0) + (v1x * f4 - v1y * f3)
    g3, g4, g5 = w1y * f5 - w1z * f4, w1z * f3 - w1x * f5, w1x * f4 - w1y * f3
    return [v2x + 0.5 * f0 + g0 / 12.0, v2y + 0.5 * f1 + g1 / 12.0, v2z + 0.5 * f2 + g2 / 12.0,
            w2x + 0.5 * f3 + g3 / 12.0, w2y + 0.5 * f4 + g4 / 12.0, w2z + 0.5 * f5 + g5 / 12.0]


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
        self._base_nb = (ff.base, ff.nb)
        self._steps = (None,)   # (dt, dt/2, dt, dt/6 as 0-d arrays) of the last step
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
        """One RKMK4 step with momentum projection (see the module docstring).

        Returns (q, v, world momentum, work of ``tau`` over the step J).
        """
        ff, model, data, h = self.ff, self._model, self.data, self.dt
        base, nb = self._base_nb
        integrate = _integrate

        self._contact_stages = [] if self.contact is not None else None
        # Pinocchio's ABA straight away unless a contact or a subclass (the closed chain) adds to
        # the accelerations: the hook's two Python calls cost more than their arithmetic.
        acc = None if self.contact is None and self._open_chain else self.acceleration
        # Stage arithmetic on whole vectors, a few temporaries each: at nv ~ 13 a NumPy call costs
        # more than its flops, so the stage sums are written with as few calls as possible. The
        # stage derivatives of theta, k_t = dexp^-1_th(v_k), differ from v_k on the base only,
        # which is corrected on Python floats.
        hh, h6 = 0.5 * h, h / 6.0
        # The same step sizes as 0-d arrays for the vector products: NumPy converts a Python float
        # on every call (a third of a product's cost here).
        if self._steps[0] != h:
            self._steps = (h, np.array(hh), np.array(h), np.array(h6))
        _, hh_, h_, h6_ = self._steps
        # The stages are written out, not looped or factored into a helper: a Python call costs
        # about 0.3 us a stage here, a hundredth of the step.
        k1v = _aba(model, data, q0, v0, tau) if acc is None else acc(q0, v0, tau)
        th = hh_ * v0  # h/2 k1t, k1t = v0
        v2 = hh_ * k1v
        v2 += v0
        k2t = v2.copy()
        k2t[:nb] = _dexp_inv_base(base, th.tolist()[:nb], v2.tolist()[:nb])
        q2 = integrate(model, q0, th)
        k2v = _aba(model, data, q2, v2, tau) if acc is None else acc(q2, v2, tau)
        th = hh_ * k2t
        v3 = hh_ * k2v
        v3 += v0
        k3t = v3.copy()
        k3t[:nb] = _dexp_inv_base(base, th.tolist()[:nb], v3.tolist()[:nb])
        q3 = integrate(model, q0, th)
        k3v = _aba(model, data, q3, v3, tau) if acc is None else acc(q3, v3, tau)
        th = h_ * k3t
        v4 = h_ * k3v
        v4 += v0
        k4t = v4.copy()
        k4t[:nb] = _dexp_inv_base(base, th.tolist()[:nb], v4.tolist()[:nb])
        q4 = integrate(model, q0, th)
        k4v = _aba(model, data, q4, v4, tau) if acc is None else acc(q4, v4, tau)

        theta = k2t + k3t
        theta += theta  # x 2, exactly
        theta += v0  # k1t = v0
        theta += k4t
        theta *= h6_
        q_new = integrate(model, q0, theta)
        v_new = k2v + k3v
        v_new += v_new  # x 2, exactly
        v_new += k1v
        v_new += k4v
        v_new *= h6_
        v_new += v0

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
        stages = v2 + v3
        stages += stages  # x 2, exactly
        stages += v0
        stages += v4
        work = h6 * float(tau @ stages) + contact_work

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
