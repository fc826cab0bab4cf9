"""rsl_rl adapter: the env as an rsl_rl ``VecEnv``, PPO settings and run loading.

Modules:

- `vec_env`: `RslRlVecEnv`, rsl_rl's ``VecEnv`` over a SAME_STEP `TrackingVecEnv` (torch
  tensors on a device of your choice, ``policy`` and privileged ``critic`` observation groups,
  tracking statistics in ``extras["log"]``, an episode-length buffer rsl_rl may randomise).
- `config`: `PPO_DEFAULTS` (BeyondMimic's rsl_rl values adapted to a CPU), `BEYONDMIMIC_PPO`
  (the values that differ in BeyondMimic's), `runner_cfg`, the ``OnPolicyRunner`` config dict,
  and `recorded_ppo`, the settings back from a recorded one.
- `export`: a run's actor for ONNX export.

``gym-motion train --library rsl_rl``'s learner is `gym_motion.training.rsl_rl`.
- `policy`: a trained run folder as a policy callable for `gym_motion.evaluate`.

Install with ``pip install -e ".[rsl_rl]"`` (rsl-rl-lib, tensordict, torch). The names below are
imported on first use, so importing this package loads neither rsl_rl nor torch::

    from gym_motion.adapters.rsl_rl import RslRlVecEnv, runner_cfg
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gym_motion.adapters import lazy_exports

if TYPE_CHECKING:
    from gym_motion.adapters.rsl_rl.config import (
        BEYONDMIMIC_PPO,
        PPO_DEFAULTS,
        recorded_ppo,
        runner_cfg,
    )
    from gym_motion.adapters.rsl_rl.policy import actor_policy, load_actor, load_run_policy
    from gym_motion.adapters.rsl_rl.vec_env import RslRlVecEnv

# public name -> the submodule that defines it
_SOURCES = {
    "RslRlVecEnv": "vec_env",
    "BEYONDMIMIC_PPO": "config",
    "PPO_DEFAULTS": "config",
    "recorded_ppo": "config",
    "runner_cfg": "config",
    "actor_policy": "policy",
    "load_actor": "policy",
    "load_run_policy": "policy",
}

__all__ = [
    "BEYONDMIMIC_PPO",
    "PPO_DEFAULTS",
    "RslRlVecEnv",
    "actor_policy",
    "load_actor",
    "load_run_policy",
    "recorded_ppo",
    "runner_cfg",
]


__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
