"""What rviz shows of the controller's actuation: thruster forces and the base attitude error.

ROS-free geometry for the controller node's ``/freeflyer/actuation`` markers (the node only turns
it into visualization_msgs): an arrow per firing thruster, its plume: from the nozzle opposite to
the force it exerts on the base (outwards, where a thruster on a face of the base would otherwise
point into it), its length proportional to force / max_force; and the base attitude error, the
rotation vector taking the measured attitude to the reference one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from freeflyer_control.control.base_control import attitude_error
from freeflyer_control.control.references import BaseReference
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.state import base_rotation, rotation_from_xyzw

# A thruster below this fraction of its maximum force is drawn as off.
OFF_FRACTION = 1e-3


@dataclass(frozen=True)
class ThrusterArrow:
    """One thruster's plume, drawn in base_link (m): from ``start`` (the nozzle) to ``end``, opposite
    to the thruster's force on the base; ``fraction`` = force / max_force in [0, 1]."""

    name: str
    start: np.ndarray
    end: np.ndarray
    fraction: float


def thruster_arrows(ff: FreeFlyerModel, forces: np.ndarray, full_length: float) -> list[ThrusterArrow]:
    """The arrows of the thrusters that fire with ``forces`` (N, robot-config order); a thruster at
    its maximum force is ``full_length`` m long. An empty ``forces`` (no thruster command) is none."""
    forces = np.asarray(forces, dtype=float)
    arrows = []
    for thruster, force in zip(ff.thrusters, forces):
        fraction = float(np.clip(force / thruster.max_force, 0.0, 1.0)) if np.isfinite(force) else 0.0
        if fraction < OFF_FRACTION:
            continue
        start = np.asarray(thruster.position, dtype=float)
        direction = np.asarray(thruster.direction, dtype=float)
        arrows.append(ThrusterArrow(thruster.name, start, start - direction / np.linalg.norm(direction)
                                    * fraction * full_length, fraction))
    return arrows


def base_attitude_error(ff: FreeFlyerModel, q: np.ndarray, ref: BaseReference) -> np.ndarray:
    """Rotation vector (world axes, rad) taking the base attitude in ``q`` to the reference's:
    what the base pose loop drives to zero in the modes that command the attitude."""
    return attitude_error(rotation_from_xyzw(ref.orientation_xyzw), base_rotation(ff, q))
