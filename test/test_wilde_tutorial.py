"""Wilde, Kwok Choon, Grompone & Romano 2018 (doc 001, the GJM tutorial): the claims T001-2..10
of DIGEST §3.4 that no other test holds as stated, on both engines (test/engine_support.py).

T001-1 (momentum and CoM over the whole maneuver) is held by test_control.py's Wilde tests, on
both engines; docs/claims.md lists which test holds each claim.
"""

from __future__ import annotations

import zlib

import numpy as np
import pinocchio as pin
import pytest
from conftest import BUNDLED_ROBOTS, random_state, robot, zero_momentum
from engine_support import ENGINES, fixed_base_model, one_over_scale, wilde_floating
from scipy.integrate import solve_ivp
from test_gjm_modes import ModeDriver, _frames_to_check, finite_difference_twist

import lagrange_oracle as oracle
from freeflyer_control.control.maneuvers import WILDE_PERIOD
from freeflyer_control.model import load_model, scaled_base
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import State, joint_positions, make_state, rotation_from_xyzw

FLOATING = Mode.FLOATING
ORACLE_ROBOTS = {"one_arm_flyer": oracle.ONE_ARM_FLYER, "three_arm_flyer": oracle.THREE_ARM_FLYER}


def oracle_robot(name: str):
    """(oracle description, the package's model of it from its URDF)."""
    r = ORACLE_ROBOTS[name]
    return r, oracle.package_model(r)


def _seed(*parts) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


# ---------------------------------------------------------------------------------------------
# T001-2: the reduced equations alone reproduce the plant


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
def test_T001_2_reduced_equations_integrated_alone_reproduce_the_plants_joints_and_base_velocity(engine, name):
    """From zero momentum under constant joint torques: H q'' + C = tau integrated in the
    joints alone (scipy's DOP853) gives the joint trajectory of the full floating-base plant,
    and x0' = -H0^-1 H0m q' along it gives the plant's base velocity."""
    ff = robot(name)
    nb, nj = ff.nb, ff.nj
    rng = np.random.default_rng(_seed("T001-2", name))
    start = zero_momentum(ff, random_state(ff, rng, joint_rate=0.3))
    inertia = np.diag(engine.mass_and_bias(ff, start.q, start.v)[0])[nb:]
    tau = 0.1 * inertia * rng.uniform(-1.0, 1.0, nj)  # rates reach ~1-2 rad/s in the 2 s

    def zero_momentum_state(angles, rates):
        """Any base pose (H, C do not depend on it: T001-3), the base velocity of zero momentum."""
        state = make_state(ff, joint_positions=angles, joint_velocities=rates)
        M, _ = engine.mass_and_bias(ff, state.q, state.v)
        state.v[:nb] = -np.linalg.solve(M[:nb, :nb], M[:nb, nb:] @ rates)  # x0' = -H0^-1 H0m q'
        return state

    def joints_only(t, y):
        H, C = engine.reduced(ff, zero_momentum_state(y[:nj], y[nj:]), FLOATING)
        return np.concatenate([y[nj:], np.linalg.solve(H, tau - C)])

    duration = 2.0
    y0 = np.concatenate([joint_positions(ff, start.q), start.v[nb:]])
    reduced = solve_ivp(joints_only, (0.0, duration), y0, method="DOP853", rtol=1e-12, atol=1e-12,
                        dense_output=True)
    assert reduced.success, reduced.message
    dt = 1e-3
    plant = engine.plant(ff, start, dt)
    full_tau = np.concatenate([np.zeros(nb), tau])
    for k in range(1, int(round(duration / dt)) + 1):
        state = plant.step(tau=full_tau)
        if k % 500 == 0:
            y = reduced.sol(plant.t)
            # The plant's CF4 at 1 ms dominates (DOP853 at 1e-12 is ~100 times closer): its
            # error falls 16-fold per halved step: 3e-11 here. A missing or wrong term of C shows
            # at 1e-3.
            np.testing.assert_allclose(joint_positions(ff, state.q), y[:nj], rtol=0, atol=1e-9)
            np.testing.assert_allclose(state.v[nb:], y[nj:], rtol=0, atol=1e-9)
            base = zero_momentum_state(y[:nj], y[nj:]).v[:nb]  # base axes, like the plant's
            np.testing.assert_allclose(state.v[:nb], base, rtol=0, atol=1e-9)
    assert np.abs(state.v[nb:]).max() > 0.3, "the joints must actually move"


