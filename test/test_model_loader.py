"""Tests of the model layer above the URDF checks: robot configs, the loader, the bundled robots.

The URDF-level rules (XML, inertia, topology, limits) are tested in test_urdf_checks.py; here a
URDF is only the raw material. Every error test checks that the message names the culprit and
hints at the fix.
"""

from __future__ import annotations

import logging
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from freeflyer_control.errors import ConfigError, ModelError
from freeflyer_control.model import (
    FreeFlyerModel,
    load_model,
    load_robot,
    load_robot_config,
    parse_robot_config,
    robot_names,
    scaled_base,
)
from freeflyer_control.model.robots import robot_config_dir
from freeflyer_control.resources import share_dir

# ---------------------------------------------------------------------------------------------
# a tiny URDF: base (2 kg) + link1 --j1--> link2 --j2--> tool (massless, fixed), optional extras

LIMIT = '<limit lower="-3" upper="3" effort="10" velocity="2"/>'


def _link(name: str, mass: float | None = 1.0) -> str:
    if mass is None:
        return f'<link name="{name}"/>'
    return (
        f'<link name="{name}"><inertial><origin xyz="0 0 0" rpy="0 0 0"/><mass value="{mass}"/>'
        '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>'
    )


def _joint(name: str, parent: str, child: str, jtype: str = "revolute", axis: str = "0 0 1",
           xyz: str = "0.5 0 0") -> str:
    limit = LIMIT if jtype in ("revolute", "prismatic") else ""
    ax = f'<axis xyz="{axis}"/>' if jtype not in ("fixed",) else ""
    return (
        f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz}" rpy="0 0 0"/>{ax}{limit}</joint>'
    )


def tiny_urdf(*, j2_axis: str = "0 0 1", extra: str = "", root: str = "", name: str = "tiny") -> str:
    """base -> j1 (z) -> link1 -> j2 (``j2_axis``) -> link2 -> tool_joint (fixed) -> tool.

    ``root`` is XML put before the base link (a ``world`` link and its root joint)."""
    parts = [
        root,
        _link("base", 2.0),
        _link("link1"), _joint("j1", "base", "link1"),
        _link("link2"), _joint("j2", "link1", "link2", axis=j2_axis),
        _link("tool", None), _joint("tool_joint", "link2", "tool", "fixed"),
        extra,
    ]
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n' + "\n".join(parts) + "\n</robot>\n"


WHEEL = _link("wheel", 0.2) + _joint("wheel_joint", "base", "wheel", "continuous", xyz="0 0 0")
SLIDER = _link("slider", 0.2) + _joint("slider_joint", "base", "slider", "prismatic",
                                        axis="1 0 0", xyz="0 0 0")
FLOATING_ROOT = (
    '<link name="world"/><joint name="float" type="floating"><parent link="world"/>'
    '<child link="base"/></joint>'
)
PLANAR_ROOT = (
    '<link name="world"/><joint name="table" type="planar"><parent link="world"/>'
    '<child link="base"/><axis xyz="0 0 1"/></joint>'
)


def good_config(**changes) -> dict:
    """A valid config for tiny_urdf() + WHEEL; ``changes`` replace top-level keys."""
    data = {
        "base": "planar",
        "end_effectors": ["tool"],
        "arms": {"arm": ["j1", "j2"]},
        "reaction_wheels": [{"joint": "wheel_joint", "max_torque": 0.1, "max_speed": 500.0}],
        "thrusters": [
            {"name": "t1", "position": [0.1, 0.1, 0.0], "direction": [-1, 0, 0], "max_force": 0.2},
            {"name": "t2", "position": [-0.1, 0.1, 0.0], "direction": [0, -1, 0], "max_force": 0.2},
        ],
    }
    data.update(changes)
    return data


def thruster_change(index: int, **changes) -> dict:
    data = good_config()
    data["thrusters"][index].update(changes)
    return data


def load_tiny(config: dict, urdf: str | None = None) -> FreeFlyerModel:
    return load_model(urdf if urdf is not None else tiny_urdf(extra=WHEEL), parse_robot_config(config))


def joint_types(model: pin.Model) -> list[str]:
    return [model.joints[i].shortname() for i in range(1, model.njoints)]


# ---------------------------------------------------------------------------------------------
# bundled robots

