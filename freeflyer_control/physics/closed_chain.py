"""Closed chains: arms that hold one object (Swain, Morris & Zalzala 1999, with DIGEST §4.4).

The held object is part of the robot model (model.objects.attach_object): its inertia rides on
the first grasping arm's last link, so Pinocchio's mass matrix, momentum and CoM include it. The
other grasps are loop closures: end-effector i's frame must coincide with grasp frame i on the
object. Writing J_i for the relative Jacobian (end-effector twist minus the twist of the object
point at the end-effector origin, world axes) and lambda for the loop wrenches on the
end-effectors, the dynamics are the stacked system of DIGEST §4.4 with the object eliminated:

    M nu' + b = tau + J^T lambda,        J nu' = -(Jdot nu) - 2 zeta w_n (J nu) - w_n^2 e

(Baumgarte stabilisation of the loop error e = [p_ee - p_grasp; log(R_ee R_grasp^T)]), solved
through the Schur complement J M^-1 J^T. Swain's Eqs. 48-50 are not used (DIGEST §4.4: their
6m x 6m matrix is singular for m >= 2). The constraint wrenches act between two bodies of one
system, so the total momentum, object included, is untouched by them: the plant's momentum
projection keeps it at its initial value in floating mode.

Also here: the multi-arm generalized Jacobian with the object included (Swain Eqs. 23-24 and 26,
per mode), and the reduced inertia of Swain's Eq. 38 with the corrected Woodbury identity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.model.objects import ObjectConfig, grasp_frame_name
from freeflyer_control.physics.dynamics import mass_matrix, nonlinear_effects
from freeflyer_control.physics.gjm import generalized_jacobian
from freeflyer_control.physics.grasp import grasp_matrix
from freeflyer_control.physics.linalg import cross3, solve
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.plant import Plant
from freeflyer_control.physics.state import State

_PLANAR_ROWS = np.array([0, 1, 5])
# Baumgarte natural frequency (rad/s) and damping ratio of the loop-closure error. Critically
# damped at 20 rad/s: an error decays in ~0.25 s, and w_n dt = 0.04 at the plants' 500 Hz keeps
# the stabilisation itself far inside RK4's stability region.
BAUMGARTE_OMEGA = 20.0
BAUMGARTE_ZETA = 1.0


def multi_arm_jacobian(ff: FreeFlyerModel, data: pin.Data, state: State, mode: Mode | str,
                       end_effectors: tuple[str, ...] | None = None) -> np.ndarray:
    """Swain Eqs. 23-24 (floating) and 26 (flying), any mode: the stacked end-effector twists per
    unit actuated velocity, v_e = J u + drift, with the free base motion set by the momentum of
    base, arms and (when ``ff`` holds one, see attach_object) the object.

    Rows: the end-effectors' twists in world axes, one block per end-effector (spatial
    [v; w], planar (vx, vy, wz)); columns: the GJM's (arm joints, then commanded base velocities
    in world axes). With one arm and no object this is the GJM of physics.gjm.
    """
    return multi_arm_gjm(ff, data, state, mode, end_effectors)[0]


def multi_arm_gjm(ff: FreeFlyerModel, data: pin.Data, state: State, mode: Mode | str,
                  end_effectors: tuple[str, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(J, drift) of :func:`multi_arm_jacobian`: v_e = J u + drift, the drift being the stacked
    twists with every actuated velocity zero (non-zero momentum, wheel spin)."""
    ees = ff.end_effectors if end_effectors is None else end_effectors
    M = mass_matrix(ff, data, state.q)
    gjms = [generalized_jacobian(ff, data, state, mode, e, M=M) for e in ees]
    return np.vstack([g.matrix for g in gjms]), np.concatenate([g.drift for g in gjms])