# ---------------------------------------------------------------------------------------------
# T001-3: H depends on q only


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_T001_3_generalized_inertia_depends_on_the_joint_angles_only_not_on_the_base_pose_or_any_rate(engine, name):
    """Same joint angles, any base position, attitude, base velocity and joint rates: the same
    SPD H (the digest's invariance error: 2.5e-15)."""
    ff = robot(name)
    rng = np.random.default_rng(_seed("T001-3", name))
    for _ in range(5):
        reference = random_state(ff, rng, joint_range=np.pi)
        angles = joint_positions(ff, reference.q)
        H0, _ = engine.reduced(ff, reference, FLOATING)
        np.linalg.cholesky(H0)
        base_nq = ff.model.joints[1].nq  # the floating joint's coordinates come first
        for _ in range(4):
            other = random_state(ff, rng, joint_rate=2.0, base_speed=1.0, base_rate=1.0)
            q = other.q.copy()
            q[base_nq:] = reference.q[base_nq:]
            moved = State(q, other.v)
            H, _ = engine.reduced(ff, moved, FLOATING)
            # The same numbers through the same sums: round-off at most (measured: 0).
            assert np.abs(H - H0).max() <= 1e-13 * np.abs(H0).max()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(ORACLE_ROBOTS))
def test_T001_3_generalized_inertia_is_the_same_in_euler_angle_coordinates(engine, name):
    """Whatever the base velocity coordinates: the engine's H (base-frame velocities) is the
    Schur complement over the base of the brute-force Lagrangian's M in doc 000's coordinates
    (base CoM velocity in world, Euler rates), at any base pose."""
    r, ff = oracle_robot(name)
    rng = np.random.default_rng(_seed("T001-3e", name))
    for _ in range(5):
        s, sd = oracle.random_coordinates(r, rng)
        state = State(oracle.package_configuration(s), oracle.velocity_map(s) @ sd)
        H, _ = engine.reduced(ff, state, FLOATING)
        M = oracle.mass_matrix(r, s)
        schur = M[6:, 6:] - M[6:, :6] @ np.linalg.solve(M[:6, :6], M[:6, 6:])
        # Two independent formulations, one 6 x 6 solve (condition ~1e2): ~1e-15 relative.
        np.testing.assert_allclose(H, schur, rtol=0, atol=1e-13 * np.abs(schur).max())


# ---------------------------------------------------------------------------------------------
# T001-4: the block matrices of Eqs. 28-36, S_U, and the Banachiewicz inverse of H0


def wilde_blocks(r: oracle.MultiArm, s: np.ndarray):
    """Doc 001 Eqs. 28-36 (signs restored, DIGEST §3.1) from the bodies' world kinematics:
    (H0, H0m, Hm, r0C, HS), velocities x0' = [v0; w0] (base CoM, world) and q'."""
    bodies = oracle.body_motions(r, s)
    base, links = bodies[0], bodies[1:]
    m_tot = r.total_mass
    r0 = base.c
    n = r.n_joints
    HS = base.R @ base.inertia @ base.R.T
    JTS, HSq, Hm = np.zeros((3, n)), np.zeros((3, n)), np.zeros((n, n))
    first_moment = np.zeros(3)
    for b in links:
        I = b.R @ b.inertia @ b.R.T
        r0i = b.c - r0
        JT, JR = np.zeros((3, n)), np.zeros((3, n))
        for k in r.path(b.index):
            axis, origin = links[k].joint_axis, links[k].joint_origin
            JT[:, k], JR[:, k] = np.cross(axis, b.c - origin), axis
        HS += I - b.mass * oracle.skew(r0i) @ oracle.skew(r0i)
        JTS += b.mass * JT
        HSq += I @ JR + b.mass * oracle.skew(r0i) @ JT
        Hm += JR.T @ I @ JR + b.mass * JT.T @ JT
        first_moment += b.mass * r0i
    r0C = first_moment / m_tot
    H0 = np.block([[m_tot * np.eye(3), -m_tot * oracle.skew(r0C)], [m_tot * oracle.skew(r0C), HS]])
    return H0, np.vstack([JTS, HSq]), Hm, r0C, HS


