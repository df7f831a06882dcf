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

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from freeflyer_control.errors import ConfigError
from freeflyer_control.inputs.mappings import Range, mapping, nearest, refuse_unknown, section, value_text
from freeflyer_control.inputs.values import shown
from freeflyer_control.inputs.yaml_files import load_yaml_file
from freeflyer_control.model.config import MAX_EXTENT, MAX_PATH_CHARS, Thruster, parse_thruster, vector3
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.model.plausible_motion import DEFAULT_MAX_BASE_RATE, DEFAULT_MAX_BASE_SPEED
from freeflyer_control.model.robots import file_stamp, load_robot
from freeflyer_control.physics.actuators import in_thrust_cone, mode_support, thruster_matrix
from freeflyer_control.physics.modes import Mode
from freeflyer_control.resources import share_dir

from .emulator_settings import EmulatorSettings
from .frames import CaptureTransform, axes_matrix

THRUSTER_COMMANDS = ("duty", "bits")
WHEEL_COMMANDS = ("torque", "speed")
STAMP_SOURCES = ("header", "receipt")
VELOCITY_SOURCES = ("measured", "estimate")
TESTBED_KEYS = ("robot", "rate", "command_timeout", "capture", "encoders", "actuators", "limits", "emulator")

# The physical range of every number of a testbed config, and why. A safety limit outside its
# range does not protect anything (a base_speed of 1e300 m/s never trips), and a rate, timeout
# or noise outside it is a typo that would break the estimators or the bridge's schedule.
RATE = Range(1.0, 1e4, "Hz", "a testbed's loops run at 50 Hz - 1 kHz; above 10 kHz no ROS timer keeps up")
TIMEOUT = Range(0.0, 1.0, "s", "a watchdog slower than a second lets a base at its speed limit travel that far "
                "before the stop", lo_open=True)
LATENCY = Range(0.0, 1.0, "s", "a motion capture a second late is broken, not a delay to compensate")
POSITION_JUMP = Range(0.0, 1.0, "m", "a jump gate wider than a metre lets any glitch through", lo_open=True)
ATTITUDE_JUMP = Range(0.0, math.pi, "rad", "no attitude is further than half a turn away", lo_open=True)
POSITION_NOISE = Range(0.0, 1.0, "m", "a capture whose noise std is a metre measures nothing", lo_open=True)
ATTITUDE_NOISE = Range(0.0, math.pi, "rad", "a noise std of half a turn measures nothing", lo_open=True)
ACCELERATION_NOISE = Range(0.0, 1e3, "m/s^2/sqrt(Hz)", "no free-flyer accelerates at 1000 m/s^2", lo_open=True)
ANGULAR_NOISE = Range(0.0, 1e3, "rad/s^2/sqrt(Hz)", "no free-flyer base turns up at 1000 rad/s^2", lo_open=True)
JOINT_NOISE = Range(0.0, math.pi, "rad", "an encoder whose noise std is half a turn measures nothing", lo_open=True)
JOINT_ACCELERATION_NOISE = Range(0.0, 1e4, "rad/s^2/sqrt(Hz)", "beyond any arm's joint acceleration", lo_open=True)
TILT = Range(0.0, math.pi, "rad", "a tilt beyond half a turn is no check", lo_open=True)
HEIGHT = Range(0.0, 10.0, "m", "a planar base floats at table height; 10 m off it is no check", lo_open=True)
PWM_PERIOD = Range(0.0, 10.0, "s", "valves modulated over more than 10 s do not follow a control loop", lo_open=True)
TABLE_EXTENT = 100.0   # m
TABLE = Range(-TABLE_EXTENT, TABLE_EXTENT, "m", "the largest air-bearing floors are tens of metres; a larger "
              "table disables the geofence")
BASE_RADIUS = Range(0.0, 10.0, "m", "no air-bearing base is wider than 10 m", lo_open=True)
MARGIN = Range(0.0, 10.0, "m", "a margin of more than 10 m leaves no table")
BASE_SPEED = Range(0.0, DEFAULT_MAX_BASE_SPEED, "m/s",
                   f"the controller refuses base odometry faster than {DEFAULT_MAX_BASE_SPEED:g} m/s as implausible, "
                   "so a higher limit never trips; air-bearing bases move at < 0.5 m/s", lo_open=True)
BASE_RATE = Range(0.0, DEFAULT_MAX_BASE_RATE, "rad/s",
                  f"the controller refuses base odometry turning faster than {DEFAULT_MAX_BASE_RATE:g} rad/s as "
                  "implausible, so a higher limit never trips", lo_open=True)
