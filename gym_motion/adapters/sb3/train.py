"""`gym-motion train`: PPO (Stable-Baselines3) on the G1 tracking task, with the logs and files
a researcher expects.

    gym-motion train                           # embedded default motion, <= 12 min of learning
    gym-motion train --motion dance.npz --num-envs 256 --total-steps 5000000 --out runs/dance

The run folder holds: ``model.zip`` (SB3 PPO), ``vecnormalize.pkl`` (observation
normalisation statistics), TensorBoard events and ``progress.csv`` (SB3's logger plus
`TrackingLogCallback`'s keys), ``config.json`` (the resolved training and task config),
``summary.json`` (zero-action evaluation before training and the trained policy's after, see
`gym_motion.evaluate`), ``training_curves.png`` and ``final_eval.mp4`` (the trained policy on
the first clip from its start, beside its reference as a translucent ghost; `gym_motion.video`;
``--no-video`` turns it off). Ctrl-C saves the policy trained so far (model, statistics, summary
without the after-training evaluation; also when it comes during that evaluation or the video)
and exits with code 130; training does not resume from it.

PPO hyperparameters (`PPO_DEFAULTS`) follow BeyondMimic's rsl_rl PPO configuration for the
G1 tracking task (whole_body_tracking, itself rsl_rl's defaults), adapted to SB3 on a CPU: 256
envs, 8 epochs, learning rate 5e-4 adapted once per update to a desired KL of 0.02, initial
action std 0.37, and a reset-noise curriculum (`ResetNoiseCurriculum`, ``reset_noise_ramp``:
none to docs/task.md section 9's over the first half of the steps). Why each differs from
rsl_rl, with the runs that measured it, is in docs/measurements.md.

``--algo sac`` trains SB3's SAC instead (`SAC_DEFAULTS`): the flat policy observation for actor
and critics, 4 gradient steps of batch 1024 per 4 vector steps (1024 transitions at 256 envs),
a 10^6-transition buffer, tau 0.01, entropy coefficient learnt from 0.01, actions squashed into
[-1, 1] (``action_bound``, the env's declared action space). It is the off-policy comparison of
docs/measurements.md, not the default.
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gym_motion import config_values as cv
from gym_motion.adapters.run import (
    INTERRUPTED,
    TRAIN_SAMPLING,
    after_vs_before,
    check_sampling,
    config_from_args,
    eval_kwargs,
    interruptible,
    jsonable,
    mean_tail,
    parse_overrides,
    plot_curves,
    print_summary,
    reset_noise_scale,
    run_folder,
    stopped_by,
    task_cfg,
    train_motions,
)
from gym_motion.atomic import write_json
from gym_motion.backends import BACKENDS

# SB3, torch and matplotlib are imported inside the functions that use them: the command line
# imports this module to register `gym-motion train`, and must start fast, and without them.

__all__ = [
    "PPO_DEFAULTS",
    "KLAdaptiveLR",
    "TrainConfig",
    "make_env",
    "make_model",
    "register_cli",
    "train",
]

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


# `gym-motion train` stops learning after this many minutes (the run, evaluations included,
# then ends within the 15 minutes promised for a 2-core machine shared with other jobs).
DEFAULT_MAX_MINUTES = 12.0


@dataclass
class TrainConfig:
    """Everything `train` needs; `gym-motion train` fills it from the command line.

    Attributes:
        motion: clip paths (npz) or folders; empty: the embedded default motion.
        num_envs: N parallel envs. total_steps: env steps summed over envs.
        max_minutes: wall-clock budget of the learning phase; training stops at the end of
            the rollout that passes it (None: no budget). The summary says which limit ended it.
        backend: physics backend name. seed: seeds PPO, torch and the env.
        out: run folder; default ``runs/<date>-<time>``.
        obs_mode: "dict" (default): asymmetric actor-critic, the actor reads the policy group
            (160 values), the critic the privileged critic group (286;
            `AsymmetricActorCriticPolicy`); "policy": both read the policy group (MlpPolicy).
        state_estimation: False drops anchor position and base linear velocity (154 obs).
        eval_episodes: episodes per clip in the before/after evaluations (eval is
            deterministic, so one is enough). eval_max_seconds: cap on an eval episode.
        reset_noise_ramp: fraction of `total_steps` over which the reset noise (docs/task.md
            section 9) ramps linearly from none to full (`reset_noise_scale`); 0 trains with
            full reset noise from the first step. See the module docstring.
        eval_every_steps: a deterministic evaluation from the clip start (`eval_kw` as the
            before/after ones) every this many env steps and at the end, logged as ``eval/*``
            and drawn in the curves PNG; 0 turns it off.
        sampling: where training episodes start along the clips: "uniform" (default) or
            "adaptive" (docs/task.md section 10's failure-weighted mixture; why it is not the
            default here: docs/measurements.md, "Learning at equal steps").
        video_seconds: length of ``final_eval.mp4``, s (320x240 at 25 fps; measured on 2
            busy cores with software EGL: 1.6 s to make for a policy that falls after 1.3 s,
            4 to 8 s for the full 5 s); 0: no video. A video that cannot be made (no OpenGL
            context, no ``imageio-ffmpeg``) is reported in the summary, never an error.
        algo: "ppo" (default) or "sac" (SB3's SAC; observation mode "policy" only, its actor
            and critics read the same observation).
        ppo: PPO hyperparameters, `PPO_DEFAULTS` overridden by these keys.
        sac: SAC hyperparameters, `SAC_DEFAULTS` overridden by these keys.
        backend_kwargs: passed to the backend (e.g. num_threads).
    """

    motion: list[str] = field(default_factory=list)
    num_envs: int = 256
    total_steps: int = 3_000_000
    max_minutes: float | None = None
    backend: str = "mujoco"
    seed: int = 0
    out: str | None = None
    obs_mode: str = "dict"
    state_estimation: bool = True
    eval_episodes: int = 1
    eval_max_seconds: float | None = None
    reset_noise_ramp: float = 0.5
    eval_every_steps: int = 500_000
    sampling: str = "uniform"
    video_seconds: float = 5.0
    ppo: dict[str, Any] = field(default_factory=dict)
    backend_kwargs: dict[str, Any] = field(default_factory=dict)
    algo: str = "ppo"
    sac: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0.0 <= self.reset_noise_ramp <= 1.0:
            raise ValueError(f"reset_noise_ramp must be in [0, 1], got {self.reset_noise_ramp}")
        check_sampling(self.sampling)
        if self.algo not in ALGOS:
            raise ValueError(f"algo must be one of {ALGOS}, got {self.algo!r}")
        if self.algo == "sac" and self.obs_mode != "policy":
            raise ValueError(
                "algo 'sac' trains on obs_mode 'policy' (SB3's SAC feeds every observation "
                f"group to its actor), got obs_mode {self.obs_mode!r}"
            )
        self.resolved_ppo()
        self.resolved_sac()

    def resolved_ppo(self) -> dict[str, Any]:
        unknown = set(self.ppo) - set(PPO_DEFAULTS)
        if unknown:
            raise ValueError(f"unknown PPO settings {sorted(unknown)}; known: {list(PPO_DEFAULTS)}")
        return {**PPO_DEFAULTS, **self.ppo}

    def resolved_sac(self) -> dict[str, Any]:
        unknown = set(self.sac) - set(SAC_DEFAULTS)
        if unknown:
            raise ValueError(f"unknown SAC settings {sorted(unknown)}; known: {list(SAC_DEFAULTS)}")
        return {**SAC_DEFAULTS, **self.sac}


class KLAdaptiveLR:
    """A learning-rate "schedule" whose value `KLAdaptiveLRCallback` moves with the KL.

    rsl_rl's rule: KL > 2 desired -> lr / 1.5; KL < desired / 2 -> lr * 1.5; clamped to
    [1e-5, 1e-2]. SB3 reads the value at the start of every update. ``desired_kl=None`` keeps
    the rate fixed.
    """

    def __init__(
        self, lr: float, desired_kl: float | None = 0.01, lo: float = 1e-5, hi: float = 1e-2
    ):
        self.lr, self.lo, self.hi = float(lr), lo, hi
        self.desired_kl = None if desired_kl is None else float(desired_kl)

    def __call__(self, progress_remaining: float) -> float:
        return self.lr

    def update(self, kl: float) -> None:
        if self.desired_kl is None or not math.isfinite(kl):
            return
        if kl > 2.0 * self.desired_kl:
            self.lr = max(self.lo, self.lr / 1.5)
        elif kl < 0.5 * self.desired_kl:
            self.lr = min(self.hi, self.lr * 1.5)


def make_env(config: TrainConfig, motions: list[str] | None):
    """The training env: TrackingVecEnv (SAME_STEP) -> SB3VecEnv -> VecNormalize (obs only)."""
    from gymnasium.vector import AutoresetMode
    from stable_baselines3.common.vec_env import VecNormalize

    from gym_motion.adapters.sb3.vec_env import SB3VecEnv
    from gym_motion.envs.tracking import TrackingVecEnv

    env = TrackingVecEnv(
        num_envs=config.num_envs,
        motion=motions or None,
        backend=config.backend,
        cfg=task_cfg(config),
        autoreset_mode=AutoresetMode.SAME_STEP,
        obs_mode=config.obs_mode,
        seed=config.seed,
        backend_kwargs=config.backend_kwargs or None,
        **({"action_bound": config.resolved_sac()["action_bound"]} if config.algo == "sac" else {}),
    )
    env.reset_noise_scale = reset_noise_scale(0.0, config.reset_noise_ramp)
    return VecNormalize(SB3VecEnv(env), norm_obs=True, norm_reward=False, clip_obs=10.0)


ACTIVATIONS = ("elu", "relu", "tanh")


def _activation(name: str):
    import torch

    if name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {name!r}")
    return {"elu": torch.nn.ELU, "relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[name]


def make_model(config: TrainConfig, venv, tensorboard_dir: str | None = None):
    """The model of `config.algo` with `config`'s hyperparameters; returns (model, learning-rate
    schedule: a `KLAdaptiveLR` for PPO, None for SAC)."""
    import gymnasium as gym

    if (config.obs_mode == "dict") != isinstance(venv.observation_space, gym.spaces.Dict):
        raise ValueError(
            f"obs_mode {config.obs_mode!r} needs an env built with obs_mode={config.obs_mode!r}; "
            f"got observation space {venv.observation_space}"
        )
    if config.algo == "sac":
        return _make_sac(config, venv, tensorboard_dir), None
    from stable_baselines3 import PPO

    p = config.resolved_ppo()
    rollout = p["n_steps"] * config.num_envs
    batch = max(1, rollout // p["num_minibatches"])
    schedule = KLAdaptiveLR(p["learning_rate"], p["desired_kl"])
    arch = list(p["net_arch"])
    from gym_motion.adapters.sb3.asymmetric import AsymmetricActorCriticPolicy

    model = PPO(
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
        device="cpu",
        verbose=0,
    )
    return model, schedule


def _make_sac(config: TrainConfig, venv, tensorboard_dir: str | None):
    """SB3's SAC on the flat policy observation, `SAC_DEFAULTS` overridden by `config.sac`.
    ``train_freq`` and ``gradient_steps`` count vector steps (each is ``num_envs``
    transitions); ``action_bound`` is the env's declared action range (SAC squashes into it)."""
    from stable_baselines3 import SAC

    p = config.resolved_sac()
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
        device="cpu",
        verbose=0,
    )


def resolved_config(config: TrainConfig, motions: list[str]) -> dict[str, Any]:
    """The JSON-able resolved config of a run (train settings, PPO, task, versions)."""
    import gymnasium
    import stable_baselines3
    import torch

    import gym_motion

    p = config.resolved_ppo()
    algo = (
        {"sac": config.resolved_sac()}
        if config.algo == "sac"
        else {
            "ppo": {
                **p,
                "batch_size": max(1, p["n_steps"] * config.num_envs // p["num_minibatches"]),
                "rollout_size": p["n_steps"] * config.num_envs,
            }
        }
    )
    return {
        "train": {**jsonable(config), "motion": motions},
        **algo,
        "env": jsonable(task_cfg(config)),
        "versions": {
            "gym_motion": gym_motion.__version__,
            "stable_baselines3": stable_baselines3.__version__,
            "torch": torch.__version__,
            "gymnasium": gymnasium.__version__,
            "python": platform.python_version(),
        },
    }


def train(config: TrainConfig) -> dict[str, Any]:
    """Run a training job; writes the run folder and returns the summary (also summary.json).

    A KeyboardInterrupt during learning, the after-training evaluation or the video saves the
    model and returns (and writes) a summary with ``"interrupted": True`` (without what was
    not done).
    """
    from stable_baselines3.common.logger import configure

    from gym_motion.adapters.sb3.callbacks import (
        KLAdaptiveLRCallback,
        PeriodicEvaluation,
        ProgressBar,
        ResetNoiseCurriculum,
        TrackingLogCallback,
        WallClockBudget,
    )
    from gym_motion.adapters.sb3.policy import model_policy
    from gym_motion.evaluate import evaluate_policy_on_clips

    motions = train_motions(config.motion)
    out = run_folder(config.out, "model.zip")
    eval_kw = eval_kwargs(config)
    print(f"gym-motion train: run folder {out}", flush=True)
    before = evaluate_policy_on_clips(motions, None, **eval_kw)  # also validates the clips
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "config.json", resolved_config(config, motions))

    venv = make_env(config, motions)
    model, schedule = make_model(config, venv)
    model.set_logger(configure(str(out), ["tensorboard", "csv"]))
    sac = config.algo == "sac"
    # SAC "rollouts" are train_freq vector steps: log about once per PPO-sized rollout
    log_cb = TrackingLogCallback(every_steps=SAC_LOG_EVERY if sac else 0, dump=sac)
    seconds = None if config.max_minutes is None else 60.0 * config.max_minutes
    curriculum = ResetNoiseCurriculum(config.reset_noise_ramp, config.total_steps)
    callbacks = [curriculum, log_cb, ProgressBar(config.total_steps)]
    if schedule is not None:
        callbacks.append(KLAdaptiveLRCallback(schedule))
    budget = None
    if seconds is not None:
        budget = WallClockBudget(seconds)
        callbacks.append(budget)
    evals = None
    if config.eval_every_steps:
        evals = PeriodicEvaluation(
            config.eval_every_steps,
            lambda: evaluate_policy_on_clips(motions, model_policy(model, venv), **eval_kw),
            dump=sac,
        )
        callbacks.append(evals)

    t0 = time.perf_counter()
    interrupted = False
    try:
        # SAC dumps its logs per episode count unless log_interval is None (log_cb dumps)
        learn_kw = {"log_interval": None} if sac else {}
        model.learn(config.total_steps, callback=callbacks, **learn_kw)
    except KeyboardInterrupt:
        interrupted = True
        print(INTERRUPTED, file=sys.stderr)
    wall = time.perf_counter() - t0
    if model.logger.name_to_value:  # the last update's and the final evaluation's row
        model.logger.record("time/total_timesteps", model.num_timesteps, exclude="tensorboard")
        model.logger.dump(model.num_timesteps)
    model.save(out / "model.zip")
    venv.save(str(out / "vecnormalize.pkl"))
    plot_curves(log_cb.history, out / "training_curves.png", evals.history if evals else [])
    steps = int(model.num_timesteps)
    summary: dict[str, Any] = {
        "run": str(out),
        "interrupted": interrupted,
        "stopped_by": stopped_by(interrupted, budget is not None and budget.hit),
        "env_steps": steps,
        "train_wall_s": round(wall, 2),
        "env_steps_per_s_overall": round(steps / wall, 1) if wall > 0 else None,
        "env_steps_per_s_rollout": mean_tail(log_cb.history, "time/env_steps_per_s"),
        "reset_noise_scale_final": curriculum.scale,
        "before": before,
    }
    if not interrupted:
        venv.training = False
        with interruptible(summary):
            after = evaluate_policy_on_clips(motions, model_policy(model, venv), **eval_kw)
            summary["after"], summary["after_vs_before"] = after, after_vs_before(before, after)
            if config.video_seconds > 0:
                summary["video"] = _final_video(out / "final_eval.mp4", model_policy(model, venv),
                                               motions[0], config)  # fmt: skip
    venv.close()
    write_json(out / "summary.json", summary)
    return summary


def _final_video(path: Path, policy, clip: str, config: TrainConfig) -> dict[str, Any]:
    """`gym_motion.video.record_video` of `policy` on `clip` (``config.video_seconds``, the
    run's observation and backend settings); returns its result, or ``{"error": message}``
    (also printed) when no video could be made: the run is saved by then, and stays valid."""
    try:
        from gym_motion.video import record_video

        return record_video(
            path, policy, clip, seconds=config.video_seconds, obs_mode=config.obs_mode,
            state_estimation=config.state_estimation, backend=config.backend,
            backend_kwargs=config.backend_kwargs or None, seed=config.seed, progress=False,
        )  # fmt: skip
    except (ImportError, RuntimeError, OSError) as exc:
        print(f"gym-motion train: no video of the final evaluation: {exc}", file=sys.stderr)
        return {"error": str(exc)}


# ---------------------------------------------------------------------------------------------
# CLI


def register_cli(subparsers: argparse._SubParsersAction) -> None:
    """Adds ``gym-motion train`` to the CLI's subparsers."""
    d = TrainConfig()
    p = subparsers.add_parser(
        "train",
        help="train a tracking policy (PPO or SAC with Stable-Baselines3, or rsl_rl's PPO)",
        description="PPO (BeyondMimic/rsl_rl hyperparameters, see "
        "gym_motion.adapters.sb3.train) on the G1 tracking task, or SAC (--algo sac), or "
        "rsl_rl's PPO (--library rsl_rl); writes model, normalisation stats, TensorBoard logs, "
        "config, summary and curves to the run folder.",
    )
    p.add_argument(
        "--motion", nargs="+", default=[], metavar="CLIP", help="clip npz(s) or folders "
        "(default: the embedded default motion)"
    )  # fmt: skip
    p.add_argument("--num-envs", type=cv.cli_number(int, 1), default=d.num_envs,
                   help="parallel envs")  # fmt: skip
    p.add_argument("--total-steps", type=cv.cli_number(int, 1), default=d.total_steps,
                   help="env steps, all envs (learning stops at the first whole rollout, "
                   "num_envs x n_steps env steps, that reaches it)")  # fmt: skip
    p.add_argument(
        "--max-minutes", type=cv.cli_number(float, None), default=DEFAULT_MAX_MINUTES,
        help="wall-clock budget of learning; <= 0: none (default %(default)s)",
    )  # fmt: skip
    p.add_argument("--backend", default=d.backend, choices=BACKENDS, help="physics backend")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--out", default=None, help="run folder (default runs/<date>-<time>)")
    p.add_argument(
        "--obs-mode",
        choices=("policy", "dict"),
        default=None,
        help="dict (PPO's default): asymmetric actor-critic (actor: policy group, critic: "
        "privileged critic group); policy (SAC's, the only one for SAC): all networks read the "
        "policy group",
    )
    p.add_argument(
        "--no-state-estimation", action="store_true", help="154-value policy observation"
    )
    p.add_argument(
        "--num-threads", type=cv.cli_number(int, 1), default=None,
        help="physics threads (--backend mujoco)",
    )
    p.add_argument(
        "--reset-noise-ramp", type=cv.cli_number(float, 0.0), default=d.reset_noise_ramp,
        metavar="F",
        help="ramp the reset noise from none to full over this fraction of --total-steps; "
        "0: full from the start (default %(default)s)",
    )  # fmt: skip
    p.add_argument(
        "--eval-every", type=cv.cli_number(int, 0), default=d.eval_every_steps, metavar="STEPS",
        help="deterministic evaluation from the clip start every STEPS env steps, in the logs "
        "and curves (0: off; default %(default)s)",
    )  # fmt: skip
    p.add_argument(
        "--sampling", choices=TRAIN_SAMPLING, default=d.sampling,
        help="where training episodes start along the clips: uniform (default) or adaptive "
        "(failure-weighted, docs/task.md section 10)",
    )  # fmt: skip
    p.add_argument(
        "--no-video", action="store_true",
        help=f"no final_eval.mp4 ({d.video_seconds:g} s of the trained policy on the first clip)",
    )  # fmt: skip
    p.add_argument(
        "--ppo", nargs="*", default=[], metavar="KEY=VALUE",
        help=f"override PPO settings ({', '.join(PPO_DEFAULTS)}; with --library rsl_rl the "
        "keys of gym_motion.adapters.rsl_rl.config.PPO_DEFAULTS), values as JSON",
    )  # fmt: skip
    p.add_argument(
        "--algo", choices=ALGOS, default=d.algo,
        help="with --library sb3: ppo (default) or sac (SB3's SAC, --sac settings)",
    )  # fmt: skip
    p.add_argument(
        "--sac", nargs="*", default=[], metavar="KEY=VALUE",
        help=f"override SAC settings ({', '.join(SAC_DEFAULTS)}), values as JSON",
    )  # fmt: skip
    p.add_argument(
        "--library", choices=("sb3", "rsl_rl"), default="sb3",
        help="sb3 (default): Stable-Baselines3; rsl_rl: rsl_rl's OnPolicyRunner "
        "(gym_motion.adapters.rsl_rl.train; --ppo keys of its PPO_DEFAULTS; no video)",
    )  # fmt: skip
    from gym_motion.adapters.rsl_rl.train import add_cli_arguments  # imports no rsl_rl

    add_cli_arguments(p)
    p.set_defaults(func=_run_cli)


def _check_backend_options(args: argparse.Namespace) -> None:
    """Refuse a setting of another backend before anything is built or written.

    Raises:
        ValueError: ``--num-threads`` with ``--backend mjwarp`` (the message says what to do).
    """
    if args.backend == "mjwarp" and args.num_threads is not None:
        raise ValueError(
            "--num-threads sets the physics threads of --backend mujoco; --backend mjwarp steps "
            "physics on one Warp device instead (cuda:$LOCAL_RANK under torchrun, else cuda:0; "
            "CUDA_VISIBLE_DEVICES chooses the GPU): drop --num-threads"
        )


def _run_cli(args: argparse.Namespace) -> int:
    _check_backend_options(args)
    if getattr(args, "library", "sb3") == "rsl_rl" and args.algo != "ppo":
        raise ValueError(f"--algo {args.algo} is an sb3 algorithm; --library rsl_rl trains PPO")
    if getattr(args, "library", "sb3") == "rsl_rl":
        from gym_motion.adapters.rsl_rl.train import run_cli

        return run_cli(args)
    config = TrainConfig(
        **config_from_args(args),
        video_seconds=0.0 if args.no_video else TrainConfig.video_seconds,
        algo=args.algo,
        sac=parse_overrides(args.sac),
    )
    return print_summary(train(config))
