"""``run.mcap``: a finished run as ROS 2 messages that Foxglove and rosbag2 draw, written without ROS.

Written from the run folder's records (:mod:`freeflyer_control.sim.run_record`) when ``mcap`` and
``mcap_ros2`` (PyPI ``mcap-ros2-support``; the ``mcap`` extra) are importable. ROS 2 profile, CDR
messages, ``ros2msg`` schemas (:mod:`freeflyer_control.sim.ros_messages`), log, publish and header
stamps = simulated time (t = 0 at the epoch). Every channel carries rosbag2's
``offered_qos_profiles`` (Jazzy's form): reliable, keep last; ``/robot_description``,
``/tf_static`` and ``/mode`` transient local (latched), so ``ros2 bag play`` re-publishes them as
robot_state_publisher and the controller would, and rviz draws the robot with no
robot_state_publisher running.

=============================  ============================  ========================================
topic                          type                          content
=============================  ============================  ========================================
``/robot_description``        std_msgs/msg/String           the URDF, once, at the first stamp
``/tf_static``                 tf2_msgs/msg/TFMessage        every fixed URDF joint parent -> child,
                                                             once; with an object, its grasp frames
``/tf``                        tf2_msgs/msg/TFMessage        per sample: world -> base_link and
                                                             every moving URDF joint parent -> child
                                                             (Pinocchio's placements of the recorded
                                                             configuration); world -> the object
``/joint_states``              sensor_msgs/msg/JointState    all joints (arm and wheels): name,
                                                             position, velocity where recorded
``/base/odom``                 nav_msgs/msg/Odometry         pose of base_link in world; twist of
                                                             the base_link origin, **world axes**
``/mode``                      std_msgs/msg/String           the mode name at t = 0 and each change
``/base/wrench_command``       geometry_msgs/WrenchStamped   commanded base wrench about the base_link
                                                             origin, world axes (planar padded to 6)
``/object/odom``               nav_msgs/msg/Odometry         object runs: the object frame (its CoM)
                                                             in world, twist at the CoM, world axes
``/grasp/<ee>/wrench``         geometry_msgs/WrenchStamped   object runs: the wrench end-effector
                                                             <ee> applies to the object, about its
                                                             origin, world axes (zero before a
                                                             capture closes)
=============================  ============================  ========================================

Note on the odometry twists: REP-105 / nav_msgs conventionally express the twist in the child
frame. This package's public base state (DESIGN section 5, docs/conventions.md) is "base pose and
twist in world", and the MCAP follows it; the file's ``freeflyer_control`` metadata record says so
(``base_odom_twist_frame: world``). To get the child-frame twist, rotate both vectors by the
inverse of the pose's orientation.
"""

from __future__ import annotations

import logging
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import make_state
from freeflyer_control.sim.ros_messages import ros2_msgdef
from freeflyer_control.sim.run_record import RunRecords

log = logging.getLogger(__name__)

WORLD_FRAME = "world"
TOPIC_ROBOT_DESCRIPTION = "/robot_description"
TOPIC_TF = "/tf"
TOPIC_TF_STATIC = "/tf_static"
TOPIC_JOINT_STATES = "/joint_states"
TOPIC_BASE_ODOM = "/base/odom"
TOPIC_MODE = "/mode"
TOPIC_BASE_WRENCH = "/base/wrench_command"
TOPIC_OBJECT_ODOM = "/object/odom"
LATCHED = (TOPIC_ROBOT_DESCRIPTION, TOPIC_TF_STATIC, TOPIC_MODE)
_WRENCH_AXES = ("fx", "fy", "fz", "mx", "my", "mz")
_ZERO_COVARIANCE = [0.0] * 36


def grasp_wrench_topic(end_effector: str) -> str:
    return f"/grasp/{end_effector}/wrench"


