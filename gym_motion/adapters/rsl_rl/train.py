"""`gym-motion train --library rsl_rl`: rsl_rl's PPO (``OnPolicyRunner``) on the tracking task.

    gym-motion train --library rsl_rl                       # default motion, <= 12 min of learning
    gym-motion train --library rsl_rl --motion dance.npz --num-envs 256 --out runs/rsl --device cpu

The run folder has the layout of the Stable-Baselines3 runs (`gym_motion.adapters.sb3.train`):
``model.pt`` (rsl_rl's checkpoint: actor with its observation normaliser, critic, optimiser;
rsl_rl's own ``model_<iteration>.pt`` checkpoints beside it), TensorBoard events (rsl_rl's
``Loss/``, ``Train/``, ``Perf/`` keys, the tracking keys of `RslRlVecEnv`'s ``extras["log"]``,
``curriculum/reset_noise_scale`` and the periodic ``eval/*``), ``config.json`` (library,
training settings, rsl_rl's runner config, observation sizes, task config, versions),
``summary.json`` (zero-action evaluation before training and the trained policy's after,
`gym_motion.evaluate`) and ``training_curves.png``. ``gym-motion eval --model RUN`` loads it
(`gym_motion.adapters.rsl_rl.policy`). Ctrl-C saves the model and the summary without the
after-training evaluation (also when it comes during that evaluation), and exits with code 130.

PPO settings: `gym_motion.adapters.rsl_rl.config.PPO_DEFAULTS` (BeyondMimic's rsl_rl values),
changed with ``--ppo KEY=VALUE``. The env's reset noise ramps from none to the task's over the
first ``--reset-noise-ramp`` of the steps, as in the SB3 runs (rsl_rl itself has no such ramp).

Under ``torchrun``, ``--distributed`` makes each process one rank of a data-parallel run
(`gym_motion.adapters.rsl_rl.distributed`; docs/scaling.md).

The learning loop is rsl_rl's own ``OnPolicyRunner.learn``; after each iteration is logged
(`_AfterIteration`, around the runner's logger), this module records the curves, sets the
reset-noise scale, runs the periodic evaluation and stops learning at the wall-clock budget.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gym_motion.adapters.rsl_rl.config import resolved_ppo, runner_cfg
from gym_motion.adapters.run import (
    INTERRUPTED,
    after_vs_before,
    check_sampling,
    config_from_args,
    eval_kwargs,
    interruptible,
    jsonable,
    mean_tail,
    plot_curves,
    print_summary,
    reset_noise_scale,
    run_folder,
    stopped_by,
    task_cfg,
    train_motions,
)
from gym_motion.atomic import write_json

# rsl_rl, torch and matplotlib are imported inside the functions that use them: the command line
# imports this module to add its options to `gym-motion train`.

__all__ = ["TrainConfig", "add_cli_arguments", "make_env", "run_cli", "train"]

EVAL_KEYS = ("episode_length", "success_rate", "mpkpe_mm", "tracking_reward_per_clip_step")


@dataclass
class TrainConfig:
    """Everything `train` needs; ``gym-motion train --library rsl_rl`` fills it.

    Attributes:
        motion: clip paths (npz) or folders; empty: the embedded default motion.
        num_envs: N parallel envs. total_steps: env steps summed over envs (rounded up to
            whole iterations of ``num_steps_per_env`` x N).
        max_minutes: wall-clock budget of learning; learning stops after the iteration that
            passes it (None: no budget).
        backend: physics backend. backend_kwargs: its settings (e.g. num_threads).
        device: torch device of rsl_rl's networks and of the env's tensors ("cpu", "cuda:0").
        seed: seeds torch and the env. out: run folder (default ``runs/<date>-<time>``).
        obs_mode: "dict": the critic reads the privileged critic group (286 values), the actor
            the policy group (160); "policy": both read the policy group.
        state_estimation: False drops anchor position and base linear velocity (154 obs).
        eval_episodes, eval_max_seconds: the before/after evaluations (`gym_motion.evaluate`).
        reset_noise_ramp: fraction of `total_steps` over which the reset noise ramps from none
            to full (0: full from the first step).
        eval_every_steps: deterministic evaluation from the clip start every this many env
            steps and at the end (0: off).
        sampling: where training episodes start: "uniform" (default) or "adaptive"
            (`gym_motion.adapters.run.task_cfg`).
        ppo: keys of `PPO_DEFAULTS` to change.
        distributed: one rank of a ``torchrun`` run: device ``cuda:LOCAL_RANK``, seed + rank,
            the rank's block of CPU cores, rank 0 alone writes and evaluates (`train`).
    """

    motion: list[str] = field(default_factory=list)
    num_envs: int = 256
    total_steps: int = 3_000_000
    max_minutes: float | None = None
    backend: str = "mujoco"
    device: str = "cpu"
    seed: int = 0
    out: str | None = None
    obs_mode: str = "dict"
    state_estimation: bool = True
    eval_episodes: int = 1
    eval_max_seconds: float | None = None
    reset_noise_ramp: float = 0.5
    eval_every_steps: int = 500_000
    sampling: str = "uniform"
    ppo: dict[str, Any] = field(default_factory=dict)
    backend_kwargs: dict[str, Any] = field(default_factory=dict)
    distributed: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= self.reset_noise_ramp <= 1.0:
            raise ValueError(f"reset_noise_ramp must be in [0, 1], got {self.reset_noise_ramp}")
        if self.obs_mode not in ("dict", "policy"):
            raise ValueError(f"obs_mode must be 'dict' or 'policy', got {self.obs_mode!r}")
        check_sampling(self.sampling)
        resolved_ppo(self.ppo)  # unknown keys fail here, before any work

    def iterations(self) -> int:
        """Learning iterations of rsl_rl that cover `total_steps`."""
        per_iteration = resolved_ppo(self.ppo)["num_steps_per_env"] * self.num_envs
        return max(1, math.ceil(self.total_steps / per_iteration))


def make_env(config: TrainConfig, motions: list[str] | None):
    """The training env: `TrackingVecEnv` (SAME_STEP) -> `RslRlVecEnv` on ``config.device``."""
    from gym_motion.adapters.rsl_rl.vec_env import RslRlVecEnv
    from gym_motion.envs.tracking import TrackingVecEnv

    env = TrackingVecEnv(
        num_envs=config.num_envs,
        motion=motions or None,
        backend=config.backend,
        cfg=task_cfg(config),
        autoreset_mode="same_step",
        obs_mode=config.obs_mode,
        seed=config.seed,
        backend_kwargs=config.backend_kwargs or None,
    )
    env.reset_noise_scale = reset_noise_scale(0.0, config.reset_noise_ramp)
    return RslRlVecEnv(env, device=config.device)


def resolved_config(config: TrainConfig, motions: list[str], env) -> dict[str, Any]:
    """The JSON-able config of a run: library, train settings, rsl_rl's runner config,
    observation sizes and action count (what `load_actor` rebuilds the actor from), task
    config and versions."""
    from importlib.metadata import version

    import gymnasium
    import torch

    import gym_motion

    obs = env.get_observations()
    return {
        "library": "rsl_rl",
        "train": {**jsonable(config), "motion": motions},
        "rsl_rl": runner_cfg(config.ppo, config.obs_mode),
        "init_at_random_ep_len": resolved_ppo(config.ppo)["init_at_random_ep_len"],
        "obs_dims": {k: int(v.shape[-1]) for k, v in obs.items()},
        "num_actions": env.num_actions,
        "env": env.cfg,
        "versions": {
            "gym_motion": gym_motion.__version__,
            "rsl_rl_lib": version("rsl-rl-lib"),
            "torch": torch.__version__,
            "gymnasium": gymnasium.__version__,
            "python": platform.python_version(),
        },
    }


class _StopLearning(Exception):
    """Raised after an iteration to end rsl_rl's learning loop (the wall-clock budget)."""