# name -> (base, arm joints, wheels, end-effectors, number of thrusters), read off the configs
EXPECTED = {
    "planar_4link": ("planar", ("joint1", "joint2", "joint3", "joint4"),
                     ("wheel_z_joint",), ("ee_link",), 8),
    "spatial_6link": ("spatial", tuple(f"joint{i}" for i in range(1, 7)),
                      ("wheel_x_joint", "wheel_y_joint", "wheel_z_joint"), ("ee_link",), 12),
    "dual_arm_planar": ("planar",
                        ("left_joint1", "left_joint2", "left_joint3",
                         "right_joint1", "right_joint2", "right_joint3"),
                        ("wheel_z_joint",), ("left_ee_link", "right_ee_link"), 8),
    "spatial_7dof": ("spatial", tuple(f"joint{i}" for i in range(1, 8)),
                     ("wheel_x_joint", "wheel_y_joint", "wheel_z_joint"), ("ee_link",), 12),
    "spatial_dual_arm": ("spatial", tuple(f"{s}_joint{i}" for s in ("left", "right") for i in range(1, 7)),
                         ("wheel_x_joint", "wheel_y_joint", "wheel_z_joint"),
                         ("left_ee_link", "right_ee_link"), 12),
}


def test_robot_names_lists_the_bundled_robots():
    assert robot_names() == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bundled_robot_loads_with_its_base_joints_wheels_end_effectors_and_thrusters(name):
    base, arm, wheels, ees, n_thrusters = EXPECTED[name]
    ff = load_robot(name)
    assert ff.name == name
    assert ff.base == base
    assert ff.base_link == "base_link"
    root = "JointModelPlanar" if base == "planar" else "JointModelFreeFlyer"
    assert ff.model.joints[1].shortname() == root
    assert ff.model.names[1] == "root_joint"
    assert ff.nb == (3 if base == "planar" else 6)
    assert ff.arm_joint_names == arm
    assert ff.wheel_joint_names == wheels
    assert set(ff.joint_names) == set(arm) | set(wheels)
    assert ff.nj == len(arm) + len(wheels)
    assert ff.model.nv == ff.nb + len(arm) + len(wheels)
    assert ff.end_effectors == ees
    assert len(ff.thrusters) == n_thrusters
    assert len({t.name for t in ff.thrusters}) == n_thrusters
    for t in ff.thrusters:
        assert np.linalg.norm(t.direction) == pytest.approx(1.0)
        if base == "planar":
            assert t.direction[2] == 0.0
    assert len(ff.wheel_limits) == len(wheels)
    # every arm joint belongs to exactly one arm, and the arms are the config's
    in_arms = [j for joints in ff.arms.values() for j in joints]
    assert sorted(in_arms) == sorted(arm)
    # every end-effector is a frame of the model
    for ee in ees:
        assert ff.model.existFrame(ee)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bundled_robot_has_zero_gravity(name):
    ff = load_robot(name)
    assert np.all(ff.model.gravity.linear == 0.0)
    assert np.all(ff.model.gravity.angular == 0.0)


def test_unknown_robot_name_is_a_model_error_listing_the_bundled_robots():
    with pytest.raises(ModelError) as err:
        load_robot("no_such_robot")
    msg = str(err.value)
    assert "no_such_robot" in msg
    for name in EXPECTED:
        assert name in msg
    assert ".urdf" in msg  # the alternative: give a file


def test_bundled_robot_loads_from_its_config_path_with_the_urdf_relative_to_the_config():
    path = robot_config_dir() / "planar_4link.yaml"
    config = load_robot_config(path)
    assert config.urdf is not None and config.urdf.is_file()
    by_path = load_robot(path)
    assert by_path.joint_names == load_robot("planar_4link").joint_names
    assert by_path.name == "planar_4link"


def test_config_without_urdf_entry_is_refused_by_load_robot_saying_to_add_it(tmp_path):
    path = tmp_path / "bot.yaml"
    path.write_text(yaml.safe_dump(good_config()))
    with pytest.raises(ModelError, match=r"bot\.yaml.*'urdf:'"):
        load_robot(path)


# ---------------------------------------------------------------------------------------------
# bare URDF (no robot config)

