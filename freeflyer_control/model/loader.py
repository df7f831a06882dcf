"""Load a free-flyer: URDF (+ robot config) -> Pinocchio model with a floating base.

The base body is the URDF's root link (or the child of a ``floating`` / ``planar`` joint at the
root, which is then taken as the base joint). It gets a Pinocchio ``JointModelFreeFlyer``
(spatial) or ``JointModelPlanar`` (planar: x, y, yaw) root joint. Gravity is zero: the papers
work in a non-rotating frame at the system CoM, and an air-bearing table cancels gravity.

Joints are split into *arm joints* (everything that is not a reaction wheel) and *wheel joints*
(named in the robot config). Pinocchio orders velocities depth-first through the tree; the
``joint_names`` tuple gives that order, and every joint-space vector of this package follows it.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable, Hashable, Sequence, TypeVar

import numpy as np
import pinocchio as pin

from freeflyer_control.errors import ConfigError, ModelError
from freeflyer_control.inputs.values import shown
from freeflyer_control.model.joint_limits import limit_violations
from freeflyer_control.model.config import BASE_TYPES, BaseLimits, RobotConfig, Thruster, load_robot_config
from freeflyer_control.model.reroot import reroot_urdf, restore_link_frames
from freeflyer_control.model.urdf_checks import UrdfReport, check_urdf, read_urdf

log = logging.getLogger(__name__)

# A joint axis counts as "about z" for a planar base when its direction deviates from +-z by
# less than this (rad-ish); URDF axes are written by hand to ~6 digits.
_PLANAR_AXIS_TOL = 1e-6
_T = TypeVar("_T")
_MISSING = object()


@dataclass
class FreeFlyerModel:
    """A free-flyer ready for the physics layer.

    Attributes:
        model: the Pinocchio model; joint 1 is the base joint.
        base: ``"planar"`` or ``"spatial"``.
        base_link: name of the base body (frame) in the URDF.
        joint_names: non-base joints in Pinocchio velocity order (arm joints and wheels).
        arm_joint_names: the manipulator joints, same order as in ``joint_names``.
        wheel_joint_names: the reaction-wheel joints, in robot-config order.
        end_effectors: end-effector frame names.
        arms: arm name -> its joint names.
        thrusters: the base thrusters.
        wheel_limits: per wheel (config order) (max_torque N m, max_speed rad/s).
        name: robot name.
        warnings: what the URDF check accepted but flagged.
        base_limits: the robot config's bounds of ideal base actuation (None: derived, see
            :func:`freeflyer_control.physics.actuators.base_wrench_limits`).
    """

    model: pin.Model
    base: str
    base_link: str
    joint_names: tuple[str, ...]
    arm_joint_names: tuple[str, ...]
    wheel_joint_names: tuple[str, ...]
    end_effectors: tuple[str, ...]
    arms: dict[str, tuple[str, ...]]
    thrusters: tuple[Thruster, ...] = ()
    wheel_limits: tuple[tuple[float, float], ...] = ()
    name: str = ""
    warnings: tuple[str, ...] = ()
    urdf_xml: str = field(default="", repr=False)
    ready_pose: dict[str, float] = field(default_factory=dict)
    base_limits: BaseLimits | None = None

    @cached_property
    def _derived(self) -> dict:
        """What the physics derives from this model once (see :meth:`derived`). Not a field: a
        model made from this one (``dataclasses.replace``, or from its fields) derives its own."""
        return {}

    def derived(self, key: Hashable, build: Callable[..., _T], *args) -> _T:
        """``build(*args)`` once per ``key``, kept with this model and freed with it.

        What is derived from a model stays valid because models are not mutated after loading
        (a thruster matrix, frame ids, the plan of a compiled call). Kept here, not in a
        module's table keyed by ``id(model)``: such a table keeps every model alive, and a
        campaign makes new models every run (about 50 kB a run, measured). ``key`` names what is
        derived and what else it depends on, e.g. ``(_gjm_plan, mode, frame)``; an unhashable
        key (a caller's bad input) is never stored, ``build(*args)`` is returned (and raises the
        right error). ``args`` rather than a closure: a hit then makes no function object."""
        try:
            value = self._derived.get(key, _MISSING)
        except TypeError:
            return build(*args)
        if value is _MISSING:
            value = self._derived[key] = build(*args)
        return value

    # --- sizes and index maps (velocity space) -------------------------------------------
    @property
    def nb(self) -> int:
        """Number of base velocity coordinates: 3 (planar) or 6 (spatial)."""
        return 3 if self.base == "planar" else 6

    @property
    def nj(self) -> int:
        """Number of non-base velocity coordinates (arm joints + wheels)."""
        return self.model.nv - self.nb

    def joint_v_index(self, name: str) -> int:
        """Index of joint ``name`` in the full velocity vector (base coordinates first)."""
        try:
            return self.model.joints[self.model.getJointId(name)].idx_v
        except IndexError:
            raise ModelError(self._unknown_joint(name)) from None

    def joint_q_index(self, name: str) -> int:
        """Index of joint ``name``'s first coordinate in the configuration vector."""
        return self.model.joints[self._joint_id(name)].idx_q

    def _joint_id(self, name: str) -> int:
        if not self.model.existJointName(name) or name in ("universe", "root_joint"):
            raise ModelError(self._unknown_joint(name))
        return self.model.getJointId(name)

    def _unknown_joint(self, name: str) -> str:
        return f"unknown joint '{name}' in robot '{self.name}'; joints: {list(self.joint_names)}"

    # The models are not mutated after loading, so index maps and limits are computed once:
    # they sit on every control tick and plant step.
    @cached_property
    def arm_v_indices(self) -> np.ndarray:
        """Indices of the arm joints in the full velocity vector."""
        return np.array([self.joint_v_index(n) for n in self.arm_joint_names], dtype=int)

    @cached_property
    def wheel_v_indices(self) -> np.ndarray:
        """Indices of the wheel joints in the full velocity vector (config order)."""
        return np.array([self.joint_v_index(n) for n in self.wheel_joint_names], dtype=int)

    @cached_property
    def arm_effort_limits(self) -> np.ndarray:
        """URDF effort limits of the arm joints, N m (N for prismatic)."""
        return self.model.effortLimit[self.arm_v_indices].copy()

    @cached_property
    def wheel_max_torques(self) -> np.ndarray:
        return np.array([w[0] for w in self.wheel_limits], dtype=float)

    @cached_property
    def wheel_max_speeds(self) -> np.ndarray:
        return np.array([w[1] for w in self.wheel_limits], dtype=float)

    @cached_property
    def thruster_max_forces(self) -> np.ndarray:
        return np.array([t.max_force for t in self.thrusters], dtype=float)

    def frame_id(self, frame: str) -> int:
        """Pinocchio frame id of ``frame`` (a link or joint name), with a helpful error."""
        if not isinstance(frame, str) or len(frame) > 200 or not self.model.existFrame(frame):
            links = sorted(
                {f.name for f in self.model.frames if f.type == pin.FrameType.BODY}
            )
            raise ModelError(f"unknown frame {shown(frame)} in robot '{self.name}'; links: {links}")
        return self.model.getFrameId(frame)

    def robot_frame(self, frame: str) -> int:
        """:meth:`frame_id` of a frame that moves with the robot: one fixed to the world (the
        universe, a fixed world link) has no Jacobian, and no motion to control or measure."""
        fid = self.frame_id(frame)
        if self.model.frames[fid].parentJoint == 0:
            raise ModelError(f"frame {shown(frame)} is fixed to the world, not attached to robot '{self.name}': "
                             "its Jacobian is zero by definition (no singularity); give a link of the robot")
        return fid

    @property
    def total_mass(self) -> float:
        return float(sum(inertia.mass for inertia in self.model.inertias))

    def create_data(self) -> pin.Data:
        return self.model.createData()

    def summary(self) -> str:
        """A human-readable description (what ``freeflyer check`` prints)."""
        lines = [
            f"robot          {self.name}",
            f"base           {self.base} ({self.base_link}); nq={self.model.nq} nv={self.model.nv}",
            f"total mass     {self.total_mass:.4g} kg",
            f"arm joints     {', '.join(self.arm_joint_names) or '-'}",
        ]
        for arm, joints in self.arms.items():
            lines.append(f"  arm {arm:<10} {', '.join(joints)}")
        lines.append(f"end-effectors  {', '.join(self.end_effectors) or '-'}")
        lines.append(f"wheels         {', '.join(self.wheel_joint_names) or '-'}")
        lines.append(f"thrusters      {len(self.thrusters)}")
        for w in self.warnings:
            lines.append(f"warning        {w}")
        return "\n".join(lines)


