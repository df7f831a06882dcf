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

Rotation-floating mode (the wheels, an internal actuator, hold the base attitude): the attitude
is not a task coordinate but held. Its acceleration is prescribed, u (the base pose loop's, see
control.base_control; zero if none is given), the free translation is eliminated as above and
the law runs on the arm alone, a = arm joints, with the attitude's share moved to the bias:

    x'' = J*_arm a'' + (c + J*_att u),    tau_arm = H*_arm a'' + (C*_arm + H*_arm,att u)

so the end-effector's closed loop is the same e'' + 2 z w e' + w^2 e = 0 while the attitude
follows u. The wheel torques, and the arm torques consistent with them, then come from the
attitude-holding hybrid solve of computed torque (control.computed_torque.rotation_floating_forces:
no external torque on the attitude rows, wheel accelerations solved from them; a wheel over its
torque limit is clipped and the attitude let go for that tick). This takes the wheel rotors as
balanced (their spin moves no mass: they enter neither the translation nor the arm rows), true
of reaction wheels and of the package's robots.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import logging

import numpy as np
import pinocchio as pin

from freeflyer_control.control.computed_torque import rotation_floating_forces
from freeflyer_control.control.effort import ControlEffort
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.actuators import local_wrench_to_world
from freeflyer_control.physics.linalg import solve_spd_upper
from freeflyer_control.physics.modes import Mode, base_partition
from freeflyer_control.physics.state import State, world_to_local_base_map

