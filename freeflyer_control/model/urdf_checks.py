"""Strict checks of a URDF before it reaches Pinocchio.

:func:`check_urdf` parses the URDF text with :mod:`xml.etree.ElementTree` (no urdfdom), checks it
against the rules below and returns a :class:`UrdfReport`: the tree (root link, base body, root
joint, joints, links, masses), the warnings for what was accepted, and the XML to hand to
Pinocchio, amended where we accept sloppiness that urdfdom (inside Pinocchio) would refuse or
silently misread. Every refusal is a :class:`~freeflyer_control.errors.ModelError` whose message
starts with the source (file path or ``<string>``), names the link / joint / attribute at fault
and says what to change.

Real URDFs are sloppy (DESIGN.md §3): SPART's models have revolute joints without ``<limit>``,
CAD exporters write frame links without ``<inertial>`` and ``<axis xyz="0 0 0"/>`` on fixed
joints, meshes go missing. What is harmless is accepted (with a warning where the user should
know); what would give wrong or singular dynamics is refused.

What we see -> what we do
=========================

===========================================================  ==========================================
what we see                                                  what we do
===========================================================  ==========================================
empty text, not XML, XML syntax error                        error, with line and column
unexpanded xacro (elements in the xacro namespace)           error: run ``xacro`` first
root element is not ``<robot>``; ``<robot>`` without name    error
link / joint without name; duplicate link or joint name      error naming the name
joint without ``<parent link>`` / ``<child link>``           error naming the joint
joint naming an undeclared parent / child link               error naming joint and link
joint type missing or unknown                                error listing the supported types
                                                             (revolute, continuous, prismatic, fixed,
                                                             floating, planar)
link with two parent joints (closed chain)                   error naming the link and both joints:
                                                             keep one joint, model the closure as a
                                                             constraint
joint whose parent is its child; links on a cycle            error naming the links
several root links (disconnected model)                      error naming the roots, suggesting a
                                                             fixed joint to connect them
``floating`` / ``planar`` joint whose parent is the root     accepted: it is ``root_joint``, its child
link                                                         is ``base_link`` (the loader decides how
                                                             to map it to Pinocchio's root joint)
... but the root link has mass, or other child joints        error (the root must be a massless dummy
                                                             such as ``world``)
``floating`` / ``planar`` joint anywhere else                error: a free-flyer has one floating base
``planar`` joint whose axis is not +-z (or has no axis)      error: Pinocchio's planar joint moves in
                                                             the x-y plane only
``<axis>`` of zero length on a revolute, continuous,         error (Pinocchio would build a joint that
prismatic or planar joint                                    never moves)
non-unit axis                                                normalised in ``JointInfo`` and in the
                                                             amended XML (so Pinocchio picks RX/RY/RZ);
                                                             warning if the norm is off by > 1e-6
``<axis>`` on fixed / floating joints                        ignored (CAD exporters write ``0 0 0``);
                                                             ``JointInfo.axis`` is the given axis if
                                                             usable, else (1, 0, 0)
non-numeric or non-finite origin / axis / limit values       error naming joint and attribute
an origin (joint or inertial) beyond 1 km, or an origin      error naming it: a unit slip (no robot is
angle beyond 1000 rad                                        a kilometre across)
a limit beyond 1e10 (the "unlimited" sentinel below)         error naming joint and attribute
``velocity="0"`` on a revolute, continuous or prismatic      error: no speed would be plausible and
joint                                                        any motion would read as a runaway
revolute / prismatic joint without ``<limit>``               warning; amended XML gets
                                                             ``<limit lower="-1e10" upper="1e10"
                                                             effort="1e10" velocity="1e10"/>``
                                                             (see "Unlimited joints" below)
``<limit>`` without ``lower`` and ``upper`` (revolute,       warning; both filled with -+1e10 (the
prismatic)                                                   URDF default 0 for both would lock the
                                                             joint at 0)
``<limit>`` with only one of ``lower`` / ``upper``           warning; the URDF default 0 applies to the
                                                             missing one (as urdfdom does); error if
                                                             that leaves lower > upper
``<limit>`` without ``effort`` or ``velocity`` (any joint    warning; filled with 1e10 (urdfdom refuses
type: urdfdom parses ``<limit>`` on every joint)             the whole file otherwise)
lower > upper; negative effort or velocity                   error naming the joint
``<mimic>``                                                  warning: not supported, the joint is an
                                                             independent degree of freedom
``<transmission>``, ``<gazebo>``, ``<calibration>`` ...      ignored
``<inertial>`` without ``<mass>`` or ``<inertia>``, or       error naming the link (urdfdom refuses it,
an inertia attribute missing                                 Pinocchio then silently uses zero inertia)
mass negative, NaN, infinite, non-numeric, or over 1e6 kg   error naming the link
a radius of gyration sqrt(I/m) beyond 1 km                   error naming the link (check the units)
mass exactly 0 and all six inertia values 0                  a *dummy link*: treated like a link
                                                             without ``<inertial>`` (rules below),
                                                             plus a warning
mass 0 with non-zero inertia                                 error (set the mass, or zero the inertia)
mass > 0, inertia not positive definite, or principal        error naming the link and giving the
moments break the triangle inequality (each <= sum of the    principal moments
other two, relative tolerance 1e-9)
massless link (no ``<inertial>`` or dummy) that is a leaf    accepted silently (ee_link, tool0, sensor
attached by a fixed joint                                    frames); warning for a dummy
massless link attached by a fixed joint, with child links    warning
massless root dummy of a floating / planar root joint        accepted silently (e.g. ``world``)
massless base link (root without floating joint)             accepted if the base body has mass
root link with ``<inertial>`` (no floating / planar root     warning: robot_state_publisher (KDL)
joint)                                                       warns at every start that it does not
                                                             support a root link with an inertia;
                                                             the fix (ROS convention): a massless
                                                             root link and the inertial on a child
                                                             link fixed at the same origin, which
                                                             Pinocchio merges back (same dynamics)
the body moved by a revolute / continuous / prismatic        error "the body moved by joint X has no
joint (its child link plus the links fixed to it) has no     mass; add <inertial> to link Y" (the mass
mass                                                         matrix would be singular)
the base body (base_link plus the links fixed to it) has     error naming base_link
no mass
``<mesh filename>``: absolute path, ``file://`` URI, or      warning if the file does not exist (meshes
relative path when ``source`` is a URDF file path            are never loaded for dynamics)
``<mesh filename>``: ``package://`` or another URI scheme,   not checked
or relative path with an XML string source
``<mesh>`` without ``filename``                              error (urdfdom refuses the link's visual)
===========================================================  ==========================================

Unlimited joints
----------------
urdfdom refuses a revolute or prismatic joint without ``<limit>``, a ``<limit>`` without
``effort`` or ``velocity``, and any non-finite number (``inf`` is rejected), so "no limit" cannot be
written as infinity. We do not turn a limit-less revolute joint into ``continuous``: that would
change its configuration from an angle to (cos, sin) and nq with it. Instead the amended XML
carries the finite sentinel :data:`UNLIMITED` = 1e10 (rad, m, N m or N, m/s or rad/s), so Pinocchio
reports ``lowerPositionLimit = -1e10``, ``upperPositionLimit = 1e10``, ``effortLimit = 1e10``,
``velocityLimit = 1e10`` for those entries: far beyond any real value, yet finite, so that limit
arithmetic (ranges, clamping, random configurations) does not overflow. The report lists in
:attr:`UrdfReport.filled_limits` which attributes of which joint were filled, so the loader can
tell "unlimited" from a real limit (and may replace them by ``inf`` in the Pinocchio model).

``UrdfReport.xml`` is the input text unchanged when nothing had to be amended, otherwise the
re-serialised tree (comments dropped, element namespaces stripped).
"""

