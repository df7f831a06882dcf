"""The testbed config: how one lab's air-bearing testbed talks, checked before anything moves.

One YAML file describes the hardware interface of a testbed (the bridge speaks it, the emulator
imitates it). Example, all keys (``config/testbeds/planar_4link.yaml`` is a complete one)::

    robot: planar_4link              # bundled robot name or robot config .yaml (relative: to this file)
    rate: 250.0                      # Hz, the bridge's control rate
    command_timeout: 0.012           # s without controller commands -> trip (default 3 periods)
    capture:                         # motion capture: geometry_msgs/PoseStamped of the marker body
      topic: /mocap/freeflyer/pose
      rate: 100.0                    # Hz, expected sample rate
      axes: y-up                     # z-up, y-up or [x, -z, y]: capture axes along world x, y, z
      body_axes: y-up                # marker body axes (default: same as axes)
      unit: m                        # m or mm
      world_from_capture: {translation: [0, 0, 0], yaw: 0.0}   # m, rad
      base_in_body: {translation: [0, 0, -0.12], yaw: 0.0}     # base_link in the body, m, rad
      stamp: header                  # header (trust the stamps) or receipt (arrival - latency)
      latency: 0.0                   # s, used with stamp: receipt
      timeout: 0.03                  # s without an accepted sample -> trip (default 3 periods)
      max_position_jump: 0.05        # m, gate on the innovation
      max_attitude_jump: 0.2         # rad
      noise:                         # the base filter: measurement std (m, rad) and process noise
        {position: 0.0005, attitude: 0.002, acceleration: 0.02, angular_acceleration: 0.05}
                                     # (white acceleration, m/s^2/sqrt(Hz), rad/s^2/sqrt(Hz):
                                     # larger follows faster and is noisier)
      max_tilt: 0.15                 # rad, a planar base must be level (axis-convention check)
      max_height: 0.05               # m, and at world z = 0 (planar)
    encoders:                        # sensor_msgs/JointState from the arm and wheel drivers
      topic: /testbed/joint_states
      rate: 250.0
      timeout: 0.012                 # s (default 3 periods)
      velocities: measured           # measured (use the message's) or estimate (filter positions)
      noise: {position: 0.0015, acceleration: 0.5}   # joint filter: rad (about a count), rad/s^2/sqrt(Hz)
      joints:                        # URDF joint: hardware name, sign, encoder reading at URDF zero
        joint1: {name: shoulder, sign: 1, offset: 0.0}
        joint2: {name: elbow, sign: -1, offset: 0.5, effort_sign: 1}   # motor wired the other way
        wheel_z_joint: {name: wheel, sign: -1, offset: 0.0}
    actuators:
      joint_efforts: {topic: /testbed/joint_efforts}           # Float64MultiArray, N m
      wheels: {topic: /testbed/wheel_command, command: torque}  # torque (N m) or speed (rad/s)
      thrusters:
        topic: /testbed/thrusters
        command: duty                # duty (Float64MultiArray in [0, 1]) or bits (UInt8MultiArray 0/1)
        pwm_period: 0.1              # s
        min_on_time: 0.01            # s
        channels: [t1, t2, t3, t4, t5, t6, t7, t8]   # valve order on the wire
        layout: [...]                # thruster geometry as in a robot config; default: the robot's
    limits:
      table: {x: [-1.2, 1.2], y: [-0.9, 0.9]}   # m, world, the floating surface
      base_radius: 0.25              # m, the base footprint as a circle about base_link
      margin: 0.10                   # m, the geofence trips this far from an edge
      base_speed: 0.3                # m/s
      base_rate: 1.5                 # rad/s
      joint_speed: 3.0               # rad/s (also capped by the URDF's velocity limits)
      joint_range_margin: 0.05       # rad inside the URDF joint limits
      wheel_speed: 0.95              # fraction of each wheel's max_speed
    emulator: {...}                  # only read by the emulator (see hil.emulator)

Everything is checked here, against the robot model: a wrong axis convention, an unknown or
unmapped joint, an impossible thruster layout are refused with the key at fault and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from freeflyer_control.errors import ConfigError
from freeflyer_control.inputs.mappings import number, section
from freeflyer_control.model.config import Thruster, parse_thruster, vector3
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.model.robots import load_robot
from freeflyer_control.physics.actuators import in_thrust_cone, mode_support, thruster_matrix
from freeflyer_control.physics.modes import Mode
from freeflyer_control.resources import share_dir

from .emulator_settings import EmulatorSettings
from .frames import CaptureTransform, axes_matrix

THRUSTER_COMMANDS = ("duty", "bits")
WHEEL_COMMANDS = ("torque", "speed")
STAMP_SOURCES = ("header", "receipt")
VELOCITY_SOURCES = ("measured", "estimate")


@dataclass(frozen=True)
class CaptureConfig:
    """Motion capture (see the module docstring for the keys)."""

    topic: str
    rate: float
    transform: CaptureTransform
    stamp: str
    latency: float
    timeout: float
    max_position_jump: float
    max_attitude_jump: float
    position_noise: float
    attitude_noise: float
    acceleration_noise: float
    angular_acceleration_noise: float
    max_tilt: float
    max_height: float


@dataclass(frozen=True)
class EncoderChannel:
    """One joint on the wire: ``q_urdf = sign * (reading - offset)``, ``qdot_urdf = sign * rate``;
    a command (effort ``tau_urdf``, or a wheel speed) is sent as ``effort_sign * tau_urdf``
    (encoder and motor directions are wired independently; ``effort_sign`` defaults to ``sign``)."""

    joint: str
    name: str
    sign: float
    offset: float
    effort_sign: float


@dataclass(frozen=True)
class EncoderConfig:
    topic: str
    rate: float
    timeout: float
    velocities: str
    position_noise: float                  # rad, the joint filter's measurement std
    acceleration_noise: float              # rad/s^2/sqrt(Hz), its process noise
    channels: tuple[EncoderChannel, ...]   # in ff.joint_names order


@dataclass(frozen=True)
class ThrusterConfig:
    topic: str
    command: str
    pwm_period: float
    min_on_time: float
    channels: tuple[str, ...]              # thruster names in wire order


@dataclass(frozen=True)
class ActuatorConfig:
    joint_efforts_topic: str
    wheels_topic: str
    wheel_command: str
    thrusters: ThrusterConfig | None


@dataclass(frozen=True)
class Limits:
    """Safety limits (world frame, SI). ``table`` = (x_min, x_max, y_min, y_max)."""

    table: tuple[float, float, float, float]
    base_radius: float
    margin: float
    base_speed: float
    base_rate: float
    joint_speed: np.ndarray                # per arm joint, rad/s
    joint_lower: np.ndarray                # per arm joint, rad (with the margin applied)
    joint_upper: np.ndarray
    wheel_speed: np.ndarray                # per wheel, rad/s


@dataclass(frozen=True)
class TestbedConfig:
    """A validated testbed config. ``robot`` carries the testbed's thruster layout."""

    __test__ = False  # not a pytest test class, despite the name

    robot: FreeFlyerModel
    rate: float
    command_timeout: float
    capture: CaptureConfig
    encoders: EncoderConfig
    actuators: ActuatorConfig
    limits: Limits
    emulator: Mapping[str, Any] = field(default_factory=dict)
    source: Path | None = None
    robot_source: str = ""   # the robot as the other nodes' ``robot`` parameter: a name or an absolute path

    @property
    def period(self) -> float:
        return 1.0 / self.rate


