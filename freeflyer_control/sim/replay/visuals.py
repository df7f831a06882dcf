"""A URDF's ``<visual>`` elements, as the replay draws them.

Primitives (box, cylinder, sphere) are drawn as they are; a mesh is drawn when its file resolves
and the viewer reads its format (STL, OBJ, Collada .dae), else left out with one warning naming
the file. ``package://PKG/...`` is looked up in the ament index (``AMENT_PREFIX_PATH``), in
``ROS_PACKAGE_PATH``, and among the URDF's own parent folders named PKG; ``file://`` and plain
paths are taken as they are, relative ones against the URDF's folder.
"""

from __future__ import annotations

import logging
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pinocchio as pin

log = logging.getLogger(__name__)

MESH_FORMATS = {".stl": "stl", ".obj": "obj", ".dae": "dae"}
DEFAULT_RGBA = (0.6, 0.6, 0.62, 1.0)
# URDF cylinders lie along their z axis, three.js' along y: a turn of +90 deg about x maps y to z.
_CYLINDER_AXIS = pin.SE3(pin.rpy.rpyToMatrix(np.pi / 2, 0.0, 0.0), np.zeros(3))


@dataclass
class Visual:
    """One visual of a link.

    Attributes:
        link: the link it is fixed to.
        placement: the shape's frame in the link frame (4x4), three.js' axis convention for
            cylinders already applied.
        shape: ``box`` (``size`` x, y, z, m), ``cylinder`` (``radius``, ``length``, m),
            ``sphere`` (``radius``) or ``mesh`` (``mesh_format``, ``mesh_path``, ``scale``).
        rgba: colour, each in [0, 1].
    """

    link: str
    placement: np.ndarray
    shape: str
    rgba: tuple[float, float, float, float] = DEFAULT_RGBA
    size: tuple[float, ...] = ()
    radius: float = 0.0
    length: float = 0.0
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    mesh_path: Path | None = None
    mesh_format: str = ""
    extras: dict = field(default_factory=dict)


def _floats(text: str | None, n: int, default: float = 0.0) -> tuple[float, ...]:
    if not text:
        return (default,) * n
    values = [float(x) for x in text.split()]
    return tuple(values) if len(values) == n else (default,) * n


def _origin(elem) -> pin.SE3:
    origin = elem.find("origin") if elem is not None else None
    if origin is None:
        return pin.SE3.Identity()
    xyz = _floats(origin.get("xyz"), 3)
    rpy = _floats(origin.get("rpy"), 3)
    return pin.SE3(pin.rpy.rpyToMatrix(*rpy), np.array(xyz))


def _materials(root) -> dict[str, tuple[float, ...]]:
    out = {}
    for material in root.findall("material"):
        color = material.find("color")
        if material.get("name") and color is not None:
            out[material.get("name")] = _floats(color.get("rgba"), 4, 1.0)
    return out


def _rgba(visual, named: dict) -> tuple[float, ...]:
    material = visual.find("material")
    if material is None:
        return DEFAULT_RGBA
    color = material.find("color")
    if color is not None:
        return _floats(color.get("rgba"), 4, 1.0)
    return named.get(material.get("name", ""), DEFAULT_RGBA)


def resolve_mesh(filename: str, urdf_dir: Path | None) -> Path | None:
    """The file behind a URDF mesh ``filename``, or None if it does not resolve here."""
    if filename.startswith("file://"):
        path = Path(filename[len("file://"):])
        return path if path.is_file() else None
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://"):].partition("/")
        roots = [Path(p) / "share" / package for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
        for entry in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep):
            if entry:
                roots += [Path(entry) / package, Path(entry)]
        if urdf_dir is not None:
            roots += [parent for parent in [urdf_dir, *urdf_dir.parents] if parent.name == package]
        for root in roots:
            if (root / rest).is_file():
                return root / rest
        return None
    path = Path(filename)
    if not path.is_absolute() and urdf_dir is not None:
        path = urdf_dir / path
    return path if path.is_file() else None


def urdf_visuals(urdf_xml: str, urdf_dir: Path | None = None) -> list[Visual]:
    """Every drawable ``<visual>`` of the URDF text ``urdf_xml`` (see the module docstring);
    ``urdf_dir``: the URDF's folder, against which relative mesh paths resolve."""
    root = ET.fromstring(urdf_xml)
    named = _materials(root)
    visuals = []
    for link in root.findall("link"):
        for visual in link.findall("visual"):
            geometry = visual.find("geometry")
            if geometry is None or not len(geometry):
                continue
            shape = geometry[0]
            placement = _origin(visual)
            common = {"link": link.get("name"), "rgba": _rgba(visual, named)}
            if shape.tag == "box":
                visuals.append(Visual(placement=placement.homogeneous, shape="box",
                                      size=_floats(shape.get("size"), 3), **common))
            elif shape.tag == "cylinder":
                visuals.append(Visual(placement=(placement * _CYLINDER_AXIS).homogeneous, shape="cylinder",
                                      radius=float(shape.get("radius", 0)), length=float(shape.get("length", 0)),
                                      **common))
            elif shape.tag == "sphere":
                visuals.append(Visual(placement=placement.homogeneous, shape="sphere",
                                      radius=float(shape.get("radius", 0)), **common))
            elif shape.tag == "mesh":
                filename = shape.get("filename", "")
                path = resolve_mesh(filename, urdf_dir)
                fmt = MESH_FORMATS.get(Path(filename).suffix.lower())
                if path is None or fmt is None:
                    why = "not found" if path is None else "a format the replay does not read (STL, OBJ, DAE)"
                    log.warning("replay: mesh %s of link '%s' left out: %s", filename, link.get("name"), why)
                    continue
                visuals.append(Visual(placement=placement.homogeneous, shape="mesh", mesh_path=path, mesh_format=fmt,
                                      scale=_floats(shape.get("scale"), 3, 1.0), **common))
    return visuals
