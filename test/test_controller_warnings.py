"""The control laws' one-time warnings reach the controller node through ControllerServer
(logged once, listed on /diagnostics): resolved rate's "task rows > joints" and the impedance
law's singular Lambda*. Also: the node's mode validation under the impedance law."""

from __future__ import annotations

import pinocchio as pin
from conftest import robot, two_link_planar_robot

from freeflyer_control.control.loop import CONTROLLERS
from freeflyer_control.physics.state import make_state
from freeflyer_control.ros.conversions import fields_from_state
from freeflyer_control.runtime.controller_server import ControllerServer

RATE = 100.0


def _running_server(ff, controller: str) -> ControllerServer:
    """A server fed one state (started), with a pose target for ee_link 5 cm out (with its
    attitude: 3 task rows on the 2-joint arm)."""
    server = ControllerServer(ff, rate=RATE, controller=controller)
    state = make_state(ff, joint_positions={"joint1": 0.3, "joint2": 1.0})
    server.fields = fields_from_state(ff, state)  # re-sent every tick (the same measured state)
    _feed(server, 0.0)
    assert server.tick(0.0).status == "ok"
    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, state.q)
    pose = data.oMf[ff.frame_id("ee_link")]
    server.set_ee_target("ee_link", pose.translation + [0.05, 0.0, 0.0], pin.Quaternion(pose.rotation).coeffs())
    return server


def _feed(server, now):
    f = server.fields
    assert server.on_joint_state(f.joint_names, f.joint_positions, f.joint_velocities, now)
    assert server.on_base_odometry(f.base, now)


def _tick_a_few(server, n=5):
    start = server.stats.ticks
    for k in range(start, start + n):
        _feed(server, k / RATE)
        out = server.tick(k / RATE)
        assert out.status == "ok", out.reason


def test_resolved_rate_tall_task_warning_is_handed_to_the_node_once():
    server = _running_server(two_link_planar_robot(), "resolved_rate")
    _tick_a_few(server)
    assert len(server.warnings) == 1 and server.warnings[0].startswith("ee_link: 3 task rows (vx, vy, wz), 2 joints")
    assert server.new_warnings() == server.warnings  # the node logs it now ...
    _tick_a_few(server)
    assert server.new_warnings() == []  # ... and never again
    assert len(server.warnings) == 1  # /diagnostics lists it for as long as the node runs


def test_impedance_singular_lambda_warning_is_handed_to_the_node_once():
    """Floating mode, the 2-joint arm, a pose target: Lambda* is 3 x 3 of rank 2."""
    server = _running_server(two_link_planar_robot(), "impedance")
    _tick_a_few(server)
    assert server.new_warnings() == ["impedance: Lambda* of 'ee_link' is singular in floating mode (a kinematic "
                                     "singularity of the mode): task forces solved by least squares, the singular "
                                     "direction gets no stiffness; move away from the singular pose"]
    _tick_a_few(server)
    assert server.new_warnings() == []


def test_impedance_is_a_controller_choice_and_the_node_accepts_every_mode_under_it():
    assert "impedance" in CONTROLLERS  # the node's `controller` parameter takes its choices from here
    server = ControllerServer(robot("spatial_7dof"), rate=RATE, controller="impedance")
    assert server.validate_mode("rotation-floating") is None  # the wheels hold the attitude
    assert server.validate_mode("flying") is None
    server.set_controller("computed_torque")
    assert server.validate_mode("rotation-floating") is None
