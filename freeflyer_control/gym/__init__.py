"""Gymnasium environments on the package's verified physics (optional extra ``gym``).

Importing this package registers:

* ``freeflyer/Reach-v0``: the end-effector to a target, base attitude disturbance penalised
  (:class:`~freeflyer_control.gym.envs.ReachEnv`);
* ``freeflyer/StationKeep-v0``: hold the end-effector while the base is pushed
  (:class:`~freeflyer_control.gym.envs.StationKeepEnv`).

::

    import gymnasium as gym
    import freeflyer_control.gym  # noqa: F401  (registers the environments)

    env = gym.make("freeflyer/Reach-v0", robot="planar_4link", mode="floating")
    obs, info = env.reset(seed=0)

Spaces, units, rewards and the action's path through the actuators: docs/gym.md.
"""

from __future__ import annotations

try:
    import gymnasium
except ImportError:  # pragma: no cover - exercised where gymnasium is absent
    raise ImportError("freeflyer_control.gym needs gymnasium: pip install 'freeflyer_control[gym]'") from None

from freeflyer_control.gym.envs import FreeFlyerEnv, ReachEnv, StationKeepEnv

ENVIRONMENTS = {"freeflyer/Reach-v0": "freeflyer_control.gym.envs:ReachEnv",
                "freeflyer/StationKeep-v0": "freeflyer_control.gym.envs:StationKeepEnv"}
MAX_EPISODE_STEPS = 200  # 4 s at the default 50 Hz

for _id, _entry in ENVIRONMENTS.items():
    if _id not in gymnasium.registry:
        gymnasium.register(_id, entry_point=_entry, max_episode_steps=MAX_EPISODE_STEPS)

__all__ = ["ENVIRONMENTS", "FreeFlyerEnv", "ReachEnv", "StationKeepEnv"]
