"""``gym-motion train``: the command line of `gym_motion.training.train`.

gym-motion train                           # embedded default motion, 2.1 M env steps
gym-motion train --motion dance.npz --recipe clip --out runs/dance   # a real clip
gym-motion train --library rsl_rl          # rsl_rl's PPO instead of Stable-Baselines3's
gym-motion train --samplers 2 --envs-per-sampler 128   # 2 Ray sampler actors (local Ray)
gym-motion train --set env.rewards.action_rate.weight=-0.2   # any config field by its path
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from gym_motion.backends import BACKENDS
from gym_motion.cli.numbers import cli_number

__all__ = ["parse_overrides", "register", "resume_config", "run_config"]

# what `print_summary` says of summary.json's "stopped_by"
STOP_REASONS = {
    "max_minutes": "; stopped by the --max-minutes budget before --total-steps",
    "interrupt": "; interrupted",
    "error": '; stopped by an error (summary.json\'s "error")',
}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds ``gym-motion train`` to the CLI's subparsers (imports no RL library)."""
    from gym_motion.envs.config import policy_terms
    from gym_motion.managers.action import ACTION_OFFSETS
    from gym_motion.training.config import OBS_MODES, TRAIN_SAMPLING, RunConfig
    from gym_motion.training.libraries import LIBRARIES
    from gym_motion.training.recipes import RECIPES
    from gym_motion.training.sb3 import ALGOS, PPO_DEFAULTS, SAC_DEFAULTS

    d = RunConfig()
    p = subparsers.add_parser(
        "train",
        help="train a tracking policy (PPO or SAC with Stable-Baselines3, or rsl_rl's PPO)",
        description="PPO (BeyondMimic/rsl_rl hyperparameters, see "
        "gym_motion.training.sb3) on the G1 tracking task, or SAC (--algo sac), or "
        "rsl_rl's PPO (--library rsl_rl); writes model, normalisation stats, TensorBoard logs, "
        "config, summary, curves and a video to the run folder.",
    )
    run = p.add_argument_group("run")
    run.add_argument(
        "--motion", nargs="+", default=[], metavar="CLIP", help="clip npz(s) or folders "
        "(default: the embedded default motion)"
    )  # fmt: skip
    run.add_argument(
        "--recipe", choices=tuple(RECIPES), default=None,
        help="settings measured together (gym_motion.training.recipes), each replaced by its own "
        "flag or --set item where given: "
        + "; ".join(f"{name}: {_first_sentence(f.__doc__)}" for name, f in RECIPES.items())
        + " (default: none, the settings the embedded default motion is learnt with)",
    )  # fmt: skip
    run.add_argument("--num-envs", type=cli_number(int, 1), default=None,
                     help=f"parallel envs (default {d.num_envs})")  # fmt: skip
    run.add_argument("--total-steps", type=cli_number(int, 1), default=None,
                     help=f"env steps, all envs (learning stops at the first whole rollout, "
                     f"num_envs x n_steps env steps, that reaches it; default {d.total_steps}, "
                     "with --resume the run's)")  # fmt: skip
    run.add_argument(
        "--max-minutes", type=cli_number(float, None), default=None,
        help="wall-clock budget of learning (learning also ends at --total-steps); <= 0: none "
        "(default): a run's result then does not depend on the machine's speed",
    )  # fmt: skip
    run.add_argument("--seed", type=int, default=None, help=f"(default {d.seed})")
    run.add_argument("--out", default=None, help="run folder (default runs/<date>-<time>)")
    run.add_argument(
        "--resume", default=None, metavar="RUN",
        help="continue the run in folder RUN from its latest checkpoint, with its own settings "
        "(only --total-steps, --max-minutes, --checkpoint-minutes, --device and --no-video "
        "apply)",
    )  # fmt: skip
    run.add_argument(
        "--init", default=None, metavar="SOURCE",
        help="start from the networks (actor, critic, observation normaliser) of the run in "
        "folder SOURCE or its best/, on this run's clips and settings; the observation, "
        "actions and network sizes must match (a warm start; the optimiser starts anew)",
    )  # fmt: skip
    run.add_argument(
        "--reset-noise-ramp-steps", type=cli_number(int, 0), default=None, metavar="STEPS",
        help="ramp the reset noise from none to full over the first STEPS env steps; 0: full "
        f"from the start (default {d.curricula['reset_noise'].params['steps']})",
    )  # fmt: skip
    run.add_argument(
        "--eval-every", type=cli_number(int, 0), default=None, metavar="STEPS",
        help="deterministic evaluation from the clip start every STEPS env steps, in the logs "
        f"and curves (0: off; default {d.eval_every_steps})",
    )  # fmt: skip
    run.add_argument(
        "--checkpoint-minutes", type=cli_number(float, 0.0), default=None,
        metavar="MIN", help="save the model into the run folder every MIN minutes of learning "
        f"(0: only at the end; default {d.checkpoint_minutes:g})",
    )  # fmt: skip
    run.add_argument(
        "--no-video", action="store_true",
        help=f"no final_eval.mp4 ({d.video_seconds:g} s of the trained policy on the first clip)",
    )  # fmt: skip

    task = p.add_argument_group("task and physics")
    task.add_argument("--backend", default=None, choices=BACKENDS,
                      help=f"physics backend (default {d.env.backend.name})")  # fmt: skip
    task.add_argument(
        "--num-threads",
        type=cli_number(int, 1),
        default=None,
        help="physics threads (--backend mujoco); with --samplers, each sampler's CPUs",
    )
    task.add_argument(
        "--no-state-estimation", action="store_true", help="154-value policy observation"
    )
    task.add_argument(
        "--obs-noise", nargs="*", action="extend", default=[], metavar="TERM=HALF_WIDTH",
        dest="policy_obs_noise",
        help="training noise of policy observation terms in place of the task's (uniform "
        "half-widths in the term's units, e.g. anchor_pos=0.05 m; the task's: "
        + ", ".join(f"{n} {t.noise:g}" for n, t in policy_terms(True).items() if t.noise) + ")",
    )  # fmt: skip
    task.add_argument(
        "--anchor-velocity-obs",
        action="store_true",
        help="the policy and critic also observe the reference anchor's linear and angular "
        "velocity in the robot anchor frame (6 values; not a BeyondMimic term)",
    )
    task.add_argument(
        "--action-offset", choices=ACTION_OFFSETS, default=None,
        help="where a zero action puts the joints: default (the default pose, BeyondMimic's "
        "convention; the default) or reference (residual actions around the clip's joint "
        "positions; exported ONNX folds them back)",
    )  # fmt: skip
    task.add_argument(
        "--anchor-horizontal-termination", type=cli_number(float, 0.0, low_open=True),
        default=None, metavar="METRES",
        help="also end an episode when the anchor is more than METRES from the reference's "
        "horizontally (the clip's global path; off by default, as in BeyondMimic's task)",
    )  # fmt: skip
    task.add_argument(
        "--anchor-horizontal-termination-from", type=cli_number(int, 0), default=None,
        metavar="STEPS",
        help="switch --anchor-horizontal-termination on only after STEPS env steps (a "
        "curriculum: first learn to survive, then keep to the clip's timing; default 0: from "
        "the start; evaluations always apply it)",
    )  # fmt: skip
    task.add_argument(
        "--anchor-horizontal-termination-from-episode-s", type=cli_number(float, 0.0,
        low_open=True), default=None, metavar="SECONDS",
        help="switch --anchor-horizontal-termination on once the training episodes last SECONDS "
        "on average (over the last 0.5 M env steps), and keep it on: the same curriculum "
        "without a per-clip step count (e.g. 2.0; evaluations always apply it)",
    )  # fmt: skip
    task.add_argument(
        "--anchor-horizontal-termination-grace-s", type=cli_number(float, 0.0), default=None,
        metavar="SECONDS",
        help="--anchor-horizontal-termination does not end an episode within SECONDS of the "
        "last time the env perturbed the robot (the episode start with its reset noise, a "
        "push), so the policy is asked to come back to the clip's path, not never to leave it "
        "(default 0)",
    )  # fmt: skip
    task.add_argument(
        "--sampling", choices=TRAIN_SAMPLING, default=None,
        help="where training episodes start along the clips: uniform (default) or adaptive "
        "(failure-weighted, docs/task.md section 10)",
    )  # fmt: skip
    task.add_argument(
        "--obs-mode", choices=OBS_MODES, default=None,
        help="dict (PPO's default): asymmetric actor-critic (actor: policy group, critic: "
        "privileged critic group); policy (SAC's, the only one for SAC): all networks read the "
        "policy group",
    )  # fmt: skip

    lib = p.add_argument_group("learner")
    lib.add_argument(
        "--library", choices=tuple(LIBRARIES), default=None,
        help="sb3 (default): Stable-Baselines3; rsl_rl: rsl_rl's OnPolicyRunner "
        "(gym_motion.training.rsl_rl; --ppo keys of its PPO_DEFAULTS)",
    )  # fmt: skip
    lib.add_argument(
        "--algo", choices=ALGOS, default=None,
        help="with --library sb3: ppo (default) or sac (SB3's SAC, --sac settings)",
    )  # fmt: skip
    lib.add_argument(
        "--ppo", nargs="*", action="extend", default=[], metavar="KEY=VALUE",
        help=f"override PPO settings ({', '.join(PPO_DEFAULTS)}; with --library rsl_rl the "
        "keys of gym_motion.training.rsl_rl.config.PPO_DEFAULTS), values as JSON",
    )  # fmt: skip
    lib.add_argument(
        "--sac", nargs="*", action="extend", default=[], metavar="KEY=VALUE",
        help=f"override SAC settings ({', '.join(SAC_DEFAULTS)}), values as JSON",
    )  # fmt: skip
    lib.add_argument(
        "--device", default=None,
        help="torch device of the networks, rollout buffer and update: cpu (default), cuda, "
        "cuda:N, or auto (cuda:0 when torch sees a GPU, else cpu; config.json records the "
        "choice); with --resume, where to go on",
    )  # fmt: skip
    lib.add_argument(
        "--distributed", action="store_true",
        help="with --library rsl_rl under torchrun: one rank per GPU (cuda:LOCAL_RANK, seed + "
        "rank, its own CPU block; rank 0 writes the run; see docs/scaling.md)",
    )  # fmt: skip
    p.add_argument(
        "--set", nargs="*", action="extend", default=[], metavar="PATH=VALUE", dest="settings",
        help="set any field of the run's config by its dotted path, after the recipe and the "
        "flags, values as JSON: e.g. num_envs=512, env.episode_length_s=5, "
        "env.rewards.action_rate.weight=-0.2, env.observations.policy.joint_vel.scale=0.05, "
        "curricula.reset_noise.params.steps=0; null removes a term; a new term gives its "
        "function, '{\"func\": \"module:name\", ...}' (gym_motion.training.overrides; "
        "docs/training.md)",
    )  # fmt: skip
    ray = p.add_argument_group("samplers on Ray (docs/scaling.md; the [ray] extra)")
    ray.add_argument(
        "--samplers", type=cli_number(int, 0), default=None, metavar="K",
        help="K Ray sampler actors collect the rollouts (each on its own CPU block, "
        "--num-envs / K envs) for PPO in this process; 0: envs in this process (default)",
    )  # fmt: skip
    ray.add_argument(
        "--envs-per-sampler", type=cli_number(int, 1), default=None, metavar="N",
        help="envs per sampler (sets --num-envs to K x N)",
    )  # fmt: skip
    ray.add_argument(
        "--ray-address", default=None, metavar="ADDR",
        help="the Ray cluster to run the samplers on (e.g. auto, HEAD:6379); default: a local "
        "Ray instance for the run",
    )  # fmt: skip
    p.set_defaults(func=_run)


