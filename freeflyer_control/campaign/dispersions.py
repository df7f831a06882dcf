"""Dispersion kinds: what a campaign may vary, its units, its physical range, and how a drawn
value changes one run (:class:`RunPerturbation`, a :class:`~freeflyer_control.sim.perturbation.Perturbation`).

Per-item kinds draw one independent value per body, thruster, joint or axis from the same
distribution; their columns are ``kind[item]``. Sensor dispersions of the pure simulation act on
the state the controller reads; through the emulated testbed (``via_testbed``) the emulator's own
settings are dispersed instead (``capture_*``, ``encoder_*``, ``valve_delay``, ``command_latency``)
and ``fault`` picks an injected fault.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pinocchio as pin

from freeflyer_control.inputs.mappings import Range, exponent_advice
from freeflyer_control.inputs.values import shown
from freeflyer_control.physics.state import State, base_position, base_rotation, joint_positions
from freeflyer_control.sim.perturbation import Perturbation, SensorModel


@dataclass(frozen=True)
class Kind:
    """name: spec key. unit: of a drawn value. per: None (one value) or body, com, thruster,
    arm_joint, base_axis, rate_axis (one value per item), wheel_name / thruster_name (a choice
    of 'none' or a name). check: physical range (relative, nonnegative, probability, angle,
    finite). where: sim (pure simulation only), testbed (via_testbed only) or both."""

    name: str
    unit: str
    per: str | None
    check: str
    where: str
    help: str


KINDS = {k.name: k for k in (
    Kind("mass_error", "relative", "body", "relative", "sim",
         "controller model: each body's mass and rotational inertia times (1 + e)"),
    Kind("inertia_error", "relative", "body", "relative", "sim",
         "controller model: each body's rotational inertia about its CoM times (1 + e)"),
    Kind("com_error", "m", "com", "finite", "sim",
         "controller model: each body's CoM moved by e along x, y, z of its joint frame"),
    Kind("joint_noise", "rad", None, "nonnegative", "sim", "encoder noise std on every joint position"),
    Kind("base_position_noise", "m", None, "nonnegative", "sim", "capture noise std on the base position"),
    Kind("base_attitude_noise", "rad", None, "nonnegative", "sim", "capture noise std on the base attitude"),
    Kind("latency", "s", None, "nonnegative", "sim", "the controller reads the state this much late"),
    Kind("thruster_misalignment", "rad", "thruster", "angle", "sim",
         "each thruster's force direction turned by e (about z; spatial: about direction x z)"),
    Kind("thruster_scale", "relative", "thruster", "relative", "sim",
         "each thruster pushes (1 + e) times its command, up to (1 + e) max_force"),
    Kind("thruster_failure", "", "thruster_name", "names", "sim", "this thruster pushes nothing"),
    Kind("wheel_failure", "", "wheel_name", "names", "sim", "this wheel gets no torque"),
    Kind("initial_joint", "rad", "arm_joint", "finite", "both", "offset of each arm joint's initial angle"),
    Kind("initial_base_position", "m", "base_axis", "finite", "both", "offset of the initial base position, world"),
    Kind("initial_base_yaw", "rad", None, "finite", "both", "initial base yaw (about world z)"),
    Kind("initial_base_velocity", "m/s", "base_axis", "finite", "both", "initial base velocity offset, world"),
    Kind("initial_base_rate", "rad/s", "rate_axis", "finite", "both", "initial base angular velocity offset, world"),
    Kind("capture_position_noise", "m", None, "nonnegative", "testbed", "emulator: capture position noise std"),
    Kind("capture_attitude_noise", "rad", None, "nonnegative", "testbed", "emulator: capture attitude noise std"),
    Kind("capture_latency", "s", None, "nonnegative", "testbed", "emulator: capture delivery latency"),
    Kind("capture_dropout_rate", "", None, "probability", "testbed", "emulator: probability a capture sample is lost"),
    Kind("encoder_latency", "s", None, "nonnegative", "testbed", "emulator: encoder delivery latency"),
    Kind("encoder_velocity_noise", "rad/s", None, "nonnegative", "testbed", "emulator: encoder velocity noise std"),
    Kind("valve_delay", "s", None, "nonnegative", "testbed", "emulator: valve opening/closing delay"),
    Kind("command_latency", "s", None, "nonnegative", "testbed", "emulator: command delivery latency"),
    Kind("fault", "", None, "fault", "testbed",
         "emulator: one injected fault, 'none' or KIND:START:DURATION[:JOINT][:OX,OY,OZ]"),
    Kind("target_spin_scale", "relative", None, "relative", "capture",
         "capture: the target's spin rate times (1 + e)"),
    Kind("target_spin_axis", "rad", "tilt_axis", "angle", "capture",
         "capture: the target's spin axis turned by a rotation vector e (its body axes; spatial)"),
    Kind("target_mass_error", "relative", None, "relative", "capture", "capture: the target's mass times (1 + e)"),
    Kind("target_inertia_error", "relative", "principal_axis", "relative", "capture",
         "capture: each principal moment of the target's inertia times (1 + e)"),
    Kind("target_position_noise", "m", None, "nonnegative", "capture", "capture: target position measurement noise std"),
    Kind("target_attitude_noise", "rad", None, "nonnegative", "capture", "capture: target attitude measurement noise std"),
    Kind("target_velocity_noise", "m/s", None, "nonnegative", "capture", "capture: target velocity measurement noise std"),
    Kind("target_rate_noise", "rad/s", None, "nonnegative", "capture", "capture: target spin measurement noise std"),
)}
EMULATOR_KINDS = tuple(k for k, v in KINDS.items() if v.where == "testbed" and k != "fault")
# Latencies are checked against the run's duration too.
LATENCIES = ("latency", "capture_latency", "encoder_latency", "command_latency", "valve_delay")


def body_names(ff) -> list[tuple[int, str]]:
    """(joint index, body name) of every moving body: the first BODY frame of each joint."""
    out = []
    model = ff.model
    for j in range(1, model.njoints):
        names = [f.name for f in model.frames if f.parentJoint == j and f.type == pin.FrameType.BODY]
        out.append((j, names[0] if names else model.names[j]))
    return out


def items(ff, per: str) -> list[str]:
    """The items a per-item kind draws one value for, on robot ``ff``."""
    planar = ff.base == "planar"
    if per == "body":
        return [name for _, name in body_names(ff)]
    if per == "com":
        return [f"{name}.{a}" for _, name in body_names(ff) for a in "xyz"]
    if per in ("thruster", "thruster_name"):
        return [t.name for t in ff.thrusters]
    if per == "wheel_name":
        return list(ff.wheel_joint_names)
    if per == "arm_joint":
        return list(ff.arm_joint_names)
    if per == "base_axis":
        return ["x", "y"] if planar else ["x", "y", "z"]
    if per == "rate_axis":
        return ["z"] if planar else ["x", "y", "z"]
    if per == "principal_axis":
        return ["x", "y", "z"]
    if per == "tilt_axis":
        return [] if planar else ["x", "y", "z"]
    raise KeyError(per)


# Physical ranges of the dispersed values. Outside them a run is no experiment: a joint started
# outside its range or a base faster than the controller's plausibility bound fails at once, and
# a noise std of metres or a CoM moved off the robot gives "runs" that mean nothing.
JOINT_NOISE = Range(0.0, 1.0, "rad", "an encoder whose noise std is a radian measures nothing")
POSITION_NOISE = Range(0.0, 1.0, "m", "a motion capture whose noise std is a metre measures nothing")
ATTITUDE_NOISE = Range(0.0, 1.0, "rad", "a motion capture whose attitude noise std is a radian measures nothing")
LATENCY = Range(0.0, 1.0, "s", "a state read a second late is a broken sensor, not a latency")
YAW = Range(-math.pi, math.pi, "rad", "a yaw beyond +-pi is the same attitude as one within")
_RELATIVE = Range(-1.0, 1.0, "relative", "at -1 the quantity vanishes, and beyond +-1 it changes sign",
                  lo_open=True, hi_open=True)
# A capture's target (sim.capture): what its measurement noise and its own dispersions may be.
CAPTURE_RANGES: dict[str, Range] = {
    "target_spin_scale": _RELATIVE, "target_mass_error": _RELATIVE, "target_inertia_error": _RELATIVE,
    "target_spin_axis": Range(-math.pi / 2, math.pi / 2, "rad", "an axis turned beyond 90 degrees is another "
                              "spin, not a dispersion of this one"),
    "target_position_noise": POSITION_NOISE, "target_attitude_noise": ATTITUDE_NOISE,
    "target_velocity_noise": Range(0.0, 1.0, "m/s", "a velocity estimate whose noise std is a metre per second "
                                   "measures nothing at capture speeds"),
    "target_rate_noise": Range(0.0, 1.0, "rad/s", "a spin estimate whose noise std is a radian per second "
                               "measures nothing at capture rates"),
}


def robot_extent(ff) -> float:
    """m: the largest distance of a joint origin or body CoM from the base at the neutral
    configuration (at least 0.1 m): how far a model's CoM error can plausibly reach."""
    data = ff.model.createData()
    pin.forwardKinematics(ff.model, data, pin.neutral(ff.model))
    base = data.oMi[1].translation
    points = [data.oMi[j].act(ff.model.inertias[j].lever) for j in range(1, ff.model.njoints)]
    points += [data.oMi[j].translation for j in range(1, ff.model.njoints)]
    return max(0.1, max(float(np.linalg.norm(p - base)) for p in points))


