"""The training skeleton every RL library runs in: `train` and the `Learner` interface.

`train` does what a run does whatever the library: the zero-action evaluation before
learning, the run folder (`RunFolder`: config.json, summary.json), the training env, the
reset-noise ramp, periodic evaluations, the wall-clock budget, Ctrl-C, the evaluation after
learning, the curves PNG, the video and the summary. A library plugs in a `Learner`: it wraps
the env, runs its own learning loop calling `Progress.after_rollout` after each rollout, saves
its model files and loads them back (`gym_motion.training.libraries` lists them).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Protocol

from gym_motion.curriculum import termination_from_episode_s
from gym_motion.evaluate import evaluate_policy_on_clips
from gym_motion.policy import Policy
from gym_motion.training.config import RunConfig
from gym_motion.training.curves import plot_curves
from gym_motion.training.distributed import for_rank
from gym_motion.training.libraries import learner_class
from gym_motion.training.progress import Progress, RunAborted
from gym_motion.training.run_folder import RunFolder
from gym_motion.training.warm_start import check_layout, init_source

__all__ = ["Learner", "physics_on_learner_device", "train", "train_motions"]

INTERRUPTED = "\ngym-motion train: interrupted; saving the policy trained so far and summary.json"


class Learner(Protocol):
    """One RL library's part of a run (see `gym_motion.training.sb3` for one).

    Class attributes and methods (used before a learner exists):
        model_file: the file that marks a folder as holding this library's run.
        check(config): raise ValueError for settings the library cannot run, before any work.
        env_kwargs(config): extra `TrackingVecEnv` keywords the library needs.
        load_policy(run_dir): a saved run's deterministic `Policy` (CPU).
        actor_module(run_dir): a saved run's actor as ``(torch module, D, J)``
            (`RunFolder.actor_module`).

    An instance is built with ``(config, env, out, world_size)``: the run's `RunConfig` (as
    this rank runs it), the training `TrackingVecEnv` (SAME_STEP autoreset), the run folder
    (None on ranks other than 0) and the number of ranks. Then:
        config_entries(): the library's sections of config.json; versions(): its packages'.
        learn(progress): run the learning loop, calling ``progress.after_rollout(steps,
            values)`` after each rollout and logging what it returns; stop when
            ``progress.stop`` is set. A KeyboardInterrupt may pass through.
        env_steps: env steps learned so far, all ranks together.
        summary_entries(): the library's keys of summary.json.
        policy(): the current deterministic `Policy`.
        log(values): write scalars (e.g. the final ``eval/*``) to the library's logger.
        save(path): write the model files into the run folder, each atomically (checkpoints
            during learning, and at its end).
        load(path, env_steps): continue from the model files of a checkpoint taken at
            `env_steps` (`train` with ``resume``); `learn` then learns up to ``total_steps``.
        init_from(path): take the networks (actor, critic, observation normaliser) of the run
            in `path`, nothing else (``config.init``, `gym_motion.training.warm_start`).
        close(): flush the logs, close the env.

    A learner of runs with Ray samplers (``config.samplers`` > 0; `gym_motion.training.
    libraries.SAMPLED`) also has ``collector(config)``, the classmethod giving what each
    sampler runs (`gym_motion.training.samplers.Collector`); its env is then a `SamplerPool`,
    and `learn` may raise `RunAborted` when the samplers cannot go on.
    """

    model_file: ClassVar[str]

    @classmethod
    def check(cls, config: RunConfig) -> None: ...
    @classmethod
    def env_kwargs(cls, config: RunConfig) -> dict[str, Any]: ...
    @staticmethod
    def load_policy(run_dir: Path) -> Policy: ...
    @staticmethod
    def actor_module(run_dir: Path) -> tuple[Any, int, int]: ...

    def __init__(self, config: RunConfig, env: Any, out: Path | None, world_size: int) -> None: ...
    def config_entries(self) -> dict[str, Any]: ...
    def versions(self) -> dict[str, str]: ...
    def learn(self, progress: Progress) -> None: ...
    @property
    def env_steps(self) -> int: ...
    def summary_entries(self) -> dict[str, Any]: ...
    def policy(self) -> Policy: ...
    def log(self, values: dict[str, float]) -> None: ...
    def save(self, path: Path) -> None: ...
    def load(self, path: Path, env_steps: int) -> None: ...
    def init_from(self, path: Path) -> None: ...
    def close(self) -> None: ...


def train_motions(motion: list[str]) -> list[str]:
    """The run's clip paths as absolute path strings (so `eval`, `render` and `export` find
    them from any folder); none given: the embedded default motion."""
    if motion:
        return [str(Path(m).resolve()) for m in motion]
    from gym_motion.motion import DEFAULT_MOTION_PATH

    return [str(DEFAULT_MOTION_PATH)]


def train(config: RunConfig, *, resume: bool = False) -> dict[str, Any]:
    """Run a training job; rank 0 writes the run folder and returns the summary (also
    summary.json); other ranks of a distributed run return theirs without evaluations and
    write nothing.

    With `resume`, ``config.out`` is a run folder with a checkpoint (progress.json and the
    model files, `RunFolder.progress`): learning continues from it up to ``config.total_steps``
    (the run's whole count) in that folder, the learner's state (weights, optimiser,
    observation normaliser, learning rate, step count) loaded and the skeleton's (reset-noise
    ramp, evaluations and their schedule, curves' history) restored. The envs start new
    episodes (seeded ``seed + steps done``), so a resumed run learns from other samples than an
    uninterrupted one would; SAC's replay buffer is not saved, it refills.

    A KeyboardInterrupt during learning, the final evaluations or the video saves the model and
    returns (and writes) a summary with ``"interrupted": True``, without what was not done; a
    `RunAborted` during learning (e.g. a Ray sampler that keeps dying) saves it too and writes
    ``"stopped_by": "error"`` and the message, without the evaluations after learning. With
    ``config.samplers`` K > 0, K Ray actors step the envs (`gym_motion.training.samplers`).
    Checkpoints (model files and progress.json) are saved every ``config.checkpoint_minutes``
    and when learning ends.

    Raises:
        FileExistsError: a new run's folder already holds a run of the library.
        FileNotFoundError: `resume` without a checkpoint in ``config.out``.
        ValueError: settings the library cannot run, or clips that fail to load.
        ModuleNotFoundError: ``config.samplers`` without Ray (the ``[ray]`` extra).
    """
    from gym_motion.envs.tracking import TrackingVecEnv

    library = learner_class(config.library, sampled=config.samplers > 0)
    library.check(config)  # names the missing extra first, if any
    if not config.distributed:  # a rank's device is its own (for_rank)
        config = physics_on_learner_device(replace(config, device=_device(config.device)))
    recorded = config
    config, rank = for_rank(config)
    main = rank is None or rank.is_main
    world = 1 if rank is None else rank.world_size
    motions = train_motions(config.motion)
    if resume:
        folder = RunFolder(config.out)
        state = folder.progress()
        if not (folder.path / library.model_file).is_file():
            raise FileNotFoundError(f"{folder.path / library.model_file}: no model to resume")
    else:
        folder, state = RunFolder.create(config.out, library.model_file if main else None), None
    try:
        evaluate = partial(
            evaluate_policy_on_clips, motions, cfg=config.env, episodes=config.eval_episodes,
            obs_mode=config.obs_mode, max_seconds=config.eval_max_seconds, seed=config.seed,
        )  # fmt: skip
        before = state["before"] if state else None
        if main:
            name = "" if config.library == "sb3" else f" ({config.library})"
            what = "resuming" if resume else "run folder"
            print(f"gym-motion train{name}: {what} {folder.path}", flush=True)
            if before is None:
                before = evaluate(None)  # also validates the clips
            folder.path.mkdir(parents=True, exist_ok=True)
        done = int(state["env_steps"]) if state else 0
        if config.samplers:  # Ray actors step the envs (gym_motion.training.samplers)
            from gym_motion.training.samplers import SamplerPool

            env = SamplerPool(config, motions, library.collector(config), seed=config.seed + done,
                              env_kwargs=library.env_kwargs(config))  # fmt: skip
        else:
            env = TrackingVecEnv(
                num_envs=config.num_envs, motion=motions, cfg=config.env,
                autoreset_mode="same_step", obs_mode=config.obs_mode, seed=config.seed + done,
                **library.env_kwargs(config),
            )  # fmt: skip
        periodic = None
        if config.eval_every_steps and main:
            periodic = lambda: evaluate(learner.policy())  # noqa: E731

        def checkpoint(steps: int) -> dict[str, Any]:
            """progress.json's content: the skeleton's state, the first evaluation and the
            start-frame sampler's statistics (in-process envs)."""
            sampler = env.sampler_state() if hasattr(env, "sampler_state") else None
            return {**progress.state(steps), "before": before, "sampler": sampler}

        def save(steps: int) -> None:
            learner.save(folder.path)
            folder.write_progress(checkpoint(steps))

        def keep_best(steps: int, result: dict[str, Any]) -> None:
            folder.write_best(steps, progress.learn_s, result, learner.save)

        # the reset-noise scale is set before the learner's wrapper resets the envs
        progress = Progress(config, env, periodic, world, config.device, save if main else None,
                            keep_best if main else None)  # fmt: skip
        if state:
            progress.restore(state)
            if state.get("sampler") and hasattr(env, "load_sampler_state"):
                env.load_sampler_state(state["sampler"])
            progress.best = folder.best_evaluation()  # best/ records it, also when newer than state
        learner = None
        try:
            learner = library(config, env, folder.path if main else None, world)
            if resume:
                learner.load(folder.path, done)
            elif config.init:  # a warm start: the source's networks, checked to fit
                source = init_source(config.init, library.model_file)
                check_layout(source, config, learner.config_entries())
                learner.init_from(source.path)
                if main:
                    print(f"gym-motion train: starting from the networks of {source.path}",
                          flush=True)  # fmt: skip
        finally:
            if learner is None:
                env.close()
        if main:
            folder.write_config(recorded, motions, learner.config_entries(), learner.versions())

        interrupted, aborted = False, None
        progress.start()
        t0 = time.perf_counter()
        try:
            learner.learn(progress)
        except KeyboardInterrupt:
            interrupted = True
            print(INTERRUPTED, file=sys.stderr)
        except RunAborted as exc:
            aborted = str(exc)
            print(f"gym-motion train: {aborted}", file=sys.stderr)
        wall = time.perf_counter() - t0
        steps = learner.env_steps
        summary: dict[str, Any] = {
            "run": str(folder.path),
            "library": config.library,
            "interrupted": interrupted,
            "stopped_by": "error" if aborted else _stopped_by(interrupted, progress.stop),
            "env_steps": steps,
            **learner.summary_entries(),
            "train_wall_s": round(progress.learn_s, 2),
            "env_steps_per_s_overall": round((steps - done) / wall, 1) if wall > 0 else None,
            "env_steps_per_s_rollout": _mean_tail(progress.history, "time/env_steps_per_s"),
            "reset_noise_scale_final": progress.scale,
        }
        if any(t.func is termination_from_episode_s for t in config.curricula.values()):
            # env step of each term's switch, {} if none yet
            summary["terminations_switched_on"] = dict(progress.switched_on)
        if aborted:
            summary["error"] = aborted
        if resume:
            summary["resumed_from_env_steps"] = done
        if world > 1:
            summary["ranks"] = world
        if not main:
            learner.close()
            return {**summary, "rank": rank.rank}
        save(steps)
        summary["before"] = before
        with _interruptible(summary):  # Ctrl-C from here on: the model and summary.json are kept
            if not interrupted and not aborted:
                last = progress.evals[-1]["timesteps"] if progress.evals else -1.0
                if periodic is not None and last < steps:
                    learner.log(progress.evaluate_now(steps))
                after = evaluate(learner.policy())
                summary["after"], summary["after_vs_before"] = (
                    after,
                    _after_vs_before(before, after),
                )
                progress.offer_best(steps, after)  # best/ also without periodic evaluations
                if config.video_seconds > 0:
                    summary["video"] = _final_video(
                        folder.path / "final_eval.mp4", learner.policy(), motions[0], config
                    )
        learner.close()
        folder.write_progress(checkpoint(steps))  # with the final eval
        plot_curves(progress.history, folder.path / "training_curves.png", progress.evals)
        folder.write_summary(summary)
        return summary
    except BaseException:
        if main and not resume:  # a new run that wrote nothing leaves no empty folder
            folder.discard_if_empty()
        raise


def physics_on_learner_device(config: RunConfig) -> RunConfig:
    """`config` with MuJoCo Warp's physics on the learner's GPU (``config.device``, resolved)
    where the backend is ``mjwarp`` and names no device of its own (else Warp's default,
    cuda:0, whatever ``--device cuda:N``); other configs as they are."""
    backend = config.env.backend
    if backend.name != "mjwarp" or backend.device is not None or config.device == "cpu":
        return config
    return replace(config, env=config.env.updated(backend_kwargs={"device": config.device}))


def _device(name: str) -> str:
    """The run's torch device (`resolve_device`); ``auto`` says what it chose.

    Raises:
        ValueError: a device torch does not list (one line naming those it lists).
    """
    from gym_motion.training.devices import AUTO, resolve_device

    device = resolve_device(name)
    if name == AUTO:
        print(f"gym-motion train: device auto -> {device}", flush=True)
    return device


@contextmanager
def _interruptible(summary: dict[str, Any]) -> Iterator[None]:
    """Ctrl-C ends the after-learning steps (evaluations, video), not the run: the model is
    saved by then; `summary` gets ``"interrupted": True`` and lacks what was not done, which
    the message names (the evaluation, or only the video once the evaluation is in)."""
    try:
        yield
    except KeyboardInterrupt:
        summary["interrupted"] = True
        lacks = "the video" if "after" in summary else "the after-training evaluation"
        print("\ngym-motion train: interrupted after learning; the model is saved, "
              f"summary.json lacks {lacks}", file=sys.stderr)  # fmt: skip


def _stopped_by(interrupted: bool, hit_budget: bool) -> str:
    """``summary.json``'s ``stopped_by``: "interrupt", "max_minutes" or "total_steps"."""
    if interrupted:
        return "interrupt"
    return "max_minutes" if hit_budget else "total_steps"


def _after_vs_before(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """``summary.json``'s ``after_vs_before``: episode-length ratio (after / before) and the
    [before, after] pairs of tracking reward per survived and per clip step and MPKPE (mm)."""
    b, a = before["mean"], after["mean"]
    return {
        "episode_length_ratio": a["episode_length"] / max(b["episode_length"], 1e-9),
        "tracking_reward_per_step": [b["tracking_reward_per_step"],
                                     a["tracking_reward_per_step"]],
        "tracking_reward_per_clip_step": [b["tracking_reward_per_clip_step"],
                                          a["tracking_reward_per_clip_step"]],
        "mpkpe_mm": [b["mpkpe_mm"], a["mpkpe_mm"]],
    }  # fmt: skip


def _mean_tail(history: list[dict[str, float]], key: str, n: int = 20) -> float | None:
    """Mean of the last `n` values of `key` in `history` (rounded to 0.1), None if absent."""
    vals = [h[key] for h in history if key in h][-n:]
    return round(sum(vals) / len(vals), 1) if vals else None


def _final_video(path: Path, policy: Policy, clip: str, config: RunConfig) -> dict[str, Any]:
    """`gym_motion.video.record_video` of `policy` on `clip` in the run's task; returns its
    result, or ``{"error": message}`` (also printed) when no video could be made: the run is
    saved by then, and stays valid."""
    try:
        from gym_motion.video import record_video

        return record_video(path, policy, clip, config.env, seconds=config.video_seconds,
                            obs_mode=config.obs_mode, seed=config.seed, progress=False)  # fmt: skip
    except (ImportError, RuntimeError, OSError) as exc:
        print(f"gym-motion train: no video of the final evaluation: {exc}", file=sys.stderr)
        return {"error": str(exc)}