def _first_sentence(doc: str | None) -> str:
    text = " ".join((doc or "").split())
    return text.partition(". ")[0].rstrip(".")


def parse_overrides(items: list[str], flag: str = "--ppo") -> dict[str, Any]:
    """``--ppo KEY=VALUE ...`` -> ``{KEY: value}``, values parsed as in ``--set``
    (`parse_setting`: JSON, else text).

    Raises:
        SystemExit: an item without ``=``, or a value that starts like JSON but is not.
    """
    from gym_motion.training.overrides import parse_setting

    out = {}
    for item in items:
        try:
            key, value = parse_setting(item)
        except ValueError as exc:
            raise SystemExit(f"gym-motion train: {flag}: {exc}") from None
        out[key] = value
    return out


def run_config(args: argparse.Namespace):
    """The `RunConfig` of `gym-motion train`'s parsed arguments: the defaults for the device,
    library and algorithm, then ``--recipe`` (`gym_motion.training.recipes`), then the flags
    given, then the ``--set`` items, so each replaces what came before it.

    Raises:
        ValueError: ``--num-threads`` with ``--backend mjwarp`` (the message says what to do),
            ``--envs-per-sampler`` without ``--samplers``,
            ``--anchor-horizontal-termination-from[-episode-s]`` without
            ``--anchor-horizontal-termination`` (or a recipe's) or both of them,
            ``--...-grace-s`` without the term, ``--obs-noise`` naming a term that is not in
            the policy observation, a ``--set`` path that does not exist, a device torch does
            not list (for a recipe that asks), or a setting out of range.
        SystemExit: a ``--ppo``, ``--sac`` or ``--obs-noise`` item without ``=``.
    """
    from gym_motion.training.config import RunConfig
    from gym_motion.training.overrides import apply_settings, parse_setting
    from gym_motion.training.recipes import RECIPES

    algo = args.algo or RunConfig.algo
    config = RunConfig(library=args.library or RunConfig.library, algo=algo,
                       device=args.device or RunConfig.device)  # fmt: skip
    settings = [parse_setting(item) for item in args.settings]
    # what a recipe reads comes first, so that --set device=cuda chooses its GPU settings
    first = [s for s in settings if s[0] in _BEFORE_RECIPE]
    config = apply_settings(config, first)
    # PPO trains an asymmetric actor-critic by default; SAC reads the policy group only
    config = replace(config, obs_mode="policy" if config.algo == "sac" else "dict")
    if args.recipe is not None:
        config = RECIPES[args.recipe](config)
    config = _task_flags(config, args)
    config = _run_flags(config, args)
    return apply_settings(config, [s for s in settings if s[0] not in _BEFORE_RECIPE])


