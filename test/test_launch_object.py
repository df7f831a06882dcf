"""Integration tests of a held object and of a capture request: sim.launch.py object:=planar_box.

What runs: sim.launch.py for dual_arm_planar holding planar_box (plant_node in closed chains,
controller_node with the cooperative law, gjm_node, robot_state_publisher) at RATE Hz, plus a
second plant_node in the namespace /capture whose planar_box floats free (object_free), for the
capture service. A probe node in this process records what they publish.

Run with ``-p no:launch_testing -p no:launch_ros`` (see docs/ros.md, "Tests"). Needs a ROS 2
(Jazzy) install and this package built into an ament workspace; skips with the reason otherwise.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
from launch_support import require_ros

SHARE = require_ros("launch/sim.launch.py")

import launch_pytest  # noqa: E402
import launch_ros.actions  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import PoseStamped, WrenchStamped  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from probe_node import RecordingProbe, running  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402
from visualization_msgs.msg import Marker  # noqa: E402

import launch  # noqa: E402

ROBOT, OBJECT = "dual_arm_planar", "planar_box"
EES = ("left_ee_link", "right_ee_link")
# Hz, plant and controller: the closed-chain plant and the cooperative law cost more per step
# than the open chain; 100 Hz leaves a loaded 2-core machine room for the probe.
RATE = 100.0
# The object's move: 3 cm by 2 cm, inside the arms' closed-chain workspace from the held pose.
MOVE = np.array([0.03, 0.02, 0.0])


@launch_pytest.fixture(scope="module")
def object_graph():
    sim = launch.actions.IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(SHARE, "launch", "sim.launch.py")),
        launch_arguments={"robot": ROBOT, "object": OBJECT, "rate": str(RATE)}.items())
    free_plant = launch_ros.actions.Node(
        package="freeflyer_control", executable="plant_node", name="plant_node", namespace="capture",
        output="screen", parameters=[{"robot": ROBOT, "object": OBJECT, "object_free": True, "rate": 50.0}])
    return launch.LaunchDescription([
        launch.actions.SetLaunchConfiguration("sigterm_timeout", "15"), sim, free_plant,
        launch_pytest.actions.ReadyToTest()])


class Probe(RecordingProbe):
    def __init__(self):
        super().__init__("freeflyer_object_probe")
        self.watch("object/odom", Odometry)
        self.watch("object/marker", Marker)
        self.watch("tf", TFMessage)
        self.watch("capture/diagnostics", DiagnosticArray)
        for ee in EES:
            self.watch(f"grasp_wrench/{ee}", WrenchStamped)


@pytest.fixture(scope="module")
def probe():
    yield from running(Probe)


def object_position(msg: Odometry) -> np.ndarray:
    p = msg.pose.pose.position
    return np.array([p.x, p.y, p.z])


@pytest.mark.launch(fixture=object_graph)
def test_object_odometry_tf_and_marker_are_published(probe):
    odom = probe.wait_for(lambda: probe.messages("object/odom"), 60.0, "no /object/odom")[-1][1]
    assert (odom.header.frame_id, odom.child_frame_id) == ("world", OBJECT)
    assert np.all(np.isfinite(object_position(odom)))
    probe.wait_for(lambda: any(tf.header.frame_id == "world" and tf.child_frame_id == OBJECT
                               for _, m in probe.messages("tf") for tf in m.transforms), 30.0,
                   f"no TF world -> {OBJECT}")
    marker = probe.wait_for(lambda: probe.messages("object/marker"), 30.0, "no /object/marker")[-1][1]
    assert marker.header.frame_id == OBJECT and marker.type == Marker.CUBE
    # planar_box.yaml's size, m.
    assert (marker.scale.x, marker.scale.y, marker.scale.z) == pytest.approx((0.1, 0.15, 0.1))


@pytest.mark.launch(fixture=object_graph)
def test_grasp_wrenches_are_published_per_end_effector_in_its_frame(probe):
    for ee in EES:
        msg = probe.wait_for(lambda e=ee: probe.messages(f"grasp_wrench/{e}"), 30.0, f"no /grasp_wrench/{ee}")[-1][1]
        assert msg.header.frame_id == ee
        f = msg.wrench.force
        assert np.all(np.isfinite([f.x, f.y, f.z]))


@pytest.mark.launch(fixture=object_graph)
def test_object_moves_toward_object_target(probe):
    start = object_position(probe.wait_for(lambda: probe.messages("object/odom"), 60.0, "no /object/odom")[-1][1])
    goal = start + MOVE
    pub = probe.create_publisher(PoseStamped, "object_target", 10)
    msg = PoseStamped()
    msg.header.frame_id = "world"
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = goal.tolist()
    msg.pose.orientation.w = 1.0
    t0 = time.monotonic()

    def close_enough():
        pub.publish(msg)  # again and again: the subscription may match after the first one
        latest = [m for t, m in probe.messages("object/odom") if t > t0]
        # Position gain 2/s: in simulated seconds the error halves every ~0.35 s; a loaded machine
        # runs the graph slower than real time, hence the long wait. Within 30 % of the 3.6 cm.
        return latest and np.linalg.norm(object_position(latest[-1]) - goal) \
            < 0.3 * np.linalg.norm(MOVE)

    probe.wait_for(close_enough, 90.0,
                   lambda: f"object at {object_position(probe.messages('object/odom')[-1][1])}, target {goal}")


@pytest.mark.launch(fixture=object_graph)
def test_internal_force_is_settable_within_its_range(probe):
    def set_force(value: float):
        return probe._parameter_call("/controller_node", 10.0, lambda c: c.set_parameters(
            [Parameter("internal_force", Parameter.Type.DOUBLE, value)])).results[0]

    assert set_force(8.0).successful
    refused = set_force(1000.0)
    assert not refused.successful


@pytest.mark.launch(fixture=object_graph)
def test_holding_an_object_rotation_floating_is_accepted(probe):
    # dual_arm_planar has a wheel: the cooperative law holds the attitude with it.
    result = probe.set_remote_parameter("/controller_node", "mode", "rotation-floating")
    assert result.successful, result.reason


@pytest.mark.launch(fixture=object_graph)
def test_capture_is_refused_while_no_end_effector_is_near(probe):
    answer = probe.call("/capture/plant_node/capture", timeout=30.0)
    assert not answer.success
    assert answer.message.startswith("capture refused: end-effector 'left_ee_link' is ")
    assert answer.message.endswith("m from the grasp frame of 'planar_box' (tolerance 0.005 m); approach first")

    def capture_diagnostics():
        for _, arr in reversed(probe.messages("capture/diagnostics")):
            for status in arr.status:
                values = {kv.key: kv.value for kv in status.values}
                if status.hardware_id == "plant_node" and values.get("capture_state") == "free" \
                        and "capture_refusal" in values:
                    return values
        return None

    values = probe.wait_for(capture_diagnostics, 30.0, "no capture state on /diagnostics")
    assert values["capture_refusal"].startswith("capture refused: end-effector 'left_ee_link'")


@pytest.mark.launch(fixture=object_graph)
def test_capture_of_an_object_already_held_is_refused(probe):
    answer = probe.call("/plant_node/capture", timeout=30.0)
    assert (answer.success, answer.message) == (
        False, "capture refused: 'planar_box' is already held; reset the plant to let it float free again")