class _AfterIteration:
    """Wraps ``runner.logger.log`` (rsl_rl calls it once per iteration, after the update, on
    every rank; it writes only on rank 0): after rsl_rl has logged iteration ``it``, record the
    tracking statistics of the iteration (``history``, for the curves), set the reset-noise
    scale for the next one, run the periodic evaluation (``evals``; rank 0) and raise
    `_StopLearning` past the wall-clock budget (on all ranks together: the slowest decides).

    ``steps`` counts env steps over all ranks (each rank steps ``world_size``-th of them)."""

    def __init__(
        self,
        runner,
        env,
        config: TrainConfig,
        evaluate: Callable[[], dict[str, Any]] | None,
        seconds: float | None,
        world_size: int = 1,
    ):
        self.runner, self.env, self.config = runner, env, config
        self._log = runner.logger.log
        self._evaluate = evaluate
        self.seconds = seconds
        self.world_size = world_size
        self.t0 = time.perf_counter()
        self.history: list[dict[str, float]] = []
        self.evals: list[dict[str, float]] = []
        self.hit_budget = False
        self.scale = reset_noise_scale(0.0, config.reset_noise_ramp)
        self._next_eval = config.eval_every_steps or math.inf
        runner.logger.log = self

    @property
    def steps(self) -> int:
        """Env steps so far, summed over envs and ranks."""
        return self.env.steps * self.world_size

    def __call__(self, **kwargs: Any) -> None:
        self._log(**kwargs)
        it, env, writer = kwargs["it"], self.env, self.runner.logger.writer
        values = env.stats.means()
        env.stats.reset()
        for key, value in env.unwrapped.sampling_stats.items():
            values[f"sampling/{key}"] = value
        collect = kwargs.get("collect_time") or 0.0
        if collect > 0:
            per_rank = env.num_envs * int(self.runner.cfg["num_steps_per_env"]) / collect
            values["time/env_steps_per_s"] = per_rank * self.world_size
        self.history.append({"timesteps": float(self.steps), **values})
        self.scale = reset_noise_scale(self.steps / max(1, self.config.total_steps),
                                  self.config.reset_noise_ramp)  # fmt: skip
        env.unwrapped.reset_noise_scale = self.scale
        if writer is not None:
            writer.add_scalar("curriculum/reset_noise_scale", self.scale, it)
        if self._evaluate is not None and self.steps >= self._next_eval:
            self.run_eval(it)
            while self._next_eval <= self.steps:
                self._next_eval += self.config.eval_every_steps
        if self._over_budget():
            self.hit_budget = True
            raise _StopLearning

    def _over_budget(self) -> bool:
        over = self.seconds is not None and time.perf_counter() - self.t0 > self.seconds
        if self.world_size > 1:  # every rank stops after the same iteration
            import torch

            flag = torch.tensor([float(over)], device=self.runner.device)
            torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
            over = bool(flag.item() > 0)
        return over

    def run_eval(self, it: int) -> None:
        """Evaluate now; log ``eval/*`` to TensorBoard at iteration `it` and keep them."""
        mean = self._evaluate()["mean"]
        values = {f"eval/{k}": float(mean[k]) for k in EVAL_KEYS if mean.get(k) is not None}
        writer = self.runner.logger.writer
        if writer is not None:
            for key, value in values.items():
                writer.add_scalar(key, value, it)
        self.evals.append({"timesteps": float(self.steps), **values})


