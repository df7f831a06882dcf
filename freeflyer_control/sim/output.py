"""Files of a simulation run: ``timeseries.csv``, ``summary.json`` and, optionally, ``run.mcap``.

``timeseries.csv``
    One row per log sample. Column ``t`` (s) first, then ``<series>.<label>`` for every column of
    every series of :class:`~freeflyer_control.sim.result.SimResult` in recording order
    (``joint_positions.joint1``, ``momentum_total.Px``, ...; series with no columns, e.g. the wheel
    torques of a robot without wheels, have none), then ``mode``: the maneuvering mode's name
    (the ``mode.mode_index`` column holds its index into ``list(Mode)``). Floats are written with
    ``repr`` (the shortest text that reads back to the same double), so a momentum of 1e-16 kg m/s
    survives; missing values (e.g. targets of a joint-space maneuver) are ``nan``. Units are SI:
    rad, rad/s, m, m/s, N, N m, kg m/s, kg m^2/s. ``freeflyer sim`` writes it as the run goes
    (:mod:`freeflyer_control.sim.stream`): a run stopped early leaves every row up to where it
    stopped.

``summary.json``
    :attr:`SimResult.summary`, indent 2. numpy scalars and arrays become numbers and lists;
    non-finite numbers (an infinite real-time factor) become ``null`` so the file is strict JSON.
    ``interrupted`` (Ctrl-C), ``error`` (``"<type>: <message>"`` of an exception that stopped the
    run, else null) and ``t_reached_s`` (simulated s reached) say whether the run is complete; a
    figure whose signals were missing is ``null`` and ``not_available`` maps it to the reason.

``run.mcap``
    Written only when ``mcap`` and ``mcap_ros2`` (PyPI ``mcap-ros2-support``; the ``mcap`` extra of
    this package) are importable; otherwise skipped with an info log line. ROS 2 profile, CDR
    messages, ``ros2msg`` schemas holding the real ROS 2 Jazzy definitions (see
    :data:`MSG_DEFINITIONS`), log and header stamps = simulated time (t = 0 at the epoch):

    ===========================  ============================  =================================
    topic                        type                          content
    ===========================  ============================  =================================
    ``/joint_states``            sensor_msgs/msg/JointState    all joints (arm and wheels): name,
                                                               position, velocity (effort empty)
    ``/base/odom``               nav_msgs/msg/Odometry         frame_id ``world``, child_frame_id
                                                               ``base_link``; pose of base_link in
                                                               world; twist: linear velocity of
                                                               the base_link origin and angular
                                                               velocity, **both in world axes**
    ``/mode``                    std_msgs/msg/String           the mode name; at t = 0 and at each
                                                               change (a latched topic)
    ``/base/wrench_command``     geometry_msgs/msg/            commanded base wrench about the
                                 WrenchStamped                 base_link origin, world axes
                                                               (frame_id ``world``); a planar
                                                               [fx, fy, mz] is padded to 6
    ===========================  ============================  =================================

    Note on ``/base/odom``: REP-105 / nav_msgs conventionally express the twist in the
    child frame. This package's public base state (DESIGN section 5, docs/conventions.md) is
    "base pose and twist in world", and the MCAP follows it; the file's ``freeflyer_control``
    metadata record says so (``base_odom_twist_frame: world``; written with
    mcap-ros2-support >= 0.6, whose writer has ``add_metadata``). To get the child-frame twist,
    rotate both vectors by the inverse of the pose's orientation.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from freeflyer_control.physics.modes import Mode
from freeflyer_control.sim.stream import TimeseriesStream

log = logging.getLogger(__name__)

TIMESERIES_CSV = "timeseries.csv"
SUMMARY_JSON = "summary.json"
RUN_MCAP = "run.mcap"
# Every file this module may write (with the temporary files of an interrupted write).
OUTPUT_FILES = (TIMESERIES_CSV, SUMMARY_JSON, RUN_MCAP, SUMMARY_JSON + ".part", RUN_MCAP + ".part")

WORLD_FRAME = "world"
BASE_FRAME = "base_link"

TOPIC_JOINT_STATES = "/joint_states"
TOPIC_BASE_ODOM = "/base/odom"
TOPIC_MODE = "/mode"
TOPIC_BASE_WRENCH = "/base/wrench_command"

# The ROS 2 Jazzy message definitions (.msg files) used by run.mcap, copied verbatim from
# ros2/common_interfaces 5.3.5 and ros2/rcl_interfaces (builtin_interfaces) 2.0.2.
# Keyed by full type name; :func:`ros2_msgdef` concatenates a type with its dependencies.
MSG_DEFINITIONS: dict[str, str] = {
    "builtin_interfaces/msg/Time": """\
