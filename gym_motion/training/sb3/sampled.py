"""Stable-Baselines3 PPO learning from Ray samplers (``gym-motion train --samplers K``).

    gym-motion train --samplers 2 --envs-per-sampler 128             # local Ray, 2 actors
    gym-motion train --samplers 8 --envs-per-sampler 512 --num-threads 4 --ray-address auto

`SB3SampledLearner` is the `gym_motion.training.skeleton.Learner` of such a run: the same PPO
(`make_model`, `PPO_DEFAULTS`, KL-adaptive learning rate), run folder and model files as
`SB3Learner`, but its env is a `gym_motion.training.samplers.SamplerPool`. One iteration:

1. broadcast the payload: the policy's weights (NumPy ``state_dict``) and the observation
   statistics of its ``VecNormalize``;
2. every sampler runs `SB3Collector`'s rollout: SB3's own ``collect_rollouts`` on a CPU copy of
   the policy, its env under a ``VecNormalize`` frozen at the broadcast statistics (the timeout
   bootstrap, episode starts and GAE are SB3's, computed there with the same weights), and
   returns observations, actions, values, log-probabilities, returns and advantages, the raw
   observations' moments and SB3's episode infos;
3. the learner merges the moments into its statistics (``RunningMeanStd.combine``, in sampler
   order), the env statistics (`TrackingStats.combined`), copies the arrays into its
   ``RolloutBuffer`` (samplers side by side along the env axis) and runs ``PPO.train``.

The one difference from the in-process path: a sampler normalises its rollout's observations
with the statistics of the rollout's start, where ``VecNormalize`` in-process also folds in each
step's observations as it goes; the statistics after the rollout are the same (up to rounding).

Logged besides the in-process keys: ``time/collect_s`` (the learner's wait for the rollouts),
``time/sampler_collect_s`` (the slowest sampler's own time), ``time/overhead_s`` (the
difference: transfer and scheduling), ``time/learner_s`` (``PPO.train``, in the next row, as
SB3 logs ``train/*``), ``ray/bytes_in`` and ``ray/bytes_out`` (arrays moved per iteration).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gym_motion.envs.stats import TrackingStats
from gym_motion.training.samplers import SamplerBatch, array_bytes
from gym_motion.training.sb3.config import resolved_settings
from gym_motion.training.sb3.learner import SB3Learner, make_model, progress_logger

if TYPE_CHECKING:
    from gym_motion.training.config import RunConfig
    from gym_motion.training.progress import Progress

__all__ = ["SB3Collector", "SB3SampledLearner", "SB3SamplerRollouts", "fill_rollout_buffer"]

BUFFER_KEYS = ("observations", "actions", "values", "log_probs", "returns", "advantages")


class SB3Collector:
    """The `gym_motion.training.samplers.Collector` of SB3 PPO: what each sampler runs.

    Args:
        config: the run's `RunConfig` (PPO settings, ``obs_mode``).
    """

    def __init__(self, config: RunConfig):
        self.config = config

    def __call__(self, env: Any, seed: int) -> SB3SamplerRollouts:
        return SB3SamplerRollouts(self.config, env, seed)


class SB3SamplerRollouts:
    """A sampler's PPO rollouts: a CPU copy of the learner's model over the sampler's env.

    Args:
        config: the run's `RunConfig`. env: the sampler's `TrackingVecEnv` (SAME_STEP).
        seed: seeds the copy (torch, NumPy: its action noise).

    Attributes:
        observation_space, action_space: SB3's spaces (actions bounded as `SB3VecEnv` does).
        initial: ``{"obs_moments": ...}`` of the env's first reset (done when made), for the
            learner's statistics before its first rollout (`SamplerPool.take_initial`).
        model: the PPO copy; venv: its env (``VecNormalize``, not updating its statistics,
            over `ObsMoments` over `SB3VecEnv`).
    """

    def __init__(self, config: RunConfig, env: Any, seed: int):
        from stable_baselines3.common.callbacks import CallbackList
        from stable_baselines3.common.logger import Logger
        from stable_baselines3.common.vec_env import VecNormalize

        from gym_motion.adapters.sb3.vec_env import SB3VecEnv
        from gym_motion.training.sb3.vec_wrappers import ObsMoments

        self.moments = ObsMoments(SB3VecEnv(env))
        self.venv = VecNormalize(self.moments, training=False, norm_obs=True, norm_reward=False,
                                 clip_obs=10.0)  # fmt: skip
        # a sampler acts on its CPU block; the learner's device takes the update
        local = replace(config, num_envs=env.num_envs, seed=int(seed), samplers=0,
                        ray_address=None, device="cpu")  # fmt: skip
        self.model, _ = make_model(local, self.venv)
        self.model.set_logger(Logger(folder=None, output_formats=[]))
        self.model.ep_info_buffer = deque(maxlen=100)
        self.model.ep_success_buffer = deque(maxlen=100)
        self.n_steps = resolved_settings(config)["n_steps"]
        self.observation_space = self.venv.observation_space
        self.action_space = self.venv.action_space
        # reset now: the learner folds these first observations into its statistics before the
        # first broadcast, as in-process VecNormalize does at its reset
        self._first_obs = self.moments.reset()
        self.initial = {"obs_moments": self.moments.moments()}
        self._callback = CallbackList([])  # SB3's loop needs one; the sampler counts itself
        self._callback.init_callback(self.model)

    def collect(self, payload: dict[str, Any]) -> dict[str, Any]:
        """One rollout of ``n_steps`` with the weights and statistics of `payload`
        (`SB3SampledLearner.payload`).

        Returns:
            ``BUFFER_KEYS`` arrays shaped (T, N, ...) float32 (``observations`` a dict of
            groups with dict observations), ``obs_moments`` (per group ``(mean, var, count)``
            of the raw observations stepped), ``ep_infos`` (SB3's episode dicts).
        """
        import torch

        model = self.model
        state = {k: torch.tensor(v) for k, v in payload["policy"].items()}  # Ray's: read-only
        model.policy.load_state_dict(state)
        self.venv.obs_rms = payload["obs_rms"]
        self.moments.restart()
        model.ep_info_buffer.clear()
        if model._last_obs is None:  # the first rollout starts from the reset made in __init__
            model._last_obs = self.venv.normalize_obs(self._first_obs)
            model._last_episode_starts = np.ones(self.venv.num_envs, dtype=bool)
        model.collect_rollouts(self.venv, self._callback, model.rollout_buffer, self.n_steps)
        buf = model.rollout_buffer
        out: dict[str, Any] = {}
        for key in BUFFER_KEYS:  # copies: the buffer is refilled by the next rollout
            v = getattr(buf, key)
            out[key] = {g: a.copy() for g, a in v.items()} if isinstance(v, dict) else v.copy()
        out["obs_moments"] = self.moments.moments()
        out["ep_infos"] = list(model.ep_info_buffer)
        return out


def fill_rollout_buffer(buffer, batches: list[SamplerBatch]) -> None:
    """Fill an SB3 ``RolloutBuffer`` (or ``DictRolloutBuffer``) of T steps and all samplers'
    envs with the samplers' rollouts, sampler k's envs after sampler k-1's, and mark it full
    (what ``collect_rollouts`` leaves: ``PPO.train`` reads it next).

    Raises:
        ValueError: the batches' steps or total env count do not fit the buffer.
    """
    n = sum(b.num_envs for b in batches)
    if n != buffer.n_envs:
        raise ValueError(f"the samplers' {n} envs do not fill a buffer of {buffer.n_envs}")
    buffer.reset()  # its arrays back to (T, N, ...): training flattens them in place
    for key in BUFFER_KEYS:
        target = getattr(buffer, key)
        parts = [b.data[key] for b in batches]
        if isinstance(target, dict):
            for group, arr in target.items():
                _concat_into(arr, [p[group] for p in parts], key)
        else:
            _concat_into(target, parts, key)
    buffer.pos, buffer.full, buffer.generator_ready = buffer.buffer_size, True, False


def _concat_into(target: np.ndarray, parts: list[np.ndarray], key: str) -> None:
    if parts[0].shape[0] != target.shape[0]:
        raise ValueError(f"{key}: rollouts of {parts[0].shape[0]} steps for a buffer of "
                         f"{target.shape[0]}")  # fmt: skip
    np.concatenate([p.reshape(p.shape[0], p.shape[1], *target.shape[2:]) for p in parts],
                   axis=1, out=target)  # fmt: skip


class SB3SampledLearner(SB3Learner):
    """SB3 PPO learning from a `SamplerPool` (module docstring); its run folder is an
    `SB3Learner` run's (``model.zip``, ``vecnormalize.pkl``, progress.csv, TensorBoard)."""

    @classmethod
    def check(cls, config: RunConfig) -> None:
        """`SB3Learner.check`, and: PPO only, Ray installed.

        Raises:
            ValueError: SAC. ModuleNotFoundError: no Ray (the ``[ray]`` extra).
        """
        super().check(config)
        if config.algo != "ppo":
            raise ValueError(f"--samplers trains PPO (on-policy rollouts), not {config.algo!r}")
        from gym_motion.training.samplers import _import_ray

        _import_ray()

    @classmethod
    def collector(cls, config: RunConfig) -> SB3Collector:
        """What every sampler runs (`gym_motion.training.samplers.Collector`)."""
        return SB3Collector(config)

    def __init__(self, config: RunConfig, env: Any, out: Path | None, world_size: int = 1):
        from stable_baselines3.common.vec_env import VecNormalize

        from gym_motion.training.sb3.vec_wrappers import SpacesVecEnv

        self.config, self._out, self.pool = config, out, env
        spaces = SpacesVecEnv(config.num_envs, env.observation_space, env.action_space)
        self.venv = VecNormalize(spaces, norm_obs=True, norm_reward=False, clip_obs=10.0)
        # the samplers' rollouts fill SB3's host buffer; PPO's update runs on config.device
        self.model, self.schedule = make_model(config, self.venv, device_rollouts=False)
        self._resumed_at: int | None = None
        self.timings: list[dict[str, float]] = []

    def payload(self) -> dict[str, Any]:
        """What every sampler needs for a rollout: ``policy`` (the ``state_dict`` as NumPy
        arrays) and ``obs_rms`` (the observation statistics, with the first observations of
        samplers started since the last payload folded in)."""
        for initial in self.pool.take_initial():
            self._combine(initial["obs_moments"])
        state = self.model.policy.state_dict()
        return {
            "policy": {k: v.detach().cpu().numpy() for k, v in state.items()},
            "obs_rms": self.venv.obs_rms,
        }

    def absorb(self, batches: list[SamplerBatch]) -> dict[str, float]:
        """Take the samplers' rollouts: observation statistics merged, the rollout buffer
        filled, env steps counted, episode infos kept.

        Returns:
            The rollout's merged env statistics (`TrackingStats` means and the samplers'
            adaptive-sampling statistics averaged).
        """
        for b in batches:
            self._combine(b.data["obs_moments"])
            self.model.ep_info_buffer.extend(b.data["ep_infos"])
        fill_rollout_buffer(self.model.rollout_buffer, batches)
        self.model.num_timesteps += sum(b.env_steps for b in batches)
        values = TrackingStats.combined([(b.stats, b.num_envs) for b in batches]).means()
        for key in batches[0].sampling:
            values[f"sampling/{key}"] = float(np.mean([b.sampling[key] for b in batches]))
        return values

    def _combine(self, moments) -> None:
        """Fold raw-observation moments (`ObsMoments.moments`) into the statistics."""
        from gym_motion.training.sb3.vec_wrappers import running_mean_std

        if isinstance(self.venv.obs_rms, dict):
            for k, rms in self.venv.obs_rms.items():
                rms.combine(running_mean_std(moments[k]))
        else:
            self.venv.obs_rms.combine(running_mean_std(moments))

    def learn(self, progress: Progress) -> None:
        from tqdm import tqdm

        model = self.model
        model.set_logger(progress_logger(self._out, resumed_at=self._resumed_at))
        logger = model.logger
        model.start_time = time.time_ns()
        model._num_timesteps_at_start = model.num_timesteps
        model.ep_info_buffer = deque(maxlen=100)
        model.ep_success_buffer = deque(maxlen=100)
        total = self.config.total_steps
        bar = tqdm(total=total, initial=model.num_timesteps, unit="step", unit_scale=True,
                   dynamic_ncols=True)  # fmt: skip
        iteration = 0
        try:
            while model.num_timesteps < total and not progress.stop:
                kl = logger.name_to_value.get("train/approx_kl")
                if self.schedule is not None and kl is not None:
                    self.schedule.update(float(kl))
                logger.record("curriculum/reset_noise_scale", progress.scale)
                payload = self.payload()
                t0 = time.perf_counter()
                batches = self.pool.collect(payload)
                wall = time.perf_counter() - t0
                values = self.absorb(batches)
                slowest = max(b.collect_s for b in batches)
                steps = sum(b.env_steps for b in batches)
                timing = {
                    "time/env_steps_per_s": steps / wall,
                    "time/rollout_s": wall,  # the per-update profile, as in-process runs log
                    "time/collect_s": wall,
                    "time/sampler_collect_s": slowest,
                    "time/overhead_s": wall - slowest,
                    "ray/bytes_out": float(array_bytes(payload["policy"])),
                    "ray/bytes_in": float(sum(b.nbytes for b in batches)),
                }
                values.update(timing)
                for key, value in values.items():
                    logger.record(key, value)
                bar.update(steps)
                for key, value in progress.after_rollout(model.num_timesteps, values).items():
                    logger.record(key, value)
                iteration += 1
                model._update_current_progress_remaining(model.num_timesteps, total)
                model.dump_logs(iteration)
                t1 = time.perf_counter()
                model.train()
                timing["time/learner_s"] = time.perf_counter() - t1
                logger.record("time/learner_s", timing["time/learner_s"])
                self.timings.append(timing)
        finally:
            bar.close()

    def summary_entries(self) -> dict[str, Any]:
        """``samplers``, ``envs_per_sampler``, ``sampler_env_steps`` and ``sampler_restarts``
        (per slot, this session's: a resumed run counts from its checkpoint),
        ``cpus_per_sampler``, ``ray_address``, and per-iteration means of the timings (s) and
        bytes (``iteration``)."""
        pool = self.pool
        out: dict[str, Any] = {
            "samplers": pool.samplers,
            "envs_per_sampler": pool.num_envs // pool.samplers,
            "sampler_env_steps": list(pool.env_steps),
            "sampler_restarts": list(pool.restarts),
            "cpus_per_sampler": pool.cpus,
            "ray_address": self.config.ray_address,
        }
        if self.timings:
            keys = self.timings[-1].keys()
            out["iteration"] = {
                k.split("/")[1]: round(float(np.mean([t[k] for t in self.timings if k in t])), 4)
                for k in keys
            }
        return out

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.pool.close()