_BEFORE_RECIPE = ("device", "library", "algo")


def _run_flags(config, args: argparse.Namespace):
    """`config` with the run, learner and sampler flags that were given."""
    from gym_motion.curriculum import CurriculumTermCfg, reset_noise_ramp

    set_: dict[str, Any] = {}
    for flag, field in (("num_envs", "num_envs"), ("total_steps", "total_steps"),
                        ("seed", "seed"), ("out", "out"), ("eval_every", "eval_every_steps"),
                        ("checkpoint_minutes", "checkpoint_minutes"), ("obs_mode", "obs_mode"),
                        ("samplers", "samplers"), ("ray_address", "ray_address")):  # fmt: skip
        if getattr(args, flag) is not None:
            set_[field] = getattr(args, flag)
    if args.motion:
        set_["motion"] = list(args.motion)
    if args.init is not None:  # a path, kept whole: the run folder records where it began
        set_["init"] = str(Path(args.init).resolve()) if Path(args.init).exists() else args.init
    if args.max_minutes is not None:
        set_["max_minutes"] = args.max_minutes if args.max_minutes > 0 else None
    if args.no_video:
        set_["video_seconds"] = 0.0
    if args.distributed:
        set_["distributed"] = True
    if args.ppo:
        set_["ppo"] = {**config.ppo, **parse_overrides(args.ppo)}
    if args.sac:
        set_["sac"] = {**config.sac, **parse_overrides(args.sac, "--sac")}
    if args.reset_noise_ramp_steps is not None:
        ramp = CurriculumTermCfg(reset_noise_ramp, {"steps": args.reset_noise_ramp_steps})
        set_["curricula"] = {**config.curricula, "reset_noise": ramp}
    if args.envs_per_sampler is not None:
        samplers = set_.get("samplers", config.samplers)
        if not samplers:
            raise ValueError("--envs-per-sampler needs --samplers K (K >= 1)")
        set_["num_envs"] = samplers * args.envs_per_sampler
    return replace(config, **set_)


