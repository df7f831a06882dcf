"""Motion-capture frames: from the capture system's pose of a marker body to base_link in world.

Capture systems publish the pose of a *marker body* (the rigid body defined from the markers
glued on the robot) in their own frame, often with y up (OptiTrack Motive's default) and in
millimetres. The controller wants base_link in ``world`` (z up, the table's frame, metres). The
chain, with every piece in the testbed config's ``capture`` section:

    world <- capture   : ``axes`` (which capture axis lies along world x, y, z) then
                         ``world_from_capture`` (translation m, yaw rad about world z)
    capture <- body    : the sample
    body <- base_link  : ``body_axes`` (the marker body's axes, as capture axes: defaults to
                         ``axes``, since capture systems create bodies aligned with their frame),
                         then ``base_in_body`` (translation m and yaw rad of base_link, in the
                         relabelled body axes).

An axis convention is written as three signed capture axes, the one along world x, y and z:
``[x, -z, y]`` is a y-up system whose z axis points towards the viewer. ``z-up`` and ``y-up``
name the two common ones. A list that mirrors space (left-handed) is refused: no rigid motion
turns one frame into the other, so the convention must be wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from freeflyer_control.errors import ConfigError
from freeflyer_control.inputs.values import shown
from freeflyer_control.physics.state import rotation_from_xyzw, xyzw_from_rotation

AXIS_PRESETS = {"z-up": ("x", "y", "z"), "y-up": ("x", "-z", "y")}


def axes_matrix(spec: str | Sequence[str], where: str = "axes") -> np.ndarray:
    """The rotation A (world <- capture) of an axis convention: ``world_vector = A @ capture_vector``.

    Args:
        spec: a preset name (``z-up``, ``y-up``) or three signed capture axes, the ones along
            world x, y and z (e.g. ``[x, -z, y]``).
        where: the config key, for messages.

    Raises:
        ConfigError: unknown names, an axis used twice, or a left-handed (mirrored) mapping.
    """
    if isinstance(spec, str):
        if spec not in AXIS_PRESETS:
            raise ConfigError(f"{where}: unknown axis convention '{spec}'; use one of {sorted(AXIS_PRESETS)} "
                              "or three signed capture axes along world x, y, z, e.g. [x, -z, y]")
        spec = AXIS_PRESETS[spec]
    if not isinstance(spec, (list, tuple)):
        raise ConfigError(f"{where}: give a preset ({', '.join(sorted(AXIS_PRESETS))}) or three signed capture axes "
                          f"along world x, y, z, e.g. [x, -z, y]; got {shown(spec)}")
    entries = [str(s).strip().lower() for s in spec]
    if len(entries) != 3:
        raise ConfigError(f"{where}: give three signed capture axes (along world x, y, z), got {list(spec)}")
    A = np.zeros((3, 3))
    used = []
    for row, entry in enumerate(entries):
        sign = -1.0 if entry.startswith("-") else 1.0
        name = entry.lstrip("+-")
        if name not in ("x", "y", "z"):
            raise ConfigError(f"{where}: '{entry}' is not a capture axis; write x, y, z with an optional sign")
        used.append(name)
        A[row, "xyz".index(name)] = sign
    if len(set(used)) != 3:
        raise ConfigError(f"{where}: {entries} uses a capture axis twice; each of x, y, z must appear once")
    if np.linalg.det(A) < 0:
        flips = [[(e[1:] if e.startswith("-") else "-" + e) if i == k else e for i, e in enumerate(entries)]
                 for k in range(3)]
        raise ConfigError(
            f"{where}: {entries} is left-handed (a mirror image): no rotation turns one frame into the other, so "
            f"one axis has the wrong sign. {flips[0]}, {flips[1]} and {flips[2]} are right-handed: pick the one "
            "whose third entry is the capture axis pointing up")
    return A


def yaw_matrix(yaw: float) -> np.ndarray:
    """Rotation about z by ``yaw`` rad."""
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


@dataclass(frozen=True)
class CaptureTransform:
    """Capture-frame marker-body poses <-> base_link poses in world (see the module docstring).

    Attributes:
        axes: A_c, world <- capture axes.
        body_axes: A_b, relabelled body <- marker body axes.
        world_translation: capture origin in world, m. world_yaw: rad.
        base_translation: base_link origin in the relabelled body frame, m. base_yaw: rad.
        unit: metres per capture length unit (0.001 for millimetres).
    """

    axes: np.ndarray = field(default_factory=lambda: np.eye(3))
    body_axes: np.ndarray = field(default_factory=lambda: np.eye(3))
    world_translation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    world_yaw: float = 0.0
    base_translation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    base_yaw: float = 0.0
    unit: float = 1.0

    @property
    def _R_wc(self) -> np.ndarray:
        return yaw_matrix(self.world_yaw) @ self.axes

    def to_world(self, position, orientation_xyzw) -> tuple[np.ndarray, np.ndarray]:
        """base_link pose in world (position m, rotation matrix world <- base_link) from a
        marker-body pose in the capture frame (position in capture units, quaternion x-y-z-w)."""
        R_wc = self._R_wc
        p_wm = R_wc @ (np.asarray(position, float) * self.unit) + self.world_translation
        q = np.asarray(orientation_xyzw, float)
        R_wm = R_wc @ rotation_from_xyzw(q / np.linalg.norm(q)) @ self.body_axes.T
        return p_wm + R_wm @ self.base_translation, R_wm @ yaw_matrix(self.base_yaw)

    def from_world(self, position, rotation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inverse of :meth:`to_world`: the marker-body pose the capture system reports (position
        in capture units, quaternion x-y-z-w) for base_link at ``position`` (m, world) with
        ``rotation`` (world <- base_link)."""
        R_wc = self._R_wc
        R_wm = np.asarray(rotation, float) @ yaw_matrix(self.base_yaw).T
        p_wm = np.asarray(position, float) - R_wm @ self.base_translation
        p_c = R_wc.T @ (p_wm - self.world_translation) / self.unit
        return p_c, xyzw_from_rotation(R_wc.T @ R_wm @ self.body_axes)


def tilt(rotation: np.ndarray) -> float:
    """Angle, rad, between the z axis of ``rotation`` (world <- body) and world z: 0 for a base
    level on the table. A y-up capture read as z-up tilts it by pi/2 when only the capture axes
    are misread; when the marker body's axes are misread the same way (a body created aligned
    with the y-up frame), the tilt equals the yaw from the body's creation heading, and near that
    heading only the height (world z = -y) shows the mistake."""
    return float(np.arccos(np.clip(rotation[2, 2], -1.0, 1.0)))