def physical_ranges(ff, start: State, limits=None) -> dict[str, Range | dict[str, Range]]:
    """The physical range of each numeric kind on robot ``ff`` starting from ``start``; per
    item (a dict item -> Range) where it differs between items. ``limits``: the testbed's
    safety limits (``hil.config.Limits``) when flown through the emulated testbed."""
    from freeflyer_control.hil.emulator_settings import setting_range
    from freeflyer_control.model.plausible_motion import (
        DEFAULT_MAX_BASE_DISTANCE,
        DEFAULT_MAX_BASE_RATE,
        DEFAULT_MAX_BASE_SPEED,
    )

    relative = _RELATIVE
    extent = robot_extent(ff)
    out: dict[str, Range | dict[str, Range]] = {
        "mass_error": relative, "inertia_error": relative, "thruster_scale": relative,
        "com_error": Range(-extent, extent, "m", f"a CoM moved further than the robot reaches ({extent:.3g} m) "
                           "is no model error"),
        "joint_noise": JOINT_NOISE, "base_position_noise": POSITION_NOISE, "base_attitude_noise": ATTITUDE_NOISE,
        "latency": LATENCY,
        "thruster_misalignment": Range(-math.pi / 2, math.pi / 2, "rad", "a misalignment beyond 90 degrees is "
                                       "not one"),
        "initial_base_yaw": YAW,
    }
    for kind in KINDS.values():
        if kind.where == "testbed" and kind.check != "fault":
            out[kind.name] = setting_range(kind.name)
    angles = dict(zip(ff.joint_names, joint_positions(ff, start.q)))
    model = ff.model
    joints = {}
    for name in ff.arm_joint_names:
        joint = model.joints[model.getJointId(name)]
        if joint.nq == 2:  # continuous
            joints[name] = Range(-math.pi, math.pi, "rad", "a turn more is the same angle")
            continue
        lo, hi = float(model.lowerPositionLimit[joint.idx_q]), float(model.upperPositionLimit[joint.idx_q])
        q0 = angles[name]
        joints[name] = Range(lo - q0, hi - q0, "rad", f"{name} starts at {q0:.4g} rad and its URDF range is "
                             f"[{lo:.4g}, {hi:.4g}] rad: the run could not start outside it")
    out["initial_joint"] = joints
    position = base_position(ff, start.q)
    if limits is None:
        reach = DEFAULT_MAX_BASE_DISTANCE / 2
        out["initial_base_position"] = Range(-reach, reach, "m", "the controller refuses a base further than "
                                             f"{DEFAULT_MAX_BASE_DISTANCE:g} m from the origin as implausible")
        out["initial_base_velocity"] = Range(-DEFAULT_MAX_BASE_SPEED, DEFAULT_MAX_BASE_SPEED, "m/s",
                                             "the controller refuses base odometry faster than "
                                             f"{DEFAULT_MAX_BASE_SPEED:g} m/s as implausible")
        out["initial_base_rate"] = Range(-DEFAULT_MAX_BASE_RATE, DEFAULT_MAX_BASE_RATE, "rad/s",
                                         "the controller refuses base odometry turning faster than "
                                         f"{DEFAULT_MAX_BASE_RATE:g} rad/s as implausible")
    else:
        x0, x1, y0, y1 = limits.table
        room = limits.base_radius + limits.margin
        out["initial_base_position"] = {
            axis: Range(lo + room - p, hi - room - p, "m", f"the base footprint must start inside the table's "
                        f"geofence ([{lo:g}, {hi:g}] m in {axis} less {room:g} m of radius and margin)")
            for axis, lo, hi, p in (("x", x0, x1, position[0]), ("y", y0, y1, position[1]))}
        out["initial_base_velocity"] = Range(-limits.base_speed, limits.base_speed, "m/s",
                                             "the testbed's limits.base_speed: the bridge would trip at once")
        out["initial_base_rate"] = Range(-limits.base_rate, limits.base_rate, "rad/s",
                                         "the testbed's limits.base_rate: the bridge would trip at once")
    return out


