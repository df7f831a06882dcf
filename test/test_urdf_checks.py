"""Tests of freeflyer_control.model.urdf_checks: one test per rule of the module's table."""

from __future__ import annotations

import logging
import math

import numpy as np
import pinocchio as pin
import pytest

from freeflyer_control.errors import ModelError
from freeflyer_control.model.urdf_checks import UNLIMITED, check_urdf, read_urdf

# ---------------------------------------------------------------------------------------------
# tiny URDF builder

LIMIT = '<limit lower="-3" upper="3" effort="10" velocity="2"/>'


def inertial(mass=1.0, ixx=0.1, iyy=0.1, izz=0.1, ixy=0.0, ixz=0.0, iyz=0.0) -> str:
    return (
        f'<inertial><origin xyz="0 0 0" rpy="0 0 0"/><mass value="{mass}"/>'
        f'<inertia ixx="{ixx}" ixy="{ixy}" ixz="{ixz}" iyy="{iyy}" iyz="{iyz}" izz="{izz}"/>'
        "</inertial>"
    )


def link(name: str, body: str | None = None, extra: str = "") -> str:
    """A link; ``body`` is its <inertial> XML (default: 1 kg), "" for none."""
    return f'<link name="{name}">{inertial() if body is None else body}{extra}</link>'


def joint(name, parent, child, jtype="revolute", axis="0 0 1", limit=LIMIT, extra="") -> str:
    ax = "" if axis is None else f'<axis xyz="{axis}"/>'
    return (
        f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="0.5 0 0" rpy="0 0 0"/>{ax}{limit or ""}{extra}</joint>'
    )


def chain(n: int = 2, base: str = "base", jtype: str = "revolute", limit: str | None = LIMIT,
          axis: str | None = "0 0 1") -> list[str]:
    """Parts of a base link plus a serial arm: links link1..linkN, joints j1..jN."""
    parts = [link(base)]
    prev = base
    for i in range(1, n + 1):
        parts += [link(f"link{i}"), joint(f"j{i}", prev, f"link{i}", jtype, axis, limit)]
        prev = f"link{i}"
    return parts


def fixed_leaf(parent: str, name: str, body: str = "", axis=None, limit=None):
    """A link fixed to ``parent`` (default massless, like tool0) by joint ``<name>_joint``."""
    return link(name, body), joint(f"{name}_joint", parent, name, "fixed", axis, limit)


def robot(*parts: str, name: str = "bot") -> str:
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n' + "\n".join(parts) + "\n</robot>\n"


def refused(xml: str, *fragments: str, source: str = "<string>") -> str:
    """Assert check_urdf refuses ``xml`` with a message containing every fragment."""
    with pytest.raises(ModelError) as info:
        check_urdf(xml, source=source)
    msg = str(info.value)
    for frag in fragments:
        assert frag in msg, f"{frag!r} not in {msg!r}"
    return msg


def load(report, root=True):
    """Pinocchio must accept the (amended) XML."""
    if root:
        return pin.buildModelFromXML(report.xml, pin.JointModelFreeFlyer())
    return pin.buildModelFromXML(report.xml)


def other_warnings(report) -> tuple[str, ...]:
    """The warnings besides the root-inertia one (the builder's root ``base`` has 1 kg, which
    the tests of the other rules keep so that their URDFs stay small)."""
    return tuple(w for w in report.warnings if "robot_state_publisher (KDL)" not in w)


def warned(report, *fragments: str) -> str:
    hits = [w for w in report.warnings if all(f in w for f in fragments)]
    assert hits, f"no warning with {fragments} in {report.warnings}"
    return hits[0]


# ---------------------------------------------------------------------------------------------
# accepted models


def test_clean_two_link_urdf_has_no_warnings_and_right_tree():
    rep = check_urdf(robot(*chain(2), *fixed_leaf("link2", "tool0")))
    assert other_warnings(rep) == ()
    assert rep.robot_name == "bot"
    assert rep.root_link == "base" and rep.base_link == "base" and rep.root_joint is None
    assert list(rep.joints) == ["j1", "j2", "tool0_joint"]
    assert rep.links == ("base", "link1", "link2", "tool0")
    assert rep.link_masses == {"base": 1.0, "link1": 1.0, "link2": 1.0, "tool0": 0.0}
    j1 = rep.joints["j1"]
    assert (j1.type, j1.parent, j1.child) == ("revolute", "base", "link1")
    np.testing.assert_allclose(j1.axis, [0, 0, 1])
    np.testing.assert_allclose(j1.origin_xyz, [0.5, 0, 0])
    np.testing.assert_allclose(j1.origin_rpy, [0, 0, 0])
    assert rep.filled_limits == {}
    model = load(rep)
    assert model.nq == 7 + 2


