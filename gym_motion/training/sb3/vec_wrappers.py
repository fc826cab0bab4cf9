"""SB3 ``VecEnv`` pieces for rollouts collected elsewhere (`gym_motion.training.sb3.sampled`):

- `ObsMoments`: records the moments of the raw observations a ``VecEnv`` steps through, to be
  combined into a ``VecNormalize`` in another process::

      venv = VecNormalize(ObsMoments(SB3VecEnv(env)), training=False)  # frozen statistics
      venv.venv.restart(); ...step...; mean, var, count = venv.venv.moments()["policy"]

- `SpacesVecEnv`: a ``VecEnv`` with spaces and an env count but no envs, for a model that
  learns from rollouts it does not collect.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvStepReturn

__all__ = ["ObsMoments", "SpacesVecEnv", "running_mean_std"]

Moments = tuple[np.ndarray, np.ndarray, float]


class ObsMoments(VecEnvWrapper):
    """Keeps the mean, variance and count of the raw observations of `reset` and of every
    step since `restart` (what ``VecNormalize`` adds to its statistics while training), per
    group for dict observations; the observations pass through unchanged.

    Args:
        venv: the ``VecEnv`` whose observations are recorded.
    """

    def __init__(self, venv: VecEnv):
        super().__init__(venv)
        self.restart()

    def restart(self) -> None:
        """Forget the observations recorded so far."""
        space = self.observation_space
        if isinstance(space, gym.spaces.Dict):
            self.rms: Any = {k: RunningMeanStd(epsilon=0.0, shape=s.shape)
                             for k, s in space.spaces.items()}  # fmt: skip
        else:
            self.rms = RunningMeanStd(epsilon=0.0, shape=space.shape)

    def moments(self) -> Moments | dict[str, Moments]:
        """``(mean, var, count)`` of the observations since `restart` (float64 arrays of the
        observation's shape; per group for dict observations)."""
        if isinstance(self.rms, dict):
            return {k: (r.mean, r.var, r.count) for k, r in self.rms.items()}
        return (self.rms.mean, self.rms.var, self.rms.count)

    def _update(self, obs: Any) -> None:
        if isinstance(self.rms, dict):
            for key, rms in self.rms.items():
                rms.update(obs[key])
        else:
            self.rms.update(obs)

    def reset(self) -> Any:
        obs = self.venv.reset()
        self._update(obs)
        return obs

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        self._update(obs)
        return obs, rewards, dones, infos


def running_mean_std(moments: Moments) -> RunningMeanStd:
    """A ``RunningMeanStd`` holding `moments` (``RunningMeanStd.combine`` takes it)."""
    mean, var, count = moments
    rms = RunningMeanStd(epsilon=0.0, shape=np.shape(mean))
    rms.mean, rms.var, rms.count = np.asarray(mean), np.asarray(var), float(count)
    return rms


class SpacesVecEnv(VecEnv):
    """A ``VecEnv`` of `num_envs` envs with these spaces and no envs behind them: what an SB3
    model is built on when other processes collect its rollouts.

    Raises:
        RuntimeError: `reset` or `step_async`/`step_wait` (nothing here can step).
    """

    def __init__(self, num_envs: int, observation_space: gym.Space, action_space: gym.Space):
        super().__init__(num_envs, observation_space, action_space)

    def reset(self) -> Any:
        raise RuntimeError("SpacesVecEnv has no envs to reset: its rollouts come from elsewhere")

    def step_async(self, actions: np.ndarray) -> None:
        raise RuntimeError("SpacesVecEnv has no envs to step: its rollouts come from elsewhere")

    def step_wait(self) -> VecEnvStepReturn:
        raise RuntimeError("SpacesVecEnv has no envs to step: its rollouts come from elsewhere")

    def close(self) -> None:
        pass

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [None for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        pass

    def env_method(self, method_name: str, *args, indices: VecEnvIndices = None, **kwargs):
        return [None for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class, indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]
