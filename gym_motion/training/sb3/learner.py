"""Stable-Baselines3 in `gym-motion train` (``--library sb3``, the default): PPO or SAC.

    gym-motion train                           # embedded default motion, 2.1 M env steps
    gym-motion train --motion dance.npz --num-envs 256 --total-steps 5000000 --out runs/dance

`SB3Learner` is this library's `gym_motion.training.skeleton.Learner`. Its run folder holds,
besides what every run has (`gym_motion.training.train`): ``model.zip`` (the SB3 model),
``vecnormalize.pkl`` (observation normalisation statistics), TensorBoard events and
``progress.csv`` (SB3's logger plus `TrackingLogCallback`'s keys).

The hyperparameters and their defaults are `gym_motion.training.sb3.config`'s.

SB3 and torch are imported inside the functions that use them: the registry of libraries
imports this module, and the command line must start fast, and without them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gym_motion.atomic import atomic_file
from gym_motion.policy import Policy
from gym_motion.training.sb3.config import SAC_LOG_EVERY, resolved_settings

if TYPE_CHECKING:
    from stable_baselines3.common.logger import CSVOutputFormat, Logger

    from gym_motion.training.config import RunConfig
    from gym_motion.training.progress import Progress

__all__ = ["SB3Learner", "make_model", "progress_logger"]

ACTIVATIONS = ("elu", "relu", "tanh")


def _activation(name: str):
    import torch

    if name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {name!r}")
    return {"elu": torch.nn.ELU, "relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[name]


def make_model(
    config: RunConfig,
    venv,
    tensorboard_dir: str | None = None,
    device_rollouts: bool | None = None,
):
    """The model of `config.algo` with `config`'s hyperparameters on ``config.device``
    (`gym_motion.training.devices.resolve_device`); returns (model, learning-rate schedule: a
    `KLAdaptiveLR` for PPO, None for SAC). PPO is `gym_motion.training.sb3.ppo.TrackingPPO`:
    its rollouts collected on the device unless `device_rollouts` is False (default None: on
    any device but the CPU).

    Raises:
        ValueError: obs_mode and the env's observation space disagree; a device torch does not
            list.
    """
    import gymnasium as gym

    if (config.obs_mode == "dict") != isinstance(venv.observation_space, gym.spaces.Dict):
        raise ValueError(
            f"obs_mode {config.obs_mode!r} needs an env built with obs_mode={config.obs_mode!r}; "
            f"got observation space {venv.observation_space}"
        )
    if config.algo == "sac":
        return _make_sac(config, venv, tensorboard_dir), None
    from gym_motion.training.devices import resolve_device
    from gym_motion.training.sb3.ppo import TrackingPPO

    p = resolved_settings(config)
    rollout = p["n_steps"] * config.num_envs
    batch = max(1, rollout // p["num_minibatches"])
    from gym_motion.adapters.sb3.callbacks import KLAdaptiveLR

    schedule = KLAdaptiveLR(p["learning_rate"], p["desired_kl"])
    arch = list(p["net_arch"])
    from gym_motion.adapters.sb3.asymmetric import AsymmetricActorCriticPolicy

    model = TrackingPPO(
        AsymmetricActorCriticPolicy if config.obs_mode == "dict" else "MlpPolicy",
        venv,
        learning_rate=schedule,
        n_steps=p["n_steps"],
        batch_size=batch,
        n_epochs=p["n_epochs"],
        gamma=p["gamma"],
        gae_lambda=p["gae_lambda"],
        clip_range=p["clip_range"],
        ent_coef=p["ent_coef"],
        vf_coef=p["vf_coef"],
        max_grad_norm=p["max_grad_norm"],
        target_kl=p["target_kl"],
        policy_kwargs={
            "net_arch": {"pi": arch, "vf": arch},
            "activation_fn": _activation(p["activation"]),
            "log_std_init": p["log_std_init"],
        },
        tensorboard_log=tensorboard_dir,
        seed=config.seed,
        device=resolve_device(config.device),
        verbose=0,
        device_rollouts=device_rollouts,
    )
    return model, schedule


def _make_sac(config: RunConfig, venv, tensorboard_dir: str | None):
    """SB3's SAC on the flat policy observation, `SAC_DEFAULTS` overridden by `config.sac`.
    ``train_freq`` and ``gradient_steps`` count vector steps (each is ``num_envs``
    transitions); ``action_bound`` is the env's declared action range (SAC squashes into it)."""
    from stable_baselines3 import SAC

    from gym_motion.training.devices import resolve_device

    p = resolved_settings(config)
    return SAC(
        "MlpPolicy",
        venv,
        learning_rate=p["learning_rate"],
        buffer_size=p["buffer_size"],
        learning_starts=p["learning_starts"],
        batch_size=p["batch_size"],
        tau=p["tau"],
        gamma=p["gamma"],
        train_freq=(p["train_freq"], "step"),
        gradient_steps=p["gradient_steps"],
        ent_coef=p["ent_coef"],
        policy_kwargs={
            "net_arch": list(p["net_arch"]),
            "activation_fn": _activation(p["activation"]),
        },  # fmt: skip
        tensorboard_log=tensorboard_dir,
        seed=config.seed,
        device=resolve_device(config.device),
        verbose=0,
    )