def load_model(
    urdf: str | Path,
    config: RobotConfig | str | Path | None = None,
    *,
    base: str | None = None,
    end_effectors: Sequence[str] | None = None,
    name: str | None = None,
    root: str | None = None,
    floating_only: bool = False,
) -> FreeFlyerModel:
    """Load a URDF (path or XML string) as a free-flyer.

    Args:
        urdf: URDF file path, or the XML text itself.
        config: a :class:`RobotConfig`, or the path of a robot config YAML; None for a bare URDF.
        base: ``"planar"`` or ``"spatial"``; overrides the config. Required without a config
            unless the URDF has a floating/planar root joint.
        end_effectors: end-effector frame names; override the config's.
        name: robot name; default from the config or the URDF.
        root: float this link as the base instead of the URDF's root (model/reroot.py);
            overrides the config's ``root``.
        floating_only: accept a root that leaves the config's base actuators (wheels,
            thrusters) behind on the old base: they are dropped (wheels become plain joints)
            and only floating mode applies. Without it such a root is refused.

    Raises:
        ModelError, ConfigError: naming what is wrong and how to fix it.
    """
    if config is not None and not isinstance(config, RobotConfig):
        config = load_robot_config(config)
    xml, source = read_urdf(urdf)
    report = check_urdf(xml, source=source)

    base_type = base or (config.base if config else None) or _base_from_root_joint(report)
    root = root or (config.root if config else None)
    moved: dict[str, pin.SE3] = {}
    if root is not None and root != report.base_link:
        config = _config_for_root(config, report, root, floating_only, name)
        rerooted, moved = reroot_urdf(report, root)
        report = check_urdf(rerooted, source=f"{source} (root {root})")
    if base_type is None:
        raise ModelError(
            f"{source}: say which floating base to add: base='planar' (air-bearing table: x, y, "
            "yaw) or base='spatial' (6-DOF), or give a robot config with 'base:'"
        )
    if base_type not in BASE_TYPES:
        raise ModelError(f"base must be one of {BASE_TYPES}, got '{base_type}'")

    model = _build_pinocchio_model(report, base_type, source)
    model.gravity.setZero()
    restore_link_frames(model, moved)

    wheels = config.reaction_wheels if config else ()
    wheel_names = tuple(w.joint for w in wheels)
    joint_names = tuple(model.names[j] for j in range(2, model.njoints))
    arm_names = tuple(n for n in joint_names if n not in wheel_names)
    ees = tuple(end_effectors) if end_effectors is not None else (
        config.end_effectors if config else ()
    )
    arms = _resolve_arms(model, report, config, arm_names, ees, source)

    ff = FreeFlyerModel(
        model=model,
        base=base_type,
        base_link=report.base_link,
        joint_names=joint_names,
        arm_joint_names=arm_names,
        wheel_joint_names=wheel_names,
        end_effectors=ees,
        arms=arms,
        thrusters=config.thrusters if config else (),
        wheel_limits=tuple((w.max_torque, w.max_speed) for w in wheels),
        name=name or (config.name if config and config.name else report.robot_name),
        warnings=report.warnings,
        urdf_xml=report.xml,
        ready_pose=dict(config.ready_pose) if config else {},
        base_limits=config.base_limits if config else None,
    )
    _check_against_urdf(ff, report, source)
    # Each warning begins with the source (urdf_checks._Ctx.warn). A file's warnings are said
    # once per process: a command loads its robot to check the options, then again to run.
    from_file = Path(source).is_file() if len(source) < 4096 and "\x00" not in source else False
    for w in report.warnings:
        if not (from_file and w in _WARNED):
            _WARNED.add(w)
            log.warning("%s", w)
    return ff


