"""The plant's scalar hot paths compute the same quantities as the Pinocchio and matrix forms
they replace."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import BUNDLED_ROBOTS, random_state, robot

from freeflyer_control.physics.actuators import Actuation, generalized_forces, saturate, thruster_matrix
from freeflyer_control.physics.dynamics import mass_matrix
from freeflyer_control.physics.momentum import world_momentum, world_momentum_to_base_rows
from freeflyer_control.physics.reduced import reduced_dynamics

# Each entry is a sum of two or four products of O(1) numbers, formed in another order than
# Pinocchio's: a few ulps.
ROUND_OFF = 1e-14


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_momentum_rows_from_world_momentum_are_the_mass_matrix_base_rows(name):
    ff = robot(name)
    data = ff.create_data()
    rng = np.random.default_rng(3)
    for _ in range(20):
        state = random_state(ff, rng)
        rows = world_momentum_to_base_rows(ff, state.q, world_momentum(ff, data, state))
        expected = mass_matrix(ff, data, state.q)[: ff.nb] @ state.v
        # Momenta of O(1-10) kg m/s through one rotation and one cross product.
        assert np.allclose(rows, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_generalized_forces_place_exactly_the_saturated_commands(name):
    ff = robot(name)
    rng = np.random.default_rng(4)
    state = random_state(ff, rng)
    act = Actuation(
        arm_torques=2.0 * rng.uniform(-1, 1, len(ff.arm_joint_names)) * ff.arm_effort_limits,
        wheel_torques=2.0 * rng.uniform(-1, 1, len(ff.wheel_joint_names)) * ff.wheel_max_torques,
        thruster_forces=2.0 * rng.uniform(-0.5, 1, len(ff.thrusters)) * ff.thruster_max_forces,
    )
    sat = saturate(ff, act, state.v)
    tau = generalized_forces(ff, state.q, act, state.v)
    assert np.array_equal(tau[ff.arm_v_indices], sat.arm_torques)
    assert np.array_equal(tau[ff.wheel_v_indices], sat.wheel_torques)
    expected_base = thruster_matrix(ff) @ sat.thruster_forces if ff.thrusters else np.zeros(ff.nb)
    assert np.array_equal(tau[: ff.nb], expected_base)  # the same single product, bit for bit


@pytest.mark.parametrize("mode", ["flying", "floating", "translation-flying"])
def test_reduced_dynamics_leaves_a_given_mass_matrix_unchanged_and_matches_its_own(mode):
    ff = robot("spatial_6link")
    data = ff.create_data()
    state = random_state(ff, np.random.default_rng(5))
    M = mass_matrix(ff, data, state.q)
    kept = M.copy()
    given = reduced_dynamics(ff, data, state, mode, M=M)
    assert np.array_equal(M, kept)
    own = reduced_dynamics(ff, data, state, mode)
    assert np.array_equal(given.H, own.H) and np.array_equal(given.C, own.C)  # same arithmetic


@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
def test_pinocchio_aba_returns_accelerations_that_its_next_call_leaves_alone(name):
    # The plant keeps the four stage accelerations of a step as ABA returns them, without copies
    # (physics/plant.py): each must be an array of its own, not a view of pin.Data's ddq.
    ff = robot(name)
    data = ff.create_data()
    rng = np.random.default_rng(5)
    first, second = random_state(ff, rng), random_state(ff, rng)
    tau = rng.normal(size=ff.model.nv)
    a = pin.aba(ff.model, data, first.q, first.v, tau)
    kept = a.copy()
    b = pin.aba(ff.model, data, second.q, second.v, tau)
    assert not np.shares_memory(a, b) and not np.shares_memory(a, data.ddq)
    np.testing.assert_array_equal(a, kept)
