"""rsl_rl's PPO settings for the tracking task, as the nested dict its ``OnPolicyRunner`` takes.

`PPO_DEFAULTS` are BeyondMimic's rsl_rl configuration for the G1 tracking task
(whole_body_tracking's ``G1FlatPPORunnerCfg``, the same in mjlab's tracking task) adapted to a
CPU as the SB3 learner's are (`gym_motion.training.sb3`): 24 steps per env and iteration, 4
minibatches, gamma 0.99, GAE lambda 0.95, clip 0.2, entropy 0.005, value loss coefficient 1.0
with a clipped value loss, gradient norm 1.0, actor and critic MLPs [512, 256, 128] with ELU,
empirical observation normalisation, a checkpoint every 500 iterations, and episodes started at
random lengths (``init_at_random_ep_len``, as Isaac Lab's rsl_rl training script starts them),
as BeyondMimic; and, for 256 envs instead of 4096 (`gym_motion.training.RunConfig`'s
``num_envs``), 8 epochs instead of 5, learning rate 5e-4 adapted to a desired KL of 0.02
instead of 1e-3 and 0.01, and a Gaussian action distribution of initial std 0.37 instead of
1.0. BeyondMimic's own values collapsed at 256 envs by 0.2 M steps; the adapted ones learn the
default motion in the main command's 2.1 M steps (docs/measurements.md, "rsl_rl at CPU scale").
BeyondMimic's exactly: ``--ppo init_std=1.0 num_learning_epochs=5 learning_rate=1e-3
desired_kl=0.01`` (`BEYONDMIMIC_PPO`).

Example::

    cfg = runner_cfg(BEYONDMIMIC_PPO, obs_mode="dict")  # BeyondMimic's values
    cfg["obs_groups"]  # {"actor": ["policy"], "critic": ["critic"]}: privileged critic

Nothing here imports rsl_rl or torch.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BEYONDMIMIC_PPO", "PPO_DEFAULTS", "recorded_ppo", "resolved_ppo", "runner_cfg"]

PPO_DEFAULTS: dict[str, Any] = {
    "num_steps_per_env": 24,
    "learning_rate": 5.0e-4,
    "schedule": "adaptive",
    "desired_kl": 0.02,
    "num_learning_epochs": 8,
    "num_mini_batches": 4,
    "gamma": 0.99,
    "lam": 0.95,
    "clip_param": 0.2,
    "entropy_coef": 0.005,
    "value_loss_coef": 1.0,
    "use_clipped_value_loss": True,
    "max_grad_norm": 1.0,
    "hidden_dims": [512, 256, 128],
    "activation": "elu",
    "obs_normalization": True,
    "init_std": 0.37,
    "save_interval": 500,
    "init_at_random_ep_len": True,
}

# the `PPO_DEFAULTS` keys whose values differ in BeyondMimic's configuration (4096 envs)
BEYONDMIMIC_PPO: dict[str, Any] = {
    "learning_rate": 1.0e-3,
    "desired_kl": 0.01,
    "num_learning_epochs": 5,
    "init_std": 1.0,
}

# PPO_DEFAULTS keys that go into the runner's "algorithm" dict
_ALGORITHM = (
    "learning_rate",
    "schedule",
    "desired_kl",
    "num_learning_epochs",
    "num_mini_batches",
    "gamma",
    "lam",
    "clip_param",
    "entropy_coef",
    "value_loss_coef",
    "use_clipped_value_loss",
    "max_grad_norm",
)


def resolved_ppo(overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """`PPO_DEFAULTS` with `overrides` applied.

    Raises:
        ValueError: an override names an unknown setting (the known ones are listed).
    """
    overrides = dict(overrides or {})
    unknown = set(overrides) - set(PPO_DEFAULTS)
    if unknown:
        raise ValueError(
            f"unknown rsl_rl PPO settings {sorted(unknown)}; known: {list(PPO_DEFAULTS)}"
        )
    return {**PPO_DEFAULTS, **overrides}


def runner_cfg(overrides: dict[str, Any] | None = None, obs_mode: str = "dict") -> dict[str, Any]:
    """The ``train_cfg`` dict of rsl_rl 5's ``OnPolicyRunner`` (PPO, MLP actor and critic).

    Args:
        overrides: keys of `PPO_DEFAULTS` to change.
        obs_mode: "dict": the critic reads the env's privileged ``critic`` group (asymmetric
            actor-critic); "policy": both read the ``policy`` group.

    Raises:
        ValueError: an unknown override or obs_mode.
    """
    if obs_mode not in ("dict", "policy"):
        raise ValueError(f"obs_mode must be 'dict' or 'policy', got {obs_mode!r}")
    p = resolved_ppo(overrides)

    def model(distribution: bool) -> dict[str, Any]:
        m = {
            "class_name": "MLPModel",
            "hidden_dims": list(p["hidden_dims"]),
            "activation": p["activation"],
            "obs_normalization": p["obs_normalization"],
        }
        if distribution:
            m["distribution_cfg"] = {
                "class_name": "GaussianDistribution",
                "init_std": p["init_std"],
                "std_type": "scalar",
            }
        return m

    critic_group = "critic" if obs_mode == "dict" else "policy"
    return {
        "num_steps_per_env": p["num_steps_per_env"],
        "save_interval": p["save_interval"],
        "obs_groups": {"actor": ["policy"], "critic": [critic_group]},
        "algorithm": {"class_name": "PPO", **{k: p[k] for k in _ALGORITHM}},
        "actor": model(distribution=True),
        "critic": model(distribution=False),
        "logger": "tensorboard",
    }


def recorded_ppo(runner: dict[str, Any], init_at_random_ep_len: bool = True) -> dict[str, Any]:
    """The `PPO_DEFAULTS` overrides that `runner_cfg` turns into `runner`, a run's recorded
    runner config (config.json's ``"rsl_rl"``), so that a run resumed after the defaults
    changed keeps the settings it trained with.

    Args:
        runner: a dict `runner_cfg` returned (its ``algorithm``, ``actor`` and top-level keys
            are read; the ``obs_groups`` are the run's ``obs_mode``, not a PPO setting).
        init_at_random_ep_len: the run's recorded value (config.json's top-level key).

    Returns:
        The keys of `PPO_DEFAULTS` whose recorded value differs from today's default.

    Raises:
        KeyError: `runner` lacks a key `runner_cfg` writes.
    """
    actor = runner["actor"]
    settings = {
        "num_steps_per_env": runner["num_steps_per_env"],
        "save_interval": runner["save_interval"],
        **{k: runner["algorithm"][k] for k in _ALGORITHM},
        "hidden_dims": list(actor["hidden_dims"]),
        "activation": actor["activation"],
        "obs_normalization": actor["obs_normalization"],
        "init_std": actor["distribution_cfg"]["init_std"],
        "init_at_random_ep_len": bool(init_at_random_ep_len),
    }
    return {k: v for k, v in settings.items() if v != PPO_DEFAULTS[k]}