from __future__ import annotations

import math
import os
import urllib.parse
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from freeflyer_control.errors import ModelError

__all__ = ["JointInfo", "UrdfReport", "check_urdf", "read_urdf", "UNLIMITED", "JOINT_TYPES"]

#: Finite stand-in for "no limit" written into amended ``<limit>`` elements (see module doc).
UNLIMITED = 1e10
# Physical ranges of what a URDF describes (beyond them: a unit slip or a typo, which would make
# the plant diverge with advice no control rate can follow).
MAX_DISTANCE = 1e3     # m: a joint or a CoM a kilometre from its link (no robot is larger)
MAX_ANGLE = 1e3        # rad: an origin's roll, pitch or yaw (beyond a thousand radians is a typo)
MAX_LINK_MASS = 1e6    # kg: a thousand tonnes (the ISS is 420 t)
_WHY_DISTANCE = "no robot is a kilometre across: a unit slip (mm for m?)"

MOVING_TYPES = ("revolute", "continuous", "prismatic")
ROOT_TYPES = ("floating", "planar")
JOINT_TYPES = MOVING_TYPES + ("fixed",) + ROOT_TYPES
_AXIS_TYPES = MOVING_TYPES + ("planar",)
_INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
_TRIANGLE_RTOL = 1e-9
_AXIS_NORM_TOL = 1e-6
# One line, in report.warnings (so `freeflyer check` and the loader's log show it).
ROOT_INERTIA_WARNING = (
    "root link {root!r} has an <inertial>, so robot_state_publisher (KDL) warns at every start; "
    "make it massless: move the <inertial> to a child link (e.g. '{root}_inertia') on a fixed "
    "joint at its origin (Pinocchio merges it back: same dynamics)"
)


