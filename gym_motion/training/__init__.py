"""Training runs: one typed config, one run folder, one skeleton every RL library plugs into.

    from gym_motion.training import RunConfig, RunFolder, train

    summary = train(RunConfig(library="sb3", num_envs=64, total_steps=200_000, out="runs/x"))
    RunFolder("runs/x").policy()  # the trained deterministic policy

- `config`: `RunConfig` (its ``env`` is the `TrackingEnvCfg` it trains on), `train_env_cfg`.
- `skeleton`: `train` and the `Learner` interface; `progress`: `Progress`, what runs between
  a learner's rollouts (reset-noise ramp, periodic evaluations, budget, curves' history).
- `run_folder`: `RunFolder`, a run's config.json, summary.json, policy and exportable actor.
- `libraries`: ``LIBRARIES``, name -> learner (Stable-Baselines3, rsl_rl).
- `distributed`: ranks of a ``torchrun`` run. `curves`: ``training_curves.png``.
- `samplers`: `SamplerPool`, Ray sampler actors collecting rollouts (``--samplers``);
  `sb3_sampled`: SB3 PPO learning from them (Ray imported only when a pool is made).
"""

from gym_motion.training.config import RunConfig, train_env_cfg
from gym_motion.training.run_folder import RunFolder
from gym_motion.training.skeleton import train

__all__ = ["RunConfig", "RunFolder", "train", "train_env_cfg"]
