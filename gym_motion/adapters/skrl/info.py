"""`SkrlInfo`: a `TrackingVecEnv`'s statistics where skrl's trainers look for them.

skrl's ``SequentialTrainer`` (and ``ParallelTrainer``) writes to TensorBoard, every step, each
entry of ``info["episode"]`` that is a torch tensor of one element, under its own name when the
name holds a "/" (its ``environment_info`` setting names the key). The env's info holds per-env
NumPy arrays under namespaced keys and leaves ``episode`` to gymnasium's
`RecordEpisodeStatistics`; this wrapper adds, for skrl, the step's `TrackingStats` means::

    import skrl.envs.wrappers.torch as skrl_wrappers
    from gym_motion.envs import TrackingVecEnv
    from gym_motion.adapters.skrl import SkrlInfo

    env = skrl_wrappers.wrap_env(SkrlInfo(TrackingVecEnv(64, autoreset_mode="same_step")),
                                 wrapper="gymnasium")

Keys (`gym_motion.envs.stats` names): every step ``reward/<term>`` and
``rollout/tracking_reward`` (batch means, before dt) and ``episode/ended`` (episodes that ended
on the step); on steps where episodes ended, their means of ``episode/return``,
``episode/length``, ``episode/reward/<term>``, ``termination/<cause>`` and the tracking errors
``error/mpkpe_mm``, ``error/<name>_<unit>``. skrl averages each key over the steps of a write
interval that carry it, so the episode keys are means over steps with ended episodes, each
step weighted alike (not each episode).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from gymnasium.vector import AutoresetMode

from gym_motion.envs.stats import TrackingStats, tracking_terms

__all__ = ["SkrlInfo", "step_statistics"]


def step_statistics(stats: TrackingStats, info: dict[str, Any]) -> dict[str, torch.Tensor]:
    """One step's `TrackingStats` means of the env's batched `info` (module docstring's keys)
    as 1-element float32 tensors on the CPU; `stats` is reset and fed `info`."""
    stats.reset()
    stats.add(info)
    means = stats.means()
    means["episode/ended"] = means.pop("episode/count", 0.0)
    return {k: torch.tensor([v], dtype=torch.float32) for k, v in means.items()}


class SkrlInfo(gym.vector.VectorWrapper):
    """Adds the step's tracking statistics to ``info[key]`` as 1-element float32 tensors.

    Args:
        env: a `TrackingVecEnv` (or a vector wrapper around one) in SAME_STEP autoreset mode,
            the mode skrl's trainers assume for vectorised envs (they step on with the returned
            observation, which must be the next episode's first for an env that ended).
        key: the info key skrl's trainer reads (its ``environment_info``, "episode" by
            default).

    ``call``, ``get_attr`` and ``set_attr`` are forwarded to `env` (gymnasium's vector
    wrappers do not forward them).

    Raises:
        ValueError: `env` is not in SAME_STEP mode; at `step`, `env`'s info already has `key`
            (e.g. under `RecordEpisodeStatistics`; choose another key and tell skrl's trainer).
    """

    def __init__(self, env: gym.vector.VectorEnv, key: str = "episode"):
        super().__init__(env)
        mode = getattr(env.unwrapped, "autoreset_mode", None)
        if mode is None or AutoresetMode(mode) is not AutoresetMode.SAME_STEP:
            raise ValueError(
                "SkrlInfo needs the env in SAME_STEP autoreset mode (skrl's trainers step on "
                f"with the returned observation), got {mode!r}; create it with "
                "autoreset_mode='same_step'"
            )
        self.key = key
        self._stats = TrackingStats(tracking_terms(env))

    def step(self, actions: Any):
        """Step `env`; its info gains ``info[key]`` (class docstring)."""
        obs, reward, terminated, truncated, info = self.env.step(actions)
        if self.key in info:
            raise ValueError(f"SkrlInfo: the env's info already has {self.key!r}")
        info[self.key] = step_statistics(self._stats, info)
        return obs, reward, terminated, truncated, info

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """`env`'s ``call`` (for a `TrackingVecEnv`: its method, run once)."""
        return self.env.call(name, *args, **kwargs)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """`env`'s ``get_attr``."""
        return self.env.get_attr(name)

    def set_attr(self, name: str, values: Any) -> None:
        """`env`'s ``set_attr``."""
        self.env.set_attr(name, values)

    @property
    def sampling_stats(self) -> dict[str, float]:
        """The env's adaptive-sampling statistics (entropy, top-1 probability)."""
        return dict(getattr(self.env.unwrapped, "sampling_stats", {}))
