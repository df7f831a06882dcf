"""A brute-force Lagrangian of a spatial multi-arm free-flyer, written without Pinocchio or the
package: doc 000's "yardstick" (Moosavian & Papadopoulos 2004, §2.3: a simple code that builds
the kinetic energy from the body motions and differentiates it in Lagrange's equations), used
as the independent formulation of DIGEST T000-1, T000-5, T001-3 and T001-4.

Coordinates s = (R_C0, delta0, theta), as in doc 000 Eq. 7:

* R_C0 (3): the base CoM in world (the base CoM is the base_link origin here, as doc 000's C0);
* delta0 = (phi, theta, psi) (3): base Euler angles, R0 = Rz(psi) Ry(theta) Rx(phi) (the
  digest's "1-2-3", the URDF's rpy); doc 000 leaves the sequence open (DIGEST §2.6), this is it;
* theta (K): the joint angles, arm after arm.

Every body's rotation R_i and CoM c_i are chains of elementary rotations and offsets written out
here from the robot's numbers (the same numbers the URDF of :meth:`MultiArm.urdf` gives the
package). Their partial derivatives dR_i/ds_k, dc_i/ds_k follow by the product rule, with each
factor differentiated by hand (d/da Rx(a), Rodrigues' formula for an arbitrary joint axis), so
the partial velocities are exact: no Jacobian formula, no spatial algebra. Then (doc 000 Eq. 15)

    M(s)   = sum_i m_i A_i' A_i + B_i' I_i B_i,   A_i = dc_i/ds, B_i = vee(R_i' dR_i/ds)
    c(s,s') = (dM/dt) s' - dT/ds = sum_jk (dM_ij/ds_k - dM_jk/ds_i / 2) s'_j s'_k

with dM/ds_k by complex-step differentiation (Im M(s + i h e_k) / h): exact to round-off,
because nothing is subtracted (every expression above is analytic in s; nothing conjugates).
Lagrange's equations are M s'' + c = Q, Q the generalized forces.

The package's velocity is nu = [v_local; omega_local; theta'] (Pinocchio's free-flyer: base-frame
components) = Jc(s) s' with Jc = blockdiag(R0', S0(delta0), I), S0 the Euler-rate map of doc 001's
nomenclature, ^0omega0 = S0 delta0'. So the package's M, b map to these coordinates as
Jc' M Jc and Jc' (M Jc' s' + b) (:func:`package_in_euler_coordinates`); doc 000's thruster map
J_Q = blockdiag(T0, S0', I_K) is Jc'. The oracle's base angular velocity comes from
vee(R0' dR0/ds), not from S0, so an error in S0 cannot cancel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

H_STEP = 1e-30  # complex step: any tiny h is exact to round-off (no subtractive cancellation)


# ---------------------------------------------------------------------------------------------
# Rotations, analytic in their angle (complex arguments allowed)


def _mat(rows, angle) -> np.ndarray:
    return np.array(rows, dtype=np.result_type(angle, float))


def rot_x(a):
    c, s = np.cos(a), np.sin(a)
    return _mat([[1, 0, 0], [0, c, -s], [0, s, c]], a)


def rot_y(a):
    c, s = np.cos(a), np.sin(a)
    return _mat([[c, 0, s], [0, 1, 0], [-s, 0, c]], a)


def rot_z(a):
    c, s = np.cos(a), np.sin(a)
    return _mat([[c, -s, 0], [s, c, 0], [0, 0, 1]], a)


def d_rot_x(a):
    c, s = np.cos(a), np.sin(a)
    return _mat([[0, 0, 0], [0, -s, -c], [0, c, -s]], a)


def d_rot_y(a):
    c, s = np.cos(a), np.sin(a)
    return _mat([[-s, 0, c], [0, 0, 0], [-c, 0, -s]], a)


def d_rot_z(a):
    c, s = np.cos(a), np.sin(a)
    return _mat([[-s, -c, 0], [c, -s, 0], [0, 0, 0]], a)


def rpy(r, p, y):
    """URDF's fixed-axis roll-pitch-yaw: Rz(y) Ry(p) Rx(r)."""
    return rot_z(y) @ rot_y(p) @ rot_x(r)


def skew(a) -> np.ndarray:
    return _mat([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]], a[0])


def vee(W) -> np.ndarray:
    """The axial vector of the skew-symmetric part of W."""
    return 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])


