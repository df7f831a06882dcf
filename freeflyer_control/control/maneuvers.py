"""Maneuvers: what the robot is asked to do, as references over time.

| name              | space | what                                                        |
|-------------------|-------|-------------------------------------------------------------|
| `wilde`           | joint | Wilde et al. (2018): one arm joint at a time, +0.1 rad/s for |
|                   |       | 10 s, rest 2 s, -0.1 rad/s for 20 s, rest 2 s, +0.1 rad/s for |
|                   |       | 10 s back to the start (44 s per joint); K_P = K_D = 1       |
| `ee-point`        | task  | each end-effector to a point 0.2 m away, minimum-jerk, 10 s  |
| `ee-circle`       | task  | each end-effector once around a 0.1 m circle in 20 s         |
| `station-keeping` | joint | arm and base hold their initial pose after a base kick       |
| `ee-contact`      | task  | the end-effector reaches a wall 5 cm ahead (3 s), presses it |
|                   |       | with a force ramped to 1 N (1 s) and holds it (6 s); needs   |
|                   |       | the impedance controller (force along the wall normal)       |

The base reference is always "hold the pose the base had at the start" (used only by modes
that command base DOFs). Task-space maneuvers keep the initial end-effector orientation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from freeflyer_control.control.references import BaseReference, JointReference, TaskReference
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.state import (
    State,
    base_position,
    base_quaternion_xyzw,
    joint_positions,
    rotation_from_xyzw,
)

MANEUVERS = ("wilde", "ee-point", "ee-circle", "station-keeping", "ee-contact")

# Wilde et al.'s rate profile for the active joint: (duration s, rate rad/s).
WILDE_PHASES = ((10.0, 0.1), (2.0, 0.0), (20.0, -0.1), (2.0, 0.0), (10.0, 0.1))
WILDE_PERIOD = sum(d for d, _ in WILDE_PHASES)


def min_jerk(x: float) -> tuple[float, float, float]:
    """s, ds/dx, d2s/dx2 of the minimum-jerk (quintic) ramp from 0 to 1 on x in [0, 1]."""
    x = min(max(x, 0.0), 1.0)
    return (10 * x**3 - 15 * x**4 + 6 * x**5,
            30 * x**2 - 60 * x**3 + 30 * x**4,
            60 * x - 180 * x**2 + 120 * x**3)


@dataclass
class Maneuver:
    """Base class: holds the initial pose and answers reference queries by time (s)."""

    name: str = ""
    duration: float = 0.0
    task_space: bool = False
    # Initial base twist (world, [v; w]) the simulation starts with, e.g. a disturbance.
    initial_base_twist: np.ndarray = field(default_factory=lambda: np.zeros(6))
    # Its task references carry a contact force (TaskReference.force_axis): impedance only.
    needs_force_control: bool = False

    def start(self, ff: FreeFlyerModel, state: State) -> None:
        data = ff.create_data()
        self.ff = ff
        self.q0 = joint_positions(ff, state.q)[ff.arm_v_indices - ff.nb]
        self.base0 = BaseReference.hold(base_position(ff, state.q), base_quaternion_xyzw(ff, state.q))
        pin.framesForwardKinematics(ff.model, data, state.q)
        self.ee0 = {ee: data.oMf[ff.frame_id(ee)].copy() for ee in ff.end_effectors}

    def joint_reference(self, t: float) -> JointReference:
        return JointReference.hold(self.q0)

    def task_references(self, t: float) -> list[TaskReference]:
        return []

    def base_reference(self, t: float) -> BaseReference:
        return self.base0


@dataclass
class Wilde(Maneuver):
    rate: float = 0.1

    def __post_init__(self) -> None:
        self.name = "wilde"

    def start(self, ff: FreeFlyerModel, state: State) -> None:
        super().start(ff, state)
        self.duration = WILDE_PERIOD * len(ff.arm_joint_names) + 5.0  # + 5 s to settle

    def joint_reference(self, t: float) -> JointReference:
        n = self.q0.size
        pos, vel = np.empty(n), np.empty(n)
        wilde_profile(t, self.q0, self.rate, _WILDE_TABLE, WILDE_PERIOD, pos, vel)
        return JointReference(pos, vel, np.zeros(n))


_WILDE_TABLE = np.array(WILDE_PHASES, dtype=float)


def wilde_profile(t, q0, rate, phases, period, pos, vel) -> None:
    """Wilde et al.'s joint reference at time t (s), written into ``pos`` (rad) and ``vel``
    (rad/s): joint k moves during [k period, (k+1) period) through the (duration, rate) rows of
    ``phases``, scaled to a peak ``rate``; the others hold ``q0``.

    Plain loops over scalars on purpose: the compiled simulation engine compiles this same
    function (numba), so the reference has one definition.
    """
    n = q0.shape[0]
    for k in range(n):
        pos[k] = q0[k]
        vel[k] = 0.0
    active = min(int(t // period), n)
    if active < n:
        tau = t - active * period
        angle, start = 0.0, 0.0
        for j in range(phases.shape[0]):
            length = phases[j, 0]
            r = phases[j, 1] * rate / 0.1
            if tau < start + length:
                angle += r * (tau - start)
                vel[active] = r
                break
            angle += r * length
            start += length
        pos[active] += angle


@dataclass
class EEPoint(Maneuver):
    distance: float = 0.2
    move_time: float = 10.0

    def __post_init__(self) -> None:
        self.name, self.task_space, self.duration = "ee-point", True, self.move_time + 5.0

    def start(self, ff: FreeFlyerModel, state: State) -> None:
        super().start(ff, state)
        # Per end-effector, what does not change over the move (the tick asks every period):
        # start position and offset (m, world), stacked in end-effector order; attitudes xyzw.
        starts, offsets = [], []
        for i, pose in enumerate(self.ee0.values()):
            # Back toward the base and sideways: inside the workspace of a stretched arm.
            direction = np.array([-1.0, 1.0 if i % 2 == 0 else -1.0, 0.0 if ff.base == "planar" else 0.5])
            starts.append(pose.translation.copy())
            offsets.append(self.distance * direction / np.linalg.norm(direction))
        self.starts, self.offsets = _stacked(starts), _stacked(offsets)
        self.attitudes = _start_attitudes(self.ee0)

    def task_references(self, t: float) -> list[TaskReference]:
        refs = []
        for e, ee in enumerate(self.ee0):
            p, v = np.empty(3), np.empty(3)
            ramp_point(t, self.move_time, self.starts[e], self.offsets[e], p, v)
            refs.append(TaskReference(ee, p, self.attitudes[e].copy(), v, np.zeros(3)))
        return refs


def ramp_point(t, move_time, start, offset, pos, vel) -> None:
    """The ee-point target at time t (s): ``pos`` = start + s offset (m, world) and ``vel`` its
    rate (m/s), s the minimum-jerk ramp over ``move_time`` s.

    Plain loops over scalars on purpose, like :func:`wilde_profile`: the compiled simulation
    engine compiles this same function.
    """
    s, ds, _ = min_jerk(t / move_time)
    rate = ds / move_time
    for a in range(3):
        pos[a] = start[a] + s * offset[a]
        vel[a] = offset[a] * rate


@dataclass
class EECircle(Maneuver):
    radius: float = 0.1
    period: float = 20.0

    def __post_init__(self) -> None:
        self.name, self.task_space, self.duration = "ee-circle", True, self.period + 5.0

    def start(self, ff: FreeFlyerModel, state: State) -> None:
        super().start(ff, state)
        # Planar: the xy-plane; spatial: the yz-plane (across a forward-pointing arm). The
        # circle starts at the end-effector, its centre ``radius`` back along the first axis.
        a, b = (np.array([1.0, 0, 0]), np.array([0, 1.0, 0])) if ff.base == "planar" else (
            np.array([0, 1.0, 0]), np.array([0, 0, 1.0]))
        self.starts = _stacked([pose.translation.copy() for pose in self.ee0.values()])
        self.axes = np.ascontiguousarray(np.stack([a, b]))
        self.attitudes = _start_attitudes(self.ee0)

    def task_references(self, t: float) -> list[TaskReference]:
        refs = []
        for e, ee in enumerate(self.ee0):
            p, v = np.empty(3), np.empty(3)
            circle_point(t, self.period, self.radius, self.starts[e], self.axes, p, v)
            refs.append(TaskReference(ee, p, self.attitudes[e].copy(), v, np.zeros(3)))
        return refs


def circle_point(t, period, radius, start, axes, pos, vel) -> None:
    """The ee-circle target at time t (s): once around the circle of ``radius`` m in the plane
    of the unit ``axes`` (2, 3) (world) through ``start`` (m, world), centre ``radius`` back
    along axes[0], the angle on a minimum-jerk ramp over ``period`` s; ``pos`` (m) and ``vel``
    (m/s), world.

    Plain loops over scalars on purpose, like :func:`wilde_profile`: the compiled simulation
    engine compiles this same function.
    """
    s, ds, _ = min_jerk(t / period)
    phi, dphi = 2 * math.pi * s, 2 * math.pi * ds / period
    c, sn = math.cos(phi), math.sin(phi)
    for k in range(3):
        a, b = axes[0, k], axes[1, k]
        center = start[k] - radius * a
        pos[k] = center + radius * (c * a + sn * b)
        vel[k] = radius * dphi * (-sn * a + c * b)


def _stacked(rows: list[np.ndarray]) -> np.ndarray:
    """(n, 3) C-ordered float array of n 3-vectors ((0, 3) for none)."""
    return np.ascontiguousarray(np.reshape(rows, (len(rows), 3)), dtype=float)


def _start_attitudes(ee0: dict) -> np.ndarray:
    """(n, 4): each end-effector's start attitude, quaternion xyzw (the target attitude)."""
    return np.reshape([pin.Quaternion(pose.rotation).coeffs() for pose in ee0.values()], (len(ee0), 4))