@pytest.mark.parametrize("as_path", [False, True], ids=["string", "path"])
def test_bare_urdf_without_base_is_refused_saying_to_pass_planar_or_spatial(tmp_path, as_path):
    xml = tiny_urdf()
    src: str | Path = xml
    if as_path:
        src = tmp_path / "tiny.urdf"
        src.write_text(xml)
    with pytest.raises(ModelError) as err:
        load_model(src)
    msg = str(err.value)
    assert "base='planar'" in msg and "base='spatial'" in msg
    assert (str(src) if as_path else "<string>") in msg  # names the culprit file


@pytest.mark.parametrize("as_path", [False, True], ids=["string", "path"])
@pytest.mark.parametrize("base", ["planar", "spatial"])
def test_bare_urdf_with_base_and_end_effector_loads(tmp_path, as_path, base):
    xml = tiny_urdf()
    src: str | Path = xml
    if as_path:
        src = tmp_path / "tiny.urdf"
        src.write_text(xml)
    ff = load_model(src, base=base, end_effectors=["tool"])
    assert ff.base == base
    assert ff.name == "tiny"
    assert ff.base_link == "base"
    assert joint_types(ff.model)[0] == ("JointModelPlanar" if base == "planar" else "JointModelFreeFlyer")
    assert ff.joint_names == ("j1", "j2")
    assert ff.arm_joint_names == ("j1", "j2")
    assert ff.wheel_joint_names == () and ff.thrusters == ()
    assert ff.end_effectors == ("tool",)
    assert ff.arms == {"tool": ("j1", "j2")}
    assert np.all(ff.model.gravity.linear == 0.0)


def test_bare_urdf_arms_are_the_joints_supporting_each_end_effector():
    # Two branches off the base: left (two joints) and right (one joint), plus a wheel-like
    # continuous joint on the base that supports neither end-effector.
    xml = tiny_urdf(extra=(
        _link("r1") + _joint("rj1", "base", "r1", xyz="-0.5 0 0")
        + _link("r_tool", None) + _joint("r_tool_joint", "r1", "r_tool", "fixed")
        + WHEEL
    ))
    ff = load_model(xml, base="planar", end_effectors=["tool", "r_tool"])
    assert ff.arms == {"tool": ("j1", "j2"), "r_tool": ("rj1",)}
    # without a config the continuous joint is an (unlisted) arm joint, not a wheel
    assert "wheel_joint" in ff.arm_joint_names and ff.wheel_joint_names == ()


def test_bare_urdf_arms_derived_from_end_effectors_match_the_bundled_dual_arm_config():
    config = load_robot_config(robot_config_dir() / "dual_arm_planar.yaml")
    ff = load_model(config.urdf, base="planar", end_effectors=["left_ee_link", "right_ee_link"])
    assert ff.arms == {"left_ee_link": config.arms["left"], "right_ee_link": config.arms["right"]}


def test_bare_urdf_without_end_effectors_has_one_arm_of_all_joints():
    ff = load_model(tiny_urdf(), base="spatial")
    assert ff.end_effectors == ()
    assert ff.arms == {"arm": ("j1", "j2")}


def test_bare_urdf_with_unknown_end_effector_is_refused_listing_the_links():
    with pytest.raises(ModelError) as err:
        load_model(tiny_urdf(), base="planar", end_effectors=["gripper"])
    msg = str(err.value)
    assert "'gripper'" in msg
    for link in ("base", "link1", "link2", "tool"):
        assert f"'{link}'" in msg


def test_unknown_base_argument_is_refused_listing_the_base_types():
    with pytest.raises(ModelError, match=r"'wobbly'") as err:
        load_model(tiny_urdf(), base="wobbly")
    assert "planar" in str(err.value) and "spatial" in str(err.value)


# ---------------------------------------------------------------------------------------------
# a floating / planar root joint in the URDF

def test_world_link_with_floating_root_joint_gives_a_spatial_base_with_one_free_flyer_joint():
    ff = load_model(tiny_urdf(root=FLOATING_ROOT))
    n = 2  # j1, j2 (revolute: one q and one v each)
    assert ff.base == "spatial"
    assert ff.base_link == "base"
    types = joint_types(ff.model)
    assert types.count("JointModelFreeFlyer") == 1 and types[0] == "JointModelFreeFlyer"
    assert "JointModelPlanar" not in types
    assert ff.model.nq == 7 + n and ff.model.nv == 6 + n
    assert ff.model.names[1] == "root_joint"
    assert ff.joint_names == ("j1", "j2")  # the URDF's floating joint is the base, not a joint
    # the base body is the child of the floating joint, not the massless world link
    assert ff.model.inertias[1].mass == pytest.approx(2.0)


