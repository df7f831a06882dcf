"""controller_node loads a control law by import path at launch and flies it (launch_pytest).

What runs: sim.launch.py lockstep:=true for planar_4link at RATE Hz with
``controller:=laws_for_tests:JointPD`` (the test folder's law, found through PYTHONPATH, which
the launched processes inherit) and ``controllers:=computed_torque``: the node loads those two,
declares the law's parameters as ``controller_params.joint_pd.*``, runs it, and lets the
``controller`` parameter switch between the two and nothing else.

Needs a ROS 2 (Jazzy) install with rclpy, launch_ros and launch_pytest, and this package built
into an ament workspace; skips with the reason otherwise (see test_launch_sim.py). Run with
``-p no:launch_testing -p no:launch_ros``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from launch_support import require_ros

SHARE = require_ros("launch/sim.launch.py")

import launch_pytest  # noqa: E402
from builtin_interfaces.msg import Duration  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from probe_node import RecordingProbe, running  # noqa: E402
from rcl_interfaces.msg import ParameterType  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

import launch  # noqa: E402
from freeflyer_control.model import load_robot  # noqa: E402
from freeflyer_control.ros.conversions import JointStateReader  # noqa: E402

ROBOT = "planar_4link"
RATE = 100.0  # Hz, as the other launch tests (a loaded 2-core machine keeps up)
FF = load_robot(ROBOT)
TESTS = str(Path(__file__).resolve().parent)


@launch_pytest.fixture(scope="module")
def own_law_graph():
    path = os.environ.get("PYTHONPATH", "")
    sim = launch.actions.IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(SHARE, "launch", "sim.launch.py")),
        launch_arguments={"robot": ROBOT, "rate": str(RATE), "lockstep": "true",
                          "controller": "laws_for_tests:JointPD", "controllers": "computed_torque"}.items())
    return launch.LaunchDescription([
        launch.actions.SetEnvironmentVariable("PYTHONPATH", TESTS + (os.pathsep + path if path else "")),
        launch.actions.SetLaunchConfiguration("sigterm_timeout", "15"),
        sim, launch_pytest.actions.ReadyToTest()])


class Probe(RecordingProbe):
    def __init__(self):
        super().__init__("freeflyer_own_law_probe")
        self.watch("joint_states", JointState, depth=20000)
        self.watch("joint_effort_commands", Float64MultiArray, depth=20000)
        self.watch("diagnostics", DiagnosticArray, depth=2000)


@pytest.fixture(scope="module")
def probe():
    yield from running(Probe)


def _controller_status(probe) -> DiagnosticStatus:
    return probe.wait_for(lambda: probe.diagnostic_status("freeflyer: controller", time.monotonic() - 1.0), 30.0,
                          "no controller diagnostics")


def _values(status: DiagnosticStatus) -> dict:
    return {kv.key: kv.value for kv in status.values}


@pytest.mark.launch(fixture=own_law_graph)
def test_the_node_loads_the_law_by_import_path_and_declares_its_parameters(probe):
    # The first launch after an install compiles the plant step and the controller's kernels
    # (minutes on a busy machine, the node answering nothing meanwhile); later ones load them.
    status = probe.wait_for(lambda: (s := probe.diagnostic_status("freeflyer: controller", time.monotonic() - 1.0))
                            and s.message == "ok" and s, 600.0, "controller_node does not report status ok")
    assert _values(status)["controller"] == "joint_pd"
    kp = probe._parameter_call("/controller_node", 10.0, lambda c: c.get_parameters(["controller_params.joint_pd.kp"]))
    assert kp.values[0].type == ParameterType.PARAMETER_DOUBLE and kp.values[0].double_value == 1.0
    described = probe._parameter_call("/controller_node", 10.0,
                                      lambda c: c.describe_parameters(["controller_params.joint_pd.kp"]))
    d = described.descriptors[0]
    assert d.read_only and d.floating_point_range[0].to_value == 100.0 and "joint stiffness" in d.description


@pytest.mark.launch(fixture=own_law_graph)
def test_the_loaded_law_flies_a_joint_trajectory(probe):
    """joint1 +0.2 rad over 2 s: the law's computed torque brings it there (10 mrad, a PD of
    1 rad/s on the reference's velocity feed-forward)."""
    reader = JointStateReader(FF.joint_names)
    start = reader.read_msg(probe.messages("joint_states")[-1][1]).positions[:4]
    pub = probe.create_publisher(JointTrajectory, "joint_trajectory", 10)
    probe.wait_for(lambda: pub.get_subscription_count() > 0, 10.0, "nobody subscribes /joint_trajectory")
    time.sleep(0.3)  # discovery both ways (see test_launch_lockstep's e-stop test)
    msg = JointTrajectory()
    msg.joint_names = list(FF.arm_joint_names)
    goal = [float(start[0] + 0.2)] + [float(x) for x in start[1:]]
    for t, q in ((0.0, [float(x) for x in start]), (2.0, goal)):
        point = JointTrajectoryPoint(positions=q, velocities=[0.0] * 4)
        point.time_from_start = Duration(sec=int(t), nanosec=0)
        msg.points.append(point)
    pub.publish(msg)
    reached = probe.wait_for(
        lambda: abs(reader.read_msg(probe.messages("joint_states")[-1][1]).positions[0] - goal[0]) < 0.01, 20.0,
        "joint1 did not reach the trajectory's end under the loaded law")
    assert reached
    assert _values(_controller_status(probe))["controller"] == "joint_pd"


@pytest.mark.launch(fixture=own_law_graph)
def test_switching_chooses_among_the_loaded_laws_and_never_loads_one(probe):
    switched = probe.set_remote_parameter("/controller_node", "controller", "computed_torque")
    assert switched.successful, switched.reason
    probe.wait_for(lambda: _values(_controller_status(probe)).get("controller") == "computed_torque", 10.0,
                   "the controller did not switch to computed_torque")
    refused = probe.set_remote_parameter("/controller_node", "controller", "laws_for_tests:Raises")
    assert not refused.successful and "is not loaded" in refused.reason
    back = probe.set_remote_parameter("/controller_node", "controller", "laws_for_tests:JointPD")
    assert back.successful, back.reason  # the import path it was loaded by names it too