def axis_rotation(axis, q):
    """Rodrigues: rotation by q about the unit ``axis``, and its derivative in q."""
    K = skew(np.asarray(axis, dtype=float))
    K2 = K @ K
    R = np.eye(3) + np.sin(q) * K + (1 - np.cos(q)) * K2
    return R, np.cos(q) * K + np.sin(q) * K2


def euler_rate_map(delta) -> np.ndarray:
    """S0: body angular velocity = S0 (phi', theta', psi') for R0 = Rz(psi) Ry(theta) Rx(phi)
    (doc 001's nomenclature, read as the body-frame expression, DIGEST §3.1)."""
    phi, theta, _ = delta
    cf, sf, ct, st = np.cos(phi), np.sin(phi), np.cos(theta), np.sin(theta)
    return _mat([[1, 0, -st], [0, cf, sf * ct], [0, -sf, cf * ct]], phi + theta)


def base_rotation(delta) -> np.ndarray:
    phi, theta, psi = delta
    return rot_z(psi) @ rot_y(theta) @ rot_x(phi)


# ---------------------------------------------------------------------------------------------
# The robot


@dataclass(frozen=True)
class Body:
    """One arm link: revolute joint ``axis`` (unit, in the joint frame) at ``xyz``/``rpy`` in
    the parent body's frame; CoM ``com`` and inertia ``inertia`` (about the CoM) in this body's
    frame. Lengths m, masses kg, inertias kg m^2."""

    name: str
    parent: int  # index of the parent in MultiArm.bodies, -1 for the base
    xyz: tuple[float, float, float]
    rpy: tuple[float, float, float]
    axis: tuple[float, float, float]
    mass: float
    com: tuple[float, float, float]
    inertia: np.ndarray


@dataclass(frozen=True)
class MultiArm:
    """A free-flying base (CoM at its frame origin) carrying serial arms of revolute joints."""

    name: str
    base_mass: float
    base_inertia: np.ndarray  # about the base CoM, base axes
    bodies: tuple[Body, ...]
    arms: tuple[tuple[int, ...], ...]  # body indices of each arm, inner to outer

    @property
    def n_joints(self) -> int:
        return len(self.bodies)

    @property
    def tips(self) -> list[str]:
        return [self.bodies[arm[-1]].name for arm in self.arms]

    @property
    def total_mass(self) -> float:
        return self.base_mass + sum(b.mass for b in self.bodies)

    def path(self, i: int) -> list[int]:
        """Indices of the joints from the base out to body i's, inner first."""
        out = []
        while i >= 0:
            out.append(i)
            i = self.bodies[i].parent
        return out[::-1]

    def urdf(self) -> str:
        """The same robot for the package: a massless root ``base_link`` with the base's
        inertia on a fixed child (the bundled robots' convention, docs/models.md)."""
        def inertial(mass, com, inertia):
            I = inertia
            return (f'<inertial><origin xyz="{_xyz(com)}" rpy="0 0 0"/><mass value="{float(mass)!r}"/>'
                    f'<inertia ixx="{float(I[0, 0])!r}" ixy="{float(I[0, 1])!r}" ixz="{float(I[0, 2])!r}" '
                    f'iyy="{float(I[1, 1])!r}" iyz="{float(I[1, 2])!r}" izz="{float(I[2, 2])!r}"/></inertial>')

        parts = [f'<robot name="{self.name}">', '<link name="base_link"/>',
                 f'<link name="base_inertia">{inertial(self.base_mass, (0.0, 0.0, 0.0), self.base_inertia)}</link>',
                 '<joint name="base_inertia_joint" type="fixed"><parent link="base_link"/>'
                 '<child link="base_inertia"/><origin xyz="0 0 0" rpy="0 0 0"/></joint>']
        for b in self.bodies:
            parent = "base_link" if b.parent < 0 else self.bodies[b.parent].name
            parts.append(f'<link name="{b.name}">{inertial(b.mass, b.com, b.inertia)}</link>')
            parts.append(
                f'<joint name="j_{b.name}" type="revolute"><parent link="{parent}"/><child link="{b.name}"/>'
                f'<origin xyz="{_xyz(b.xyz)}" rpy="{_xyz(b.rpy)}"/><axis xyz="{_xyz(b.axis)}"/>'
                '<limit lower="-10" upper="10" effort="100" velocity="10"/></joint>')
        parts.append("</robot>")
        return "\n".join(parts)


