"""Stable-Baselines3 adapter: the env as an SB3 ``VecEnv``, callbacks, and run loading.

Modules:

- `vec_env`: `SB3VecEnv`, an SB3 ``VecEnv`` over a SAME_STEP `TrackingVecEnv`.
- `callbacks`: `TrackingLogCallback` and the training callbacks (`KLAdaptiveLR` with
  `KLAdaptiveLRCallback`, `ResetNoiseCurriculum`, `ProgressBar`).
`gym-motion train`'s Stable-Baselines3 learner (PPO with BeyondMimic's hyperparameters, or
SAC) is `gym_motion.training.sb3`.
- `policy`: a trained run folder as a policy callable for `gym_motion.evaluate`.
- `vec_wrappers`: `ObsMoments` and `SpacesVecEnv`, for rollouts collected in other processes
  (`gym_motion.training.sb3_sampled`).

The names below are imported on first use, so importing this package (as the command line does
to register ``gym-motion train``) loads neither SB3 nor torch::

    from gym_motion.adapters.sb3 import SB3VecEnv, TrackingLogCallback
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gym_motion.adapters import lazy_exports

if TYPE_CHECKING:
    from gym_motion.adapters.sb3.callbacks import (
        KLAdaptiveLR,
        KLAdaptiveLRCallback,
        ProgressBar,
        ResetNoiseCurriculum,
        TrackingLogCallback,
    )
    from gym_motion.adapters.sb3.policy import load_run_policy, model_policy
    from gym_motion.adapters.sb3.vec_env import SB3VecEnv

# public name -> the submodule that defines it
_SOURCES = {
    "SB3VecEnv": "vec_env",
    "TrackingLogCallback": "callbacks",
    "KLAdaptiveLR": "callbacks",
    "KLAdaptiveLRCallback": "callbacks",
    "ResetNoiseCurriculum": "callbacks",
    "ProgressBar": "callbacks",
    "load_run_policy": "policy",
    "model_policy": "policy",
}

__all__ = [
    "KLAdaptiveLR",
    "KLAdaptiveLRCallback",
    "ProgressBar",
    "ResetNoiseCurriculum",
    "SB3VecEnv",
    "TrackingLogCallback",
    "load_run_policy",
    "model_policy",
]


__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