def reduced_inertia_eq38(ff: FreeFlyerModel, data: pin.Data, q: np.ndarray) -> np.ndarray:
    """Swain's Eq. 38 joint-space inertia of a free-floating multi-arm system (N x N, over
    ``ff.joint_names``; an attached object counts as part of its link), built from the link
    operators with the corrected matrix-inversion lemma (DIGEST §4.4):

        M = (X Phi)^T [M_q - M_q X_b (M_b + X_b^T M_q X_b)^-1 X_b^T M_q] (X Phi)

    with M_q the block-diagonal link inertias, X_b the base-to-link velocity maps and X Phi the
    joint-to-link maps (each link's velocity in its own frame, Pinocchio LOCAL Jacobians), and
    M_b the base body's inertia in the base velocity coordinates. Only a 6x6 (planar 3x3) matrix
    is inverted. It equals the Schur complement of the floating-base mass matrix (doc 001 Eq. 45).
    """
    model, nb = ff.model, ff.nb
    pin.computeJointJacobians(model, data, q)
    links = range(2, model.njoints)  # joint 1 is the base
    J = [pin.getJointJacobian(model, data, k, pin.LOCAL) for k in links]
    X_b = np.vstack([Jk[:, :nb] for Jk in J])
    X_phi = np.vstack([Jk[:, nb:] for Jk in J])
    M_q = np.zeros((6 * len(J), 6 * len(J)))
    for i, k in enumerate(links):
        M_q[6 * i:6 * i + 6, 6 * i:6 * i + 6] = model.inertias[k].matrix()
    S_b = pin.getJointJacobian(model, data, 1, pin.LOCAL)[:, :nb]  # base coordinates -> base twist
    M_b = S_b.T @ model.inertias[1].matrix() @ S_b
    MqXb = M_q @ X_b
    middle = M_q - MqXb @ solve(M_b + X_b.T @ MqXb, MqXb.T)
    M = X_phi.T @ middle @ X_phi
    return 0.5 * (M + M.T)


@dataclass(frozen=True)
class LoopTerms:
    """The loop closures at one state (planar: in-plane rows only).

    Attributes:
        J: (k, nv) relative Jacobians, stacked per closed loop.
        drift: (k,) Jdot nu.
        velocity: (k,) J nu, the relative twists (m/s, rad/s).
        error: (k,) pose errors [p_ee - p_grasp (m); log(R_ee R_grasp^T) (rad)], world axes.
    """

    J: np.ndarray
    drift: np.ndarray
    velocity: np.ndarray
    error: np.ndarray


@dataclass(frozen=True)
class _Loop:
    """One loop closure's indices: the end-effector and grasp frames, and the columns of the
    world-frame joint Jacobians (data.J) that move each: ``sign`` is +1 on the columns that move
    the end-effector only, -1 on those that move the object only and 0 on the shared ones (the
    base), so ``data.J * sign`` is the relative twist's Jacobian about the world origin;
    ``ee`` is 1 on every column that moves the end-effector."""

    ee_frame: int
    grasp_frame: int
    sign: np.ndarray
    ee: np.ndarray


def _support(model: pin.Model, joint: int) -> np.ndarray:
    """1.0 on the velocity columns of ``joint`` and its ancestors (nv,)."""
    out = np.zeros(model.nv)
    while joint > 0:
        j = model.joints[joint]
        out[j.idx_v:j.idx_v + j.nv] = 1.0
        joint = model.parents[joint]
    return out


def loop_terms(ff: FreeFlyerModel, data: pin.Data, obj: ObjectConfig, q: np.ndarray, v: np.ndarray) -> LoopTerms:
    """Relative Jacobian, drift, velocity and pose error of every loop closure (grasps 2..m) at
    (q (nq,), v (nv,), Pinocchio's coordinates)."""
    pin.computeJointJacobiansTimeVariation(ff.model, data, q, v)
    return LoopTerms(*_loop_rows(ff, data, obj, v))


def _loop_rows(ff: FreeFlyerModel, data: pin.Data, obj: ObjectConfig, v: np.ndarray):
    """(J, drift, velocity, error) of :class:`LoopTerms` from ``data`` holding the world-frame
    joint Jacobians and their time variation (data.J, data.dJ) and the joint placements at
    (q, v).

    Each RK stage runs this, so it works on whole matrices (a NumPy or Pinocchio call costs
    ~0.5 us here, more than its flops): the relative twist about the world origin is
    dV = (data.J * sign) nu and its rate at nu' = 0 is dA = (data.dJ * sign) nu; shifted to the
    end-effector origin p_e (world axes), the twist is [dv + dw x p_e; dw] and its rate
    [da + dw' x p_e + dw x p_e'; dw'], p_e' being the end-effector point's velocity. The same
    quantities as differences of Pinocchio's frame velocities and classical accelerations
    (the formulation this replaced) agree to round-off: test_closed_chain checks it.
    """
    loops, rows = _loops(ff, obj)
    model, J_world, dJ_world = ff.model, data.J, data.dJ
    out = []
    for loop in loops:
        He = pin.updateFramePlacement(model, data, loop.ee_frame).homogeneous
        Hg = pin.updateFramePlacement(model, data, loop.grasp_frame).homogeneous
        p = He[:3, 3]
        S = pin.skew(p)
        J = J_world * loop.sign
        J[:3] -= S @ J[3:]
        vel = J @ v
        drift = dJ_world @ (loop.sign * v)
        drift[:3] -= S @ drift[3:]
        ve = J_world @ (loop.ee * v)
        drift[:3] += cross3(vel[3:], ve[:3] - S @ ve[3:])  # dw x p_e'
        err = np.concatenate((p - Hg[:3, 3], pin.log3(He[:3, :3] @ Hg[:3, :3].T)))
        out.append((J, drift, vel, err))
    if len(out) == 1:
        J, drift, vel, err = out[0]
        return (J, drift, vel, err) if rows is None else (J[rows], drift[rows], vel[rows], err[rows])
    stacked = [np.concatenate([o[i] for o in out]) for i in range(4)]
    if rows is None:
        return tuple(stacked)
    picked = np.concatenate([rows + 6 * i for i in range(len(out))])
    return tuple(s[picked] for s in stacked)


