"""Re-rooting: the same robot with any link as the floating root (doc 004: no body is special).

A model-layer transformation of the URDF tree. Walking from the new root R to the old root,
every joint on the path is reversed: its parent and child swap and its axis flips sign, so the
same joint angle describes the same physical configuration and the same joint torque acts on
the same bodies. Each link L on the path moves its frame to where the reversed joint is: its new
frame is old_frame * T_L, with T_L the origin of the old joint from L to its child on the path
(T_R = identity, so R keeps its frame), and everything written in L's frame (inertial, visual,
collision, the origins of the joints it is parent of) is re-expressed with T_L^-1. A reversed
joint's origin is then T_C^-1 in its new parent C's new frame. The moved links' Pinocchio body
frames are put back at their original places afterwards (:func:`restore_link_frames`): the
frame "link2" is the same place on the same body whatever the root.

The physics does not change (test/test_reroot.py): the same accelerations of every body in the
world, kinetic energy, momentum and operational-space inertia, for the state mapped by
:func:`rerooted_state`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin

from freeflyer_control.errors import ModelError
from freeflyer_control.model.urdf_checks import UrdfReport


def _origin(el: ET.Element | None) -> pin.SE3:
    o = el.find("origin") if el is not None else None
    if o is None:
        return pin.SE3.Identity()
    xyz = np.array([float(x) for x in o.get("xyz", "0 0 0").split()])
    rpy = np.array([float(x) for x in o.get("rpy", "0 0 0").split()])
    return pin.SE3(pin.rpy.rpyToMatrix(rpy), xyz)


def _set_origin(el: ET.Element, M: pin.SE3) -> None:
    o = el.find("origin")
    if o is None:
        o = ET.SubElement(el, "origin")
    o.set("xyz", " ".join(repr(float(x)) for x in M.translation))
    o.set("rpy", " ".join(repr(float(x)) for x in pin.rpy.matrixToRpy(M.rotation)))


def path_to_root(report: UrdfReport, link: str) -> list[str]:
    """Joint names from ``link`` up to the URDF's base link (first joint: the one whose child
    is ``link``)."""
    parent_joint = {j.child: j for j in report.joints.values() if j is not report.root_joint}
    path, cur = [], link
    while cur != report.base_link:
        joint = parent_joint[cur]
        path.append(joint.name)
        cur = joint.parent
    return path


def reroot_urdf(report: UrdfReport, root: str) -> tuple[str, dict[str, pin.SE3]]:
    """The URDF text of ``report`` with link ``root`` as the root (see the module docstring),
    and T_L for every link whose URDF frame moved (:func:`restore_link_frames` puts the
    links' Pinocchio frames back where the user knows them).

    A floating/planar root joint (and its world link) is dropped: the loader adds the base
    joint to the new root.

    Raises:
        ModelError: ``root`` is not a link of the URDF.
    """
    if root not in report.links or (report.root_joint and root == report.root_joint.parent):
        links = [l for l in report.links if not report.root_joint or l != report.root_joint.parent]
        raise ModelError(f"unknown root link '{root}' in robot '{report.robot_name}'; links: {links}")
    tree = ET.ElementTree(ET.fromstring(report.xml))
    robot = tree.getroot()
    links = {el.get("name"): el for el in robot.findall("link")}
    joints = {el.get("name"): el for el in robot.findall("joint")}
    if report.root_joint is not None:
        robot.remove(joints.pop(report.root_joint.name))
        robot.remove(links.pop(report.root_joint.parent))

    path = path_to_root(report, root)  # joints, from the new root towards the old one
    # T_L for every link on the path: the origin of the joint to its child on the path.
    shift = {root: pin.SE3.Identity()}
    for name in path:
        shift[report.joints[name].parent] = _origin(joints[name])

    for lname, T in shift.items():
        T_inv = T.inverse()
        for tag in ("inertial", "visual", "collision"):
            for el in links[lname].findall(tag):
                _set_origin(el, T_inv * _origin(el))
    on_path = set(path)
    for jname, jel in joints.items():
        parent = jel.find("parent").get("link")
        if jname in on_path:
            child = jel.find("child").get("link")
            jel.find("parent").set("link", child)
            jel.find("child").set("link", parent)
            _set_origin(jel, shift[child].inverse())
            axis = jel.find("axis")
            if jel.get("type") != "fixed":
                if axis is None:
                    axis = ET.SubElement(jel, "axis", xyz="1 0 0")  # the URDF default
                a = -np.array([float(x) for x in axis.get("xyz").split()])
                axis.set("xyz", " ".join(repr(float(x) + 0.0) for x in a))
        elif parent in shift:
            _set_origin(jel, shift[parent].inverse() * _origin(jel))
    moved = {name: T for name, T in shift.items() if name != root}
    return ET.tostring(robot, encoding="unicode"), moved


def restore_link_frames(model: pin.Model, moved: dict[str, pin.SE3]) -> None:
    """Put each moved link's Pinocchio body frame back at the link's original URDF frame
    (old frame = new frame * T_L^-1), so that a frame name means the same place under every
    rooting. Inertias, geometry and joints stay in the new frames, where Pinocchio put them."""
    for name, T in moved.items():
        fid = model.getFrameId(name)
        frame = model.frames[fid]
        frame.placement = frame.placement * T.inverse()
        model.frames[fid] = frame
