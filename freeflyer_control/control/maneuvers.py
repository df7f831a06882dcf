"""Maneuvers: what the robot is asked to do, as references over time.

| name              | space | what                                                        |
|-------------------|-------|-------------------------------------------------------------|
| `wilde`           | joint | Wilde et al. (2018): one arm joint at a time, +0.1 rad/s for |
|                   |       | 10 s, rest 2 s, -0.1 rad/s for 20 s, rest 2 s, +0.1 rad/s for |
|                   |       | 10 s back to the start (44 s per joint); K_P = K_D = 1       |
| `ee-point`        | task  | each end-effector to a point 0.2 m away, minimum-jerk, 10 s  |
| `ee-circle`       | task  | each end-effector once around a 0.1 m circle in 20 s         |
| `station-keeping` | joint | arm and base hold their initial pose after a base kick       |

The base reference is always "hold the pose the base had at the start" (used only by modes
that command base DOFs). Task-space maneuvers keep the initial end-effector orientation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from freeflyer_control.control.references import BaseReference, JointReference, TaskReference
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.state import State, base_position, base_quaternion_xyzw, joint_positions

MANEUVERS = ("wilde", "ee-point", "ee-circle", "station-keeping")

# Wilde et al.'s rate profile for the active joint: (duration s, rate rad/s).
WILDE_PHASES = ((10.0, 0.1), (2.0, 0.0), (20.0, -0.1), (2.0, 0.0), (10.0, 0.1))
WILDE_PERIOD = sum(d for d, _ in WILDE_PHASES)


def _min_jerk(x: float) -> tuple[float, float, float]:
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
        pos, vel = self.q0.copy(), np.zeros(n)
        active = min(int(t // WILDE_PERIOD), n)
        if active < n:
            tau = t - active * WILDE_PERIOD
            angle, start = 0.0, 0.0
            for length, rate in WILDE_PHASES:
                r = rate * self.rate / 0.1
                if tau < start + length:
                    angle += r * (tau - start)
                    vel[active] = r
                    break
                angle += r * length
                start += length
            pos[active] += angle
        return JointReference(pos, vel, np.zeros(n))


@dataclass
class EEPoint(Maneuver):
    distance: float = 0.2
    move_time: float = 10.0

    def __post_init__(self) -> None:
        self.name, self.task_space, self.duration = "ee-point", True, self.move_time + 5.0

    def task_references(self, t: float) -> list[TaskReference]:
        s, ds, _ = _min_jerk(t / self.move_time)
        refs = []
        for i, (ee, pose) in enumerate(self.ee0.items()):
            # Back toward the base and sideways: inside the workspace of a stretched arm.
            direction = np.array([-1.0, 1.0 if i % 2 == 0 else -1.0, 0.0 if self.ff.base == "planar" else 0.5])
            offset = self.distance * direction / np.linalg.norm(direction)
            refs.append(TaskReference(
                ee, pose.translation + s * offset, pin.Quaternion(pose.rotation).coeffs().copy(),
                offset * ds / self.move_time, np.zeros(3)))
        return refs


@dataclass
class EECircle(Maneuver):
    radius: float = 0.1
    period: float = 20.0

    def __post_init__(self) -> None:
        self.name, self.task_space, self.duration = "ee-circle", True, self.period + 5.0

    def task_references(self, t: float) -> list[TaskReference]:
        s, ds, _ = _min_jerk(t / self.period)
        phi, dphi = 2 * np.pi * s, 2 * np.pi * ds / self.period
        refs = []
        for ee, pose in self.ee0.items():
            # Planar: the xy-plane; spatial: the yz-plane (across a forward-pointing arm).
            a, b = (np.array([1.0, 0, 0]), np.array([0, 1.0, 0])) if self.ff.base == "planar" else (
                np.array([0, 1.0, 0]), np.array([0, 0, 1.0]))
            center = pose.translation - self.radius * a
            p = center + self.radius * (np.cos(phi) * a + np.sin(phi) * b)
            v = self.radius * dphi * (-np.sin(phi) * a + np.cos(phi) * b)
            refs.append(TaskReference(ee, p, pin.Quaternion(pose.rotation).coeffs().copy(), v, np.zeros(3)))
        return refs


@dataclass
class StationKeeping(Maneuver):
    hold_time: float = 30.0

    def __post_init__(self) -> None:
        self.name, self.duration = "station-keeping", self.hold_time
        self.initial_base_twist = np.array([0.02, -0.01, 0.0, 0.0, 0.0, 0.02])


def make_maneuver(name: str) -> Maneuver:
    """A maneuver by name (see the module table)."""
    factories = {"wilde": Wilde, "ee-point": EEPoint, "ee-circle": EECircle,
                 "station-keeping": StationKeeping}
    if name not in factories:
        raise ValueError(f"unknown maneuver '{name}'; maneuvers: {list(MANEUVERS)}")
    return factories[name]()
