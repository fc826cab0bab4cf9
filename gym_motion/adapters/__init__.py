"""Adapters to RL libraries: one package per library, named for it.

- `gym_motion.adapters.sb3`: Stable-Baselines3 (``VecEnv``, callbacks, ``gym-motion train``).
- `gym_motion.adapters.rsl_rl`: rsl_rl (``VecEnv``, BeyondMimic's PPO settings,
  ``gym-motion train --library rsl_rl``).
- `gym_motion.adapters.skrl`: skrl (the statistics in ``info["episode"]``).
- `gym_motion.adapters.torchrl`: TorchRL (an info-dict reader for every ``final/*`` key).

Nothing here imports an adapter: each package pulls in its own library (install it with the
matching extra, e.g. ``pip install -e ".[sb3]"``), and the env, its statistics
(`gym_motion.envs.stats`) and evaluation (`gym_motion.evaluate`) need none of them.
"""