JOINT_SPEED = Range(0.0, 100.0, "rad/s", "no arm joint turns at 100 rad/s (950 rpm); the URDF velocity limits "
                    "cap it anyway", lo_open=True)
JOINT_RANGE_MARGIN = Range(0.0, math.pi, "rad", "a margin of half a turn leaves no joint range")
WHEEL_FRACTION = Range(0.0, 1.0, "", "a fraction of each wheel's max_speed: above 1 the wheel's own limit is "
                       "passed", lo_open=True)
ENCODER_OFFSET = Range(-1e6, 1e6, "rad", "160 000 turns; beyond it float64 loses the encoder's resolution in "
                       "reading - offset")
YAW = Range(-1e3, 1e3, "rad", "beyond a thousand radians is a typo, not an orientation")
_WHY_EXTENT = "no testbed is larger than 100 m: a unit slip (mm for m?)"


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
    value = data.get(key, choices[0])
    if value not in choices:
        raise ConfigError(f"{where}.{key} must be one of {list(choices)}, got {shown(value)}")
    return value


def _topic(data: Mapping[str, Any], where: str, default: str) -> str:
    topic = value_text(data.get("topic", default), f"{where}.topic", what="a ROS topic name").strip()
    if " " in topic:
        raise ConfigError(f"{where}.topic must be a ROS topic name, got {shown(topic)}")
    return topic


def _pose(data: Mapping[str, Any], key: str, where: str) -> tuple[np.ndarray, float]:
    raw = mapping(data.get(key), f"{where}.{key}", ("translation", "yaw"))
    t = vector3(raw.get("translation", [0.0, 0.0, 0.0]), f"{where}.{key}.translation", MAX_EXTENT, "m", _WHY_EXTENT)
    return t, YAW.read(raw, "yaw", f"{where}.{key}", 0.0)


# ---------------------------------------------------------------------------------------------
# Sections


def _parse_capture(data: Mapping[str, Any], ff: FreeFlyerModel) -> CaptureConfig:
    where = "capture"
    c = section(data, "capture", {"topic", "rate", "axes", "body_axes", "unit", "world_from_capture",
                                   "base_in_body", "stamp", "latency", "timeout", "max_position_jump",
                                   "max_attitude_jump", "noise", "max_tilt", "max_height"})
    rate = RATE.read(c, "rate", where, 100.0)
    axes = axes_matrix(c.get("axes", "z-up"), f"{where}.axes")
    body_axes = axes_matrix(c["body_axes"], f"{where}.body_axes") if "body_axes" in c else axes
    unit = {"m": 1.0, "mm": 1e-3}.get(c.get("unit", "m")) if isinstance(c.get("unit", "m"), str) else None
    if unit is None:
        raise ConfigError(f"{where}.unit must be m or mm, got {shown(c.get('unit'))}")
    wt, wyaw = _pose(c, "world_from_capture", where)
    bt, byaw = _pose(c, "base_in_body", where)
    timeout = TIMEOUT.read(c, "timeout", where, min(3.0 / rate, TIMEOUT.hi))
    if timeout < 1.0 / rate:
        raise ConfigError(f"{where}.timeout = {timeout} s is shorter than one capture period ({1 / rate:.4g} s): "
                          f"every gap between samples would trip; use at least {1.5 / rate:.4g} s")
    noise = section(c, "noise", {"position", "attitude", "acceleration", "angular_acceleration"}, where,
                    required=False)
    return CaptureConfig(
        topic=_topic(c, where, "mocap/pose"),
        rate=rate,
        transform=CaptureTransform(axes, body_axes, wt, wyaw, bt, byaw, unit),
        stamp=_choice(c, "stamp", STAMP_SOURCES, where),
        latency=LATENCY.read(c, "latency", where, 0.0),
        timeout=timeout,
        max_position_jump=POSITION_JUMP.read(c, "max_position_jump", where, 0.05),
        max_attitude_jump=ATTITUDE_JUMP.read(c, "max_attitude_jump", where, 0.2),
        position_noise=POSITION_NOISE.read(noise, "position", f"{where}.noise", 5e-4),
        attitude_noise=ATTITUDE_NOISE.read(noise, "attitude", f"{where}.noise", 2e-3),
        # What 1 N thrusters do to a ~20 kg base: on the example testbed station keeping holds
        # as well as with 2.5-4 times more, and the valves open a third less often.
        acceleration_noise=ACCELERATION_NOISE.read(noise, "acceleration", f"{where}.noise", 0.02),
        angular_acceleration_noise=ANGULAR_NOISE.read(noise, "angular_acceleration", f"{where}.noise", 0.05),
        max_tilt=TILT.read(c, "max_tilt", where, 0.15 if ff.base == "planar" else np.pi),
        max_height=HEIGHT.read(c, "max_height", where, 0.05),
    )


