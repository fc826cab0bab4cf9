"""What every library's ``gym-motion train`` shares: the run folder's motions, evaluations,
summary and curves, the reset-noise ramp, and the command line's parsing and printing.

The libraries' training modules (`gym_motion.adapters.sb3.train`, `gym_motion.adapters.rsl_rl.
train`) own their learning loops and model files; what a run folder says about the run
(``summary.json``'s keys, ``training_curves.png``, the printed tables) is written here, once, so
that runs of either library read the same. Imports neither an RL library nor torch.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = [
    "INTERRUPTED",
    "interruptible",
    "TRAIN_SAMPLING",
    "after_vs_before",
    "check_sampling",
    "config_from_args",
    "eval_kwargs",
    "jsonable",
    "mean_tail",
    "parse_overrides",
    "plot_curves",
    "print_summary",
    "reset_noise_scale",
    "run_folder",
    "stopped_by",
    "task_cfg",
    "train_motions",
]


# Where training episodes start: `gym-motion train` defaults to uniform (measured: docs/
# measurements.md, "Learning at equal steps"); "adaptive" is docs/task.md section 10's mixture.
TRAIN_SAMPLING = ("uniform", "adaptive")


def check_sampling(sampling: str) -> None:
    """Raise ValueError unless `sampling` is one of `TRAIN_SAMPLING` (run configs call it on
    construction, before any work)."""
    if sampling not in TRAIN_SAMPLING:
        raise ValueError(f"sampling must be one of {TRAIN_SAMPLING}, got {sampling!r}")


def task_cfg(config: Any):
    """The training task (`TrackingEnvCfg`) of a run's ``TrainConfig``: the default task with
    its ``state_estimation`` and its ``sampling`` mode ("uniform" or "adaptive").

    Raises:
        ValueError: another sampling mode.
    """
    from dataclasses import replace

    from gym_motion.envs.config import TrackingEnvCfg

    check_sampling(config.sampling)
    cfg = TrackingEnvCfg(state_estimation=config.state_estimation)
    return replace(cfg, sampling=replace(cfg.sampling, mode=config.sampling))


def reset_noise_scale(progress: float, ramp: float) -> float:
    """Reset-noise scale at `progress` (fraction of `total_steps` done, 0..1): a linear ramp
    from 0 to 1 over the first `ramp` of the steps, then 1 (`ramp` 0: always 1)."""
    if ramp <= 0.0:
        return 1.0
    return min(1.0, max(0.0, progress / ramp))


def train_motions(motion: list[str]) -> list[str]:
    """The run's clip paths as absolute path strings (so `eval`, `render` and `export` find
    them from any folder); none given: the embedded default motion."""
    if motion:
        return [str(Path(m).resolve()) for m in motion]
    from gym_motion.motion import DEFAULT_MOTION_PATH

    return [str(DEFAULT_MOTION_PATH)]


def run_folder(out: str | None, model_file: str | None) -> Path:
    """The run folder: `out`, or ``runs/<date>-<time>``.

    Raises:
        FileExistsError: the folder already holds a run (its `model_file`; None: not checked).
    """
    path = Path(out or Path("runs") / time.strftime("%Y%m%d-%H%M%S"))
    if model_file is not None and (path / model_file).exists():
        raise FileExistsError(f"{path} already holds a run ({model_file}); choose another --out")
    return path


def eval_kwargs(config: Any) -> dict[str, Any]:
    """`gym_motion.evaluate.evaluate_policy_on_clips` keywords of a run's before, periodic and
    after evaluations (from the clip start, deterministic), from its ``TrainConfig``."""
    return {
        "episodes": config.eval_episodes,
        "backend": config.backend,
        "obs_mode": config.obs_mode,
        "state_estimation": config.state_estimation,
        "max_seconds": config.eval_max_seconds,
        "seed": config.seed,
        "backend_kwargs": config.backend_kwargs or None,
    }


# what `print_summary` says of summary.json's "stopped_by"
STOP_REASONS = {
    "max_minutes": "; stopped by the --max-minutes budget before --total-steps",
    "interrupt": "; interrupted",
}


INTERRUPTED = "\ngym-motion train: interrupted; saving the policy trained so far and summary.json"


@contextmanager
def interruptible(summary: dict[str, Any]) -> Iterator[None]:
    """Run the after-training steps (evaluation, video) so that Ctrl-C ends them, not the run:
    the model is saved by then; `summary` gets ``"interrupted": True`` (and lacks what was not
    done) and is still written."""
    try:
        yield
    except KeyboardInterrupt:
        summary["interrupted"] = True
        print("\ngym-motion train: interrupted after learning; the model is saved, "
              "summary.json lacks the after-training evaluation", file=sys.stderr)  # fmt: skip


def stopped_by(interrupted: bool, hit_budget: bool) -> str:
    """``summary.json``'s ``stopped_by``: "interrupt", "max_minutes" or "total_steps"."""
    if interrupted:
        return "interrupt"
    return "max_minutes" if hit_budget else "total_steps"