def test_world_link_with_floating_root_joint_makes_child_the_base():
    root = joint("float", "world", "base", "floating", None, None)
    xml = robot(link("world", ""), root, *chain(1))
    rep = check_urdf(xml)
    assert rep.warnings == ()
    assert rep.root_link == "world"
    assert rep.base_link == "base"
    assert rep.root_joint is not None and rep.root_joint.name == "float"
    assert rep.root_joint.type == "floating"
    model = load(rep, root=False)
    assert model.nq == 7 + 1 and model.nv == 6 + 1


def test_planar_root_joint_with_z_axis_is_accepted():
    root = joint("table", "world", "base", "planar", "0 0 1", None)
    xml = robot(link("world", ""), root, *chain(2))
    rep = check_urdf(xml)
    assert rep.root_joint.name == "table" and rep.base_link == "base"
    model = load(rep, root=False)
    assert model.nv == 3 + 2


def test_prismatic_joint_is_accepted():
    rep = check_urdf(robot(*chain(1, jtype="prismatic")))
    assert rep.joints["j1"].type == "prismatic" and other_warnings(rep) == ()
    assert load(rep).nq == 8


def test_rotated_inertia_is_judged_by_principal_moments():
    # principal moments (1, 2, 2.5) rotated about z by 30 degrees: off-diagonal terms, still valid
    c, s = math.cos(math.pi / 6), math.sin(math.pi / 6)
    r = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    i = r @ np.diag([1.0, 2.0, 2.5]) @ r.T
    body = inertial(2.0, ixx=i[0, 0], iyy=i[1, 1], izz=i[2, 2],
                    ixy=i[0, 1], ixz=i[0, 2], iyz=i[1, 2])
    rep = check_urdf(robot(link("base", body)))
    assert rep.link_masses["base"] == 2.0


def test_flat_plate_on_the_triangle_inequality_boundary_is_accepted():
    # a thin plate: izz = ixx + iyy exactly (up to rounding)
    rep = check_urdf(robot(link("base", inertial(1.0, ixx=0.1, iyy=0.2, izz=0.30000000000000004))))
    assert other_warnings(rep) == ()


# ---------------------------------------------------------------------------------------------
# XML-level errors


def test_text_that_is_not_xml_is_refused():
    refused("this is not a urdf", "not well-formed XML", "line 1")
    refused("   ", "empty")


def test_xml_syntax_error_reports_line_number():
    xml = robot(*chain(1)).replace('<link name="link1">', '<link name="link1"', 1)
    line = next(i + 1 for i, text in enumerate(xml.splitlines()) if '<link name="link1"' in text)
    refused(xml, f"line {line}", "fix the XML syntax")


def test_root_element_other_than_robot_is_refused():
    refused("<model name='x'><link name='a'/></model>", "<model>", "<robot")


def test_robot_without_name_is_refused():
    refused("<robot>" + link("base") + "</robot>", "<robot> has no name", "name=")


def test_unexpanded_xacro_is_refused():
    xml = ('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">'
           '<xacro:property name="m" value="1"/>' + link("base") + "</robot>")
    refused(xml, "xacro", "expand it first")


def test_errors_name_the_source_file(tmp_path):
    path = tmp_path / "bad.urdf"
    path.write_text(robot(*chain(1)).replace('type="revolute"', 'type="hinge"'))
    xml, source = read_urdf(path)
    assert source == str(path)
    refused(xml, str(path), "'j1'", "'hinge'", source=source)


# ---------------------------------------------------------------------------------------------
# names and topology


def test_duplicate_link_name_is_refused():
    refused(robot(*chain(1), link("link1")), "link 'link1' is declared twice", "rename")


def test_duplicate_joint_name_is_refused():
    xml = robot(*chain(1), link("tool0", ""), joint("j1", "link1", "tool0", "fixed"))
    refused(xml, "joint 'j1' is declared twice", "rename")