_PLANAR_ROWS = np.array([0, 1, 5])
log = logging.getLogger(__name__)


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
        force_axis: unit vector (3,), world, or None: the axis along which the end-effector
            pushes with ``force`` instead of holding ``position`` (see below).
        force: N, the push along ``force_axis`` (what the end-effector exerts on a contact).
    """

    position: np.ndarray
    orientation: np.ndarray
    twist: np.ndarray = field(default_factory=lambda: np.zeros(6))
    acceleration: np.ndarray = field(default_factory=lambda: np.zeros(6))
    force_axis: np.ndarray | None = None
    force: float = 0.0


# Hybrid force/impedance (TaskTarget.force_axis): along the unit axis n (world) the position
# stiffness is dropped and the end-effector pushes with ``force`` N along n, feed-forward through
# J*^T (n force); damping stays on every axis. Against a wall of normal -n the contact force
# then settles where it balances the push: f_contact = -force n (no model error, no motion along
# n). Every other axis keeps its impedance.


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
        self._zero_a = np.zeros(ff.model.nv)
        self._planar = ff.base == "planar"
        self._work = np.zeros((ff.model.nv + self.rows.size, ff.model.nv + 1))  # see _indices
        self._null_mix = np.array([1.0, gains.null_damping])
        # Returned in efforts that have no wheel torque or base wrench: read-only, shared.
        self._no_wheel_torque, self._no_wrench = np.zeros(ff.wheel_v_indices.size), np.zeros(ff.nb)
        self._no_wheel_torque.setflags(write=False)
        self._no_wrench.setflags(write=False)
        self._index_cache: dict[Mode, tuple] = {}
        self.warnings: list[str] = []  # one per mode, the first time Lambda* is singular there

    def _indices(self, mode: Mode) -> tuple:
        """Per mode (cached): the partition, the law's coordinates and the flat indices that cut
        the tick's blocks out of the work matrix W = [[M, b], [J, Jdot v]] with one ``take`` each
        (fancy np.ix_ indexing costs ~30 us a tick). M is read from its upper triangle only
        (Pinocchio's CRBA), so it is never mirrored.

        Actuated a: the commanded base coordinates and the arm joints; eliminated e: the free
        base coordinates and the idle wheels. Rotation-floating keeps the wheels actuated, in
        computed torque's layout [commanded attitude, every joint], for its hybrid solve; the
        law's own coordinates (``law``, positions in a) are then the arm joints."""
        cached = self._index_cache.get(mode)
        if cached is None:
            ff = self.ff
            part = base_partition(ff.base, mode)
            nv, nc, m = ff.model.nv, part.commanded.size, self.rows.size
            if mode is Mode.ROTATION_FLOATING:
                act = np.concatenate([part.commanded, np.arange(ff.nb, nv)]).astype(int)
                elim = np.asarray(part.free, dtype=int)
                law = nc + ff.arm_v_indices - ff.nb
                wheels = nc + ff.wheel_v_indices - ff.nb
            else:
                act = np.concatenate([part.commanded, ff.arm_v_indices]).astype(int)
                elim = np.concatenate([part.free, ff.wheel_v_indices]).astype(int)
                law, wheels = np.arange(act.size), None
            stride = nv + 1

            def block(rows, cols):  # rows >= nv are J's, column nv is the bias
                r, c = np.meshgrid(rows, cols, indexing="ij")
                upper = (r < nv) & (c < nv)
                lo, hi = np.minimum(r, c), np.maximum(r, c)
                return np.where(upper, lo * stride + hi, r * stride + c).ravel()

            task_rows = np.concatenate([act, nv + np.arange(m)])
            with_bias = np.append(act, nv)
            cached = (part, act, elim, law, wheels,
                      block(task_rows, with_bias),  # [[M_aa, b_a], [J_a, c]]
                      block(task_rows, elim),  # [[M_ae], [J_e]]
                      block(elim, with_bias),  # [M_ea, b_e]
                      block(elim, elim))  # M_ee
            self._index_cache[mode] = cached
        return cached

    def effort(self, state: State, mode: Mode | str, target: TaskTarget,
               base_acceleration: np.ndarray | None = None) -> ControlEffort:
        """Joint torques, wheel torques and base wrench (world) realising the impedance at ``state``.

        ``base_acceleration``: rotation-floating only, the attitude acceleration the wheels are to
        hold, rad/s^2, world axes, ordered like the mode's commanded base coordinates (spatial
        (wx, wy, wz), planar (wz)): what :func:`~freeflyer_control.control.base_control.base_accelerations`
        gives for the base reference; None holds the attitude rate (zero acceleration).
        """
        ff, model, data, W = self.ff, self.ff.model, self.data, self._work
        mode = mode if isinstance(mode, Mode) else Mode.parse(mode)
        part, act, elim, law, wheels, i_b, i_e, i_r, i_ee = self._indices(mode)
        na, ne, nv = act.size, elim.size, model.nv
        q, v = state.q, state.v
        W[:nv, :nv] = pin.crba(model, data, q)  # upper triangle read
        W[:nv, nv] = pin.nonLinearEffects(model, data, q, v)
        J = pin.computeFrameJacobian(model, data, q, self.fid, pin.LOCAL_WORLD_ALIGNED)
        pin.forwardKinematics(model, data, q, v, self._zero_a)
        Jdot_v = pin.getFrameClassicalAcceleration(model, data, self.fid, pin.LOCAL_WORLD_ALIGNED).vector
        if self._planar:
            J, Jdot_v = J.take(self.rows, axis=0), Jdot_v.take(self.rows)
        W[nv:, :nv], W[nv:, nv] = J, Jdot_v
        # One Schur complement for the dynamics and the task: with K = M_ee^-1 [M_ea, b_e],
        # [[H*, C*], [J*, c]] = [[M_aa, b_a], [J_a, Jdot v]] - [[M_ae], [J_e]] K.
        S = W.take(i_b).reshape(na + self.rows.size, na + 1)
        if ne:
            K = solve_spd_upper(W.take(i_ee).reshape(ne, ne), W.take(i_r).reshape(ne, na + 1))
            S -= W.take(i_e).reshape(S.shape[0], ne).dot(K)
        H, C, Jstar, c = S[:na, :na], S[:na, na], S[na:, :na], S[na:, na]
        nc = part.commanded.size
        if wheels is None:
            acc, push = self._law(mode, target, H, Jstar, c, v.take(act), J.dot(v))
            tau = H.dot(acc) + C
            if push is not None:
                tau = tau + push
            wrench = self._no_wrench
            if nc:
                base_local = np.zeros(ff.nb)
                base_local[part.commanded] = tau[:nc]
                wrench = local_wrench_to_world(ff, q, base_local)
            return ControlEffort(tau[nc:], self._no_wheel_torque, wrench)
        # Rotation-floating: the attitude is held at u (local base axes), the arm alone serves the task.
        if base_acceleration is None:  # the attitude rate held: nothing to add to the task bias
            u, c_law = np.zeros(nc), c
        else:
            u = world_to_local_base_map(ff, q)[part.commanded_slice, part.commanded_slice].dot(base_acceleration)
            c_law = c + Jstar[:, :nc].dot(u)
        H_law, J_law = H.take(law, axis=0).take(law, axis=1), Jstar.take(law, axis=1)
        acc, push = self._law(mode, target, H_law, J_law, c_law, v.take(act).take(law), J.dot(v))
        forces = rotation_floating_forces(ff, H, C, nc, u, acc, law, wheels)
        arm = forces[law] if push is None else forces[law] + push
        return ControlEffort(arm, forces[wheels], self._no_wrench)  # no external wrench

    def _law(self, mode, target, H, Jstar, c, a_act, x_dot):
        """The impedance law on the coordinates a of H a'' + (bias) = tau, x'' = J* a'' + c, at
        task velocity ``x_dot`` (world; linear, angular): returns a'' and the force
        feed-forward J*^T (n force) to add to tau, or None without a force axis."""
        oMf = self.data.oMf[self.fid]
        err = np.empty(6)
        err[:3] = target.position - oMf.translation
        err[3:] = pin.log3(target.orientation.dot(oMf.rotation.T))
        push = None
        if target.force_axis is not None:
            n = np.asarray(target.force_axis, dtype=float)
            err[:3] -= n * n.dot(err[:3])
            push = np.concatenate([n * float(target.force), np.zeros(3)])
        acceleration, twist = target.acceleration, target.twist
        if self._planar:
            err, acceleration, twist = err.take(self.rows), np.take(acceleration, self.rows), np.take(twist, self.rows)
            push = push.take(self.rows) if push is not None else None
        H_inv_Jt = solve_spd_upper(H, Jstar.T.copy())
        A = Jstar.dot(H_inv_Jt)  # Lambda*^-1
        rhs = np.empty((A.shape[0], 2))
        rhs[:, 0] = acceleration + self.kd * (twist - x_dot) + self.kp * err - c
        rhs[:, 1] = Jstar.dot(a_act)
        try:
            y = solve_spd_upper(A, rhs)  # Lambda* [x_cmd - c, J* a']
        except np.linalg.LinAlgError:  # a singularity of the mode: least squares instead
            y = np.linalg.pinv(A, rcond=1e-10, hermitian=True).dot(rhs)
            self._warn_singular(mode)
        # a'' = H^-1 J*^T (y_0 + d0 y_1) - d0 a': the task part and the damped null-space part
        acc = H_inv_Jt.dot(y.dot(self._null_mix)) - self.gains.null_damping * a_act
        return acc, (Jstar.T.dot(push) if push is not None else None)

    def _warn_singular(self, mode: Mode) -> None:
        """Warn once per mode that Lambda* had to be replaced by a least-squares solve."""
        message = (f"impedance: Lambda* of '{self.frame}' is singular in {mode.value} mode (a kinematic "
                   "singularity of the mode): task forces solved by least squares, the singular direction "
                   "gets no stiffness; move away from the singular pose")
        if message not in self.warnings:
            self.warnings.append(message)
            log.warning(message)