def test_floating_root_joint_with_base_spatial_asked_explicitly_loads_the_same_model():
    implicit = load_model(tiny_urdf(root=FLOATING_ROOT))
    explicit = load_model(tiny_urdf(root=FLOATING_ROOT), base="spatial")
    assert explicit.model.nq == implicit.model.nq
    assert joint_types(explicit.model) == joint_types(implicit.model)


def test_floating_root_joint_with_base_planar_is_refused_explaining_the_mismatch():
    with pytest.raises(ModelError) as err:
        load_model(tiny_urdf(root=FLOATING_ROOT), base="planar")
    msg = str(err.value)
    assert "'float'" in msg and "floating" in msg  # the culprit joint and its type
    assert "base='planar'" in msg  # what was asked
    assert "base='spatial'" in msg  # the fix


def test_floating_root_joint_with_a_planar_config_is_refused_too():
    with pytest.raises(ModelError, match=r"'float'.*base='spatial'"):
        load_model(tiny_urdf(root=FLOATING_ROOT), parse_robot_config({"base": "planar"}))


def test_planar_root_joint_gives_a_planar_base_with_one_planar_joint():
    ff = load_model(tiny_urdf(root=PLANAR_ROOT), end_effectors=["tool"])
    n = 2
    assert ff.base == "planar"
    assert ff.base_link == "base"
    types = joint_types(ff.model)
    assert types.count("JointModelPlanar") == 1 and types[0] == "JointModelPlanar"
    assert "JointModelFreeFlyer" not in types
    assert ff.model.nq == 4 + n and ff.model.nv == 3 + n  # planar: x, y, (cos, sin) yaw
    assert ff.model.names[1] == "root_joint"
    assert ff.joint_names == ("j1", "j2")
    assert ff.arms == {"tool": ("j1", "j2")}


def test_planar_root_joint_with_base_spatial_is_refused_explaining_the_mismatch():
    with pytest.raises(ModelError) as err:
        load_model(tiny_urdf(root=PLANAR_ROOT), base="spatial")
    msg = str(err.value)
    assert "'table'" in msg and "planar" in msg
    assert "base='spatial'" in msg and "base='planar'" in msg


# ---------------------------------------------------------------------------------------------
# robot config: what the YAML alone can get wrong

def test_good_config_loads_with_wheel_arms_and_thrusters():
    ff = load_tiny(good_config())
    assert ff.base == "planar"
    assert ff.arm_joint_names == ("j1", "j2")
    assert ff.wheel_joint_names == ("wheel_joint",)
    assert ff.wheel_limits == ((0.1, 500.0),)
    assert ff.arms == {"arm": ("j1", "j2")}
    assert [t.name for t in ff.thrusters] == ["t1", "t2"]
    np.testing.assert_allclose(ff.thruster_max_forces, [0.2, 0.2])


def test_config_missing_base_is_refused_saying_which_values_to_use():
    data = good_config()
    del data["base"]
    with pytest.raises(ConfigError) as err:
        parse_robot_config(data)
    msg = str(err.value)
    assert "'base'" in msg and "missing" in msg
    assert "planar" in msg and "spatial" in msg


def test_config_unknown_base_is_refused_listing_the_base_types():
    with pytest.raises(ConfigError) as err:
        parse_robot_config(good_config(base="wobbly"))
    msg = str(err.value)
    assert "'wobbly'" in msg and "planar" in msg and "spatial" in msg


def test_config_unknown_top_level_key_is_refused_listing_the_known_keys():
    data = good_config(thruster=[])  # typo for "thrusters"
    with pytest.raises(ConfigError) as err:
        parse_robot_config(data)
    msg = str(err.value)
    assert "unknown key 'thruster'" in msg  # the culprit
    assert "did you mean 'thrusters'?" in msg and "reaction_wheels" in msg  # the keys it could have meant


def test_config_thruster_direction_not_unit_is_refused_giving_its_norm():
    with pytest.raises(ConfigError) as err:
        parse_robot_config(thruster_change(1, direction=[1, 1, 0]))
    msg = str(err.value)
    assert "'t2'" in msg and "direction" in msg and "unit" in msg
    assert "1.41421" in msg  # its norm: divide by it


