"""Objects beside robots: bundled objects are held by their robots, non-physical or unreachable
ones are refused with the fix, and an attached object is part of the robot's inertia."""

from __future__ import annotations

import copy

import numpy as np
import pinocchio as pin
import pytest
import yaml
from conftest import robot

from freeflyer_control.errors import ConfigError, ModelError
from freeflyer_control.model.objects import (
    attach_object,
    grasp_frame_name,
    load_object,
    object_config_dir,
    object_names,
    parse_object,
)
from freeflyer_control.physics.grasp_pose import REACH_TOL, check_object
from freeflyer_control.physics.state import make_state

PAIRS = [("dual_arm_planar", "planar_box"), ("spatial_dual_arm", "spatial_box")]


def raw(name):
    return yaml.safe_load((object_config_dir() / f"{name}.yaml").read_text())


def test_bundled_objects_are_two_boxes_to_hold_and_two_targets_to_capture():
    assert object_names() == ["planar_box", "planar_target", "spatial_box", "target_satellite"]
    assert load_object("planar_target").initial_state is not None
    assert load_object("target_satellite").initial_state.frame == "servicer"
    assert load_object("planar_box").base == "planar"
    assert load_object("spatial_box").base == "spatial"


@pytest.mark.parametrize("robot_name,obj_name", PAIRS)
def test_bundled_object_is_held_with_every_end_effector_on_its_grasp_frame(robot_name, obj_name):
    ff, obj = robot(robot_name), load_object(obj_name)
    angles = check_object(ff, obj)
    held = attach_object(ff, obj)
    data = held.create_data()
    pin.framesForwardKinematics(held.model, data, make_state(held, joint_positions=angles).q)
    for g in obj.grasps:
        ee = data.oMf[held.frame_id(g.end_effector)]
        grasp = data.oMf[held.frame_id(grasp_frame_name(obj, g.end_effector))]
        # Grasp 1 defines the object pose (exact); the others come from inverse kinematics,
        # which check_object accepts within REACH_TOL.
        assert np.abs(ee.translation - grasp.translation).max() < REACH_TOL
        assert np.abs(pin.log3(ee.rotation @ grasp.rotation.T)).max() < REACH_TOL


def test_attached_object_adds_its_mass_and_moves_the_system_com():
    ff, obj = robot("dual_arm_planar"), load_object("planar_box")
    angles = check_object(ff, obj)
    held = attach_object(ff, obj)
    assert held.total_mass == pytest.approx(ff.total_mass + obj.mass, rel=1e-12)
    q = make_state(ff, joint_positions=angles).q
    com_robot = pin.centerOfMass(ff.model, ff.create_data(), q)
    com_held = pin.centerOfMass(held.model, held.create_data(), q)
    data = held.create_data()
    pin.framesForwardKinematics(held.model, data, q)
    p_obj = data.oMf[held.frame_id(obj.name)].translation
    expected = (ff.total_mass * com_robot + obj.mass * p_obj) / held.total_mass
    np.testing.assert_allclose(com_held, expected, atol=1e-12)


def test_inertia_breaking_the_triangle_inequality_is_refused_with_the_fix():
    bad = raw("planar_box")
    bad["inertia"] = [[0.001, 0, 0], [0, 0.001, 0], [0, 0, 0.01]]
    with pytest.raises(ConfigError, match="triangle inequality.*recompute them from the shape"):
        parse_object(bad, "bad.yaml")


def test_negative_principal_moment_is_refused():
    bad = raw("planar_box")
    bad["inertia"] = [[0.001, 0.002, 0], [0.002, 0.001, 0], [0, 0, 0.001]]
    with pytest.raises(ConfigError, match="not positive definite"):
        parse_object(bad, "bad.yaml")


def test_asymmetric_inertia_is_refused():
    bad = raw("planar_box")
    bad["inertia"] = [[0.003, 0.001, 0], [0, 0.002, 0], [0, 0, 0.003]]
    with pytest.raises(ConfigError, match="not symmetric"):
        parse_object(bad, "bad.yaml")


def test_zero_mass_is_refused():
    bad = raw("planar_box")
    bad["mass"] = 0
    with pytest.raises(ConfigError, match="mass"):
        parse_object(bad, "bad.yaml")


def test_grasp_frame_no_arm_can_reach_is_refused_with_the_distance_and_the_fix():
    bad = raw("planar_box")
    bad["pose_in_base"] = {"xyz": [3.0, 0.0, 0.0]}
    obj = parse_object(bad, "far.yaml")
    with pytest.raises(ModelError, match=r"no arm can reach the grasp frame of 'left_ee_link'.*move pose_in_base"):
        check_object(robot("dual_arm_planar"), obj)


def test_grasp_naming_an_end_effector_the_robot_lacks_is_refused():
    bad = copy.deepcopy(raw("planar_box"))
    bad["grasps"][1]["end_effector"] = "gripper"
    with pytest.raises(ModelError, match="'gripper' is not an end-effector of robot 'dual_arm_planar'"):
        check_object(robot("dual_arm_planar"), parse_object(bad, "x.yaml"))


def test_planar_object_on_a_spatial_robot_is_refused():
    with pytest.raises(ModelError, match="choose an object with base: spatial"):
        check_object(robot("spatial_dual_arm"), load_object("planar_box"))


def test_unknown_object_name_lists_the_bundled_ones():
    with pytest.raises(ConfigError, match=r"unknown object 'crate'; bundled objects: \['planar_box', 'planar_target', 'spatial_box', 'target_satellite'\]"):
        load_object("crate")


def test_spatial_dual_arm_has_a_massless_root_with_the_bus_on_a_fixed_child():
    ff = robot("spatial_dual_arm")
    assert ff.base_link == "base_link"
    # Pinocchio lumps the fixed child's 150 kg bus into the base joint's body.
    assert ff.model.inertias[1].mass == pytest.approx(150.0)
