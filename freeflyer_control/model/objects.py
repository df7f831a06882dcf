"""Objects a free-flyer holds or captures: a rigid body with grasp frames, described beside robots.

An object config is a small YAML file (bundled ones in ``config/objects/``)::

    name: planar_box
    base: planar                 # the robots it is meant for: planar or spatial
    mass: 1.0                    # kg
    inertia: [[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]   # kg m^2, about the CoM,
                                 # object frame (the object frame's origin is the CoM)
    size: [0.1, 0.15, 0.1]       # m, box drawn in rviz (optional)
    pose_in_base: {xyz: [0.82, 0, 0], rpy: [0, 0, 0]}   # where it is held, base_link frame
    initial_state: {...}         # optional: where a free object starts, how it tumbles
                                 # (model.object_state)
    grasps:                      # one per end-effector; the end-effector frame coincides with
      - end_effector: left_ee_link          # the grasp frame while the object is held
        xyz: [0, 0.075, 0]       # m, grasp frame origin in the object frame
        rpy: [0, 0, -0.7854]     # rad, grasp frame orientation (roll, pitch, yaw) in the object frame

A robot holds the object when every listed end-effector frame coincides with its grasp frame.
:func:`parse_object` refuses a non-physical inertia, with the fix; whether the robot's arms
reach the grasp frames is physics (:func:`freeflyer_control.physics.grasp_pose.check_object`).
:func:`attach_object` adds the object to the robot's Pinocchio model as a body fixed to the first
grasping arm's last link; the other grasps become loop closures (physics.closed_chain).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from freeflyer_control.errors import ConfigError, ModelError
from freeflyer_control.inputs.mappings import mapping, refuse_unknown, value_number, value_text
from freeflyer_control.inputs.values import shown
from freeflyer_control.inputs.yaml_files import load_yaml_file
from freeflyer_control.model.config import BASE_TYPES, MAX_EXTENT, positive_number, require_key, vector3
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.model.object_state import InitialState, parse_initial_state
from freeflyer_control.resources import share_dir

# Inertia checks: relative round-off allowed on symmetry and on the triangle inequality.
_INERTIA_RTOL = 1e-9
OBJECT_KEYS = ("name", "base", "mass", "inertia", "size", "pose_in_base", "grasps", "initial_state")
GRASP_KEYS = ("end_effector", "xyz", "rpy")
# Physical ranges of an object a free-flyer holds or captures. A value outside is a unit slip
# (g for kg, mm for m) or a typo, and would make the plant diverge with advice no rate can follow.
MIN_OBJECT_MASS, MAX_OBJECT_MASS = 1e-3, 1e5      # kg: a gram; a hundred tonnes (the ISS is 420 t)
MIN_GYRATION, MAX_GYRATION = 1e-3, MAX_EXTENT     # m: radius of gyration sqrt(I / m) of each axis
_WHY_MASS = "a gram to a hundred tonnes: lighter or heavier is a unit slip, not an object to capture"
_WHY_EXTENT = "no object a free-flyer handles is larger than 100 m: a unit slip (mm for m?)"
_WHY_ANGLE = "beyond a thousand radians is a typo, not an orientation"


@dataclass(frozen=True)
class Grasp:
    """One end-effector's grasp: ``placement`` is the grasp frame in the object frame (SE3)."""

    end_effector: str
    placement: pin.SE3


@dataclass(frozen=True)
class ObjectConfig:
    """A rigid object (see the module docstring).

    Attributes:
        name: object name (frames are named after it).
        base: ``"planar"`` or ``"spatial"``: the robots it is meant for.
        mass: kg.
        inertia: (3, 3) about the CoM, object frame, kg m^2.
        grasps: one per end-effector.
        pose_in_base: where the object is held, object frame in base_link (SE3).
        size: box dimensions for display, m (3,).
        initial_state: where a free object starts and how it moves (model.object_state), or
            None: a capture then starts it near the held pose (sim.capture).
    """

    name: str
    base: str
    mass: float
    inertia: np.ndarray
    grasps: tuple[Grasp, ...]
    pose_in_base: pin.SE3
    size: np.ndarray
    initial_state: InitialState | None = None

    @property
    def spatial_inertia(self) -> pin.Inertia:
        """The body inertia about the object frame origin (its CoM)."""
        return pin.Inertia(self.mass, np.zeros(3), self.inertia)

    def grasp_for(self, end_effector: str) -> Grasp:
        for g in self.grasps:
            if g.end_effector == end_effector:
                return g
        raise ModelError(f"object '{self.name}' has no grasp for end-effector '{end_effector}'; "
                         f"its grasps: {[g.end_effector for g in self.grasps]}")


def object_config_dir() -> Path:
    return share_dir() / "config" / "objects"


def object_names() -> list[str]:
    """Names of the bundled objects (one YAML each)."""
    return sorted(p.stem for p in object_config_dir().glob("*.yaml"))


