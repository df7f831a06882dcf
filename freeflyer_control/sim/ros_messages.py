"""The ROS 2 message definitions ``run.mcap`` carries, in the ``ros2msg`` form rosbag2 writes.

MCAP readers (Foxglove, rosbag2, the ``mcap`` Python reader) decode CDR messages with these
texts; no ROS install is needed to write or read them.
"""

from __future__ import annotations

import re

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
    # tf2 (ros2/geometry2 and common_interfaces): the fields as in Jazzy, comments shortened.
    "tf2_msgs/msg/TFMessage": """\
geometry_msgs/TransformStamped[] transforms
""",
    "geometry_msgs/msg/TransformStamped": """\
# This expresses a transform from coordinate frame header.frame_id
# to the coordinate frame child_frame_id at the time of header.stamp

std_msgs/Header header
string child_frame_id # the frame id of the child frame
Transform transform
""",
    "geometry_msgs/msg/Transform": """\
# This represents the transform between two coordinate frames in free space.

Vector3 translation
Quaternion rotation
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