# ---------------------------------------------------------------------------------------------
# Parsing helpers: each names the key at fault.


def _choice(data: Mapping[str, Any], key: str, choices: tuple[str, ...], where: str) -> str:
    value = str(data.get(key, choices[0]))
    if value not in choices:
        raise ConfigError(f"{where}.{key} must be one of {list(choices)}, got '{value}'")
    return value


def _topic(data: Mapping[str, Any], where: str, default: str) -> str:
    topic = str(data.get("topic", default)).strip()
    if not topic or " " in topic:
        raise ConfigError(f"{where}.topic must be a ROS topic name, got '{topic}'")
    return topic


def _pose(data: Mapping[str, Any], key: str, where: str) -> tuple[np.ndarray, float]:
    raw = data.get(key) or {}
    if not isinstance(raw, Mapping) or set(raw) - {"translation", "yaw"}:
        raise ConfigError(f"{where}.{key} must be {{translation: [x, y, z], yaw: rad}}, got {raw!r}")
    t = vector3(raw.get("translation", [0.0, 0.0, 0.0]), f"{where}.{key}.translation")
    try:
        yaw = float(raw.get("yaw", 0.0))
    except (TypeError, ValueError):
        yaw = np.nan
    if not np.isfinite(yaw):
        raise ConfigError(f"{where}.{key}.yaw must be a finite number (rad), got {raw.get('yaw')!r}")
    return t, yaw