def su_elements(r: oracle.MultiArm, s: np.ndarray, repeat_yz: bool = False) -> np.ndarray:
    """S_U entry by entry (doc 001 Eqs. 57-60 with the digest's s22, s33; ``repeat_yz``: s22
    and s33 as extracted, repeating (y_i^2 + z_i^2), the erratum)."""
    bodies = oracle.body_motions(r, s)
    r0 = bodies[0].c
    m_tot = r.total_mass
    xC, yC, zC = sum(b.mass * (b.c - r0) for b in bodies[1:]) / m_tot
    S = np.zeros((3, 3))
    for b in bodies:
        I = b.R @ b.inertia @ b.R.T
        x, y, z = b.c - r0
        m = b.mass
        S[0, 0] += I[0, 0] + m * (y * y + z * z)
        S[1, 1] += I[1, 1] + m * ((y * y + z * z) if repeat_yz else (x * x + z * z))
        S[2, 2] += I[2, 2] + m * ((y * y + z * z) if repeat_yz else (x * x + y * y))
        S[0, 1] += I[0, 1] - m * x * y
        S[0, 2] += I[0, 2] - m * x * z
        S[1, 2] += I[1, 2] - m * y * z
    S[0, 0] -= m_tot * (yC * yC + zC * zC)
    S[1, 1] -= m_tot * ((yC * yC + zC * zC) if repeat_yz else (xC * xC + zC * zC))
    S[2, 2] -= m_tot * ((yC * yC + zC * zC) if repeat_yz else (xC * xC + yC * yC))
    S[0, 1] += m_tot * xC * yC
    S[0, 2] += m_tot * xC * zC
    S[1, 2] += m_tot * yC * zC
    S[1, 0], S[2, 0], S[2, 1] = S[0, 1], S[0, 2], S[1, 2]
    return S


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(ORACLE_ROBOTS))
def test_T001_4_block_matrices_equal_the_brute_force_energy_and_the_packages_mass_matrix(engine, name):
    """H0, H0m, Hm of Eqs. 28-36 equal (a) the brute-force kinetic-energy Lagrangian's M and
    (b) the engine's mass matrix, both moved to x0' = [v0; w0] (world) and q'; S_U = HS +
    m r0C^x r0C^x is the inertia about the system CoM (the definition, body by body; the
    element formulas with the digest's s22, s33 and the determinant); the Banachiewicz H0^-1
    is the inverse of the engine's H0."""
    r, ff = oracle_robot(name)
    rng = np.random.default_rng(_seed("T001-4", name))
    for _ in range(5):
        s, _ = oracle.random_coordinates(r, rng)
        H0, H0m, Hm, r0C, HS = wilde_blocks(r, s)
        H_wilde = np.block([[H0, H0m], [H0m.T, Hm]])
        R0, S0 = oracle.base_rotation(s[3:6]), oracle.euler_rate_map(s[3:6])
        n = 6 + r.n_joints
        # (a) s' -> x0', q': v0 = R_C0', w0 = R0 S0 delta0'
        Jw = np.eye(n)
        Jw[3:6, 3:6] = R0 @ S0
        M_lagrangian = oracle.mass_matrix(r, s)
        scale = np.abs(M_lagrangian).max()
        # Sums of O(1) products, no solve: round-off, 1e-15 relative measured; 1e-13 leaves room.
        np.testing.assert_allclose(Jw.T @ H_wilde @ Jw, M_lagrangian, rtol=0, atol=1e-13 * scale)
        # (b) nu = blockdiag(R0', R0', I) [x0'; q']
        Tw = np.eye(n)
        Tw[:3, :3] = Tw[3:6, 3:6] = R0.T
        M, _ = engine.mass_and_bias(ff, oracle.package_configuration(s), np.zeros(n))
        H_package = Tw.T @ M @ Tw
        np.testing.assert_allclose(H_package, H_wilde, rtol=0, atol=1e-13 * scale)
        # S_U, the Schur complement of H0's mass block, three ways.
        U, V, W, X = (H_package[:3, :3], H_package[:3, 3:6], H_package[3:6, :3], H_package[3:6, 3:6])
        S_U = X - W @ np.linalg.solve(U, V)
        r0Cx = oracle.skew(r0C)
        np.testing.assert_allclose(S_U, HS + r.total_mass * r0Cx @ r0Cx, rtol=0, atol=1e-13 * scale)
        np.testing.assert_allclose(S_U, oracle.inertia_about_system_com(r, s), rtol=0, atol=1e-13 * scale)
        elements = su_elements(r, s)
        np.testing.assert_allclose(elements, S_U, rtol=0, atol=1e-13 * scale)
        s11, s22, s33, s12, s13, s23 = (elements[0, 0], elements[1, 1], elements[2, 2],
                                        elements[0, 1], elements[0, 2], elements[1, 2])
        det = s11 * s22 * s33 + 2 * s12 * s13 * s23 - s11 * s23 ** 2 - s22 * s13 ** 2 - s33 * s12 ** 2
        assert det == pytest.approx(np.linalg.det(S_U), rel=1e-12)
        # The extracted s22, s33 (y^2 + z^2 repeated) are wrong, not a rounding: DIGEST §3.1 [!].
        assert np.abs(su_elements(r, s, repeat_yz=True) - S_U).max() > 1e-3 * scale
        # Banachiewicz: H0^-1 from S_U^-1 (Eqs. 51-56) against the numerical inverse.
        S_inv = np.linalg.inv(S_U)
        H0_inv = np.block([[np.eye(3) / r.total_mass - r0Cx @ S_inv @ r0Cx, r0Cx @ S_inv],
                           [-S_inv @ r0Cx, S_inv]])
        np.testing.assert_allclose(H0_inv, np.linalg.inv(H_package[:6, :6]), rtol=0,
                                   atol=1e-12 * np.abs(H0_inv).max())


