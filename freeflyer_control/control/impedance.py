"""Operational-space impedance control of an end-effector, in a maneuvering mode.

The actuated coordinates a of a mode are its commanded base DOFs and the arm joints; the free
base DOFs and the (idle) reaction wheels take no generalized force and are eliminated, as in
physics.reduced (H* a'' + C* = tau_a) and physics.gjm (J*). With M, b the floating-base inertia
and bias, e the eliminated coordinates (Pinocchio's local base coordinates throughout):

    H* = M_aa - M_ae M_ee^-1 M_ea,           C* = b_a - M_ae M_ee^-1 b_e
    J* = J_a  - J_e  M_ee^-1 M_ea,           c  = Jdot nu - J_e M_ee^-1 b_e
    x'' = J* a'' + c                          (task acceleration: linear, angular; world)
    Lambda* = (J* H*^-1 J*^T)^-1              (the mode's operational-space inertia with the
                                               base actuators in the task, not held)

The law asks for the task acceleration of a mass-spring-damper of natural frequency w and
damping ratio z on every task axis,

    x''_cmd = x''_d + 2 z w (x'_d - x') + w^2 e,    e = [p_d - p; log(R_d R^T)] (world),

and realises it with the dynamically consistent inverse J# = H*^-1 J*^T Lambda*:

    a'' = J# (x''_cmd - c) + (I - J# J*) (-d0 a'),    tau_a = H* a'' + C*

i.e. the task-space force F = Lambda* (x''_cmd - c) + (terms compensating C*), so commanded
stiffness and damping are K = w^2 Lambda*, D = 2 z w Lambda*. Without contact the closed loop is
exactly e'' + 2 z w e' + w^2 e = 0 (up to the model error). Null-space behaviour: motions of
the actuated coordinates that do not move the end-effector (the redundant arm's self-motion,
and in modes with commanded base DOFs the base motions the arm compensates) are damped with
rate d0 (1/s) and otherwise left free: they are not driven back to any pose.

Rotation-floating mode (attitude held by the wheels, an internal actuator) is not handled: its
actuated set mixes forces and accelerations (hybrid dynamics, see control.computed_torque).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from freeflyer_control.control.effort import ControlEffort
from freeflyer_control.errors import ModeError
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.actuators import local_wrench_to_world
from freeflyer_control.physics.dynamics import mass_matrix, nonlinear_effects
from freeflyer_control.physics.gjm import frame_jacobian
from freeflyer_control.physics.modes import Mode, base_partition
from freeflyer_control.physics.state import State

_PLANAR_ROWS = np.array([0, 1, 5])


@dataclass(frozen=True)
class ImpedanceGains:
    """Attributes:
    natural_frequency: w, rad/s, > 0 (scalar or one per task axis).
    damping_ratio: z, >= 0 (scalar or per axis); 1 is critical damping.
    null_damping: d0, 1/s, >= 0: damping of the null-space motion.
    """

    natural_frequency: float | np.ndarray = 2.0
    damping_ratio: float | np.ndarray = 0.7
    null_damping: float = 1.0


@dataclass(frozen=True)
class TaskTarget:
    """Desired end-effector pose and motion, world frame.

    Attributes:
        position: m (3,); orientation: rotation matrix world <- frame (3, 3);
        twist: [v; omega] (6,), m/s and rad/s; acceleration: (6,), m/s^2 and rad/s^2.
    """

    position: np.ndarray
    orientation: np.ndarray
    twist: np.ndarray = field(default_factory=lambda: np.zeros(6))
    acceleration: np.ndarray = field(default_factory=lambda: np.zeros(6))


class ImpedanceController:
    """Task-space impedance of ``frame`` for ``ff`` (see the module docstring)."""

    def __init__(self, ff: FreeFlyerModel, frame: str, gains: ImpedanceGains = ImpedanceGains()):
        w = np.asarray(gains.natural_frequency, dtype=float)
        z = np.asarray(gains.damping_ratio, dtype=float)
        if not (np.all(np.isfinite(w)) and np.all(w > 0) and np.all(np.isfinite(z)) and np.all(z >= 0)
                and np.isfinite(gains.null_damping) and gains.null_damping >= 0):
            raise ValueError(
                f"impedance gains must be finite with natural_frequency > 0, damping_ratio >= 0 "
                f"and null_damping >= 0; got {gains}")
        self.ff, self.frame, self.gains = ff, frame, gains
        self.data = ff.create_data()
        self.fid = ff.frame_id(frame)
        self.rows = _PLANAR_ROWS if ff.base == "planar" else np.arange(6)
        self.kp = np.broadcast_to(w**2, (self.rows.size,))
        self.kd = np.broadcast_to(2.0 * z * w, (self.rows.size,))

    def effort(self, state: State, mode: Mode | str, target: TaskTarget) -> ControlEffort:
        """Joint torques and base wrench (world) realising the impedance at ``state``."""
        ff, model, data = self.ff, self.ff.model, self.data
        mode = Mode.parse(mode)
        if mode is Mode.ROTATION_FLOATING:
            raise ModeError("the impedance controller does not handle rotation-floating mode "
                            "(wheel-held attitude); use floating, rotation-flying, "
                            "translation-flying or flying")
        part = base_partition(ff.base, mode)
        act = np.concatenate([part.commanded, ff.arm_v_indices])
        elim = np.concatenate([part.free, ff.wheel_v_indices]).astype(int)
        q, v = state.q, state.v
        M = mass_matrix(ff, data, q)
        b = nonlinear_effects(ff, data, q, v)
        J = frame_jacobian(ff, data, q, self.frame)[self.rows]  # LOCAL_WORLD_ALIGNED
        pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))
        pin.updateFramePlacements(model, data)
        Jdot_v = pin.getFrameClassicalAcceleration(model, data, self.fid, pin.LOCAL_WORLD_ALIGNED).vector[self.rows]

        if elim.size:
            M_ee = M[np.ix_(elim, elim)]
            K = np.linalg.solve(M_ee, np.column_stack([M[np.ix_(elim, act)], b[elim]]))
            M_ae = M[np.ix_(act, elim)]
            H = M[np.ix_(act, act)] - M_ae @ K[:, :-1]
            C = b[act] - M_ae @ K[:, -1]
            Jstar = J[:, act] - J[:, elim] @ K[:, :-1]
            c = Jdot_v - J[:, elim] @ K[:, -1]
        else:
            H, C, Jstar, c = M[np.ix_(act, act)], b[act], J[:, act], Jdot_v
        H_inv_Jt = np.linalg.solve(H, Jstar.T)
        Lam = np.linalg.pinv(Jstar @ H_inv_Jt, rcond=1e-10, hermitian=True)  # singular: DLS-like
        J_sharp = H_inv_Jt @ Lam

        oMf = data.oMf[self.fid]
        err = np.concatenate([target.position - oMf.translation,
                              pin.log3(target.orientation @ oMf.rotation.T)])[self.rows]
        xdot = J @ v
        x_cmd = (np.asarray(target.acceleration)[self.rows] + self.kd * (np.asarray(target.twist)[self.rows] - xdot)
                 + self.kp * err)
        a_act = v[act]
        acc = J_sharp @ (x_cmd - c)
        acc += -self.gains.null_damping * (a_act - J_sharp @ (Jstar @ a_act))
        tau = H @ acc + C
        nc = part.commanded.size
        base_local = np.zeros(ff.nb)
        base_local[part.commanded] = tau[:nc]
        return ControlEffort(tau[nc:], np.zeros(ff.wheel_v_indices.size),
                             local_wrench_to_world(ff, q, base_local))
