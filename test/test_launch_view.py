"""launch/view.launch.py stands alone: with nothing else running, TF has world -> base_link and
every link of the robot, at the robot's ready pose.

What runs: view.launch.py robot:=spatial_6link rviz:=false (source defaults to static:
robot_state_publisher, a static world -> base_link, joint_state_publisher holding the ready
pose). A probe in this process looks the frames up through tf2, as rviz does.

Needs a ROS 2 (Jazzy) install with rclpy, launch_ros, launch_pytest, tf2_ros and
joint_state_publisher, and this package built into an ament workspace; skips with the reason
otherwise (see test_launch_sim.py for the plugin options).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from launch_support import require_ros

SHARE = require_ros("launch/view.launch.py")

import launch_pytest  # noqa: E402
import pinocchio as pin  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from probe_node import RecordingProbe, running  # noqa: E402
from rclpy.duration import Duration  # noqa: E402
from rclpy.time import Time  # noqa: E402
from tf2_ros.buffer import Buffer  # noqa: E402
from tf2_ros.transform_listener import TransformListener  # noqa: E402

import launch  # noqa: E402
from freeflyer_control.model import load_robot  # noqa: E402
from freeflyer_control.physics.state import make_state  # noqa: E402

ROBOT = "spatial_6link"
FF = load_robot(ROBOT)
# A TF chain is a product of a few rotations written as float64 (and sent as float64): the
# transform agrees with Pinocchio's forward kinematics to round-off.
TF_TOL = 1e-9


@launch_pytest.fixture(scope="module")
def view_graph():
    view = launch.actions.IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(SHARE, "launch", "view.launch.py")),
        launch_arguments={"robot": ROBOT, "rviz": "false"}.items())
    return launch.LaunchDescription([view, launch_pytest.actions.ReadyToTest()])


class Probe(RecordingProbe):
    """Looks frames up through tf2 (a TransformListener on this node)."""

    def __init__(self):
        super().__init__("freeflyer_view_probe")
        self.buffer = Buffer()
        self.listener = TransformListener(self.buffer, self, spin_thread=False)

    def transform(self, target: str, source: str, timeout: float = 30.0):
        def lookup():
            if self.buffer.can_transform(target, source, Time(), Duration(seconds=0.1)):
                return self.buffer.lookup_transform(target, source, Time())
            return None
        return self.wait_for(lookup, timeout, f"no TF {target} -> {source}")


@pytest.fixture(scope="module")
def probe():
    yield from running(Probe)


@pytest.mark.launch(fixture=view_graph)
def test_view_alone_publishes_world_to_base_link_at_the_origin(probe):
    tf = probe.transform("world", FF.base_link).transform
    assert (tf.translation.x, tf.translation.y, tf.translation.z) == (0.0, 0.0, 0.0)
    assert (tf.rotation.x, tf.rotation.y, tf.rotation.z, tf.rotation.w) == (0.0, 0.0, 0.0, 1.0)


@pytest.mark.launch(fixture=view_graph)
def test_view_alone_shows_every_link_at_the_ready_pose(probe):
    state = make_state(FF, joint_positions=FF.ready_pose)
    data = FF.create_data()
    pin.framesForwardKinematics(FF.model, data, state.q)
    links = [f.name for f in FF.model.frames if f.type == pin.FrameType.BODY]
    for link in links:
        tf = probe.transform("world", link).transform
        expected = data.oMf[FF.frame_id(link)].translation
        got = np.array([tf.translation.x, tf.translation.y, tf.translation.z])
        np.testing.assert_allclose(got, expected, rtol=0, atol=TF_TOL, err_msg=link)
