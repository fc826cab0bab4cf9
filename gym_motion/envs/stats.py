"""Episode and per-step statistics of a `TrackingVecEnv`, from its batched info dicts.

Library-neutral (NumPy only): the SB3 adapter's `TrackingLogCallback` and evaluation scripts
both feed it the info dict that `TrackingVecEnv.step` returns (schema in
`gym_motion.envs.info`)::

    env = TrackingVecEnv(64, seed=0)
    stats = TrackingStats(tracking_terms(env))
    env.reset(seed=0)
    for _ in range(100):
        *_, info = env.step(np.zeros((64, 29), np.float32))
        stats.add(info)
    print(stats.means())  # {"reward/body_pos": ..., "episode/length": ..., "error/mpkpe_mm": ...}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from gym_motion.envs.info import FINAL, REWARD

__all__ = ["TrackingStats", "tracking_terms"]

# Tracking errors logged in mm; the others keep their SI unit, named in the key.
MM_ERRORS = ("mpkpe", "root_mpkpe")
ERROR_UNITS = {
    "anchor_pos": "m",
    "anchor_rot": "rad",
    "body_pos": "m",
    "body_rot": "rad",
    "joint_pos": "rad",
    "joint_vel": "rad_s",
}


def tracking_terms(env: Any) -> tuple[str, ...]:
    """Names of the positive-weight reward terms (the tracking kernels) of a `TrackingVecEnv`.

    Args:
        env: a `TrackingVecEnv` or a gymnasium vector wrapper around one (``env.unwrapped``
            must have ``cfg.rewards``).

    Raises:
        AttributeError: `env` is not (a wrapper around) a `TrackingVecEnv`.
    """
    rewards = getattr(env, "unwrapped", env).cfg.rewards
    return tuple(name for name, term in rewards.items() if term.weight > 0)


class TrackingStats:
    """Accumulates a `TrackingVecEnv`'s info dicts over a stretch of steps (a rollout).

    Args:
        tracking: reward-term names summed into ``rollout/tracking_reward`` (usually
            `tracking_terms` of the env); empty: that key is not produced.

    Per step (`add`): the batch mean of each ``reward/<term>`` over the rows its ``_reward/``
    mask marks valid (rows being autoreset in NEXT_STEP mode are left out). Per finished
    episode (the ``_final/length`` mask): episode return, length, per-term dt-scaled sums,
    termination causes and tracking errors. O(keys) NumPy calls per step; the per-episode part
    runs only on steps where some env finished.

    Attributes:
        steps: `add` calls since the last `reset`. episodes: episodes finished since then.
    """

    def __init__(self, tracking: Iterable[str] = ()):
        self.tracking = tuple(tracking)
        self.reset()

    def reset(self) -> None:
        """Forget everything added so far (call it at the start of each rollout)."""
        self.steps = 0
        self.episodes = 0
        self.step_sums: dict[str, float] = {}
        self.episode_sums: dict[str, float] = {}

    def add(self, info: Mapping[str, Any]) -> None:
        """Add one step's batched info dict: per-env (N,) arrays with ``_<key>`` bool masks."""
        self.steps += 1
        tracking = 0.0
        for key, value in info.items():
            if key.startswith(REWARD):
                valid = info.get("_" + key)
                if valid is None or valid.all():
                    m = float(value.mean())
                else:  # rows being autoreset (NEXT_STEP mode) are masked out
                    m = float(value[valid].mean()) if valid.any() else 0.0
                self.step_sums[key] = self.step_sums.get(key, 0.0) + m
                if key[len(REWARD) :] in self.tracking:
                    tracking += m
        if self.tracking:
            self.step_sums["tracking"] = self.step_sums.get("tracking", 0.0) + tracking
        done = info.get("_" + FINAL + "length")
        if done is None or not done.any():
            return
        self.episodes += int(done.sum())
        for key, value in info.items():
            if key.startswith(FINAL):
                s = float(value[done].sum(dtype=np.float64))
                self.episode_sums[key] = self.episode_sums.get(key, 0.0) + s

    @classmethod
    def combined(cls, parts: Sequence[tuple[TrackingStats, int]]) -> TrackingStats:
        """The statistics of one vector env made of several (e.g. one per sampler process) that
        stepped the same number of steps: ``parts`` is ``(stats, num_envs)`` per vector env.
        Per-step means are weighted by env count, as if all envs had been one batch; episode
        sums and counts add up.

        Raises:
            ValueError: no parts, or parts that added different numbers of steps.
        """
        if not parts:
            raise ValueError("TrackingStats.combined needs at least one part")
        steps = {s.steps for s, _ in parts}
        if len(steps) != 1:
            raise ValueError(f"parts added different numbers of steps: {sorted(steps)}")
        total = float(sum(n for _, n in parts))
        out = cls(parts[0][0].tracking)
        out.steps = steps.pop()
        for stats, n in parts:
            out.episodes += stats.episodes
            for key, s in stats.step_sums.items():
                out.step_sums[key] = out.step_sums.get(key, 0.0) + s * (n / total)
            for key, s in stats.episode_sums.items():
                out.episode_sums[key] = out.episode_sums.get(key, 0.0) + s
        return out

    def means(self) -> dict[str, float]:
        """Log key -> mean since the last `reset`; episode keys only once an episode finished.

        - ``reward/<term>``: per-step weighted term (before dt), mean over steps and envs;
          ``rollout/tracking_reward``: the same for the sum of the `tracking` terms.
        - ``episode/return``, ``episode/length`` (steps), ``episode/reward/<term>`` (dt-scaled
          episode sum), ``episode/count``: over the finished episodes.
        - ``termination/<cause>``: fraction of the finished episodes that ended by the cause.
        - ``error/mpkpe_mm``, ``error/root_mpkpe_mm`` (mm), ``error/<name>_<unit>`` (m, rad,
          rad_s): episode-mean tracking errors averaged over the finished episodes.
        """
        out: dict[str, float] = {}
        if self.steps:
            for key, s in self.step_sums.items():
                name = "rollout/tracking_reward" if key == "tracking" else key
                out[name] = s / self.steps
        if self.episodes:
            out["episode/count"] = float(self.episodes)
            for key, s in self.episode_sums.items():
                m = s / self.episodes
                name = key[len(FINAL) :]
                if name in ("return", "length") or name.startswith(REWARD):
                    out[f"episode/{name}"] = m
                elif name.startswith("termination/"):
                    out[name] = m  # a rate: the fraction of finished episodes
                elif name.startswith("error/"):
                    e = name[len("error/") :]
                    if e in MM_ERRORS:
                        out[f"error/{e}_mm"] = 1000.0 * m
                    else:
                        out[f"error/{e}_{ERROR_UNITS.get(e, 'si')}"] = m
        return out
