"""Robot config: what a URDF cannot say about a free-flyer.

A robot config is a small YAML file beside the URDF. It names the base type, the end-effector
frames, which URDF joints are reaction wheels, and the thrusters (URDF has no element for them).
Example (all vectors in the ``base_link`` frame, SI units)::

    urdf: planar_4link.urdf          # relative to this file; optional when a URDF is given
    base: planar                     # planar (x, y, yaw) or spatial (6-DOF)
    end_effectors: [ee_link]
    arms:                            # optional; default: one arm per end-effector
      arm: [joint1, joint2, joint3, joint4]
    ready_pose: {joint2: 0.6, joint3: 0.6}   # optional working pose, rad
    reaction_wheels:
      - joint: wheel_z_joint         # a revolute/continuous URDF joint on the base link
        max_torque: 0.05             # N m, magnitude
        max_speed: 600.0             # rad/s, magnitude
    thrusters:
      - name: t1
        position: [0.2, 0.2, 0.0]    # m, point of application in base_link
        direction: [-1.0, 0.0, 0.0]  # unit vector of the force the thruster exerts on the base
        max_force: 0.15              # N; a thruster pushes in [0, max_force]
    base_limits:                     # optional: bounds of ideal base actuation (base_actuation: ideal)
      max_force: 1.7                 # N, magnitude of the force on the base
      max_torque: 0.42               # N m, magnitude of the torque on the base (planar: |mz|)

Without ``base_limits`` the bounds are derived from the thrusters (see
:func:`freeflyer_control.physics.actuators.base_wrench_limits`).

This module only parses and checks the file on its own; checks against the URDF live in
:mod:`freeflyer_control.model.loader`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from freeflyer_control.errors import ConfigError
from freeflyer_control.inputs.mappings import mapping, refuse_unknown, value_number, value_text, vector
from freeflyer_control.inputs.values import ANGLE, shown
from freeflyer_control.inputs.yaml_files import load_yaml_file

BASE_TYPES = ("planar", "spatial")
ROBOT_CONFIG_KEYS = ("urdf", "base", "end_effectors", "arms", "reaction_wheels", "thrusters", "name",
                     "ready_pose", "root", "base_limits")
MAX_PATH_CHARS = 4096  # PATH_MAX on Linux


@dataclass(frozen=True)
class ReactionWheel:
    """A momentum-exchange device: a URDF joint on the base driven by an internal torque.

    Attributes:
        joint: name of the revolute or continuous URDF joint that spins the wheel.
        max_torque: torque limit about the wheel axis, N m (magnitude).
        max_speed: wheel speed limit relative to the base, rad/s (magnitude).
    """

    joint: str
    max_torque: float
    max_speed: float


@dataclass(frozen=True)
class Thruster:
    """A single-direction thruster fixed on the base.

    Attributes:
        name: unique name, used in messages and on the ``/thrusters/command`` array.
        position: point of application in the base_link frame, m (3-vector).
        direction: unit vector, base_link frame, of the force the thruster exerts on the base.
        max_force: largest force, N; the thruster produces a force in [0, max_force].
    """

    name: str
    position: np.ndarray
    direction: np.ndarray
    max_force: float


@dataclass(frozen=True)
class BaseLimits:
    """Bounds of an ideal base actuator: an external wrench on the base is scaled down (its
    direction kept) until ``|force| <= max_force`` (N) and ``|torque| <= max_torque`` (N m)."""

    max_force: float
    max_torque: float


@dataclass(frozen=True)
class RobotConfig:
    """What a URDF cannot say about a free-flyer (see the module docstring for the YAML form).

    Attributes:
        base: ``"planar"`` (x, y, yaw on an air-bearing table) or ``"spatial"`` (6-DOF).
        end_effectors: frame names (URDF links or joints) whose twist the GJM reports.
        arms: arm name -> ordered arm joint names; empty means "derive from end-effectors".
        reaction_wheels: the wheels, each a URDF joint on the base link.
        thrusters: the base thrusters.
        urdf: path of the URDF, if the config names one.
        name: robot name (file stem of the config, or the URDF's robot name).
        ready_pose: joint name -> angle (rad) of a well-conditioned working pose, away from
            singularities (the start of end-effector maneuvers); missing joints are 0.
        root: the link to float as the base (re-rooting, model/reroot.py); None: the URDF's.
        base_limits: bounds of ideal base actuation; None: derived from the thrusters.
    """

    base: str
    end_effectors: tuple[str, ...] = ()
    arms: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    reaction_wheels: tuple[ReactionWheel, ...] = ()
    thrusters: tuple[Thruster, ...] = ()
    urdf: Path | None = None
    name: str = ""
    ready_pose: Mapping[str, float] = field(default_factory=dict)
    root: str | None = None
    base_limits: BaseLimits | None = None

    @property
    def wheel_joints(self) -> tuple[str, ...]:
        return tuple(w.joint for w in self.reaction_wheels)


# Physical ranges of the actuator figures: far above any real device, so that a typo (a unit
# slip, an exponent too many) is refused instead of disabling the saturation it sets.
MAX_WHEEL_TORQUE = 1e4   # N m; the ISS's control moment gyroscopes give about 260 N m
MAX_WHEEL_SPEED = 1e4    # rad/s (95 000 rpm); reaction wheels turn at a few hundred rad/s
MAX_THRUST = 1e4         # N; attitude-control and cold-gas thrusters give mN to a few hundred N
MAX_BASE_WRENCH = 1e5    # N, N m: ten times the strongest thruster set
MAX_EXTENT = 100.0       # m; no free-flyer (nor testbed) is larger: a larger distance is a unit slip
_WHY_WHEEL_TORQUE = "no reaction wheel or control moment gyroscope gives more; the ISS's give about 260 N m"
_WHY_WHEEL_SPEED = "95 000 rpm; reaction wheels turn at a few hundred rad/s"
_WHY_THRUST = "no attitude-control thruster gives more; cold-gas thrusters give mN to a few hundred N"
_WHY_BASE_WRENCH = "beyond any thruster set of a free-flyer"
_WHY_EXTENT = "no free-flyer is larger than 100 m: a unit slip (mm for m?)"


def require_key(mapping: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in mapping:
        raise ConfigError(f"{where}: missing key '{key}'")
    return mapping[key]


def positive_number(value: Any, where: str, hi: float | None = None, why: str = "", unit: str = "") -> float:
    """A finite number > 0 (and <= ``hi``, for the reason ``why``)."""
    return value_number(value, where, lo=0.0, lo_open=True, hi=hi, unit=unit, why=why)


def vector3(value: Any, where: str, bound: float | None = None, unit: str = "", why: str = "") -> np.ndarray:
    """A list of 3 finite numbers (each within +-``bound``, for the reason ``why``)."""
    return vector(value, where, 3, bound=bound, unit=unit, why=why)


def _parse_wheel(entry: Any, index: int) -> ReactionWheel:
    where = f"reaction_wheels[{index}]"
    entry = mapping(entry, where, ("joint", "max_torque", "max_speed"))
    return ReactionWheel(
        joint=value_text(require_key(entry, "joint", where), f"{where}.joint", what="a URDF joint name"),
        max_torque=positive_number(require_key(entry, "max_torque", where), f"{where}.max_torque",
                                   MAX_WHEEL_TORQUE, _WHY_WHEEL_TORQUE, "N m"),
        max_speed=positive_number(require_key(entry, "max_speed", where), f"{where}.max_speed",
                                  MAX_WHEEL_SPEED, _WHY_WHEEL_SPEED, "rad/s"),
    )


def parse_thruster(entry: Any, index: int) -> Thruster:
    where = f"thrusters[{index}]"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where} must be a mapping with name, position, direction, max_force")
    refuse_unknown(entry, ("name", "position", "direction", "max_force"), where)
    name = value_text(entry["name"], f"{where}.name") if "name" in entry else f"thruster_{index}"
    where = f"thruster '{name}'"
    direction = vector3(require_key(entry, "direction", where), f"{where}.direction")
    norm = float(np.linalg.norm(direction))
    if norm == 0.0:
        raise ConfigError(
            f"{where}.direction is the zero vector; give the unit vector, in base_link axes, of "
            "the force the thruster exerts on the base"
        )
    if abs(norm - 1.0) > 1e-6:
        raise ConfigError(
            f"{where}.direction must be a unit vector (its norm is {norm:.6g}); "
            "divide it by its norm"
        )
    return Thruster(
        name=name,
        position=vector3(require_key(entry, "position", where), f"{where}.position", MAX_EXTENT, "m", _WHY_EXTENT),
        direction=direction / norm,
        max_force=positive_number(require_key(entry, "max_force", where), f"{where}.max_force", MAX_THRUST,
                                  _WHY_THRUST, "N"),
    )


def _parse_base_limits(entry: Any, where: str) -> BaseLimits:
    where = f"{where}: base_limits"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where} must be a mapping with max_force (N) and max_torque (N m), got {shown(entry)}")
    refuse_unknown(entry, ("max_force", "max_torque"), where)
    fix = ("give the largest force (N) and torque (N m) the ideal base actuator may apply, "
           "e.g. 'base_limits: {max_force: 2.0, max_torque: 0.5}'")
    values = []
    for key, unit in (("max_force", "N"), ("max_torque", "N m")):
        if key not in entry:
            raise ConfigError(f"{where}: missing key '{key}'; {fix}")
        try:
            values.append(positive_number(entry[key], f"{where}.{key}", MAX_BASE_WRENCH, _WHY_BASE_WRENCH, unit))
        except ConfigError as exc:
            raise ConfigError(f"{exc}; {fix}") from None
    return BaseLimits(*values)


def parse_robot_config(data: Mapping[str, Any], *, source: Path | None = None) -> RobotConfig:
    """Build a :class:`RobotConfig` from already-parsed YAML.

    Args:
        data: the YAML mapping.
        source: the file it came from; a relative ``urdf`` entry is resolved against its folder.

    Raises:
        ConfigError: naming the key at fault.
    """
    where = f"robot config '{source}'" if source is not None else "robot config"
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where} must be a YAML mapping (key: value lines), got {shown(data)}")
    refuse_unknown(data, ROBOT_CONFIG_KEYS, where)
    if "base" not in data:
        raise ConfigError(
            f"{where}: missing key 'base'; add 'base: planar' (air-bearing table: x, y, yaw) "
            "or 'base: spatial' (6-DOF)"
        )
    base = data["base"]
    if base not in BASE_TYPES:
        raise ConfigError(f"{where}: base must be one of {BASE_TYPES}, got {shown(base)}")

    ees = data.get("end_effectors") or []
    if isinstance(ees, str):
        ees = [ees]
    ees = [value_text(e, f"{where}: end_effectors[{i}]", what="a frame name")
           for i, e in enumerate(_list(ees, f"{where}: end_effectors"))]
    arms_raw = data.get("arms") or {}
    if not isinstance(arms_raw, Mapping):
        raise ConfigError(f"{where}: arms must map an arm name to a list of joint names")
    arms = {}
    for k, v in arms_raw.items():
        # A bare string would otherwise be split into one-letter "joints".
        if not isinstance(v, (list, tuple)) or not v:
            raise ConfigError(
                f"{where}: arm {shown(k)} must be a non-empty list of joint names, got {shown(v)}; "
                "write e.g. 'arm: [joint1, joint2]'"
            )
        arms[value_text(k, f"{where}: arms", what="an arm name")] = tuple(
            value_text(j, f"{where}: arms.{k}[{i}]", what="a joint name") for i, j in enumerate(v))

    wheels = tuple(_parse_wheel(e, i) for i, e in enumerate(_list(data.get("reaction_wheels") or [],
                                                                    f"{where}: reaction_wheels")))
    thrusters = tuple(parse_thruster(e, i) for i, e in enumerate(_list(data.get("thrusters") or [],
                                                                        f"{where}: thrusters")))
    names = [t.name for t in thrusters]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"{where}: thruster names must be unique; repeated: {dupes}")

    ready_raw = data.get("ready_pose") or {}
    if not isinstance(ready_raw, Mapping):
        raise ConfigError(f"{where}: ready_pose must map joint names to angles (rad)")
    ready = {}
    for joint, angle in ready_raw.items():
        name = value_text(joint, f"{where}: ready_pose", what="a joint name")
        ready[name] = value_number(angle, f"{where}: ready_pose.{name}", lo=ANGLE.lo, hi=ANGLE.hi, unit="rad",
                                   why="beyond a thousand radians is a typo, not a pose")

    base_limits = _parse_base_limits(data["base_limits"], where) if data.get("base_limits") is not None else None

    urdf = data.get("urdf")
    urdf_path = None
    if urdf:
        urdf_path = Path(value_text(urdf, f"{where}: urdf", MAX_PATH_CHARS, "a URDF file path"))
        if source is not None and not urdf_path.is_absolute():
            urdf_path = source.parent / urdf_path
    name = value_text(data["name"], f"{where}: name") if data.get("name") else \
        (source.stem if source is not None else "")
    return RobotConfig(
        base=base,
        end_effectors=tuple(ees),
        arms=arms,
        reaction_wheels=wheels,
        thrusters=thrusters,
        urdf=urdf_path,
        name=name,
        ready_pose=ready,
        root=_root(data.get("root"), where),
        base_limits=base_limits,
    )


def _root(value: Any, where: str) -> str | None:
    if value is None:
        return None
    return value_text(value, f"{where}: root", what="a link name")


def _list(value: Any, where: str) -> list:
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{where} must be a list, got {shown(value)}")
    return list(value)


def load_robot_config(path: str | Path) -> RobotConfig:
    """Read a robot config YAML file (see the module docstring for its form)."""
    path = Path(path)
    return parse_robot_config(load_yaml_file(path, "robot config"), source=path)
