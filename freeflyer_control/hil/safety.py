"""Safety of the HIL path: latched trips, the limit checks, and the braking law.

Every trip latches: the bridge stops commanding the controller's efforts and holds its safe
reaction until an operator resets it (``TestbedBridge.reset``), which it refuses while the cause
is still there. Two reactions, chosen by what is still trustworthy:

============  =========================================================  =======================
reaction      trips                                                      commands
============  =========================================================  =======================
``off``       e-stop; stale, invalid (NaN, implausible) or jumping       zero joint and wheel
              capture or encoder data; a capture pose off the table      torques, valves shut
              (wrong axes); silent controller; joint or wheel over
              speed; joint past its range; a step of the clock; an
              internal fault of the bridge
``brake``     geofence (base heading for a table edge); base over speed  thrusters brake the base
                                                                         to rest; joints damped
============  =========================================================  =======================

``off`` is for faults that leave the state estimate in doubt (nothing computed from it can be
trusted; an air-bearing base with its valves shut drifts, which is the known outcome) and for
the joints: a joint running away is most often a wrong effort sign, which would turn any
damping the bridge commands into a push. The ``brake`` trips have a good estimate and base
motion to stop: on a frictionless table, cutting the thrusters would leave the base drifting
into the edge the geofence was meant to protect; the joints are damped meanwhile, since a
torque-free arm swings as the base decelerates (by then the joints have passed their own
checks, signs included).

The geofence is predictive: it trips when the base, moving towards an edge, could no longer stop
(with the thrusters' weakest braking acceleration, after a reaction delay) before its footprint
comes within ``margin`` of the edge. Moving away from an edge inside the margin never trips, so
a base stopped there can be driven back after a reset.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from freeflyer_control.control.allocation import ThrusterAllocator
from freeflyer_control.model.loader import FreeFlyerModel

from .config import Limits

OFF, BRAKE = "off", "brake"
REACTIONS = {
    "estop": OFF, "capture_stale": OFF, "capture_invalid": OFF, "capture_jump": OFF, "capture_frame": OFF,
    "encoders_stale": OFF, "encoders_invalid": OFF, "commands_stale": OFF,
    "joint_speed": OFF, "joint_range": OFF, "wheel_speed": OFF, "geofence": BRAKE, "base_speed": BRAKE,
    "clock_step": OFF, "fault": OFF, "law_fault": OFF,
}
# Below these the braking law stops pushing: estimate noise must not fire valves forever.
BRAKE_DEADBAND_SPEED = 0.01    # m/s
BRAKE_DEADBAND_RATE = 0.02     # rad/s
BRAKE_GAIN = 4.0               # 1/s: velocity decays with a 0.25 s time constant until saturation


@dataclass(frozen=True)
class Trip:
    """A safety trip: when (s), what (a key of REACTIONS), why (a sentence), and the reaction."""

    time: float
    kind: str
    reason: str

    @property
    def reaction(self) -> str:
        return REACTIONS[self.kind]


@dataclass
class SafetyLatch:
    """The first trip latches; later ones are recorded too, each kind once until the latch is
    cleared (a cause that persists is one trip, not one per tick)."""

    active: Trip | None = None
    history: list[Trip] = field(default_factory=list)
    _kinds: set[str] = field(default_factory=set)

    @property
    def tripped(self) -> bool:
        return self.active is not None

    def trip(self, time: float, kind: str, reason: str) -> Trip | None:
        """Latch (or record) a trip; returns it when it is new (a kind not yet recorded since the
        last clear)."""
        if kind not in REACTIONS:
            raise ValueError(f"unknown trip kind '{kind}'; kinds: {sorted(REACTIONS)}")
        if kind in self._kinds:
            return None
        self._kinds.add(kind)
        trip = Trip(time, kind, reason)
        self.history.append(trip)
        if self.active is None or (trip.reaction == OFF and self.active.reaction == BRAKE):
            self.active = trip  # "off" overrides "brake": braking needs the data an "off" trip distrusts
        return trip

    def clear(self) -> None:
        self.active = None
        self._kinds.clear()


@dataclass(frozen=True)
class MotionLimits:
    """The limit checks of one robot on one table (see the module docstring).

    Args:
        limits: the testbed config's limits.
        brake_acceleration: m/s^2, the weakest deceleration the thrusters give the whole robot
            in any horizontal direction (0 without thrusters: the geofence then only trips at
            the margin itself).
        reaction_time: s, from the trip to full braking (control periods, PWM, valves).
    """

    limits: Limits
    brake_acceleration: float
    reaction_time: float

    def stopping_distance(self, speed: float) -> float:
        """m, travelled at ``speed`` (m/s) before the base is at rest."""
        if speed <= 0.0:
            return 0.0
        brake = speed * speed / (2.0 * self.brake_acceleration) if self.brake_acceleration > 0 else 0.0
        return speed * self.reaction_time + brake

    def edge_clearances(self, position: np.ndarray) -> np.ndarray:
        """Distance, m, from the base footprint to the -x, +x, -y, +y table edges (negative: over)."""
        x0, x1, y0, y1 = self.limits.table
        r = self.limits.base_radius
        x, y = position[0], position[1]
        return np.array([x - r - x0, x1 - x - r, y - r - y0, y1 - y - r])

    def geofence(self, position: np.ndarray, velocity: np.ndarray) -> str | None:
        """Why the base must stop (position m, velocity m/s, world), or None."""
        clearance = self.edge_clearances(position)
        outward = np.array([-velocity[0], velocity[0], -velocity[1], velocity[1]])
        names = ("-x", "+x", "-y", "+y")
        for i in range(4):
            if clearance[i] < 0.0:
                return (f"geofence: base footprint {-clearance[i]:.3f} m over the {names[i]} table edge "
                        f"(base at x={position[0]:.3f}, y={position[1]:.3f} m)")
            stop = self.stopping_distance(outward[i])
            if outward[i] > 0.0 and clearance[i] - stop < self.limits.margin:
                return (f"geofence: heading for the {names[i]} table edge at {outward[i]:.3f} m/s, "
                        f"{clearance[i]:.3f} m of clearance, needs {stop:.3f} m to stop "
                        f"(margin {self.limits.margin} m)")
        return None

    def motion(self, linear: np.ndarray, angular: np.ndarray, q_arm: np.ndarray, v_arm: np.ndarray,
               v_wheels: np.ndarray, arm_names) -> tuple[str, str] | None:
        """(kind, reason) of a speed or joint-range violation, or None. Base velocities in world
        (m/s, rad/s), arm joint angles (rad) and rates (rad/s), wheel rates (rad/s)."""
        lim = self.limits
        speed = float(np.hypot(linear[0], linear[1]))
        if speed > lim.base_speed:
            return "base_speed", f"base speed {speed:.3f} m/s over the limit {lim.base_speed} m/s"
        rate = float(np.linalg.norm(angular))
        if rate > lim.base_rate:
            return "base_speed", f"base rate {rate:.3f} rad/s over the limit {lim.base_rate} rad/s"
        fast = np.flatnonzero(np.abs(v_arm) > lim.joint_speed)
        if fast.size:
            i = fast[0]
            return "joint_speed", (f"joint {arm_names[i]} at {v_arm[i]:.3f} rad/s over the limit "
                                   f"{lim.joint_speed[i]:.3f} rad/s")
        # Past a range limit only motion further out trips: a joint there can be driven back.
        out = np.flatnonzero(((q_arm < lim.joint_lower) & (v_arm <= 0)) | ((q_arm > lim.joint_upper) & (v_arm >= 0)))
        if out.size:
            i = out[0]
            return "joint_range", (f"joint {arm_names[i]} at {q_arm[i]:.3f} rad, outside "
                                   f"[{lim.joint_lower[i]:.3f}, {lim.joint_upper[i]:.3f}] rad and not moving back")
        wheels = np.flatnonzero(np.abs(v_wheels) > lim.wheel_speed)
        if wheels.size:
            i = wheels[0]
            return "wheel_speed", f"wheel {i} at {v_wheels[i]:.1f} rad/s over {lim.wheel_speed[i]:.1f} rad/s"
        return None


def brake_acceleration(ff: FreeFlyerModel) -> float:
    """m/s^2: the largest pure force (no torque) the thrusters can make in their weakest
    horizontal direction (directions every 15 degrees in base axes), over the robot's mass;
    0 without thrusters. Cached per thruster layout and mass (720 allocations: ~30 ms)."""
    if not ff.thrusters:
        return 0.0
    key = (ff.base, ff.total_mass, tuple((*t.position, *t.direction, t.max_force) for t in ff.thrusters))
    if key not in _BRAKE_ACCELERATIONS:
        _BRAKE_ACCELERATIONS[key] = _brake_acceleration(ff)
    return _BRAKE_ACCELERATIONS[key]


_BRAKE_ACCELERATIONS: dict[tuple, float] = {}


def _brake_acceleration(ff: FreeFlyerModel) -> float:
    allocator = ThrusterAllocator(ff)
    weakest = np.inf
    for angle in np.radians(np.arange(0.0, 360.0, 15.0)):
        u = np.zeros(ff.nb)
        u[:2] = np.cos(angle), np.sin(angle)
        lo, hi = 0.0, float(ff.thruster_max_forces.sum())
        for _ in range(30):  # bisection on the achievable magnitude, to ~1e-9 of the range
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if allocator.allocate(mid * u).saturated else (mid, hi)
        weakest = min(weakest, lo)
    return weakest / ff.total_mass