def _task_flags(config, args: argparse.Namespace):
    """`config` with the task and physics flags that were given."""
    from gym_motion.curriculum import (
        CurriculumTermCfg,
        termination_from_episode_s,
        termination_from_steps,
    )
    from gym_motion.envs.config import (
        STATE_ESTIMATION_TERMS,
        no_state_estimation,
        with_anchor_velocity,
        with_obs_noise,
    )
    from gym_motion.training.config import with_anchor_horizontal_termination

    env, curricula = config.env, dict(config.curricula)
    backend = args.backend or env.backend.name
    if backend == "mjwarp" and args.num_threads is not None:
        raise ValueError(
            "--num-threads sets the physics threads of --backend mujoco; --backend mjwarp steps "
            "physics on one Warp device instead (cuda:$LOCAL_RANK under torchrun, else cuda:0; "
            "CUDA_VISIBLE_DEVICES chooses the GPU): drop --num-threads"
        )
    threads = {"num_threads": args.num_threads} if args.num_threads else {}
    env = env.updated(backend=args.backend, backend_kwargs=threads)
    if args.no_state_estimation:
        env = no_state_estimation(env)
    if args.anchor_velocity_obs:
        env = with_anchor_velocity(env)
    noise = parse_overrides(args.policy_obs_noise, "--obs-noise")
    left_out = set(STATE_ESTIMATION_TERMS) & set(noise)
    if args.no_state_estimation and left_out:
        raise ValueError(
            f"--obs-noise {', '.join(sorted(left_out))}: --no-state-estimation leaves these "
            "terms out of the policy observation"
        )
    if "anchor_vel" in noise and not env.anchor_velocity_obs:
        raise ValueError("--obs-noise anchor_vel: the policy observes that term only with "
                         "--anchor-velocity-obs")  # fmt: skip
    if noise:
        env = with_obs_noise(env, noise)
    if args.action_offset is not None:
        env = replace(env, action_offset=args.action_offset)
    if args.sampling is not None:
        env = replace(env, sampling=replace(env.sampling, mode=args.sampling))
    term = env.terminations.get("anchor_horizontal")
    grace = args.anchor_horizontal_termination_grace_s
    if args.anchor_horizontal_termination is not None or grace is not None:
        if args.anchor_horizontal_termination is None and term is None:
            raise ValueError(
                "--anchor-horizontal-termination-grace-s needs --anchor-horizontal-termination "
                "METRES (the term it delays)"
            )
        metres = args.anchor_horizontal_termination or term.params["threshold"]
        if grace is None:
            grace = term.params.get("grace_steps", 0) * env.sim.control_dt if term else 0.0
        env = with_anchor_horizontal_termination(env, metres, grace)
    from_steps = args.anchor_horizontal_termination_from
    from_episode_s = args.anchor_horizontal_termination_from_episode_s
    if from_steps is not None and from_episode_s is not None:
        raise ValueError(
            "--anchor-horizontal-termination-from (env steps) and "
            "--anchor-horizontal-termination-from-episode-s (training episodes' length) both "
            "switch the term on: give one"
        )
    if (from_steps is not None or from_episode_s is not None) and (
        "anchor_horizontal" not in env.terminations
    ):
        flag = "-from" if from_steps is not None else "-from-episode-s"
        raise ValueError(
            f"--anchor-horizontal-termination{flag} needs --anchor-horizontal-termination "
            "METRES (the term it switches on)"
        )
    if from_steps is not None:  # replaces a recipe's switch; 0: on from the start
        curricula.pop("anchor_horizontal", None)
        if from_steps:
            params = {"term": "anchor_horizontal", "steps": from_steps}
            curricula["anchor_horizontal"] = CurriculumTermCfg(termination_from_steps, params)
    if from_episode_s is not None:
        params = {"term": "anchor_horizontal", "seconds": from_episode_s}
        curricula["anchor_horizontal"] = CurriculumTermCfg(termination_from_episode_s, params)
    return replace(config, env=env, curricula=curricula)