def test_config_thruster_direction_zero_is_refused():
    with pytest.raises(ConfigError, match=r"'t1'.*direction.*zero"):
        parse_robot_config(thruster_change(0, direction=[0, 0, 0]))


@pytest.mark.parametrize("force", [0, -0.5, "lots"])
def test_config_non_positive_max_force_is_refused(force):
    with pytest.raises(ConfigError) as err:
        parse_robot_config(thruster_change(0, max_force=force))
    msg = str(err.value)
    assert "'t1'" in msg and "max_force" in msg
    assert "positive" in msg or "number" in msg


def test_config_duplicate_thruster_names_are_refused_naming_the_repeated_one():
    with pytest.raises(ConfigError) as err:
        parse_robot_config(thruster_change(1, name="t1"))
    msg = str(err.value)
    assert "'t1'" in msg and "unique" in msg


def test_config_arm_given_as_a_string_is_refused_asking_for_a_list():
    with pytest.raises(ConfigError) as err:
        parse_robot_config(good_config(arms={"arm": "j1"}))
    msg = str(err.value)
    assert "'arm'" in msg and "list" in msg


def test_config_wheel_joint_not_in_urdf_is_refused_listing_the_joints():
    data = good_config(reaction_wheels=[{"joint": "flywheel", "max_torque": 1, "max_speed": 1}])
    with pytest.raises(ConfigError) as err:
        load_tiny(data)
    msg = str(err.value)
    assert "'flywheel'" in msg and "not in the URDF" in msg
    assert "'wheel_joint'" in msg and "'j1'" in msg  # the joints it could have meant


@pytest.mark.parametrize("joint, jtype", [("tool_joint", "fixed"), ("slider_joint", "prismatic")])
def test_config_wheel_joint_that_is_fixed_or_prismatic_is_refused(joint, jtype):
    data = good_config(reaction_wheels=[{"joint": joint, "max_torque": 1, "max_speed": 1}])
    with pytest.raises(ConfigError) as err:
        load_tiny(data, tiny_urdf(extra=WHEEL + SLIDER))
    msg = str(err.value)
    assert f"'{joint}'" in msg and jtype in msg
    assert "revolute or continuous" in msg


def test_config_wheel_not_mounted_on_the_base_link_is_refused_naming_both_links():
    data = good_config(arms={"arm": ["j1"]},
                       reaction_wheels=[{"joint": "j2", "max_torque": 1, "max_speed": 1}])
    with pytest.raises(ConfigError) as err:
        load_tiny(data)
    msg = str(err.value)
    assert "'j2'" in msg and "'link1'" in msg  # the wheel and where it hangs
    assert "base link 'base'" in msg  # where it must be


def test_config_arm_listing_a_joint_not_in_the_urdf_is_refused_listing_the_arm_joints():
    with pytest.raises(ConfigError) as err:
        load_tiny(good_config(arms={"arm": ["j1", "elbow"]}))
    msg = str(err.value)
    assert "arm 'arm'" in msg and "'elbow'" in msg
    assert "['j1', 'j2']" in msg


def test_config_arm_listing_a_wheel_joint_is_refused():
    with pytest.raises(ConfigError, match=r"'wheel_joint'.*not an arm joint"):
        load_tiny(good_config(arms={"arm": ["j1", "j2", "wheel_joint"]}))


def test_config_unknown_end_effector_frame_is_refused_listing_the_links():
    with pytest.raises(ModelError) as err:
        load_tiny(good_config(end_effectors=["gripper"]))
    msg = str(err.value)
    assert "'gripper'" in msg and "links:" in msg
    for link in ("base", "link1", "link2", "tool", "wheel"):
        assert f"'{link}'" in msg


def test_planar_base_with_a_joint_axis_not_about_z_is_refused_naming_the_joint():
    urdf = tiny_urdf(j2_axis="1 0 0", extra=WHEEL)
    with pytest.raises(ModelError) as err:
        load_tiny(good_config(), urdf)
    msg = str(err.value)
    assert "'j2'" in msg and "out of the plane" in msg
    assert "axis 0 0 1" in msg  # the fix
    # the same URDF is fine on a spatial base
    assert load_tiny(good_config(base="spatial"), urdf).base == "spatial"


