"""The GJM of each mode predicts the motion of the full floating-base plant.

The plant integrates the (6+n) or (3+n) floating-base dynamics with no knowledge of modes;
each mode only decides which actuators push. The GJM, fed the actuated velocities and the
conserved momentum *as it was at the start*, must give the twist that finite differences of
the plant's end-effector pose show.
"""

from __future__ import annotations

import zlib

import numpy as np
import pinocchio as pin
import pytest
from conftest import BUNDLED_ROBOTS, random_state, robot, zero_momentum

from freeflyer_control.model import scaled_base
from freeflyer_control.physics.actuators import Actuation, mode_support
from freeflyer_control.physics.dynamics import mass_matrix
from freeflyer_control.physics.gjm import actuated_velocities, frame_jacobian, generalized_jacobian
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.momentum import conserved_momentum
from freeflyer_control.physics.plant import Plant
from freeflyer_control.physics.reduced import reduced_dynamics
from freeflyer_control.physics.state import State, base_twist_world


class ModeDriver:
    """Constant random commands through the actuators a mode allows.

    floating: arm torques only. rotation-floating: + wheel torques. rotation-flying: + a pure
    base torque (a thruster couple). translation-flying: + a base force through the base
    origin, computed every step from the reduced dynamics so that the base origin stays still
    (the mode's stated assumption for conserving L_B). flying: + any base wrench.
    """

    def __init__(self, ff, mode: Mode, rng: np.random.Generator, dt: float):
        self.ff, self.mode, self.data, self.dt = ff, mode, ff.create_data(), dt
        # Torques sized by each joint's own inertia: accelerations of ~0.5 rad/s^2, so the
        # 0.3 s runs stay in the regime of a real maneuver (rates ~1 rad/s).
        inertia = np.diag(mass_matrix(ff, self.data, pin.neutral(ff.model)))
        self.arm = rng.uniform(-0.5, 0.5, len(ff.arm_joint_names)) * inertia[ff.arm_v_indices]
        n_w = len(ff.wheel_joint_names)
        self.wheels = np.zeros(n_w)
        if mode is Mode.ROTATION_FLOATING:
            self.wheels = rng.uniform(-5.0, 5.0, n_w) * inertia[ff.wheel_v_indices]
        lin = 2 if ff.base == "planar" else 3
        wrench = np.zeros(ff.nb)
        if mode is Mode.ROTATION_FLYING:
            wrench[lin:] = rng.uniform(-0.3, 0.3, ff.nb - lin)
        elif mode is Mode.FLYING:
            wrench = rng.uniform(-0.5, 0.5, ff.nb)
        self.wrench = wrench

    def __call__(self, state: State) -> Actuation:
        wrench = self.wrench
        if self.mode is Mode.TRANSLATION_FLYING:
            wrench = self._hold_base_origin(state)
        return Actuation(self.arm, self.wheels, np.zeros(0), wrench)

    def _hold_base_origin(self, state: State) -> np.ndarray:
        # Reduced coordinates: [base v (world), joints]. Ask for the base acceleration that
        # cancels the base velocity within one held step (dead-beat), so v_B stays O(dt^2)
        # instead of accumulating the zero-order-hold error.
        rd = reduced_dynamics(self.ff, self.data, state, self.mode)
        lin = 2 if self.ff.base == "planar" else 3
        v_world = base_twist_world(self.ff, state)[0][:lin]
        accel = -v_world / self.dt
        tau_j = np.zeros(self.ff.nj)
        tau_j[self.ff.arm_v_indices - self.ff.nb] = self.arm
        qdd = np.linalg.solve(rd.H[lin:, lin:], tau_j - rd.C[lin:] - rd.H[lin:, :lin] @ accel)
        force = rd.H[:lin, :lin] @ accel + rd.H[:lin, lin:] @ qdd + rd.C[:lin]
        return np.concatenate([force, np.zeros(self.ff.nb - lin)])


def _pose(ff, data, q, frame, point):
    fid = ff.frame_id(frame)
    pin.framesForwardKinematics(ff.model, data, q)
    M = data.oMf[fid]
    return M.translation + M.rotation @ point, M.rotation.copy()


def finite_difference_twist(ff, state, driver, frame, point, h=1e-5, make_plant=Plant):
    """Twist [v; w] (world axes) of a point from the motion of the plant ``make_plant(ff,
    state, h)`` builds (the Python one by default), one-sided second order:
    x'(0) = (-3 x0 + 4 x(h) - x(2h)) / 2h, error O(h^2)."""
    data = ff.create_data()
    plant = make_plant(ff, state, h)
    act = driver(state)  # held over both sub-steps, as the plant's zero-order hold does
    poses = [_pose(ff, data, state.q, frame, point)]
    for _ in range(2):
        plant.step(act)
        poses.append(_pose(ff, data, plant.state.q, frame, point))
    (p0, R0), (p1, R1), (p2, R2) = poses
    v = (-3 * p0 + 4 * p1 - p2) / (2 * h)
    phi1, phi2 = pin.log3(R0.T @ R1), pin.log3(R0.T @ R2)
    w = R0 @ ((4 * phi1 - phi2) / (2 * h))
    return np.concatenate([v, w])