_WARNED: set[str] = set()


def _config_for_root(
    config: RobotConfig | None, report: UrdfReport, root: str, floating_only: bool, name: str | None
) -> RobotConfig | None:
    """The config to use with ``root`` as the base: the base actuators stay on the old base,
    so a root elsewhere keeps them only as far as floating mode goes (none)."""
    if config is None or not (config.reaction_wheels or config.thrusters):
        return config
    if root not in report.links:
        return config  # reroot_urdf names the links
    if not floating_only:
        what = " and ".join(x for x in (
            f"{len(config.reaction_wheels)} reaction wheel(s)" if config.reaction_wheels else "",
            f"{len(config.thrusters)} thruster(s)" if config.thrusters else "") if x)
        robot = name or config.name or report.robot_name
        raise ModelError(
            f"root link '{root}' would leave robot '{robot}' without its base actuators ({what} "
            f"on '{report.base_link}'): only floating mode remains; ask for floating mode "
            f"(--mode floating, or floating_only=True) or keep the root '{report.base_link}'"
        )
    return dataclasses.replace(config, reaction_wheels=(), thrusters=())


def _base_from_root_joint(report: UrdfReport) -> str | None:
    if report.root_joint is None:
        return None
    return "spatial" if report.root_joint.type == "floating" else "planar"