def range_problem(kind: Kind, support: tuple, describe: str, ff, ranges: dict | None = None) -> str | None:
    """Why values in ``support`` (a distribution's reach) are not physical for ``kind`` (None:
    they are); ``ranges``: :func:`physical_ranges` of the run (sign and type only without it)."""
    if kind.check in ("names", "fault"):
        return None if kind.check == "fault" else _names_problem(kind, support, ff)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in support):
        text = next((v for v in support if isinstance(v, str)), None)
        return f"takes numbers ({kind.unit or 'dimensionless'}), got {describe}{exponent_advice(text)}"
    lo, hi = min(support), max(support)
    if kind.check in ("nonnegative", "probability") and lo < 0:
        return f"cannot be negative, got {describe}; bound it at 0 (a normal: add min: 0.0)"
    rng = (ranges or {}).get(kind.name)
    if rng is None:
        return None
    for item, r in (rng.items() if isinstance(rng, dict) else [(None, rng)]):
        for x in (lo, hi):
            if not r.contains(x):
                about = f" for {item}" if item is not None else ""
                return (f"reaches {x:g} {r.unit}{about}, outside {r.describe()} ({r.why}), in {describe}; "
                        "narrow the range")
    return None


def _names_problem(kind: Kind, support: tuple, ff) -> str | None:
    names = items(ff, kind.per)
    if not names:
        return f"robot {ff.name} has no {'thrusters' if kind.per == 'thruster_name' else 'wheels'}; drop it"
    for v in support:
        if v != "none" and v not in names:
            return f"{shown(v)} is not one of robot {ff.name}'s: none, {', '.join(names)}"
    return None


