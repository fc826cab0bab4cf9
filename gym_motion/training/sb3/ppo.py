"""SB3's PPO as `gym-motion train` runs it: `TrackingPPO`, with a rollout path for a GPU.

On the CPU (``device="cpu"``), `TrackingPPO` is SB3's PPO, bit for bit: it only times each
update (``time/update_s``). On another device (``cuda:0``) it collects rollouts on that device:

- the rollout buffer (`DeviceRolloutBuffer`) holds torch tensors on the device, computes GAE
  there and gives the update its minibatches without copies;
- per env step: one host-to-device copy (observations, rewards and episode ends packed into one
  pinned buffer) and one device-to-host copy (the actions); the policy's forward pass on the
  device; the observation normaliser (``VecNormalize``'s running statistics, NumPy on the host,
  where the env's observations are) updated once;
- no Python loop over envs: time-outs are bootstrapped with one batched value pass, SB3's
  episode-info buffer gets the last 100 ended episodes of a step;
- when the env's device MDP runs on the same device (the default for ``mjwarp`` on
  ``mjwarp``), the step's observations, reward and flags are read there
  (`TrackingVecEnv.device_arrays`) and normalised there (`_DeviceNormalizer`, VecNormalize's
  statistics on the device for the rollout, given back at its end): no upload per step.

Both paths take the same samples and make the same update (`DeviceRolloutBuffer` draws its
minibatch order from NumPy's global generator as SB3's ``RolloutBuffer`` does); they differ by
float rounding only: the batched time-out values against SB3's one env at a time
(`tests/training/test_sb3_device.py` holds the two against each other on the CPU). Each
rollout's time is logged in parts: ``time/env_s`` (env steps), ``time/normalizer_s`` (statistics and
normalisation) and ``time/policy_s`` (the device's share: forward pass, copies, time-out
values, buffer writes, GAE).
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.type_aliases import DictRolloutBufferSamples, RolloutBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from gym_motion.adapters.sb3.vec_env import SB3VecEnv
from gym_motion.adapters.torch_device import shares_mdp_device

__all__ = ["DeviceRolloutBuffer", "TrackingPPO"]

EPISODE_INFOS = 100  # SB3's ep_info_buffer length: at most this many ended episodes per step


class DeviceRolloutBuffer:
    """PPO's rollout buffer as torch tensors on `device`, with the constructor and methods of
    SB3's ``RolloutBuffer`` that PPO uses.

    Args:
        buffer_size: T, steps per env per rollout. observation_space: a Box (D,) or a Dict of
            Boxes. action_space: a Box (A,). device: where the tensors live. gae_lambda, gamma:
            GAE's lambda and discount. n_envs: N.

    Tensors (T, N, ...) float32: ``observations`` ((T, N, D), or a dict of them), ``actions``
    (T, N, A), ``rewards``, ``episode_starts``, ``values``, ``log_probs``, ``advantages``,
    ``returns`` (T, N). ``values`` and ``returns`` are read by SB3's PPO for its explained
    variance as NumPy arrays: `values_np`, `returns_np`.
    """

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        device: th.device | str = "cpu",
        gae_lambda: float = 1.0,
        gamma: float = 0.99,
        n_envs: int = 1,
    ):
        if not isinstance(action_space, spaces.Box):
            raise ValueError(f"DeviceRolloutBuffer takes Box actions, got {action_space}")
        self.buffer_size, self.n_envs = int(buffer_size), int(n_envs)
        self.observation_space, self.action_space = observation_space, action_space
        self.device = th.device(device)
        self.gae_lambda, self.gamma = gae_lambda, gamma
        self.obs_shapes: dict[str, tuple[int, ...]] | tuple[int, ...]
        if isinstance(observation_space, spaces.Dict):
            self.obs_shapes = {k: s.shape for k, s in observation_space.spaces.items()}
        else:
            self.obs_shapes = observation_space.shape
        self.action_dim = int(np.prod(action_space.shape))
        self.reset()

    def _zeros(self, *shape: int) -> th.Tensor:
        return th.zeros((self.buffer_size, self.n_envs, *shape), dtype=th.float32,
                        device=self.device)  # fmt: skip

    def reset(self) -> None:
        """Empty the buffer (tensors kept, position 0)."""
        if not hasattr(self, "actions"):
            if isinstance(self.obs_shapes, dict):
                self.observations = {k: self._zeros(*s) for k, s in self.obs_shapes.items()}
            else:
                self.observations = self._zeros(*self.obs_shapes)
            self.actions = self._zeros(self.action_dim)
            names = ("rewards", "episode_starts", "values", "log_probs", "advantages", "returns")
            for name in names:
                setattr(self, name, self._zeros())
        self.pos, self.full = 0, False

    def add(
        self,
        obs: th.Tensor | dict[str, th.Tensor],
        action: th.Tensor,
        reward: th.Tensor,
        episode_start: th.Tensor,
        value: th.Tensor,
        log_prob: th.Tensor,
    ) -> None:
        """Store one step of every env: obs (N, D) (or a dict), action (N, A), reward (N,),
        episode_start (N,) (1.0 where the obs is an episode's first), value (N, 1) or (N,),
        log_prob (N,). Tensors on any device, copied into the buffer's."""
        if self.full:
            raise RuntimeError(f"the rollout buffer holds {self.buffer_size} steps already")
        p = self.pos
        if isinstance(obs, dict):
            for key, value_ in obs.items():
                self.observations[key][p].copy_(value_)
        else:
            self.observations[p].copy_(obs)
        self.actions[p].copy_(action.reshape(self.n_envs, self.action_dim))
        self.rewards[p].copy_(reward)
        self.episode_starts[p].copy_(episode_start)
        self.values[p].copy_(value.flatten())
        self.log_probs[p].copy_(log_prob.flatten())
        self.pos += 1
        self.full = self.pos == self.buffer_size

    def compute_returns_and_advantage(self, last_values: th.Tensor, dones: th.Tensor) -> None:
        """GAE(lambda) advantages and returns (Schulman et al. 2016, "High-Dimensional
        Continuous Control Using Generalized Advantage Estimation", eq. 16), in SB3's order of
        operations: `last_values` (N, 1) or (N,) are the values of the observations after the
        last step, `dones` (N,) whether that step ended each env's episode."""
        last_values = last_values.flatten().to(self.device, th.float32)
        dones = dones.to(self.device, th.float32)
        last_gae: th.Tensor | float = 0.0
        for step in reversed(range(self.buffer_size)):
            if step == self.buffer_size - 1:
                next_non_terminal, next_values = 1.0 - dones, last_values
            else:
                next_non_terminal = 1.0 - self.episode_starts[step + 1]
                next_values = self.values[step + 1]
            delta = self.rewards[step] + self.gamma * next_values * next_non_terminal
            delta = delta - self.values[step]
            last_gae = delta + self.gamma * self.gae_lambda * next_non_terminal * last_gae
            self.advantages[step] = last_gae
        self.returns = self.advantages + self.values

    @property
    def values_np(self) -> np.ndarray:
        """(T, N) float32 on the host: the values (SB3's explained variance reads these)."""
        return self.values.cpu().numpy()

    @property
    def returns_np(self) -> np.ndarray:
        """(T, N) float32 on the host: the returns."""
        return self.returns.cpu().numpy()

    def get(
        self, batch_size: int | None = None
    ) -> Generator[RolloutBufferSamples | DictRolloutBufferSamples, None, None]:
        """Minibatches of `batch_size` samples (None: all T x N) in an order drawn by
        ``np.random.permutation`` (SB3's, so a seeded run draws the same order); the last may
        be smaller. Each field is flattened env-major, as SB3's ``swap_and_flatten``.

        Raises:
            RuntimeError: the buffer is not full.
        """
        if not self.full:
            raise RuntimeError("the rollout buffer is not full: collect a whole rollout first")
        total = self.buffer_size * self.n_envs
        # NumPy's global generator, as SB3's RolloutBuffer: a seeded run draws the same order
        order = th.from_numpy(np.random.permutation(total)).to(self.device)  # noqa: NPY002

        def flat(x: th.Tensor) -> th.Tensor:
            return x.transpose(0, 1).reshape(total, *x.shape[2:])

        if isinstance(self.observations, dict):
            obs: Any = {k: flat(v) for k, v in self.observations.items()}
        else:
            obs = flat(self.observations)
        fields = [flat(x) for x in (self.actions, self.values, self.log_probs, self.advantages,
                                    self.returns)]  # fmt: skip
        batch_size = batch_size or total
        for start in range(0, total, batch_size):
            idx = order[start : start + batch_size]
            picked = [f[idx] for f in fields]
            if isinstance(obs, dict):
                yield DictRolloutBufferSamples({k: v[idx] for k, v in obs.items()}, *picked)
            else:
                yield RolloutBufferSamples(obs[idx], *picked)


class _ExplainedVarianceView:
    """What SB3's PPO reads of ``rollout_buffer`` after an update: ``values`` and ``returns`` as
    NumPy arrays (its explained variance); the rest goes to the `DeviceRolloutBuffer`."""

    def __init__(self, buffer: DeviceRolloutBuffer):
        self._buffer = buffer

    def __getattr__(self, name: str) -> Any:
        if name == "values":
            return self._buffer.values_np
        if name == "returns":
            return self._buffer.returns_np
        return getattr(self._buffer, name)


class _Staging:
    """Pinned host buffers and their device copies for one env step: the observation groups,
    reward and episode end packed in one (N, D + 2) float32 row block (one host-to-device copy),
    two device copies used in turn (the buffer stores the previous step's while the next
    arrives), and the actions' (N, A) host buffer (one device-to-host copy), clipped to the
    action space's bounds on the device first (SB3's clip)."""

    def __init__(
        self, obs_dims: dict[str, int] | int, n: int, action_space: spaces.Box, device: th.device
    ):
        pin = device.type == "cuda"
        self.dims = obs_dims
        width = sum(obs_dims.values()) if isinstance(obs_dims, dict) else obs_dims
        self.host = th.zeros((n, width + 2), dtype=th.float32, pin_memory=pin)
        self.host_np = self.host.numpy()
        self.dev = [th.zeros((n, width + 2), dtype=th.float32, device=device) for _ in range(2)]
        self.turn = 0
        # the host block is written again only once its last copy has left it (an early stop
        # of a rollout, or a later `learn`, may come before anything else synchronised)
        self._copied = th.cuda.Event() if pin else None
        actions = int(np.prod(action_space.shape))
        self.actions = th.zeros((n, actions), dtype=th.float32, pin_memory=pin)
        self.low = th.as_tensor(action_space.low, dtype=th.float32, device=device)
        self.high = th.as_tensor(action_space.high, dtype=th.float32, device=device)

    def upload(
        self, obs: np.ndarray | dict[str, np.ndarray], reward: np.ndarray, ended: np.ndarray
    ) -> tuple[th.Tensor | dict[str, th.Tensor], th.Tensor, th.Tensor]:
        """(obs, reward (N,), ended (N,) float) on the device, from one copy."""
        if self._copied is not None:
            self._copied.synchronize()
        h, col = self.host_np, 0
        if isinstance(self.dims, dict):
            for key, d in self.dims.items():
                h[:, col : col + d] = obs[key]
                col += d
        else:
            h[:, : self.dims] = obs
            col = self.dims
        h[:, col] = reward
        h[:, col + 1] = ended
        dev = self.dev[self.turn]
        self.turn = 1 - self.turn
        dev.copy_(self.host, non_blocking=True)
        if self._copied is not None:
            self._copied.record()
        if isinstance(self.dims, dict):
            out, col = {}, 0
            for key, d in self.dims.items():
                out[key] = dev[:, col : col + d]
                col += d
        else:
            out = dev[:, : self.dims]
        return out, dev[:, col], dev[:, col + 1]

    def download(self, actions: th.Tensor) -> np.ndarray:
        """(N, A) actions clipped to the action space, on the host (a synchronous copy into
        the pinned buffer)."""
        self.actions.copy_(th.clamp(actions, self.low, self.high))
        return self.actions.numpy()


class _DeviceNormalizer:
    """VecNormalize's observation statistics and normalisation as torch tensors on the
    learner's device, for observations that arrive there (the env's device MDP,
    `TrackingVecEnv.device_arrays`): each batch's mean and variance in float32 as NumPy takes
    them of float32 observations, combined into the float64 running moments by SB3's
    ``RunningMeanStd.update_from_moments`` (Chan et al.'s parallel formula), then ``clip((obs
    - mean) / sqrt(var + eps), +-clip_obs)`` as ``VecNormalize.normalize_obs``. `load` takes
    VecNormalize's statistics (at a rollout's start), `store` gives them back (at its end), so
    that saving, evaluation and SB3's own path see them."""

    def __init__(self, norm: VecNormalize, device: th.device):
        self.norm, self.device = norm, device
        self.moments: dict[str, list[th.Tensor]] = {}
        self.count = 0.0

    def _rms(self) -> dict[str, Any]:
        rms = self.norm.obs_rms
        return rms if isinstance(rms, dict) else {"": rms}

    def load(self) -> None:
        f64 = {"dtype": th.float64, "device": self.device}
        self.moments = {k: [th.as_tensor(r.mean, **f64), th.as_tensor(r.var, **f64)]
                        for k, r in self._rms().items()}  # fmt: skip
        self.count = float(next(iter(self._rms().values())).count)

    def store(self) -> None:
        for key, rms in self._rms().items():
            mean, var = self.moments[key]
            rms.mean, rms.var, rms.count = mean.cpu().numpy(), var.cpu().numpy(), self.count

    def update(self, obs: dict[str, th.Tensor]) -> None:
        """Add one step's observations ({group: (N, D) float32}) to the statistics."""
        if not (self.norm.training and self.norm.norm_obs):
            return
        n = next(iter(obs.values())).shape[0]
        total = self.count + n
        for key, (mean, var) in self.moments.items():
            x = obs[key]
            batch_mean = x.mean(0).double()
            batch_var = x.var(0, unbiased=False).double()
            delta = batch_mean - mean
            m_2 = var * self.count + batch_var * n + delta.square() * self.count * n / total
            self.moments[key] = [mean + delta * n / total, m_2 / total]
        self.count = total

    def normalize(self, obs: dict[str, th.Tensor]) -> th.Tensor | dict[str, th.Tensor]:
        """The observations ({key: (N, D)}, keyed as the statistics: "" for a Box space)
        normalised, as new float32 tensors (a dict, or one tensor for a Box space)."""
        eps, clip = self.norm.epsilon, self.norm.clip_obs
        out = {}
        for key, (mean, var) in self.moments.items():
            x = obs[key]
            if self.norm.norm_obs:
                x = ((x.double() - mean) / th.sqrt(var + eps)).clamp(-clip, clip)
            out[key] = x.float() if x.dtype != th.float32 else x.clone()
        return out[""] if "" in out else out


class TrackingPPO(PPO):
    """SB3's PPO, timed per update, with a rollout path on the model's device when it is not
    the CPU (see the module docstring). Takes PPO's arguments and:

    Args:
        device_rollouts: collect rollouts with `DeviceRolloutBuffer` and the batched path
            (default None: on any device but the CPU; True on the CPU is the path a GPU runs,
            for tests).

    The env must be a ``VecNormalize`` over an `SB3VecEnv` (as `gym-motion train` builds it)
    for the device path; SB3's own path takes any ``VecEnv``.
    """

    def __init__(self, *args: Any, device_rollouts: bool | None = None, **kwargs: Any):
        self.device_rollouts = device_rollouts
        self._staging: _Staging | None = None
        super().__init__(*args, **kwargs)

    def _uses_device_path(self) -> bool:
        if self.device_rollouts is None:
            return self.device.type != "cpu"
        return bool(self.device_rollouts)

    def _setup_model(self) -> None:
        super()._setup_model()
        if self._uses_device_path():
            self.rollout_buffer = DeviceRolloutBuffer(
                self.n_steps, self.observation_space, self.action_space, device=self.device,
                gamma=self.gamma, gae_lambda=self.gae_lambda, n_envs=self.n_envs,
            )  # fmt: skip

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_staging"]

    def train(self) -> None:
        """SB3's update, timed (``time/update_s``, in the next rollout's row with the update's
        ``train/*`` values)."""
        t0 = time.perf_counter()
        buffer = self.rollout_buffer
        if isinstance(buffer, DeviceRolloutBuffer):
            self.rollout_buffer = _ExplainedVarianceView(buffer)  # type: ignore[assignment]
        try:
            super().train()
        finally:
            self.rollout_buffer = buffer
        if self.device.type == "cuda":
            th.cuda.synchronize(self.device)
        self.logger.record("time/update_s", time.perf_counter() - t0)

    def collect_rollouts(self, env, callback, rollout_buffer, n_rollout_steps: int) -> bool:
        if not isinstance(rollout_buffer, DeviceRolloutBuffer):
            return super().collect_rollouts(env, callback, rollout_buffer, n_rollout_steps)
        return self._collect_on_device(env, callback, rollout_buffer, n_rollout_steps)

    def _collect_on_device(
        self, env: VecNormalize, callback, buffer: DeviceRolloutBuffer, n_rollout_steps: int
    ) -> bool:
        """SB3's ``collect_rollouts`` with tensors on the device and no loop over envs."""
        if not (isinstance(env, VecNormalize) and isinstance(env.venv, SB3VecEnv)):
            raise TypeError("TrackingPPO's device rollouts step a VecNormalize over an "
                            f"SB3VecEnv, got {type(env).__name__}")  # fmt: skip
        norm, adapter = env, env.venv
        if norm.norm_reward or self.use_sde or self.policy.squash_output:
            raise ValueError("TrackingPPO's device rollouts take observation normalisation only "
                             "(norm_reward=False), no gSDE and no squashed actions; use "
                             "device_rollouts=False")  # fmt: skip
        n = adapter.num_envs
        if self._staging is None:
            space = self.observation_space
            dims: dict[str, int] | int = (
                {k: int(np.prod(s.shape)) for k, s in space.spaces.items()}
                if isinstance(space, spaces.Dict) else int(np.prod(space.shape))
            )  # fmt: skip
            self._staging = _Staging(dims, n, self.action_space, self.device)
        stage = self._staging
        self.policy.set_training_mode(False)
        buffer.reset()
        callback.on_rollout_start()
        zero = np.zeros(n, np.float32)
        obs_t, _, starts_t = stage.upload(self._last_obs, zero, self._last_episode_starts)
        on_device = self._device_observations(adapter)
        normalizer = _DeviceNormalizer(norm, self.device) if on_device else None
        if normalizer is not None:
            normalizer.load()
        env_s = norm_s = policy_s = 0.0
        obs_np = self._last_obs
        ended = np.asarray(self._last_episode_starts, bool)
        for _ in range(n_rollout_steps):
            t0 = time.perf_counter()
            with th.no_grad():
                actions, values, log_probs = self.policy(obs_t)
            if normalizer is None:
                actions_np = stage.download(actions)
                t1 = time.perf_counter()
                raw, reward, terminated, truncated, info = adapter.step_arrays(actions_np)
            else:  # the actions read where they are, the observations left there
                clipped = th.clamp(actions, stage.low, stage.high)
                t1 = time.perf_counter()
                reward, terminated, truncated, info = adapter.step_on_device(clipped)
            t2 = time.perf_counter()
            ended = terminated | truncated
            if normalizer is None:
                obs_np = _normalise(norm, raw, update=True)
                next_t, reward_t, ended_t = stage.upload(obs_np, reward, ended)
            else:  # the env's arrays where they are: no host normalisation, no upload
                arrays = self._env_base(adapter).device_arrays()
                raw_t = {k: _torch(arrays[k or "policy"]) for k in normalizer.moments}
                normalizer.update(raw_t)
                next_t = normalizer.normalize(raw_t)
                reward_t = _torch(arrays["reward"]).clone()
                ended_t = (_torch(arrays["terminated"]) | _torch(arrays["truncated"])).float()
                obs_np = next_t
            t3 = time.perf_counter()
            self.num_timesteps += n
            # new_obs: NumPy on the host path, the device tensors when the env is on the device
            callback.update_locals(
                {"rewards": reward, "dones": ended, "infos": [], "new_obs": obs_np}
            )
            if not callback.on_step():
                if normalizer is not None:
                    normalizer.store()
                return False
            self._episode_infos(info, ended, adapter)
            time_out = np.flatnonzero(truncated & ~terminated)
            if time_out.size:  # bootstrap the time-limited episodes' last values (SB3's rule)
                final = info["final_obs"]
                last = {k: v[time_out] for k, v in final.items()} if isinstance(final, dict) \
                    else final[time_out]  # fmt: skip
                if normalizer is None:
                    last_t, _ = self.policy.obs_to_tensor(_normalise(norm, last, update=False))
                else:
                    rows = last if isinstance(last, dict) else {"": last}
                    last_t = normalizer.normalize(
                        {k: th.as_tensor(v, device=self.device) for k, v in rows.items()}
                    )
                with th.no_grad():
                    bootstrap = self.policy.predict_values(last_t).flatten()
                idx = th.from_numpy(time_out).to(self.device)
                reward_t = reward_t.index_add(0, idx, self.gamma * bootstrap)
            buffer.add(obs_t, actions, reward_t, starts_t, values, log_probs)
            obs_t, starts_t = next_t, ended_t
            policy_s += (t1 - t0) + (time.perf_counter() - t3)
            env_s += t2 - t1
            norm_s += t3 - t2
        t0 = time.perf_counter()
        with th.no_grad():
            last_values = self.policy.predict_values(obs_t)
        buffer.compute_returns_and_advantage(last_values, starts_t)
        if self.device.type == "cuda":
            th.cuda.synchronize(self.device)
        policy_s += time.perf_counter() - t0
        if normalizer is not None:  # back to VecNormalize; the next rollout starts from the host
            normalizer.store()
            arrays = self._env_base(adapter).device_arrays()
            raw = {k: arrays[k or "policy"].numpy() for k in normalizer.moments}
            obs_np = _normalise(norm, raw.pop("") if "" in raw else raw, update=False)
        self._last_obs, self._last_episode_starts = obs_np, ended
        for key, value in (("env_s", env_s), ("normalizer_s", norm_s), ("policy_s", policy_s)):
            self.logger.record(f"time/{key}", value)
        callback.update_locals({"rewards": None, "dones": ended, "infos": [], "new_obs": obs_np})
        callback.on_rollout_end()
        return True

    @staticmethod
    def _env_base(adapter: SB3VecEnv) -> Any:
        return adapter.venv.unwrapped

    def _device_observations(self, adapter: SB3VecEnv) -> bool:
        """Whether the env's device MDP runs on this model's torch device, so that a step's
        observations, reward and flags are read there (`TrackingVecEnv.device_arrays`)."""
        norm = self.env
        keys = getattr(norm, "norm_obs_keys", None)
        space = self.observation_space
        every_key = (
            keys is None or not isinstance(space, spaces.Dict) or set(keys) == set(space.spaces)
        )
        # a vector wrapper's transforms, or observations left out of the statistics, are in the
        # NumPy results only: those are taken then
        if adapter.venv is not adapter.venv.unwrapped or not (norm.norm_obs and every_key):
            return False
        return shares_mdp_device(self._env_base(adapter), self.device)

    def _episode_infos(self, info: dict[str, Any], ended: np.ndarray, adapter: SB3VecEnv) -> None:
        """SB3's episode-info buffer (``rollout/ep_rew_mean``, ``ep_len_mean``) from the env's
        own episode results, the last `EPISODE_INFOS` ended envs of the step (``t``: seconds
        since the adapter was made, as `SB3VecEnv`'s infos)."""
        ids = np.flatnonzero(ended)[-EPISODE_INFOS:]
        if ids.size:
            ret, length = info["final/return"][ids], info["final/length"][ids]
            t = round(time.time() - adapter.created, 6)
            self.ep_info_buffer.extend(
                {"r": float(r), "l": int(n), "t": t} for r, n in zip(ret, length, strict=True)
            )


def _torch(array: Any) -> th.Tensor:
    """A Warp array as a torch tensor on the same memory."""
    import warp as wp

    return wp.to_torch(array)


def _normalise(norm: VecNormalize, obs: Any, *, update: bool) -> Any:
    """`obs` normalised by `norm`'s running statistics (VecNormalize's ``normalize_obs``),
    after adding them to the statistics when `update` and `norm` is training (once per env
    step, as VecNormalize's ``step_wait``)."""
    if update and norm.training and norm.norm_obs:
        if isinstance(obs, dict) and isinstance(norm.obs_rms, dict):
            for key, rms in norm.obs_rms.items():
                rms.update(obs[key])
        else:
            norm.obs_rms.update(obs)
    return norm.normalize_obs(obs)