def _build_pinocchio_model(report: UrdfReport, base: str, source: str) -> pin.Model:
    if report.root_joint is not None:
        urdf_base = _base_from_root_joint(report)
        if urdf_base != base:
            raise ModelError(
                f"{source}: the URDF's root joint '{report.root_joint.name}' is "
                f"{report.root_joint.type} (a {urdf_base} base) but base='{base}' was asked; "
                f"remove the joint from the URDF or ask for base='{urdf_base}'"
            )
        model = pin.buildModelFromXML(report.xml)
        # Pinocchio names the base joint after the URDF joint; we always call it root_joint.
        model.names[1] = "root_joint"
        return model
    root = pin.JointModelPlanar() if base == "planar" else pin.JointModelFreeFlyer()
    try:
        return pin.buildModelFromXML(report.xml, root)
    except (ValueError, RuntimeError) as exc:  # urdfdom's own refusals, after our checks
        raise ModelError(f"{source}: Pinocchio could not load the URDF: {exc}") from None


def _resolve_arms(
    model: pin.Model,
    report: UrdfReport,
    config: RobotConfig | None,
    arm_names: tuple[str, ...],
    ees: tuple[str, ...],
    source: str,
) -> dict[str, tuple[str, ...]]:
    """Arm name -> joints: from the config, else the joints supporting each end-effector."""
    if config and config.arms:
        return {k: tuple(v) for k, v in config.arms.items()}
    arms: dict[str, tuple[str, ...]] = {}
    for ee in ees:
        if not model.existFrame(ee):
            continue  # reported by _check_against_urdf with the list of links
        parent = model.frames[model.getFrameId(ee)].parentJoint
        support = [model.names[j] for j in model.supports[parent] if j > 1]
        arms[ee] = tuple(n for n in support if n in arm_names)
    if not ees and arm_names:
        arms["arm"] = arm_names
    return arms


