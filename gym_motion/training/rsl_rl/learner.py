"""rsl_rl in `gym-motion train` (``--library rsl_rl``): its PPO (``OnPolicyRunner``).

    gym-motion train --library rsl_rl                       # default motion, 2.1 M env steps
    gym-motion train --library rsl_rl --motion dance.npz --num-envs 256 --out runs/rsl --device cpu

`RslRlLearner` is this library's `gym_motion.training.skeleton.Learner`. Its run folder holds,
besides what every run has (`gym_motion.training.train`): ``model.pt`` (rsl_rl's checkpoint:
actor with its observation normaliser, critic, optimiser; rsl_rl's own ``model_<iteration>.pt``
checkpoints beside it) and TensorBoard events (rsl_rl's ``Loss/``, ``Train/``, ``Perf/`` keys,
the tracking keys of `RslRlVecEnv`'s ``extras["log"]``, ``curriculum/reset_noise_scale`` and the
``eval/*`` evaluations). Its config.json adds rsl_rl's runner config, the observation sizes and
the action count (what `gym_motion.training.rsl_rl.policy.load_actor` rebuilds the actor from).

PPO settings: `gym_motion.training.rsl_rl.config.PPO_DEFAULTS` (BeyondMimic's rsl_rl values
adapted to 256 envs on a CPU), changed with ``RunConfig.ppo`` (``--ppo KEY=VALUE``). Under
``torchrun``, ``distributed`` makes each process one rank of a data-parallel run
(`gym_motion.training.distributed`; docs/scaling.md): rsl_rl's runner averages the gradients
over the ranks.

The learning loop is rsl_rl's own ``OnPolicyRunner.learn``; after each iteration is logged
(its logger's ``log`` is wrapped), the run's `Progress` gets the iteration's tracking
statistics. rsl_rl, torch and tensordict are imported when a learner is built.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gym_motion.policy import Policy
from gym_motion.training.rsl_rl.config import resolved_ppo, runner_cfg

if TYPE_CHECKING:
    from gym_motion.training.config import RunConfig
    from gym_motion.training.progress import Progress

__all__ = ["RslRlLearner"]


class _StopLearning(Exception):
    """Raised after an iteration to end rsl_rl's learning loop (the budget)."""