def _loops(ff: FreeFlyerModel, obj: ObjectConfig) -> tuple[list[_Loop], np.ndarray | None]:
    """The loops of ``obj`` held by ``ff`` and the twist rows kept (planar: vx, vy, wz; spatial:
    None, all six); kept with the model per object (``FreeFlyerModel.derived``), the entry
    keeping ``obj`` alive so that its id is not reused."""
    return ff.derived((_loops, id(obj)), _loops_of, ff, obj)[1]


def _loops_of(ff: FreeFlyerModel, obj: ObjectConfig) -> tuple:
    model, loops = ff.model, []
    for g in obj.grasps[1:]:
        fe, fg = ff.frame_id(g.end_effector), ff.frame_id(grasp_frame_name(obj, g.end_effector))
        ee, held = _support(model, model.frames[fe].parentJoint), _support(model, model.frames[fg].parentJoint)
        loops.append(_Loop(fe, fg, ee - held, ee))
    return obj, (loops, _PLANAR_ROWS if ff.base == "planar" else None)


def _wanted(loops: LoopTerms) -> np.ndarray:
    """J nu' that the Baumgarte-stabilised loops ask for."""
    return -loops.drift - 2 * BAUMGARTE_ZETA * BAUMGARTE_OMEGA * loops.velocity - BAUMGARTE_OMEGA ** 2 * loops.error


