"""Plausibility of a measured state: finite is not enough.

A reading can be finite and still absurd: a joint rate of 1e154 rad/s, a base 1e308 m from the
origin (a wrong unit, a corrupt driver, an overflowed counter). Computed on, such values overflow
inside the dynamics (the square of 1e154 is inf) and raise, or ask for torques no hardware has.
Whatever computes on a measured state (controller, GJM, testbed bridge) checks it here first and
refuses it with one sentence naming the value and the bound.

The bounds come from the model and sit far outside any real motion: they catch garbage, they are
not the safety limits of a testbed (``hil.config.Limits`` are):

* joint angles: the URDF range widened by half a turn (revolute) or by the range's own width
  (prismatic); continuous joints (wheels): ``|angle| <= CONTINUOUS_ANGLE_BOUND``;
* joint rates: ``VELOCITY_FACTOR`` times the URDF velocity limit;
* base: speed ``max_base_speed`` m/s, rate ``max_base_rate`` rad/s, and distance from the
  ``world`` origin ``max_base_distance`` m (configurable, defaults below);
* a free object (the capture target, :class:`ObjectBounds`): the same distance and speed
  bounds for its CoM, and a rate bound derived from its model: no faster than
  ``max_base_rate``, nor so fast that a grasp frame (or a corner of the object) would move
  faster than the speed bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.model.plausible_motion import (  # noqa: F401 - the defaults, named here too
    DEFAULT_MAX_BASE_DISTANCE,
    DEFAULT_MAX_BASE_RATE,
    DEFAULT_MAX_BASE_SPEED,
)
from freeflyer_control.model.objects import ObjectConfig
from freeflyer_control.physics.state import State, base_position, base_twist_world, joint_positions
from freeflyer_control.ros.conversions import BaseReading, JointReading

# A drive may overshoot its URDF velocity limit; twice the limit is a runaway or a bad reading.
VELOCITY_FACTOR = 2.0
# An unwrapped wheel angle grows without bound, but past this float64 keeps less than 1e-6 rad.
CONTINUOUS_ANGLE_BOUND = 1e9            # rad


@dataclass(frozen=True)
class PlausibilityBounds:
    """Bounds of a plausible state (see the module docstring). Arrays in ``ff.joint_names`` order.

    Attributes:
        joint_names: the joints, for messages.
        joint_lower, joint_upper: angle bounds, rad (m for prismatic joints).
        joint_speed: rate bounds, rad/s (m/s).
        joint_units: "rad" or "m" per joint, for messages.
        max_base_speed: m/s. max_base_rate: rad/s. max_base_distance: m.
    """

    joint_names: tuple[str, ...]
    joint_lower: np.ndarray
    joint_upper: np.ndarray
    joint_speed: np.ndarray
    joint_units: tuple[str, ...]
    max_base_speed: float = DEFAULT_MAX_BASE_SPEED
    max_base_rate: float = DEFAULT_MAX_BASE_RATE
    max_base_distance: float = DEFAULT_MAX_BASE_DISTANCE

    def __post_init__(self) -> None:
        for name in ("max_base_speed", "max_base_rate", "max_base_distance"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"plausibility bound {name} must be a finite number > 0, got {value!r}")
        # The bounds as Python floats, for the test every message takes (see joints).
        object.__setattr__(self, "_ranges", tuple(zip(np.asarray(self.joint_lower, float).tolist(),
                                                      np.asarray(self.joint_upper, float).tolist())))
        object.__setattr__(self, "_speeds", tuple(np.asarray(self.joint_speed, float).tolist()))

    @classmethod
    def from_model(cls, ff: FreeFlyerModel, *, max_base_speed: float = DEFAULT_MAX_BASE_SPEED,
                   max_base_rate: float = DEFAULT_MAX_BASE_RATE,
                   max_base_distance: float = DEFAULT_MAX_BASE_DISTANCE) -> "PlausibilityBounds":
        m = ff.model
        lower, upper, speed, units = [], [], [], []
        for name in ff.joint_names:
            joint = m.joints[m.getJointId(name)]
            prismatic = "Prismatic" in joint.shortname()
            units.append("m" if prismatic else "rad")
            if joint.nq == 2:  # continuous: stored as (cos, sin), read as an unwrapped angle
                lower.append(-CONTINUOUS_ANGLE_BOUND)
                upper.append(CONTINUOUS_ANGLE_BOUND)
            else:
                lo, hi = float(m.lowerPositionLimit[joint.idx_q]), float(m.upperPositionLimit[joint.idx_q])
                margin = (hi - lo) if prismatic else math.pi
                lower.append(lo - margin)
                upper.append(hi + margin)
            speed.append(VELOCITY_FACTOR * float(m.velocityLimit[joint.idx_v]))
        return cls(tuple(ff.joint_names), np.array(lower), np.array(upper), np.array(speed), tuple(units),
                   float(max_base_speed), float(max_base_rate), float(max_base_distance))

    # --- checks: each returns why the values are implausible (one sentence), or None ---------------
    def joints(self, positions: np.ndarray, velocities: np.ndarray | None, what: str) -> str | None:
        """Joint angles (rad) and rates (rad/s, or None if not measured), ``joint_names`` order;
        ``what`` names the source in the message (e.g. ``"joint_states"``)."""
        # Every message: a plausible one passes on Python floats (~1 us for a dozen joints, a
        # third of the NumPy test below, which finds and words what is wrong). NaN fails both.
        q_values = positions.tolist() if isinstance(positions, np.ndarray) else list(positions)
        if len(q_values) == len(self._ranges) and all(lo <= x <= hi for x, (lo, hi) in zip(q_values, self._ranges)):
            if velocities is None:
                return None
            v_values = velocities.tolist() if isinstance(velocities, np.ndarray) else list(velocities)
            if len(v_values) == len(self._speeds) and all(abs(x) <= s for x, s in zip(v_values, self._speeds)):
                return None
        q = np.asarray(positions, dtype=float)
        out = np.flatnonzero(~((q >= self.joint_lower) & (q <= self.joint_upper)))
        if out.size:
            i, unit = out[0], self.joint_units[out[0]]
            return (f"{what}: joint {self.joint_names[i]} at {q[i]:.4g} {unit}, outside the plausible "
                    f"[{self.joint_lower[i]:.4g}, {self.joint_upper[i]:.4g}] {unit} (its URDF range with a margin): "
                    "a corrupt reading or wrong units")
        if velocities is not None:
            v = np.asarray(velocities, dtype=float)
            fast = np.flatnonzero(~(np.abs(v) <= self.joint_speed))
            if fast.size:
                i, unit = fast[0], self.joint_units[fast[0]]
                return (f"{what}: joint {self.joint_names[i]} moving at {v[i]:.4g} {unit}/s, beyond the plausible "
                        f"{self.joint_speed[i]:.4g} {unit}/s ({VELOCITY_FACTOR:g} x its URDF velocity limit): a "
                        "corrupt reading or wrong units")
        return None

    def base(self, position: np.ndarray, linear: np.ndarray | None, angular: np.ndarray | None,
             what: str) -> str | None:
        """Base position (m), linear (m/s) and angular (rad/s) velocity, world; None: not measured."""
        distance = _norm(position)
        if not distance <= self.max_base_distance:
            return (f"{what}: base {distance:.4g} m from the world origin, beyond the plausible "
                    f"{self.max_base_distance:.4g} m (max_base_distance): a corrupt reading or wrong units")
        if linear is not None:
            speed = _norm(linear)
            if not speed <= self.max_base_speed:
                return (f"{what}: base speed {speed:.4g} m/s beyond the plausible {self.max_base_speed:.4g} m/s "
                        "(max_base_speed): a corrupt reading, wrong units, or raise max_base_speed")
        if angular is not None:
            rate = _norm(angular)
            if not rate <= self.max_base_rate:
                return (f"{what}: base rate {rate:.4g} rad/s beyond the plausible {self.max_base_rate:.4g} rad/s "
                        "(max_base_rate): a corrupt reading, wrong units, or raise max_base_rate")
        return None

    def readings(self, joints: JointReading, base: BaseReading, what: str = "state") -> str | None:
        """Both readings of a state, as the message readers return them."""
        return (self.joints(joints.positions, joints.velocities, what)
                or self.base(base.position, base.linear_velocity, base.angular_velocity, what))

    def state(self, ff: FreeFlyerModel, state: State, what: str = "state") -> str | None:
        """A physics :class:`State` of ``ff`` (non-finite entries are implausible too)."""
        if not (np.isfinite(state.q).all() and np.isfinite(state.v).all()):
            return f"{what}: NaN/Inf in the configuration or velocity"
        with np.errstate(all="ignore"):  # an overflowing rotation shows as a non-finite twist: refused below
            linear, angular = base_twist_world(ff, state)
        return (self.joints(joint_positions(ff, state.q), state.v[ff.nb:], what)
                or self.base(base_position(ff, state.q), linear, angular, what))


@dataclass(frozen=True)
class ObjectBounds:
    """Bounds of a plausible free object's odometry (the capture target's), derived from its model.

    Attributes:
        name: the object, for messages.
        max_distance: m, of its CoM from the world origin.
        max_speed: m/s, of its CoM.
        max_rate: rad/s: ``max_base_rate``, or less for a large object: at most ``max_speed``
            over ``reach``.
        reach: m, the largest distance from its CoM of a grasp frame or a corner of its box.
    """

    name: str
    max_distance: float
    max_speed: float
    max_rate: float
    reach: float

    @classmethod
    def from_object(cls, obj: ObjectConfig, *, max_speed: float = DEFAULT_MAX_BASE_SPEED,
                    max_rate: float = DEFAULT_MAX_BASE_RATE,
                    max_distance: float = DEFAULT_MAX_BASE_DISTANCE) -> "ObjectBounds":
        reach = max([float(np.linalg.norm(g.placement.translation)) for g in obj.grasps]
                    + [0.5 * float(np.linalg.norm(obj.size))])
        rate = min(float(max_rate), float(max_speed) / reach) if reach > 0 else float(max_rate)
        return cls(obj.name, float(max_distance), float(max_speed), rate, reach)

    def reading(self, reading: BaseReading, what: str = "object odometry") -> str | None:
        """Why the object's pose and twist (world, CoM) are implausible (one sentence), or None."""
        distance = _norm(reading.position)
        if not distance <= self.max_distance:
            return (f"{what}: '{self.name}' {distance:.4g} m from the world origin, beyond the plausible "
                    f"{self.max_distance:.4g} m: a corrupt reading or wrong units")
        speed = _norm(reading.linear_velocity)
        if not speed <= self.max_speed:
            return (f"{what}: '{self.name}' moving at {speed:.4g} m/s, beyond the plausible {self.max_speed:.4g} m/s "
                    "(max_base_speed): a corrupt reading or wrong units")
        rate = _norm(reading.angular_velocity)
        if not rate <= self.max_rate:
            return (f"{what}: '{self.name}' turning at {rate:.4g} rad/s, beyond the plausible {self.max_rate:.4g} "
                    f"rad/s (max_base_rate, or a point {self.reach:.3g} m from its CoM moving faster than "
                    f"{self.max_speed:.4g} m/s): a corrupt reading or wrong units")
        return None


def _norm(vector) -> float:
    """Euclidean norm without overflow for finite entries (1e154 squared is inf in float64)."""
    v = np.asarray(vector, dtype=float).reshape(-1).tolist()
    return math.hypot(*v) if all(map(math.isfinite, v)) else math.inf
