"""`TorchRLVecEnv`: a TorchRL ``EnvBase`` over one batched `TrackingVecEnv`.

TorchRL's ``GymWrapper`` makes each step's tensordict from the NumPy results; this env also
takes it where the env's device MDP left it (``BackendCfg(mdp="device")``,
`TrackingVecEnv.device_arrays`), so that on a GPU the observations never pass through host
memory (the reward and flags are the device's too; the env also copies those to the host, for
its own bookkeeping and the info, which comes up to the device in one copy)::

    from torchrl.collectors import Collector
    from gym_motion.adapters.torchrl import TorchRLVecEnv
    from gym_motion.envs import TrackingVecEnv

    env = TorchRLVecEnv(TrackingVecEnv(4096, cfg=cfg, autoreset_mode="disabled",
                                       action_bound=1.0), device="cuda:0")
    collector = Collector(env, actor, frames_per_batch=4096 * 24, total_frames=10**8)

(`cfg` a `TrackingEnvCfg` with ``backend=BackendCfg("mjwarp", device="cuda:0", mdp="device")``.)
Its keys are `GymWrapper`'s with `tracking_info_reader`'s, so `tracking_means` reads a
collected batch of either: ``observation`` (or the groups ``policy`` and ``critic`` with
``obs_mode="dict"``), ``reward``, ``done``, ``terminated``, ``truncated``, and every
`info_keys` entry (the per-term rewards and ``final/*`` episode results, (N,) each).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Bounded, Categorical, Composite, Unbounded
from torchrl.envs import EnvBase

from gym_motion.adapters import tracking_vec_env
from gym_motion.adapters.torch_device import device_tensors, shares_mdp_device
from gym_motion.adapters.torchrl.info import info_keys

__all__ = ["TorchRLVecEnv"]

_FLAGS = ("done", "terminated", "truncated")


class TorchRLVecEnv(EnvBase):
    """TorchRL's ``EnvBase`` over a `TrackingVecEnv` in DISABLED autoreset mode.

    Args:
        env: a `gym_motion.envs.TrackingVecEnv` (or a gymnasium vector wrapper around one)
            created with ``autoreset_mode="disabled"`` (TorchRL resets ended envs itself, with
            a ``"_reset"`` mask: ``reset(options={"reset_mask": ...})``). `close` closes it;
            the adapter's collection does not.
        device: torch device of every tensor of the tensordicts. With the env's device MDP on
            that device (and `env` not wrapped) observations, reward and flags are
            device-to-device clones of `TrackingVecEnv.device_arrays`, and the info keys come
            up in one copy; else everything is a copy of the env's NumPy results.

    Batch size (N,). Specs: ``observation`` (N, D) float32 (``policy`` (N, 160) and ``critic``
    (N, 286) in dict mode) and each `info_keys` entry (N,) with its dtype; ``action`` (N, A)
    float32 bounded by the env's action space (unbounded where it is infinite); ``reward``
    (N, 1) float32; ``done``, ``terminated``, ``truncated`` (N, 1) bool. Per-step info keys
    missing from a step (the ``final/*`` results when no episode ended) are zeros; where an
    episode did not end they hold the env's values, ``("next", "done")`` being the mask.

    Raises:
        ValueError: `env` is not a vector env, not in DISABLED mode, or not (a wrapper around)
            a `TrackingVecEnv`; at a step, actions the env refuses (it names the rows).
        KeyError: at a step, a tensordict without "action".
    """

    def __init__(self, env: gym.vector.VectorEnv, device: str | torch.device = "cpu"):
        base = tracking_vec_env(env, "disabled", "TorchRLVecEnv",
                                "TorchRL resets ended envs itself")  # fmt: skip
        n = int(env.num_envs)
        device = torch.device(device)
        super().__init__(device=device, batch_size=torch.Size([n]))
        self._env, self._base = env, base
        space = env.single_observation_space
        self._groups = ({"policy": "policy", "critic": "critic"} if base.obs_mode == "dict"
                        else {"observation": "policy"})  # fmt: skip
        sizes = {k: (space[g] if base.obs_mode == "dict" else space).shape[0]
                 for k, g in self._groups.items()}  # fmt: skip
        self._info = info_keys(env)
        self._info_block = np.zeros((len(self._info), n), np.float32)
        self.observation_spec = Composite(
            {k: Unbounded((n, d), dtype=torch.float32, device=device) for k, d in sizes.items()}
            | {k: Unbounded((n,), dtype=t, device=device) for k, t in self._info.items()},
            shape=(n,),
        )
        act = env.single_action_space
        if np.isfinite(act.low).all() and np.isfinite(act.high).all():
            self.action_spec = Bounded(
                low=torch.as_tensor(np.broadcast_to(act.low, (n, *act.shape)).copy()),
                high=torch.as_tensor(np.broadcast_to(act.high, (n, *act.shape)).copy()),
                shape=(n, *act.shape), dtype=torch.float32, device=device,
            )  # fmt: skip
        else:  # e.g. under gymnasium's ClipAction: TorchRL would draw non-finite samples
            self.action_spec = Unbounded((n, *act.shape), dtype=torch.float32, device=device)
        self.reward_spec = Unbounded((n, 1), dtype=torch.float32, device=device)
        self.done_spec = Composite(
            {k: Categorical(2, (n, 1), dtype=torch.bool, device=device) for k in _FLAGS},
            shape=(n,),
        )
        # a wrapper's transforms apply to the NumPy results only: then those are taken
        self._on_device = env is base and shares_mdp_device(base, device)
        self._seed: int | None = None
        self.is_closed = False  # EnvBase starts "closed"; `close` closes `env`

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        """Reset the rows of ``tensordict["_reset"]`` (N, 1) bool (a masked reset, as
        `GymWrapper` does, also when every row is set), or without one the whole env (with the
        seed `set_seed` gave, once)."""
        mask = None if tensordict is None else tensordict.get("_reset", None)
        if mask is not None:
            rows = mask.reshape(self.batch_size).to("cpu").numpy()
            obs, _ = self._env.reset(options={"reset_mask": rows})
        else:
            obs, _ = self._env.reset(seed=self._seed)
            self._seed = None
        n = self.batch_size[0]
        flags = {k: torch.zeros((n, 1), dtype=torch.bool, device=self.device) for k in _FLAGS}
        return TensorDict({**self._observations(obs), **flags, **self._infos({})},
                          batch_size=self.batch_size, device=self.device)  # fmt: skip

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        """One control step of every env with ``tensordict["action"]`` (N, A).

        Raises:
            KeyError: the tensordict has no "action".
        """
        action = tensordict.get("action", None)
        if action is None:
            raise KeyError("TorchRLVecEnv.step: the tensordict has no 'action' entry (N, A)")
        action = action.detach()
        n = self.batch_size[0]
        results = ("reward", "terminated", "truncated")
        if self._on_device:  # the actions read where they are, the results left there
            a = action.to(self.device, torch.float32).contiguous()
            *_, info = self._base.step_on_device(a)
            out = device_tensors(self._base, {**self._groups, **{k: k for k in results}})
        else:
            obs, *values, info = self._env.step(action.to("cpu", torch.float32).numpy())
            out = {k: torch.tensor(v, device=self.device)
                   for k, v in zip(results, values, strict=True)}  # fmt: skip
            out.update(self._observations(obs))
        reward = out.pop("reward").to(torch.float32).view(n, 1)
        terminated, truncated = out.pop("terminated").view(n, 1), out.pop("truncated").view(n, 1)
        return TensorDict(
            {**out, "reward": reward, "terminated": terminated, "truncated": truncated,
             "done": terminated | truncated, **self._infos(info)},
            batch_size=self.batch_size, device=self.device,
        )  # fmt: skip

    def _set_seed(self, seed: int | None) -> None:
        """The seed of the next full reset."""
        self._seed = seed

    def __del__(self) -> None:
        """Leave the env open: it is the caller's (EnvBase's own ``__del__`` would close it
        when this adapter is collected, e.g. after ``check_env_specs(TorchRLVecEnv(env))``)."""

    def close(self, *, raise_if_closed: bool = True) -> None:
        """Close the env (once) and this wrapper."""
        if not self.is_closed:
            self._env.close()
        super().close(raise_if_closed=raise_if_closed)

    def _observations(self, obs: np.ndarray | dict[str, np.ndarray] | None) -> dict[str, Any]:
        """The observation entries: clones of the env's device arrays when it shares the device
        (`obs` is then not read), else copies of NumPy `obs`."""
        if self._on_device:
            return device_tensors(self._base, self._groups)
        groups = obs if isinstance(obs, dict) else {"policy": obs}
        return {k: torch.tensor(groups[g], dtype=torch.float32, device=self.device)
                for k, g in self._groups.items()}  # fmt: skip

    def _infos(self, info: dict[str, Any]) -> dict[str, torch.Tensor]:
        """The `info_keys` entries of a step's `info` (zeros where missing), copied to the
        device in one block (K, N) float32, each cast back to its dtype there (lengths and
        flags are exact in float32)."""
        block = self._info_block
        for row, key in zip(block, self._info, strict=True):
            value = info.get(key)
            if value is None:
                row[:] = 0.0
            else:
                row[:] = value
        up = torch.tensor(block, device=self.device)
        return {k: up[i].to(t) for i, (k, t) in enumerate(self._info.items())}