# This message communicates ROS Time defined here:
# https://design.ros2.org/articles/clock_and_time.html

# The seconds component, valid over all int32 values.
int32 sec

# The nanoseconds component, valid in the range [0, 1e9).
uint32 nanosec
""",
    "std_msgs/msg/Header": """\
# Standard metadata for higher-level stamped data types.
# This is generally used to communicate timestamped data
# in a particular coordinate frame.

# Two-integer timestamp that is expressed as seconds and nanoseconds.
builtin_interfaces/Time stamp

# Transform frame with which this data is associated.
string frame_id
""",
    "std_msgs/msg/String": """\
# This was originally provided as an example message.
# It is deprecated as of Foxy
# It is recommended to create your own semantically meaningful message.
# However if you would like to continue using this please use the equivalent in example_msgs.

string data
""",
    "sensor_msgs/msg/JointState": """\
# This is a message that holds data to describe the state of a set of torque controlled joints.
#
# The state of each joint (revolute or prismatic) is defined by:
#  * the position of the joint (rad or m),
#  * the velocity of the joint (rad/s or m/s) and
#  * the effort that is applied in the joint (Nm or N).
#
# Each joint is uniquely identified by its name
# The header specifies the time at which the joint states were recorded. All the joint states
# in one message have to be recorded at the same time.
#
# This message consists of a multiple arrays, one for each part of the joint state.
# The goal is to make each of the fields optional. When e.g. your joints have no
# effort associated with them, you can leave the effort array empty.
#
# All arrays in this message should have the same size, or be empty.
# This is the only way to uniquely associate the joint name with the correct
# states.

std_msgs/Header header

string[] name
float64[] position
float64[] velocity
float64[] effort
""",
    "nav_msgs/msg/Odometry": """\
# This represents an estimate of a position and velocity in free space.
# The pose in this message should be specified in the coordinate frame given by header.frame_id
# The twist in this message should be specified in the coordinate frame given by the child_frame_id

# Includes the frame id of the pose parent.
std_msgs/Header header

# Frame id the pose points to. The twist is in this coordinate frame.
string child_frame_id

# Estimated pose that is typically relative to a fixed world frame.
geometry_msgs/PoseWithCovariance pose

# Estimated linear and angular velocity relative to child_frame_id.
geometry_msgs/TwistWithCovariance twist
""",
    "geometry_msgs/msg/PoseWithCovariance": """\
# This represents a pose in free space with uncertainty.

Pose pose

# Row-major representation of the 6x6 covariance matrix
# The orientation parameters use a fixed-axis representation.
# In order, the parameters are:
# (x, y, z, rotation about X axis, rotation about Y axis, rotation about Z axis)
float64[36] covariance
""",
    "geometry_msgs/msg/TwistWithCovariance": """\
# This expresses velocity in free space with uncertainty.

Twist twist

# Row-major representation of the 6x6 covariance matrix
# The orientation parameters use a fixed-axis representation.
# In order, the parameters are:
# (x, y, z, rotation about X axis, rotation about Y axis, rotation about Z axis)
float64[36] covariance
""",
    "geometry_msgs/msg/Pose": """\