def _parse_encoders(data: Mapping[str, Any], ff: FreeFlyerModel) -> EncoderConfig:
    where = "encoders"
    e = section(data, "encoders", {"topic", "rate", "timeout", "velocities", "joints", "noise"})
    rate = RATE.read(e, "rate", where, 250.0)
    timeout = TIMEOUT.read(e, "timeout", where, min(3.0 / rate, TIMEOUT.hi))
    if timeout < 1.0 / rate:
        raise ConfigError(f"{where}.timeout = {timeout} s is shorter than one encoder period ({1 / rate:.4g} s); "
                          f"use at least {1.5 / rate:.4g} s")
    joints = e.get("joints") or {}
    if not isinstance(joints, Mapping):
        raise ConfigError(f"{where}.joints must map URDF joint names to {{name, sign, offset}}")
    model_joints = list(ff.joint_names)
    for joint in joints:
        if joint not in model_joints:
            raise ConfigError(f"{where}.joints: {shown(joint)} is not a joint of robot '{ff.name}'; did you mean "
                              f"'{nearest(joint, model_joints)[0]}'? (its joints: {model_joints}); the keys are URDF "
                              "joint names, the hardware names go in 'name:'")
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
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{w} must be {{name: <hardware name>, sign: 1 or -1, offset: rad, effort_sign: 1 or -1}}"
                              f", got {shown(entry)}")
        refuse_unknown(entry, ("name", "sign", "offset", "effort_sign"), w)
        sign = entry.get("sign", 1)
        effort_sign = entry.get("effort_sign", sign)
        for key, value in (("sign", sign), ("effort_sign", effort_sign)):
            if isinstance(value, bool) or value not in (1, -1):
                raise ConfigError(f"{w}.{key} must be 1 or -1, got {shown(value)}")
        try:
            offset = ENCODER_OFFSET.read(entry, "offset", w, 0.0)
        except ConfigError as exc:
            raise ConfigError(f"{exc} (the offset is the encoder reading at the URDF zero)") from None
        name = value_text(entry["name"], f"{w}.name", what="a hardware joint name") if "name" in entry else joint
        channels.append(EncoderChannel(joint, name, float(sign), offset, float(effort_sign)))
    names = [c.name for c in channels]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        given = "; ".join(f"hardware name '{n}' is given to {[c.joint for c in channels if c.name == n]}" for n in dupes)
        raise ConfigError(f"{where}.joints: {given}; give each joint the name its driver publishes")
    noise = section(e, "noise", {"position", "acceleration"}, where, required=False)
    return EncoderConfig(_topic(e, where, "testbed/joint_states"), rate, timeout,
                         _choice(e, "velocities", VELOCITY_SOURCES, where),
                         # a 12-bit count; 0.5 smooths such counts at 250 Hz yet follows Wilde's rate steps
                         JOINT_NOISE.read(noise, "position", f"{where}.noise", 2 * np.pi / 4096),
                         JOINT_ACCELERATION_NOISE.read(noise, "acceleration", f"{where}.noise", 0.5),
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
    given = t.get("channels", names)
    if not isinstance(given, list):
        raise ConfigError(f"{where}.channels must list the thruster names in wire order, got {shown(given)}")
    channels = tuple(value_text(c, f"{where}.channels[{i}]", what="a thruster name") for i, c in enumerate(given))
    if sorted(channels) != sorted(names):
        raise ConfigError(f"{where}.channels {list(channels)} must name each thruster of the layout once "
                          f"({names})")
    command = _choice(t, "command", THRUSTER_COMMANDS, where)
    period = PWM_PERIOD.read(t, "pwm_period", where, 0.1)
    min_on = Range(0.0, period, "s", "at most pwm_period, the PWM period").read(t, "min_on_time", where, 0.0)
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
    probe = ff if layout is ff.thrusters else replace(ff, thrusters=layout)  # the robot's own: cached matrix
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
    if isinstance(table, Mapping):
        refuse_unknown(table, ("x", "y"), f"{where}.table")
    if not isinstance(table, Mapping) or set(table) != {"x", "y"}:
        raise ConfigError(f"{where}.table must be {{x: [min, max], y: [min, max]}} in metres, world frame")
    box = []
    for axis in ("x", "y"):
        lo_hi = table[axis]
        if not isinstance(lo_hi, (list, tuple)) or len(lo_hi) != 2:
            raise ConfigError(f"{where}.table.{axis} must be [min, max] in metres, got {shown(lo_hi)}")
        lo, hi = (TABLE.check(v, f"{where}.table.{axis}[{i}]") for i, v in enumerate(lo_hi))
        if not lo < hi:
            raise ConfigError(f"{where}.table.{axis} must be [min, max] in metres with min < max, got {shown(lo_hi)}")
        box += [lo, hi]
    radius = BASE_RADIUS.read(lim, "base_radius", where, 0.25)
    margin = MARGIN.read(lim, "margin", where, 0.1)
    for i, axis in enumerate("xy"):
        if box[2 * i + 1] - box[2 * i] <= 2 * (radius + margin):
            raise ConfigError(f"{where}: the table is {box[2 * i + 1] - box[2 * i]:.3g} m long in {axis}, no room for "
                              f"a base of radius {radius} m with a {margin} m margin on both sides; "
                              f"widen limits.table.{axis} or reduce base_radius / margin")
    arm = ff.arm_v_indices
    q_idx = [ff.joint_q_index(n) for n in ff.arm_joint_names]
    m = ff.model
    range_margin = JOINT_RANGE_MARGIN.read(lim, "joint_range_margin", where, 0.05)
    lower = np.array([m.lowerPositionLimit[i] for i in q_idx]) + range_margin
    upper = np.array([m.upperPositionLimit[i] for i in q_idx]) - range_margin
    if np.any(lower >= upper):
        raise ConfigError(f"{where}.joint_range_margin = {range_margin} rad leaves no range for "
                          f"{[n for n, lo, hi in zip(ff.arm_joint_names, lower, upper) if lo >= hi]}")
    joint_speed = np.minimum(JOINT_SPEED.read(lim, "joint_speed", where, 3.0), m.velocityLimit[arm])
    wheel_fraction = WHEEL_FRACTION.read(lim, "wheel_speed", where, 0.95)
    return Limits(tuple(box), radius, margin, BASE_SPEED.read(lim, "base_speed", where, 0.3),
                  BASE_RATE.read(lim, "base_rate", where, 1.5), joint_speed, lower, upper,
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
        raise ConfigError(f"{where} must be a YAML mapping, got {shown(data)}")
    try:
        refuse_unknown(data, TESTBED_KEYS, "")
    except ConfigError as exc:
        raise ConfigError(f"{where}{exc}") from None
    name = value_text(data["robot"], f"{where}: robot", MAX_PATH_CHARS, "a robot name or a robot config path") \
        if data.get("robot") is not None else ""
    if name.endswith((".yaml", ".yml", ".urdf")) and source is not None and not Path(name).is_absolute():
        name = str((source.parent / name).resolve())
    if robot is None:
        if not name:
            raise ConfigError(f"{where}: missing key 'robot' (a bundled robot name or a robot config .yaml)")
        robot = load_robot(name)
    try:
        rate = RATE.read(data, "rate", "", 250.0)
        command_timeout = TIMEOUT.read(data, "command_timeout", "", min(3.0 / rate, TIMEOUT.hi))
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
    """The testbed config file ``name_or_path`` names: a path (returned as given if it exists),
    else a path or a bare name (``planar_4link`` -> ``planar_4link.yaml``) in the package's
    ``config/testbeds/`` (absolute).

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
    if len(text) > MAX_PATH_CHARS or "\x00" in text:
        raise ConfigError(f"testbed config {shown(text)} is not a file name ({len(text)} characters); give the path "
                          f"of a testbed .yaml, or one of the bundled configs {bundled}")
    given = Path(text).expanduser()
    if given.is_file():
        return given  # as given: messages then name the file as the user wrote it
    tried = [str(given)]
    if folder is not None and not given.is_absolute():
        for candidate in (folder / given, folder / given.with_name(given.name + ".yaml")):
            if candidate.is_file():
                return candidate.absolute()
            tried.append(str(candidate))
    raise ConfigError(f"testbed config '{text}' not found (looked for {tried}); give the path of a testbed "
                      f".yaml, or one of the bundled configs {bundled}")


def shared_testbed(source: str) -> TestbedConfig:
    """:func:`load_testbed_config` for reading only (checking options and specs against it),
    cached by the source and the stamp of its file, as :func:`~freeflyer_control.model.robots.shared_robot`."""
    return _shared_testbed(source, file_stamp(source))


@functools.lru_cache(maxsize=8)
def _shared_testbed(source: str, stamp: tuple | None) -> TestbedConfig:
    return load_testbed_config(source)


def load_testbed_config(path: str | Path, *, robot: FreeFlyerModel | None = None) -> TestbedConfig:
    """Read and check a testbed config YAML file (a path or a bundled name; see the module
    docstring for the form)."""
    path = resolve_testbed_config(path)
    return parse_testbed_config(load_yaml_file(path, "testbed config"), source=path, robot=robot)
