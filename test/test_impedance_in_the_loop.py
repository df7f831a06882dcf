"""The impedance controller as a control law of ControlLoop, in lockstep with the simulated
plant (the path of ``freeflyer sim --controller impedance``): released from a displacement, the
end-effector rings at the commanded natural frequency and damping ratio (within 10 %) in
floating, flying and rotation-floating mode (there with the attitude held by the wheels); the
law's refusals (joint maneuvers, several end-effectors) are one line each; mode switches under it,
into and out of rotation-floating too, are bumpless.

The plant is the package's CF4 integrator at the simulation's default 250 Hz with the
controller's effort held over each step (zero-order hold). At w = 5 rad/s the hold delays the
loop by dt/2 = 2 ms, a phase lag of w dt / 2 = 0.01 rad: it shifts the damping ratio by about
w dt / 2 = 0.01 (5 % of zeta = 0.2) and the frequency by far less, inside the 10 % band.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import robot
from test_impedance import DURATION_RF, OFFSET_RF, W_RF, _frequency_and_damping

from freeflyer_control.control.impedance import ImpedanceGains
from freeflyer_control.control.loop import ControlLoop
from freeflyer_control.control.maneuvers import ExternalReferences, make_maneuver
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.plant import Plant
from freeflyer_control.physics.state import make_state

W, ZETA = 5.0, 0.2  # underdamped: period (1.28 s) and decay both measurable in 3 s
RATE, DURATION = 250.0, 3.0
OFFSET = 0.03  # m, along world x


def _release_in_the_loop(ff, mode, w=W, offset=OFFSET, duration=DURATION, attitudes=None):
    """Error history (n, 3), world axes, m, after the target jumps ``offset`` from the resting
    end-effector; ControlLoop ticks, the plant integrates, as in freeflyer sim. ``attitudes``,
    a list, also receives the base rotation every tick."""
    refs = ExternalReferences()
    loop = ControlLoop(ff, refs, controller="impedance", mode=mode, base_actuation="ideal",
                       impedance_gains=ImpedanceGains(w, ZETA, null_damping=2.0))
    state = make_state(ff, joint_positions=ff.ready_pose)
    loop.start(state)
    frame = ff.end_effectors[0]
    pose = refs.ee0[frame]
    target = pose.translation + np.array([offset, 0.0, 0.0])
    refs.set_ee_target(frame, target, pin.Quaternion(pose.rotation).coeffs())
    dt = 1.0 / RATE
    plant = Plant(ff, state, dt)
    data, fid = ff.create_data(), ff.frame_id(frame)
    errors = []
    for k in range(int(duration * RATE)):
        actuation, _ = loop.tick(k * dt, plant.state, dt)
        plant.step(actuation)
        pin.framesForwardKinematics(ff.model, data, plant.state.q)
        errors.append(target - data.oMf[fid].translation)
        if attitudes is not None:
            attitudes.append(data.oMi[1].rotation.copy())
    return np.array(errors)


@pytest.mark.parametrize("mode", [Mode.FLOATING, Mode.FLYING])
def test_released_end_effector_in_the_control_loop_rings_at_the_commanded_frequency_and_damping(mode):
    e = _release_in_the_loop(robot("spatial_7dof"), mode)
    wn, zeta = _frequency_and_damping(e[:, 0], 1.0 / RATE)
    assert abs(wn - W) < 0.1 * W, wn
    assert abs(zeta - ZETA) < 0.1 * ZETA, zeta


def test_joint_maneuvers_are_refused_for_impedance_in_one_line_with_the_fix():
    with pytest.raises(ValueError, match="maneuver 'wilde' gives joint references; impedance needs an "
                                         "end-effector maneuver .*use --controller computed_torque"):
        ControlLoop(robot("planar_4link"), make_maneuver("wilde"), controller="impedance")


def test_released_end_effector_in_the_control_loop_rings_at_the_commanded_frequency_with_the_attitude_held():
    """Rotation-floating: gains and step inside the wheels' authority (test_impedance.W_RF);
    the wheels hold the base attitude at the maneuver's base reference (the start pose)."""
    attitudes = []
    e = _release_in_the_loop(robot("spatial_7dof"), Mode.ROTATION_FLOATING, W_RF, OFFSET_RF, DURATION_RF, attitudes)
    wn, zeta = _frequency_and_damping(e[:, 0], 1.0 / RATE)
    assert abs(wn - W_RF) < 0.1 * W_RF, wn
    assert abs(zeta - ZETA) < 0.1 * ZETA, zeta
    drift = max(np.linalg.norm(pin.log3(attitudes[0].T @ R)) for R in attitudes)
    # Held by the attitude loop against the zero-order hold's 4 ms lag: measured ~1e-5 rad.
    assert drift < 1e-3, drift