# ---------------------------------------------------------------------------------------------
# T001-5: at zero momentum, J* q' is the end-effector twist of the coupled motion


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_T001_5_at_zero_momentum_the_gjm_times_the_joint_rates_is_the_twist_of_the_plants_motion(engine, name):
    """Zero momentum, wheels at rest, arm torques on: J* q' (no drift) of every end-effector and
    of a point off an inner link equals the twist finite differences of the engine's plant show."""
    ff = robot(name)
    rng = np.random.default_rng(_seed("T001-5", name))
    state = random_state(ff, rng, joint_rate=0.5)
    state.v[ff.wheel_v_indices] = 0.0
    state = zero_momentum(ff, state)
    driver = ModeDriver(ff, FLOATING, rng, 1e-3)
    rates = state.v[ff.arm_v_indices]
    for frame, point in _frames_to_check(ff):
        matrix, drift = engine.gjm(ff, state, FLOATING, frame, point)
        # Zero momentum and wheels at rest: no drift (round-off of a 6 x 6 solve on O(1) entries).
        assert np.abs(drift).max() < 1e-12
        observed = finite_difference_twist(ff, state, driver, frame, point, make_plant=engine.plant)
        if ff.base == "planar":
            observed = observed[[0, 1, 5]]
        predicted = matrix @ rates
        # As test_gjm_modes: one-sided differences with h = 1e-5, ~1e-9 relative; 1e-6 allowed.
        assert np.linalg.norm(predicted - observed) <= 1e-6 * np.linalg.norm(observed), (frame, predicted, observed)


# ---------------------------------------------------------------------------------------------
# T001-6: the heavy-base limit


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
def test_T001_6_gjm_and_generalized_inertia_tend_to_the_fixed_base_ones_as_one_over_the_base_scale(engine, name):
    """m0, I0 times s: J* of the end-effector tends to Jm, the fixed-base Jacobian, and H to Hm,
    the fixed-base inertia (both of Pinocchio's fixed-base model), with errors O(1/s)."""
    ff = robot(name)
    state = random_state(ff, np.random.default_rng(_seed("T001-6", name)))
    ee = ff.end_effectors[0]
    fixed, fdata = fixed_base_model(ff, state.q)
    qj = state.q[7:] if ff.base == "spatial" else state.q[4:]
    Hm = pin.crba(fixed, fdata, qj)
    Hm = np.triu(Hm) + np.triu(Hm, 1).T
    Jm = pin.computeFrameJacobian(fixed, fdata, qj, fixed.getFrameId(ee), pin.LOCAL_WORLD_ALIGNED)
    Jm = Jm[:, ff.arm_v_indices - ff.nb]
    if ff.base == "planar":
        Jm = Jm[[0, 1, 5]]
    errors = {"J*": {}, "H": {}}
    for factor in (1e3, 1e6):
        heavy = scaled_base(ff, factor)
        J, _ = engine.gjm(heavy, state, FLOATING, ee)
        H, _ = engine.reduced(heavy, state, FLOATING)
        errors["J*"][factor] = np.linalg.norm(J - Jm) / np.linalg.norm(Jm)
        errors["H"][factor] = np.linalg.norm(H - Hm) / np.linalg.norm(Hm)
    # The base's reaction scales like 1/s: below 1e-5 at s = 1e6 (the base then outweighs the
    # arm by ~1e7), each step of s dividing the error by at least half of it.
    for what, by_scale in errors.items():
        assert one_over_scale(by_scale, 1e-5) is None, f"{what}: {one_over_scale(by_scale, 1e-5)}"


