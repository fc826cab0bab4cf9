"""Stable-Baselines3 adapter: what a user's own SB3 loop imports.

Modules:

- `vec_env`: `SB3VecEnv`, an SB3 ``VecEnv`` over a SAME_STEP `TrackingVecEnv`.
- `callbacks`: `TrackingLogCallback` (the env's statistics to SB3's logger) and callbacks a loop
  may add (`KLAdaptiveLR` with `KLAdaptiveLRCallback`, `ResetNoiseCurriculum`, `ProgressBar`).
- `asymmetric`: `AsymmetricActorCriticPolicy`, the actor on the policy group and the critic on
  the privileged group.

`gym-motion train`'s Stable-Baselines3 learner, its defaults and run folders are
`gym_motion.training.sb3`. The names below are imported on first use, so importing this package
loads neither SB3 nor torch::

    from gym_motion.adapters.sb3 import SB3VecEnv, TrackingLogCallback
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gym_motion.adapters import lazy_exports

if TYPE_CHECKING:
    from gym_motion.adapters.sb3.asymmetric import AsymmetricActorCriticPolicy
    from gym_motion.adapters.sb3.callbacks import (
        KLAdaptiveLR,
        KLAdaptiveLRCallback,
        ProgressBar,
        ResetNoiseCurriculum,
        TrackingLogCallback,
    )
    from gym_motion.adapters.sb3.vec_env import SB3VecEnv

# public name -> the submodule that defines it
_SOURCES = {
    "SB3VecEnv": "vec_env",
    "AsymmetricActorCriticPolicy": "asymmetric",
    "TrackingLogCallback": "callbacks",
    "KLAdaptiveLR": "callbacks",
    "KLAdaptiveLRCallback": "callbacks",
    "ResetNoiseCurriculum": "callbacks",
    "ProgressBar": "callbacks",
}

__all__ = [
    "AsymmetricActorCriticPolicy",
    "KLAdaptiveLR",
    "KLAdaptiveLRCallback",
    "ProgressBar",
    "ResetNoiseCurriculum",
    "SB3VecEnv",
    "TrackingLogCallback",
]


__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