def test_joint_naming_undeclared_link_is_refused():
    xml = robot(*chain(1), joint("j9", "link1", "ghost", "fixed"))
    refused(xml, "'j9'", "'ghost'", "not declared", '<link name="ghost"/>')


def test_closed_chain_is_refused_naming_both_joints():
    # parallel linkage: link2 hangs from link1 (j2) and directly from base (j_close)
    xml = robot(*chain(2), joint("j_close", "base", "link2"))
    refused(xml, "'link2'", "'j2'", "'j_close'", "URDF describes trees only",
            "model the closure as a constraint")


def test_cycle_is_refused():
    xml = robot(link("base"), link("a"), link("b"), joint("ab", "a", "b"), joint("ba", "b", "a"))
    refused(xml, "cycle", "'a'", "'b'", "remove one joint")


def test_joint_with_same_parent_and_child_is_refused():
    refused(robot(link("base"), joint("loop", "base", "base")), "'loop'", "both parent and child")


def test_disconnected_model_is_refused_naming_roots_and_suggesting_fixed_joint():
    xml = robot(*chain(1), link("camera_body"))
    refused(xml, "not connected", "'base'", "'camera_body'", 'type="fixed"',
            '<child link="camera_body"/>')


# ---------------------------------------------------------------------------------------------
# joint types, axes, floating/planar joints


@pytest.mark.parametrize("jtype", ["hinge", None])
def test_unknown_joint_type_is_refused_listing_supported_types(jtype):
    xml = robot(*chain(1))
    xml = xml.replace('type="revolute"', f'type="{jtype}"' if jtype else "")
    refused(xml, "'j1'", "not supported",
            "revolute, continuous, prismatic, fixed, floating, planar")


def test_floating_joint_below_the_root_is_refused():
    xml = robot(*chain(1), link("pod"), joint("pod_float", "link1", "pod", "floating", None, None))
    refused(xml, "'pod_float'", "not at the root", "one floating base")


def test_root_link_with_mass_under_floating_joint_is_refused():
    xml = robot(link("world"), joint("float", "world", "base", "floating", None, None), *chain(1))
    refused(xml, "'world'", "has mass", "remove its <inertial>", "'base'")


def test_floating_root_with_other_child_joints_is_refused():
    xml = robot(link("world", ""), joint("float", "world", "base", "floating", None, None),
                *chain(1), *fixed_leaf("world", "pillar", inertial()))
    refused(xml, "'world'", "'float'", "'pillar_joint'", "one floating base", "attach")


@pytest.mark.parametrize("axis", [None, "1 0 0", "0 1 1"])
def test_planar_joint_without_z_axis_is_refused(axis):
    xml = robot(link("world", ""), joint("table", "world", "base", "planar", axis, None), *chain(1))
    refused(xml, "planar joint 'table'", "x-y plane", '<axis xyz="0 0 1"/>')


def test_zero_length_axis_is_refused():
    refused(robot(*chain(2, axis="0 0 0")), "joint 'j1'", "zero length", '<axis xyz="0 0 1"/>')


def test_non_unit_axis_is_normalised_with_warning():
    rep = check_urdf(robot(*chain(1, axis="0 0 2")))
    np.testing.assert_allclose(rep.joints["j1"].axis, [0, 0, 1])
    warned(rep, "'j1'", "length 2", "normalised")
    model = load(rep)
    assert model.joints[2].shortname() == "JointModelRZ"  # Pinocchio sees the unit axis


def test_zero_axis_on_fixed_joint_is_ignored():
    # CAD exporters write <axis xyz="0 0 0"/> on fixed joints
    rep = check_urdf(robot(*chain(1), *fixed_leaf("link1", "tool0", axis="0 0 0")))
    assert other_warnings(rep) == ()
    np.testing.assert_allclose(rep.joints["tool0_joint"].axis, [1, 0, 0])
    load(rep)


def test_non_numeric_origin_is_refused():
    xml = robot(*chain(1)).replace('xyz="0.5 0 0"', 'xyz="0.5 ${l} 0"', 1)
    refused(xml, "'j1'", "<origin xyz>", "not a number")


