"""Compiled computed-torque law in every maneuvering mode, ideal base actuation, reaction
wheels and mode blending: the control side of the compiled lockstep (needs numba).

What the Python path does, per tick, and where it is defined there:

* the base pose loop (``control/base_control.py: base_accelerations``): a PD law in world axes
  on the base pose, attitude error log(R_d R^T) (:func:`log3`, Pinocchio's formula);
* the mode-reduced dynamics H*, C* (``physics/reduced.py: reduced_dynamics``): the Schur
  complement over the free base coordinates (and the idle wheels, outside rotation-floating),
  the commanded base coordinates changed to world axes, on the layout ``reduced_plan`` builds
  for the mode, and the law (``control/computed_torque.py: ComputedTorque.effort``): H* u + C*,
  by ``physics/kernels/reduced.py: reduced_effort_into``, the same product through one Cholesky
  factorisation and matrix-vector products, without forming H* (``test/test_compiled_post.py``
  checks it against ``reduced_dynamics``); in rotation-floating the hybrid solve for the wheel
  accelerations with the wheel-torque clip (``rotation_floating_forces``) from that product and
  the columns of H* it solves for (:func:`hybrid_solve`, :func:`mode_effort`);
* the bumpless blend after a mode switch (``control/mode_switch.py: blend_weight``, compiled
  from that same definition) and ``ControlEffort.blend``;
* the actuator map (``control/effort.py: ActuatorMapper``): the base wrench to the thrusters
  through the allocator (``control/allocation_kernel.py: allocate_forces``, compiled from that
  same definition, which ``ThrusterAllocator`` runs too), or as an ideal wrench bounded and
  turned to base_link axes, and the saturation of ``physics/actuators.py: generalized_forces``:
  ``physics/kernels/actuators.py`` (``generalized_forces``, ``world_to_local``).

The base pose loop and the hybrid solve are written a second time here, in scalar loops (the
joint, wheel and thruster saturation in physics/kernels/actuators.py): their Python definitions are vectorised NumPy/Pinocchio (a plain-loop
version interpreted would cost the Python path tens of microseconds a call). docs/benchmarks.md
("One definition, and what is written twice") says why; ``test/test_fast_modes.py`` checks every
function here against its Python definition to round-off, and closed loops in every mode against
the Python engine.

Mode codes are indices in ``list(Mode)``: 0 floating, 1 rotation-floating, 2 rotation-flying,
3 translation-flying, 4 flying. Base coordinates are Pinocchio's (base_link axes); commanded
ones are the contiguous range c0:c1 of them (``physics.modes.base_partition``). Base
actuation codes: 0 none (a robot without thrusters: the wrench is dropped), 1 ideal, 2
thrusters (``control.effort.BASE_ACTUATION``).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.extending import register_jitable

from freeflyer_control.control.mode_switch import blend_weight
from freeflyer_control.physics.kernels.reduced import reduced_columns_into, reduced_effort_into, reduced_workspace
from freeflyer_control.physics.kernels.rigid_body import (
    _JIT,
    arm_positions,
    base_rotation,
    log3,
    mass_and_bias,
    workspace_views,
)

ROTATION_FLOATING = 1
BASE_NONE, BASE_IDEAL, BASE_THRUSTERS = 0, 1, 2

# The blend weight has one definition, in control/mode_switch.py; compiled here as it is.
blend_weight_compiled = njit(**_JIT)(blend_weight)


@njit(**_JIT)
def base_accelerations(planar, q, v, p_d, R_d, gains, c0, c1, out, Rb, scratch):
    """out[:c1 - c0] = the base pose loop's desired accelerations of the commanded base
    coordinates c0:c1 (world axes: spatial (vx, vy, vz, wx, wy, wz), planar (vx, vy, wz)).

    p_d: desired base_link origin, world, m (3,); R_d: desired world <- base_link rotation;
    gains: (kp_linear, kd_linear, kp_attitude, kd_attitude), 1/s^2 and 1/s. The reference
    twist is zero (the joint maneuvers hold the base pose).
    """
    base_rotation(planar, q, Rb)
    E, e_att, full = scratch[0], scratch[1], scratch[2]
    for a in range(3):  # E = R_d Rb^T
        for c in range(3):
            E[a, c] = R_d[a, 0] * Rb[c, 0] + R_d[a, 1] * Rb[c, 1] + R_d[a, 2] * Rb[c, 2]
    log3(E, e_att)
    kp_l, kd_l, kp_a, kd_a = gains[0], gains[1], gains[2], gains[3]
    if planar:
        lx = Rb[0, 0] * v[0] + Rb[0, 1] * v[1]
        ly = Rb[1, 0] * v[0] + Rb[1, 1] * v[1]
        full[0] = kp_l * (p_d[0] - q[0]) + kd_l * (0.0 - lx)
        full[1] = kp_l * (p_d[1] - q[1]) + kd_l * (0.0 - ly)
        full[2] = kp_a * e_att[2] + kd_a * (0.0 - v[2])
    else:
        for a in range(3):
            lin = Rb[a, 0] * v[0] + Rb[a, 1] * v[1] + Rb[a, 2] * v[2]
            ang = Rb[a, 0] * v[3] + Rb[a, 1] * v[4] + Rb[a, 2] * v[5]
            full[a] = kp_l * (p_d[a] - q[a]) + kd_l * (0.0 - lin)
            full[3 + a] = kp_a * e_att[a] + kd_a * (0.0 - ang)
    for k in range(c1 - c0):
        out[k] = full[c0 + k]


@njit(**_JIT)
def _lu_solve(A, x, piv):
    """Solve A y = x in place (A square, overwritten by its LU factors; partial pivoting, as
    LAPACK gesv)."""
    n = A.shape[0]
    for j in range(n):
        p = j
        big = abs(A[j, j])
        for i in range(j + 1, n):
            if abs(A[i, j]) > big:
                big, p = abs(A[i, j]), i
        if big == 0.0:
            raise np.linalg.LinAlgError("singular matrix in the rotation-floating wheel solve")
        piv[j] = p
        if p != j:
            for c in range(n):
                A[j, c], A[p, c] = A[p, c], A[j, c]
            x[j], x[p] = x[p], x[j]
        for i in range(j + 1, n):
            f = A[i, j] / A[j, j]
            A[i, j] = f
            for c in range(j + 1, n):
                A[i, c] -= f * A[j, c]
            x[i] -= f * x[j]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for c in range(i + 1, n):
            s -= A[i, c] * x[c]
        x[i] = s / A[i, i]


@njit(**_JIT)
def hybrid_solve(F0, Hc, n, acc, unknown, rows, force, out, A, rhs, piv):
    """``control.computed_torque.hybrid_dynamics`` for as many unknowns as known-force rows,
    from F0 = H acc0 + C (acc0: acc with the unknowns zero) and the unknowns' columns
    Hc[:n, k] = H[:, unknown[k]]: acc[unknown] solved from the rows (H acc + C)[rows] =
    force[rows]; out[:n] = H acc + C = F0 + Hc acc[unknown], with out[rows] = force[rows]."""
    m = unknown.shape[0]
    for r in range(m):
        rhs[r] = force[rows[r]] - F0[rows[r]]
        for c in range(m):
            A[r, c] = Hc[rows[r], c]
    _lu_solve(A[:m, :m], rhs[:m], piv)
    for k in range(m):
        acc[unknown[k]] = rhs[k]
    for i in range(n):
        s = F0[i]
        for k in range(m):
            s += Hc[i, k] * rhs[k]
        out[i] = s
    for r in range(m):
        out[rows[r]] = force[rows[r]]


@njit(**_JIT)
def mode_effort(mode, planar, nb, c0, c1, M, b, q, v, u_arm, arm_rel, wheel_rel, layout, wheel_limit,
                p_d, R_d, gains, arm_out, wheel_out, wrench_out, cws, hybrid):
    """``ComputedTorque.effort`` in ``mode`` with commanded base coordinates c0:c1: arm
    torques (arm order, N m), wheel torques (config order, N m) and the base wrench (world
    axes, about the base_link origin) into arm_out, wheel_out, wrench_out.

    M, b: mass matrix (upper triangle read) and nonlinear effects at (q, v). u_arm: the arm's
    desired accelerations (arm order, rad/s^2). layout: ``physics.kernels.reduced.reduced_layout`` of
    the mode's H*, C* (``physics.reduced.reduced_plan``: wheels idle outside rotation-floating).
    ``hybrid`` None: the caller never flies rotation-floating, and numba compiles this without
    the wheel solve. The base pose loop holds (p_d, R_d) (:func:`base_accelerations`); then
    :func:`accelerations_effort`.
    """
    Rb, ubase, bscratch = cws[0], cws[4], cws[10]
    if c1 - c0:
        base_accelerations(planar, q, v, p_d, R_d, gains, c0, c1, ubase, Rb, bscratch)
    accelerations_effort(mode, nb, c0, c1, M, b, q, v, ubase, u_arm, arm_rel, wheel_rel, layout, wheel_limit,
                         arm_out, wheel_out, wrench_out, cws, hybrid)


@njit(**_JIT)
def accelerations_effort(mode, nb, c0, c1, M, b, q, v, ubase, u_arm, arm_rel, wheel_rel, layout, wheel_limit,
                         arm_out, wheel_out, wrench_out, cws, hybrid):
    """:func:`mode_effort` from the desired accelerations: ubase[:c1 - c0] of the commanded base
    coordinates (world axes, m/s^2 and rad/s^2) and u_arm (arm order, rad/s^2)."""
    acc, forces = cws[1], cws[3]
    unknown, Hbuf, rws = cws[8], cws[11], cws[13]
    nc = c1 - c0
    na, nw = arm_rel.shape[0], wheel_rel.shape[0]
    for k in range(nb):
        wrench_out[k] = 0.0
    if hybrid is not None:
        if mode == ROTATION_FLOATING:
            rotation_floating_effort(nc, M, b, q, v, u_arm, arm_rel, wheel_rel, layout, wheel_limit, ubase,
                                     arm_out, wheel_out, cws)
            return
    # H* acc + C*, without H* (the wheels are idle: eliminated)
    for k in range(nc):
        acc[k] = ubase[k]
    for k in range(na):
        acc[nc + k] = u_arm[k]
    if reduced_effort_into(M, b, v, q, layout, acc, forces, rws, unknown[:0], Hbuf):
        raise np.linalg.LinAlgError("free-base inertia not positive definite")
    for k in range(nc):
        wrench_out[c0 + k] = forces[k]
    for k in range(na):
        arm_out[k] = forces[nc + k]
    for w in range(nw):
        wheel_out[w] = 0.0


@njit(**_JIT)
def joint_space_effort(km, ws_buf, mode, nb, c0, c1, layout, q, v, ubase, jref, kp, kd, arm_v, arm_q, arm_kind,
                       arm_rel, wheel_rel, wheel_limit, M, b, qa, u, arm_out, wheel_out, wrench_out, cws):
    """``ComputedTorque.effort`` from Python (:class:`CompiledTorque`): M(q) and b(q, v) of the
    controller's model km (``rigid_body.mass_and_bias``, into M, b), the arm's desired
    accelerations u = a_d + K_D (qdot_d - qdot) + K_P (q_d - q) from jref = (q_d, qdot_d, a_d)
    (3, na; rad, rad/s, rad/s^2, arm order) and the gains kp, kd (1/s^2, 1/s), then
    :func:`accelerations_effort` with the base pose loop's ubase (world axes, computed by the
    caller). arm_v, arm_q, arm_kind: the arm joints' velocity and configuration indices and
    kinds (``KernelModel``). qa, u (na,): scratch. ws_buf: ``rigid_body.workspace_views``' flat
    buffer."""
    ws, _ = workspace_views(ws_buf, km[0].shape[0], q.shape[0], v.shape[0], nb)
    mass_and_bias(km, q, v, M, b, ws)
    arm_positions(q, arm_q, arm_kind, qa)
    for j in range(qa.shape[0]):
        u[j] = (jref[2, j] + kd[j] * (jref[1, j] - v[arm_v[j]])) + kp[j] * (jref[0, j] - qa[j])
    accelerations_effort(mode, nb, c0, c1, M, b, q, v, ubase, u, arm_rel, wheel_rel, layout, wheel_limit,
                         arm_out, wheel_out, wrench_out, cws, ubase)


@njit(**_JIT)
def rotation_floating_effort(nc, M, b, q, v, u_arm, arm_rel, wheel_rel, layout, wheel_limit, ubase,
                             arm_out, wheel_out, cws):
    """:func:`mode_effort` in rotation-floating (the reaction wheels actuated): the hybrid solve
    for the wheel accelerations from H* acc0 + C* and H*'s columns of the unknowns
    (reduced_effort_into), with the wheel-torque clip of ``rotation_floating_forces``. ubase:
    the commanded base coordinates' desired accelerations (world axes)."""
    acc, force, forces = cws[1], cws[2], cws[3]
    A, rhs, piv, unknown, rows = cws[5], cws[6], cws[7], cws[8], cws[9]
    Hbuf, Cbuf, rws = cws[11], cws[12], cws[13]
    na, nw = arm_rel.shape[0], wheel_rel.shape[0]
    n = layout[2]
    F0 = Cbuf
    for j in range(n):
        acc[j] = 0.0
        force[j] = 0.0
    for k in range(nc):
        acc[k] = ubase[k]
        rows[k] = k
    for k in range(na):
        acc[nc + arm_rel[k]] = u_arm[k]
    for w in range(nw):
        unknown[w] = nc + wheel_rel[w]
    if reduced_effort_into(M, b, v, q, layout, acc, F0, rws, unknown[:nw], Hbuf):
        raise np.linalg.LinAlgError("free-base inertia not positive definite")
    hybrid_solve(F0, Hbuf, n, acc, unknown[:nw], rows[:nc], force, forces, A, rhs, piv)
    over = False
    for w in range(nw):
        if abs(forces[nc + wheel_rel[w]]) > wheel_limit[w]:
            over = True
    if over:  # clip the wheels, let the attitude go this tick (see rotation_floating_forces)
        for w in range(nw):
            f = forces[nc + wheel_rel[w]]
            force[nc + wheel_rel[w]] = min(max(f, -wheel_limit[w]), wheel_limit[w])
        for k in range(nc):  # the unknowns: the wheels' (columns in Hbuf already), then these
            unknown[nw + k] = k
        free = unknown[:nw + nc]
        reduced_columns_into(M, layout, rws, free[nw:], Hbuf[:, nw:])
        for i in range(n):  # F0 with the commanded accelerations zero too
            s = F0[i]
            for k in range(nc):
                s -= Hbuf[i, nw + k] * acc[k]
            F0[i] = s
        for k in range(nw + nc):
            acc[free[k]] = 0.0
        hybrid_solve(F0, Hbuf, n, acc, free, free, force, forces, A, rhs, piv)
    for k in range(na):
        arm_out[k] = forces[nc + arm_rel[k]]
    for w in range(nw):
        wheel_out[w] = forces[nc + wheel_rel[w]]


