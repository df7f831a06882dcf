"""After the grasp: stowing and stopping the captured target.

* :class:`StowLaw`: the robot holding the target by one hand moves its arms on quintics in joint
  space, from the angles and rates where the grasp closed to given angles at rest (the first
  hand stops the target relative to the base, the second arm goes to its pre-grasp pose); the
  base per mode: flying, the thrusters remove the stack's momentum (a wrench -k [P; L_C] about
  the stack's CoM: what the target brought, not the internal exchange of moving it, which
  would cost fuel twice); rotation-floating, the wheels hold its attitude (the target's momentum
  goes into them); floating, free (the stack turns on with it).
* :class:`RestLaw`: every actuated velocity to zero (u' = -K u), the stack's motion in the
  actuators' limits.

Each returns a control.effort.ControlEffort; control.capture_mission clips and allocates it.
Units: rad, rad/s, N m; base wrench in world axes.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from freeflyer_control.control.base_control import BaseGains, base_accelerations
from freeflyer_control.control.capture import capture_mode, effort_for_accelerations
from freeflyer_control.control.computed_torque import hybrid_dynamics
from freeflyer_control.control.effort import ControlEffort
from freeflyer_control.control.references import BaseReference
from freeflyer_control.errors import ModeError
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.gjm import actuated_velocities
from freeflyer_control.physics.linalg import cross3
from freeflyer_control.physics.momentum import centroidal_momentum
from freeflyer_control.physics.modes import Mode, base_partition
from freeflyer_control.physics.reaction_null_space import base_rows
from freeflyer_control.physics.reduced import reduced_dynamics
from freeflyer_control.physics.state import (
    State,
    base_position,
    base_quaternion_xyzw,
    base_rotation,
    joint_positions,
)

# The base pose loop of the capture phases: 1 rad/s, critically damped (faster than the default
# 0.5 rad/s of maneuvers: a captured target pushes the base harder than an arm maneuver).
CAPTURE_BASE_GAINS = BaseGains(kp_linear=1.0, kd_linear=2.0, kp_attitude=1.0, kd_attitude=2.0)


def quintic(q0: np.ndarray, v0: np.ndarray, q1: np.ndarray, duration: float, t: float):
    """(q, q', q'') at ``t`` of the quintic from (q0, v0, 0) to (q1, 0, 0) over ``duration`` s
    (held at q1 after): the minimum-jerk ramp plus a term that starts at v0 and dies out."""
    x = min(max(t / duration, 0.0), 1.0)
    p, dp, ddp = 10 * x**3 - 15 * x**4 + 6 * x**5, 30 * x**2 - 60 * x**3 + 30 * x**4, 60 * x - 180 * x**2 + 120 * x**3
    h, dh, ddh = x - 6 * x**3 + 8 * x**4 - 3 * x**5, 1 - 18 * x**2 + 32 * x**3 - 15 * x**4, -36 * x + 96 * x**2 - 60 * x**3
    d = q1 - q0
    return (q0 + v0 * duration * h + d * p, v0 * dh + d * dp / duration,
            v0 * ddh / duration + d * ddp / duration ** 2)


def _base_hold(ff: FreeFlyerModel, state: State) -> BaseReference:
    return BaseReference.hold(base_position(ff, state.q), base_quaternion_xyzw(ff, state.q))


def _arm_angles(ff: FreeFlyerModel, state: State) -> np.ndarray:
    return joint_positions(ff, state.q)[ff.arm_v_indices - ff.nb]


class StowLaw:
    """The robot ``held`` (holding the target by one hand) brings the arm angles from where they
    are at :meth:`reset` to ``angles`` (rad, ``held.arm_joint_names`` order) on quintics over
    ``duration`` s; the base as the module docstring says (``momentum_gain``: 1/s, flying). ``done``
    once the quintic is over and every joint is within ``tolerance`` rad and its rate under
    ``tolerance`` rad/s."""

    def __init__(self, held: FreeFlyerModel, mode: Mode | str, angles: np.ndarray, duration: float,
                 kp: float = 9.0, kd: float = 6.0, gains: BaseGains = CAPTURE_BASE_GAINS, momentum_gain: float = 1.0):
        self.ff, self.mode = held, capture_mode(mode)
        self.angles, self.duration, self.kp, self.kd, self.gains = np.asarray(angles, float), duration, kp, kd, gains
        self.momentum_gain = momentum_gain
        self.data = held.create_data()
        self.t0: float | None = None
        self.start: tuple[np.ndarray, np.ndarray] | None = None
        self.hold: BaseReference | None = None

    def reset(self, state: State, t: float) -> None:
        ff = self.ff
        self.t0, self.start = t, (_arm_angles(ff, state), state.v[ff.arm_v_indices].copy())
        self.hold = _base_hold(ff, state)

    def effort(self, state: State, t: float) -> ControlEffort:
        if self.t0 is None:
            self.reset(state, t)
        ff = self.ff
        q, dq, ddq = quintic(self.start[0], self.start[1], self.angles, self.duration, t - self.t0)
        u_arm = ddq + self.kd * (dq - state.v[ff.arm_v_indices]) + self.kp * (q - _arm_angles(ff, state))
        if self.mode is Mode.FLYING:
            return self._momentum_removal(state, u_arm)
        part = base_partition(ff.base, self.mode)
        u_base = base_accelerations(ff, state, self.hold, self.gains, part) if part.commanded.size else np.zeros(0)
        return effort_for_accelerations(ff, self.data, state, self.mode, np.concatenate([u_arm, u_base]))

    def _momentum_removal(self, state: State, u_arm: np.ndarray) -> ControlEffort:
        """Flying: the base wrench (world axes, about the base origin) -k [P; L_C + (c - r_b) x P]
        that removes the stack's momentum, and the arm torques that give ``u_arm`` with it
        (hybrid dynamics: base forces known, arm accelerations known)."""
        ff, nb = self.ff, self.ff.nb
        h = centroidal_momentum(ff, self.data, state)  # [P; L about the CoM], world; CoM in data.com[0]
        F = -self.momentum_gain * h[:3]
        lever = base_position(ff, state.q) - self.data.com[0]
        torque = -self.momentum_gain * h[3:] - cross3(lever, F)
        wrench = np.array([F[0], F[1], torque[2]]) if ff.base == "planar" else np.concatenate([F, torque])
        rd = reduced_dynamics(ff, self.data, state, Mode.FLYING, idle_wheels=True)  # (base world, arm)
        acc = np.concatenate([np.zeros(nb), u_arm])
        force = np.zeros(rd.H.shape[0])
        force[:nb] = wrench
        base = np.arange(nb)
        forces = hybrid_dynamics(rd.H, rd.C, acc, unknown=base, known_force_rows=base, force=force)
        return ControlEffort(forces[nb:], np.zeros(ff.wheel_v_indices.size), forces[:nb])

    def done(self, state: State, t: float, tolerance: float = 2e-3) -> bool:
        ff = self.ff
        return (self.t0 is not None and t - self.t0 >= self.duration
                and np.abs(_arm_angles(ff, state) - self.angles).max() < tolerance
                and np.abs(state.v[ff.arm_v_indices]).max() < tolerance)


class RestLaw:
    """Every actuated velocity of ``held`` to zero, u' = -``gain`` u (1/s)."""

    def __init__(self, held: FreeFlyerModel, mode: Mode | str, gain: float = 2.0):
        self.ff, self.mode, self.gain = held, capture_mode(mode), gain
        self.data = held.create_data()

    def effort(self, state: State) -> ControlEffort:
        u = actuated_velocities(self.ff, state, self.mode)
        return effort_for_accelerations(self.ff, self.data, state, self.mode, -self.gain * u)
