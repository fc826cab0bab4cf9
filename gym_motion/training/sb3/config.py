"""Stable-Baselines3's settings in `gym-motion train`: the PPO and SAC defaults, and a run's
resolved hyperparameters.

PPO hyperparameters (`PPO_DEFAULTS`) follow BeyondMimic's rsl_rl PPO configuration for the
G1 tracking task (whole_body_tracking, itself rsl_rl's defaults), adapted to SB3 on a CPU: 256
envs, 8 epochs, learning rate 5e-4 adapted once per update to a desired KL of 0.02, initial
action std 0.37, and the skeleton's reset-noise ramp (none to docs/task.md section 9's over the
first 1.5 M steps). Why each differs from BeyondMimic's, with the runs that measured it, is in
docs/measurements.md.

``algo="sac"`` trains SB3's SAC instead (`SAC_DEFAULTS`): the flat policy observation for actor
and critics, 4 gradient steps of batch 1024 per 4 vector steps (1024 transitions at 256 envs),
a 10^6-transition buffer, tau 0.01, entropy coefficient learnt from 0.01, actions squashed into
[-1, 1] (``action_bound``, the env's declared action space). It is the off-policy comparison of
docs/measurements.md, not the default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gym_motion.training.config import RunConfig

__all__ = ["ALGOS", "PPO_DEFAULTS", "SAC_DEFAULTS", "SAC_LOG_EVERY", "resolved_settings"]

# BeyondMimic / rsl_rl PPO values (see the module docstring for the adaptations).
PPO_DEFAULTS: dict[str, Any] = {
    "learning_rate": 5e-4,
    "desired_kl": 0.02,
    "target_kl": 0.05,
    "n_steps": 24,
    "n_epochs": 8,
    "num_minibatches": 4,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "clip_range": 0.2,
    "ent_coef": 0.005,
    "vf_coef": 1.0,
    "max_grad_norm": 1.0,
    "log_std_init": -1.0,
    "net_arch": [512, 256, 128],
    "activation": "elu",
}

# SAC (``--algo sac``) for many envs on a CPU: one gradient step per `gradient_steps` of the
# envs' transitions, large batches; see the module docstring.
SAC_DEFAULTS: dict[str, Any] = {
    "learning_rate": 3e-4,
    "buffer_size": 1_000_000,
    "learning_starts": 2048,
    "batch_size": 1024,
    "tau": 0.01,
    "gamma": 0.99,
    "train_freq": 4,
    "gradient_steps": 4,
    "ent_coef": "auto_0.01",
    # SAC squashes into +-action_bound and starts with a wide policy: at +-4 the first 250 k
    # steps' episodes lasted 4-5 steps, at +-1 (a quarter to half a radian per joint) 40-55
    "action_bound": 1.0,
    "net_arch": [512, 256, 128],
    "activation": "elu",
}
ALGOS = ("ppo", "sac")
SAC_LOG_EVERY = 6144  # env steps per logged row of a SAC run (one default PPO rollout)


def resolved_settings(config: RunConfig) -> dict[str, Any]:
    """The hyperparameters of ``config.algo``: its defaults with ``config.ppo`` or
    ``config.sac`` applied.

    Raises:
        ValueError: an unknown algorithm or setting (named, with the known ones).
    """
    if config.algo not in ALGOS:
        raise ValueError(f"algo must be one of {ALGOS} with library sb3, got {config.algo!r}")
    for name, defaults in (("ppo", PPO_DEFAULTS), ("sac", SAC_DEFAULTS)):
        unknown = set(getattr(config, name)) - set(defaults)
        if unknown:
            raise ValueError(f"unknown {name.upper()} settings {sorted(unknown)}; known: "
                             f"{list(defaults)}")  # fmt: skip
    name, defaults = ("sac", SAC_DEFAULTS) if config.algo == "sac" else ("ppo", PPO_DEFAULTS)
    overrides = getattr(config, name)
    return {**defaults, **overrides}