@register_jitable  # allocations, once per run: plain Python there, compiled where a kernel calls it
def control_workspace(nv, nb):
    """Scratch arrays of :func:`mode_effort` (one allocation per compiled call)."""
    i64 = np.int64
    return (np.empty((3, 3)), np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nb),
            np.empty((nv, nv)), np.empty(nv), np.empty(nv, i64), np.empty(nv, i64), np.empty(nv, i64),
            (np.empty((3, 3)), np.empty(3), np.empty(6)), np.empty((nv, nv)), np.empty(nv), reduced_workspace(nv, nb))


class CompiledTorque:
    """:func:`joint_space_effort` for one controller model and its joint gains: the arrays it
    reads, built once, filled per call (``ComputedTorque.effort``'s compiled path; every array
    keeps one type, so that the kernel compiles once for every mode).

    Rotation-floating with as many wheels as attitude axes solves for the wheels as
    ``rotation_floating_forces`` does (square); with another number it is a least-squares solve
    the kernels do not implement, and :meth:`covers` says False (the caller keeps the NumPy path).

    Raises:
        NotCovered: a joint type the kernels do not implement.
    """

    def __init__(self, ff, kp: np.ndarray, kd: np.ndarray):
        # Imported here: a kernel module must not import arrays.py (and physics.reduced) at
        # module level (the kernel cache would have to fingerprint them).
        from freeflyer_control.physics.kernels import reduced as PC
        from freeflyer_control.physics.kernels.arrays import kernel_model
        from freeflyer_control.physics.kernels.rigid_body import workspace
        from freeflyer_control.physics.modes import Mode, base_partition
        from freeflyer_control.physics.reduced import reduced_plan

        km = kernel_model(ff)
        nb, nv, na, nw = km.nb, km.nv, km.arm_v.size, km.wheel_v.size
        self.km, self.nb = km.arrays(), nb
        self.ws_buf = np.zeros(sum(a.size for a in workspace(km.jint.shape[0], km.nq, nv, nb)))
        self.M, self.b = np.zeros((nv, nv)), np.zeros(nv)
        self.cws = control_workspace(nv, nb)
        attitude_axes = 1 if ff.base == "planar" else 3
        self.plans = {}   # mode -> (code, c0, c1, layout of H*, C*)
        for code, mode in enumerate(Mode):
            if mode is Mode.ROTATION_FLOATING and nw != attitude_axes:
                continue
            c = base_partition(ff.base, mode).commanded_slice
            layout = reduced_plan(PC, ff, mode, mode is not Mode.ROTATION_FLOATING).layout
            self.plans[mode] = (code, c.start, c.stop, layout)
        self.arm = (km.arm_v, km.arm_q, km.arm_kind, km.arm_v - nb, km.wheel_v - nb)
        self.wheel_limit = np.ascontiguousarray(ff.wheel_max_torques, dtype=float).reshape(-1)
        self.kp = np.ascontiguousarray(kp, dtype=float)
        self.kd = np.ascontiguousarray(kd, dtype=float)
        self.jref, self.ubase = np.zeros((3, na)), np.zeros(nb)
        self.qa, self.u = np.zeros(na), np.zeros(na)
        self.q, self.v = np.zeros(km.nq), np.zeros(nv)
        self.sizes = (na, nw, nb)

    def covers(self, mode) -> bool:
        """Whether :meth:`effort` computes ``mode`` (a Mode)."""
        return mode in self.plans

    def effort(self, q: np.ndarray, v: np.ndarray, mode, position: np.ndarray, velocity: np.ndarray,
               acceleration: np.ndarray, u_base: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(arm torques N m, wheel torques N m, base wrench world axes) of computed torque at
        (q, v) in ``mode`` (covered) on the arm reference (arm order: rad, rad/s, rad/s^2) and
        the commanded base coordinates' desired accelerations ``u_base`` (world axes). Fresh
        arrays."""
        args = self.arguments(q, v, mode, u_base)
        jref = self.jref
        jref[0], jref[1], jref[2] = position, velocity, acceleration
        joint_space_effort(*args)
        return args[-4], args[-3], args[-2]

    def arguments(self, q: np.ndarray, v: np.ndarray, mode, u_base: np.ndarray) -> tuple:
        """:func:`joint_space_effort`'s arguments at (q, v) in ``mode`` (covered) with ``u_base``,
        its outputs (arm, wheels, wrench: the last but one three) fresh arrays; the arm
        reference is read from ``self.jref`` (3, na: position, velocity, acceleration), which the
        caller fills. For :meth:`effort`, and for a compiled caller that makes the same call
        itself (sim.fast.period)."""
        code, c0, c1, layout = self.plans[mode]
        if c1 > c0:
            self.ubase[:c1 - c0] = u_base
        self.q[:] = q
        self.v[:] = v
        na, nw, nb = self.sizes
        arm_v, arm_q, arm_kind, arm_rel, wheel_rel = self.arm
        return (self.km, self.ws_buf, code, nb, c0, c1, layout, self.q, self.v, self.ubase, self.jref, self.kp,
                self.kd, arm_v, arm_q, arm_kind, arm_rel, wheel_rel, self.wheel_limit, self.M, self.b, self.qa,
                self.u, np.empty(na), np.empty(nw), np.empty(nb), self.cws)