def _xyz(v) -> str:
    return " ".join(repr(float(x)) for x in v)


def _inertia(rng: np.random.Generator, mass: float, size: float) -> np.ndarray:
    """A physically valid inertia tensor: principal moments from positive second moments
    (I_xx = d_y + d_z, ...: the triangle inequality holds), turned by a random rotation."""
    d = mass * size ** 2 * rng.uniform(0.02, 0.1, 3)
    principal = np.diag([d[1] + d[2], d[0] + d[2], d[0] + d[1]])
    R = rpy(*rng.uniform(-np.pi, np.pi, 3))
    return R @ principal @ R.T


def random_multi_arm(name: str, arm_lengths: tuple[int, ...], seed: int) -> MultiArm:
    """A base of a few kg with ``len(arm_lengths)`` arms of O(1) numbers: off-centre mounts,
    tilted joint frames, joint axes off the coordinate axes, CoMs off the link lines, full
    inertia tensors: every term of the dynamics is non-zero."""
    rng = np.random.default_rng(seed)
    bodies: list[Body] = []
    arms = []
    for a, n in enumerate(arm_lengths):
        mount = rng.uniform(-0.5, 0.5, 3)
        mount[a % 3] = 0.5 if a % 2 == 0 else -0.5  # on a face of the base
        indices = []
        for k in range(n):
            axis = rng.normal(size=3)
            length = rng.uniform(0.3, 0.7)
            mass = rng.uniform(0.5, 2.0)
            bodies.append(Body(
                name=f"arm{a}_link{k}",
                parent=-1 if k == 0 else indices[-1],
                xyz=tuple(mount) if k == 0 else (bodies[indices[-1]].com[0] * 2, *rng.uniform(-0.05, 0.05, 2)),
                rpy=tuple(rng.uniform(-0.6, 0.6, 3)),
                axis=tuple(axis / np.linalg.norm(axis)),
                mass=mass,
                com=(length / 2, *rng.uniform(-0.04, 0.04, 2)),
                inertia=_inertia(rng, mass, length),
            ))
            indices.append(len(bodies) - 1)
        arms.append(tuple(indices))
    return MultiArm(name, base_mass=rng.uniform(4.0, 6.0), base_inertia=_inertia(rng, 5.0, 0.6),
                    bodies=tuple(bodies), arms=tuple(arms))


# Doc 000's verification case (its Table 1): a 14-DOF free flyer with three appendages,
# 6 base coordinates and 8 joints (the paper's split is in its figure only: 3 + 3 + 2 here).
THREE_ARM_FLYER = random_multi_arm("three_arm_flyer", (3, 3, 2), seed=2004)
# Doc 001's system: one serial arm of 6 links on a spatial base.
ONE_ARM_FLYER = random_multi_arm("one_arm_flyer", (6,), seed=2018)


# ---------------------------------------------------------------------------------------------
# Kinematics and the Lagrangian


@dataclass
class BodyMotion:
    """One body at s: rotation R, CoM c (world), their partials along each coordinate of s
    (dR[k] = dR/ds_k, dc[k] = dc/ds_k), mass and body-frame inertia about the CoM; for an arm
    body also its joint: origin and unit axis in world, and the body's index (-1: the base)."""

    R: np.ndarray
    c: np.ndarray
    dR: np.ndarray  # (n, 3, 3)
    dc: np.ndarray  # (n, 3)
    mass: float
    inertia: np.ndarray
    joint_origin: np.ndarray | None = None
    joint_axis: np.ndarray | None = None
    index: int = -1

    @property
    def omega_partials(self) -> np.ndarray:
        """B (3, n): body-frame angular velocity per unit s'_k, vee(R' dR/ds_k)."""
        return np.stack([vee(self.R.T @ dRk) for dRk in self.dR], axis=1)


