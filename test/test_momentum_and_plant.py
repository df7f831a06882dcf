"""The plant conserves what physics conserves, and its accelerations are the dynamics'."""

from __future__ import annotations

import json

import numpy as np
import pinocchio as pin
import pytest
from conftest import BUNDLED_ROBOTS, random_state, robot, zero_momentum

from freeflyer_control.physics.actuators import Actuation
from freeflyer_control.physics.dynamics import inverse_dynamics, kinetic_energy, mass_matrix
from freeflyer_control.physics.momentum import centroidal_momentum, system_com
from freeflyer_control.physics.plant import ENERGY_RTOL, SPEED_BOUND, Plant, PlantDiverged
from freeflyer_control.physics.state import State, joint_positions, make_state


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


def test_the_plant_converges_at_fourth_order():
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
    # Halving the step divides a fourth-order method's error by 16, a second-order one's by 4.
    assert errors[0] / errors[1] > 12


@pytest.mark.parametrize("name", ["spatial_6link", "planar_4link"])
def test_the_base_pose_converges_at_fourth_order_on_a_fast_tumbling_base(name):
    # CF4's exponentials compose in the order that suits body velocities (q' = q v): in the
    # paper's order (written for y' = A(y) y) the base pose is of order 2 only, while the joints,
    # an abelian group, stay of order 4 and hide it from a whole-state error. Measured: base pose
    # error ratio for dt 0.02 -> 0.01 of 17.6 (spatial) and 28 (planar) in the right order, 3.8
    # and 4.0 in the other.
    ff = robot(name)
    state = random_state(ff, np.random.default_rng(7), joint_rate=1.0, base_rate=3.0, base_speed=1.0)

    def end(dt):
        plant = Plant(ff, state, dt)
        plant.run(1.0)
        return plant.state

    ref = end(1e-4)
    errors = [np.linalg.norm(pin.difference(ff.model, ref.q, end(dt).q)[: ff.nb]) for dt in (0.02, 0.01)]
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


# ---------------------------------------------------------------------------------------------
# Divergence: the plant stops, holding its last finite state, and says why.


class UncheckedPlant(Plant):
    """The same integrator with the divergence checks removed: what the plant did before them."""

    def _divergence(self, q, v, work):
        return None


def test_a_large_base_torque_at_10_hz_turns_an_unchecked_plant_into_nan_but_the_plant_stops_finite():
    # The reproducer: ideal base actuation with a large wrench (50 N m about z on the
    # 19.5 kg planar robot) at a 10 Hz plant rate. Given as generalized forces, since an Actuation's
    # ideal wrench is now bounded by the base limits (0.42 N m here).
    ff = robot("planar_4link")
    tau = np.zeros(ff.model.nv)
    tau[2] = 50.0
    unchecked = UncheckedPlant(ff, make_state(ff), 0.1)
    with np.errstate(all="ignore"):
        for _ in range(10):
            unchecked.step(tau=tau)
    assert not np.isfinite(unchecked.state.v).all(), "the reproducer no longer diverges: find another"

    plant = Plant(ff, make_state(ff), 0.1)
    held, t_held = None, None
    with pytest.raises(PlantDiverged) as caught:
        for _ in range(10):
            held, t_held = plant.state.copy(), plant.t
            plant.step(tau=tau)
    assert plant.diverged == caught.value.reason
    assert caught.value.reason.startswith(f"plant diverged at t = {t_held + 0.1:.6g} s: ")
    assert "raise the rate" in caught.value.reason
    # Held: the state before the failed step, finite, and time does not advance.
    np.testing.assert_array_equal(plant.state.q, held.q)
    np.testing.assert_array_equal(plant.state.v, held.v)
    assert plant.t == t_held and np.isfinite(plant.state.v).all()
    # Every later step refuses with the same reason and changes nothing.
    with pytest.raises(PlantDiverged, match="plant diverged at t"):
        plant.step()
    np.testing.assert_array_equal(plant.state.v, held.v)
    # A new state (a reset) starts it again.
    plant.state = make_state(ff)
    assert plant.diverged is None
    plant.step()


def test_arm_torques_at_their_limits_at_10_hz_trip_the_power_balance_at_the_first_step():
    # A controller saturating every arm joint while the plant steps at 10 Hz: RK4 over 0.1 s of
    # the arm whipping gains 0.22 J (10 %) more kinetic energy than the torques put in. Nothing is
    # over a velocity bound yet: only the energy check sees it.
    ff = robot("planar_4link")
    plant = Plant(ff, make_state(ff), 0.1)
    with pytest.raises(PlantDiverged, match=r"kinetic energy went from 0 J to 2\.\d+ J while the applied forces "
                                            r"did 2\.\d+ J of work"):
        plant.step(Actuation(ff.arm_effort_limits))
    assert plant.t == 0.0 and not plant.state.v.any()