# ---------------------------------------------------------------------------------------------
# Sections


def _parse_capture(data: Mapping[str, Any], ff: FreeFlyerModel) -> CaptureConfig:
    where = "capture"
    c = section(data, "capture", {"topic", "rate", "axes", "body_axes", "unit", "world_from_capture",
                                   "base_in_body", "stamp", "latency", "timeout", "max_position_jump",
                                   "max_attitude_jump", "noise", "max_tilt", "max_height"})
    rate = number(c, "rate", where, 100.0, strict=True)
    axes = axes_matrix(c.get("axes", "z-up"), f"{where}.axes")
    body_axes = axes_matrix(c["body_axes"], f"{where}.body_axes") if "body_axes" in c else axes
    unit = {"m": 1.0, "mm": 1e-3}.get(str(c.get("unit", "m")))
    if unit is None:
        raise ConfigError(f"{where}.unit must be m or mm, got '{c.get('unit')}'")
    wt, wyaw = _pose(c, "world_from_capture", where)
    bt, byaw = _pose(c, "base_in_body", where)
    timeout = number(c, "timeout", where, 3.0 / rate, strict=True)
    if timeout < 1.0 / rate:
        raise ConfigError(f"{where}.timeout = {timeout} s is shorter than one capture period ({1 / rate:.4g} s): "
                          f"every gap between samples would trip; use at least {1.5 / rate:.4g} s")
    noise = c.get("noise") or {}
    if not isinstance(noise, Mapping) or set(noise) - {"position", "attitude", "acceleration", "angular_acceleration"}:
        raise ConfigError(f"{where}.noise must be {{position: m, attitude: rad, acceleration: m/s^2/sqrt(Hz), "
                          f"angular_acceleration: rad/s^2/sqrt(Hz)}}, got {noise!r}")
    return CaptureConfig(
        topic=_topic(c, where, "mocap/pose"),
        rate=rate,
        transform=CaptureTransform(axes, body_axes, wt, wyaw, bt, byaw, unit),
        stamp=_choice(c, "stamp", STAMP_SOURCES, where),
        latency=number(c, "latency", where, 0.0),
        timeout=timeout,
        max_position_jump=number(c, "max_position_jump", where, 0.05, strict=True),
        max_attitude_jump=number(c, "max_attitude_jump", where, 0.2, strict=True),
        position_noise=number(noise, "position", f"{where}.noise", 5e-4, strict=True),
        attitude_noise=number(noise, "attitude", f"{where}.noise", 2e-3, strict=True),
        # What 1 N thrusters do to a ~20 kg base: on the example testbed station keeping holds
        # as well as with 2.5-4 times more, and the valves open a third less often.
        acceleration_noise=number(noise, "acceleration", f"{where}.noise", 0.02, strict=True),
        angular_acceleration_noise=number(noise, "angular_acceleration", f"{where}.noise", 0.05, strict=True),
        max_tilt=number(c, "max_tilt", where, 0.15 if ff.base == "planar" else np.pi, strict=True),
        max_height=number(c, "max_height", where, 0.05, strict=True),
    )


