"""rsl_rl in `gym-motion train` (``--library rsl_rl``), one module each:

- `config`: `PPO_DEFAULTS` (BeyondMimic's rsl_rl values adapted to a CPU), `BEYONDMIMIC_PPO`,
  `runner_cfg` (the ``OnPolicyRunner`` config dict) and `recorded_ppo`;
- `learner`: `RslRlLearner`, the skeleton's `Learner`;
- `policy`, `export`: a run folder's policy and its actor for ONNX.

What a user's own rsl_rl loop imports for the env (`RslRlVecEnv`) is
`gym_motion.adapters.rsl_rl`; its runner config, `config` here. Importing this package loads
neither rsl_rl nor torch.
"""

from gym_motion.training.rsl_rl.config import (
    BEYONDMIMIC_PPO,
    PPO_DEFAULTS,
    recorded_ppo,
    resolved_ppo,
    runner_cfg,
)
from gym_motion.training.rsl_rl.learner import RslRlLearner

__all__ = [
    "BEYONDMIMIC_PPO",
    "PPO_DEFAULTS",
    "RslRlLearner",
    "recorded_ppo",
    "resolved_ppo",
    "runner_cfg",
]