@dataclass(frozen=True)
class JointInfo:
    """One URDF joint as written (axis normalised).

    Attributes:
        name: joint name.
        type: URDF type: revolute, continuous, prismatic, fixed, floating or planar.
        parent: parent link name.
        child: child link name.
        axis: unit axis in the joint frame (URDF default (1, 0, 0)).
        origin_xyz: (3,) m, joint frame origin in the parent link frame.
        origin_rpy: (3,) rad, joint frame orientation (roll, pitch, yaw) in the parent link frame.
    """

    name: str
    type: str
    parent: str
    child: str
    axis: np.ndarray
    origin_xyz: np.ndarray
    origin_rpy: np.ndarray


@dataclass(frozen=True)
class UrdfReport:
    """What :func:`check_urdf` found.

    Attributes:
        xml: the URDF text to hand to Pinocchio (amended where we accept sloppiness).
        robot_name: ``<robot name>``.
        root_link: the root link of the URDF tree.
        base_link: the base body: the root link, or the child of a floating/planar root joint.
        root_joint: the floating/planar joint at the root, if the URDF has one.
        joints: all joints by name, in document order.
        links: all link names, in document order.
        link_masses: kg per link; 0.0 for links without ``<inertial>`` and dummy links.
        warnings: what we accepted but the user should know.
        filled_limits: joint name -> ``<limit>`` attributes we inserted with the sentinel
            :data:`UNLIMITED` (or 0 per the URDF default) in the amended XML; the joint is
            unlimited in those quantities.
    """

    xml: str
    robot_name: str
    root_link: str
    base_link: str
    root_joint: JointInfo | None
    joints: dict[str, JointInfo]
    links: tuple[str, ...]
    link_masses: dict[str, float]
    warnings: tuple[str, ...]
    filled_limits: dict[str, tuple[str, ...]] = field(default_factory=dict)


def read_urdf(path_or_xml: str | os.PathLike) -> tuple[str, str]:
    """Return ``(xml text, source label)`` for a URDF given as XML text or as a file path.

    A ``str`` whose first non-blank character is ``<`` is XML (label ``"<string>"``); anything
    else is a path (label: the path as given).

    Raises:
        ModelError: the file does not exist, is a directory, or cannot be read as UTF-8 text.
    """
    if isinstance(path_or_xml, str) and path_or_xml.lstrip().startswith("<"):
        return path_or_xml, "<string>"
    if isinstance(path_or_xml, bytes):
        raise ModelError("read_urdf: got bytes; pass the URDF as a str (XML text) or a file path")
    path = Path(path_or_xml)
    if not path.exists():
        raise ModelError(
            f"URDF file not found: {str(path)!r} (resolved to {str(path.absolute())!r}); "
            "check the path, or pass the URDF text itself (starting with '<')"
        )
    if path.is_dir():
        raise ModelError(f"URDF path {str(path)!r} is a directory; give the .urdf file inside it")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(
            f"cannot read URDF file {str(path)!r}: {exc}; make it a readable UTF-8 text file"
        ) from exc
    return text, str(path)


# --------------------------------------------------------------------------------------------
# small parsing helpers