class SB3Learner:
    """Stable-Baselines3's PPO or SAC as a `gym_motion.training.skeleton.Learner`: the env is
    wrapped as `SB3VecEnv` under ``VecNormalize`` (observations only, clipped at 10), the model
    built by `make_model`, and SB3's own ``learn`` loop runs with `TrackingLogCallback`,
    a progress bar, the KL-adaptive learning rate (PPO) and `ProgressCallback`."""

    model_file = "model.zip"

    @classmethod
    def check(cls, config: RunConfig) -> None:
        """Raises ValueError for settings SB3 cannot run (unknown algorithm or settings, SAC
        on dict observations, a distributed run), and ModuleNotFoundError without SB3 or torch
        (the ``[sb3]`` extra), before any work."""
        import stable_baselines3  # noqa: F401
        import torch  # noqa: F401

        resolved_settings(config)
        if config.algo == "sac" and config.obs_mode != "policy":
            raise ValueError(
                "algo 'sac' trains on obs_mode 'policy' (SB3's SAC feeds every observation "
                f"group to its actor), got obs_mode {config.obs_mode!r}"
            )
        if config.distributed:
            raise ValueError("distributed runs train with library rsl_rl, not sb3")

    @classmethod
    def env_kwargs(cls, config: RunConfig) -> dict[str, Any]:
        if config.algo == "sac":  # SAC squashes its actions into the declared bound
            return {"action_bound": resolved_settings(config)["action_bound"]}
        return {}

    @staticmethod
    def load_policy(run_dir: Path) -> Policy:
        from gym_motion.training.sb3.policy import load_run_policy

        return load_run_policy(run_dir)[0]

    @staticmethod
    def actor_module(run_dir: Path):
        from gym_motion.training.sb3.export import actor_module

        return actor_module(run_dir)

    def __init__(self, config: RunConfig, env: Any, out: Path | None, world_size: int = 1):
        from stable_baselines3.common.vec_env import VecNormalize

        from gym_motion.adapters.sb3.vec_env import SB3VecEnv

        self.config, self._out = config, out
        self.venv = VecNormalize(SB3VecEnv(env), norm_obs=True, norm_reward=False, clip_obs=10.0)
        self.model, self.schedule = make_model(config, self.venv)
        self._resumed_at: int | None = None

    def config_entries(self) -> dict[str, Any]:
        p = resolved_settings(self.config)
        if self.config.algo == "sac":
            return {"sac": p}
        rollout = p["n_steps"] * self.config.num_envs
        batch = max(1, rollout // p["num_minibatches"])
        return {"ppo": {**p, "batch_size": batch, "rollout_size": rollout}}

    def versions(self) -> dict[str, str]:
        import stable_baselines3
        import torch

        return {"stable_baselines3": stable_baselines3.__version__, "torch": torch.__version__}

    def load(self, path: Path, env_steps: int) -> None:
        """Continue from the checkpoint in `path`: the model (weights, optimiser, step count,
        the `KLAdaptiveLR` at its current rate) and the observation statistics; progress.csv
        goes on after the earlier sessions' rows (`progress_logger`). Both files are unpickled
        (SB3's format): resume only runs you trust."""
        import pickle

        from stable_baselines3 import SAC

        from gym_motion.training.devices import resolve_device
        from gym_motion.training.sb3.ppo import TrackingPPO

        algo = SAC if self.config.algo == "sac" else TrackingPPO
        device = resolve_device(self.config.device)
        self.model = algo.load(path / "model.zip", env=self.venv, device=device)
        with open(path / "vecnormalize.pkl", "rb") as f:
            saved = pickle.load(f)
        self.venv.obs_rms = saved.obs_rms
        self.model._last_obs = None  # the envs are new: SB3 resets them before learning
        self.schedule = self.model.learning_rate if self.config.algo == "ppo" else None
        self._resumed_at = env_steps

    def init_from(self, path: Path) -> None:
        """Start from the networks of the run in `path` (a warm start): its policy's weights
        (actor, critic, action std) and its observation statistics; the optimiser and step
        count stay new. Both files are unpickled (SB3's format): start only from runs you
        trust.

        Raises:
            ValueError: its networks' shapes differ from this run's (the first named).
        """
        import pickle

        from stable_baselines3 import SAC

        from gym_motion.training.sb3.ppo import TrackingPPO

        algo = SAC if self.config.algo == "sac" else TrackingPPO
        source = algo.load(path / "model.zip", device="cpu")
        try:
            self.model.policy.load_state_dict(source.policy.state_dict())
        except RuntimeError as exc:
            first = " ".join(str(exc).split())[:300]
            raise ValueError(
                f"--init {path}: its networks do not fit this run's: {first}"
            ) from None
        with open(path / "vecnormalize.pkl", "rb") as f:
            self.venv.obs_rms = pickle.load(f).obs_rms

    def learn(self, progress: Progress) -> None:
        from gym_motion.adapters.sb3.callbacks import (
            KLAdaptiveLRCallback,
            ProgressBar,
            TrackingLogCallback,
        )
        from gym_motion.training.sb3.callbacks import ProgressCallback

        self.model.set_logger(progress_logger(self._out, resumed_at=self._resumed_at))
        sac = self.config.algo == "sac"
        # SAC "rollouts" are train_freq vector steps: log about once per PPO-sized rollout
        log = TrackingLogCallback(every_steps=SAC_LOG_EVERY if sac else 0, dump=sac)
        callbacks = [log, ProgressBar(self.config.total_steps)]
        if self.schedule is not None:
            callbacks.append(KLAdaptiveLRCallback(self.schedule))
        callbacks.append(ProgressCallback(progress, log, dump=sac))
        # SAC dumps its logs per episode count unless log_interval is None (log dumps)
        learn_kw = {"log_interval": None} if sac else {}
        remaining = self.config.total_steps - self.model.num_timesteps
        if remaining > 0:
            self.model.learn(remaining, callback=callbacks, reset_num_timesteps=False, **learn_kw)

    @property
    def env_steps(self) -> int:
        return int(self.model.num_timesteps)

    def summary_entries(self) -> dict[str, Any]:
        return {}

    def policy(self) -> Policy:
        from gym_motion.training.sb3.policy import model_policy

        return model_policy(self.model, self.venv)

    def log(self, values: dict[str, float]) -> None:
        for key, value in values.items():
            self.model.logger.record(key, value)

    def save(self, path: Path) -> None:
        import pickle

        with atomic_file(path / "model.zip") as f:
            self.model.save(f)
        with atomic_file(path / "vecnormalize.pkl") as f:  # what VecNormalize.save writes
            pickle.dump(self.venv, f)

    def close(self) -> None:
        logger = self.model.logger
        if logger.name_to_value:  # the last update's and the final evaluation's row
            logger.record("time/total_timesteps", self.model.num_timesteps, exclude="tensorboard")
            logger.dump(self.model.num_timesteps)
        logger.close()
        self.venv.close()


def progress_logger(out: Path | None, *, resumed_at: int | None = None) -> Logger:
    """SB3's logger of a run: TensorBoard events and ``progress.csv`` in `out` (None: SB3's
    temporary folder). A run resumed from its checkpoint at `resumed_at` env steps goes on
    writing progress.csv after the rows its earlier sessions wrote up to that step, so a
    session killed before it closes loses none; rows past the checkpoint (a session killed
    between checkpoints) are dropped, since the resumed session logs those steps again.

    Raises:
        ValueError: `out`'s progress.csv has rows but no ``time/total_timesteps`` column.
    """
    from stable_baselines3.common.logger import configure

    if out is None or resumed_at is None:
        return configure(None if out is None else str(out), ["tensorboard", "csv"])
    logger = configure(str(out), ["tensorboard"])
    logger.output_formats.append(_continued_csv(out / "progress.csv", resumed_at))
    return logger


def _continued_csv(path: Path, resumed_at: int) -> CSVOutputFormat:
    """SB3's CSV writer after the rows of `path` up to `resumed_at` env steps; the file is
    first rewritten (atomically) with SB3's separators and line ends, blank lines dropped, so
    that SB3's rewrite when a new column appears keeps every row aligned."""
    import csv

    from stable_baselines3.common.logger import CSVOutputFormat

    keys: list[str] = []
    rows: list[list[str]] = []
    if path.is_file():
        with open(path, newline="") as f:
            keys, *rows = [r for r in csv.reader(f) if r] or [[]]
    if rows:
        if "time/total_timesteps" not in keys:
            raise ValueError(f"{path}: no time/total_timesteps column to resume from")
        col = keys.index("time/total_timesteps")
        rows = [r for r in rows if not r[col] or float(r[col]) <= resumed_at]
    with atomic_file(path, "w") as f:
        csv.writer(f, lineterminator="\n").writerows([keys, *rows] if keys else [])

    class ContinuedCSV(CSVOutputFormat):
        def __init__(self) -> None:  # CSVOutputFormat's own truncates the file
            self.file = open(path, "r+")  # noqa: SIM115 (closed by the logger)
            self.file.seek(0, os.SEEK_END)
            self.keys, self.separator, self.quotechar = list(keys), ",", '"'

    return ContinuedCSV()