def _check_against_urdf(ff: FreeFlyerModel, report: UrdfReport, source: str) -> None:
    """Config-vs-URDF consistency: frames, wheels, arms, planar joint axes, thrusters."""
    for ee in ff.end_effectors:
        ff.robot_frame(ee)  # raises naming the links
    for wheel in ff.wheel_joint_names:
        info = report.joints.get(wheel)
        if info is None:
            raise ConfigError(
                f"{source}: reaction wheel joint '{wheel}' is not in the URDF; "
                f"joints: {list(report.joints)}"
            )
        if info.type not in ("revolute", "continuous"):
            raise ConfigError(
                f"{source}: reaction wheel joint '{wheel}' is {info.type}; a wheel must be a "
                "revolute or continuous joint"
            )
        if info.parent != report.base_link:
            raise ConfigError(
                f"{source}: reaction wheel joint '{wheel}' hangs from link '{info.parent}'; a "
                f"wheel must be mounted on the base link '{report.base_link}'"
            )
    for joint in ff.ready_pose:
        if joint not in ff.joint_names:
            raise ConfigError(
                f"{source}: ready_pose names joint '{joint}', which is not in the URDF; "
                f"joints: {list(ff.joint_names)}"
            )
    # A ready pose is where runs start: outside the joint's URDF range the robot cannot be.
    outside = limit_violations(ff, ff.ready_pose)
    if outside:
        raise ConfigError(f"{source}: ready_pose: {outside[0]}; give an angle inside the limits")
    for arm, joints in ff.arms.items():
        for j in joints:
            if j not in ff.arm_joint_names:
                raise ConfigError(
                    f"{source}: arm '{arm}' lists joint '{j}', which is not an arm joint of the "
                    f"URDF; arm joints: {list(ff.arm_joint_names)}"
                )
    if ff.base == "planar":
        _check_planar(ff, source)


def _check_planar(ff: FreeFlyerModel, source: str) -> None:
    """A planar base needs every joint to rotate about z (or slide in the plane)."""
    model = ff.model
    data = model.createData()
    q = pin.neutral(model)
    pin.computeJointJacobians(model, data, q)
    J = data.J  # world-frame joint Jacobian columns at the neutral configuration
    for name in ff.joint_names:
        col = J[:, ff.joint_v_index(name)]
        lin, ang = col[:3], col[3:]
        if np.linalg.norm(ang) > 0:  # revolute: axis must be +-z
            ok = abs(abs(ang[2]) - 1.0) < _PLANAR_AXIS_TOL and np.linalg.norm(ang[:2]) < 1e-6
        else:  # prismatic: must slide in the xy-plane
            ok = abs(lin[2]) < _PLANAR_AXIS_TOL
        if not ok:
            raise ModelError(
                f"{source}: joint '{name}' moves out of the plane (axis in world {ang if np.linalg.norm(ang) > 0 else lin}); "
                "on a planar base every revolute joint must turn about z (axis 0 0 1) and "
                "every prismatic joint slide in the xy-plane"
            )
    for t in ff.thrusters:
        if abs(t.direction[2]) > 1e-9:
            raise ConfigError(
                f"thruster '{t.name}' pushes along z (direction {t.direction.tolist()}); on a "
                "planar base thrust directions must lie in the xy-plane"
            )


def scaled_base(ff: FreeFlyerModel, factor: float) -> FreeFlyerModel:
    """A copy of ``ff`` whose base-body mass and inertia are multiplied by ``factor``.

    Used to show that the GJM tends to the fixed-base Jacobian as the base grows heavy.
    """
    if not factor > 0:
        raise ValueError(f"factor must be positive, got {factor}")
    model = ff.model.copy()
    inertia = model.inertias[1]
    model.inertias[1] = pin.Inertia(inertia.mass * factor, inertia.lever, inertia.inertia * factor)
    return dataclasses.replace(ff, model=model)
