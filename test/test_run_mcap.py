"""run.mcap as Foxglove and rosbag2 read it: robot description, a complete TF tree, QoS, objects.

Read back with the ``mcap`` reader and mcap_ros2's decoder (what Foxglove and rosbag2 decode):
every message decodes; at every stamp every URDF link is reachable from ``world`` through /tf and
/tf_static, and the composed transforms are Pinocchio's placements of the recorded configuration.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

pytest.importorskip("mcap_ros2", reason="run.mcap needs the optional mcap-ros2-support package (the 'mcap' extra)")

from mcap.reader import make_reader  # noqa: E402
from mcap_ros2.decoder import DecoderFactory  # noqa: E402

from freeflyer_control.physics.state import make_state  # noqa: E402
from freeflyer_control.sim.writers import write_outputs  # noqa: E402
from freeflyer_control.sim.run_record import read_run  # noqa: E402
from freeflyer_control.sim.runner import SimConfig, run_simulation  # noqa: E402

ROBOTS = ("planar_4link", "spatial_6link")


@pytest.fixture(scope="module", params=ROBOTS)
def robot_run(request, tmp_path_factory):
    """A short Wilde run of a bundled robot, written as `freeflyer sim` writes it."""
    out = tmp_path_factory.mktemp(request.param)
    result = run_simulation(SimConfig(robot=request.param, maneuver="wilde", duration=3.0, log_rate=20.0), fast=False)
    write_outputs(result, out)
    return out


@pytest.fixture(scope="module")
def object_run(tmp_path_factory):
    from freeflyer_control.sim.cooperative import ObjectSimConfig, run_object_simulation, write_object_outputs

    out = tmp_path_factory.mktemp("object")
    result = run_object_simulation(ObjectSimConfig(robot="dual_arm_planar", obj="planar_box", duration=2.0,
                                                   log_rate=20.0))
    write_object_outputs(result, out, plots=False)
    return out


def messages(folder):
    """{topic: [(log_time ns, decoded message)]} and {topic: channel}, every message decoded."""
    by_topic, channels = {}, {}
    with open(folder / "run.mcap", "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        assert reader.get_header().profile == "ros2"
        for schema, channel, message, decoded in reader.iter_decoded_messages():
            assert schema.encoding == "ros2msg" and channel.message_encoding == "cdr"
            by_topic.setdefault(channel.topic, []).append((message.log_time, decoded))
            channels[channel.topic] = channel
    return by_topic, channels


def se3(transform) -> pin.SE3:
    tr, rot = transform.translation, transform.rotation
    return pin.SE3(pin.Quaternion(rot.w, rot.x, rot.y, rot.z).normalized().matrix(), np.array([tr.x, tr.y, tr.z]))


def test_the_robot_description_is_the_urdf_at_the_first_stamp_and_latched(robot_run):
    by_topic, channels = messages(robot_run)
    records = read_run(robot_run)
    (t, description), = by_topic["/robot_description"]
    assert t == int(round(records.t[0] * 1e9)) and description.data == records.load_robot().urdf_xml
    for topic in ("/robot_description", "/tf_static", "/mode"):
        assert "durability: transient_local" in channels[topic].metadata["offered_qos_profiles"]
    assert "durability: volatile" in channels["/tf"].metadata["offered_qos_profiles"]


def test_every_link_is_reachable_from_world_at_every_stamp_where_pinocchio_puts_it(robot_run):
    by_topic, _ = messages(robot_run)
    records = read_run(robot_run)
    ff = records.load_robot()
    links = {link.get("name") for link in ET.fromstring(ff.urdf_xml).findall("link")}
    (_, static), = by_topic["/tf_static"]
    static_edges = {tf.child_frame_id: (tf.header.frame_id, se3(tf.transform)) for tf in static.transforms}
    data = ff.create_data()
    order = [records.columns["joint_positions"].index(n) for n in ff.joint_names]
    assert len(by_topic["/tf"]) == records.t.size
    for k, (t_ns, tf_msg) in enumerate(by_topic["/tf"]):
        assert t_ns == int(round(records.t[k] * 1e9))
        assert all(tf.header.stamp.sec * 10**9 + tf.header.stamp.nanosec == t_ns for tf in tf_msg.transforms)
        edges = dict(static_edges)
        edges.update({tf.child_frame_id: (tf.header.frame_id, se3(tf.transform)) for tf in tf_msg.transforms})

        def in_world(frame, depth=0):
            assert depth < 64, f"TF loop at {frame}"
            if frame == "world":
                return pin.SE3.Identity()
            assert frame in edges, f"{frame} is not reachable from world at t = {t_ns} ns"
            parent, placement = edges[frame]
            return in_world(parent, depth + 1) * placement

        q = make_state(ff, base_position=records.series["base_position"][k],
                       base_orientation_xyzw=records.series["base_orientation_xyzw"][k],
                       joint_positions=records.series["joint_positions"][k, order]).q
        pin.framesForwardKinematics(ff.model, data, q)
        for link in links:
            expected = data.oMf[ff.model.getFrameId(link, pin.BODY)]
            # Doubles through CDR exactly; composing a chain of six transforms costs round-off.
            assert np.allclose(in_world(link).homogeneous, expected.homogeneous, atol=1e-12), link


def test_joint_states_odometry_and_mode_carry_the_records(robot_run):
    by_topic, _ = messages(robot_run)
    records = read_run(robot_run)
    n = records.t.size
    assert len(by_topic["/joint_states"]) == len(by_topic["/base/odom"]) == len(by_topic["/base/wrench_command"]) == n
    _, last = by_topic["/joint_states"][-1]
    assert np.array_equal(last.position, records.series["joint_positions"][-1])
    assert [m.data for _, m in by_topic["/mode"]] == ["floating"]


def test_object_runs_add_the_object_odometry_its_frames_and_the_grasp_wrenches(object_run):
    by_topic, _ = messages(object_run)
    records = read_run(object_run)
    n = records.t.size
    for ee in ("left_ee_link", "right_ee_link"):
        wrenches = by_topic[f"/grasp/{ee}/wrench"]
        assert len(wrenches) == n
        # The arms squeeze the box (5 N): each grasp pushes on it.
        force = wrenches[-1][1].wrench.force
        assert np.hypot(force.x, force.y) > 1.0
    odom = by_topic["/object/odom"]
    assert len(odom) == n and odom[0][1].child_frame_id == "planar_box"
    (_, static), = by_topic["/tf_static"]
    assert {"planar_box_grasp_left_ee_link", "planar_box_grasp_right_ee_link"} <= {
        tf.child_frame_id for tf in static.transforms}
    assert any(tf.child_frame_id == "planar_box" for tf in by_topic["/tf"][0][1].transforms)


def ros2_cli() -> str | None:
    return shutil.which("ros2") if os.environ.get("ROS_DISTRO") else None


@pytest.mark.skipif(ros2_cli() is None, reason="needs a sourced ROS 2 (ros2 on PATH, ROS_DISTRO set)")
def test_ros2_bag_info_accepts_the_file_and_lists_its_topics(robot_run):
    proc = subprocess.run(["ros2", "bag", "info", str(robot_run / "run.mcap")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    for topic in ("/robot_description", "/tf_static", "/tf", "/joint_states", "/base/odom"):
        assert topic in proc.stdout
