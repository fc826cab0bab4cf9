"""rsl_rl adapter: what a user's own rsl_rl loop imports for the env.

- `vec_env`: `RslRlVecEnv`, rsl_rl's ``VecEnv`` over a SAME_STEP `TrackingVecEnv` (torch
  tensors on a device of your choice, ``policy`` and privileged ``critic`` observation groups,
  tracking statistics in ``extras["log"]``, an episode-length buffer rsl_rl may randomise).

``gym-motion train --library rsl_rl``'s learner, its PPO defaults (`runner_cfg`) and run folders
are `gym_motion.training.rsl_rl`. Install with ``pip install -e ".[rsl_rl]"`` (rsl-rl-lib,
tensordict, torch). The name below is imported on first use, so importing this package loads
neither rsl_rl nor torch::

    from gym_motion.adapters.rsl_rl import RslRlVecEnv
    from gym_motion.training.rsl_rl import runner_cfg
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gym_motion.adapters import lazy_exports

if TYPE_CHECKING:
    from gym_motion.adapters.rsl_rl.vec_env import RslRlVecEnv

# public name -> the submodule that defines it
_SOURCES = {"RslRlVecEnv": "vec_env"}

__all__ = ["RslRlVecEnv"]


__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
