"""`SkrlVecEnv`: skrl's torch environment interface over one batched `TrackingVecEnv`.

skrl's trainers (``SequentialTrainer``, ``ParallelTrainer``) step an env wrapper that takes and
returns torch tensors on one device: observations (N, D), rewards, terminated and truncated
(N, 1), the info dict, and, for an asymmetric critic, ``state()`` (N, S). skrl's own gymnasium
wrapper makes them from the NumPy results; this one also takes them where the env's device MDP
left them (``BackendCfg(mdp="device")``, `TrackingVecEnv.device_arrays`), so that on a GPU the
observations never pass through host memory (the reward and flags are the device's too; the
env also copies those to the host, for its own bookkeeping and the info)::

    from skrl.trainers.torch import SequentialTrainer
    from gym_motion.adapters.skrl import SkrlVecEnv
    from gym_motion.envs import TrackingVecEnv

    env = SkrlVecEnv(TrackingVecEnv(4096, autoreset_mode="same_step", cfg=cfg), device="cuda:0")
    SequentialTrainer(env=env, agents=agent, cfg={"timesteps": 10_000, "headless": True}).train()

(`cfg` a `TrackingEnvCfg` with ``backend=BackendCfg("mjwarp", device="cuda:0", mdp="device")``.)
``info["episode"]`` carries the step's tracking statistics as `SkrlInfo` puts them.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from skrl.envs.wrappers.torch.base import Wrapper

from gym_motion.adapters import tracking_vec_env
from gym_motion.adapters.skrl.info import SkrlInfo, step_statistics
from gym_motion.adapters.torch_device import device_tensors, shares_mdp_device
from gym_motion.envs.stats import TrackingStats, tracking_terms

__all__ = ["SkrlVecEnv"]


class SkrlVecEnv(Wrapper):
    """skrl's torch ``Wrapper`` over a `TrackingVecEnv` in SAME_STEP autoreset mode.

    Args:
        env: a `gym_motion.envs.TrackingVecEnv` (or a gymnasium vector wrapper around one)
            created with ``autoreset_mode="same_step"`` (skrl steps on with the returned
            observation, which must be the next episode's first for an env that ended);
            ``obs_mode="dict"`` gives `state` the privileged critic group.
        device: torch device of everything `step`, `reset` and `state` return. With the env's
            device MDP on that device (and `env` not wrapped) they are device-to-device clones
            of `TrackingVecEnv.device_arrays`; else copies of the env's NumPy results.
        key: the info key of the step's statistics (skrl's ``environment_info`` setting).

    Attributes:
        observation_space: the ``policy`` group's single-env Box (D,) (160 for the default
            task); state_space: the ``critic`` group's (S,) Box (286) in dict mode, else None.
        num_envs: N. device: the torch device.

    `step` takes actions (N, A) float (any device) and returns ``(obs, reward, terminated,
    truncated, info)``: obs (N, D) float32, reward (N, 1) float32, terminated and truncated
    (N, 1) bool, all on `device` and the wrapper's own (the env overwrites its arrays on the next
    step, and skrl adds bootstrapped values into the reward in place); info the env's batched
    NumPy info plus ``info[key]``, the step's `TrackingStats` means as 1-element float32
    tensors (`SkrlInfo`). `render` returns the env's frames with a render mode, else None
    (skrl's trainers call it every step unless ``headless``).

    Seeding: the env resets with its own seed (``TrackingVecEnv(..., seed=)``), not skrl's
    ``set_seed`` key, which skrl's gymnasium wrapper passes. Time-outs: skrl bootstraps a
    truncated env from the value of the observation returned, which in SAME_STEP mode is the
    next episode's first (the episode's last is in ``info["final_obs"]``), as under skrl's own
    wrapper: an approximation at time-outs.

    Raises:
        ValueError: `env` is not a vector env, not in SAME_STEP mode, not (a wrapper around) a
            `TrackingVecEnv`, or wrapped in one that writes info[key] (gymnasium's
            ``RecordEpisodeStatistics`` and `SkrlInfo` write "episode"); at `step`, actions
            of the wrong shape or non-finite (the env names the rows), or the env's info
            already holds `key`.
        RuntimeError: `reset` or `step` after the env was closed.
    """

    def __init__(self, env: gym.vector.VectorEnv, device: str | torch.device = "cpu",
                 key: str = "episode"):  # fmt: skip
        base = tracking_vec_env(env, "same_step", "SkrlVecEnv",
                                "skrl steps on with the returned observation")  # fmt: skip
        layer = env
        while isinstance(layer, gym.vector.VectorWrapper):  # e.g. RecordEpisodeStatistics
            writes = getattr(layer, "key" if isinstance(layer, SkrlInfo) else "_stats_key", None)
            if writes == key:
                raise ValueError(
                    f"SkrlVecEnv: {type(layer).__name__} writes info[{key!r}], where "
                    "SkrlVecEnv puts skrl's statistics; drop it, or pass key='...' (and set "
                    "skrl's trainer environment_info to it)"
                )
            layer = layer.env
        # skrl's Wrapper.__init__ would resolve a device of its own (a CUDA context on cuda:0
        # where torch sees a GPU); its three attributes are set here instead
        self._env, self._unwrapped = env, base
        self._device = torch.device(device)
        self.key = key
        self._dict = base.obs_mode == "dict"
        space = env.single_observation_space
        self._spaces = {"policy": space["policy"], "critic": space["critic"]} if self._dict else {
            "policy": space}  # fmt: skip
        self._stats = TrackingStats(tracking_terms(base))
        # a wrapper's transforms apply to the NumPy results only: then those are taken
        self._on_device = env is base and shares_mdp_device(base, self._device)
        self._obs: dict[str, torch.Tensor] | None = None
        self._info: dict[str, Any] = {}

    @property
    def observation_space(self) -> gym.Space:
        """The ``policy`` group's single-env space."""
        return self._spaces["policy"]

    @property
    def state_space(self) -> gym.Space | None:
        """The ``critic`` group's single-env space in dict mode, else None."""
        return self._spaces.get("critic")

    @property
    def action_space(self) -> gym.Space:
        """The single-env action space, (A,)."""
        return self._env.single_action_space

    def reset(self) -> tuple[torch.Tensor, dict[str, Any]]:
        """The observations (N, D) and info: the env is reset on the first call only (it resets
        its envs itself as their episodes end; skrl calls `reset` at the start of every
        ``train`` and ``eval``)."""
        if getattr(self._unwrapped, "closed", False):
            raise RuntimeError("SkrlVecEnv: the env is closed")
        if self._obs is None:
            obs, self._info = self._env.reset()
            self._obs = self._tensors(obs)
        return self._obs["policy"], self._info

    def step(
        self, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        """One control step of every env; see the class docstring for what it returns."""
        a = torch.as_tensor(actions).detach()
        n, dev = self.num_envs, self._device
        if self._on_device:  # the actions read where they are, the results left there
            *_, info = self._unwrapped.step_on_device(a.to(dev, torch.float32).contiguous())
            flags = ("reward", "terminated", "truncated")
            arrays = device_tensors(self._unwrapped, (*flags, *self._spaces))
            reward, terminated, truncated = (arrays.pop(k) for k in flags)
            self._obs = arrays
        else:
            obs, reward_np, terminated_np, truncated_np, info = self._env.step(
                a.to("cpu", torch.float32).numpy()
            )
            reward = torch.tensor(reward_np, dtype=torch.float32, device=dev)
            terminated = torch.tensor(terminated_np, device=dev)
            truncated = torch.tensor(truncated_np, device=dev)
            self._obs = self._tensors(obs)
        if self.key in info:
            raise ValueError(f"SkrlVecEnv: the env's info already has {self.key!r}")
        info[self.key] = step_statistics(self._stats, info)
        self._info = info
        return (self._obs["policy"], reward.view(n, 1), terminated.view(n, 1),
                truncated.view(n, 1), info)  # fmt: skip

    def state(self) -> torch.Tensor | None:
        """The critic group (N, S) float32 of the last step or reset, in dict mode; else None."""
        return None if self._obs is None else self._obs.get("critic")

    def render(self, *args: Any, **kwargs: Any) -> Any:
        """The env's frames (`TrackingVecEnv.render`) with a render mode, else None."""
        if getattr(self._unwrapped, "render_mode", None) is None:
            return None
        return self._env.render(*args, **kwargs)

    def close(self) -> None:
        """Close the env."""
        self._env.close()

    def _tensors(self, obs: np.ndarray | dict[str, np.ndarray] | None) -> dict[str, torch.Tensor]:
        """The observation groups on `device`: clones of the env's device arrays when it shares
        the device (`obs` is then not read), else copies of NumPy `obs`."""
        if self._on_device:
            return device_tensors(self._unwrapped, tuple(self._spaces))
        groups = obs if isinstance(obs, dict) else {"policy": obs}
        return {k: torch.tensor(groups[k], dtype=torch.float32, device=self._device)
                for k in self._spaces}  # fmt: skip