def test_planar_base_with_a_thruster_pushing_along_z_is_refused_naming_the_thruster():
    tilted = thruster_change(1, direction=[0.6, 0.0, 0.8])
    with pytest.raises(ConfigError) as err:
        load_tiny(tilted)
    msg = str(err.value)
    assert "'t2'" in msg and "xy-plane" in msg
    # the same thruster is fine on a spatial base
    tilted["base"] = "spatial"
    assert load_tiny(tilted).thrusters[1].direction[2] == pytest.approx(0.8)


def test_config_with_bad_yaml_syntax_is_refused_naming_the_file_and_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("base: planar\nend_effectors: [tool\nthrusters: []\n")
    with pytest.raises(ConfigError) as err:
        load_robot_config(path)
    msg = str(err.value)
    assert str(path) in msg and "not valid YAML" in msg
    assert re.search(r"line \d+", msg)


def test_config_file_missing_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "nowhere.yaml"
    with pytest.raises(ConfigError) as err:
        load_robot_config(path)
    msg = str(err.value)
    assert str(path) in msg and "cannot read" in msg


def test_config_file_that_is_not_a_mapping_is_refused(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("- base\n- planar\n")
    with pytest.raises(ConfigError, match=r"list\.yaml.*mapping"):
        load_robot_config(path)


def test_load_model_reads_a_config_path_and_resolves_its_urdf_relative_to_it(tmp_path):
    (tmp_path / "urdf").mkdir()
    (tmp_path / "urdf" / "tiny.urdf").write_text(tiny_urdf(extra=WHEEL))
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(yaml.safe_dump(good_config(urdf="urdf/tiny.urdf")))
    config = load_robot_config(cfg)
    assert config.urdf == tmp_path / "urdf" / "tiny.urdf"
    assert config.name == "tiny"  # the file stem
    ff = load_model(config.urdf, cfg)  # config given as a path
    assert ff.wheel_joint_names == ("wheel_joint",)
    assert load_robot(cfg).arms == {"arm": ("j1", "j2")}


def test_load_model_errors_from_a_config_file_name_the_culprit(tmp_path):
    cfg = tmp_path / "bad.yaml"
    data = good_config()
    del data["base"]
    cfg.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"bad\.yaml.*'base'"):
        load_model(tiny_urdf(extra=WHEEL), cfg)


def test_base_argument_overrides_the_config_base():
    ff = load_model(tiny_urdf(extra=WHEEL), parse_robot_config(good_config(base="planar")),
                    base="spatial")
    assert ff.base == "spatial" and joint_types(ff.model)[0] == "JointModelFreeFlyer"


# ---------------------------------------------------------------------------------------------
# scaled_base

@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
@pytest.mark.parametrize("k", [0.5, 10.0])
def test_scaled_base_scales_only_the_base_body_mass_and_inertia(name, k):
    ff = load_robot(name)
    before_masses = [I.mass for I in ff.model.inertias]
    before_total = ff.total_mass
    m_base = ff.model.inertias[1].mass
    if name == "planar_4link":
        assert m_base == pytest.approx(15.0)  # <mass value="15"/> of base_link in the URDF
    heavy = scaled_base(ff, k)

    assert heavy.total_mass == pytest.approx(before_total + (k - 1.0) * m_base)
    assert heavy.model.inertias[1].mass == pytest.approx(k * m_base)
    np.testing.assert_allclose(heavy.model.inertias[1].inertia, k * ff.model.inertias[1].inertia)
    np.testing.assert_allclose(heavy.model.inertias[1].lever, ff.model.inertias[1].lever)
    for j in range(2, ff.model.njoints):  # every other body unchanged
        assert heavy.model.inertias[j] == ff.model.inertias[j]
    # the original is untouched
    assert heavy.model is not ff.model
    assert [I.mass for I in ff.model.inertias] == before_masses
    assert ff.total_mass == pytest.approx(before_total)
    # everything else is carried over
    assert heavy.joint_names == ff.joint_names and heavy.arms == ff.arms
    assert heavy.thrusters == ff.thrusters and heavy.base == ff.base and heavy.name == ff.name


def test_scaled_base_refuses_a_non_positive_factor():
    ff = load_robot("planar_4link")
    for k in (0.0, -2.0):
        with pytest.raises(ValueError, match="positive"):
            scaled_base(ff, k)


# ---------------------------------------------------------------------------------------------
# summary, resources