class RslRlLearner:
    """rsl_rl's ``OnPolicyRunner`` as a `gym_motion.training.skeleton.Learner`: the env is
    wrapped as `RslRlVecEnv` on ``config.device`` and the runner learns for the iterations
    that cover ``total_steps`` (over all ranks)."""

    model_file = "model.pt"

    @classmethod
    def check(cls, config: RunConfig) -> None:
        """Raises ValueError for settings rsl_rl cannot run (an algorithm other than PPO,
        unknown PPO settings, SAC settings), and ModuleNotFoundError without rsl_rl, tensordict
        or torch (the ``[rsl_rl]`` extra), before any work."""
        import rsl_rl  # noqa: F401
        import tensordict  # noqa: F401
        import torch  # noqa: F401

        if config.algo != "ppo":
            raise ValueError(f"algo {config.algo!r} is an sb3 algorithm; library rsl_rl trains "
                             "PPO")  # fmt: skip
        if config.sac:
            raise ValueError("sac settings are for library sb3's algo 'sac'")
        resolved_ppo(config.ppo)

    @classmethod
    def env_kwargs(cls, config: RunConfig) -> dict[str, Any]:
        return {}

    @staticmethod
    def load_policy(run_dir: Path) -> Policy:
        from gym_motion.training.rsl_rl.policy import load_run_policy

        return load_run_policy(run_dir)[0]

    @staticmethod
    def actor_module(run_dir: Path):
        from gym_motion.training.rsl_rl.export import actor_module

        return actor_module(run_dir)

    def __init__(self, config: RunConfig, env: Any, out: Path | None, world_size: int = 1):
        import torch
        from rsl_rl.runners import OnPolicyRunner

        import gym_motion
        from gym_motion.adapters.rsl_rl.vec_env import RslRlVecEnv

        self.config = config
        self._steps0 = 0
        self._iteration = 0  # rsl_rl's latest logged iteration: the step of `log`'s scalars
        torch.manual_seed(config.seed)
        self.env = RslRlVecEnv(env, device=config.device)
        self.runner = OnPolicyRunner(
            self.env, runner_cfg(config.ppo, config.obs_mode),
            None if out is None else str(out), config.device,
        )  # fmt: skip
        if out is not None:
            self.runner.add_git_repo_to_log(gym_motion.__file__)
        self.world_size = world_size

    def config_entries(self) -> dict[str, Any]:
        obs = self.env.get_observations()
        return {
            "rsl_rl": runner_cfg(self.config.ppo, self.config.obs_mode),
            "init_at_random_ep_len": resolved_ppo(self.config.ppo)["init_at_random_ep_len"],
            "obs_dims": {k: int(v.shape[-1]) for k, v in obs.items()},
            "num_actions": self.env.num_actions,
            "ranks": self.world_size,
        }

    def versions(self) -> dict[str, str]:
        from importlib.metadata import version

        import torch

        return {"rsl_rl_lib": version("rsl-rl-lib"), "torch": torch.__version__}

    def load(self, path: Path, env_steps: int) -> None:
        """Continue from the checkpoint in `path` (model.pt: actor and critic with their
        normalisers, optimiser, learning rate, iteration) taken at `env_steps`.

        Raises:
            ValueError: model.pt holds more than tensors and plain containers (it is read
                with ``weights_only=True`` first: rsl_rl's own loader unpickles in full).
        """
        from gym_motion.training.rsl_rl.policy import load_checkpoint

        load_checkpoint(path / "model.pt", "cpu")  # refuses a file that could run code
        self.runner.load(str(path / "model.pt"), map_location=self.config.device)
        self._steps0 = int(env_steps)
        self._iteration = self.runner.current_learning_iteration

    def init_from(self, path: Path) -> None:
        """Start from the networks of the run in `path` (a warm start): its actor and critic
        with their normalisers; the optimiser, learning rate and iteration stay new.

        Raises:
            ValueError: model.pt holds more than tensors and plain containers, or its networks'
                shapes differ from this run's (the first named).
        """
        from gym_motion.training.rsl_rl.policy import load_checkpoint

        load_checkpoint(path / "model.pt", "cpu")  # refuses a file that could run code
        try:
            self.runner.load(str(path / "model.pt"), load_cfg={"actor": True, "critic": True},
                             map_location=self.config.device)  # fmt: skip
        except RuntimeError as exc:
            first = " ".join(str(exc).split())[:300]
            raise ValueError(
                f"--init {path}: its networks do not fit this run's: {first}"
            ) from None
        self.runner.current_learning_iteration = 0

    def learn(self, progress: Progress) -> None:
        p = resolved_ppo(self.config.ppo)
        per_iteration = p["num_steps_per_env"] * self.config.num_envs * self.world_size
        remaining = self.config.total_steps - self._steps0
        if remaining <= 0:
            return
        iterations = max(1, math.ceil(remaining / per_iteration))
        logger = self.runner.logger
        log = logger.log

        def after_iteration(**kwargs: Any) -> None:
            # rsl_rl calls it once per iteration, after the update, on every rank
            log(**kwargs)
            values = self.env.stats.means()
            self.env.stats.reset()
            for key, value in self.env.unwrapped.sampling_stats.items():
                values[f"sampling/{key}"] = value
            collect = kwargs.get("collect_time") or 0.0
            if collect > 0:
                per_rank = self.env.num_envs * int(self.runner.cfg["num_steps_per_env"]) / collect
                values["time/env_steps_per_s"] = per_rank * self.world_size
            values["time/rollout_s"] = collect  # the per-update profile, as SB3's learner logs
            values["time/update_s"] = kwargs.get("learn_time") or 0.0
            evals = progress.after_rollout(self.env_steps, values)
            self._iteration = kwargs["it"]
            self.log({"curriculum/reset_noise_scale": progress.scale, **evals})
            if progress.stop:
                raise _StopLearning

        logger.log = after_iteration
        try:
            self.runner.learn(iterations, init_at_random_ep_len=bool(p["init_at_random_ep_len"]))
        except _StopLearning:
            pass
        finally:
            logger.log = log

    @property
    def env_steps(self) -> int:
        return self._steps0 + self.env.steps * self.world_size

    def summary_entries(self) -> dict[str, Any]:
        return {"iterations": self.runner.current_learning_iteration + 1}

    def policy(self) -> Policy:
        from gym_motion.training.rsl_rl.policy import actor_policy

        return actor_policy(self.runner.alg.get_policy(), self.config.device)

    def log(self, values: dict[str, float]) -> None:
        writer = self.runner.logger.writer
        if writer is not None:
            for key, value in values.items():
                writer.add_scalar(key, value, self._iteration)

    def save(self, path: Path) -> None:
        tmp = path / ".model.pt.tmp"  # torch.save takes a path: written whole, then renamed
        self.runner.save(str(tmp))
        os.replace(tmp, path / "model.pt")

    def close(self) -> None:
        writer = self.runner.logger.writer
        if writer is not None:
            writer.flush()
            writer.close()
        self.env.close()
