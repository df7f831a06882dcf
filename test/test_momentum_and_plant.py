"""The plant conserves what physics conserves, and its accelerations are the dynamics'."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import BUNDLED_ROBOTS, random_state, robot, zero_momentum

from freeflyer_control.physics.actuators import Actuation
from freeflyer_control.physics.dynamics import inverse_dynamics, kinetic_energy, mass_matrix
from freeflyer_control.physics.momentum import centroidal_momentum, system_com
from freeflyer_control.physics.plant import Plant
from freeflyer_control.physics.state import joint_positions


class RandomJointTorques:
    """Piecewise-constant random arm torques (new every ``period`` s), plus a weak PD pull
    toward zero so that 100 s of them keep the arm in range, as a maneuver would."""

    def __init__(self, ff, rng, period=1.0):
        self.ff, self.rng, self.period = ff, rng, period
        inertia = np.diag(mass_matrix(ff, ff.create_data(), pin.neutral(ff.model)))
        self.scale = inertia[ff.arm_v_indices]
        self.next_change = 0.0
        self.torque = np.zeros(len(ff.arm_joint_names))

    def __call__(self, t, state):
        if t >= self.next_change:
            self.torque = self.scale * self.rng.uniform(-0.3, 0.3, self.torque.size)
            self.next_change += self.period
        arm = self.ff.arm_v_indices
        angles = joint_positions(self.ff, state.q)[arm - self.ff.nb]
        return Actuation(self.torque - self.scale * (0.5 * angles + state.v[arm]))


def run_random_torques(ff, state, duration, dt, seed=0, every=50):
    """Yield the state every ``every`` steps of ``duration`` seconds of random torques."""
    plant = Plant(ff, state, dt)
    torques = RandomJointTorques(ff, np.random.default_rng(seed))
    for k in range(int(round(duration / dt))):
        plant.step(torques(plant.t, plant.state))
        if k % every == 0:
            yield plant.t, plant.state


@pytest.mark.slow
@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
def test_floating_momentum_and_com_hold_over_100s_of_random_torques(name):
    ff = robot(name)
    data = ff.create_data()
    state = zero_momentum(ff, random_state(ff, np.random.default_rng(1), joint_rate=0.2))
    h0 = centroidal_momentum(ff, data, state)
    c0 = system_com(ff, data, state.q)
    # Zero momentum to start with (1e-12 absolute: the bound from zero).
    assert np.abs(h0).max() < 1e-12
    worst_h = worst_c = 0.0
    moved = 0.0
    for _, s in run_random_torques(ff, state, duration=100.0, dt=2e-3):
        worst_h = max(worst_h, np.abs(centroidal_momentum(ff, data, s) - h0).max())
        worst_c = max(worst_c, np.linalg.norm(system_com(ff, data, s.q) - c0))
        moved = max(moved, np.abs(joint_positions(ff, s.q)).max())
    assert moved > 0.3, "the arm must actually move for the test to mean anything"
    assert worst_h < 1e-12, f"momentum drifted by {worst_h:.3g}"
    assert worst_c < 1e-9, f"system CoM moved by {worst_c:.3g} m"


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_nonzero_momentum_moves_com_at_p_over_m_and_keeps_l(name):
    ff = robot(name)
    data = ff.create_data()
    state = random_state(ff, np.random.default_rng(2))
    h0 = centroidal_momentum(ff, data, state)
    c0 = system_com(ff, data, state.q)
    assert np.linalg.norm(h0[:3]) > 1e-2
    for t, s in run_random_torques(ff, state, duration=5.0, dt=2e-3, every=250):
        h = centroidal_momentum(ff, data, s)
        # Relative 1e-9 (the bound); momentum projection keeps it at round-off.
        np.testing.assert_allclose(h, h0, rtol=0, atol=1e-9 * np.linalg.norm(h0))
        expected = c0 + h0[:3] / ff.total_mass * t
        assert np.linalg.norm(system_com(ff, data, s.q) - expected) < 1e-9 * max(1.0, np.linalg.norm(expected))


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_kinetic_energy_constant_without_torques_at_fast_rates(name):
    ff = robot(name)
    data = ff.create_data()
    state = random_state(ff, np.random.default_rng(3), joint_rate=2.0, base_speed=0.5, base_rate=1.0)
    plant = Plant(ff, state, 1e-3)
    e0 = kinetic_energy(ff, data, state.q, state.v)
    worst = 0.0
    for _ in range(2000):
        plant.step()
        worst = max(worst, abs(kinetic_energy(ff, data, plant.state.q, plant.state.v) - e0))
    # RK4 at 1 ms with rates of ~2 rad/s: local error ~ (w dt)^5 ~ 3e-14 per step; 2000 steps
    # stay well inside 1e-9 relative. A wrong velocity term would show up at ~1e-3.
    assert worst < 1e-9 * e0, f"energy drifted by {worst / e0:.3g} relative"


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_plant_accelerations_satisfy_inverse_dynamics(name):
    ff = robot(name)
    data = ff.create_data()
    rng = np.random.default_rng(4)
    for _ in range(20):
        state = random_state(ff, rng, joint_rate=2.0, base_speed=0.5, base_rate=1.0)
        tau = rng.normal(size=ff.model.nv)
        plant = Plant(ff, state, 1e-3)
        a = plant.acceleration(state.q, state.v, tau)
        residual = inverse_dynamics(ff, data, state.q, state.v, a) - tau
        # ABA and RNEA are separate algorithms; 1e-9 is the bound (round-off ~1e-13).
        assert np.abs(residual).max() < 1e-9


def test_rkmk4_converges_at_fourth_order():
    ff = robot("spatial_6link")
    state = random_state(ff, np.random.default_rng(5), joint_rate=1.0, base_rate=1.0)

    def end(dt):
        plant = Plant(ff, state, dt)
        plant.run(1.0)
        return plant.state

    ref = end(1e-4)
    errors = []
    for dt in (0.02, 0.01):
        s = end(dt)
        errors.append(np.linalg.norm(pin.difference(ff.model, ref.q, s.q)) + np.linalg.norm(s.v - ref.v))
    # Halving the step divides a fourth-order method's error by 16; a method that forgot the
    # dexp^-1 correction on the base would divide it by 4 (second order).
    assert errors[0] / errors[1] > 12


def test_plant_rejects_bad_step_and_bad_commands():
    ff = robot("planar_4link")
    with pytest.raises(ValueError, match="dt"):
        Plant(ff, random_state(ff, np.random.default_rng(0)), 0.0)
    plant = Plant(ff, random_state(ff, np.random.default_rng(0)), 1e-3)
    with pytest.raises(ValueError, match="NaN"):
        plant.step(Actuation(np.array([np.nan, 0, 0, 0])))
    with pytest.raises(ValueError, match="4 entries"):
        plant.step(Actuation(np.zeros(3)))
