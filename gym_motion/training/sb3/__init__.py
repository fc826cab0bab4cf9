"""Stable-Baselines3 in `gym-motion train` (``--library sb3``, the default), one module each:

- `config`: `PPO_DEFAULTS`, `SAC_DEFAULTS` and a run's resolved hyperparameters;
- `learner`: `SB3Learner` (the skeleton's `Learner`), `make_model`, `progress_logger`;
- `ppo`: `TrackingPPO`, SB3's PPO with its rollouts on the training device;
- `callbacks`: `ProgressCallback`, which drives the run's `Progress` from SB3's loop;
- `policy`, `export`: a run folder's policy and its actor for ONNX;
- `sampled`, `vec_wrappers`: PPO learning from Ray samplers (``--samplers``).

What a user's own SB3 loop imports (`SB3VecEnv`, `TrackingLogCallback`, the asymmetric
policy) is `gym_motion.adapters.sb3`. Importing this package loads neither SB3 nor torch.
"""

from gym_motion.training.sb3.config import (
    ALGOS,
    PPO_DEFAULTS,
    SAC_DEFAULTS,
    SAC_LOG_EVERY,
    resolved_settings,
)
from gym_motion.training.sb3.learner import SB3Learner, make_model, progress_logger

__all__ = [
    "ALGOS",
    "PPO_DEFAULTS",
    "SAC_DEFAULTS",
    "SAC_LOG_EVERY",
    "SB3Learner",
    "make_model",
    "progress_logger",
    "resolved_settings",
]