def test_mimic_joint_warns_and_transmission_is_ignored():
    trans = ('<transmission name="t1"><type>transmission_interface/SimpleTransmission</type>'
             '<joint name="j1"/><actuator name="m1"/></transmission>')
    xml = robot(link("base"), link("link1"), joint("j1", "base", "link1"),
                link("link2"),
                joint("j2", "link1", "link2", extra='<mimic joint="j1" multiplier="1"/>'),
                trans)
    rep = check_urdf(xml)
    assert len(other_warnings(rep)) == 1
    warned(rep, "'j2'", "<mimic>", "not supported", "independent")
    assert load(rep).nq == 7 + 2


# ---------------------------------------------------------------------------------------------
# limits


@pytest.mark.parametrize("jtype,unit", [("revolute", "rad"), ("prismatic", "m")])
def test_joint_without_limit_gets_unlimited_sentinel_and_loads(jtype, unit):
    rep = check_urdf(robot(*chain(2, jtype=jtype, limit=None)))
    for name in ("j1", "j2"):
        warned(rep, f"{jtype} joint {name!r}", "no <limit>", "unlimited", f"+-1e10 {unit}")
        assert rep.filled_limits[name] == ("lower", "upper", "effort", "velocity")
    model = load(rep)
    assert model.nq == 7 + 2  # not converted to continuous: still one q per joint
    np.testing.assert_array_equal(model.lowerPositionLimit[7:], [-UNLIMITED] * 2)
    np.testing.assert_array_equal(model.upperPositionLimit[7:], [UNLIMITED] * 2)
    np.testing.assert_array_equal(model.effortLimit[6:], [UNLIMITED] * 2)
    np.testing.assert_array_equal(model.velocityLimit[6:], [UNLIMITED] * 2)


def test_limit_without_effort_and_velocity_is_filled_and_range_kept():
    rep = check_urdf(robot(*chain(1, limit='<limit lower="-1" upper="2"/>')))
    warned(rep, "'j1'", "no 'effort'", "unlimited")
    warned(rep, "'j1'", "no 'velocity'")
    assert rep.filled_limits == {"j1": ("effort", "velocity")}
    model = load(rep)
    assert model.lowerPositionLimit[7] == -1.0 and model.upperPositionLimit[7] == 2.0
    assert model.effortLimit[6] == UNLIMITED and model.velocityLimit[6] == UNLIMITED


def test_limit_without_lower_and_upper_is_unlimited_not_locked_at_zero():
    rep = check_urdf(robot(*chain(1, limit='<limit effort="5" velocity="1"/>')))
    warned(rep, "'j1'", "neither lower nor upper", "lock the joint")
    model = load(rep)
    assert model.lowerPositionLimit[7] == -UNLIMITED and model.upperPositionLimit[7] == UNLIMITED
    assert model.effortLimit[6] == 5.0


def test_limit_with_only_upper_uses_urdf_default_zero_for_lower():
    rep = check_urdf(robot(*chain(1, limit='<limit upper="1.5" effort="5" velocity="1"/>')))
    warned(rep, "'j1'", "no 'lower'", "default 0")
    model = load(rep)
    assert model.lowerPositionLimit[7] == 0.0 and model.upperPositionLimit[7] == 1.5


def test_limit_lower_above_upper_is_refused():
    refused(robot(*chain(1, limit='<limit lower="2" upper="-2" effort="1" velocity="1"/>')),
            "'j1'", "lower 2 > upper -2", "swap")


def test_non_finite_limit_is_refused():
    refused(robot(*chain(1, limit='<limit lower="-inf" upper="1" effort="1" velocity="1"/>')),
            "'j1'", "<limit lower>", "finite")


def test_continuous_and_fixed_joints_with_partial_limit_are_amended_so_pinocchio_loads():
    partial = '<limit lower="0" upper="0"/>'
    xml = robot(*chain(1, jtype="continuous", limit=partial), link("tool0", ""),
                joint("tool_joint", "link1", "tool0", "fixed", None, partial))
    rep = check_urdf(xml)
    assert rep.filled_limits == {"j1": ("effort", "velocity"), "tool_joint": ("effort", "velocity")}
    model = load(rep)
    assert model.nq == 7 + 2  # continuous: (cos, sin)


# ---------------------------------------------------------------------------------------------
# inertials and masses


