"""Independent cross-check of the floating-mode physics against a hand-written Lagrangian.

Issue requirement: "for a planar base with a 2-link arm, a direct Lagrangian derivation written
in the test (sympy or by hand, not Pinocchio) gives the same H* and GJM to 1e-10".

The oracle (fixture ``lagrangian``) knows nothing of Pinocchio or of the package. It writes the
kinetic energy T of the base and the two links in WORLD coordinates
s = (x, y, theta, q1, q2) -- x, y the base_link origin in world, theta the base yaw -- and takes

    M(s)  = d2T / ds' ds'                                   (5 x 5 mass matrix)
    c_i   = sum_jk Gamma_ijk s'_j s'_k,  Gamma_ijk = (dM_ij/ds_k + dM_ik/ds_j - dM_jk/ds_i) / 2
    J(s)  = d(p_ee, theta_ee) / ds                          (rows vx, vy, wz in world)

With no gravity and no force on the base, Lagrange's equations are M s'' + c = [0, 0, 0, tau].
Eliminating the base accelerations (b = base rows, j = joint rows):

    H* = M_jj - M_jb M_bb^-1 M_bj,     C* = c_j - M_jb M_bb^-1 c_b,
    J* = J_j - J_b M_bb^-1 M_bj,       drift = J_b M_bb^-1 (M_b: s')   (base momenta M_b: s')

These are what the package must return in floating mode: H*, C* (physics.reduced) and the GJM
with its momentum drift (physics.gjm). All of them are independent of the base velocity
coordinates (Pinocchio uses base-frame velocities, the oracle world ones; DIGEST.md §1), so the
two sides are compared number for number. The package's model comes from a URDF generated here
from the same numbers.

Two robots: ``brief`` is the case of the issue (base CoM at the base_link origin); ``offset``
adds a base CoM off the origin, a yawed joint-1 mount and a continuous joint 1 (Pinocchio stores
it as cos/sin), which exercise more of the loader and of make_state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

sp = pytest.importorskip(
    "sympy", reason="the Lagrangian oracle is derived with sympy (pip install sympy, test extra)"
)

from freeflyer_control.model import load_model  # noqa: E402
from freeflyer_control.physics.dynamics import kinetic_energy  # noqa: E402
from freeflyer_control.physics.gjm import generalized_jacobian  # noqa: E402
from freeflyer_control.physics.momentum import conserved_momentum  # noqa: E402
from freeflyer_control.physics.reduced import reduced_dynamics  # noqa: E402
from freeflyer_control.physics.state import make_state  # noqa: E402

# Absolute tolerance. Every compared quantity is of order 0.01..10 (masses 1-12 kg, lengths
# <= 1 m, rates <= 2 rad/s), and the only error sources are double-precision round-off in
# Pinocchio's recursions, in the lambdified oracle and in 3x3 solves with M_bb (condition
# number ~10 here): a few 1e-15 (observed: <= 9e-16). 1e-10 keeps four orders of margin
# while any modelling or convention error (a sign, a frame, a lever arm, a missing term) shows
# up at the 1e-3..1 level.
TOL = 1e-10
N_STATES = 20
BASE = slice(0, 3)
JOINTS = slice(3, 5)


# ---------------------------------------------------------------------------------------------
# The robots (the numbers) and their URDF


@dataclass(frozen=True)
class PlanarArm:
    """Planar base + 2-link arm. Lengths m, masses kg, inertias kg m^2 (about z at the CoM)."""

    name: str
    m0: float
    I0: float
    c0: tuple[float, float]  # base CoM in the base_link frame
    a0: tuple[float, float]  # joint 1 in the base_link frame
    mount_yaw: float  # yaw of the joint-1 frame relative to base_link, rad
    l1: float
    m1: float
    I1: float
    c1: tuple[float, float]  # link-1 CoM in the link-1 frame
    l2: float
    m2: float
    I2: float
    c2: tuple[float, float]  # link-2 CoM in the link-2 frame
    joint1_type: str = "revolute"

    def parameters(self) -> tuple[float, ...]:
        """Numeric values in the order of ``PARAMETER_NAMES``."""
        return (self.m0, self.I0, *self.c0, *self.a0, self.mount_yaw,
                self.l1, self.m1, self.I1, *self.c1, self.l2, self.m2, self.I2, *self.c2)


PARAMETER_NAMES = ("m0 I0 c0x c0y a0x a0y phi0 "
                   "l1 m1 I1 c1x c1y l2 m2 I2 c2x c2y")

ROBOTS = (
    # The case: base CoM at the base_link origin, CoMs off the link axes, unequal masses.
    PlanarArm("brief", m0=12.3, I0=1.47, c0=(0.0, 0.0), a0=(0.42, -0.17), mount_yaw=0.0,
              l1=0.83, m1=2.71, I1=0.163, c1=(0.37, 0.045),
              l2=0.61, m2=1.38, I2=0.071, c2=(0.29, -0.062)),
    # Harder: base CoM off the origin, yawed mount, continuous joint 1.
    PlanarArm("offset", m0=7.9, I0=0.93, c0=(0.083, -0.051), a0=(0.35, 0.21), mount_yaw=0.6,
              l1=0.74, m1=3.35, I1=0.21, c1=(0.41, -0.07),
              l2=0.52, m2=0.96, I2=0.047, c2=(0.22, 0.038), joint1_type="continuous"),
)


def _inertial(mass: float, izz: float, com: tuple[float, float]) -> str:
    # Only izz matters in the plane. ixx = iyy = 0.6 izz keeps the inertia physically valid:
    # ixx + iyy = 1.2 izz >= izz and ixx <= iyy + izz (triangle inequality, checked by the loader).
    ixx = iyy = 0.6 * izz
    return (
        f'<inertial><origin xyz="{com[0]!r} {com[1]!r} 0" rpy="0 0 0"/><mass value="{mass!r}"/>'
        f'<inertia ixx="{ixx!r}" ixy="0" ixz="0" iyy="{iyy!r}" iyz="0" izz="{izz!r}"/></inertial>'
    )


def _joint(name: str, jtype: str, parent: str, child: str, xyz: tuple[float, float],
           yaw: float = 0.0) -> str:
    limit = '<limit lower="-4" upper="4" effort="50" velocity="10"/>' if jtype == "revolute" else ""
    axis = '<axis xyz="0 0 1"/>' if jtype != "fixed" else ""
    return (
        f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz[0]!r} {xyz[1]!r} 0" rpy="0 0 {yaw!r}"/>{axis}{limit}</joint>'
    )


def planar_arm_urdf(r: PlanarArm) -> str:
    """URDF of ``r``: base_link is the root (no world link, no floating joint)."""
    return "\n".join([
        f'<robot name="crosscheck_{r.name}">',
        f'<link name="base_link">{_inertial(r.m0, r.I0, r.c0)}</link>',
        f'<link name="link1">{_inertial(r.m1, r.I1, r.c1)}</link>',
        f'<link name="link2">{_inertial(r.m2, r.I2, r.c2)}</link>',
        '<link name="ee_link"/>',
        _joint("joint1", r.joint1_type, "base_link", "link1", r.a0, r.mount_yaw),
        _joint("joint2", "revolute", "link1", "link2", (r.l1, 0.0)),
        _joint("ee_joint", "fixed", "link2", "ee_link", (r.l2, 0.0)),
        "</robot>",
    ])


# ---------------------------------------------------------------------------------------------
# The oracle: sympy, world coordinates, no Pinocchio


@dataclass(frozen=True)
class Lagrangian:
    """Lambdified oracle; every function takes (s, s_dot, parameters) or (s, parameters)."""

    T: object  # kinetic energy
    M: object  # (5, 5) mass matrix
    c: object  # (5,) velocity terms, Christoffel form
    c_euler_lagrange: object  # (5,) the same from d/dt(dT/ds') - dT/ds at s'' = 0
    J_ee: object  # (3, 5) world twist (vx, vy, wz) of the end-effector point (l2, 0) on link 2
    J_point: object  # (3, 5) the same for a point (px, py) in link-2 coordinates
    com: object  # (2,) system CoM in world


@pytest.fixture(scope="module")
def lagrangian() -> Lagrangian:
    x, y, th, q1, q2 = s = sp.symbols("x y theta q1 q2", real=True)
    sd = sp.symbols("xd yd thetad q1d q2d", real=True)
    t = sp.symbols("t", real=True)
    params = sp.symbols(PARAMETER_NAMES, real=True)
    m0, I0, c0x, c0y, a0x, a0y, phi0, l1, m1, I1, c1x, c1y, l2, m2, I2, c2x, c2y = params
    px, py = sp.symbols("px py", real=True)

    def rot(a):
        return sp.Matrix([[sp.cos(a), -sp.sin(a)], [sp.sin(a), sp.cos(a)]])

    def vec(a, b):
        return sp.Matrix([a, b])

    # Positions in world as functions of s (planar forward kinematics written out by hand).
    p0 = vec(x, y)
    th1 = th + phi0 + q1  # link-1 heading
    th2 = th1 + q2  # link-2 heading
    com0 = p0 + rot(th) * vec(c0x, c0y)
    j1 = p0 + rot(th) * vec(a0x, a0y)
    com1 = j1 + rot(th1) * vec(c1x, c1y)
    j2 = j1 + rot(th1) * vec(l1, 0)
    com2 = j2 + rot(th2) * vec(c2x, c2y)
    ee = j2 + rot(th2) * vec(l2, 0)
    point = j2 + rot(th2) * vec(px, py)

    # Velocities by the chain rule through functions of time: no shortcut that could share a
    # mistake with the package.
    to_t = {si: sp.Function(f"s{i}")(t) for i, si in enumerate(s)}
    back = {sp.Derivative(to_t[si], t): sdi for si, sdi in zip(s, sd)}
    back.update({v: k for k, v in to_t.items()})

    def velocity(expr):
        return sp.diff(expr.subs(to_t), t).subs(back)

    T = sp.Rational(1, 2) * (
        m0 * velocity(com0).dot(velocity(com0)) + I0 * velocity(sp.Matrix([th]))[0] ** 2
        + m1 * velocity(com1).dot(velocity(com1)) + I1 * velocity(sp.Matrix([th1]))[0] ** 2
        + m2 * velocity(com2).dot(velocity(com2)) + I2 * velocity(sp.Matrix([th2]))[0] ** 2
    )
    T = sp.expand(T)
    sdv = sp.Matrix(sd)
    M = sp.hessian(T, sd)
    assert all(sp.diff(M, v) == sp.zeros(5, 5) for v in sd), "T must be quadratic in s'"

    n = len(s)
    dM = [M.diff(sk) for sk in s]  # dM[k][i, j] = dM_ij / ds_k
    c = sp.Matrix([
        sum(sp.Rational(1, 2) * (dM[k][i, j] + dM[j][i, k] - dM[i][j, k]) * sd[j] * sd[k]
            for j in range(n) for k in range(n))
        for i in range(n)
    ])
    # d/dt(dT/ds') at s'' = 0 is (dM/dt) s' = sum_k dM/ds_k s'_k s'.
    c_el = sum((dM[k] * sd[k] for k in range(n)), sp.zeros(n, n)) * sdv - sp.Matrix(
        [sp.diff(T, si) for si in s])

    def twist_jacobian(p):
        # rows: vx, vy of the point, wz of link 2 (theta_ee = theta + phi0 + q1 + q2)
        return p.jacobian(sp.Matrix(s)).col_join(sp.Matrix([[sp.diff(th2, si) for si in s]]))

    m_tot = m0 + m1 + m2
    com = (m0 * com0 + m1 * com1 + m2 * com2) / m_tot

    args = (s, sd, params)

    def lam(expr, arguments=args):
        return sp.lambdify(arguments, expr, modules="numpy", cse=True)

    return Lagrangian(
        T=lam(T),
        M=lam(M, (s, params)),
        c=lam(c),
        c_euler_lagrange=lam(c_el),
        J_ee=lam(twist_jacobian(ee), (s, params)),
        J_point=lam(twist_jacobian(point), (s, params, (px, py))),
        com=lam(com, (s, params)),
    )


def _arr(value) -> np.ndarray:
    return np.asarray(value, dtype=float).squeeze()


@dataclass
class OracleAt:
    """Oracle quantities at one state (world coordinates s, s')."""

    s: np.ndarray
    sd: np.ndarray
    M: np.ndarray
    c: np.ndarray
    J: np.ndarray  # (3, 5) EE twist Jacobian

    @property
    def H_star(self) -> np.ndarray:
        M = self.M
        return M[JOINTS, JOINTS] - M[JOINTS, BASE] @ np.linalg.solve(M[BASE, BASE], M[BASE, JOINTS])

    @property
    def C_star(self) -> np.ndarray:
        M = self.M
        return self.c[JOINTS] - M[JOINTS, BASE] @ np.linalg.solve(M[BASE, BASE], self.c[BASE])

    def J_star(self, J: np.ndarray | None = None) -> np.ndarray:
        J = self.J if J is None else J
        M = self.M
        return J[:, JOINTS] - J[:, BASE] @ np.linalg.solve(M[BASE, BASE], M[BASE, JOINTS])

    def drift(self, J: np.ndarray | None = None) -> np.ndarray:
        J = self.J if J is None else J
        base_momenta = self.M[BASE] @ self.sd  # dT/d(x', y', theta')
        return J[:, BASE] @ np.linalg.solve(self.M[BASE, BASE], base_momenta)


# ---------------------------------------------------------------------------------------------
# States and the comparison harness


def random_states(seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """N_STATES (s, s') pairs: any base pose and yaw, joint angles over the full circle, base and
    joint rates all non-zero (so the momentum is non-zero)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(N_STATES):
        s = np.concatenate([rng.uniform(-2.0, 2.0, 2), rng.uniform(-math.pi, math.pi, 3)])
        sd = np.concatenate([rng.uniform(-1.0, 1.0, 3), rng.uniform(-2.0, 2.0, 2)])
        out.append((s, sd))
    return out


@dataclass
class Case:
    robot: PlanarArm
    ff: object
    data: object
    states: list[tuple[np.ndarray, np.ndarray]]


@pytest.fixture(scope="module", params=ROBOTS, ids=[r.name for r in ROBOTS])
def case(request) -> Case:
    robot: PlanarArm = request.param
    ff = load_model(planar_arm_urdf(robot), base="planar", end_effectors=["ee_link"])
    seed = 20240611 + ROBOTS.index(robot)
    return Case(robot, ff, ff.create_data(), random_states(seed))


def package_state(ff, s: np.ndarray, sd: np.ndarray):
    """The package's state for world coordinates s and their rates s' (public convention)."""
    return make_state(
        ff,
        base_position=(s[0], s[1], 0.0),
        base_yaw=float(s[2]),
        base_linear_velocity=(sd[0], sd[1], 0.0),  # base_link origin, world axes
        base_angular_velocity=(0.0, 0.0, sd[2]),
        joint_positions=list(s[3:]),
        joint_velocities=list(sd[3:]),
    )


def oracle_at(lag: Lagrangian, robot: PlanarArm, s: np.ndarray, sd: np.ndarray) -> OracleAt:
    p = robot.parameters()
    return OracleAt(s, sd, _arr(lag.M(s, p)), _arr(lag.c(s, sd, p)), _arr(lag.J_ee(s, p)))


class MaxError:
    """Largest absolute difference over the states, and where it occurred."""

    def __init__(self, what: str):
        self.what, self.value, self.where = what, 0.0, None

    def update(self, got: np.ndarray, expected: np.ndarray, where: int) -> None:
        got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
        assert got.shape == expected.shape, f"{self.what}: shape {got.shape} != {expected.shape}"
        err = float(np.max(np.abs(got - expected)))
        if not err <= self.value:  # also catches NaN
            self.value, self.where = err, (where, got, expected)

    def check(self, tol: float = TOL) -> None:
        if self.value <= tol:
            return
        i, got, expected = self.where
        pytest.fail(
            f"{self.what}: max |package - Lagrangian| = {self.value:.3g} > {tol:g} "
            f"(state {i}):\npackage\n{got}\nLagrangian\n{expected}"
        )


# ---------------------------------------------------------------------------------------------
# Tests


def test_oracle_is_self_consistent(lagrangian, case):
    """Guard on the oracle itself: the Christoffel and Euler-Lagrange forms of c agree, M is
    symmetric positive definite, T = s'M s'/2, and T does not depend on where the robot is."""
    p = case.robot.parameters()
    for s, sd in case.states:
        M = _arr(lagrangian.M(s, p))
        np.testing.assert_allclose(M, M.T, atol=1e-14)
        assert np.linalg.eigvalsh(M).min() > 0
        np.testing.assert_allclose(_arr(lagrangian.c(s, sd, p)),
                                   _arr(lagrangian.c_euler_lagrange(s, sd, p)), atol=1e-12)
        assert math.isclose(float(lagrangian.T(s, sd, p)), 0.5 * sd @ M @ sd, abs_tol=1e-12)
        moved = s.copy()
        moved[:2] += (3.0, -1.0)
        assert math.isclose(float(lagrangian.T(moved, sd, p)), float(lagrangian.T(s, sd, p)),
                            abs_tol=1e-12)


def test_model_matches_urdf_numbers(case):
    ff = case.ff
    assert ff.joint_names == ("joint1", "joint2")
    r = case.robot
    assert math.isclose(ff.total_mass, r.m0 + r.m1 + r.m2, rel_tol=1e-12)


def test_state_energy_and_momentum_match_lagrangian(lagrangian, case):
    """The package reads the public (world) state convention as the oracle does: same kinetic
    energy, same linear momentum (dT/dx', dT/dy') and angular momentum about the system CoM."""
    p = case.robot.parameters()
    e_T, e_h = MaxError("kinetic energy"), MaxError("floating-mode momentum [Px, Py, L_C]")
    for i, (s, sd) in enumerate(case.states):
        state = package_state(case.ff, s, sd)
        o = oracle_at(lagrangian, case.robot, s, sd)
        e_T.update(kinetic_energy(case.ff, case.data, state.q, state.v),
                   lagrangian.T(s, sd, p), i)
        P = o.M[:2] @ sd
        L_base = o.M[2] @ sd  # dT/dtheta' = angular momentum about the base_link origin
        lever = _arr(lagrangian.com(s, p)) - s[:2]
        L_com = L_base - (lever[0] * P[1] - lever[1] * P[0])
        e_h.update(conserved_momentum(case.ff, case.data, state, "floating"),
                   np.array([P[0], P[1], L_com]), i)
    e_T.check()
    e_h.check()


def test_generalized_inertia_matches_lagrangian_derivation(lagrangian, case):
    """H* = M_jj - M_jb M_bb^-1 M_bj (Wilde et al. 2018 eq. 45) equals the package's H*."""
    err = MaxError("H*")
    for i, (s, sd) in enumerate(case.states):
        R = reduced_dynamics(case.ff, case.data, package_state(case.ff, s, sd), "floating")
        assert R.coordinate_names == ("joint1", "joint2")
        err.update(R.H, oracle_at(lagrangian, case.robot, s, sd).H_star, i)
    err.check()


def test_velocity_terms_match_lagrangian_derivation(lagrangian, case):
    """C* = c_j - M_jb M_bb^-1 c_b at non-zero momentum: base rates, joint rates, both."""
    err = MaxError("C*")
    for i, (s, sd) in enumerate(case.states):
        R = reduced_dynamics(case.ff, case.data, package_state(case.ff, s, sd), "floating")
        err.update(R.C, oracle_at(lagrangian, case.robot, s, sd).C_star, i)
    err.check()
    # C* is a real test only if it is not ~0 on these states.
    o = oracle_at(lagrangian, case.robot, *case.states[0])
    assert np.max(np.abs(o.C_star)) > 1e-2


def test_reduced_dynamics_reproduce_lagrangian_joint_accelerations(lagrangian, case):
    """What the reduced equations are for: under joint torques tau (and no base wrench) the
    package's H*^-1 (tau - C*) is the joint acceleration of the full Lagrangian system."""
    rng = np.random.default_rng(7)
    err = MaxError("joint accelerations")
    for i, (s, sd) in enumerate(case.states):
        tau = rng.uniform(-3.0, 3.0, 2)
        o = oracle_at(lagrangian, case.robot, s, sd)
        sdd = np.linalg.solve(o.M, np.concatenate([np.zeros(3), tau]) - o.c)
        R = reduced_dynamics(case.ff, case.data, package_state(case.ff, s, sd), "floating")
        err.update(R.accelerations(tau), sdd[JOINTS], i)
    err.check(1e-9)  # accelerations reach ~50 rad/s^2 (light links), one more 2x2 solve


def test_generalized_jacobian_matches_lagrangian_derivation(lagrangian, case):
    """J* = J_j - J_b M_bb^-1 M_bj (Wilde et al. 2018 eq. 110), and the momentum drift
    J_b M_bb^-1 (M_b: s') at non-zero momentum."""
    e_J, e_d = MaxError("GJM matrix"), MaxError("GJM drift")
    for i, (s, sd) in enumerate(case.states):
        G = generalized_jacobian(case.ff, case.data, package_state(case.ff, s, sd), "floating",
                                 "ee_link")
        assert G.row_names == ("vx", "vy", "wz")
        assert G.column_names == ("joint1", "joint2")
        o = oracle_at(lagrangian, case.robot, s, sd)
        e_J.update(G.matrix, o.J_star(), i)
        e_d.update(G.drift, o.drift(), i)
    e_J.check()
    e_d.check()


@pytest.mark.parametrize("point", [None, (0.05, -0.03, 0.0)], ids=["ee_origin", "ee_offset"])
def test_gjm_twist_equals_lagrangian_twist_at_nonzero_momentum(lagrangian, case, point):
    """GJM.twist(joint rates) (matrix + momentum drift) is the actual twist J(s) s' of the point,
    computed by the oracle from the state's world base velocity."""
    p = case.robot.parameters()
    err = MaxError(f"predicted twist of ee_link point {point}")
    for i, (s, sd) in enumerate(case.states):
        state = package_state(case.ff, s, sd)
        if point is None:
            G = generalized_jacobian(case.ff, case.data, state, "floating", "ee_link")
            J = _arr(lagrangian.J_ee(s, p))
        else:
            G = generalized_jacobian(case.ff, case.data, state, "floating", "ee_link",
                                     point=np.array(point))
            # ee_link is link 2's frame moved by (l2, 0) without rotation
            J = _arr(lagrangian.J_point(s, p, (case.robot.l2 + point[0], point[1])))
        assert np.linalg.norm(G.drift) > 1e-2  # the momentum really is non-zero
        err.update(G.twist(sd[JOINTS]), J @ sd, i)
    err.check()


def test_gjm_drift_vanishes_at_zero_momentum(lagrangian, case):
    """With the oracle's zero-momentum base velocity s'_b = -M_bb^-1 M_bj q', the package sees
    zero momentum, a zero drift, and J* q' is the actual twist J s'."""
    e_h, e_d, e_t = MaxError("momentum"), MaxError("drift"), MaxError("twist")
    for i, (s, sd) in enumerate(case.states):
        o = oracle_at(lagrangian, case.robot, s, sd)
        sd0 = sd.copy()
        sd0[BASE] = -np.linalg.solve(o.M[BASE, BASE], o.M[BASE, JOINTS] @ sd[JOINTS])
        state = package_state(case.ff, s, sd0)
        G = generalized_jacobian(case.ff, case.data, state, "floating", "ee_link")
        e_h.update(conserved_momentum(case.ff, case.data, state, "floating"), np.zeros(3), i)
        e_d.update(G.drift, np.zeros(3), i)
        e_t.update(G.matrix @ sd0[JOINTS], o.J @ sd0, i)
    e_h.check()
    e_d.check()
    e_t.check()
