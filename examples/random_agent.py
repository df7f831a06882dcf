#!/usr/bin/env python3
"""A reinforcement-learning loop on the Gymnasium environment, with random actions.

Replace ``env.action_space.sample()`` with your policy. ``pip install 'freeflyer_control[gym]'``.

Run: python examples/random_agent.py [--episodes N] [--steps N]
"""

from __future__ import annotations

import argparse

import gymnasium as gym

import freeflyer_control.gym  # noqa: F401  (registers freeflyer/Reach-v0 and freeflyer/StationKeep-v0)


def main(argv=None) -> list[float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=3)
    ap.add_argument("--steps", type=int, default=200, help="at most this many steps an episode")
    args = ap.parse_args(argv)
    env = gym.make("freeflyer/Reach-v0", robot="planar_4link", mode="floating", max_episode_steps=args.steps)
    env.action_space.seed(0)
    returns = []
    for episode in range(args.episodes):
        obs, info = env.reset(seed=episode)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            total += reward
            done = terminated or truncated
        returns.append(total)
        print(f"episode {episode}: return {total:.2f}, final distance {info['distance_m']:.3f} m, "
              f"base turned {info['base_attitude_change_rad']:.3f} rad")
    env.close()
    return returns


if __name__ == "__main__":
    main()