class RunPerturbation(Perturbation):
    """One run's drawn dispersions, applied to the pure simulation (see :data:`KINDS`).

    ``values``: kind -> a number, a word, or {item: number}; ``seed`` seeds the sensor noise.
    """

    def __init__(self, values: dict, seed: int):
        self.values = values
        self.seed = int(seed)

    def _per(self, name: str) -> dict:
        return self.values.get(name) or {}

    def controller_model(self, ff):
        mass, inertia, com = self._per("mass_error"), self._per("inertia_error"), self._per("com_error")
        if not (mass or inertia or com):
            return ff
        model = ff.model.copy()
        for j, name in body_names(ff):
            old = model.inertias[j]
            km = 1.0 + mass.get(name, 0.0)
            ki = km * (1.0 + inertia.get(name, 0.0))
            # A positive factor on the rotational inertia keeps it positive definite and keeps
            # the triangle inequality of its principal moments: the body stays physical.
            lever = old.lever + np.array([com.get(f"{name}.{a}", 0.0) for a in "xyz"])
            model.inertias[j] = pin.Inertia(old.mass * km, lever, old.inertia * ki)
        return replace(ff, model=model)

    def plant_model(self, ff):
        turn, scale = self._per("thruster_misalignment"), self._per("thruster_scale")
        if not (turn or scale):
            return ff
        thrusters = []
        for t in ff.thrusters:
            d = np.asarray(t.direction, dtype=float)
            axis = np.array([0.0, 0.0, 1.0])
            if ff.base == "spatial":
                axis = np.cross(d, axis)
                axis = axis / np.linalg.norm(axis) if np.linalg.norm(axis) > 1e-9 else np.array([1.0, 0.0, 0.0])
            d = pin.AngleAxis(turn.get(t.name, 0.0), axis).matrix() @ d
            thrusters.append(replace(t, direction=d, max_force=t.max_force * (1.0 + scale.get(t.name, 0.0))))
        return replace(ff, thrusters=tuple(thrusters))

    def actuator_gains(self, ff):
        scale = self._per("thruster_scale")
        failed_t, failed_w = self.values.get("thruster_failure"), self.values.get("wheel_failure")
        if not (scale or failed_t not in (None, "none") or failed_w not in (None, "none")):
            return None
        thrusters = np.array([0.0 if t.name == failed_t else 1.0 + scale.get(t.name, 0.0) for t in ff.thrusters])
        wheels = np.array([0.0 if name == failed_w else 1.0 for name in ff.wheel_joint_names])
        return thrusters, wheels

    def initial_state(self, ff, state: State) -> State:
        joints, pos, vel, rate = (self._per(k) for k in
                                  ("initial_joint", "initial_base_position", "initial_base_velocity",
                                   "initial_base_rate"))
        yaw = float(self.values.get("initial_base_yaw") or 0.0)
        if not (joints or pos or vel or rate or yaw):
            return state
        model, nb = ff.model, ff.nb
        dv = np.zeros(model.nv)
        for name, offset in joints.items():
            dv[model.joints[model.getJointId(name)].idx_v] = offset
        dv[nb - 1 if ff.base == "planar" else 5] = yaw  # the base starts unrotated: local z is world z
        q = pin.integrate(model, state.q, dv)
        axes = "xyz"
        for i, name in enumerate(items(ff, "base_axis")):
            q[i] += pos.get(name, 0.0)
        v = state.v.copy()
        R = base_rotation(ff, q)
        lin = R.T @ np.array([vel.get(a, 0.0) for a in axes])
        ang = R.T @ np.array([rate.get(a, 0.0) for a in axes])
        if ff.base == "planar":
            v[:2] += lin[:2]
            v[2] += ang[2]
        else:
            v[:3] += lin
            v[3:6] += ang
        return State(q, v)

    def sensor_model(self, ff):
        noise = {k: float(self.values.get(k) or 0.0)
                 for k in ("joint_noise", "base_position_noise", "base_attitude_noise")}
        latency = float(self.values.get("latency") or 0.0)
        if not any(noise.values()) and latency == 0:
            return None
        std = np.full(ff.model.nv, noise["joint_noise"])
        if ff.base == "planar":
            std[:2], std[2] = noise["base_position_noise"], noise["base_attitude_noise"]
        else:
            std[:3], std[3:6] = noise["base_position_noise"], noise["base_attitude_noise"]
        return SensorModel(latency, std, self.seed)