def test_inertial_without_mass_is_refused():
    body = '<inertial><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>'
    refused(robot(link("base"), link("link1", body), joint("j1", "base", "link1")),
            "link 'link1'", "no <mass>", '<mass value="..."/>')


def test_inertial_without_inertia_is_refused():
    refused(robot(link("base", '<inertial><mass value="2"/></inertial>')),
            "link 'base'", "no <inertia>", "ixx")


@pytest.mark.parametrize("mass", ["-1", "nan", "inf", "heavy"])
def test_bad_mass_is_refused_naming_the_link(mass):
    xml = robot(link("base"), link("link1", inertial(mass)), joint("j1", "base", "link1"))
    refused(xml, "link 'link1'", mass, "kg")


def test_inertia_not_positive_definite_is_refused_with_principal_moments():
    xml = robot(link("base"), link("link1", inertial(1.0, ixx=1, iyy=1, izz=0)),
                joint("j1", "base", "link1"))
    refused(xml, "link 'link1'", "not positive definite", "principal moments 0, 1, 1")


def test_inertia_breaking_triangle_inequality_is_refused_with_principal_moments():
    xml = robot(link("base"), link("link1", inertial(1.0, ixx=1, iyy=1, izz=3)),
                joint("j1", "base", "link1"))
    refused(xml, "link 'link1'", "triangle inequality", "1, 1, 3", "recompute")


def test_frame_leaf_without_inertial_on_fixed_joint_is_accepted_silently():
    rep = check_urdf(robot(*chain(1), *fixed_leaf("link1", "ee_link")))
    assert other_warnings(rep) == ()
    assert rep.link_masses["ee_link"] == 0.0
    load(rep)


def test_massless_link_with_children_on_fixed_joint_is_accepted_with_warning():
    xml = robot(link("base"), link("mount", ""), joint("mount_joint", "base", "mount", "fixed"),
                link("link1"), joint("j1", "mount", "link1"))
    rep = check_urdf(xml)
    warned(rep, "link 'mount'", "no <inertial>", "'link1'", "massless frame")
    load(rep)


def test_massless_body_moved_by_revolute_joint_is_refused():
    xml = robot(link("base"), link("link1", ""), joint("j1", "base", "link1"))
    refused(xml, "the body moved by joint 'j1' has no mass", "add <inertial> to link 'link1'")


def test_massless_moving_link_is_accepted_when_a_fixed_child_carries_mass():
    xml = robot(link("base"), link("link1", ""), joint("j1", "base", "link1"),
                link("link1_mass"), joint("lump", "link1", "link1_mass", "fixed"))
    rep = check_urdf(xml)
    model = load(rep)
    data = model.createData()
    m = pin.crba(model, data, pin.neutral(model))
    assert np.linalg.matrix_rank(m) == model.nv  # the reason for the rule: non-singular


def test_base_body_without_mass_is_refused():
    xml = robot(link("base", ""), link("link1"), joint("j1", "base", "link1"))
    refused(xml, "base body", "'base'", "add <inertial> to link 'base'")


def test_root_link_with_an_inertial_warns_once_that_kdl_will_complain_and_how_to_fix():
    rep = check_urdf(robot(*chain(1)))
    assert len(rep.warnings) == 1
    warned(rep, "root link 'base' has an <inertial>", "robot_state_publisher (KDL)",
           "massless", "'base_inertia'", "fixed joint at its origin", "same dynamics")


BASE_INERTIA = ('<joint name="base_inertia_joint" type="fixed"><parent link="base"/>'
                '<child link="base_inertia"/><origin xyz="0 0 0" rpy="0 0 0"/></joint>')


def test_massless_root_with_its_inertial_on_a_fixed_child_has_no_warning_and_same_dynamics():
    massive_root = robot(*chain(2))
    ros_convention = robot(link("base", ""), link("base_inertia"), BASE_INERTIA, *chain(2)[1:])
    rep = check_urdf(ros_convention)
    assert rep.warnings == () and rep.base_link == "base"
    before, after = load(check_urdf(massive_root)), load(rep)
    # Pinocchio lumps the fixed child into the root joint's body: the inertias are equal to
    # round-off (here exactly: the child sits at the root's origin), so is the mass matrix.
    for j in range(1, before.njoints):
        np.testing.assert_allclose(after.inertias[j].matrix(), before.inertias[j].matrix(),
                                   rtol=0, atol=1e-15)
    q = pin.randomConfiguration(before, -np.ones(before.nq), np.ones(before.nq))
    np.testing.assert_allclose(pin.crba(after, after.createData(), q),
                               pin.crba(before, before.createData(), q), rtol=0, atol=1e-14)