def resume_config(args: argparse.Namespace):
    """The `RunConfig` of ``--resume RUN``: the run's own, with the budgets and the
    ``--device`` given, and with ``--motion`` its clips at their new paths (the same files,
    `RunFolder.same_clips`).

    Raises:
        FileNotFoundError: RUN has no config.json.
        FileNotFoundError: also a recorded clip that is gone (saying to give --motion).
        ValueError: a flag that --resume does not apply (one line naming it), a config.json
            that gives no task, or --motion clips that are not the run's.
    """
    from gym_motion.training.run_folder import RunFolder

    # 0 is a value given (--seed 0); None, False and [] are flags left out
    given = [f for f, v in _resume_ignores(args) if not (v is None or v is False or v == [])]
    if given:
        raise ValueError(
            f"--resume continues {args.resume} with its own settings; of the flags given only "
            "--total-steps, --max-minutes, --checkpoint-minutes, --device, --no-video and "
            "--motion (the same clips, moved) apply, "
            f"not {', '.join(given)} (start a new run for other settings)"
        )
    folder = RunFolder(args.resume)
    if not folder.config():
        raise FileNotFoundError(f"{folder.config_path}: no gym-motion train run to resume")
    config = folder.run_config()
    if args.device is None and config.device != "cpu":
        from gym_motion.training.devices import resolve_device

        try:
            resolve_device(config.device)
        except ValueError as exc:
            raise ValueError(f"{exc}; {args.resume} trained on {config.device!r}: --device cpu "
                             "(or another device) resumes it here") from None  # fmt: skip
    if args.motion:  # the run's clips, moved: checked by content
        config = replace(config, motion=folder.same_clips(args.motion))
    else:
        gone = [m for m in config.motion or () if not Path(m).exists()]
        if gone:
            raise FileNotFoundError(
                f"{gone[0]}: a clip of the run is not there any more; if it moved, resume with "
                f"--motion and the same clips where they are now (checked by content): "
                f"gym-motion train --resume {args.resume} --motion NEW_PATH ..."
            )
    return replace(
        config,
        out=str(folder.path),
        total_steps=args.total_steps or config.total_steps,
        max_minutes=args.max_minutes if args.max_minutes and args.max_minutes > 0 else None,
        checkpoint_minutes=_given(args.checkpoint_minutes, config.checkpoint_minutes),
        video_seconds=0.0 if args.no_video else config.video_seconds,
        device=args.device or config.device,
    )


