"""Actuators: joint motors, reaction wheels, thrusters, an external base wrench.

An :class:`Actuation` is what a controller (or a testbed) commands for one control period.
:func:`generalized_forces` turns it, after saturation, into the generalized force vector of
the floating-base dynamics. Also here: which modes a robot's actuators can support.

Ideal base actuation (``base_actuation: ideal``, an external wrench instead of thrusters) is
bounded like the real actuators: :func:`limit_base_wrench` scales the force and the torque down
to the robot's :func:`base_wrench_limits`, keeping their directions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import nnls

from freeflyer_control.errors import ModeError
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.linalg import all_finite
from freeflyer_control.physics.modes import Mode, spec
from freeflyer_control.physics.state import base_rotation
from freeflyer_control.physics.wrench_bound import limit_wrench_into


@dataclass
class Actuation:
    """Commands for one control period (zero-order hold). Empty arrays mean "all zero".

    Attributes:
        arm_torques: arm joint torques (N m; N for prismatic), ``ff.arm_joint_names`` order.
        wheel_torques: motor torque on each reaction wheel about its axis, N m, config order;
            the base feels the opposite torque.
        thruster_forces: each thruster's force, N, config order; saturated to [0, max_force].
        base_wrench_world: ideal base actuation: a wrench on the base about the base_link origin
            in world axes, spatial [fx, fy, fz, mx, my, mz], planar [fx, fy, mz]; saturated to
            :func:`base_wrench_limits`. (A disturbance, which no limit bounds, is added to the
            generalized forces instead: see ``Plant.step(tau=...)``.)
    """

    arm_torques: np.ndarray = field(default_factory=lambda: np.zeros(0))
    wheel_torques: np.ndarray = field(default_factory=lambda: np.zeros(0))
    thruster_forces: np.ndarray = field(default_factory=lambda: np.zeros(0))
    base_wrench_world: np.ndarray = field(default_factory=lambda: np.zeros(0))


def _per_robot(build, ff: FreeFlyerModel):
    """``build(ff)`` once per robot object (``FreeFlyerModel.derived``, keyed by ``build``);
    arrays come back read-only."""
    return ff.derived(build, _read_only, build, ff)


def _read_only(build, ff: FreeFlyerModel):
    value = build(ff)
    if isinstance(value, np.ndarray):
        value.setflags(write=False)
    return value


def thruster_matrix(ff: FreeFlyerModel) -> np.ndarray:
    """B (nb x n_thrusters): base wrench in base_link axes, about the base_link origin, per
    newton of each thruster. Spatial rows [f; m], planar rows [fx, fy, mz]. Read-only."""
    return _per_robot(_thruster_matrix, ff)


# Ideal actuation idealizes the base actuators (a study of what a mode allows; HIL, where the
# bridge maps the wrench onto the real thrusters and saturates it there): it may be stronger than
# the thrusters, not unboundedly. 10 x their reach holds a base against its arm's reaction (up to
# 6 x measured, translation-flying in test_gjm_modes) and stops an absurd wrench.
IDEAL_MARGIN = 10.0
# Bounds of ideal base actuation for a robot without thrusters or base_limits: what gives the
# whole robot 1 m/s^2 and 1 rad/s^2, far beyond any maneuver (the base PD gains ask 0.25 m/s^2
# per metre of error) yet finite.
DEFAULT_BASE_ACCELERATION = 1.0  # m/s^2
DEFAULT_BASE_ANGULAR_ACCELERATION = 1.0  # rad/s^2


def base_wrench_limits(ff: FreeFlyerModel) -> tuple[float, float]:
    """(max_force N, max_torque N m) of ideal base actuation, about the base_link origin.

    The robot config's ``base_limits`` if given. Otherwise from the thrusters: per base_link axis
    the largest force (torque) any set of thrusters makes along it, either sign; the norm of
    those per-axis reaches bounds every wrench the thrusters can make, and ``IDEAL_MARGIN`` times
    it is the limit. Without thrusters (or where they make no force or no torque):
    ``DEFAULT_BASE_ACCELERATION`` times the robot's mass and ``DEFAULT_BASE_ANGULAR_ACCELERATION``
    times its largest rotational inertia about the base origin at the neutral configuration.
    """
    return _per_robot(_base_wrench_limits, ff)


def _base_wrench_limits(ff: FreeFlyerModel) -> tuple[float, float]:
    if ff.base_limits is not None:
        return float(ff.base_limits.max_force), float(ff.base_limits.max_torque)
    n_lin = 2 if ff.base == "planar" else 3
    force = torque = 0.0
    if ff.thrusters:
        B = thruster_matrix(ff) * ff.thruster_max_forces
        reach = np.maximum(np.clip(B, 0.0, None).sum(axis=1), np.clip(-B, 0.0, None).sum(axis=1))
        force = IDEAL_MARGIN * float(np.linalg.norm(reach[:n_lin]))
        torque = IDEAL_MARGIN * float(np.linalg.norm(reach[n_lin:]))
    if force <= 0.0:
        force = DEFAULT_BASE_ACCELERATION * ff.total_mass
    if torque <= 0.0:
        import pinocchio as pin

        M = pin.crba(ff.model, ff.create_data(), pin.neutral(ff.model))
        rot = M[n_lin:ff.nb, n_lin:ff.nb]
        rot = np.triu(rot) + np.triu(rot, 1).T
        torque = DEFAULT_BASE_ANGULAR_ACCELERATION * float(np.linalg.eigvalsh(rot).max())
    return force, torque


def limit_base_wrench(ff: FreeFlyerModel, wrench: np.ndarray) -> np.ndarray:
    """An ideal base wrench (nb,), about the base_link origin in any axes (world or base_link),
    with its force scaled down to ``max_force`` and its torque to ``max_torque`` (N, N m; see
    :func:`base_wrench_limits`). Norms do not depend on the axes, so neither does the bound."""
    max_force, max_torque = base_wrench_limits(ff)
    w = np.asarray(wrench, dtype=float).tolist()  # plain floats: the loops below run faster on them
    limit_wrench_into(ff.base == "planar", w, max_force, max_torque)
    return np.array(w)


def _thruster_matrix(ff: FreeFlyerModel) -> np.ndarray:
    cols = []
    for t in ff.thrusters:
        moment = np.cross(t.position, t.direction)
        if ff.base == "planar":
            cols.append([t.direction[0], t.direction[1], moment[2]])
        else:
            cols.append(np.concatenate([t.direction, moment]))
    return np.array(cols, dtype=float).T.reshape(ff.nb, len(ff.thrusters))


def _sized(values: np.ndarray, n: int, what: str) -> np.ndarray:
    if type(values) is np.ndarray and values.shape == (n,) and values.dtype == np.float64 and all_finite(values):
        return values  # a tick's own commands: ~1 us under the generic path below
    arr = np.asarray(values, dtype=float).reshape(-1)
    if arr.size == 0:
        return np.zeros(n)
    if arr.size != n:
        raise ValueError(f"{what} must have {n} entries, got {arr.size}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{what} contains NaN or Inf: {arr.tolist()}")
    return arr


def _clip(x: np.ndarray, lo: np.ndarray | float, hi: np.ndarray | float) -> np.ndarray:
    return np.minimum(np.maximum(x, lo), hi)  # np.clip's dispatch costs more on tiny arrays



def compiled_saturation(ff: FreeFlyerModel):
    """The robot's ``physics.kernels.actuators.CompiledSaturation`` once its kernel is warmed
    (``fastpath.warm("saturation")``: the servers, the plant and the engines warm it where numba
    is installed), else None: the NumPy expressions of :func:`_saturated` (the reference)."""
    if not fastpath.warmed("saturation") or fastpath.kernels() is None:
        return None
    return _per_robot(_build_saturation, ff)


def _build_saturation(ff: FreeFlyerModel):
    from freeflyer_control.physics.kernels.actuators import CompiledSaturation

    force, torque = base_wrench_limits(ff)
    return CompiledSaturation(ff.base == "planar", ff.arm_effort_limits, ff.wheel_max_torques, ff.wheel_max_speeds,
                              ff.thruster_max_forces, ff.wheel_v_indices, force, torque, ff.nb)


def _saturated(ff: FreeFlyerModel, act: Actuation, v: np.ndarray | None):
    """(arm, wheels, thrusters, base wrench) of :func:`saturate`; an empty command for actuators
    the robot has none of, and None for a zero ideal base wrench.

    A period's own commands (float64 vectors of the robot's sizes, all finite) take one compiled
    call where numba is installed (``physics.kernels.actuators.saturated_commands``: the same
    clips, the same bits; ~4 us against ~10 here); anything else, and the reference, the NumPy
    expressions below."""
    compiled = compiled_saturation(ff)
    if compiled is not None:
        out = compiled.saturate(act.arm_torques, act.wheel_torques, act.thruster_forces, act.base_wrench_world, v)
        if out is not None:
            return out
    effort = ff.arm_effort_limits
    arm_low, wheel_low = _lower_limits(ff)
    arm = _clip(_sized(act.arm_torques, effort.size, "arm_torques"), arm_low, effort)

    wheels = _sized(act.wheel_torques, len(ff.wheel_joint_names), "wheel_torques")
    if wheels.size:
        wheels = _clip(wheels, wheel_low, ff.wheel_max_torques)
        if v is not None:
            speed = v.take(ff.wheel_v_indices)
            at_limit = np.abs(speed) >= ff.wheel_max_speeds
            if at_limit.any():  # rare: only then the direction test
                wheels = np.where(at_limit & (wheels * speed > 0), 0.0, wheels)

    thrust = _sized(act.thruster_forces, len(ff.thrusters), "thruster_forces")
    if thrust.size:
        thrust = _clip(thrust, 0.0, ff.thruster_max_forces)

    wrench = None
    if np.size(act.base_wrench_world):  # an empty command is a zero wrench: skip its checks
        wrench = _sized(act.base_wrench_world, ff.nb, "base_wrench_world")
        wrench = limit_base_wrench(ff, wrench) if wrench.any() else None
    return arm, wheels, thrust, wrench



def _lower_limits(ff: FreeFlyerModel) -> tuple[np.ndarray, np.ndarray]:
    """(-arm effort limits, -wheel max torques), built once per robot: saturation runs on
    every plant step and control tick."""
    return _per_robot(_negated_limits, ff)


def _negated_limits(ff: FreeFlyerModel) -> tuple[np.ndarray, np.ndarray]:
    return -ff.arm_effort_limits, -ff.wheel_max_torques


def saturate(ff: FreeFlyerModel, act: Actuation, v: np.ndarray | None = None) -> Actuation:
    """Clip every command to what the hardware can do.

    Arm torques to the URDF effort limits, wheel torques to +-max_torque (and to zero where a
    wheel at its speed limit would be pushed faster, if ``v`` is given), thrusters to
    [0, max_force], the ideal base wrench to :func:`base_wrench_limits`. Raises ValueError for
    wrong sizes or non-finite values.
    """
    arm, wheels, thrust, wrench = _saturated(ff, act, v)
    return Actuation(arm, wheels, thrust, np.zeros(ff.nb) if wrench is None else wrench)


def applied_actuation(ff: FreeFlyerModel, act: Actuation, q: np.ndarray,
                      v: np.ndarray | None = None) -> tuple[Actuation, np.ndarray]:
    """What the actuators apply for the command ``act`` at the state (q, v): the saturated
    actuation (:func:`saturate`) and the wrench it puts on the base, world axes about the
    base_link origin ([fx, fy, mz] planar, [f; m] spatial): the thrusters' plus the bounded
    ideal wrench. What :func:`generalized_forces` applies, in the terms a log reports."""
    arm, wheels, thrust, wrench = _saturated(ff, act, v)
    on_base = np.zeros(ff.nb) if wrench is None else wrench.copy()
    if thrust.size and thrust.any():
        on_base += local_wrench_to_world(ff, q, thruster_matrix(ff) @ thrust)
    return Actuation(arm, wheels, thrust, np.zeros(ff.nb) if wrench is None else wrench), on_base


def generalized_forces(
    ff: FreeFlyerModel, q: np.ndarray, act: Actuation, v: np.ndarray | None = None
) -> np.ndarray:
    """Generalized forces (nv,) of the saturated actuation, ordered like Pinocchio's ``v``."""
    arm, wheels, thrust, wrench = _saturated(ff, act, v)
    tau = np.zeros(ff.model.nv)
    tau[ff.arm_v_indices] = arm
    if wheels.size:
        tau[ff.wheel_v_indices] = wheels
    if thrust.size and thrust.any():
        tau[: ff.nb] += thruster_matrix(ff) @ thrust
    if wrench is not None:
        tau[: ff.nb] += world_wrench_to_local(ff, q, wrench)
    return tau


