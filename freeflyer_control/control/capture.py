"""Capture of a tumbling target: what every phase shares (control.approach, control.detumble and
control.capture_mission are the laws and their sequence).

* When a grasp may close: :class:`CaptureTolerances`, checked on the relative pose and twist of
  the end-effector and the grasp frame (:func:`relative_motion`); :func:`capture_refusal` says
  which tolerance is missed, in one line with the fix.
* How a law's wanted accelerations become actuator efforts in each capture mode
  (:func:`effort_for_accelerations`): computed torque on the mode-reduced dynamics
  (physics.reduced) over the GJM's actuated coordinates (arm joints, then the commanded base
  velocities in world axes):

  - floating: arm torques only, the base moves as the momentum says;
  - rotation-floating: the reaction wheels hold the commanded attitude (their torques solved from
    the attitude rows, clipped to their limits: control.computed_torque's hybrid dynamics);
  - flying: arm torques and a base wrench (thrusters, or an ideal wrench).

Arm and wheel torques are clipped to their limits (:func:`limited`); the base wrench goes to the
thrusters through control.effort.ActuatorMapper (each in [0, max_force]).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.control.computed_torque import rotation_floating_forces
from freeflyer_control.control.effort import ControlEffort
from freeflyer_control.errors import ModeError
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.modes import Mode, base_partition
from freeflyer_control.physics.reduced import reduced_dynamics
from freeflyer_control.physics.state import State

CAPTURE_MODES = (Mode.FLOATING, Mode.ROTATION_FLOATING, Mode.FLYING)
PLANAR_ROWS = np.array([0, 1, 5])


@dataclass(frozen=True)
class CaptureTolerances:
    """The grasp closes only when the end-effector is this close to its grasp frame: position m,
    angle rad, relative linear speed m/s, relative angular speed rad/s."""

    position: float = 0.005
    angle: float = 0.05
    speed: float = 0.02
    angular_speed: float = 0.05


def relative_motion(ee: pin.SE3, ee_twist: np.ndarray, grasp: pin.SE3, grasp_twist: np.ndarray) -> np.ndarray:
    """(distance m, angle rad, linear speed m/s, angular speed rad/s) of the end-effector frame
    relative to the grasp frame; twists [v; w] in world axes at each frame's origin."""
    dv = np.asarray(ee_twist) - np.asarray(grasp_twist)
    return np.array([np.linalg.norm(ee.translation - grasp.translation),
                     np.linalg.norm(pin.log3(ee.rotation @ grasp.rotation.T)),
                     np.linalg.norm(dv[:3]), np.linalg.norm(dv[3:])])


def capture_refusal(end_effector: str, object_name: str, rel: np.ndarray, tol: CaptureTolerances) -> str | None:
    """Why a grasp may not close now (one line naming the first tolerance missed), or None."""
    checks = (("is", "m from", tol.position, "m", "approach first"),
              ("is turned", "rad from", tol.angle, "rad", "align first"),
              ("moves", "m/s relative to", tol.speed, "m/s", "match the target's motion first"),
              ("turns", "rad/s relative to", tol.angular_speed, "rad/s", "match the target's spin first"))
    for value, (verb, what, limit, unit, fix) in zip(rel, checks):
        if value > limit:
            return (f"capture refused: end-effector '{end_effector}' {verb} {value:.3g} {what} the grasp frame of "
                    f"'{object_name}' (tolerance {limit:g} {unit}); {fix}")
    return None


def capture_mode(mode: Mode | str) -> Mode:
    """``mode`` if the capture laws fly it, else ModeError with the choice."""
    mode = Mode.parse(mode)
    if mode not in CAPTURE_MODES:
        raise ModeError(f"capture flies {[m.value for m in CAPTURE_MODES]}; mode '{mode.value}' is not supported: "
                        "choose floating, rotation-floating or flying")
    return mode


def effort_for_accelerations(ff: FreeFlyerModel, data: pin.Data, state: State, mode: Mode,
                             u_dot: np.ndarray, base_torque: np.ndarray | None = None) -> ControlEffort:
    """The effort that gives the actuated accelerations ``u_dot`` (GJM column order: arm joints,
    then the mode's commanded base velocities in world axes; rad/s^2, m/s^2) on the
    mode-reduced dynamics of ``ff`` at ``state`` (see the module docstring). Wheels are idle
    except in rotation-floating, where they hold the commanded attitude; there, ``base_torque``
    (world axes, N m; planar: z) is a torque the thrusters add on the base, which the wheels take
    in (loading them with momentum: control.capture_mission's bias)."""
    n_arm = ff.arm_v_indices.size
    nc = base_partition(ff.base, mode).commanded.size
    u_arm, u_base = u_dot[:n_arm], u_dot[n_arm:]
    if mode is Mode.ROTATION_FLOATING:
        rd = reduced_dynamics(ff, data, state, mode)  # (attitude, arm joints and wheels)
        arm, wheels = nc + ff.arm_v_indices - ff.nb, nc + ff.wheel_v_indices - ff.nb
        forces = rotation_floating_forces(ff, rd.H, rd.C, nc, u_base, u_arm, arm, wheels, base_torque)
        wrench = np.zeros(ff.nb)
        if base_torque is not None:
            wrench[ff.nb - nc:] = base_torque  # the attitude rows: (wz) or (wx, wy, wz)
        return ControlEffort(forces[arm], forces[wheels], wrench)
    rd = reduced_dynamics(ff, data, state, mode, idle_wheels=True)  # (commanded base, arm joints)
    forces = rd.H @ np.concatenate([u_base, u_arm]) + rd.C
    wrench = np.zeros(ff.nb)
    wrench[base_partition(ff.base, mode).commanded] = forces[:nc]  # world axes
    return ControlEffort(forces[nc:], np.zeros(ff.wheel_v_indices.size), wrench)


def limited(ff: FreeFlyerModel, effort: ControlEffort) -> ControlEffort:
    """``effort`` with the arm torques clipped to the URDF effort limits and the wheel torques to
    the wheels' (the base wrench is bounded where it is allocated)."""
    arm = np.clip(effort.arm_torques, -ff.arm_effort_limits, ff.arm_effort_limits)
    wheels = np.clip(effort.wheel_torques, -ff.wheel_max_torques, ff.wheel_max_torques) \
        if effort.wheel_torques.size else effort.wheel_torques
    return ControlEffort(arm, wheels, effort.base_wrench_world)


def bounded(v: np.ndarray, limit: float) -> np.ndarray:
    """``v`` scaled down to norm ``limit`` if longer."""
    n = float(np.linalg.norm(v))
    return v if n <= limit else v * (limit / n)