def _parse_encoders(data: Mapping[str, Any], ff: FreeFlyerModel) -> EncoderConfig:
    where = "encoders"
    e = section(data, "encoders", {"topic", "rate", "timeout", "velocities", "joints", "noise"})
    rate = number(e, "rate", where, 250.0, strict=True)
    timeout = number(e, "timeout", where, 3.0 / rate, strict=True)
    if timeout < 1.0 / rate:
        raise ConfigError(f"{where}.timeout = {timeout} s is shorter than one encoder period ({1 / rate:.4g} s); "
                          f"use at least {1.5 / rate:.4g} s")
    joints = e.get("joints") or {}
    if not isinstance(joints, Mapping):
        raise ConfigError(f"{where}.joints must map URDF joint names to {{name, sign, offset}}")
    model_joints = list(ff.joint_names)
    unknown = [j for j in joints if j not in model_joints]
    if unknown:
        raise ConfigError(f"{where}.joints: {unknown} not joint(s) of robot '{ff.name}' (its joints: "
                          f"{model_joints}); the keys are URDF joint names, the hardware names go in 'name:'")
    missing = [j for j in model_joints if j not in joints]
    if missing:
        raise ConfigError(f"{where}.joints: no entry for {missing}; every arm and wheel joint needs one, "
                          f"e.g. '{missing[0]}: {{name: <hardware name>, sign: 1, offset: 0.0}}'")
    channels = []
    for joint in model_joints:
        entry = joints[joint]
        w = f"{where}.joints.{joint}"
        if isinstance(entry, str):
            entry = {"name": entry}
        if not isinstance(entry, Mapping) or set(entry) - {"name", "sign", "offset", "effort_sign"}:
            raise ConfigError(f"{w} must be {{name: <hardware name>, sign: 1 or -1, offset: rad, effort_sign: 1 or -1}}"
                              f", got {entry!r}")
        sign = entry.get("sign", 1)
        effort_sign = entry.get("effort_sign", sign)
        for key, value in (("sign", sign), ("effort_sign", effort_sign)):
            if isinstance(value, bool) or value not in (1, -1):
                raise ConfigError(f"{w}.{key} must be 1 or -1, got {value!r}")
        try:
            offset = float(entry.get("offset", 0.0))
        except (TypeError, ValueError):
            offset = np.nan
        if not np.isfinite(offset):
            raise ConfigError(f"{w}.offset must be a finite number (the encoder reading, rad, at the URDF zero), "
                              f"got {entry.get('offset')!r}")
        channels.append(EncoderChannel(joint, str(entry.get("name", joint)), float(sign), offset, float(effort_sign)))
    names = [c.name for c in channels]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        given = "; ".join(f"hardware name '{n}' is given to {[c.joint for c in channels if c.name == n]}" for n in dupes)
        raise ConfigError(f"{where}.joints: {given}; give each joint the name its driver publishes")
    noise = e.get("noise") or {}
    if not isinstance(noise, Mapping) or set(noise) - {"position", "acceleration"}:
        raise ConfigError(f"{where}.noise must be {{position: rad, acceleration: rad/s^2/sqrt(Hz)}}, got {noise!r}")
    return EncoderConfig(_topic(e, where, "testbed/joint_states"), rate, timeout,
                         _choice(e, "velocities", VELOCITY_SOURCES, where),
                         # a 12-bit count; 0.5 smooths such counts at 250 Hz yet follows Wilde's rate steps
                         number(noise, "position", f"{where}.noise", 2 * np.pi / 4096, strict=True),
                         number(noise, "acceleration", f"{where}.noise", 0.5, strict=True),
                         tuple(channels))


def _parse_thrusters(a: Mapping[str, Any], ff: FreeFlyerModel, rate: float) -> tuple[ThrusterConfig | None, tuple]:
    where = "actuators.thrusters"
    t = section(a, "thrusters", {"topic", "command", "pwm_period", "min_on_time", "channels",
                                  "layout"}, "actuators", required=False)
    if not t:
        return None, ff.thrusters
    if "layout" in t:
        if not isinstance(t["layout"], list) or not t["layout"]:
            raise ConfigError(f"{where}.layout must be a list of thrusters (name, position, direction, max_force)")
        try:
            layout = tuple(parse_thruster(entry, i) for i, entry in enumerate(t["layout"]))
        except ConfigError as exc:
            raise ConfigError(f"{where}.layout: {exc}") from None
    else:
        layout = ff.thrusters
    if not layout:
        raise ConfigError(f"{where}: robot '{ff.name}' has no thrusters; give actuators.thrusters.layout "
                          "or remove the section")
    names = [th.name for th in layout]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}.layout: thruster names repeat: {names}")
    _check_layout(layout, ff, where)
    channels = tuple(str(c) for c in t.get("channels", names))
    if sorted(channels) != sorted(names):
        raise ConfigError(f"{where}.channels {list(channels)} must name each thruster of the layout once "
                          f"({names})")
    command = _choice(t, "command", THRUSTER_COMMANDS, where)
    period = number(t, "pwm_period", where, 0.1, strict=True)
    min_on = number(t, "min_on_time", where, 0.0)
    if min_on > period:
        raise ConfigError(f"{where}: min_on_time ({min_on} s) exceeds pwm_period ({period} s)")
    if command == "bits":
        # The bridge switches valves at its ticks: pulses are whole ticks long.
        ticks = period * rate
        if abs(ticks - round(ticks)) > 1e-6 or round(ticks) < 2:
            raise ConfigError(f"{where}: with command: bits the PWM period ({period} s) must be a whole number "
                              f"(>= 2) of control periods (1/{rate:g} s); e.g. pwm_period: {10 / rate:g}")
        if 0 < min_on < 1.0 / rate:
            raise ConfigError(f"{where}: min_on_time {min_on} s is shorter than a control period ({1 / rate:g} s), "
                              "the shortest pulse bits can make; use command: duty or a faster rate")
    return ThrusterConfig(_topic(t, where, "testbed/thrusters"), command, period, min_on, channels), layout