def _for_rank(config: TrainConfig):
    """`config` as this rank runs it, and its `RankSettings` (None unless ``distributed``):
    device, seed + rank, and the rank's CPU block (pinned now, before any thread starts) or,
    with mjwarp, its GPU."""
    if not config.distributed:
        return config, None
    from gym_motion.adapters.rsl_rl.distributed import pin_process, rank_settings

    rank = rank_settings(config.seed, config.device)
    pin_process(rank)
    backend_kwargs = dict(config.backend_kwargs)
    if config.backend == "mujoco":
        backend_kwargs["cpu_ids"] = list(rank.cpu_ids)
    elif config.backend == "mjwarp" and rank.distributed:
        backend_kwargs["device"] = rank.device
    config = dataclasses.replace(
        config, device=rank.device, seed=rank.seed, backend_kwargs=backend_kwargs
    )
    return config, rank


def train(config: TrainConfig) -> dict[str, Any]:
    """Run a training job; rank 0 writes the run folder; returns the summary (also
    summary.json; other ranks return a summary without evaluations and write nothing).

    With ``config.distributed`` (under ``torchrun``), each rank builds its own env on its
    device, with its seed and CPU block (`gym_motion.adapters.rsl_rl.distributed`), and
    rsl_rl's runner averages the gradients over the ranks; ``total_steps`` counts all ranks'.

    Raises:
        FileExistsError: the run folder already holds a model.pt.
        ValueError: bad settings (unknown PPO keys, obs_mode, ramp, torchrun variables), or
            clips that fail to load.
    """
    import torch
    from rsl_rl.runners import OnPolicyRunner

    import gym_motion
    from gym_motion.adapters.rsl_rl.policy import actor_policy
    from gym_motion.evaluate import evaluate_policy_on_clips

    config, rank = _for_rank(config)
    main = rank is None or rank.is_main
    world = 1 if rank is None else rank.world_size
    motions = train_motions(config.motion)
    out = run_folder(config.out, "model.pt" if main else None)
    eval_kw = eval_kwargs(config)
    before = None
    if main:
        print(f"gym-motion train (rsl_rl): run folder {out}", flush=True)
        before = evaluate_policy_on_clips(motions, None, **eval_kw)  # also validates the clips
        out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(config.seed)
    env = make_env(config, motions)
    if main:
        resolved = resolved_config(config, motions, env)
        resolved["ranks"] = world
        write_json(out / "config.json", resolved)

    cfg = runner_cfg(config.ppo, config.obs_mode)
    runner = OnPolicyRunner(env, cfg, str(out) if main else None, config.device)
    if main:
        runner.add_git_repo_to_log(gym_motion.__file__)

    def policy():
        return actor_policy(runner.alg.get_policy(), config.device)

    def evaluate() -> dict[str, Any]:
        return evaluate_policy_on_clips(motions, policy(), **eval_kw)

    seconds = None if config.max_minutes is None else 60.0 * config.max_minutes
    periodic = evaluate if config.eval_every_steps and main else None
    hook = _AfterIteration(runner, env, config, periodic, seconds, world)
    random_start = bool(resolved_ppo(config.ppo)["init_at_random_ep_len"])
    iterations = max(1, math.ceil(config.iterations() / world))
    t0 = time.perf_counter()
    interrupted = False
    try:
        runner.learn(iterations, init_at_random_ep_len=random_start)
    except _StopLearning:
        pass
    except KeyboardInterrupt:
        interrupted = True
        print(INTERRUPTED, file=sys.stderr)
    wall = time.perf_counter() - t0
    summary: dict[str, Any] = {
        "run": str(out),
        "library": "rsl_rl",
        "interrupted": interrupted,
        "stopped_by": stopped_by(interrupted, hook.hit_budget),
        "env_steps": hook.steps,
        "iterations": runner.current_learning_iteration + 1,
        "train_wall_s": round(wall, 2),
        "env_steps_per_s_overall": round(hook.steps / wall, 1) if wall > 0 else None,
        "env_steps_per_s_rollout": mean_tail(hook.history, "time/env_steps_per_s"),
        "reset_noise_scale_final": hook.scale,
    }
    if world > 1:
        summary["ranks"] = world
    if not main:
        env.close()
        return {**summary, "rank": rank.rank}
    runner.save(str(out / "model.pt"))
    summary["before"] = before
    with interruptible(summary):  # Ctrl-C from here on: the model and summary.json are kept
        final_eval = not hook.evals or hook.evals[-1]["timesteps"] < hook.steps
        if config.eval_every_steps and not summary["interrupted"] and final_eval:
            hook.run_eval(runner.current_learning_iteration)
        if not summary["interrupted"]:
            after = evaluate_policy_on_clips(motions, policy(), **eval_kw)
            summary["after"], summary["after_vs_before"] = after, after_vs_before(before, after)
    if runner.logger.writer is not None:
        runner.logger.writer.flush()
    plot_curves(hook.history, out / "training_curves.png", hook.evals)
    if runner.logger.writer is not None:
        runner.logger.writer.close()
    env.close()
    write_json(out / "summary.json", summary)
    return summary


# ---------------------------------------------------------------------------------------------
# CLI (the parser is `gym-motion train`'s, built in gym_motion.adapters.sb3.train)


def add_cli_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the options only ``--library rsl_rl`` reads (``--device``, ``--distributed``) to
    `gym-motion train`."""
    parser.add_argument(
        "--device", default="cpu",
        help="with --library rsl_rl: torch device of the networks and env tensors "
        "(cpu, cuda:0; default %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--distributed", action="store_true",
        help="with --library rsl_rl under torchrun: one rank per GPU (cuda:LOCAL_RANK, seed + "
        "rank, its own CPU block; rank 0 writes the run; see docs/scaling.md)",
    )  # fmt: skip


def run_cli(args: argparse.Namespace) -> int:
    """Runs ``gym-motion train --library rsl_rl`` from `gym-motion train`'s parsed arguments;
    returns the exit code (130 when interrupted)."""
    config = TrainConfig(
        **config_from_args(args), device=args.device, distributed=args.distributed
    )
    summary = train(config)
    if "before" not in summary:  # a rank other than 0: rank 0 reports
        return 130 if summary["interrupted"] else 0
    return print_summary(summary)
