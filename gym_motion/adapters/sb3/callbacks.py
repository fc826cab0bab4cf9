"""Stable-Baselines3 callbacks for training on a `TrackingVecEnv` through `SB3VecEnv`.

- `TrackingLogCallback`: reward terms, episodes, tracking errors and throughput to SB3's logger
  (the statistics are `gym_motion.envs.stats.TrackingStats`).
- `KLAdaptiveLRCallback`: moves a `KLAdaptiveLR` learning rate with each update's KL.
- `ResetNoiseCurriculum`: ramps the env's reset noise with the fraction of steps done.
- `ProgressBar`: a tqdm bar over env steps. `WallClockBudget`: stops learning after a time.
- `PeriodicEvaluation`: a deterministic evaluation (clips from their start) every K env steps.

Example::

    from gym_motion.adapters.sb3.train import TrainConfig, make_env, make_model

    config = TrainConfig(num_envs=64)
    venv = make_env(config, motions=None)  # TrackingVecEnv -> SB3VecEnv -> VecNormalize
    model, lr = make_model(config, venv)  # lr: the model's KLAdaptiveLR
    model.learn(1_000_000, callback=[ResetNoiseCurriculum(0.5, 1_000_000),
                                     TrackingLogCallback(), KLAdaptiveLRCallback(lr)])
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback

from gym_motion.adapters.run import reset_noise_scale
from gym_motion.adapters.sb3.train import KLAdaptiveLR
from gym_motion.adapters.sb3.vec_env import SB3VecEnv
from gym_motion.envs.stats import TrackingStats, tracking_terms

__all__ = [
    "KLAdaptiveLRCallback",
    "PeriodicEvaluation",
    "ProgressBar",
    "ResetNoiseCurriculum",
    "TrackingLogCallback",
    "WallClockBudget",
]


class TrackingLogCallback(BaseCallback):
    """Writes a TrackingVecEnv's reward terms, episodes, errors and throughput every rollout.

    The training env must be an `SB3VecEnv` (possibly under SB3 wrappers such as
    ``VecNormalize``). Logger keys (TensorBoard under the same names):

    - ``reward/<term>``: per-step weighted term (before dt), mean over the rollout's steps and
      envs; ``rollout/tracking_reward``: the same for the sum of the positive-weight terms.
    - ``episode/return``, ``episode/length`` (steps), ``episode/reward/<term>`` (dt-scaled
      episode sum), ``episode/count``: means over the episodes that ended in the rollout.
    - ``termination/<cause>``: fraction of those episodes that ended by the cause
      (``time_out`` included).
    - ``error/mpkpe_mm``, ``error/root_mpkpe_mm``, ``error/<name>_<unit>``: episode-mean
      tracking errors, averaged over the finished episodes.
    - ``sampling/entropy``, ``sampling/top1_prob``: the adaptive sampler's bins.
    - ``time/env_steps_per_s``: env steps (summed over envs) per second of rollout collection.

    ``history`` keeps, per logged row, ``timesteps`` and every logged value (for plots).

    Args:
        every_steps: log at the first rollout end after this many env steps since the last
            row (0: every rollout, PPO's). Off-policy algorithms, whose "rollouts" are a few
            vector steps, log every ~one PPO rollout this way.
        dump: also write the logger's row (TensorBoard, CSV) then; for algorithms that dump
            only per episode count (SB3's off-policy ones, run with ``log_interval=None``).
    """

    def __init__(self, verbose: int = 0, every_steps: int = 0, dump: bool = False):
        super().__init__(verbose)
        self.stats = TrackingStats()
        self.history: list[dict[str, float]] = []
        self.every_steps, self.dump = int(every_steps), bool(dump)
        self._adapter: SB3VecEnv | None = None
        self._t0 = 0.0
        self._steps0 = 0
        self._collect_s = 0.0
        self._fresh = True

    def _init_callback(self) -> None:
        adapter = self.training_env.unwrapped
        if not isinstance(adapter, SB3VecEnv):
            raise TypeError(f"TrackingLogCallback needs an SB3VecEnv, got {type(adapter)}")
        self._adapter = adapter
        try:
            self.stats = TrackingStats(tracking_terms(adapter.venv))
        except AttributeError:
            self.stats = TrackingStats()

    def _on_rollout_start(self) -> None:
        if self._fresh:
            self.stats.reset()
            self._steps0 = self._adapter.total_steps
            self._collect_s = 0.0
            self._fresh = False
        self._t0 = time.perf_counter()

    def _on_step(self) -> bool:
        self.stats.add(self._adapter.last_info)
        return True

    def _on_rollout_end(self) -> None:
        self._collect_s += time.perf_counter() - self._t0
        if self._adapter.total_steps - self._steps0 >= self.every_steps:
            self._emit()

    def _on_training_end(self) -> None:
        if self.every_steps and not self._fresh and self._adapter.total_steps > self._steps0:
            self._emit()  # the steps since the last row

    def _emit(self) -> None:
        steps = self._adapter.total_steps - self._steps0
        values = self.stats.means()
        for key, value in self._adapter.sampling_stats.items():
            values[f"sampling/{key}"] = value
        if self._collect_s > 0:
            values["time/env_steps_per_s"] = steps / self._collect_s
        for key, value in values.items():
            self.logger.record(key, value)
        self.history.append({"timesteps": float(self.num_timesteps), **values})
        if self.dump:
            self.logger.dump(self.num_timesteps)
        self._fresh = True


class KLAdaptiveLRCallback(BaseCallback):
    """Feeds the previous update's ``train/approx_kl`` to a `KLAdaptiveLR` (the model's
    learning-rate schedule, from `make_model`) before each rollout."""

    def __init__(self, schedule: KLAdaptiveLR):
        super().__init__()
        self.schedule = schedule

    def _on_rollout_start(self) -> None:
        # SB3 order: train() records train/approx_kl, the next rollout runs, then logs dump.
        kl = self.logger.name_to_value.get("train/approx_kl")
        if kl is not None:
            self.schedule.update(float(kl))

    def _on_step(self) -> bool:
        return True


class ResetNoiseCurriculum(BaseCallback):
    """Sets the env's ``reset_noise_scale`` before each rollout to
    ``reset_noise_scale(num_timesteps / total_steps, ramp)``; logs it as
    ``curriculum/reset_noise_scale``. It follows env steps, not wall time, so that a seed
    reproduces a run that `total_steps` ends.

    Args:
        ramp: fraction of `total_steps` over which the scale goes from 0 to 1 (0: always 1).
        total_steps: the run's budget of env steps, summed over envs.

    Attributes:
        scale: the scale set before the latest rollout (None before the first).
    """

    def __init__(self, ramp: float, total_steps: int):
        super().__init__()
        self.ramp, self.total_steps = ramp, total_steps
        self.scale: float | None = None

    def _on_rollout_start(self) -> None:
        progress = self.num_timesteps / max(1, self.total_steps)
        self.scale = reset_noise_scale(progress, self.ramp)
        self.training_env.set_attr("reset_noise_scale", self.scale)
        self.logger.record("curriculum/reset_noise_scale", self.scale)

    def _on_step(self) -> bool:
        return True


class ProgressBar(BaseCallback):
    """A tqdm bar over `total` env steps, with the latest episode length and tracking reward
    (SB3's own bar needs `rich`)."""

    def __init__(self, total: int):
        super().__init__()
        self.total, self.bar = total, None

    def _on_training_start(self) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=self.total, unit="step", unit_scale=True, dynamic_ncols=True)

    def _on_step(self) -> bool:
        self.bar.update(self.training_env.num_envs)
        return True

    def _on_rollout_end(self) -> None:
        v = self.logger.name_to_value
        post = {}
        if "episode/length" in v:
            post["ep_len"] = f"{v['episode/length']:.0f}"
        if "rollout/tracking_reward" in v:
            post["track_rew"] = f"{v['rollout/tracking_reward']:.2f}"
        if post:
            self.bar.set_postfix(post, refresh=False)

    def _on_training_end(self) -> None:
        if self.bar is not None:
            self.bar.close()


class WallClockBudget(BaseCallback):
    """Stops learning after the rollout that ends past `seconds` of wall time; ``hit`` says
    whether it did."""

    def __init__(self, seconds: float):
        super().__init__()
        self.seconds, self.t0, self.hit = seconds, 0.0, False

    def _on_training_start(self) -> None:
        self.t0 = time.perf_counter()

    def _on_step(self) -> bool:
        return not self.hit

    def _on_rollout_end(self) -> None:
        self.hit = time.perf_counter() - self.t0 > self.seconds


class PeriodicEvaluation(BaseCallback):
    """Runs `evaluate` (e.g. `gym_motion.evaluate.evaluate_policy_on_clips` of the current
    deterministic policy, clips from their start) at the first rollout end after every
    `every_steps` env steps but the last rollout's, and at the end of training (the final
    policy: a rollout end comes before that rollout's update).

    Logs ``eval/episode_length`` (steps), ``eval/success_rate``, ``eval/mpkpe_mm`` and
    ``eval/tracking_reward_per_clip_step`` (keys of the result's ``"mean"``); ``history`` keeps
    ``timesteps`` and those values per evaluation, for the curves PNG.

    Raises:
        ValueError: `every_steps` < 1.
    """

    KEYS = ("episode_length", "success_rate", "mpkpe_mm", "tracking_reward_per_clip_step")

    def __init__(
        self,
        every_steps: int,
        evaluate: Callable[[], dict[str, Any]],
        verbose: int = 0,
        dump: bool = False,
    ):
        super().__init__(verbose)
        if every_steps < 1:
            raise ValueError(f"every_steps must be >= 1, got {every_steps}")
        self.every_steps = int(every_steps)
        self.dump = bool(dump)  # write the row at once (off-policy runs dump only on request)
        self._evaluate = evaluate
        self._next = self.every_steps
        self._total: int | None = None
        self.history: list[dict[str, float]] = []

    def _run(self) -> None:
        mean = self._evaluate()["mean"]
        values = {f"eval/{k}": float(mean[k]) for k in self.KEYS if mean.get(k) is not None}
        for key, value in values.items():
            self.logger.record(key, value)
        self.history.append({"timesteps": float(self.num_timesteps), **values})
        if self.dump:
            self.logger.dump(self.num_timesteps)

    def _on_training_start(self) -> None:
        self._total = self.locals.get("total_timesteps")

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        last = self._total is not None and self.num_timesteps >= self._total
        if self.num_timesteps >= self._next and not last:  # the last one: _on_training_end
            self._run()
            while self._next <= self.num_timesteps:
                self._next += self.every_steps

    def _on_training_end(self) -> None:
        self._run()