def _check_layout(layout: tuple[Thruster, ...], ff: FreeFlyerModel, where: str) -> None:
    """Refuse layouts no controller can use: out-of-plane thrust on a table, or base wrenches
    that no non-negative combination of thrusts makes."""
    if ff.base == "planar":
        for th in layout:
            if abs(th.direction[2]) > 1e-6:
                raise ConfigError(f"{where}.layout: thruster '{th.name}' pushes along world z "
                                  f"(direction {th.direction.tolist()}); on a table thrust must lie in the x-y plane")
    probe = replace(ff, thrusters=layout)
    reason = mode_support(probe, Mode.FLYING)
    if reason:
        B = thruster_matrix(probe)
        labels = ["Fx", "Fy", "Mz"] if ff.base == "planar" else ["Fx", "Fy", "Fz", "Mx", "My", "Mz"]
        lacking = [f"{'+' if s > 0 else '-'}{lab}" for i, lab in enumerate(labels) for s in (1.0, -1.0)
                   if not in_thrust_cone(B, s * np.eye(ff.nb)[i])]
        raise ConfigError(
            f"{where}.layout: these thrusters cannot push the base in every direction (nothing makes "
            f"{', '.join(lacking) or 'some wrench combinations'}): thrusters only push, so each direction needs one "
            "of its own. Check the directions' signs (the force on the base, opposite to the nozzle) and positions")


def _parse_actuators(data: Mapping[str, Any], ff: FreeFlyerModel, rate: float):
    a = section(data, "actuators", {"joint_efforts", "wheels", "thrusters"}, required=False)
    je = section(a, "joint_efforts", {"topic"}, "actuators", required=False)
    wh = section(a, "wheels", {"topic", "command"}, "actuators", required=False)
    thrusters, layout = _parse_thrusters(a, ff, rate)
    return ActuatorConfig(_topic(je, "actuators.joint_efforts", "testbed/joint_efforts"),
                          _topic(wh, "actuators.wheels", "testbed/wheel_command"),
                          _choice(wh, "command", WHEEL_COMMANDS, "actuators.wheels"), thrusters), layout


def _parse_limits(data: Mapping[str, Any], ff: FreeFlyerModel) -> Limits:
    where = "limits"
    lim = section(data, "limits", {"table", "base_radius", "margin", "base_speed", "base_rate", "joint_speed",
                                    "joint_range_margin", "wheel_speed"})
    table = lim.get("table")
    if not isinstance(table, Mapping) or set(table) != {"x", "y"}:
        raise ConfigError(f"{where}.table must be {{x: [min, max], y: [min, max]}} in metres, world frame")
    box = []
    for axis in ("x", "y"):
        lo_hi = table[axis]
        try:
            lo, hi = (float(v) for v in lo_hi)
        except (TypeError, ValueError):
            lo = hi = np.nan
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ConfigError(f"{where}.table.{axis} must be [min, max] in metres with min < max, got {lo_hi!r}")
        box += [lo, hi]
    radius = number(lim, "base_radius", where, 0.25, strict=True)
    margin = number(lim, "margin", where, 0.1)
    for i, axis in enumerate("xy"):
        if box[2 * i + 1] - box[2 * i] <= 2 * (radius + margin):
            raise ConfigError(f"{where}: the table is {box[2 * i + 1] - box[2 * i]:.3g} m long in {axis}, no room for "
                              f"a base of radius {radius} m with a {margin} m margin on both sides; "
                              f"widen limits.table.{axis} or reduce base_radius / margin")
    arm = ff.arm_v_indices
    q_idx = [ff.joint_q_index(n) for n in ff.arm_joint_names]
    m = ff.model
    range_margin = number(lim, "joint_range_margin", where, 0.05)
    lower = np.array([m.lowerPositionLimit[i] for i in q_idx]) + range_margin
    upper = np.array([m.upperPositionLimit[i] for i in q_idx]) - range_margin
    if np.any(lower >= upper):
        raise ConfigError(f"{where}.joint_range_margin = {range_margin} rad leaves no range for "
                          f"{[n for n, lo, hi in zip(ff.arm_joint_names, lower, upper) if lo >= hi]}")
    joint_speed = np.minimum(number(lim, "joint_speed", where, 3.0, strict=True), m.velocityLimit[arm])
    wheel_fraction = number(lim, "wheel_speed", where, 0.95, strict=True)
    if wheel_fraction > 1.0:
        raise ConfigError(f"{where}.wheel_speed is a fraction of each wheel's max_speed, in (0, 1]; got {wheel_fraction}")
    return Limits(tuple(box), radius, margin, number(lim, "base_speed", where, 0.3, strict=True),
                  number(lim, "base_rate", where, 1.5, strict=True), joint_speed, lower, upper,
                  wheel_fraction * ff.wheel_max_speeds)