def body_motions(robot: MultiArm, s: np.ndarray) -> list[BodyMotion]:
    """The base, then every arm body, at coordinates s (real or complex)."""
    n = 6 + robot.n_joints
    dtype = np.result_type(s, float)
    delta = s[3:6]
    R0 = base_rotation(delta)
    factors = [rot_z(delta[2]), rot_y(delta[1]), rot_x(delta[0])]
    d_factors = [d_rot_z(delta[2]), d_rot_y(delta[1]), d_rot_x(delta[0])]
    dR0 = np.zeros((n, 3, 3), dtype=dtype)
    for k, slot in ((3, 2), (4, 1), (5, 0)):  # d/dphi hits Rx (slot 2), d/dpsi hits Rz (slot 0)
        f = list(factors)
        f[slot] = d_factors[slot]
        dR0[k] = f[0] @ f[1] @ f[2]
    dp0 = np.zeros((n, 3), dtype=dtype)
    dp0[:3] = np.eye(3)
    base = BodyMotion(R0, s[:3].astype(dtype), dR0, dp0, robot.base_mass, robot.base_inertia)
    # frame origin and its partials of every body (the base frame origin is the base CoM)
    frames = {-1: (R0, s[:3].astype(dtype), dR0, dp0)}
    out = [base]
    for i, b in enumerate(robot.bodies):
        Rp, pp, dRp, dpp = frames[b.parent]
        F = rpy(*b.rpy)
        G, dG = axis_rotation(b.axis, s[6 + i])
        o = np.asarray(b.xyz)
        R = Rp @ F @ G
        dR = dRp @ F @ G
        dR[6 + i] = dR[6 + i] + Rp @ F @ dG
        p = pp + Rp @ o
        dp = dpp + dRp @ o
        frames[i] = (R, p, dR, dp)
        com = np.asarray(b.com)
        out.append(BodyMotion(R, p + R @ com, dR, dp + dR @ com, b.mass, b.inertia,
                              joint_origin=p, joint_axis=R @ np.asarray(b.axis), index=i))
    return out


def mass_matrix(robot: MultiArm, s: np.ndarray) -> np.ndarray:
    """Doc 000 Eq. 15: M(s) = sum_i m_i A_i' A_i + B_i' I_i B_i over the partial velocities."""
    M = 0
    for body in body_motions(robot, s):
        A = body.dc.T  # (3, n)
        B = body.omega_partials
        M = M + body.mass * A.T @ A + B.T @ body.inertia @ B
    return M


def kinetic_energy(robot: MultiArm, s: np.ndarray, sd: np.ndarray) -> float:
    """T = sum_i (m_i |c_i'|^2 + omega_i' I_i omega_i) / 2, body by body (doc 000 Eq. 6)."""
    T = 0.0
    for body in body_motions(robot, s):
        v = body.dc.T @ sd
        w = body.omega_partials @ sd
        T += 0.5 * (body.mass * v @ v + w @ body.inertia @ w)
    return float(T)


def mass_matrix_partials(robot: MultiArm, s: np.ndarray) -> np.ndarray:
    """dM/ds_k for every k, (n, n, n), by complex steps: exact to round-off."""
    n = s.size
    out = np.empty((n, n, n))
    for k in range(n):
        z = s.astype(complex)
        z[k] += 1j * H_STEP
        out[k] = mass_matrix(robot, z).imag / H_STEP
    return out


