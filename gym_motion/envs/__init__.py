"""Tracking environments and their Gymnasium registration."""

from gym_motion.envs.config import (
    TrackingEnvCfg,
    eval_cfg,
    no_state_estimation,
    with_anchor_velocity,
    with_obs_noise,
    with_root_origin_velocity,
)
from gym_motion.envs.single import TrackingEnv
from gym_motion.envs.stats import TrackingStats, tracking_terms
from gym_motion.envs.tracking import TrackingVecEnv

__all__ = [
    "TrackingEnv",
    "TrackingEnvCfg",
    "TrackingStats",
    "TrackingVecEnv",
    "eval_cfg",
    "no_state_estimation",
    "tracking_terms",
    "with_anchor_velocity",
    "with_obs_noise",
    "with_root_origin_velocity",
]