@dataclass
class EEContact(Maneuver):
    """Press the first end-effector against a wall (see the module table).

    The wall faces the end-effector ``gap`` m ahead of it, across the horizontal direction
    from the base_link origin to the end-effector at the start (the way a stretched arm
    points). After ``start`` the wall is ``wall_point`` (world, m) with ``wall_normal`` (world,
    out of the wall, toward the robot): the simulation puts it in the plant.

    Phases: approach (the target moves to the wall surface, minimum-jerk, ``approach_time`` s);
    press (along the normal the end-effector pushes with a force ramped, minimum-jerk, to
    ``force_setpoint`` N over ``ramp_time`` s, the other axes hold the point of the wall it
    touched); hold (``hold_time`` s).
    """

    gap: float = 0.05
    force_setpoint: float = 1.0
    approach_time: float = 3.0
    ramp_time: float = 1.0
    hold_time: float = 6.0
    needs_force_control: bool = True

    def __post_init__(self) -> None:
        self.name, self.task_space = "ee-contact", True
        self.duration = self.approach_time + self.ramp_time + self.hold_time

    def start(self, ff: FreeFlyerModel, state: State) -> None:
        super().start(ff, state)
        self.frame = ff.end_effectors[0]
        pose = self.ee0[self.frame]
        ahead = pose.translation - base_position(ff, state.q)
        ahead[2] = 0.0
        if np.linalg.norm(ahead) < 1e-6:
            ahead = np.array([1.0, 0.0, 0.0])
        ahead /= np.linalg.norm(ahead)
        self.wall_point = pose.translation + self.gap * ahead
        self.wall_normal = -ahead

    def force_reference(self, t: float) -> float:
        """The contact force setpoint at time t, N (0 before the press)."""
        if t < self.approach_time:
            return 0.0
        return self.force_setpoint * min_jerk((t - self.approach_time) / self.ramp_time)[0]

    def task_references(self, t: float) -> list[TaskReference]:
        pose = self.ee0[self.frame]
        quat = pin.Quaternion(pose.rotation).coeffs().copy()
        if t < self.approach_time:
            s, ds, _ = min_jerk(t / self.approach_time)
            offset = self.wall_point - pose.translation
            return [TaskReference(self.frame, pose.translation + s * offset, quat,
                                  offset * ds / self.approach_time, np.zeros(3))]
        return [TaskReference(self.frame, self.wall_point.copy(), quat, np.zeros(3), np.zeros(3),
                              force_axis=-self.wall_normal, force=self.force_reference(t))]


