"""`RslRlVecEnv`: rsl_rl's ``VecEnv`` interface over one batched `TrackingVecEnv`.

rsl_rl (rsl-rl-lib 5.x, the trainer of BeyondMimic and mjlab) steps a vectorised env that takes
and returns torch tensors: observations as a ``TensorDict`` of named groups, rewards, done flags,
and an ``extras`` dict with ``time_outs`` (truncations, for value bootstrapping) and ``log``
(scalars or tensors that its logger averages over an iteration and writes to TensorBoard)::

    from rsl_rl.runners import OnPolicyRunner
    from gym_motion.envs import TrackingVecEnv
    from gym_motion.adapters.rsl_rl import RslRlVecEnv
    from gym_motion.training.rsl_rl import runner_cfg

    env = RslRlVecEnv(TrackingVecEnv(64, autoreset_mode="same_step", obs_mode="dict"))
    runner = OnPolicyRunner(env, runner_cfg(), log_dir="runs/rsl", device="cpu")
    runner.learn(100, init_at_random_ep_len=True)

The env runs in SAME_STEP autoreset mode (what rsl_rl assumes: the observation returned for a
finished env is the first of its next episode). The observation groups are the env's: ``policy``
(160 values; the actor's) and, with ``obs_mode="dict"``, the privileged ``critic`` group (286).

``extras["log"]`` carries, under `gym_motion.envs.stats` names (rsl_rl writes keys that
contain a "/" to TensorBoard as they are):

- every step: ``reward/<term>`` (batch mean of the weighted term, before dt),
  ``rollout/tracking_reward`` (the same for the positive-weight terms), ``episode/ended``
  (episodes that ended on the step), ``sampling/entropy``, ``sampling/top1_prob``;
- on steps where episodes ended, one value per ended episode (so that rsl_rl's mean over the
  iteration is the mean over episodes): ``episode/return``, ``episode/length``,
  ``episode/reward/<term>``, ``termination/<cause>`` (1 or 0; its mean is the rate) and the
  tracking errors ``error/mpkpe_mm``, ``error/<name>_<unit>``.

Episode-length buffer: rsl_rl's ``init_at_random_ep_len`` assigns random values in
[0, max_episode_length) to ``env.episode_length_buf`` so that the first time-outs spread over
an episode's length. Here the buffer counts steps against the time limit; a write moves the
env's ``time_limit_offset`` (the limit of the current episode), never its ``episode_length``:
those episodes end early as time-outs, and their ``final/length``, returns and error means are
those of the steps they really ran.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from rsl_rl.env import VecEnv
from tensordict import TensorDict

from gym_motion.adapters import tracking_vec_env
from gym_motion.adapters.torch_device import device_tensors, shares_mdp_device
from gym_motion.envs.stats import TrackingStats, tracking_terms

__all__ = ["RslRlVecEnv"]

# TrackingStats.means keys logged once per step (batch means); the other keys are episode
# results, logged once per ended episode.
_PER_STEP = ("reward/", "rollout/")


class RslRlVecEnv(VecEnv):
    """rsl_rl's ``VecEnv`` over a `TrackingVecEnv` in SAME_STEP autoreset mode.

    Args:
        env: a `gym_motion.envs.TrackingVecEnv` (or a gymnasium vector wrapper around one)
            created with ``autoreset_mode="same_step"``; ``obs_mode="dict"`` gives the
            critic its privileged group.
        device: torch device of the observations, rewards and flags that `step` returns and
            of `episode_length_buf`. With the env's device MDP on that device
            (``BackendCfg(mdp="device")``) they come from `TrackingVecEnv.device_arrays`
            (device-to-device clones); else from the env's NumPy results ("cuda:0" copies
            them there).
        clip_actions: clip actions to [-clip_actions, clip_actions] before the env sees them
            (None: no clipping, as the env does not clip).

    Attributes:
        num_envs: N. num_actions: A (29 for the G1). device: the torch device.
        max_episode_length: the env's time limit, control steps (read live from the env).
        cfg: the env's task config as a JSON-able dict (`TrackingEnvCfg.to_json`).
        stats: a `TrackingStats` fed every step's info; a trainer reads ``stats.means()``
            and calls ``stats.reset()`` when it likes (once per iteration, say).
        last_info: the env's batched info dict of the last step (see `gym_motion.envs.info`).
        steps: env steps taken through `step`, summed over envs.

    Construction resets the env (with the seed it was built with, if any).

    `step` takes actions (N, A) float on any device and returns ``(obs, rewards, dones,
    extras)``: obs a ``TensorDict`` with batch size (N,) of float32 groups ``policy`` (N, 160)
    and, in dict mode, ``critic`` (N, 286); rewards (N,) float32; dones (N,) int64
    (terminated or truncated); ``extras["time_outs"]`` (N,) bool (truncated, not terminated);
    ``extras["log"]`` as in the module docstring. All on `device`.

    Raises:
        ValueError: `env` is not a vector env, not in SAME_STEP mode, or not (a wrapper
            around) a `TrackingVecEnv` (`gym_motion.adapters.tracking_vec_env`).
    """

    def __init__(
        self,
        env: gym.vector.VectorEnv,
        device: str | torch.device = "cpu",
        clip_actions: float | None = None,
    ):
        why = "rsl_rl expects the next episode's first observation on the step an episode ends"
        base = tracking_vec_env(env, "same_step", "RslRlVecEnv", why)
        if clip_actions is not None and not clip_actions > 0:
            raise ValueError(f"clip_actions must be > 0 or None, got {clip_actions}")
        self.env = env
        self._base = base
        self.num_envs = int(env.num_envs)
        self.num_actions = int(np.prod(env.single_action_space.shape))
        self.device = torch.device(device)
        self.clip_actions = clip_actions
        self.cfg: dict[str, Any] = json.loads(base.cfg.to_json())
        terms = tracking_terms(base)
        self.stats = TrackingStats(terms)
        self._step_stats = TrackingStats(terms)
        self.last_info: dict[str, Any] = {}
        self.steps = 0
        # a wrapper's transforms apply to the NumPy results only: then those are taken
        self._on_device = env is base and shares_mdp_device(base, self.device)
        self._groups = ("policy",) if base.obs_mode == "policy" else tuple(
            base.observations.buffers)  # fmt: skip
        obs, _ = env.reset()
        self._obs = self._tensordict(obs)
        self._length_buf = self._steps_against_limit()

    # ------------------------------------------------------------------ rsl_rl VecEnv
    @property
    def max_episode_length(self) -> int:
        """The env's time limit, control steps."""
        return int(self._base.max_episode_steps)

    @property
    def episode_length_buf(self) -> torch.Tensor:
        """(N,) int64 on `device`: steps of each env's current episode counted against the time
        limit (its episode length plus ``time_limit_offset``); an episode is truncated once
        this reaches `max_episode_length`. Assigning it, or writing into it in place, sets the
        env's ``time_limit_offset`` at the next `step` (the episode length stays true)."""
        return self._length_buf

    @episode_length_buf.setter
    def episode_length_buf(self, value: torch.Tensor) -> None:
        value = torch.as_tensor(value)
        if value.shape != (self.num_envs,):
            raise ValueError(
                f"episode_length_buf must have shape ({self.num_envs},), got {tuple(value.shape)}"
            )
        self._length_buf = value.to(self.device, torch.long).clone()

    def get_observations(self) -> TensorDict:
        """The current observations: a ``TensorDict`` of the env's groups (see the class
        docstring), the first of the new episode for envs that just ended."""
        return self._obs

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        """Step every env one control step; see the class docstring for what it returns.

        Raises:
            ValueError: actions of the wrong shape or non-finite (the env names the rows).
        """
        base = self._base
        # the buffer (possibly rewritten by the trainer) -> the env's time-limit offset
        counted = self._length_buf.detach().to("cpu").numpy()
        np.subtract(counted, base.episode_length, out=base.time_limit_offset, casting="unsafe")
        a = torch.as_tensor(actions).detach()
        if self.clip_actions is not None:
            a = a.clamp(-self.clip_actions, self.clip_actions)
        dev = self.device
        if self._on_device:  # the actions read where they are, the results left there
            *_, info = base.step_on_device(a.to(dev, torch.float32).contiguous())
            self._obs = self._tensordict(None)
            flags = device_tensors(base, ("reward", "terminated", "truncated"))
            reward_t, terminated_t, truncated_t = flags.values()
        else:
            obs, reward, terminated, truncated, info = self.env.step(
                a.to("cpu", torch.float32).numpy()
            )
            self._obs = self._tensordict(obs)
            reward_t = torch.from_numpy(reward).to(dev)
            terminated_t, truncated_t = torch.from_numpy(terminated), torch.from_numpy(truncated)
        self.last_info = info
        self.steps += self.num_envs
        self.stats.add(info)
        self._length_buf = self._steps_against_limit()
        dones = (terminated_t | truncated_t).to(dev, torch.long)
        extras = {"time_outs": truncated_t.to(dev), "log": self._log(info)}
        return self._obs, reward_t, dones, extras

    # ------------------------------------------------------------------ the rest
    def reset(self, seed: int | None = None) -> tuple[TensorDict, dict]:
        """Reset every env (re-seeding it with `seed`); returns (observations, extras {})."""
        obs, _ = self.env.reset(seed=seed)
        self._obs = self._tensordict(obs)
        self._length_buf = self._steps_against_limit()
        return self._obs, {}

    @property
    def unwrapped(self):
        """The `TrackingVecEnv` under any wrappers."""
        return self._base

    def close(self) -> None:
        """Close the env."""
        self.env.close()

    def _tensordict(self, obs: np.ndarray | dict[str, np.ndarray] | None) -> TensorDict:
        """The observation groups as tensors on `device`: from the env's device arrays when it
        shares the device (`obs` is then not read), else from NumPy `obs`."""
        if self._on_device:
            tensors = device_tensors(self._base, self._groups)
        else:
            groups = obs if isinstance(obs, dict) else {"policy": obs}
            tensors = {k: torch.from_numpy(v).to(self.device) for k, v in groups.items()}
        return TensorDict(tensors, batch_size=[self.num_envs], device=self.device)

    def _steps_against_limit(self) -> torch.Tensor:
        base = self._base
        counted = base.episode_length.astype(np.int64) + base.time_limit_offset
        return torch.from_numpy(counted).to(self.device)

    def _log(self, info: dict[str, Any]) -> dict[str, float | torch.Tensor]:
        """``extras["log"]`` of one step (module docstring): per-step means as floats, episode
        results as one value per ended episode (their mean repeated, which gives rsl_rl's
        concatenate-then-average the mean over the iteration's episodes)."""
        self._step_stats.reset()
        self._step_stats.add(info)
        means = self._step_stats.means()
        ended = int(means.pop("episode/count", 0.0))
        log: dict[str, float | torch.Tensor] = {}
        for key, value in means.items():
            if key.startswith(_PER_STEP):
                log[key] = value
            else:
                log[key] = torch.full((ended,), value, dtype=torch.float32)
        log["episode/ended"] = float(ended)
        for key, value in self._base.sampling_stats.items():
            log[f"sampling/{key}"] = value
        return log