def velocity_terms(robot: MultiArm, s: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """c(s, s') of Lagrange's equations M s'' + c = Q (Christoffel form)."""
    dM = mass_matrix_partials(robot, s)  # dM[k, i, j] = dM_ij / ds_k
    dM_dt = np.einsum("kij,k->ij", dM, sd)
    dT_ds = 0.5 * np.einsum("kij,i,j->k", dM, sd, sd)
    return dM_dt @ sd - dT_ds


def system_com(robot: MultiArm, s: np.ndarray) -> np.ndarray:
    bodies = body_motions(robot, s)
    return sum(b.mass * b.c for b in bodies) / robot.total_mass


def momentum(robot: MultiArm, s: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """[P; L_C] (6,): linear momentum and angular momentum about the system CoM, world axes,
    summed body by body: P = sum m_i c_i', L_C = sum m_i (c_i - c) x c_i' + R_i I_i omega_i."""
    bodies = body_motions(robot, s)
    com = sum(b.mass * b.c for b in bodies) / robot.total_mass
    P, L = np.zeros(3), np.zeros(3)
    for b in bodies:
        v = b.dc.T @ sd
        P += b.mass * v
        L += b.mass * np.cross(b.c - com, v) + b.R @ b.inertia @ (b.omega_partials @ sd)
    return np.concatenate([P, L])


def inertia_about_system_com(robot: MultiArm, s: np.ndarray) -> np.ndarray:
    """The composite inertia of the whole system about its CoM, world axes, by definition:
    sum_i R_i I_i R_i' + m_i (|r_i|^2 E - r_i r_i'), r_i = c_i - c."""
    com = system_com(robot, s)
    total = np.zeros((3, 3))
    for b in body_motions(robot, s):
        r = b.c - com
        total += b.R @ b.inertia @ b.R.T + b.mass * (r @ r * np.eye(3) - np.outer(r, r))
    return total


# ---------------------------------------------------------------------------------------------
# The package's coordinates

_PACKAGE_MODELS: dict = {}


def package_model(robot: MultiArm):
    """The package's model of ``robot``, loaded from :meth:`MultiArm.urdf` once per session
    (for the comparisons; nothing above uses it)."""
    if robot.name not in _PACKAGE_MODELS:
        from freeflyer_control.model import load_model

        _PACKAGE_MODELS[robot.name] = load_model(robot.urdf(), base="spatial", end_effectors=robot.tips)
    return _PACKAGE_MODELS[robot.name]



def package_configuration(s: np.ndarray) -> np.ndarray:
    """Pinocchio's q for s: base position, base quaternion (x, y, z, w), joint angles."""
    import pinocchio as pin

    R0 = base_rotation(s[3:6])
    return np.concatenate([s[:3], pin.Quaternion(R0).coeffs(), s[6:]])


def coordinates_from_package(q: np.ndarray, v: np.ndarray):
    """(s, s') of a package state (Pinocchio's q, nu), pitch within (-pi/2, pi/2)."""
    import pinocchio as pin

    R0 = pin.Quaternion(q[6], *q[3:6]).toRotationMatrix()
    r, p, y = pin.rpy.matrixToRpy(R0)
    s = np.concatenate([q[:3], [r, p, y], q[7:]])
    return s, np.linalg.solve(velocity_map(s), v)


def velocity_map(s) -> np.ndarray:
    """Jc(s): nu = Jc s', with nu Pinocchio's free-flyer velocity [R0' R_C0'; S0 delta0'; theta']."""
    n = s.size
    Jc = np.zeros((n, n), dtype=np.result_type(s, float))
    Jc[:3, :3] = base_rotation(s[3:6]).T
    Jc[3:6, 3:6] = euler_rate_map(s[3:6])
    Jc[6:, 6:] = np.eye(n - 6)
    return Jc


def velocity_map_rate(s: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """dJc/dt = sum_k dJc/ds_k s'_k, one complex step along s'."""
    return velocity_map(s + 1j * H_STEP * sd).imag / H_STEP


def thruster_map(s: np.ndarray) -> np.ndarray:
    """Doc 000's J_Q = blockdiag(T0, S0', I_K): Q = J_Q [^0f_s; ^0n_s; tau], the base force and
    moment at C0 in base-frame components (doc 000 Eqs. 19-21)."""
    n = s.size
    JQ = np.eye(n)
    JQ[:3, :3] = base_rotation(s[3:6])
    JQ[3:6, 3:6] = euler_rate_map(s[3:6]).T
    return JQ


def package_in_euler_coordinates(M: np.ndarray, b: np.ndarray, s: np.ndarray, sd: np.ndarray):
    """The package's mass matrix M and bias b (at q(s), nu = Jc s') as the (M, c) of Lagrange's
    equations in s: nu' = Jc s'' + Jc' s', and power nu' tau = s'' Q gives Q = Jc' tau, so
    Jc' (M (Jc s'' + Jc' s') + b) = Jc' tau."""
    Jc = velocity_map(s)
    return Jc.T @ M @ Jc, Jc.T @ (M @ velocity_map_rate(s, sd) @ sd + b)


def random_coordinates(robot: MultiArm, rng: np.random.Generator, *, pitch_margin: float = 0.3):
    """(s, s'): any base position, Euler angles away from gimbal lock by ``pitch_margin`` rad,
    joints over +-pi, every rate non-zero (so the momentum is non-zero)."""
    n = 6 + robot.n_joints
    s = np.concatenate([rng.uniform(-1.0, 1.0, 3), rng.uniform(-np.pi, np.pi, 1),
                        rng.uniform(-np.pi / 2 + pitch_margin, np.pi / 2 - pitch_margin, 1),
                        rng.uniform(-np.pi, np.pi, 1), rng.uniform(-np.pi, np.pi, robot.n_joints)])
    sd = rng.uniform(-1.0, 1.0, n)
    return s, sd
