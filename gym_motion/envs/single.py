"""`TrackingEnv`: a single-env `gymnasium.Env` view of `TrackingVecEnv` (num_envs=1)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from gym_motion.envs.time_limit import spec_with_time_limit
from gym_motion.envs.tracking import ACTION_BOUND, TrackingVecEnv
from gym_motion.render import RENDER_MODES

__all__ = ["ACTION_BOUND", "TrackingEnv"]


class TrackingEnv(gym.Env):
    """One G1 tracking env for `gymnasium.make`, tools that want a `gymnasium.Env`, and viewers.

    Takes the keyword arguments of `TrackingVecEnv` (num_envs and render_envs only as 1; not
    autoreset_mode, a vector-env setting: ValueError saying where it goes). Observations are
    the single-env slices; info values are the env's scalars; the action space is the vector
    env's single action space. With ``render_mode="rgb_array"``,
    `render` returns one (H, W, 3) uint8 frame: the robot and its reference ghost
    (`gym_motion.render`; ``render_cfg`` sets size, camera and colours).

    The env owns its time limit (``max_episode_steps``, the episode results come with the
    truncation); ``gymnasium.make(id, max_episode_steps=K)`` sets it to K. Once an episode has
    ended, `step` raises ``gymnasium.error.ResetNeeded`` until `reset` is called. `close`
    releases the simulation and the renderer; a later `reset` builds them again, as Gymnasium's
    MuJoCo envs go on after `close` (SB3's ``check_env`` renders, closes, then steps).
    """

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 50}
    _spec: gym.envs.registration.EnvSpec | None = None  # see the `spec` property

    def __init__(self, **kwargs: Any):
        if kwargs.pop("autoreset_mode", None) is not None:
            raise ValueError(
                "autoreset_mode is a setting of the vector env, not of one env: with "
                "gymnasium.make_vec(..., vectorization_mode='sync' or 'async') pass "
                "vector_kwargs={'autoreset_mode': gymnasium.vector.AutoresetMode.SAME_STEP} "
                "(or NEXT_STEP / DISABLED); with vectorization_mode='vector_entry_point' pass "
                "autoreset_mode=... itself"
            )
        for name in ("num_envs", "render_envs"):
            value = kwargs.pop(name, 1)
            if value != 1:
                raise ValueError(
                    f"TrackingEnv is one env: {name} must be 1, got {value!r}; use "
                    "TrackingVecEnv or gymnasium.make_vec for several"
                )
        self._kwargs = kwargs
        self.vec = TrackingVecEnv(num_envs=1, autoreset_mode=AutoresetMode.DISABLED, **kwargs)
        self.observation_space = self.vec.single_observation_space
        self.action_space = self.vec.single_action_space
        self.render_mode = self.vec.render_mode
        self.metadata = {**self.metadata, "render_fps": self.vec.metadata["render_fps"]}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if self.vec.closed:  # built again from the same arguments, its time limit kept
            steps = self.vec.max_episode_steps
            self.vec = TrackingVecEnv(num_envs=1, autoreset_mode=AutoresetMode.DISABLED,
                                      **self._kwargs)  # fmt: skip
            self.vec.max_episode_steps = steps
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

    @property
    def max_episode_steps(self) -> int:
        """Time limit, control steps (the vector env's)."""
        return self.vec.max_episode_steps

    @max_episode_steps.setter
    def max_episode_steps(self, steps: int) -> None:
        self.vec.max_episode_steps = int(steps)

    @property
    def spec(self) -> gym.envs.registration.EnvSpec | None:
        """The `EnvSpec` that ``gymnasium.make`` set (None when built directly), its
        ``max_episode_steps`` always the env's own time limit."""
        self._spec = spec_with_time_limit(self._spec, self.max_episode_steps)
        return self._spec

    @spec.setter
    def spec(self, spec: gym.envs.registration.EnvSpec | None) -> None:
        self._spec = spec

    def render(self) -> np.ndarray | None:
        """The env's frame, (H, W, 3) uint8, or None without a render mode (see
        `TrackingVecEnv.render`)."""
        frames = self.vec.render()
        return None if frames is None else frames[0]

    def close(self) -> None:
        """Release the simulation and the renderer (idempotent); `reset` builds them again."""
        self.vec.close()


def _first(obs):
    return {k: v[0] for k, v in obs.items()} if isinstance(obs, dict) else obs[0]


def _scalars(info: dict) -> dict:
    return {k: v[0].item() for k, v in info.items() if not k.startswith("_") and v[0] is not None}