def load_object(name_or_path: str | Path) -> ObjectConfig:
    """A bundled object by name, or an object YAML by path.

    Raises:
        ConfigError: unknown name, unreadable file, or a malformed / non-physical entry.
    """
    path = object_source(name_or_path)
    if path is None:
        raise ConfigError(f"unknown object {shown(str(name_or_path))}; bundled objects: {object_names()}, "
                          "or give a .yaml path")
    return parse_object(load_yaml_file(path, "object config"), str(path))


def object_source(name_or_path: str | Path) -> Path | None:
    """The YAML file :func:`load_object` reads for ``name_or_path`` (a path as given, or a bundled
    object's); None for a name that is not bundled."""
    text = str(name_or_path)
    path = Path(text)
    if path.suffix in (".yaml", ".yml"):
        return path
    path = object_config_dir() / f"{text}.yaml"
    return path if len(text) <= 200 and path.is_file() else None


def _pose(entry: Any, where: str, known=("xyz", "rpy")) -> pin.SE3:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a mapping with xyz (m) and rpy (rad), got {shown(entry)}")
    refuse_unknown(entry, known, where)
    xyz = vector3(entry.get("xyz", [0, 0, 0]), f"{where}.xyz", MAX_EXTENT, "m", _WHY_EXTENT)
    rpy = vector3(entry.get("rpy", [0, 0, 0]), f"{where}.rpy", 1e3, "rad", _WHY_ANGLE)
    return pin.SE3(pin.rpy.rpyToMatrix(*rpy), xyz)


