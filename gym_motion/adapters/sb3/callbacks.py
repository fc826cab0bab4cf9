"""Stable-Baselines3 callbacks for training on a `TrackingVecEnv` through `SB3VecEnv`.

- `TrackingLogCallback`: reward terms, episodes, tracking errors and throughput to SB3's logger
  (the statistics are `gym_motion.envs.stats.TrackingStats`).
- `KLAdaptiveLR` and `KLAdaptiveLRCallback`: a learning rate moved with each update's KL.
- `ResetNoiseCurriculum`: ramps the env's reset noise with the fraction of steps done.
- `ProgressBar`: a tqdm bar over env steps.

Example::

    from gym_motion.training.sb3 import make_model
    from gym_motion.training import RunConfig

    venv = VecNormalize(SB3VecEnv(TrackingVecEnv(64, autoreset_mode="same_step")))
    model, lr = make_model(RunConfig(num_envs=64, obs_mode="policy"), venv)
    model.learn(1_000_000, callback=[ResetNoiseCurriculum(0.5, 1_000_000),
                                     TrackingLogCallback(), KLAdaptiveLRCallback(lr)])
"""

from __future__ import annotations

import math
import time

from stable_baselines3.common.callbacks import BaseCallback

from gym_motion.adapters.sb3.vec_env import SB3VecEnv
from gym_motion.curriculum import reset_noise_scale
from gym_motion.envs.stats import TrackingStats, tracking_terms

__all__ = [
    "KLAdaptiveLR",
    "KLAdaptiveLRCallback",
    "ProgressBar",
    "ResetNoiseCurriculum",
    "TrackingLogCallback",
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
    - ``time/env_steps_per_s``: env steps (summed over envs) per second of rollout collection;
      ``time/rollout_s``: the seconds of collection the row covers.

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
            values["time/rollout_s"] = self._collect_s
        for key, value in values.items():
            self.logger.record(key, value)
        self.history.append({"timesteps": float(self.num_timesteps), **values})
        if self.dump:
            self.logger.dump(self.num_timesteps)
        self._fresh = True


class KLAdaptiveLR:
    """A learning-rate "schedule" whose value `KLAdaptiveLRCallback` moves with the KL.

    rsl_rl's rule: KL > 2 desired -> lr / 1.5; KL < desired / 2 -> lr * 1.5; clamped to
    [1e-5, 1e-2]. SB3 reads the value at the start of every update. ``desired_kl=None`` keeps
    the rate fixed.
    """

    def __init__(
        self, lr: float, desired_kl: float | None = 0.01, lo: float = 1e-5, hi: float = 1e-2
    ):
        self.lr, self.lo, self.hi = float(lr), lo, hi
        self.desired_kl = None if desired_kl is None else float(desired_kl)

    def __call__(self, progress_remaining: float) -> float:
        return self.lr

    def update(self, kl: float) -> None:
        if self.desired_kl is None or not math.isfinite(kl):
            return
        if kl > 2.0 * self.desired_kl:
            self.lr = max(self.lo, self.lr / 1.5)
        elif kl < 0.5 * self.desired_kl:
            self.lr = min(self.hi, self.lr * 1.5)


class KLAdaptiveLRCallback(BaseCallback):
    """Feeds the previous update's ``train/approx_kl`` to a `KLAdaptiveLR` (the model's
    learning-rate schedule, from `gym_motion.training.sb3.make_model`) before each
    rollout."""

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
    (SB3's own bar needs `rich`). It starts at the model's env steps, so a resumed run's bar
    counts the whole run, as `total` does.

    Args:
        total: the run's env steps (int), earlier sessions of a resumed run included.
    """

    def __init__(self, total: int):
        super().__init__()
        self.total, self.bar = total, None

    def _on_training_start(self) -> None:
        from tqdm import tqdm

        self.bar = tqdm(
            total=self.total,
            initial=self.model.num_timesteps,
            unit="step",
            unit_scale=True,
            dynamic_ncols=True,
        )

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
