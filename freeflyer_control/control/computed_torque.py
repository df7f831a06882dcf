"""Computed-torque control on the mode-reduced dynamics (Wilde et al. 2018, eqs 112-115).

    tau = H*(q) u + C*(q, qdot),    u = qdd_d + K_D (qdot_d - qdot) + K_P (q_d - q)

over the actuated coordinates of the current mode: the commanded base DOFs (whose desired
accelerations come from the base pose loop) and the arm joints. Reaction wheels are joints of
the reduced model too; what is asked of them depends on the mode:

* rotation-floating: the attitude is commanded but no external torque exists, so the wheel
  accelerations are whatever makes the base attitude follow (solved from the attitude rows of
  the reduced dynamics), and the wheel torques follow from the wheel rows;
* every other mode: the wheels are idle (zero torque), so they are eliminated together with the
  free base coordinates (``reduced_dynamics(..., idle_wheels=True)``) and their reaction is
  compensated in the joint torques: the law is then a single product H* u + C*.

Rotation-floating is one linear solve with accelerations known on some coordinates and forces
on others (hybrid dynamics). The controller's model may differ from the plant's (mass-property
error), which is how the package studies robustness.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.control.base_control import BaseGains, base_accelerations
from freeflyer_control.control.effort import ControlEffort
from freeflyer_control.control.references import BaseReference, JointReference
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.linalg import solve
from freeflyer_control.physics.modes import Mode, base_partition
from freeflyer_control.physics.reduced import ReducedDynamics, reduced_dynamics
from freeflyer_control.physics.state import State, joint_positions


@dataclass(frozen=True)
class JointGains:
    """Per-joint PD gains (1/s^2, 1/s), arm joint order; a scalar applies to every joint.

    Wilde et al. use K_P = K_D = 1 (natural frequency 1 rad/s, damping 0.5).
    """

    kp: np.ndarray | float = 1.0
    kd: np.ndarray | float = 1.0

    def arrays(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        kp = np.broadcast_to(np.asarray(self.kp, dtype=float), (n,))
        kd = np.broadcast_to(np.asarray(self.kd, dtype=float), (n,))
        if not (np.all(np.isfinite(kp)) and np.all(kp >= 0) and np.all(np.isfinite(kd)) and np.all(kd >= 0)):
            raise ValueError(f"joint gains must be finite and >= 0; got kp={self.kp}, kd={self.kd}")
        return kp, kd


class ComputedTorque:
    """Computed-torque controller for one robot.

    Args:
        model: the controller's model of the robot (may carry mass-property errors).
        gains: arm joint PD gains.
        base_gains: base pose loop gains (used in modes that command base DOFs).
    """

    def __init__(self, model: FreeFlyerModel, gains: JointGains = JointGains(),
                 base_gains: BaseGains = BaseGains()):
        self.model = model
        self.data = model.create_data()
        fastpath.warm("reduced")  # compile (first use) or load it now, not on a tick
        self.kp, self.kd = gains.arrays(len(model.arm_joint_names))
        self.base_gains = base_gains
        self.last_dynamics: ReducedDynamics | None = None   # the NumPy path's last H*, C*
        # Index maps used every tick, computed once: arm and wheel joints among the joints.
        self._arm_rel = model.arm_v_indices - model.nb
        self._wheel_rel = model.wheel_v_indices - model.nb
        # The compiled path (control.kernels.computed_torque.CompiledTorque), built at its first
        # use or here; False where the kernels do not cover the model.
        self._compiled = None
        if fastpath.kernels() is not None and fastpath.warming():
            self._warm()

    def _compiled_torque(self):
        """The compiled path's object (built once), or False where the kernels do not cover
        the model's joints."""
        if self._compiled is None:
            from freeflyer_control.control.kernels.computed_torque import CompiledTorque

            self._compiled = fastpath.covered(lambda: CompiledTorque(self.model, self.kp, self.kd),
                                              "computed torque", self.model.name)
        return self._compiled

    def _warm(self) -> None:
        """Compile (first use) or load the compiled path now, not on a tick: one call at the
        neutral configuration."""
        compiled = self._compiled_torque()
        if compiled:
            na = self.kp.size
            zero = np.zeros(na)
            fastpath.with_compile_notice("the computed-torque law", lambda: compiled.effort(
                pin.neutral(self.model.model), np.zeros(self.model.model.nv), Mode.FLOATING, zero, zero, zero,
                np.zeros(0)))

    def effort(
        self,
        state: State,
        mode: Mode,
        joint_ref: JointReference,
        base_ref: BaseReference | None = None,
        *,
        M: np.ndarray | None = None,
    ) -> ControlEffort:
        """The effort that tracks ``joint_ref`` (and ``base_ref`` for commanded base DOFs).

        ``M``: the mass matrix at ``state.q`` if the caller already has it (e.g. for the GJM).

        With numba (``physics.fastpath``) one compiled call computes M, b and the law
        (``control.kernels.computed_torque.joint_space_effort``: the same reduced dynamics, by
        the Cholesky route of the compiled engine, and the same wheel solve); else the NumPy /
        Pinocchio expressions below, the reference. The two agree to round-off
        (test/test_compiled_torque.py). ``M`` given, or a mode the kernels do not solve
        (rotation-floating with more or fewer wheels than attitude axes), takes the reference.
        """
        ff = self.model
        part = base_partition(ff.base, mode)
        nc = part.commanded.size
        if nc and base_ref is None:
            raise ValueError(f"mode {mode.value} commands base DOFs: give a base reference")
        u_base = base_accelerations(ff, state, base_ref, self.base_gains, part) if nc else _NO_BASE
        if M is None and fastpath.kernels() is not None:
            compiled = self._compiled_torque()
            if compiled and compiled.covers(mode):
                arm, wheels, wrench = compiled.effort(state.q, state.v, mode, joint_ref.position, joint_ref.velocity,
                                                      joint_ref.acceleration, u_base)
                return ControlEffort(arm, wheels, wrench)
        return self.effort_numpy(state, mode, joint_ref, u_base, M=M)

    def effort_numpy(self, state: State, mode: Mode, joint_ref: JointReference, u_base: np.ndarray, *,
                     M: np.ndarray | None = None) -> ControlEffort:
        """:meth:`effort` through the NumPy / Pinocchio expressions below whatever numba offers
        (the reference), from the commanded base coordinates' desired accelerations ``u_base``
        (world axes; empty in modes that command none)."""
        ff = self.model
        arm = ff.arm_v_indices
        q_arm = joint_positions(ff, state.q)[self._arm_rel]
        u_arm = (joint_ref.acceleration + self.kd * (joint_ref.velocity - state.v[arm])
                 + self.kp * (joint_ref.position - q_arm))
        part = base_partition(ff.base, mode)
        nc = part.commanded.size

        wrench = np.zeros(ff.nb)
        if mode is not Mode.ROTATION_FLOATING:
            # Idle wheels take no torque: eliminated with the free base, the law is one product.
            rd = reduced_dynamics(ff, self.data, state, mode, M=M, idle_wheels=True)
            self.last_dynamics = rd
            acc = np.concatenate((u_base, u_arm))
            forces = rd.H.dot(acc) + rd.C
            wrench[part.commanded] = forces[:nc]
            return ControlEffort(forces[nc:], np.zeros(self._wheel_rel.size), wrench)
        rd = reduced_dynamics(ff, self.data, state, mode, M=M)
        self.last_dynamics = rd
        arm_idx, wheel_idx = nc + self._arm_rel, nc + self._wheel_rel
        forces = rotation_floating_forces(ff, rd.H, rd.C, nc, u_base, u_arm, arm_idx, wheel_idx)
        return ControlEffort(forces[arm_idx], forces[wheel_idx], wrench)  # no external base force