# ---------------------------------------------------------------------------------------------
# T001-7: the planar 4-link arm, extended


def base_rate_per_joint_rate(engine, ff, state) -> np.ndarray:
    """G_j = w0 / q_j' at zero momentum: the base yaw row of the base_link's floating GJM."""
    matrix, _ = engine.gjm(ff, state, FLOATING, ff.base_link)
    return matrix[2]  # planar rows vx, vy, wz


@pytest.mark.parametrize("engine", ENGINES)
def test_T001_7_extended_planar_arm_turns_the_base_against_each_joint_slower_and_less_for_outer_joints(engine):
    """planar_4link at zero angles (Wilde's initial pose), zero momentum: -1 < G_j < 0 and
    |G_j| decreases from the inner joint to the outer one."""
    ff = robot("planar_4link")
    G = base_rate_per_joint_rate(engine, ff, make_state(ff))
    assert np.all((-1.0 < G) & (G < 0.0)), G
    assert np.all(np.diff(np.abs(G)) < 0), G


@pytest.mark.parametrize("engine", ENGINES)
def test_T001_7_in_the_wilde_maneuver_each_joint_turns_the_base_against_it_and_less_the_further_out(engine):
    """The same in closed loop (doc 001's planar example): mid-way through each joint's
    +0.1 rad/s phase, the base yaw rate over the joint's rate is in (-1, 0), and its size falls
    from joint 1 to joint 4 ("the base reaction decreases as the sequence moves outward")."""
    result = wilde_floating(engine, "planar_4link")
    ff, series = result.robot, result.series
    t = series["t"][:, 0]
    arm = ff.arm_v_indices - ff.nb
    ratios = []
    for i in range(len(arm)):
        window = (t > i * WILDE_PERIOD + 6.0) & (t < i * WILDE_PERIOD + 10.0)
        ratio = series["base_angular_velocity"][window, 2] / series["joint_velocities"][window, arm[i]]
        assert np.all((-1.0 < ratio) & (ratio < 0.0)), (i, ratio)
        ratios.append(np.median(np.abs(ratio)))
    assert np.all(np.diff(ratios) < 0), ratios


# ---------------------------------------------------------------------------------------------
# T001-8: out-of-plane momentum of the planar case; where the spatial base CoM moves


@pytest.mark.parametrize("engine", ENGINES)
def test_T001_8_planar_maneuver_has_no_out_of_plane_momentum(engine):
    """planar_4link through the whole Wilde maneuver: P_z = L_x = L_y = 0 at every sample."""
    h = wilde_floating(engine, "planar_4link").series["momentum_total"]
    # Every body moves in the z = 0 plane with principal axes along z: exactly zero in exact
    # arithmetic, round-off of the body-by-body sums here (measured 0).
    assert np.abs(h[:, [2, 3, 4]]).max() < 1e-12
    assert np.abs(h[:, [0, 1, 5]]).max() < 1e-9  # and the in-plane ones stay zero (T001-1)


SPATIAL_PITCH_JOINTS, SPATIAL_ROLL_JOINTS = (1, 2, 4), (0, 3, 5)  # arm indices: joints 2, 3, 5 and 1, 4, 6


@pytest.mark.parametrize("engine", ENGINES)
def test_T001_8_spatial_joints_moved_one_at_a_time_move_the_base_com_only_in_x_and_z(engine):
    """spatial_6link from Wilde's initial pose (arm straight along the base x axis, zero
    momentum), one joint torqued at a time, the others free: the pitch joints 2, 3, 5 move the
    base CoM in x and z and never in y (the motion keeps the mirror symmetry about the xz
    plane); the roll joints 1, 4, 6 turn bodies about the line through every CoM, so the base
    CoM does not move at all (the base only rolls, and only for joint 1: the reaction of 4 and 6
    turns links 1-3 on the free joint 1). Doc 001 reports x, y, z for joint 1 and
    x, z for joints 4 and 6: its Table 6 geometry, which is not in the text, differs."""
    ff = robot("spatial_6link")
    start = make_state(ff)
    inertia = np.diag(engine.mass_and_bias(ff, start.q, start.v)[0])
    for j in SPATIAL_PITCH_JOINTS + SPATIAL_ROLL_JOINTS:
        tau = np.zeros(ff.model.nv)
        tau[ff.arm_v_indices[j]] = 0.5 * inertia[ff.arm_v_indices[j]]  # ~0.5 rad/s^2
        plant = engine.plant(ff, start, 2e-3)
        for _ in range(300):
            state = plant.step(tau=tau)
        moved = np.abs(state.q[:3] - start.q[:3])  # the base CoM is the base_link origin
        turned = pin.log3(rotation_from_xyzw(state.q[3:7]))
        # Symmetry makes the zeros exact (round-off over 300 steps ~1e-16); what moves moves by
        # 5e-5 m (the light wrist) to 3 cm.
        if j in SPATIAL_PITCH_JOINTS:
            assert moved[1] < 1e-12 and moved[0] > 1e-6 and moved[2] > 1e-6, (j, moved)
            assert np.abs(turned[[0, 2]]).max() < 1e-12, (j, turned)  # it pitches only
        else:
            assert moved.max() < 1e-12 and np.abs(turned[1:]).max() < 1e-12, (j, moved, turned)
            if j == 0:  # joint 4's and 6's reaction about x turns links 1-3 on the free joint 1
                assert abs(turned[0]) > 1e-6, turned