def constrained_acceleration(ff: FreeFlyerModel, data: pin.Data, obj: ObjectConfig, q: np.ndarray,
                             v: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(nu', lambda): accelerations with the loops held (Baumgarte-stabilised, see the module
    docstring) and the loop wrenches on end-effectors 2..m (world axes, about each end-effector
    origin; planar (fx, fy, mz)). ``tau`` as for the open-chain plant (nv,)."""
    if len(obj.grasps) < 2:
        return pin.aba(ff.model, data, q, v, tau).copy(), np.zeros(0)
    a = _held_acceleration(ff, data, obj, q, v, tau)
    # forwardDynamics left the loop wrenches about the world origin (the rows of J_W); each
    # loop's moment about its end-effector origin p_e is m_O - p_e x f.
    loops, rows = _loops(ff, obj)
    n = 6 if rows is None else rows.size
    lam = data.lambda_c.copy()
    oMf = data.oMf
    for i, loop in enumerate(loops):
        full = np.zeros(6)
        full[_ALL_ROWS if rows is None else rows] = lam[n * i:n * i + n]
        full[3:] -= cross3(oMf[loop.ee_frame].translation, full[:3])
        lam[n * i:n * i + n] = full if rows is None else full[rows]
    return a, lam


def _held_acceleration(ff: FreeFlyerModel, data: pin.Data, obj: ObjectConfig, q: np.ndarray,
                       v: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """nu' (nv,) of constrained_acceleration, for the plant's RK stages; leaves the loop wrenches
    about the world origin in data.lambda_c.

    A few C++ calls and a few lines of float arithmetic, so that the closed-chain plant step
    stays within 2x the open-chain one (bench/bench_closed_chain.py): Pinocchio fills the
    world-frame joint Jacobians J and their time variation dJ, M (CRBA) and the nonlinear
    effects b, and its forwardDynamics solves M nu' + b = tau + J_W^T lambda_W, J_W nu' = -gamma_W
    (Cholesky of M and of the Schur complement J_W M^-1 J_W^T). The loops are written about the
    world origin: J_W = X^-1 J with X the shift of a twist from the world origin to the
    end-effector origin p_e, which leaves nu' unchanged (same rows, an invertible map), and for
    planar robots keeps the in-plane rows (the out-of-plane ones are zero). gamma_W = X^-1 of
    the stabilised drift of the module docstring:

        gamma_W = dA + [dw x p_e'; 0] + 2 zeta w_n dV + w_n^2 [e_p + p_e x e_r; e_r]

    with dV = J_W nu, dA = dJ_W nu the relative twist and its rate at nu' = 0 about the world
    origin, dw its angular part and p_e' the end-effector point's velocity.
    """
    loops, rows = _loops(ff, obj)
    return _stage_acceleration(ff.model, data, loops, rows, q, v, tau)[0]


def _stage_acceleration(model: pin.Model, data: pin.Data, loops: list[_Loop], rows: np.ndarray | None,
                        q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_held_acceleration` with the loops looked up (the plant caches them); also returns
    the stacked loop Jacobian J_W about the world origin (its rows pair with data.lambda_c)."""
    _joint_jacobians_and_rates(model, data, q, v)  # placements, J, dJ, velocities
    _crba(model, data, q)
    _nonlinear_effects(model, data, q, v)
    J_world, dJ_world = data.J, data.dJ
    c1, c2 = _C1, _C2
    Js, gammas = [], []
    for loop in loops:
        sv = loop.sign * v
        a0, a1, a2, a3, a4, a5 = (dJ_world @ sv).tolist()
        v0, v1, v2, w0, w1, w2 = (J_world @ sv).tolist()
        dx, dy, dz = _frame_velocity(model, data, loop.ee_frame, _LWA).linear.tolist()  # p_e'
        He = _frame_placement(model, data, loop.ee_frame).homogeneous
        Hg = _frame_placement(model, data, loop.grasp_frame).homogeneous
        if rows is None:
            px, py, pz = He[:3, 3].tolist()
            gx, gy, gz = Hg[:3, 3].tolist()
            rx, ry, rz = pin.log3(He[:3, :3] @ Hg[:3, :3].T).tolist()
            Js.append(J_world * loop.sign)
            gammas += [
                a0 + (w1 * dz - w2 * dy) + c1 * v0 + c2 * ((px - gx) + (py * rz - pz * ry)),
                a1 + (w2 * dx - w0 * dz) + c1 * v1 + c2 * ((py - gy) + (pz * rx - px * rz)),
                a2 + (w0 * dy - w1 * dx) + c1 * v2 + c2 * ((pz - gz) + (px * ry - py * rx)),
                a3 + c1 * w0 + c2 * rx,
                a4 + c1 * w1 + c2 * ry,
                a5 + c1 * w2 + c2 * rz,
            ]
        else:
            # Rows vx, vy, wz of the above; in-plane rotations, so log(R_e R_g^T) is
            # (0, 0, atan2(R[1,0], R[0,0])), here in floats.
            (e00, e01, e02, px), (e10, e11, e12, py), _, _ = He.tolist()
            (g00, g01, g02, gx), (_, _, _, gy), _, _ = Hg.tolist()
            rz = math.atan2(e10 * g00 + e11 * g01 + e12 * g02, e00 * g00 + e01 * g01 + e02 * g02)
            Js.append(J_world.take(rows, 0) * loop.sign)
            gammas += [
                a0 + (w1 * dz - w2 * dy) + c1 * v0 + c2 * ((px - gx) + py * rz),
                a1 + (w2 * dx - w0 * dz) + c1 * v1 + c2 * ((py - gy) - px * rz),
                a5 + c1 * w2 + c2 * rz,
            ]
    J = Js[0] if len(Js) == 1 else np.vstack(Js)
    return _kkt_forward_dynamics(model, data, tau, J, np.array(gammas), 0.0).copy(), J


def _angle_between(a: list, b: list) -> float:
    """The angle (rad) of the rotation R_a R_b^T between two rotation matrices given as nested
    lists: atan2(|vee(R - R^T)| / 2, (tr R - 1) / 2), accurate at small and large angles alike.
    Python floats: it runs after every closed-chain plant step (pin.log3 and NumPy cost more)."""
    def row(i, j):  # (R_a R_b^T)[i][j]
        return a[i][0] * b[j][0] + a[i][1] * b[j][1] + a[i][2] * b[j][2]
    s0, s1, s2 = row(2, 1) - row(1, 2), row(0, 2) - row(2, 0), row(1, 0) - row(0, 1)
    return math.atan2(0.5 * math.sqrt(s0 * s0 + s1 * s1 + s2 * s2), 0.5 * (row(0, 0) + row(1, 1) + row(2, 2) - 1.0))


# Module-level names for the calls of every RK stage (an attribute lookup on pin is ~40 ns each).
_joint_jacobians_and_rates, _crba, _nonlinear_effects = (
    pin.computeJointJacobiansTimeVariation, pin.crba, pin.nonLinearEffects)
_frame_velocity, _frame_placement, _kkt_forward_dynamics = (
    pin.getFrameVelocity, pin.updateFramePlacement, pin.forwardDynamics)


_LWA = pin.LOCAL_WORLD_ALIGNED
_C1, _C2 = 2 * BAUMGARTE_ZETA * BAUMGARTE_OMEGA, BAUMGARTE_OMEGA ** 2
_ALL_ROWS = np.arange(6)


@dataclass(frozen=True)
class ClosedChainResponse:
    """The closed chain's dynamics at one state as affine maps of the generalized forces tau
    (nv, as for the plant): nu' = A tau + a, lambda = B tau + c (see constrained_acceleration)."""

    A: np.ndarray
    a: np.ndarray
    B: np.ndarray
    c: np.ndarray


def closed_chain_response(ff: FreeFlyerModel, data: pin.Data, obj: ObjectConfig, q: np.ndarray,
                          v: np.ndarray) -> ClosedChainResponse:
    """How tau moves the held system and loads the loops at (q, v): what a controller inverts."""
    M = mass_matrix(ff, data, q)
    b = nonlinear_effects(ff, data, q, v)
    Minv = solve(M, np.eye(M.shape[0]))
    if len(obj.grasps) < 2:
        return ClosedChainResponse(Minv, -Minv @ b, np.zeros((0, M.shape[0])), np.zeros(0))
    loops = loop_terms(ff, data, obj, q, v)
    JMinv = loops.J @ Minv
    Gi = solve(JMinv @ loops.J.T, np.eye(loops.J.shape[0]))
    B = -Gi @ JMinv
    c = Gi @ (_wanted(loops) + JMinv @ b)
    return ClosedChainResponse(Minv + JMinv.T @ B, -Minv @ b + JMinv.T @ c, B, c)


class ClosedChainPlant(Plant):
    """The plant of a robot holding ``obj`` (``ff`` from attach_object): the same CF4 integrator,
    momentum projection, divergence checks and interface as :class:`Plant`, with the loop
    closures held. ``max_constraint_error`` and ``max_constraint_rotation_error`` are the largest
    loop position (m) and orientation (rad) errors seen.

    The loop wrenches are internal to the system, but Baumgarte's stabilisation makes them do
    work while a loop error closes (their power is lambda . J nu, zero only on the constraint
    manifold): the energy check counts that work, by the same RK4 quadrature as the actuators',
    as work of the constraint stabilisation, not as energy no force explains.
    ``last_constraint_work`` is that work over the last step (J)."""

    def __init__(self, ff: FreeFlyerModel, obj: ObjectConfig, state: State, dt: float, t0: float = 0.0):
        self.obj = obj
        self.max_constraint_error = 0.0
        self.max_constraint_rotation_error = 0.0
        self.last_constraint_work = 0.0
        self._loops, self._rows = _loops(ff, obj)
        self._powers: list[float] | None = None
        super().__init__(ff, state, dt, t0)
        self.max_constraint_error, self.max_constraint_rotation_error = self.constraint_errors()

    def acceleration(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
        if not self._loops:
            return pin.aba(self.ff.model, self.data, q, v, tau).copy()
        a, J = _stage_acceleration(self.ff.model, self.data, self._loops, self._rows, q, v, tau)
        if self._powers is not None:
            self._powers.append(float(self.data.lambda_c @ (J @ v)))  # power of J^T lambda
        return a

    def _integrate(self, q0: np.ndarray, v0: np.ndarray, tau: np.ndarray):
        self._powers = [] if self._loops else None
        try:
            q, v, momentum, work = super()._integrate(q0, v0, tau)
            p = self._powers
        finally:
            self._powers = None
        if p is not None and len(p) == 4:  # (a subclass with an acceleration of its own records none)
            self.last_constraint_work = self.dt / 6.0 * (p[0] + 2.0 * p[1] + 2.0 * p[2] + p[3])
            work += self.last_constraint_work
        return q, v, momentum, work

    def step(self, actuation=None, *, tau=None) -> State:
        state = super().step(actuation, tau=tau)
        position, rotation = self.constraint_errors()
        self.max_constraint_error = max(self.max_constraint_error, position)
        self.max_constraint_rotation_error = max(self.max_constraint_rotation_error, rotation)
        return state

    def constraint_errors(self) -> tuple[float, float]:
        """Largest loop-closure position error (m) and orientation error (rad) now."""
        if not self._loops:
            return 0.0, 0.0
        model, data = self.ff.model, self.data
        pin.forwardKinematics(model, data, self.state.q)
        position = rotation = 0.0
        for c in self._loops:
            He, Hg = _frame_placement(model, data, c.ee_frame), _frame_placement(model, data, c.grasp_frame)
            position = max(position, math.dist(He.translation.tolist(), Hg.translation.tolist()))
            rotation = max(rotation, _angle_between(He.rotation.tolist(), Hg.rotation.tolist()))
        return position, rotation

    def constraint_error(self) -> float:
        """Largest loop-closure position error at the current state, m."""
        return self.constraint_errors()[0]

    def object_pose(self) -> pin.SE3:
        """The object frame (at its CoM) in world."""
        pin.framesForwardKinematics(self.ff.model, self.data, self.state.q)
        return self.data.oMf[self.ff.frame_id(self.obj.name)].copy()

    def object_twist(self) -> np.ndarray:
        """Object twist at its CoM, world axes: [v; w] (6,)."""
        pin.forwardKinematics(self.ff.model, self.data, self.state.q, self.state.v)
        return pin.getFrameVelocity(self.ff.model, self.data, self.ff.frame_id(self.obj.name),
                                    pin.LOCAL_WORLD_ALIGNED).vector.copy()

    def grasp_wrenches(self, tau: np.ndarray) -> np.ndarray:
        """Wrenches the end-effectors apply to the object at the current state under generalized
        forces ``tau``: (m, n) rows in grasp order, world axes, about each end-effector origin
        (spatial [f; m], planar (fx, fy, mz)). Grasp 1's wrench is what makes W^T f_e equal the
        object's net wrench M_o a_o + b_o."""
        ff, data, q, v = self.ff, self.data, self.state.q, self.state.v
        a, lam = constrained_acceleration(ff, data, self.obj, q, v, tau)
        planar = ff.base == "planar"
        n = 3 if planar else 6
        others = -lam.reshape(-1, n)  # lambda acts on the end-effectors; the object feels -lambda
        net = object_net_wrench(ff, data, self.obj, q, v, a)
        pos = self.ee_positions()
        W = grasp_matrix(pos, self.object_pose().translation, planar)
        rest = net - W[n:].T @ others.ravel() if len(others) else net
        first = np.linalg.solve(W[:n].T, rest)
        return np.vstack([first, others]) if len(others) else first[None, :]

    def ee_positions(self) -> np.ndarray:
        pin.framesForwardKinematics(self.ff.model, self.data, self.state.q)
        return np.array([self.data.oMf[self.ff.frame_id(g.end_effector)].translation for g in self.obj.grasps])


def object_net_wrench(ff: FreeFlyerModel, data: pin.Data, obj: ObjectConfig, q: np.ndarray,
                      v: np.ndarray, a: np.ndarray) -> np.ndarray:
    """M_o v_o' + b_o: the net wrench on the object (world axes, about its CoM; planar
    (fx, fy, mz)) for accelerations ``a`` of the system holding it."""
    model = ff.model
    pin.forwardKinematics(model, data, q, v, a)
    pin.updateFramePlacements(model, data)
    fid = ff.frame_id(obj.name)
    R = data.oMf[fid].rotation
    acc = pin.getFrameClassicalAcceleration(model, data, fid, pin.LOCAL_WORLD_ALIGNED)
    w = pin.getFrameVelocity(model, data, fid, pin.LOCAL_WORLD_ALIGNED).angular
    I_w = R @ obj.inertia @ R.T
    wrench = np.concatenate([obj.mass * acc.linear, I_w @ acc.angular + cross3(w, I_w @ w)])
    return wrench[_PLANAR_ROWS] if ff.base == "planar" else wrench


def make_plant(ff: FreeFlyerModel, state: State, dt: float, obj: ObjectConfig | None = None,
               t0: float = 0.0) -> Plant:
    """The one way to build a plant: open chain (``obj`` None) or closed chain (``ff`` holding
    ``obj``, from attach_object). Both have the :class:`Plant` interface."""
    if obj is None:
        return Plant(ff, state, dt, t0)
    return ClosedChainPlant(ff, obj, state, dt, t0)