def qos_profile(latched: bool) -> str:
    """rosbag2's ``offered_qos_profiles`` YAML (Jazzy's form, metadata version 9) of one
    publisher: reliable, keep last 1, transient local if ``latched`` else volatile; deadline,
    lifespan and lease infinite (rmw's RMW_DURATION_INFINITE)."""
    infinite = "\n    sec: 9223372036\n    nsec: 854775807"
    return (f"- history: keep_last\n  depth: 1\n  reliability: reliable\n"
            f"  durability: {'transient_local' if latched else 'volatile'}\n"
            f"  deadline:{infinite}\n  lifespan:{infinite}\n  liveliness: automatic\n"
            f"  liveliness_lease_duration:{infinite}\n  avoid_ros_namespace_conventions: false\n")


def mcap_available() -> bool:
    """True if ``mcap`` and ``mcap_ros2`` can be imported (run.mcap can be written)."""
    try:
        import mcap.writer  # noqa: F401
        import mcap_ros2.writer  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class TfJoint:
    """A URDF joint as a TF edge: ``parent`` -> ``child`` link, ``fixed`` or moving."""

    name: str
    parent: str
    child: str
    fixed: bool


def tf_tree(urdf_xml: str) -> list[TfJoint]:
    """The URDF's joints between two of its links (a root joint from a frame that is no link,
    e.g. ``world``, is the base's own: the odometry's ``world -> base_link`` replaces it)."""
    root = ET.fromstring(urdf_xml)
    links = {link.get("name") for link in root.findall("link")}
    out = []
    for joint in root.findall("joint"):
        parent, child = joint.find("parent").get("link"), joint.find("child").get("link")
        if parent in links and child in links:
            out.append(TfJoint(joint.get("name"), parent, child, joint.get("type") == "fixed"))
    return out