@pytest.mark.parametrize("engine", ENGINES)
def test_T001_8_in_the_wilde_maneuver_joint_1_rolls_the_base_without_moving_its_com(engine):
    """The same for joint 1 through its window of the closed-loop maneuver (the other joints
    held at zero by symmetry). In the windows of joints 2-6 the x-z-only claim holds only
    approximately in closed loop: K_P = K_D = 1 leaves the previous joint up to 0.055 rad
    off zero after its 2 s rest, which tilts the arm's plane (base CoM up to 0.1 mm in y
    against 23 mm in x); docs/claims.md says so."""
    series = wilde_floating(engine, "spatial_6link").series
    t = series["t"][:, 0]
    window = t < WILDE_PERIOD
    moved = np.abs(series["base_position"][window] - series["base_position"][0]).max()
    R0 = rotation_from_xyzw(series["base_orientation_xyzw"][0])
    turned = np.array([pin.log3(R0.T @ rotation_from_xyzw(q)) for q in series["base_orientation_xyzw"][window]])
    # Symmetry makes these exact zeros; round-off accumulated over 4400 steps ~1e-14.
    assert moved < 1e-9
    assert np.abs(turned[:, 0]).max() > 1e-3 and np.abs(turned[:, 1:]).max() < 1e-9


# ---------------------------------------------------------------------------------------------
# T001-9: the quaternion formulas


def quat_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of [eps; eta] quaternions (scalar last), doc 001 Eq. 20."""
    ea, na, eb, nb = a[:3], a[3], b[:3], b[3]
    return np.concatenate([na * eb + nb * ea + np.cross(ea, eb), [na * nb - ea @ eb]])


def quat_rotate(q: np.ndarray, a: np.ndarray) -> np.ndarray:
    """a' = q (x) [a; 0] (x) q*, q* = [-eps; eta] (doc 001 Eq. 21)."""
    conj = np.concatenate([-q[:3], q[3:]])
    return quat_product(quat_product(q, np.concatenate([a, [0.0]])), conj)[:3]


def quat_matrix(q: np.ndarray) -> np.ndarray:
    """R(q) of doc 001 Eq. 19, [eps1, eps2, eps3, eta]."""
    e1, e2, e3, n = q
    return np.array([
        [1 - 2 * (e2 ** 2 + e3 ** 2), 2 * (e1 * e2 - e3 * n), 2 * (e1 * e3 + e2 * n)],
        [2 * (e1 * e2 + e3 * n), 1 - 2 * (e1 ** 2 + e3 ** 2), 2 * (e2 * e3 - e1 * n)],
        [2 * (e1 * e3 - e2 * n), 2 * (e2 * e3 + e1 * n), 1 - 2 * (e1 ** 2 + e2 ** 2)]])


def dh_quaternion(theta: float, alpha: float) -> np.ndarray:
    """Doc 001 Eq. 22: the rotation Rz(theta) Rx(alpha) of a DH step."""
    return np.array([np.cos(theta / 2) * np.sin(alpha / 2), np.sin(theta / 2) * np.sin(alpha / 2),
                     np.sin(theta / 2) * np.cos(alpha / 2), np.cos(theta / 2) * np.cos(alpha / 2)])


def dh_translation(theta: float, d: float, c: float) -> np.ndarray:
    """Doc 001 Eq. 23: the offset of a DH step, in the frame before it."""
    return np.array([c * np.cos(theta), c * np.sin(theta), d])