def world_wrench_to_local(ff: FreeFlyerModel, q: np.ndarray, wrench_world: np.ndarray) -> np.ndarray:
    """Base wrench about the base_link origin: world axes -> base_link axes (nb,)."""
    Rt = base_rotation(ff, q).T
    w = np.asarray(wrench_world, dtype=float)
    if ff.base == "planar":
        f = Rt[:2, :2] @ w[:2]
        return np.array([f[0], f[1], w[2]])
    return np.concatenate([Rt @ w[:3], Rt @ w[3:]])


def local_wrench_to_world(ff: FreeFlyerModel, q: np.ndarray, wrench_local: np.ndarray) -> np.ndarray:
    """Base wrench about the base_link origin: base_link axes -> world axes (nb,); the inverse
    of :func:`world_wrench_to_local`."""
    R = base_rotation(ff, q)
    w = np.asarray(wrench_local, dtype=float)
    if ff.base == "planar":
        f = R[:2, :2] @ w[:2]
        return np.array([f[0], f[1], w[2]])
    return np.concatenate([R @ w[:3], R @ w[3:]])


# ---------------------------------------------------------------------------------------------
# Which modes can this robot fly?


def in_thrust_cone(B: np.ndarray, target: np.ndarray) -> bool:
    """Is ``target`` a non-negative combination of B's columns (thrusters only push)?"""
    if B.shape[1] == 0:
        return False
    _, residual = nnls(B, target)
    return residual <= 1e-9 * max(1.0, np.linalg.norm(target))