def test_impedance_flies_rotation_floating_from_the_start_on_request_and_on_controller_switch():
    ff = robot("spatial_7dof")
    assert ControlLoop(ff, make_maneuver("ee-point"), controller="impedance", mode="rotation-floating").mode \
        is Mode.ROTATION_FLOATING
    loop = ControlLoop(ff, make_maneuver("ee-point"), controller="impedance", mode="floating")
    assert loop.request_mode("rotation-floating", 1.0, "test").accepted
    loop = ControlLoop(ff, make_maneuver("ee-point"), mode="rotation-floating")
    loop.set_controller("impedance")
    assert loop.controller == "impedance"


def test_a_robot_with_two_end_effectors_is_refused_with_the_ee_option():
    with pytest.raises(ValueError, match="drives one end-effector; robot 'dual_arm_planar' has 2 .*--ee"):
        ControlLoop(robot("dual_arm_planar"), make_maneuver("ee-point"), controller="impedance")


def test_ee_contact_is_refused_for_the_controllers_that_cannot_press():
    with pytest.raises(ValueError, match="presses a contact with a set force; resolved_rate cannot: "
                                         "use --controller impedance"):
        ControlLoop(robot("planar_4link"), make_maneuver("ee-contact"), controller="resolved_rate")


@pytest.mark.parametrize("before, after", [("floating", "flying"), ("floating", "rotation-floating"),
                                           ("rotation-floating", "flying")])
def test_mode_switch_under_impedance_is_bumpless(before, after):
    """A switch at 1 s with a 0.5 s blend: the largest tick-to-tick change of the arm
    torques across the switch is no larger than twice the largest one before it (a step
    would be the size of the torques themselves)."""
    ff = robot("spatial_7dof")
    loop = ControlLoop(ff, make_maneuver("ee-point"), controller="impedance", mode=before,
                       base_actuation="ideal", blend_time=0.5)
    state = make_state(ff, joint_positions=ff.ready_pose)
    loop.start(state)
    dt = 1.0 / RATE
    plant = Plant(ff, state, dt)
    torques = []
    for k in range(int(2.0 * RATE)):
        if k == int(1.0 * RATE):
            assert loop.request_mode(after, k * dt, "test").accepted
        actuation, info = loop.tick(k * dt, plant.state, dt)
        torques.append(info.effort.arm_torques.copy())
        plant.step(actuation)
    steps = np.abs(np.diff(np.array(torques), axis=0)).max(axis=1)
    switch = int(1.0 * RATE)
    before, across = steps[switch - 50: switch - 1].max(), steps[switch - 1: switch + 10].max()
    assert across <= 2.0 * before + 1e-9, (across, before)


def test_the_sim_launch_file_offers_every_controller_of_the_control_loop():
    """launch/sim.launch.py keeps its own copy of the choices (it must import without this
    package's dependencies); read it without ROS and compare."""
    import ast
    from pathlib import Path

    from freeflyer_control.control.loop import CONTROLLERS

    source = (Path(__file__).resolve().parents[1] / "launch" / "sim.launch.py").read_text()
    assigned = {node.targets[0].id: node.value for node in ast.parse(source).body
                if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)}
    assert ast.literal_eval(assigned["CONTROLLERS"]) == CONTROLLERS