@dataclass
class StationKeeping(Maneuver):
    hold_time: float = 30.0

    def __post_init__(self) -> None:
        self.name, self.duration = "station-keeping", self.hold_time
        self.initial_base_twist = np.array([0.02, -0.01, 0.0, 0.0, 0.0, 0.02])


@dataclass
class BaseGoto(Maneuver):
    """Translate the base by ``offset`` (world axes, m) in ``move_time`` s along a minimum-jerk
    ramp, holding its attitude and the arm; then hold. Needs a mode that commands translation."""

    offset: tuple[float, float, float] = (0.3, 0.0, 0.0)
    move_time: float = 10.0

    def __post_init__(self) -> None:
        self.name, self.duration = "base-goto", self.move_time + 5.0

    def base_reference(self, t: float) -> BaseReference:
        s, ds, _ = min_jerk(t / self.move_time)
        offset = np.asarray(self.offset, dtype=float)
        moving = 0.0 <= t <= self.move_time
        return BaseReference(self.base0.position + s * offset, self.base0.orientation_xyzw,
                             offset * (ds / self.move_time if moving else 0.0), np.zeros(3))


def make_maneuver(name: str) -> Maneuver:
    """A maneuver by name (see the module table)."""
    factories = {"wilde": Wilde, "ee-point": EEPoint, "ee-circle": EECircle,
                 "station-keeping": StationKeeping, "ee-contact": EEContact}
    if name not in factories:
        raise ValueError(f"unknown maneuver '{name}'; maneuvers: {list(MANEUVERS)}")
    return factories[name]()