def _frames_to_check(ff):
    """Every end-effector, and a point off the axis of an inner arm link."""
    frames = [(ee, np.zeros(3)) for ee in ff.end_effectors]
    inner = ff.model.frames[ff.model.getFrameId(ff.arm_joint_names[1])].name
    link = ff.model.frames[int(ff.model.getFrameId(inner)) + 1].name  # the joint's child body
    frames.append((link, np.array([0.05, -0.03, 0.02 if ff.base == "spatial" else 0.0])))
    return frames


@pytest.mark.parametrize("mode", list(Mode), ids=lambda m: m.value)
@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_gjm_predicts_plant_twist_under_each_modes_actuators(name, mode):
    ff = robot(name)
    assert mode_support(ff, mode) is None, "every bundled robot can fly every mode"
    rng = np.random.default_rng(zlib.crc32(f"{name}/{mode.value}".encode()))
    state = random_state(ff, rng)
    if mode is Mode.TRANSLATION_FLYING:
        # The mode's assumption: the thrusters hold the base origin still (v_B = 0).
        state.v[: (2 if ff.base == "planar" else 3)] = 0.0
    data = ff.create_data()
    conserved0 = conserved_momentum(ff, data, state, mode)
    dt = 1e-3
    driver = ModeDriver(ff, mode, rng, dt)
    plant = Plant(ff, state, dt)
    checked = 0
    for step in range(301):
        if step % 100 == 0:
            s = plant.state
            for frame, point in _frames_to_check(ff):
                G = generalized_jacobian(ff, data, s, mode, frame, point=point, conserved=conserved0)
                predicted = G.twist(actuated_velocities(ff, s, mode))
                observed = finite_difference_twist(ff, s, driver, frame, point)
                if ff.base == "planar":
                    observed = observed[[0, 1, 5]]
                # 1e-6 relative (the bound); finite differences with h = 1e-5 are
                # good to ~1e-9 relative, the RK4 plant's momentum to ~1e-9 over 0.3 s, and the
                # dead-beat hold of translation-flying leaves |v_B| ~ 1e-7 m/s.
                err = np.linalg.norm(predicted - observed)
                assert err <= 1e-6 * np.linalg.norm(observed), (
                    f"{name} {mode.value} {frame} t={plant.t:.3f}: GJM {predicted} vs plant {observed}"
                )
                checked += 1
        plant.step(driver(plant.state))
    assert checked == 4 * len(_frames_to_check(ff))


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_floating_gjm_has_no_drift_at_zero_momentum_and_drift_predicts_nonzero(name):
    ff = robot(name)
    rng = np.random.default_rng(7)
    data = ff.create_data()
    moving = random_state(ff, rng)
    still = zero_momentum(ff, moving)
    for wheel in ff.wheel_v_indices:
        still.v[wheel] = 0.0
    still = zero_momentum(ff, still)
    ee = ff.end_effectors[0]
    G0 = generalized_jacobian(ff, data, still, Mode.FLOATING, ee)
    # Zero momentum and no wheel spin: the twist is J* qdot alone (1e-12: round-off of a
    # 6x6 solve on entries of order 1).
    assert np.abs(G0.drift).max() < 1e-12
    G1 = generalized_jacobian(ff, data, moving, Mode.FLOATING, ee)
    J = frame_jacobian(ff, data, moving.q, ee)
    full = J @ moving.v
    if ff.base == "planar":
        full = full[[0, 1, 5]]
    np.testing.assert_allclose(G1.twist(moving.v[ff.arm_v_indices]), full, atol=1e-12)
    assert np.linalg.norm(G1.drift) > 1e-3, "a moving base must show up as drift"


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_gjm_tends_to_fixed_base_jacobian_as_base_grows_heavy(name):
    ff = robot(name)
    rng = np.random.default_rng(3)
    state = random_state(ff, rng)
    ee = ff.end_effectors[0]
    fixed = frame_jacobian(ff, ff.create_data(), state.q, ee)[:, ff.arm_v_indices]
    if ff.base == "planar":
        fixed = fixed[[0, 1, 5]]
    errors = []
    for factor in (1e3, 1e6):
        heavy = scaled_base(ff, factor)
        G = generalized_jacobian(heavy, heavy.create_data(), state, Mode.FLOATING, ee)
        errors.append(np.linalg.norm(G.matrix - fixed) / np.linalg.norm(fixed))
    # The base's reaction scales like 1/factor: a thousand times heavier, a thousand times
    # closer (allow a factor 2 for the second-order terms), and 1e6 leaves < 1e-5.
    assert errors[1] < 1e-5
    assert errors[1] < errors[0] / 500
