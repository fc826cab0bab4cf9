"""`TrackingEnv`: a single-env `gymnasium.Env` view of `TrackingVecEnv` (num_envs=1)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from gym_motion.envs.tracking import ACTION_BOUND, TrackingVecEnv

__all__ = ["ACTION_BOUND", "TrackingEnv"]


class TrackingEnv(gym.Env):
    """One G1 tracking env for `gymnasium.make`, tools that want a `gymnasium.Env`, and viewers.

    Takes the keyword arguments of `TrackingVecEnv` (except num_envs and autoreset_mode).
    Observations are the single-env slices; info values are the env's scalars; the action
    space is the vector env's single action space.
    """

    metadata = {"render_modes": []}

    def __init__(self, **kwargs: Any):
        kwargs.pop("num_envs", None)
        kwargs.pop("autoreset_mode", None)
        self.vec = TrackingVecEnv(num_envs=1, autoreset_mode=AutoresetMode.DISABLED, **kwargs)
        self.observation_space = self.vec.single_observation_space
        self.action_space = self.vec.single_action_space
        self.render_mode = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        obs, info = self.vec.reset(seed=seed, options=options)
        return _first(obs), _scalars(info)

    def step(self, action):
        action = np.asarray(action, dtype=np.float32).reshape(1, -1)
        obs, reward, terminated, truncated, info = self.vec.step(action)
        return (
            _first(obs),
            float(reward[0]),
            bool(terminated[0]),
            bool(truncated[0]),
            _scalars(info),
        )

    def close(self) -> None:
        self.vec.close()


def _first(obs):
    return {k: v[0] for k, v in obs.items()} if isinstance(obs, dict) else obs[0]


def _scalars(info: dict) -> dict:
    return {k: v[0].item() for k, v in info.items() if not k.startswith("_") and v[0] is not None}