def _resume_ignores(args: argparse.Namespace) -> list[tuple[str, Any]]:
    """The flags ``--resume`` does not apply, with their values (None, False or [] when not
    given)."""
    keep = {"command", "func", "resume", "total_steps", "max_minutes", "checkpoint_minutes",
            "device", "no_video", "imports", "motion"}  # fmt: skip
    flags = {"policy_obs_noise": "--obs-noise", "settings": "--set"}
    return [
        (flags.get(key, "--" + key.replace("_", "-")), value)
        for key, value in vars(args).items()
        if key not in keep
    ]


def _given(value: Any, otherwise: Any) -> Any:
    return otherwise if value is None else value


def _run(args: argparse.Namespace) -> int:
    from gym_motion.training import train

    with _sigterm_interrupts():
        if args.resume is None:
            summary = train(run_config(args))
        else:
            summary = train(resume_config(args), resume=True)
    if "before" not in summary:  # a rank other than 0: rank 0 reports
        return 130 if summary["interrupted"] else 0
    return print_summary(summary)


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (``kill PID``, a job scheduler's stop) stops a run as Ctrl-C does: the policy and
    summary.json are saved, exit code 130. A run started in the background (``nohup ... &``)
    ignores SIGINT, so ``kill PID`` is how it is stopped without losing its last minutes."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread
        return
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def print_summary(summary: dict[str, Any]) -> int:
    """Print a run's summary (steps, time, before/after tables, video); returns the exit code
    (130 when interrupted, 1 when an error stopped learning)."""
    from gym_motion.evaluate import format_table

    why = STOP_REASONS.get(summary.get("stopped_by"), "")
    print(f"\nrun folder: {summary['run']}  ({summary['env_steps']} env steps, "
          f"{summary['train_wall_s']:.0f} s{why})")  # fmt: skip
    print("before training (zero action):")
    print(format_table(summary["before"]))
    if "after" in summary:
        print("after training:")
        print(format_table(summary["after"]))
        ratio = summary["after_vs_before"]["episode_length_ratio"]
        print(f"episode length after / before: {ratio:.2f}")
    if "path" in summary.get("video", {}):
        print(f"video of the final evaluation: {summary['video']['path']}")
    if summary.get("stopped_by") == "error":
        return 1
    return 130 if summary["interrupted"] else 0