def test_a_base_pushed_past_the_speed_bound_is_diverged_even_though_its_energy_is_explained():
    # 1e4 N along base x on 19.5 kg at 1 kHz: 513 m/s^2, exact for RK4 (a constant force), so the
    # power balance holds; the base passes SPEED_BOUND (100 m/s) after ~0.2 s.
    ff = robot("planar_4link")
    tau = np.zeros(ff.model.nv)
    tau[0] = 1e4
    plant = Plant(ff, make_state(ff), 1e-3)
    with pytest.raises(PlantDiverged, match=r"base vx speed 100 m/s is over the divergence bound \(100 m/s\)"):
        for _ in range(1000):
            plant.step(tau=tau)
    assert 0.18 < plant.t < 0.21
    assert np.abs(plant.state.v[0]) <= SPEED_BOUND


def test_forces_that_overflow_the_dynamics_are_reported_as_a_non_finite_state():
    ff = robot("spatial_6link")
    tau = np.zeros(ff.model.nv)
    tau[ff.arm_v_indices[0]] = 1e308  # accelerations overflow to Inf, then Inf - Inf = NaN
    plant = Plant(ff, make_state(ff), 1e-3)
    with np.errstate(all="ignore"), pytest.raises(PlantDiverged, match="NaN or Inf in the state"):
        plant.step(tau=tau)
    assert np.isfinite(plant.state.q).all() and not plant.state.v.any()


def test_a_joint_faster_than_ten_times_its_velocity_limit_names_the_joint_and_the_bound():
    ff = robot("planar_4link")  # wheel velocity limit 600 rad/s: bound 6000 rad/s
    wheel = ff.wheel_v_indices[0]
    v = np.zeros(ff.model.nv)
    v[wheel] = 5990.0
    tau = np.zeros(ff.model.nv)
    tau[wheel] = 50.0  # 100 x the wheel's rating (given raw, past saturation): past the bound at once
    plant = Plant(ff, State(make_state(ff).q, v), 1e-3)
    with pytest.raises(PlantDiverged, match=r"joint 'wheel_z_joint' speed 6\.\d+e\+03 rad/s is over the divergence "
                                            r"bound \(10 x its URDF velocity limit, 6e\+03 rad/s\)"):
        for _ in range(200):
            plant.step(tau=tau)


def test_a_non_finite_state_is_refused_when_assigned():
    ff = robot("planar_4link")
    s = make_state(ff)
    s.v[0] = np.nan
    with pytest.raises(ValueError, match="plant state must be finite"):
        Plant(ff, s, 1e-3)


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_stable_steps_at_20_hz_leave_the_power_balance_far_inside_its_tolerance(name):
    # The tolerance's margin: random states with joint rates up to 1 rad/s (the spatial arms' URDF
    # velocity limit) at 20 Hz run 5 s without a trip, and the unexplained energy of every step,
    # relative to the energy involved, stays under 1e-3, a tenth of ENERGY_RTOL (measured: 2e-4
    # for spatial_7dof, 2e-8 for planar_4link).
    ff = robot(name)
    worst = []

    class Probe(Plant):
        def _divergence(self, q, v, work):
            energy = kinetic_energy(self.ff, ff.create_data(), q, v)
            worst.append((energy - self._energy - work) / (self._energy + energy + abs(work)))
            return super()._divergence(q, v, work)

    plant = Probe(ff, random_state(ff, np.random.default_rng(7), joint_rate=1.0, base_rate=0.5), 0.05)
    for _ in range(100):
        plant.step()
    assert max(worst) < 1e-3 < ENERGY_RTOL


def test_a_lockstep_sim_that_diverges_ends_early_with_one_line_and_exit_status_3(tmp_path, capsys):
    # The end-effector circle at a 1 Hz control (and plant) rate: computed torque over 1 s steps
    # pumps energy into the arm that RK4 cannot follow (36 % unexplained at t = 11 s).
    from freeflyer_control.cli.main import main

    out = tmp_path / "run"
    code = main(["sim", "--maneuver", "ee-circle", "--rate", "1", "--duration", "20", "--out", str(out),
                 "--no-plots"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 3
    assert err[-1].startswith("freeflyer sim: error: plant diverged at t = 11 s: kinetic energy went from ")
    assert err[-1].endswith("raise the rate; the simulation stopped there (exit status 3)")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["plant_diverged"] == err[-1].removeprefix("freeflyer sim: error: ").removesuffix(
        "; the simulation stopped there (exit status 3)")
    t = np.loadtxt(out / "timeseries.csv", delimiter=",", skiprows=1, usecols=0, ndmin=1)
    assert t[-1] <= 10.0 + 1e-9  # nothing after the last step the plant took


def test_a_gentle_maneuver_at_a_low_rate_is_not_taken_for_a_divergence():
    # Wilde's joint maneuver at 2 Hz (125x coarser than the default) is merely inaccurate.
    from freeflyer_control.sim.config import SimConfig
    from freeflyer_control.sim.runner import run_simulation

    result = run_simulation(SimConfig(rate=2.0, duration=30.0), fast=False)
    assert result.summary["plant_diverged"] is None