class ExternalReferences(Maneuver):
    """References that arrive from outside (ROS topics, a testbed GUI) instead of a script.

    * joint trajectories: (time s, positions, velocities) points, in arm-joint order, times on
      the controller's clock; interpolated with cubic Hermite segments, held after the last;
    * end-effector targets: a pose per frame (held until replaced or cleared);
    * end-effector twist commands: the frame's target moves with the commanded twist and stops
      when the command is older than ``twist_timeout`` seconds.

    While any end-effector reference is active the task-space controllers are used; otherwise the
    arm follows the joint trajectory (or holds its start pose).
    """

    def __init__(self, twist_timeout: float = 0.5):
        super().__init__(name="external", duration=float("inf"), task_space=True)
        self.twist_timeout = float(twist_timeout)
        self._trajectory: list[tuple[float, np.ndarray, np.ndarray]] = []
        self._targets: dict[str, TaskReference] = {}
        self._twists: dict[str, tuple[float, np.ndarray, np.ndarray]] = {}

    def start(self, ff: FreeFlyerModel, state: State) -> None:
        super().start(ff, state)
        self._hold = self.q0.copy()

    # --- inputs ---------------------------------------------------------------------------
    def set_joint_trajectory(self, points: list[tuple[float, np.ndarray, np.ndarray]]) -> None:
        """Points (t, positions, velocities) in arm-joint order with increasing t."""
        times = [p[0] for p in points]
        if not points or any(b <= a for a, b in zip(times, times[1:])):
            raise ValueError("a joint trajectory needs at least one point and increasing times")
        self._trajectory = [(float(t), np.asarray(q, float), np.asarray(v, float)) for t, q, v in points]
        self._targets.clear()
        self._twists.clear()

    def set_ee_target(self, frame: str, position: np.ndarray, orientation_xyzw: np.ndarray | None) -> None:
        """Hold ``frame`` at a pose in world (orientation None: position only)."""
        if frame not in self.ee0:
            raise ValueError(f"unknown end-effector '{frame}'; end-effectors: {list(self.ee0)}")
        self._twists.pop(frame, None)
        self._targets[frame] = TaskReference(frame, np.asarray(position, float).copy(),
                                             None if orientation_xyzw is None else np.asarray(orientation_xyzw, float),
                                             np.zeros(3), np.zeros(3))

    def set_ee_twist(self, frame: str, t: float, linear: np.ndarray, angular: np.ndarray) -> None:
        """Move ``frame``'s target with a twist (world axes) from time ``t`` on."""
        if frame not in self.ee0:
            raise ValueError(f"unknown end-effector '{frame}'; end-effectors: {list(self.ee0)}")
        current = self._targets.get(frame)
        if current is None:
            pose = self.ee0[frame]
            current = TaskReference(frame, pose.translation.copy(), pin.Quaternion(pose.rotation).coeffs().copy(),
                                    np.zeros(3), np.zeros(3))
        self._targets[frame] = self._advance(current, t)
        self._twists[frame] = (float(t), np.asarray(linear, float), np.asarray(angular, float))

    def clear_tasks(self, q_hold: np.ndarray) -> None:
        """Drop every end-effector reference and hold the arm at ``q_hold``."""
        self._targets.clear()
        self._twists.clear()
        self._trajectory = []
        self._hold = np.asarray(q_hold, float).copy()

    # --- references -------------------------------------------------------------------------
    def _advance(self, ref: TaskReference, t: float) -> TaskReference:
        """The target of a twist-driven frame at time t (position integrated, attitude too)."""
        twist = self._twists.get(ref.frame)
        if twist is None:
            return ref
        t0, v, w = twist
        dt = max(0.0, min(t, t0 + self.twist_timeout) - t0)
        moving = t - t0 <= self.twist_timeout
        quat = ref.orientation_xyzw
        if quat is not None and np.any(w):
            R = rotation_from_xyzw(quat)
            quat = pin.Quaternion(pin.exp3(w * dt) @ R).coeffs().copy()
        return TaskReference(ref.frame, ref.position + v * dt, quat,
                             v if moving else np.zeros(3), w if moving else np.zeros(3))

    def task_references(self, t: float) -> list[TaskReference]:
        return [self._advance(ref, t) for ref in self._targets.values()]

    def joint_reference(self, t: float) -> JointReference:
        if not self._trajectory:
            return JointReference.hold(self._hold)
        pts = self._trajectory
        if t <= pts[0][0]:
            return JointReference.hold(pts[0][1])
        if t >= pts[-1][0]:
            return JointReference(pts[-1][1].copy(), np.zeros_like(pts[-1][1]), np.zeros_like(pts[-1][1]))
        k = next(i for i in range(len(pts) - 1) if pts[i + 1][0] > t)
        (t0, q0, v0), (t1, q1, v1) = pts[k], pts[k + 1]
        h = t1 - t0
        x = (t - t0) / h
        # Cubic Hermite basis and its derivatives (position and velocity continuous).
        h00, h10, h01, h11 = 2 * x**3 - 3 * x**2 + 1, x**3 - 2 * x**2 + x, -2 * x**3 + 3 * x**2, x**3 - x**2
        d00, d10, d01, d11 = 6 * x**2 - 6 * x, 3 * x**2 - 4 * x + 1, -6 * x**2 + 6 * x, 3 * x**2 - 2 * x
        a00, a10, a01, a11 = 12 * x - 6, 6 * x - 4, -12 * x + 6, 6 * x - 2
        q = h00 * q0 + h10 * h * v0 + h01 * q1 + h11 * h * v1
        v = (d00 * q0 + d10 * h * v0 + d01 * q1 + d11 * h * v1) / h
        a = (a00 * q0 + a10 * h * v0 + a01 * q1 + a11 * h * v1) / h**2
        return JointReference(q, v, a)