def test_T001_9_quaternion_formulas_reproduce_the_rotation_matrices_to_machine_precision():
    """Eq. 19's R(q) is the package's rotation of an (x, y, z, w) quaternion (the same order as
    doc 001's [eps; eta]); the Hamilton product composes rotations; q (x) a (x) q* rotates a
    vector; Eq. 22 is Rz(theta) Rx(alpha) and Eq. 23 its offset Rz(theta) (c, 0, d)."""
    rng = np.random.default_rng(_seed("T001-9"))
    for _ in range(50):
        a, b = rng.normal(size=4), rng.normal(size=4)
        a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
        Ra, Rb = rotation_from_xyzw(a), rotation_from_xyzw(b)
        # Products and sums of unit-size numbers: a few ulps (1e-15).
        np.testing.assert_allclose(quat_matrix(a), Ra, rtol=0, atol=1e-15)
        np.testing.assert_allclose(quat_matrix(quat_product(a, b)), Ra @ Rb, rtol=0, atol=2e-15)
        v = rng.normal(size=3)
        np.testing.assert_allclose(quat_rotate(a, v), Ra @ v, rtol=0, atol=2e-15 * np.linalg.norm(v))
        theta, alpha, d, c = rng.uniform(-np.pi, np.pi, 2).tolist() + rng.uniform(-1, 1, 2).tolist()
        np.testing.assert_allclose(quat_matrix(dh_quaternion(theta, alpha)),
                                   oracle.rot_z(theta) @ oracle.rot_x(alpha), rtol=0, atol=1e-15)
        np.testing.assert_allclose(dh_translation(theta, d, c), oracle.rot_z(theta) @ np.array([c, 0, d]),
                                   rtol=0, atol=1e-15)


DH_ARM = [  # (d, alpha, c): doc 001's customised DH of a 6-joint arm (c = a + b), m and rad
    (0.12, -np.pi / 2, 0.05), (0.0, 0.0, 0.55), (0.03, np.pi / 2, 0.0),
    (0.42, -np.pi / 2, 0.0), (0.0, np.pi / 2, 0.0), (0.11, 0.0, 0.02)]
DH_MOUNT = ((0.4, 0.05, -0.1), (0.2, -0.3, 0.5))  # joint 1's offset b0 (m) and 1-2-3 angles (rad)


def dh_arm_urdf() -> str:
    """A spatial free-flyer whose arm is the DH chain above: joint i's frame is the previous
    link's frame after Tz(d) Tx(c) Rx(alpha), i.e. origin xyz = (c, 0, d), rpy = (alpha, 0, 0)."""
    def link(name):
        return (f'<link name="{name}"><inertial><origin xyz="0.05 0.01 0.02"/><mass value="1.0"/>'
                '<inertia ixx="0.01" iyy="0.012" izz="0.014" ixy="0" ixz="0" iyz="0"/></inertial></link>')

    parts = ['<robot name="dh_arm">', '<link name="base_link"/>', link("base_inertia"),
             '<joint name="base_inertia_joint" type="fixed"><parent link="base_link"/><child link="base_inertia"/>'
             '<origin xyz="0 0 0"/></joint>']
    parent, (xyz, rpy) = "base_link", (DH_MOUNT[0], DH_MOUNT[1])
    for i, (d, alpha, c) in enumerate(DH_ARM):
        parts += [link(f"link{i + 1}"),
                  f'<joint name="joint{i + 1}" type="revolute"><parent link="{parent}"/><child link="link{i + 1}"/>'
                  f'<origin xyz="{xyz[0]!r} {xyz[1]!r} {xyz[2]!r}" rpy="{rpy[0]!r} {rpy[1]!r} {rpy[2]!r}"/>'
                  '<axis xyz="0 0 1"/><limit lower="-4" upper="4" effort="10" velocity="2"/></joint>']
        parent, xyz, rpy = f"link{i + 1}", (c, 0.0, d), (alpha, 0.0, 0.0)
    parts += ['<link name="ee"/>', f'<joint name="ee_joint" type="fixed"><parent link="{parent}"/><child link="ee"/>'
              f'<origin xyz="{xyz[0]!r} {xyz[1]!r} {xyz[2]!r}" rpy="{rpy[0]!r} {rpy[1]!r} {rpy[2]!r}"/></joint>',
              '</robot>']
    return "\n".join(parts)