def after_vs_before(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
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


def mean_tail(history: list[dict[str, float]], key: str, n: int = 20) -> float | None:
    """Mean of the last `n` values of `key` in `history` (rounded to 0.1), None if absent."""
    vals = [h[key] for h in history if key in h][-n:]
    return round(sum(vals) / len(vals), 1) if vals else None


def jsonable(obj: Any) -> Any:
    """Dataclasses, tuples, numpy values and functions -> JSON values (functions by name)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if callable(obj):
        return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"
    if hasattr(obj, "item") and getattr(obj, "ndim", 1) == 0:
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, str | int | float | bool) or obj is None:
        return obj
    return repr(obj)


def plot_curves(
    history: list[dict[str, float]], path: Path, evals: list[dict[str, float]] = ()
) -> None:
    """Training curves against env steps, to a PNG: episode length and tracking reward per step
    of the training rollouts (``history`` rows with ``timesteps``, ``episode/length``,
    ``rollout/tracking_reward``), and (from `evals`) the deterministic evaluation's episode
    length and MPKPE (``eval/episode_length``, ``eval/mpkpe_mm``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), constrained_layout=True)
    panels = (
        (history, "episode/length", "training: mean episode length (steps)"),
        (history, "rollout/tracking_reward", "training: tracking reward per step"),
        (evals, "eval/episode_length", "eval from clip start: episode length (steps)"),
        (evals, "eval/mpkpe_mm", "eval from clip start: MPKPE (mm)"),
    )
    for ax, (rows, key, title) in zip(axes.flat, panels, strict=True):
        pts = [(h["timesteps"], h[key]) for h in rows if key in h]
        if pts:
            x, y = zip(*pts, strict=True)
            ax.plot(x, y, lw=1.2, marker="o" if len(x) < 30 else None, ms=3)
        ax.set_title(title)
        ax.set_xlabel("env steps")
        ax.grid(alpha=0.3)
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------
# command line


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``--ppo KEY=VALUE ...`` -> ``{KEY: value}``, values parsed as JSON (else kept as text).

    Raises:
        SystemExit: an item without ``=``.
    """
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"gym-motion train: --ppo expects KEY=VALUE, got {item!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def config_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The ``TrainConfig`` keywords every library reads from `gym-motion train`'s arguments."""
    return {
        "motion": list(args.motion),
        "num_envs": args.num_envs,
        "total_steps": args.total_steps,
        "max_minutes": args.max_minutes if args.max_minutes and args.max_minutes > 0 else None,
        "backend": args.backend,
        "seed": args.seed,
        "out": args.out,
        # PPO trains an asymmetric actor-critic by default; SAC reads the policy group only
        "obs_mode": args.obs_mode
        or ("policy" if getattr(args, "algo", "ppo") == "sac" else "dict"),
        "state_estimation": not args.no_state_estimation,
        "reset_noise_ramp": args.reset_noise_ramp,
        "eval_every_steps": args.eval_every,
        "sampling": args.sampling,
        "ppo": parse_overrides(args.ppo),
        "backend_kwargs": {"num_threads": args.num_threads} if args.num_threads else {},
    }


def print_summary(summary: dict[str, Any]) -> int:
    """Print a run's summary (steps, time, before/after tables, video); returns the exit code
    (130 when interrupted)."""
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
    return 130 if summary["interrupted"] else 0