class _Ctx:
    """Source label, warnings and amendment bookkeeping for one check."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.warnings: list[str] = []
        self.amended = False

    def error(self, msg: str) -> ModelError:
        return ModelError(f"{self.source}: {msg}")

    def warn(self, msg: str) -> None:
        self.warnings.append(f"{self.source}: {msg}")


def _local(tag: object) -> str:
    if not isinstance(tag, str):  # comments / processing instructions
        return ""
    return tag.rsplit("}", 1)[-1]


def _float(ctx: _Ctx, text: str | None, what: str, fix: str) -> float:
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ctx.error(f"{what} is {text!r}, not a number; {fix}") from None
    if not math.isfinite(value):
        raise ctx.error(f"{what} is {text!r}, not a finite number; {fix}")
    return value


def _vec3(
    ctx: _Ctx, text: str | None, default: tuple[float, float, float], what: str,
    bound: float | None = None, why: str = "",
) -> np.ndarray:
    if text is None:
        return np.array(default, dtype=float)
    parts = text.split()
    fix = 'write three finite numbers separated by spaces, e.g. "0 0 1"'
    if len(parts) != 3:
        raise ctx.error(f"{what} is {_quoted(text)}, not three numbers; {fix}")
    v = np.array([_float(ctx, p, what, fix) for p in parts], dtype=float)
    if bound is not None and np.abs(v).max() > bound:
        raise ctx.error(f"{what} is {_quoted(text)}, beyond +-{bound:g} ({why}); check the units")
    return v


def _quoted(text: str, limit: int = 60) -> str:
    """``text`` quoted for a message, cut to one short line."""
    quoted = repr(text)
    return quoted if len(quoted) <= limit else quoted[: limit - 4] + "...'"


def _fmt(v: float) -> str:
    return repr(float(v))


# --------------------------------------------------------------------------------------------
# links


@dataclass
class _Link:
    name: str
    mass: float = 0.0
    massive: bool = False  # mass > 0
    dummy: bool = False  # <inertial> with mass 0 and zero inertia
    elem: ET.Element | None = None


def _check_inertial(ctx: _Ctx, link: _Link, inertial: ET.Element) -> None:
    where = f"link {link.name!r}"
    mass_el = inertial.find("mass")
    if mass_el is None:
        raise ctx.error(
            f'{where}: <inertial> has no <mass>; add <mass value="..."/> (kg) or remove '
            "<inertial> if the link is a massless frame"
        )
    mass_txt = mass_el.get("value")
    try:
        mass = float(mass_txt)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ctx.error(
            f'{where}: <mass value={mass_txt!r}> is not a number; write the mass in kg, e.g. '
            '<mass value="1.5"/>'
        ) from None
    if not math.isfinite(mass) or mass < 0.0:
        raise ctx.error(
            f"{where}: mass {mass_txt!r} is not a finite non-negative number; give the link's "
            "mass in kg (> 0), or remove <inertial> if it is a massless frame"
        )
    if mass > MAX_LINK_MASS:
        raise ctx.error(
            f"{where}: mass {mass_txt!r} kg is beyond {MAX_LINK_MASS:g} kg (a thousand tonnes: no robot link "
            "weighs more); check the units (kg, not g)"
        )
    inertia_el = inertial.find("inertia")
    if inertia_el is None:
        raise ctx.error(
            f'{where}: <inertial> has no <inertia>; add <inertia ixx="..." ixy="0" ixz="0" '
            'iyy="..." iyz="0" izz="..."/> (kg m^2, about the centre of mass)'
        )
    vals = {}
    for key in _INERTIA_KEYS:
        txt = inertia_el.get(key)
        if txt is None:
            raise ctx.error(
                f"{where}: <inertia> lacks attribute {key!r}; give all six of "
                "ixx ixy ixz iyy iyz izz (kg m^2; write 0 for zero products of inertia)"
            )
        vals[key] = _float(ctx, txt, f"{where}: inertia {key}", "give the value in kg m^2")
    origin = inertial.find("origin")
    if origin is not None:
        _vec3(ctx, origin.get("xyz"), (0.0, 0.0, 0.0), f"{where}: <inertial><origin xyz>", MAX_DISTANCE,
              _WHY_DISTANCE)
        _vec3(ctx, origin.get("rpy"), (0.0, 0.0, 0.0), f"{where}: <inertial><origin rpy>", MAX_ANGLE,
              "beyond a thousand radians is a typo, not an orientation")

    if mass == 0.0:
        if any(v != 0.0 for v in vals.values()):
            raise ctx.error(
                f"{where}: mass is 0 but the inertia is not zero; give the link's real mass, or "
                "zero all six inertia values (or remove <inertial>) to make it a massless "
                "dummy link"
            )
        link.dummy = True
        return

    inertia = np.array(
        [
            [vals["ixx"], vals["ixy"], vals["ixz"]],
            [vals["ixy"], vals["iyy"], vals["iyz"]],
            [vals["ixz"], vals["iyz"], vals["izz"]],
        ]
    )
    moments = np.linalg.eigvalsh(inertia)  # the <origin rpy> rotation does not change them
    shown = ", ".join(f"{m:.6g}" for m in moments)
    if moments[0] <= 0.0:
        raise ctx.error(
            f"{where}: inertia is not positive definite (principal moments {shown} kg m^2); "
            "check the signs and units of ixx..izz (ixy, ixz, iyz are products of inertia, often "
            "the negated integrals), and give a point mass a small inertia such as 2/5 m r^2"
        )
    gyration = math.sqrt(float(moments[-1]) / mass)
    if gyration > MAX_DISTANCE:
        raise ctx.error(
            f"{where}: inertia (principal moments {shown} kg m^2) for a mass of {mass:g} kg has a radius of "
            f"gyration sqrt(I/m) of {gyration:.3g} m, beyond {MAX_DISTANCE:g} m ({_WHY_DISTANCE}); check the "
            "units (kg m^2, not g mm^2 or kg mm^2)"
        )
    total = float(moments.sum())
    for k in range(3):
        others = total - moments[k]
        if moments[k] > others + _TRIANGLE_RTOL * total:
            raise ctx.error(
                f"{where}: principal moments of inertia {shown} kg m^2 break the triangle "
                f"inequality ({moments[k]:.6g} > {others:.6g}, the sum of the other two): no "
                "physical body has this inertia; recompute it from the CAD model (check the "
                "units and that it is taken about the centre of mass)"
            )
    link.mass = mass
    link.massive = True


# --------------------------------------------------------------------------------------------
# joints


@dataclass
class _Joint:
    info: JointInfo
    elem: ET.Element


def _link_ref(ctx: _Ctx, jel: ET.Element, name: str, which: str) -> str:
    el = jel.find(which)
    link = el.get("link") if el is not None else None
    if not link:
        raise ctx.error(
            f'joint {name!r} has no <{which} link="..."/>; add it, naming a declared link'
        )
    return link


def _check_axis(ctx: _Ctx, jel: ET.Element, name: str, jtype: str) -> np.ndarray:
    axis_el = jel.find("axis")
    text = axis_el.get("xyz") if axis_el is not None else None
    if jtype not in _AXIS_TYPES:  # fixed / floating: urdfdom ignores the axis, so do we
        try:
            axis = _vec3(ctx, text, (1.0, 0.0, 0.0), "")
        except ModelError:
            return np.array([1.0, 0.0, 0.0])
        norm = float(np.linalg.norm(axis))
        return axis / norm if norm > 0.0 else np.array([1.0, 0.0, 0.0])
    axis = _vec3(ctx, text, (1.0, 0.0, 0.0), f"joint {name!r}: <axis xyz>")
    norm = float(np.linalg.norm(axis))
    if norm == 0.0:
        raise ctx.error(
            f'joint {name!r} ({jtype}): <axis xyz="{text}"/> has zero length; give the unit '
            'vector the joint moves along / about, in the joint frame, e.g. <axis xyz="0 0 1"/>'
        )
    unit = axis / norm
    if abs(norm - 1.0) > _AXIS_NORM_TOL:
        ctx.warn(
            f"joint {name!r}: axis {text!r} has length {norm:.6g}; normalised to "
            f"{' '.join(f'{a:.9g}' for a in unit)} (also in the XML handed to Pinocchio)"
        )
        axis_el.set("xyz", " ".join(_fmt(a) for a in unit))  # type: ignore[union-attr]
        ctx.amended = True
    return unit


def _check_limit(
    ctx: _Ctx, jel: ET.Element, name: str, jtype: str, filled: dict[str, tuple[str, ...]]
) -> None:
    lim = jel.find("limit")
    needs_range = jtype in ("revolute", "prismatic")
    unit = "m" if jtype == "prismatic" else "rad"
    if lim is None:
        if needs_range:
            ET.SubElement(
                jel,
                "limit",
                {
                    "lower": _fmt(-UNLIMITED),
                    "upper": _fmt(UNLIMITED),
                    "effort": _fmt(UNLIMITED),
                    "velocity": _fmt(UNLIMITED),
                },
            )
            ctx.amended = True
            filled[name] = ("lower", "upper", "effort", "velocity")
            ctx.warn(
                f"{jtype} joint {name!r} has no <limit> (urdfdom would refuse the file); "
                f"treated as unlimited: inserted <limit lower=\"-1e10\" upper=\"1e10\" "
                f"effort=\"1e10\" velocity=\"1e10\"/>, so Pinocchio reports position limits "
                f"+-1e10 {unit} and effort/velocity limits 1e10; add a real <limit> to bound it"
            )
        return

    added: list[str] = []
    for key in ("lower", "upper", "effort", "velocity"):
        txt = lim.get(key)
        if txt is not None:
            value = _float(ctx, txt, f"joint {name!r}: <limit {key}>", "give a finite number (SI units)")
            if abs(value) > UNLIMITED:
                raise ctx.error(
                    f"joint {name!r}: <limit {key}=\"{txt}\"> is beyond {UNLIMITED:g}, which stands for "
                    f"'unlimited' here (a larger bound overflows the limit arithmetic); give the real limit, "
                    f"or leave {key} out for no limit"
                )

    if needs_range:
        has_lo, has_hi = lim.get("lower") is not None, lim.get("upper") is not None
        if not has_lo and not has_hi:
            lim.set("lower", _fmt(-UNLIMITED))
            lim.set("upper", _fmt(UNLIMITED))
            added += ["lower", "upper"]
            ctx.warn(
                f"{jtype} joint {name!r}: <limit> has neither lower nor upper (the URDF default "
                f"0 for both would lock the joint at 0); treated as unlimited: set to +-1e10 {unit}"
            )
        elif not (has_lo and has_hi):
            missing = "lower" if not has_lo else "upper"
            ctx.warn(
                f"{jtype} joint {name!r}: <limit> has no {missing!r}; the URDF default 0 applies "
                f"({missing} = 0 {unit}); write it explicitly to silence this warning"
            )
        lo = float(lim.get("lower", "0"))
        hi = float(lim.get("upper", "0"))
        if lo > hi:
            raise ctx.error(
                f"joint {name!r}: <limit> lower {lo:g} > upper {hi:g} {unit}; swap them (or fix "
                "the missing one, which defaults to 0)"
            )

    for key in ("effort", "velocity"):
        txt = lim.get(key)
        if txt is None:
            lim.set(key, _fmt(UNLIMITED))
            added.append(key)
            ctx.warn(
                f"joint {name!r}: <limit> has no {key!r} (urdfdom would refuse the file); "
                f"treated as unlimited: set to 1e10"
            )
        elif float(txt) < 0.0:
            raise ctx.error(
                f"joint {name!r}: <limit {key}=\"{txt}\"> is negative; give the magnitude (>= 0)"
            )
        elif key == "velocity" and float(txt) == 0.0 and jtype in MOVING_TYPES:
            raise ctx.error(
                f"{jtype} joint {name!r}: <limit velocity=\"{txt}\"> says it cannot move (no speed is "
                "plausible, and any motion would read as a runaway); give its real speed limit "
                f"({unit}/s), or leave velocity out for no limit"
            )
    if added:
        ctx.amended = True
        filled[name] = tuple(added)


# --------------------------------------------------------------------------------------------
# meshes


def _check_meshes(ctx: _Ctx, link: _Link, base_dir: Path | None) -> None:
    assert link.elem is not None
    for mesh in link.elem.iter("mesh"):
        fname = mesh.get("filename")
        if not fname:
            raise ctx.error(
                f'link {link.name!r}: <mesh> without filename (urdfdom refuses it); add '
                'filename="package://..." or remove the <visual>/<collision> element'
            )
        scheme = urllib.parse.urlparse(fname).scheme
        if scheme == "file":
            path = Path(urllib.parse.unquote(urllib.parse.urlparse(fname).path))
        elif scheme and len(scheme) > 1:  # package://, http://, ... (1 letter: a Windows drive)
            continue
        else:
            path = Path(fname)
            if not path.is_absolute():
                if base_dir is None:
                    continue
                path = base_dir / path
        if not path.exists():
            ctx.warn(
                f"link {link.name!r}: mesh {fname!r} not found (looked at {str(path)!r}); "
                "accepted, since meshes are only used for display, never for dynamics"
            )


# --------------------------------------------------------------------------------------------
# the check


def check_urdf(xml: str, *, source: str = "<string>") -> UrdfReport:
    """Check a URDF text and return what it describes; raise :class:`ModelError` if unusable.

    Args:
        xml: the URDF as text (use :func:`read_urdf` to get it from a file).
        source: label used in messages; when it names an existing file, relative mesh paths
            are checked against that file's folder.

    Returns:
        the :class:`UrdfReport` (see the module docstring for every rule).
    """
    ctx = _Ctx(source)
    if not isinstance(xml, str):
        raise ModelError(
            f"{source}: check_urdf expects the URDF text as a str, got {type(xml).__name__}; "
            "use read_urdf() to read a file"
        )
    if not xml.strip():
        raise ctx.error("the URDF text is empty; give the URDF XML (<robot name=...>...</robot>)")
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        line, col = getattr(exc, "position", (0, 0))
        raise ctx.error(
            f"not well-formed XML at line {line}, column {col + 1} ({exc}); fix the XML syntax "
            "there (a URDF is an XML document with a <robot> root element)"
        ) from None

    for el in root.iter():
        if isinstance(el.tag, str) and el.tag.startswith("{"):
            if "xacro" in el.tag.split("}", 1)[0]:
                raise ctx.error(
                    f"contains xacro element <xacro:{_local(el.tag)}>: this is an unexpanded "
                    "xacro file; expand it first (xacro robot.urdf.xacro > robot.urdf)"
                )
            el.tag = _local(el.tag)
    if root.tag != "robot":
        raise ctx.error(
            f"root element is <{root.tag}>, not <robot>; a URDF must have <robot name=...> as "
            "its root element"
        )
    robot_name = root.get("name")
    if not robot_name:
        raise ctx.error('<robot> has no name; add one, e.g. <robot name="my_robot">')

    # ---- links
    links: dict[str, _Link] = {}
    for lel in root.findall("link"):
        name = lel.get("name")
        if not name:
            raise ctx.error('a <link> has no name; give every link a unique name="..."')
        if name in links:
            raise ctx.error(f"link {name!r} is declared twice; rename or remove one of them")
        link = _Link(name, elem=lel)
        inertial = lel.find("inertial")
        if inertial is not None:
            _check_inertial(ctx, link, inertial)
        links[name] = link
    if not links:
        raise ctx.error(f"robot {robot_name!r} has no <link>; a URDF needs at least one link")

    # ---- joints
    joints: dict[str, _Joint] = {}
    filled: dict[str, tuple[str, ...]] = {}
    for jel in root.findall("joint"):
        name = jel.get("name")
        if not name:
            raise ctx.error('a <joint> has no name; give every joint a unique name="..."')
        if name in joints:
            raise ctx.error(f"joint {name!r} is declared twice; rename or remove one of them")
        jtype = jel.get("type")
        if jtype not in JOINT_TYPES:
            raise ctx.error(
                f"joint {name!r} has type {jtype!r}, which is not supported; use one of "
                f"{', '.join(JOINT_TYPES)}"
            )
        parent = _link_ref(ctx, jel, name, "parent")
        child = _link_ref(ctx, jel, name, "child")
        for which, lname in (("parent", parent), ("child", child)):
            if lname not in links:
                raise ctx.error(
                    f"joint {name!r} names {which} link {lname!r}, which is not declared; add "
                    f'<link name="{lname}"/> or correct the joint\'s <{which} link=...>'
                )
        origin = jel.find("origin")
        xyz = _vec3(ctx, origin.get("xyz") if origin is not None else None, (0, 0, 0),
                    f"joint {name!r}: <origin xyz>", MAX_DISTANCE, _WHY_DISTANCE)
        rpy = _vec3(ctx, origin.get("rpy") if origin is not None else None, (0, 0, 0),
                    f"joint {name!r}: <origin rpy>", MAX_ANGLE, "beyond a thousand radians is a typo, "
                    "not an orientation")
        axis = _check_axis(ctx, jel, name, jtype)
        if jtype == "planar" and abs(abs(axis[2]) - 1.0) > _AXIS_NORM_TOL:
            raise ctx.error(
                f"planar joint {name!r} has axis {' '.join(f'{a:g}' for a in axis)} (URDF default "
                "1 0 0 when <axis> is absent); Pinocchio's planar joint moves in the x-y plane: "
                'give it <axis xyz="0 0 1"/> and orient the plane with the joint <origin>'
            )
        _check_limit(ctx, jel, name, jtype, filled)
        if jel.find("mimic") is not None:
            ctx.warn(
                f"joint {name!r} has <mimic>, which is not supported: the joint is treated as an "
                "independent degree of freedom"
            )
        info = JointInfo(name, jtype, parent, child, axis, xyz, rpy)
        joints[name] = _Joint(info, jel)

    # ---- topology
    parent_joint: dict[str, str] = {}
    children: dict[str, list[str]] = {n: [] for n in links}  # link -> child joint names
    for jname, j in joints.items():
        info = j.info
        if info.parent == info.child:
            raise ctx.error(
                f"joint {jname!r} has link {info.child!r} as both parent and child (a cycle); "
                "a joint must connect two different links"
            )
        if info.child in parent_joint:
            first = parent_joint[info.child]
            raise ctx.error(
                f"link {info.child!r} is the child of two joints, {first!r} and {jname!r}: "
                "a closed chain (e.g. a parallel linkage). URDF describes trees only; keep one "
                "of the joints and model the closure as a constraint"
            )
        parent_joint[info.child] = jname
        children[info.parent].append(jname)

    roots = [n for n in links if n not in parent_joint]
    reached: set[str] = set()
    stack = list(roots)
    while stack:
        lname = stack.pop()
        reached.add(lname)
        stack.extend(joints[j].info.child for j in children[lname])
    on_cycle = [n for n in links if n not in reached]
    if on_cycle:
        raise ctx.error(
            f"links {', '.join(map(repr, on_cycle))} lie on a cycle of joints (each is the child "
            "of another); URDF describes trees only: remove one joint of the cycle and model "
            "the closure as a constraint"
        )
    if len(roots) > 1:
        raise ctx.error(
            f"the model is not connected: it has {len(roots)} root links "
            f"({', '.join(map(repr, roots))}); attach each extra root to the tree with a fixed "
            f'joint, e.g. <joint name="{roots[1]}_joint" type="fixed"><parent link="{roots[0]}"/>'
            f'<child link="{roots[1]}"/></joint>'
        )
    root_link = roots[0]

    # ---- floating / planar joints: at the root only
    root_joint: JointInfo | None = None
    for jname, j in joints.items():
        info = j.info
        if info.type not in ROOT_TYPES:
            continue
        if info.parent != root_link:
            raise ctx.error(
                f"{info.type} joint {jname!r} (parent {info.parent!r}, child {info.child!r}) "
                f"is not at the root of the tree (root link {root_link!r}): a free-flyer has one "
                "floating base; make this joint fixed or revolute, or make its parent the root"
            )
        others = [c for c in children[root_link] if c != jname]
        if others:
            raise ctx.error(
                f"root link {root_link!r} carries the {info.type} joint {jname!r} and also joints "
                f"{', '.join(map(repr, others))}: a free-flyer has one floating base; attach "
                f"those joints to the base link {info.child!r} instead"
            )
        if links[root_link].massive:
            raise ctx.error(
                f"root link {root_link!r} of the {info.type} joint {jname!r} has mass "
                f"{links[root_link].mass:g} kg, but it is the fixed reference (e.g. 'world'); "
                f"remove its <inertial> and put the mass on the base link {info.child!r}"
            )
        root_joint = info
    base_link = root_joint.child if root_joint is not None else root_link

    # ---- masses
    def body_mass(lname: str) -> float:
        """Mass of a link plus everything rigidly attached below it by fixed joints."""
        total = links[lname].mass
        for jn in children[lname]:
            if joints[jn].info.type == "fixed":
                total += body_mass(joints[jn].info.child)
        return total

    if body_mass(base_link) <= 0.0:
        raise ctx.error(
            f"the base body (link {base_link!r} and the links fixed to it) has no mass; add "
            f"<inertial> to link {base_link!r}"
        )
    for jname, j in joints.items():
        info = j.info
        if info.type in MOVING_TYPES and body_mass(info.child) <= 0.0:
            raise ctx.error(
                f"the body moved by joint {jname!r} has no mass; add <inertial> to link "
                f"{info.child!r} (or to a link fixed to it): a massless moving body makes the "
                "mass matrix singular"
            )
    if root_joint is None and links[root_link].elem.find("inertial") is not None:
        ctx.warn(ROOT_INERTIA_WARNING.format(root=root_link))
    for lname, link in links.items():
        if link.massive:
            continue
        if root_joint is not None and lname == root_link:
            if link.dummy:
                ctx.warn(f"link {lname!r} has mass 0: treated as a massless fixed reference")
            continue
        pj = parent_joint.get(lname)
        fixed_attached = pj is not None and joints[pj].info.type == "fixed"
        kind = "has mass 0 (a dummy link)" if link.dummy else "has no <inertial>"
        if fixed_attached and children[lname]:
            kids = ", ".join(repr(joints[c].info.child) for c in children[lname])
            ctx.warn(
                f"link {lname!r} {kind} but carries child links ({kids}); accepted as a "
                f"massless frame fixed to {joints[pj].info.parent!r}"  # type: ignore[index]
            )
        elif link.dummy:
            ctx.warn(f"link {lname!r} has mass 0 (a dummy link): treated as a massless frame")

    # ---- meshes
    src = Path(source) if source and not source.startswith("<") else None
    base_dir = src.parent if src is not None and src.is_file() else None
    for link in links.values():
        _check_meshes(ctx, link, base_dir)

    out_xml = ET.tostring(root, encoding="unicode") if ctx.amended else xml
    return UrdfReport(
        xml=out_xml,
        robot_name=robot_name,
        root_link=root_link,
        base_link=base_link,
        root_joint=root_joint,
        joints={n: j.info for n, j in joints.items()},
        links=tuple(links),
        link_masses={n: link.mass for n, link in links.items()},
        warnings=tuple(ctx.warnings),
        filled_limits=filled,
    )
