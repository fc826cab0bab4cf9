"""Stable-Baselines3 adapter: the env as an SB3 ``VecEnv``, callbacks, training and run loading.

Modules:

- `vec_env`: `SB3VecEnv`, an SB3 ``VecEnv`` over a SAME_STEP `TrackingVecEnv`.
- `callbacks`: `TrackingLogCallback` and the training callbacks (`KLAdaptiveLRCallback`,
  `ResetNoiseCurriculum`, `ProgressBar`, `WallClockBudget`).
- `train`: `gym-motion train`, PPO with BeyondMimic's hyperparameters (`TrainConfig`,
  `make_env`, `make_model`, `train`).
- `policy`: a trained run folder as a policy callable for `gym_motion.evaluate`.

The names below are imported on first use, so importing this package (as the command line does
to register ``gym-motion train``) loads neither SB3 nor torch::

    from gym_motion.adapters.sb3 import SB3VecEnv, TrackingLogCallback
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gym_motion.adapters import lazy_exports

if TYPE_CHECKING:
    from gym_motion.adapters.sb3.callbacks import (
        KLAdaptiveLRCallback,
        ProgressBar,
        ResetNoiseCurriculum,
        TrackingLogCallback,
        WallClockBudget,
    )
    from gym_motion.adapters.sb3.policy import load_run_policy, model_policy
    from gym_motion.adapters.sb3.vec_env import SB3VecEnv

# public name -> the submodule that defines it
_SOURCES = {
    "SB3VecEnv": "vec_env",
    "TrackingLogCallback": "callbacks",
    "KLAdaptiveLRCallback": "callbacks",
    "ResetNoiseCurriculum": "callbacks",
    "ProgressBar": "callbacks",
    "WallClockBudget": "callbacks",
    "load_run_policy": "policy",
    "model_policy": "policy",
}

__all__ = [
    "KLAdaptiveLRCallback",
    "ProgressBar",
    "ResetNoiseCurriculum",
    "SB3VecEnv",
    "TrackingLogCallback",
    "WallClockBudget",
    "load_run_policy",
    "model_policy",
]


__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