@pytest.mark.parametrize("engine", ENGINES)
def test_T001_9_a_dh_chain_of_quaternions_is_the_engines_forward_kinematics(engine):
    """Eqs. 22-25: the end-effector pose chained with DH quaternions and offsets from the base
    pose (q_{i+1} = q_i (x) q_DH(theta_i, alpha_i), p_{i+1} = p_i + q_i (x) t_i (x) q_i*) equals
    the engine's forward kinematics of the same arm read from its URDF, at any configuration."""
    ff = load_model(dh_arm_urdf(), base="spatial", end_effectors=["ee"])
    rng = np.random.default_rng(_seed("T001-9c"))
    mount = np.array(pin.Quaternion(oracle.rpy(*DH_MOUNT[1])).coeffs())  # (x, y, z, w) = [eps; eta]
    for _ in range(10):
        base_q = rng.normal(size=4)
        base_q /= np.linalg.norm(base_q)
        base_p = rng.uniform(-1, 1, 3)
        angles = rng.uniform(-np.pi, np.pi, len(DH_ARM))
        state = make_state(ff, base_position=base_p, base_orientation_xyzw=base_q, joint_positions=angles)
        q, p = quat_product(base_q, mount), base_p + quat_rotate(base_q, np.array(DH_MOUNT[0]))
        for theta, (d, alpha, c) in zip(angles, DH_ARM):
            q, p = quat_product(q, dh_quaternion(theta, alpha)), p + quat_rotate(q, dh_translation(theta, d, c))
        R, position = engine.frame_placement(ff, state.q, "ee")
        # Seven chained unit quaternions and offsets < 1 m: ~1e-15 each step.
        np.testing.assert_allclose(position, p, rtol=0, atol=1e-14)
        np.testing.assert_allclose(R, quat_matrix(q), rtol=0, atol=1e-14)


# ---------------------------------------------------------------------------------------------
# T001-10: the derivatives of H


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
def test_T001_10_velocity_terms_are_the_lagrangian_ones_of_h_differentiated_along_the_plants_trajectory(engine, name):
    """At zero momentum (Eq. 47, M0 = 0): dH/dt along the plant's own trajectory (central
    differences over its steps) is sum_k dH/dq_k q_k' (central differences in each joint), and
    the engine's C equals H' q' - (1/2) d(q' H q')/dq built from them."""
    ff = robot(name)
    nb, nj = ff.nb, ff.nj
    rng = np.random.default_rng(_seed("T001-10", name))
    state = zero_momentum(ff, random_state(ff, rng, joint_rate=0.8))
    inertia = np.diag(engine.mass_and_bias(ff, state.q, state.v)[0])[nb:]
    tau = np.concatenate([np.zeros(nb), 0.5 * inertia * rng.uniform(-1.0, 1.0, nj)])
    h, delta = 2.5e-5, 1e-5

    def H_at(q):
        return engine.reduced(ff, State(q, state.v), FLOATING)[0]  # H does not depend on v (T001-3)

    for _ in range(3):
        plant = engine.plant(ff, state, h)
        before, now, after = state, plant.step(tau=tau), plant.step(tau=tau)
        # Central differences, O(h^2): along the trajectory 1.4e-7 relative at h = 1e-4 on
        # spatial_6link (its light wrist), 16 times less at h = 2.5e-5; in the joints (delta)
        # ~1e-10; round-off eps / h ~1e-11. 1e-6 leaves room; a wrong C shows at 1e-2.
        H_dot = (H_at(after.q) - H_at(before.q)) / (2 * h)
        dH = []
        for k in range(nj):
            e = np.zeros(ff.model.nv)
            e[nb + k] = delta
            dH.append((H_at(pin.integrate(ff.model, now.q, e)) - H_at(pin.integrate(ff.model, now.q, -e))) / (2 * delta))
        rates = now.v[nb:]
        scale = np.abs(H_dot).max()
        np.testing.assert_allclose(H_dot, sum(d * r for d, r in zip(dH, rates)), rtol=0, atol=1e-6 * scale)
        H, C = engine.reduced(ff, now, FLOATING)
        lagrangian = H_dot @ rates - 0.5 * np.array([rates @ d @ rates for d in dH])
        np.testing.assert_allclose(C, lagrangian, rtol=0, atol=1e-6 * np.abs(C).max())
        assert np.abs(C).max() > 1e-3
        # on along the trajectory: 0.3 s more of the same torques
        plant = engine.plant(ff, now, 1e-3)
        for _ in range(300):
            state = plant.step(tau=tau)