def test_zero_mass_dummy_leaf_is_accepted_with_warning():
    xml = robot(*chain(1), *fixed_leaf("link1", "dummy", inertial(0, 0, 0, 0)))
    rep = check_urdf(xml)
    warned(rep, "link 'dummy'", "mass 0", "dummy")
    assert rep.link_masses["dummy"] == 0.0
    load(rep)


def test_zero_mass_dummy_moved_by_joint_is_refused_like_a_missing_inertial():
    xml = robot(link("base"), link("link1", inertial(0, 0, 0, 0)), joint("j1", "base", "link1"))
    refused(xml, "joint 'j1' has no mass", "link 'link1'")


def test_zero_mass_with_nonzero_inertia_is_refused():
    xml = robot(*chain(1), link("odd", inertial(0)), joint("oj", "link1", "odd", "fixed"))
    refused(xml, "link 'odd'", "mass is 0 but the inertia is not zero", "zero all six")


# ---------------------------------------------------------------------------------------------
# meshes


def _mesh(uri: str) -> str:
    return f'<visual><geometry><mesh filename="{uri}"/></geometry></visual>'


def test_missing_local_mesh_gives_warning_only(tmp_path):
    gone = tmp_path / "gone.stl"
    xml = robot(link("base", None, _mesh(str(gone))), link("link1", None, _mesh(f"file://{gone}")),
                joint("j1", "base", "link1"))
    rep = check_urdf(xml)
    warned(rep, "link 'base'", "not found", "never for dynamics")
    warned(rep, "link 'link1'", str(gone))
    load(rep)


def test_relative_mesh_is_checked_against_the_urdf_folder(tmp_path):
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "base.stl").write_text("solid x\nendsolid x\n")
    path = tmp_path / "bot.urdf"
    path.write_text(robot(link("base", None, _mesh("meshes/base.stl")),
                          link("link1", None, _mesh("meshes/arm.stl")),
                          joint("j1", "base", "link1")))
    xml, source = read_urdf(path)
    rep = check_urdf(xml, source=source)
    assert len(other_warnings(rep)) == 1
    warned(rep, "link 'link1'", "meshes/arm.stl", str(tmp_path / "meshes" / "arm.stl"))


def test_package_uri_and_relative_mesh_of_a_string_are_not_checked():
    xml = robot(link("base", None, _mesh("package://nowhere/meshes/base.dae")),
                link("link1", None, _mesh("meshes/arm.stl")), joint("j1", "base", "link1"))
    assert other_warnings(check_urdf(xml)) == ()


def test_mesh_without_filename_is_refused():
    refused(robot(link("base", None, "<visual><geometry><mesh/></geometry></visual>")),
            "link 'base'", "<mesh> without filename")


# ---------------------------------------------------------------------------------------------
# read_urdf


def test_read_urdf_missing_file_names_the_path(tmp_path):
    missing = tmp_path / "nope.urdf"
    with pytest.raises(ModelError, match="nope.urdf") as info:
        read_urdf(missing)
    assert "check the path" in str(info.value)


def test_read_urdf_tells_xml_text_from_a_path(tmp_path):
    text = "  \n" + robot(link("base"))
    assert read_urdf(text) == (text, "<string>")
    path = tmp_path / "b.urdf"
    path.write_text(text)
    assert read_urdf(str(path)) == (text, str(path))
    assert read_urdf(path) == (text, str(path))


def test_a_urdf_warning_logged_at_load_names_its_file_once(tmp_path, package_log):
    from freeflyer_control.model import load_model

    path = tmp_path / "no_limit.urdf"
    path.write_text(robot(*chain(1, jtype="revolute", limit=None)))
    with package_log.at_level(logging.WARNING, "freeflyer_control.model.loader"):
        load_model(path, base="planar")
    assert package_log.messages, "a revolute joint without <limit> is warned about"
    for message in package_log.messages:
        assert message.count(str(path)) == 1, message
        assert message.startswith(f"{path}: ")