def rotation_floating_forces(
    ff: FreeFlyerModel, H: np.ndarray, C: np.ndarray, nc: int, u_base: np.ndarray, u_arm: np.ndarray,
    arm_idx: np.ndarray, wheels: np.ndarray, external: np.ndarray | None = None,
) -> np.ndarray:
    """Generalized forces on [commanded attitude, joints] in rotation-floating mode, from the
    reduced dynamics H a'' + C = f over those coordinates (attitude in any fixed axes: its
    force is zero in all of them). Used by computed torque and by the impedance law.

    Known accelerations: the attitude (u_base) and the arm joints (u_arm). No external torque
    acts on the attitude rows (or ``external``, world axes, N m: a torque the thrusters apply,
    which the wheels then take in): the wheels do the work, their accelerations solved from those
    rows. If that asks more of a wheel than its torque limit, the wheel torque is clipped and the
    attitude is let go for this tick (its acceleration solved from the clipped torque), so that
    the arm torques stay consistent with what the wheels really do and the arm keeps tracking.
    """
    n = H.shape[0]
    acc = np.zeros(n)
    acc[:nc] = u_base
    acc[arm_idx] = u_arm
    force = np.zeros(n)
    attitude = _ATTITUDE_ROWS[nc]
    if external is not None:
        force[attitude] = external
    forces = hybrid_dynamics(H, C, acc, unknown=wheels, known_force_rows=attitude, force=force)
    limit = ff.wheel_max_torques
    wheel_forces = forces.take(wheels)
    # ndarray methods, not np.any / np.clip: their dispatch wrappers cost ~3 us a tick here.
    if (abs(wheel_forces) > limit).any():
        force[wheels] = wheel_forces.clip(-limit, limit)
        free = np.concatenate([attitude, wheels])
        forces = hybrid_dynamics(H, C, acc, unknown=free, known_force_rows=free, force=force)
    return forces


_NO_BASE = np.zeros(0)   # u_base in modes that command no base coordinate
_NO_BASE.flags.writeable = False

# The commanded attitude rows of rotation-floating: (wz) planar, (wx, wy, wz) spatial.
_ATTITUDE_ROWS = {n: np.arange(n) for n in (1, 3)}


def hybrid_dynamics(
    H: np.ndarray,
    C: np.ndarray,
    acc: np.ndarray,
    unknown: np.ndarray,
    known_force_rows: np.ndarray,
    force: np.ndarray,
) -> np.ndarray:
    """Forces f with H a + C = f when a is known except on ``unknown`` and f is known on
    ``known_force_rows`` (Featherstone's hybrid dynamics, on the reduced model).

    The unknown accelerations are solved from the known-force rows (least squares, minimum
    norm when there are more unknowns than rows) and written into ``acc``; returns the full
    force vector with the known entries exactly as given.
    """
    if unknown.size == 0:
        return H @ acc + C
    acc[unknown] = 0.0  # so that H[rows] @ acc sums the known accelerations only
    rows = known_force_rows
    H_rows = H.take(rows, axis=0)
    rhs = force[rows] - C[rows] - H_rows @ acc
    A = H_rows.take(unknown, axis=1)
    acc[unknown] = solve(A, rhs) if A.shape[0] == A.shape[1] else np.linalg.lstsq(A, rhs, rcond=None)[0]
    out = H @ acc + C
    out[rows] = force[rows]
    return out
