"""`ros2 bag play run.mcap` gives rviz what it draws, with no robot_state_publisher running.

Under a sourced ROS 2 only (skips otherwise): a run.mcap written without ROS is played by
rosbag2, and a plain rclpy node, as rviz would, receives the robot description (latched: it
subscribes after the bag started) and resolves every link from ``world`` through /tf and
/tf_static, where Pinocchio puts it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest

for _module in ("rclpy", "tf2_ros", "mcap_ros2"):
    pytest.importorskip(_module, reason=f"{_module} not available: needs a sourced ROS 2 (Jazzy) and the 'mcap' extra")
if shutil.which("ros2") is None:
    pytest.skip("no ros2 command: source a ROS 2 (Jazzy) install", allow_module_level=True)

import pinocchio as pin  # noqa: E402
import rclpy  # noqa: E402
import tf2_ros  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from freeflyer_control.sim.writers import write_outputs  # noqa: E402
from freeflyer_control.sim.run_record import read_run  # noqa: E402
from freeflyer_control.sim.runner import SimConfig, run_simulation  # noqa: E402


@pytest.fixture(scope="module")
def bag(tmp_path_factory):
    out = tmp_path_factory.mktemp("bag")
    # Joint 1 turns from 0 s to 10 s (Wilde): the arm is somewhere else at every stamp.
    write_outputs(run_simulation(SimConfig(robot="spatial_6link", maneuver="wilde", duration=8.0), fast=False), out)
    return out


def test_ros2_bag_play_drives_the_robot_model_without_robot_state_publisher(bag):
    os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))
    records = read_run(bag)
    ff = records.load_robot()
    links = [link.get("name") for link in ET.fromstring(ff.urdf_xml).findall("link")]
    rclpy.init()
    node = rclpy.create_node("bag_play_probe")
    descriptions = []
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    node.create_subscription(String, "robot_description", descriptions.append, latched)
    buffer = tf2_ros.Buffer()
    tf2_ros.TransformListener(buffer, node)
    play = subprocess.Popen(["ros2", "bag", "play", str(bag / "run.mcap")], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60.0
        resolved: set[str] = set()
        while time.monotonic() < deadline and not (descriptions and resolved == set(links)):
            rclpy.spin_once(node, timeout_sec=0.1)
            for link in links:
                if buffer.can_transform("world", link, rclpy.time.Time()):
                    resolved.add(link)
        assert descriptions and descriptions[0].data == ff.urdf_xml, "no latched /robot_description"
        assert resolved == set(links), f"not reachable from world: {sorted(set(links) - resolved)}"
        # Where the latest transform puts the end-effector is where Pinocchio puts it at that stamp.
        tf = buffer.lookup_transform("world", "ee_link", rclpy.time.Time())
        t = tf.header.stamp.sec + tf.header.stamp.nanosec * 1e-9
        k = int(np.argmin(np.abs(records.t - t)))
        from freeflyer_control.physics.state import make_state

        q = make_state(ff, base_position=records.series["base_position"][k],
                       base_orientation_xyzw=records.series["base_orientation_xyzw"][k],
                       joint_positions=records.series["joint_positions"][k]).q
        data = ff.create_data()
        pin.framesForwardKinematics(ff.model, data, q)
        p = tf.transform.translation
        # The tf buffer composes the chain in doubles; the stamps match to the nanosecond.
        assert np.allclose([p.x, p.y, p.z], data.oMf[ff.frame_id("ee_link")].translation, atol=1e-9)
    finally:
        if play.poll() is None:
            os.killpg(play.pid, signal.SIGINT)
            play.wait(30)
        node.destroy_node()
        rclpy.shutdown()