def _spans_with_pure(B: np.ndarray, rows: np.ndarray, zero_rows: np.ndarray) -> bool:
    """Can the thrusters make +- every unit vector on ``rows`` with zero on ``zero_rows``?"""
    sub = B[np.concatenate([rows, zero_rows])]
    for i in range(rows.size):
        for sign in (1.0, -1.0):
            target = np.zeros(sub.shape[0])
            target[i] = sign
            if not in_thrust_cone(sub, target):
                return False
    return True


def mode_support(ff: FreeFlyerModel, mode: Mode | str) -> str | None:
    """Why ``ff`` cannot fly ``mode`` (a sentence), or None if its actuators suffice."""
    s = spec(mode)
    n_lin = 2 if ff.base == "planar" else 3
    lin = np.arange(n_lin)
    ang = np.arange(n_lin, ff.nb)
    if s.needs_wheels:
        axes = _wheel_axes(ff)
        need = 1 if ff.base == "planar" else 3
        if axes.shape[0] == 0 or np.linalg.matrix_rank(axes, tol=1e-6) < need:
            return (f"{s.mode} needs reaction wheels about {'z' if need == 1 else 'three independent axes'}; "
                    f"robot '{ff.name}' has {len(ff.wheel_joint_names)} wheel(s)")
    if not (s.needs_thruster_torque or s.needs_thruster_force):
        return None
    B = thruster_matrix(ff)
    if not ff.thrusters:
        return f"{s.mode} needs thrusters; robot '{ff.name}' has none"
    if s.needs_thruster_torque and s.needs_thruster_force:
        ok, what = _spans_with_pure(B, np.arange(ff.nb), np.zeros(0, dtype=int)), "every base wrench"
    elif s.needs_thruster_torque:
        ok, what = _spans_with_pure(B, ang, lin), "pure torques (couples) about every axis"
    else:
        ok, what = _spans_with_pure(B, lin, ang), "pure forces along every axis"
    if not ok:
        return f"{s.mode} needs thrusters that can produce {what}; robot '{ff.name}''s cannot"
    return None


def require_mode(ff: FreeFlyerModel, mode: Mode | str) -> Mode:
    """Return the parsed mode, or raise :class:`ModeError` saying what actuator is missing."""
    mode = Mode.parse(mode)
    reason = mode_support(ff, mode)
    if reason:
        raise ModeError(reason)
    return mode


def _wheel_axes(ff: FreeFlyerModel) -> np.ndarray:
    """Wheel spin axes in base_link axes, one row per wheel."""
    import pinocchio as pin

    model = ff.model
    data = model.createData()
    q = pin.neutral(model)
    pin.computeJointJacobians(model, data, q)
    # At the neutral base pose world axes = base_link axes; a wheel's column is its axis.
    return np.array([data.J[3:, i] for i in ff.wheel_v_indices]).reshape(-1, 3)