def _summary_line(summary: str, key: str) -> str:
    lines = [line for line in summary.splitlines() if line.startswith(key)]
    assert len(lines) == 1, f"no single '{key}' line in:\n{summary}"
    return lines[0]


def test_summary_names_robot_base_joints_wheels_and_thrusters():
    ff = load_robot("planar_4link")
    s = ff.summary()
    assert _summary_line(s, "robot").split()[-1] == "planar_4link"
    assert "planar" in _summary_line(s, "base") and "base_link" in _summary_line(s, "base")
    assert "nq=10" in s and "nv=8" in s  # 4 (x, y, cos, sin) + 4 arm + 2 (continuous wheel)
    assert _summary_line(s, "arm joints").split(None, 2)[2] == "joint1, joint2, joint3, joint4"
    assert _summary_line(s, "wheels").split()[-1] == "wheel_z_joint"
    assert _summary_line(s, "thrusters").split()[-1] == "8"
    assert "ee_link" in _summary_line(s, "end-effectors")
    assert "19.51" in _summary_line(s, "total mass")


def test_summary_of_a_bare_urdf_shows_no_wheels_no_thrusters_and_the_warnings():
    xml = tiny_urdf().replace(LIMIT, "", 1)  # j1 without <limit>: accepted with a warning
    ff = load_model(xml, base="spatial")
    s = ff.summary()
    assert _summary_line(s, "robot").split()[-1] == "tiny"
    assert "spatial" in _summary_line(s, "base")
    assert _summary_line(s, "wheels").split()[-1] == "-"
    assert _summary_line(s, "thrusters").split()[-1] == "0"
    assert ff.warnings and any(line.startswith("warning") and "j1" in line
                               for line in s.splitlines())


def test_share_dir_holds_the_urdfs_and_robot_configs():
    share = share_dir()
    assert (share / "urdf").is_dir() and (share / "config" / "robots").is_dir()
    for name in EXPECTED:
        assert (share / "urdf" / f"{name}.urdf").is_file()
        assert (share / "config" / "robots" / f"{name}.yaml").is_file()
    assert robot_config_dir() == share / "config" / "robots"


def test_a_ready_pose_outside_the_urdf_joint_limits_is_refused_naming_the_joint(tmp_path):
    urdf = share_dir() / "urdf" / "planar_4link.urdf"
    config = tmp_path / "bent_too_far.yaml"
    config.write_text(yaml.safe_dump({"urdf": str(urdf), "base": "planar", "end_effectors": ["ee_link"],
                                      "ready_pose": {"joint1": 0.5, "joint2": 2.6}}))
    with pytest.raises(ConfigError, match=r"ready_pose: joint2 = 2.6 rad is outside its URDF limits "
                                          r"\[-2.5, 2.5\] rad; give an angle inside the limits"):
        load_robot(str(config))


def test_every_bundled_ready_pose_is_inside_the_joint_limits():
    from freeflyer_control.model.joint_limits import limit_violations

    for name in robot_names():
        ff = load_robot(name)
        assert limit_violations(ff, ff.ready_pose) == [], name


# ---------------------------------------------------------------------------------------------
# The root link and ROS: KDL (robot_state_publisher) wants it massless


def test_loader_warns_once_when_the_root_link_has_an_inertia(package_log):
    with package_log.at_level(logging.WARNING):
        ff = load_model(tiny_urdf(), base="spatial")  # root 'base' carries 2 kg
    hits = [m for m in package_log.messages if "robot_state_publisher (KDL)" in m]
    assert len(hits) == 1 and "root link 'base'" in hits[0] and "fixed joint" in hits[0]
    assert len(ff.warnings) == 1


@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link", "dual_arm_planar", "spatial_7dof"])
def test_bundled_robot_has_a_massless_root_and_loads_without_warnings(name, package_log):
    with package_log.at_level(logging.WARNING):
        ff = load_robot(name)
    assert ff.warnings == () and package_log.messages == []
    root = ET.fromstring(ff.urdf_xml).find(f"link[@name='{ff.base_link}']")
    assert root is not None and root.find("inertial") is None
    # The base's mass is on base_inertia, which Pinocchio lumps into the base joint's body.
    assert ff.model.frames[ff.model.getFrameId("base_inertia")].parentJoint == 1
    assert ff.model.inertias[1].mass > 0