def _stamp(t_ns: int) -> dict:
    return {"sec": t_ns // 1_000_000_000, "nanosec": t_ns % 1_000_000_000}


def _transform(parent: str, child: str, placement: pin.SE3, stamp: dict) -> dict:
    x, y, z = placement.translation.tolist()
    qx, qy, qz, qw = pin.Quaternion(placement.rotation).coeffs().tolist()
    return {"header": {"stamp": stamp, "frame_id": parent}, "child_frame_id": child,
            "transform": {"translation": {"x": x, "y": y, "z": z},
                          "rotation": {"x": qx, "y": qy, "z": qz, "w": qw}}}


def _odometry(frame: str, stamp: dict, position, orientation, linear, angular) -> dict:
    px, py, pz = (float(v) for v in position)
    qx, qy, qz, qw = (float(v) for v in orientation)
    vx, vy, vz = (float(v) for v in linear)
    wx, wy, wz = (float(v) for v in angular)
    return {"header": {"stamp": stamp, "frame_id": WORLD_FRAME}, "child_frame_id": frame,
            "pose": {"pose": {"position": {"x": px, "y": py, "z": pz},
                              "orientation": {"x": qx, "y": qy, "z": qz, "w": qw}},
                     "covariance": _ZERO_COVARIANCE},
            "twist": {"twist": {"linear": {"x": vx, "y": vy, "z": vz}, "angular": {"x": wx, "y": wy, "z": wz}},
                      "covariance": _ZERO_COVARIANCE}}


def _wrench(stamp: dict, six) -> dict:
    fx, fy, fz, mx, my, mz = (float(v) for v in six)
    return {"header": {"stamp": stamp, "frame_id": WORLD_FRAME},
            "wrench": {"force": {"x": fx, "y": fy, "z": fz}, "torque": {"x": mx, "y": my, "z": mz}}}


def _six(values: np.ndarray, labels: list[str]) -> np.ndarray:
    """(n, 6) [fx, fy, fz, mx, my, mz] from columns labelled with (a suffix of) those names; NaN -> 0."""
    out = np.zeros((values.shape[0], 6))
    for j, label in enumerate(labels):
        out[:, _WRENCH_AXES.index(label.rsplit("_", 1)[-1])] = values[:, j]
    return np.nan_to_num(out, nan=0.0)


class _Channels:
    """The writer's channels, each registered with its QoS before its first message."""

    def __init__(self, writer):
        self.writer = writer
        self.schemas: dict[str, object] = {}
        self.seq: dict[str, int] = {}

    def write(self, topic: str, type_name: str, message: dict, t_ns: int) -> None:
        if topic not in self.seq:
            schema = self.schemas.get(type_name)
            if schema is None:
                schema = self.schemas[type_name] = self.writer.register_msgdef(type_name, ros2_msgdef(type_name))
            self._register(topic, schema)
            self.seq[topic] = 0
        self.writer.write_message(topic, self.schemas[type_name], message, log_time=t_ns, publish_time=t_ns,
                                  sequence=self.seq[topic])
        self.seq[topic] += 1

    def _register(self, topic: str, schema) -> None:
        # mcap_ros2's Writer registers a channel on first use without metadata; rosbag2 needs
        # offered_qos_profiles on it (the ROS 2 profile calls it required), so register it here
        # through the underlying mcap writer. Without those internals (another mcap-ros2-support),
        # the channel is registered plainly and rosbag2 offers its default QoS.
        inner, ids = getattr(self.writer, "_writer", None), getattr(self.writer, "_channel_ids", None)
        if inner is None or not isinstance(ids, dict):
            log.info("run.mcap: channel %s written without offered_qos_profiles (unknown mcap_ros2 writer)", topic)
            return
        ids[topic] = inner.register_channel(topic=topic, message_encoding="cdr", schema_id=schema.id,
                                            metadata={"offered_qos_profiles": qos_profile(topic in LATCHED)})


def _modes(records: RunRecords) -> list[str]:
    if records.modes:
        return records.modes
    mode = records.summary.get("mode") or records.run.get("options", {}).get("mode") or Mode.FLOATING.value
    return [mode] * records.t.size


def write_mcap(records: RunRecords, path: Path) -> Path:
    """``run.mcap`` of the run ``records`` (see the module docstring). Needs ``mcap_ros2``."""
    from mcap_ros2.writer import Writer

    ff = records.load_robot()
    obj = records.load_object()
    s = records.series
    t = records.t
    joints = records.columns["joint_positions"]
    order = [joints.index(name) for name in ff.joint_names]
    velocities = records.get("joint_velocities")
    wrench = records.get("base_wrench_world")
    wrench6 = None if wrench is None else _six(wrench, records.columns["base_wrench_world"])
    grasp = records.get("grasp_wrenches")
    grasp_topics = []
    if grasp is not None and obj is not None:
        labels = records.columns["grasp_wrenches"]
        ees = list(dict.fromkeys(label.rsplit("_", 1)[0] for label in labels))
        grasp_topics = [(grasp_wrench_topic(ee), _six(grasp[:, [i for i, lb in enumerate(labels) if lb.startswith(ee + "_")]],
                                                        [lb for lb in labels if lb.startswith(ee + "_")]))
                        for ee in ees]
    edges = tf_tree(ff.urdf_xml)
    moving = [e for e in edges if not e.fixed]
    frame = {name: ff.model.getFrameId(name, pin.BODY) for e in edges for name in (e.parent, e.child)}
    base_frame = ff.model.getFrameId(ff.base_link, pin.BODY)
    modes = _modes(records)
    data = ff.create_data()

    tmp = path.with_name(path.name + ".part")
    try:
        with open(tmp, "wb") as f:
            writer = Writer(f)
            out = _Channels(writer)
            add_metadata = getattr(writer, "add_metadata", None)  # mcap-ros2-support >= 0.6
            if add_metadata is not None:
                add_metadata("freeflyer_control", {
                    "robot": str(ff.name), "base": str(ff.base), "kind": str(records.run["kind"]),
                    "controller": str(records.summary.get("controller", "")),
                    "maneuver": str(records.summary.get("maneuver", "")),
                    "time": "simulated; t = 0 s at the epoch",
                    "base_odom_twist_frame": WORLD_FRAME,
                    "base_odom_twist": "linear velocity of the base_link origin and angular velocity, "
                                       "both expressed in world (not child_frame_id)",
                    "base_wrench_command": "about the base_link origin, world axes",
                })
            t0 = int(round(float(t[0]) * 1e9)) if t.size else 0
            out.write(TOPIC_ROBOT_DESCRIPTION, "std_msgs/msg/String", {"data": ff.urdf_xml}, t0)
            pin.framesForwardKinematics(ff.model, data, pin.neutral(ff.model))
            static = [_transform(e.parent, e.child, data.oMf[frame[e.parent]].actInv(data.oMf[frame[e.child]]),
                                 _stamp(t0)) for e in edges if e.fixed]
            if obj is not None:
                static += [_transform(obj.name, f"{obj.name}_grasp_{g.end_effector}", g.placement, _stamp(t0))
                           for g in obj.grasps]
            out.write(TOPIC_TF_STATIC, "tf2_msgs/msg/TFMessage", {"transforms": static}, t0)
            last_mode, q = None, pin.neutral(ff.model)
            for k in range(t.size):
                t_ns = int(round(float(t[k]) * 1e9))
                stamp = _stamp(t_ns)
                if modes[k] != last_mode:
                    out.write(TOPIC_MODE, "std_msgs/msg/String", {"data": modes[k]}, t_ns)
                    last_mode = modes[k]
                position, orientation = s["base_position"][k], s["base_orientation_xyzw"][k]
                angles = s["joint_positions"][k, order]
                if np.isfinite(position).all() and np.isfinite(orientation).all() and np.isfinite(angles).all():
                    base = position.copy()
                    if ff.base == "planar":
                        base[2] = 0.0
                    q = make_state(ff, base_position=base, base_orientation_xyzw=orientation / np.linalg.norm(orientation),
                                   joint_positions=angles).q
                pin.framesForwardKinematics(ff.model, data, q)
                transforms = [_transform(WORLD_FRAME, ff.base_link, data.oMf[base_frame], stamp)]
                transforms += [_transform(e.parent, e.child, data.oMf[frame[e.parent]].actInv(data.oMf[frame[e.child]]),
                                          stamp) for e in moving]
                if obj is not None and records.get("object_position") is not None:
                    pose = s["object_position"][k].tolist() + s["object_orientation_xyzw"][k].tolist()
                    transforms.append({"header": {"stamp": stamp, "frame_id": WORLD_FRAME}, "child_frame_id": obj.name,
                                       "transform": {"translation": dict(zip("xyz", pose[:3])),
                                                     "rotation": dict(zip("xyzw", pose[3:]))}})
                out.write(TOPIC_TF, "tf2_msgs/msg/TFMessage", {"transforms": transforms}, t_ns)
                out.write(TOPIC_JOINT_STATES, "sensor_msgs/msg/JointState", {
                    "header": {"stamp": stamp, "frame_id": ""}, "name": list(ff.joint_names),
                    "position": angles.tolist(),
                    "velocity": [] if velocities is None else velocities[k, order].tolist(), "effort": []}, t_ns)
                out.write(TOPIC_BASE_ODOM, "nav_msgs/msg/Odometry", _odometry(
                    ff.base_link, stamp, position, orientation, s["base_linear_velocity"][k],
                    s["base_angular_velocity"][k]), t_ns)
                if wrench6 is not None:
                    out.write(TOPIC_BASE_WRENCH, "geometry_msgs/msg/WrenchStamped", _wrench(stamp, wrench6[k]), t_ns)
                if obj is not None and records.get("object_position") is not None:
                    out.write(TOPIC_OBJECT_ODOM, "nav_msgs/msg/Odometry", _odometry(
                        obj.name, stamp, s["object_position"][k], s["object_orientation_xyzw"][k],
                        s["object_linear_velocity"][k], s["object_angular_velocity"][k]), t_ns)
                for topic, six in grasp_topics:
                    out.write(topic, "geometry_msgs/msg/WrenchStamped", _wrench(stamp, six[k]), t_ns)
            writer.finish()
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path
