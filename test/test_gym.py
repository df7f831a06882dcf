"""The Gymnasium environments (freeflyer_control.gym): the API checker's contract, seeded
reproducibility, and the action's path through the package's limits and allocation."""

from __future__ import annotations

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install 'freeflyer_control[gym]')")

import freeflyer_control.gym as fgym  # noqa: E402  (registers the environments)
from gymnasium.utils.env_checker import check_env  # noqa: E402


@pytest.mark.parametrize("env_id", sorted(fgym.ENVIRONMENTS))
def test_the_environments_pass_gymnasiums_checker(env_id):
    check_env(gym.make(env_id).unwrapped, skip_render_check=True)


@pytest.mark.parametrize("env_id, kw", [("freeflyer/Reach-v0", {}),
                                        ("freeflyer/StationKeep-v0", {"robot": "spatial_6link"})])
def test_a_seed_gives_the_same_episode_bit_for_bit(env_id, kw):
    def episode(seed):
        env = gym.make(env_id, **kw)
        obs, _ = env.reset(seed=seed)
        env.action_space.seed(seed)
        out = [obs]
        for _ in range(20):
            obs, reward, *_ = env.step(0.3 * env.action_space.sample())
            out += [obs, np.array([reward])]
        return np.concatenate(out)
    a, b, c = episode(7), episode(7), episode(8)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_a_full_action_is_the_actuator_limit_and_goes_through_the_allocation():
    """Reach in flying mode: action +1 on every entry asks each arm joint for its effort limit
    and the base for its force and torque bounds; the loop allocates that wrench to the
    thrusters (each within [0, max]), as it does for any law's effort."""
    env = fgym.ReachEnv("planar_4link", "flying")
    env.reset(seed=0)
    ff = env.ff
    effort = env._effort(np.ones(env.action_space.shape))
    np.testing.assert_array_equal(effort.arm_torques, ff.arm_effort_limits)
    env.law.command = effort
    actuation, info = env.loop.tick(0.0, env.plant.state, env.dt)
    assert info.fault is None
    assert np.all(actuation.thruster_forces >= 0) and np.all(actuation.thruster_forces <= ff.thruster_max_forces + 1e-12)
    assert actuation.thruster_forces.any() and not actuation.base_wrench_world.any()
    # Floating mode has no base actuators: the action is the arm torques alone.
    assert fgym.ReachEnv("planar_4link", "floating").action_space.shape == (len(ff.arm_joint_names),)


def test_reach_rewards_closing_in_on_the_goal_and_ends_there():
    env = fgym.ReachEnv("planar_4link", "floating", tolerance=1e9)  # every state is "there"
    env.reset(seed=1)
    _, reward, terminated, truncated, info = env.step(np.zeros(env.action_space.shape))
    assert terminated and not truncated
    assert reward == pytest.approx(-info["distance_m"] - info["base_attitude_change_rad"], abs=1e-12)


def test_station_keeping_pushes_the_base():
    env = fgym.StationKeepEnv("planar_4link", "flying", push_force=5.0)
    env.reset(seed=2)
    for _ in range(int(env.horizon / env.dt)):
        _, _, _, _, info = env.step(np.zeros(env.action_space.shape))
    # Unanswered pushes move the end-effector away from where it started.
    assert info["distance_m"] > 1e-3