# A representation of pose in free space, composed of position and orientation.

Point position
Quaternion orientation
""",
    "geometry_msgs/msg/Twist": """\
# This expresses velocity in free space broken into its linear and angular parts.

Vector3  linear
Vector3  angular
""",
    "geometry_msgs/msg/Point": """\
# This contains the position of a point in free space
float64 x
float64 y
float64 z
""",
    "geometry_msgs/msg/Quaternion": """\
# This represents an orientation in free space in quaternion form.

float64 x 0
float64 y 0
float64 z 0
float64 w 1
""",
    "geometry_msgs/msg/Vector3": """\
# This represents a vector in free space.

# This is semantically different than a point.
# A vector is always anchored at the origin.
# When a transform is applied to a vector, only the rotational component is applied.

float64 x
float64 y
float64 z
""",
    "geometry_msgs/msg/Wrench": """\
# This represents force in free space, separated into its linear and angular parts.

Vector3  force
Vector3  torque
""",
    "geometry_msgs/msg/WrenchStamped": """\
# A wrench with reference coordinate frame and timestamp

std_msgs/Header header
Wrench wrench
""",
}

_PRIMITIVE_TYPES = frozenset((
    "bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16",
    "int32", "uint32", "int64", "uint64", "string", "wstring"))
# The type of a field line ("geometry_msgs/Pose pose", "float64[36] covariance"), as rosbag2 reads it.
_FIELD_TYPE = re.compile(r"^\s*([A-Za-z0-9_/]+)(?:\[[^\]]*\])?\s+", re.MULTILINE)
_MSGDEF_SEPARATOR = "=" * 80


def _full_name(name: str) -> str:
    """'geometry_msgs/Pose' or 'geometry_msgs/msg/Pose' -> 'geometry_msgs/msg/Pose'."""
    parts = name.split("/")
    return f"{parts[0]}/msg/{parts[-1]}" if len(parts) == 2 else name


def _dependencies(full_name: str) -> list[str]:
    """Non-primitive field types of one definition, as 'pkg/Type', sorted (as rosbag2 does)."""
    package = full_name.split("/")[0]
    deps = set()
    for field_type in _FIELD_TYPE.findall(MSG_DEFINITIONS[full_name]):
        if field_type in _PRIMITIVE_TYPES:
            continue
        deps.add(field_type if "/" in field_type else f"{package}/{field_type}")
    return sorted(deps)


def ros2_msgdef(type_name: str) -> str:
    """The complete ``ros2msg`` definition of ``type_name`` (e.g. 'nav_msgs/msg/Odometry').

    The format rosbag2 writes to MCAP schemas (rosbag2 docs/message_definition_encoding.md):
    the type's own .msg text, then every dependency once, depth first, each preceded by a line
    of 80 '=' and a line ``MSG: pkg/Type``.
    """
    seen: set[str] = set()

    def text(full_name: str) -> str:
        out = MSG_DEFINITIONS[full_name]
        for dep in _dependencies(full_name):
            if dep not in seen:
                seen.add(dep)
                out += f"\n{_MSGDEF_SEPARATOR}\nMSG: {dep}\n" + text(_full_name(dep))
        return out

    return text(_full_name(type_name))


# --------------------------------------------------------------------------------------------
# helpers


def mode_names(result) -> list[str]:
    """The mode name of every log sample (the ``mode`` series holds indices into ``list(Mode)``)."""
    modes = list(Mode)
    return [modes[int(i)].value for i in np.asarray(result.series["mode"]).reshape(-1)]


def json_safe(value: Any) -> Any:
    """``value`` with numpy types, enums, paths and tuples made JSON-serialisable.

    Non-finite floats become None (strict JSON has no NaN or Infinity).
    """
    if isinstance(value, dict):
        return {str(json_safe(k)) if not isinstance(k, str) else k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, Enum):
        return json_safe(value.value)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if value is None or isinstance(value, str):
        return value
    return str(value)


def write_timeseries_csv(result, path: Path) -> Path:
    """``timeseries.csv`` (see the module docstring), through the same writer that streams it
    during a run (:class:`~freeflyer_control.sim.stream.TimeseriesStream`)."""
    series = result.series
    n = len(series["t"])
    columns = {}
    for key, values in series.items():
        width = np.asarray(values, dtype=float).reshape(n, -1).shape[1]
        labels = list(result.column_names.get(key, []))
        columns[key] = labels if len(labels) == width else [str(i) for i in range(width)]
    stream = TimeseriesStream(path)
    try:
        stream.begin(columns)
        stream.write(series)
    finally:
        stream.close()
    return path


def write_summary_json(result, path: Path) -> Path:
    """``summary.json`` (see the module docstring). Written to a temporary file first and then
    renamed, so that a run stopped while writing it never leaves half a summary."""
    tmp = path.with_name(path.name + ".part")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(json_safe(result.summary), f, indent=2, allow_nan=False)
            f.write("\n")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def mcap_available() -> bool:
    """True if ``mcap`` and ``mcap_ros2`` can be imported (run.mcap can be written)."""
    try:
        import mcap.writer  # noqa: F401
        import mcap_ros2.writer  # noqa: F401
    except ImportError:
        return False
    return True


def _stamp(t_ns: int) -> dict:
    return {"sec": t_ns // 1_000_000_000, "nanosec": t_ns % 1_000_000_000}


def write_mcap(result, path: Path) -> Path:
    """``run.mcap`` (see the module docstring). Needs ``mcap`` and ``mcap_ros2``."""
    from mcap_ros2.writer import Writer

    s = result.series
    ff = result.robot
    t = np.asarray(s["t"], dtype=float).reshape(-1)
    n = t.size
    joint_labels = list(result.column_names["joint_positions"])
    positions = np.asarray(s["joint_positions"], dtype=float).reshape(n, -1)
    velocities = np.asarray(s["joint_velocities"], dtype=float).reshape(n, -1)
    base_p = np.asarray(s["base_position"], dtype=float).reshape(n, 3)
    base_q = np.asarray(s["base_orientation_xyzw"], dtype=float).reshape(n, 4)
    base_v = np.asarray(s["base_linear_velocity"], dtype=float).reshape(n, 3)
    base_w = np.asarray(s["base_angular_velocity"], dtype=float).reshape(n, 3)
    wrench_labels = list(result.column_names.get("base_wrench_world", []))
    wrench = np.asarray(s.get("base_wrench_world", np.zeros((n, 0))), dtype=float).reshape(n, -1)
    wrench6 = np.zeros((n, 6))
    for j, label in enumerate(wrench_labels):
        wrench6[:, ["fx", "fy", "fz", "mx", "my", "mz"].index(label)] = wrench[:, j]
    wrench6 = np.nan_to_num(wrench6, nan=0.0)
    modes = mode_names(result)
    zero_cov = [0.0] * 36

    tmp = path.with_name(path.name + ".part")
    try:
        with open(tmp, "wb") as f:
            writer = Writer(f)
            schemas = {name: writer.register_msgdef(name, ros2_msgdef(name)) for name in (
                "sensor_msgs/msg/JointState", "nav_msgs/msg/Odometry", "std_msgs/msg/String",
                "geometry_msgs/msg/WrenchStamped")}
            # The record that says which frame the odometry twist is in (mcap-ros2-support >= 0.6
            # writes metadata; older versions write the same file without it).
            add_metadata = getattr(writer, "add_metadata", None)
            if add_metadata is not None:
                add_metadata("freeflyer_control", {
                    "robot": str(getattr(ff, "name", "")),
                    "base": str(getattr(ff, "base", "")),
                    "controller": str(result.summary.get("controller", "")),
                    "maneuver": str(result.summary.get("maneuver", "")),
                    "time": "simulated; t = 0 s at the epoch",
                    "base_odom_twist_frame": WORLD_FRAME,
                    "base_odom_twist": "linear velocity of the base_link origin and angular velocity, "
                                       "both expressed in world (not child_frame_id)",
                    "base_wrench_command": "about the base_link origin, world axes",
                })
            seq = {topic: 0 for topic in (TOPIC_JOINT_STATES, TOPIC_BASE_ODOM, TOPIC_MODE, TOPIC_BASE_WRENCH)}

            def write(topic: str, schema: str, msg: dict, t_ns: int) -> None:
                writer.write_message(topic, schemas[schema], msg, log_time=t_ns, publish_time=t_ns,
                                     sequence=seq[topic])
                seq[topic] += 1

            last_mode = None
            for k in range(n):
                t_ns = int(round(float(t[k]) * 1e9))
                stamp = _stamp(t_ns)
                if modes[k] != last_mode:
                    write(TOPIC_MODE, "std_msgs/msg/String", {"data": modes[k]}, t_ns)
                    last_mode = modes[k]
                write(TOPIC_JOINT_STATES, "sensor_msgs/msg/JointState", {
                    "header": {"stamp": stamp, "frame_id": ""},
                    "name": joint_labels,
                    "position": positions[k].tolist(),
                    "velocity": velocities[k].tolist(),
                    "effort": [],
                }, t_ns)
                px, py, pz = base_p[k].tolist()
                qx, qy, qz, qw = base_q[k].tolist()
                vx, vy, vz = base_v[k].tolist()
                wx, wy, wz = base_w[k].tolist()
                write(TOPIC_BASE_ODOM, "nav_msgs/msg/Odometry", {
                    "header": {"stamp": stamp, "frame_id": WORLD_FRAME},
                    "child_frame_id": BASE_FRAME,
                    "pose": {"pose": {"position": {"x": px, "y": py, "z": pz},
                                      "orientation": {"x": qx, "y": qy, "z": qz, "w": qw}},
                             "covariance": zero_cov},
                    "twist": {"twist": {"linear": {"x": vx, "y": vy, "z": vz},
                                        "angular": {"x": wx, "y": wy, "z": wz}},
                              "covariance": zero_cov},
                }, t_ns)
                fx, fy, fz, mx, my, mz = wrench6[k].tolist()
                write(TOPIC_BASE_WRENCH, "geometry_msgs/msg/WrenchStamped", {
                    "header": {"stamp": stamp, "frame_id": WORLD_FRAME},
                    "wrench": {"force": {"x": fx, "y": fy, "z": fz},
                               "torque": {"x": mx, "y": my, "z": mz}},
                }, t_ns)
            writer.finish()
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def write_outputs(result, out_dir, *, mcap: bool = True, timeseries: bool = True) -> dict[str, Path]:
    """Write the files of ``result`` into ``out_dir`` (created if missing).

    Returns {"timeseries": csv path, "summary": json path[, "mcap": mcap path]}; ``mcap`` is
    present only if it was written (``mcap=True`` and the ``mcap`` / ``mcap_ros2`` modules
    importable; otherwise an info line is logged). ``timeseries=False``: the CSV was streamed
    during the run (:mod:`freeflyer_control.sim.stream`) and is not written again.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "timeseries": write_timeseries_csv(result, out / TIMESERIES_CSV) if timeseries else out / TIMESERIES_CSV,
        "summary": write_summary_json(result, out / SUMMARY_JSON),
    }
    if mcap:
        if mcap_available():
            paths["mcap"] = write_mcap(result, out / RUN_MCAP)
        else:
            log.info("%s not written: the 'mcap' and 'mcap_ros2' modules are not installed "
                     "(pip install mcap mcap-ros2-support)", RUN_MCAP)
    return paths