def parse_testbed_config(data: Mapping[str, Any], *, source: Path | None = None,
                         robot: FreeFlyerModel | None = None) -> TestbedConfig:
    """A :class:`TestbedConfig` from parsed YAML.

    Args:
        data: the YAML mapping.
        source: its file (a relative robot config path is resolved against its folder).
        robot: the robot model, if already loaded (else from the ``robot`` key).

    Raises:
        ConfigError: naming the key at fault and what to write instead.
    """
    where = f"testbed config '{source}'" if source else "testbed config"
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where} must be a YAML mapping, got {data!r}")
    known = {"robot", "rate", "command_timeout", "capture", "encoders", "actuators", "limits", "emulator"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known keys: {sorted(known)}")
    name = str(data.get("robot", ""))
    if name.endswith((".yaml", ".yml", ".urdf")) and source is not None and not Path(name).is_absolute():
        name = str((source.parent / name).resolve())
    if robot is None:
        if not name:
            raise ConfigError(f"{where}: missing key 'robot' (a bundled robot name or a robot config .yaml)")
        robot = load_robot(name)
    try:
        rate = number(data, "rate", "", 250.0, strict=True)
        command_timeout = number(data, "command_timeout", "", 3.0 / rate, strict=True)
        if command_timeout < 1.0 / rate:
            raise ConfigError(f"command_timeout = {command_timeout} s is shorter than a control period "
                              f"({1 / rate:.4g} s); "
                              f"use at least {1.5 / rate:.4g} s")
        capture = _parse_capture(data, robot)
        encoders = _parse_encoders(data, robot)
        actuators, layout = _parse_actuators(data, robot, rate)
        ff = replace(robot, thrusters=layout) if layout is not robot.thrusters else robot
        limits = _parse_limits(data, ff)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    emulator = data.get("emulator") or {}
    if not isinstance(emulator, Mapping):
        raise ConfigError(f"{where}: emulator must be a mapping")

    try:
        EmulatorSettings.from_mapping(emulator)  # a typo there shows now, not when emulating
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return TestbedConfig(ff, rate, command_timeout, capture, encoders, actuators, limits, dict(emulator), source,
                         name or robot.name)


def testbed_names() -> list[str]:
    """Names of the bundled testbed configs (``config/testbeds/<name>.yaml``)."""
    return sorted(p.stem for p in (share_dir() / "config" / "testbeds").glob("*.yaml"))


def resolve_testbed_config(name_or_path: str | Path) -> Path:
    """The testbed config file ``name_or_path`` names: a path (used as given if it exists), else
    a path or a bare name (``planar_4link`` -> ``planar_4link.yaml``) in the package's
    ``config/testbeds/``.

    Raises:
        ConfigError: empty, or no such file (listing the bundled configs).
    """
    text = str(name_or_path).strip()
    try:
        folder = share_dir() / "config" / "testbeds"
        bundled = testbed_names()
    except FileNotFoundError:
        folder, bundled = None, []
    if not text:
        raise ConfigError(f"no testbed config given: a testbed .yaml path, or one of the bundled configs {bundled}")
    given = Path(text).expanduser()
    if given.is_file():
        return given.absolute()
    tried = [str(given)]
    if folder is not None and not given.is_absolute():
        for candidate in (folder / given, folder / given.with_name(given.name + ".yaml")):
            if candidate.is_file():
                return candidate.absolute()
            tried.append(str(candidate))
    raise ConfigError(f"testbed config '{text}' not found (looked for {tried}); give the path of a testbed "
                      f".yaml, or one of the bundled configs {bundled}")


def load_testbed_config(path: str | Path, *, robot: FreeFlyerModel | None = None) -> TestbedConfig:
    """Read and check a testbed config YAML file (a path or a bundled name; see the module
    docstring for the form)."""
    path = resolve_testbed_config(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read testbed config '{path}': {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"testbed config '{path}' is not valid YAML: {exc}") from None
    return parse_testbed_config(data, source=path, robot=robot)