def parse_object(raw: Any, where: str) -> ObjectConfig:
    """Parse and check an object config mapping on its own (robot checks:
    :func:`freeflyer_control.physics.grasp_pose.check_object`)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"object config '{where}' must be a YAML mapping, got {type(raw).__name__}")
    refuse_unknown(raw, OBJECT_KEYS, where)
    name = value_text(raw["name"], f"{where}: name") if raw.get("name") else Path(where).stem
    base = require_key(raw, "base", where)
    if base not in BASE_TYPES:
        raise ConfigError(f"{where}: base must be one of {list(BASE_TYPES)}, got {shown(base)}")
    mass = value_number(require_key(raw, "mass", where), f"{where}: mass", lo=MIN_OBJECT_MASS, hi=MAX_OBJECT_MASS,
                        unit="kg", why=_WHY_MASS)
    inertia = check_inertia(require_key(raw, "inertia", where), f"{where}: inertia", mass)
    grasps_raw = require_key(raw, "grasps", where)
    if not isinstance(grasps_raw, list) or not grasps_raw:
        raise ConfigError(f"{where}: grasps must be a non-empty list of {{end_effector, xyz, rpy}}")
    grasps = []
    for i, g in enumerate(grasps_raw):
        gw = f"{where}: grasps[{i}]"
        if not isinstance(g, dict) or "end_effector" not in g:
            refuse_unknown(mapping(g, gw), GRASP_KEYS, gw)
            raise ConfigError(f"{gw} must be a mapping with end_effector, xyz (m), rpy (rad)")
        grasps.append(Grasp(value_text(g["end_effector"], f"{gw}.end_effector", what="a frame name"),
                            _pose(g, gw, GRASP_KEYS)))
    ees = [g.end_effector for g in grasps]
    if len(set(ees)) != len(ees):
        raise ConfigError(f"{where}: two grasps name the same end-effector ({ees}); give one grasp per end-effector")
    pose = _pose(raw.get("pose_in_base", {}), f"{where}: pose_in_base")
    size = np.array([positive_number(v, f"{where}: size[{i}]", MAX_EXTENT, _WHY_EXTENT, "m")
                     for i, v in enumerate(_triple(raw.get("size", [0.1, 0.1, 0.1]), f"{where}: size"))])
    start = parse_initial_state(raw, "initial_state", where, base)
    return ObjectConfig(name, base, mass, inertia, tuple(grasps), pose, size, start)


def _triple(value: Any, where: str) -> list:
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise ConfigError(f"{where} must be a list of 3 numbers (m), got {shown(value)}")
    return list(value)


def check_inertia(value: Any, where: str, mass: float | None = None) -> np.ndarray:
    """A 3x3 rotational inertia (kg m^2) that a real body can have, or ConfigError with the fix:
    symmetric, positive principal moments that obey the triangle inequality, and (given the
    ``mass``) radii of gyration between MIN_GYRATION and MAX_GYRATION."""
    if not isinstance(value, (list, tuple)) or len(value) != 3 or \
            not all(isinstance(row, (list, tuple)) and len(row) == 3 for row in value):
        raise ConfigError(f"{where} must be a 3x3 list of finite numbers (kg m^2), got {shown(value)}")
    bound = MAX_OBJECT_MASS * MAX_GYRATION ** 2
    I = np.array([[value_number(x, f"{where}[{i}][{j}]", lo=-bound, hi=bound, unit="kg m^2",
                                why="a hundred tonnes 100 m from its CoM") for j, x in enumerate(row)]
                  for i, row in enumerate(value)])
    scale = float(np.abs(I).max()) or 1.0
    if np.abs(I - I.T).max() > _INERTIA_RTOL * scale:
        raise ConfigError(f"{where} is not symmetric ({I.tolist()}); write the products of inertia once each (I[i][j] = I[j][i])")
    moments = np.linalg.eigvalsh(0.5 * (I + I.T))
    if moments[0] <= 0:
        raise ConfigError(f"{where} has principal moments {np.round(moments, 9).tolist()} kg m^2: not positive definite; "
                          "give the inertia about the CoM (a box a x b x c of mass m: ixx = m(b^2+c^2)/12 ...)")
    a, b, c = moments
    if a + b < c * (1 - _INERTIA_RTOL):
        raise ConfigError(f"{where} has principal moments {np.round(moments, 9).tolist()} kg m^2, which break the triangle "
                          f"inequality ({a:.6g} + {b:.6g} < {c:.6g}): no real body has them; recompute them from the "
                          "shape (a box a x b x c of mass m: ixx = m(b^2+c^2)/12 ...)")
    if mass is not None:
        radii = np.sqrt(moments / mass)
        if not (MIN_GYRATION <= radii.min() and radii.max() <= MAX_GYRATION):
            raise ConfigError(f"{where} has principal moments {np.round(moments, 9).tolist()} kg m^2 for a mass of "
                              f"{mass:g} kg: radii of gyration sqrt(I/m) {np.round(radii, 6).tolist()} m, outside "
                              f"[{MIN_GYRATION:g}, {MAX_GYRATION:g}] m (an object between a millimetre and 100 m); "
                              "check the units (kg m^2, not g mm^2 or kg mm^2)")
    return 0.5 * (I + I.T)


def attach_object(ff: FreeFlyerModel, obj: ObjectConfig) -> FreeFlyerModel:
    """The robot with ``obj`` held: a copy of ``ff`` whose Pinocchio model carries the object's
    inertia on the first grasping arm's last link (so mass matrix, momentum and CoM include it),
    and frames ``<name>`` (object frame, at its CoM) and ``<name>_grasp_<ee>`` for every grasp.

    The object's pose is the first grasp's end-effector pose times the inverse grasp placement;
    the other end-effectors close loops onto their grasp frames.
    """
    model = pin.Model(ff.model)
    first = obj.grasps[0]
    ee = model.frames[ff.frame_id(first.end_effector)]
    joint = ee.parentJoint
    in_joint = ee.placement * first.placement.inverse()  # object frame in the joint frame
    model.appendBodyToJoint(joint, obj.spatial_inertia, in_joint)
    model.addFrame(pin.Frame(obj.name, joint, in_joint, pin.FrameType.OP_FRAME))
    for g in obj.grasps:
        model.addFrame(pin.Frame(grasp_frame_name(obj, g.end_effector), joint, in_joint * g.placement,
                                 pin.FrameType.OP_FRAME))
    return dataclasses.replace(ff, model=model, name=f"{ff.name}+{obj.name}")


def grasp_frame_name(obj: ObjectConfig, end_effector: str) -> str:
    return f"{obj.name}_grasp_{end_effector}"


def free_object_model(obj: ObjectConfig) -> FreeFlyerModel:
    """The object on its own, floating free (before a capture): a one-body free-flyer whose base
    frame is the object frame (its CoM), so the plant integrates its tumbling like any base."""
    model = pin.Model()
    model.gravity = pin.Motion.Zero()  # orbit-relative frame / air-bearing table, as for robots
    joint = pin.JointModelPlanar() if obj.base == "planar" else pin.JointModelFreeFlyer()
    jid = model.addJoint(0, joint, pin.SE3.Identity(), "root_joint")
    model.appendBodyToJoint(jid, obj.spatial_inertia, pin.SE3.Identity())
    model.addFrame(pin.Frame(obj.name, jid, pin.SE3.Identity(), pin.FrameType.BODY))
    for g in obj.grasps:
        model.addFrame(pin.Frame(grasp_frame_name(obj, g.end_effector), jid, g.placement, pin.FrameType.OP_FRAME))
    return FreeFlyerModel(model=model, base=obj.base, base_link=obj.name, joint_names=(), arm_joint_names=(),
                          wheel_joint_names=(), end_effectors=(), arms={}, name=obj.name)


def with_grasp_placement(obj: ObjectConfig, end_effector: str, placement: pin.SE3) -> ObjectConfig:
    """``obj`` grasped by ``end_effector`` only, at ``placement`` (grasp frame in the object
    frame): the grasp as it actually closed in a capture."""
    return dataclasses.replace(obj, grasps=(Grasp(end_effector, placement),))


def with_grasps(obj: ObjectConfig, grasps: list[tuple[str, pin.SE3]]) -> ObjectConfig:
    """``obj`` grasped by the (end-effector, placement) pairs, in closing order: the grasps as
    they actually closed (the first carries the object, the others close loops)."""
    return dataclasses.replace(obj, grasps=tuple(Grasp(ee, X) for ee, X in grasps))
