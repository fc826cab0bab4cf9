"""Entry points of the registered ids that need more than `TrackingVecEnv`'s own defaults.

``GymMotion/G1-Tracking-Eval-v0`` is the evaluation task: `eval_cfg` of the given (or default)
config, i.e. clips played from their start, no observation noise, no reset noise, no domain
randomisation or pushes.
"""

from __future__ import annotations

from typing import Any

from gym_motion.envs.config import TrackingEnvCfg, eval_cfg
from gym_motion.envs.single import TrackingEnv
from gym_motion.envs.tracking import TrackingVecEnv


def eval_vec_env(cfg: TrackingEnvCfg | None = None, **kwargs: Any) -> TrackingVecEnv:
    """`TrackingVecEnv` on ``eval_cfg(cfg)``; other keyword arguments as `TrackingVecEnv`."""
    return TrackingVecEnv(cfg=eval_cfg(cfg), **kwargs)


def eval_env(cfg: TrackingEnvCfg | None = None, **kwargs: Any) -> TrackingEnv:
    """`TrackingEnv` (single env) on ``eval_cfg(cfg)``; other keyword arguments as
    `TrackingEnv`."""
    return TrackingEnv(cfg=eval_cfg(cfg), **kwargs)
