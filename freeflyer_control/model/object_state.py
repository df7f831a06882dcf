"""Where a free object starts and how it moves: the ``initial_state`` of an object config.

A target to capture is given with its motion, in the world or relative to the servicer::

    initial_state:
      frame: servicer                  # world, or servicer: the robot's base_link at its start pose
      position: [1.7, 0.1, -0.6]       # m, the object frame's origin (its CoM), in frame
      rpy: [0.2, -0.15, 0.3]           # rad, the object frame's orientation in frame (roll, pitch, yaw)
      linear_velocity: [0, 0, 0.005]   # m/s, of the CoM, frame axes
      body_angular_velocity: [0.021, 0.035, 0.056]   # rad/s, in the object's own axes
      # or angular_velocity: [...]     # rad/s, frame axes (give one of the two)

Both angular forms describe the same physics; the body form says "spun about this axis of the
target" (a non-principal one nutates: physics.free_body), the frame form "turning about this
axis of the scene". Omitted entries are zero. A planar object (base: planar) moves in the plane:
position z, roll, pitch, linear z and angular x, y must be zero.

Velocities relative to the servicer are those seen from its base_link at its start, where it is
at rest: the same vectors as world velocities expressed in base_link axes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pinocchio as pin

from freeflyer_control.errors import ConfigError
from freeflyer_control.inputs.mappings import section
from freeflyer_control.model.config import vector3

FRAMES = ("world", "servicer")
KEYS = {"frame", "position", "rpy", "linear_velocity", "angular_velocity", "body_angular_velocity"}
# Beyond these a value is a unit slip or a typo (deg/s for rad/s, mm for m), not a target: a
# kilometre from the scene, 10 m/s of drift, 10 rad/s of tumble.
MAX_DISTANCE_M, MAX_SPEED, MAX_SPIN = 1e3, 10.0, 10.0


@dataclass(frozen=True)
class InitialState:
    """An object's start (see the module docstring).

    Attributes:
        frame: ``"world"`` or ``"servicer"``.
        pose: the object frame in ``frame``.
        linear_velocity: of the CoM, ``frame`` axes (m/s).
        angular_velocity: ``frame`` axes (rad/s) (body rates already turned into them).
    """

    frame: str
    pose: pin.SE3
    linear_velocity: np.ndarray
    angular_velocity: np.ndarray

    def in_world(self, servicer: pin.SE3) -> tuple[pin.SE3, np.ndarray, np.ndarray]:
        """(pose, CoM velocity, angular velocity) in world, the servicer's base_link at
        ``servicer`` (world) when ``frame`` is ``servicer``."""
        if self.frame == "world":
            return self.pose, self.linear_velocity.copy(), self.angular_velocity.copy()
        R = servicer.rotation
        return servicer * self.pose, R @ self.linear_velocity, R @ self.angular_velocity

    def with_spin(self, angular_velocity: np.ndarray) -> "InitialState":
        """The same start with another angular velocity (``frame`` axes, rad/s): a dispersion."""
        return InitialState(self.frame, self.pose, self.linear_velocity, np.asarray(angular_velocity, float))


def _bounded(value: Any, where: str, limit: float, unit: str) -> np.ndarray:
    v = vector3(value, where)
    if np.abs(v).max() > limit:
        raise ConfigError(f"{where} must stay within +-{limit:g} {unit} per axis, got {v.tolist()}; "
                          "check the units")
    return v


def parse_initial_state(raw: dict, key: str, where: str, base: str) -> InitialState | None:
    """``raw[key]`` (an object config's ``initial_state``) checked, or None when absent.

    Raises:
        ConfigError: one line naming the entry and what it accepts.
    """
    entry = section(raw, key, KEYS, where, required=False)
    if not entry:
        return None
    path = f"{where}.{key}" if where else key
    frame = entry.get("frame", "world")
    if frame not in FRAMES:
        raise ConfigError(f"{path}.frame must be one of {list(FRAMES)}, got {frame!r}")
    p = _bounded(entry.get("position", [0, 0, 0]), f"{path}.position", MAX_DISTANCE_M, "m")
    rpy = _bounded(entry.get("rpy", [0, 0, 0]), f"{path}.rpy", 2 * np.pi, "rad")
    v = _bounded(entry.get("linear_velocity", [0, 0, 0]), f"{path}.linear_velocity", MAX_SPEED, "m/s")
    if "angular_velocity" in entry and "body_angular_velocity" in entry:
        raise ConfigError(f"{path}: give angular_velocity ({frame} axes) or body_angular_velocity (the object's "
                          "axes), not both")
    R = pin.rpy.rpyToMatrix(*rpy)
    if "body_angular_velocity" in entry:
        w = R @ _bounded(entry["body_angular_velocity"], f"{path}.body_angular_velocity", MAX_SPIN, "rad/s")
    else:
        w = _bounded(entry.get("angular_velocity", [0, 0, 0]), f"{path}.angular_velocity", MAX_SPIN, "rad/s")
    if base == "planar":
        out = {"position z": p[2], "roll": rpy[0], "pitch": rpy[1], "linear_velocity z": v[2],
               "angular velocity x": w[0], "angular velocity y": w[1]}
        off = [name for name, x in out.items() if abs(x) > 1e-12]
        if off:
            raise ConfigError(f"{path}: a planar object moves in the plane; {', '.join(off)} must be 0")
    return InitialState(frame, pin.SE3(R, p), v, w)
