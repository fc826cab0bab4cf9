"""`gym-motion eval`: evaluate a trained policy (or zero action) on motion clips.

    gym-motion eval --model runs/NAME --motion dance.npz walk.npz --episodes 4 --json out.json
    gym-motion eval --policy zero --motion dance.npz

Each clip is played from its first frame with `eval_cfg` (sampling "start", no domain
randomisation, no observation noise, no reset noise) for the whole clip (``max_episode_steps``
= clip frames - 1, the last frame; ``--max-seconds`` caps it) with the deterministic policy.
An episode succeeds when it reaches that limit without a termination. Per clip: success rate,
mean episode length (steps and s), MPKPE and root-relative MPKPE over the tracked bodies (mm),
joint position error (rad), anchor position (m) and rotation (rad) errors, and the mean
tracking reward per step (sum of the positive-weight terms, weighted, before dt; the maximum
is the sum of their weights) over the steps the robot survived, and the same sum divided by
the clip's steps (``tracking_reward_per_clip_step``: a fallen robot earns nothing for the
rest of the clip, so policies that survive for different times compare on one scale).
Errors are episode means as the env computes them (the
``final/error/*`` infos of `TrackingVecEnv`).

With eval_cfg and the CPU backend every episode of a clip is the same, so ``--episodes 1``
(the default) suffices; more episodes only matter with a stochastic backend or config.

Evaluation needs no RL library: a policy is any callable from a batch of observations to a
batch of actions (`Policy`), e.g. a NumPy function::

    from gym_motion.evaluate import evaluate_policy_on_clips

    W = np.zeros((160, 29), np.float32)
    result = evaluate_policy_on_clips(["dance.npz"], lambda obs: obs @ W)
    result["clips"]["dance.npz"]["mpkpe_mm"]

Only ``--model RUN`` (`evaluate` with ``policy="model"``) loads a `gym-motion train` run, through
the Stable-Baselines3 adapter (`gym_motion.adapters.sb3.policy`), imported then.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "METRICS",
    "Obs",
    "Policy",
    "evaluate",
    "evaluate_clip",
    "evaluate_policy_on_clips",
    "format_table",
    "register_cli",
    "zero_policy",
]

Obs = np.ndarray | dict[str, np.ndarray]
"""A batch of observations: (N, D) float32, or ``{"policy": (N, D), "critic": (N, C)}``
float32 arrays in the env's dict observation mode."""

Policy = Callable[[Obs], np.ndarray]
"""obs (`Obs`, N rows) -> actions (N, A) float32 (A = 29 for the G1), deterministic."""

# Per-clip metrics (keys of each `evaluate_clip` result and of the ``"mean"`` over clips).
METRICS = (
    "success_rate",
    "episode_length",
    "episode_length_s",
    "mpkpe_mm",
    "root_mpkpe_mm",
    "joint_pos_rad",
    "anchor_pos_m",
    "anchor_rot_rad",
    "tracking_reward_per_step",
    "tracking_reward_per_clip_step",
    "return",
)


def zero_policy(num_actions: int) -> Policy:
    """The zero action (the default joint pose): obs (N rows) -> (N, num_actions) float32."""

    def act(obs: Obs) -> np.ndarray:
        n = len(next(iter(obs.values()))) if isinstance(obs, dict) else len(obs)
        return np.zeros((n, num_actions), np.float32)

    return act


def evaluate_clip(
    clip: str | os.PathLike,
    policy: Policy | None,
    *,
    episodes: int = 1,
    backend: str = "mujoco",
    obs_mode: str = "policy",
    state_estimation: bool = True,
    max_seconds: float | None = None,
    seed: int = 0,
    backend_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Metrics of `policy` on one clip, `episodes` episodes in parallel from its first frame.

    Args:
        clip: a clip npz.
        policy: obs -> actions (`Policy`); None: the zero action (`zero_policy`).
        episodes: N envs, one episode each. backend, backend_kwargs: physics backend.
        obs_mode: the observation `policy` takes, "policy" (N, D) or "dict".
        state_estimation: False: the 154-value policy observation (no anchor position, no
            base linear velocity).
        max_seconds: cap on the episode, s (default: the whole clip). seed: the env's seed.

    Returns:
        Each of `METRICS` (mean over the episodes, float), and ``clip`` (str), ``episodes``,
        ``max_episode_steps`` (the horizon, control steps) and ``clip_seconds``.
    """
    from gymnasium.vector import AutoresetMode

    from gym_motion.envs.config import TrackingEnvCfg, eval_cfg
    from gym_motion.envs.stats import tracking_terms
    from gym_motion.envs.tracking import TrackingVecEnv
    from gym_motion.motion.library import MotionLibrary

    cfg = eval_cfg(TrackingEnvCfg(state_estimation=state_estimation))
    dt = cfg.sim.control_dt
    library = MotionLibrary.from_paths(clip, fps=1.0 / dt, robot=cfg.robot)
    horizon = int(library.lengths[0]) - 1
    if max_seconds is not None:
        horizon = min(horizon, max(1, round(max_seconds / dt)))
    env = TrackingVecEnv(
        num_envs=episodes,
        motion=library,
        backend=backend,
        cfg=cfg,
        autoreset_mode=AutoresetMode.SAME_STEP,
        obs_mode=obs_mode,
        max_episode_steps=horizon,
        seed=seed,
        backend_kwargs=backend_kwargs,
    )
    try:
        if policy is None:
            policy = zero_policy(env.single_action_space.shape[0])
        terms = tracking_terms(env)
        n = episodes
        done = np.zeros(n, bool)
        rec: dict[str, np.ndarray] = {m: np.zeros(n) for m in METRICS}
        obs, _ = env.reset(seed=seed)
        for _ in range(horizon + 1):
            obs, _, _, _, info = env.step(policy(obs))
            mask = info.get("_final/length")
            if mask is None:
                continue
            new = mask & ~done
            if not new.any():
                continue
            length = info["final/length"][new].astype(np.float64)
            rec["success_rate"][new] = info["final/termination/time_out"][new]
            rec["episode_length"][new] = length
            rec["episode_length_s"][new] = length * dt
            rec["mpkpe_mm"][new] = 1000.0 * info["final/error/mpkpe"][new]
            rec["root_mpkpe_mm"][new] = 1000.0 * info["final/error/root_mpkpe"][new]
            rec["joint_pos_rad"][new] = info["final/error/joint_pos"][new]
            rec["anchor_pos_m"][new] = info["final/error/anchor_pos"][new]
            rec["anchor_rot_rad"][new] = info["final/error/anchor_rot"][new]
            track = sum(info[f"final/reward/{t}"][new].astype(np.float64) for t in terms)
            rec["tracking_reward_per_step"][new] = track / (length * dt)
            rec["tracking_reward_per_clip_step"][new] = track / (horizon * dt)
            rec["return"][new] = info["final/return"][new]
            done |= new
            if done.all():
                break
    finally:
        env.close()
    result = {m: float(v.mean()) for m, v in rec.items()}
    result.update(
        {
            "clip": str(clip),
            "episodes": n,
            "max_episode_steps": horizon,
            "clip_seconds": horizon * dt,
        }
    )
    return result


def evaluate_policy_on_clips(
    clips: Sequence[str | os.PathLike], policy: Policy | None, **kwargs: Any
) -> dict[str, Any]:
    """`evaluate_clip` on each clip (a folder: its ``*.npz``), `kwargs` passed on.

    Returns:
        ``{"policy": "zero" (policy None) or "model", "clips": {path: evaluate_clip result},
        "mean": {metric: mean over clips}}``.
    """
    files: list[Path] = []
    for c in clips:
        p = Path(c)
        files.extend(sorted(p.glob("*.npz")) if p.is_dir() else [p])
    per_clip = {str(c): evaluate_clip(c, policy, **kwargs) for c in files}
    mean = {m: float(np.mean([r[m] for r in per_clip.values()])) for m in METRICS}
    return {"policy": "zero" if policy is None else "model", "clips": per_clip, "mean": mean}


def evaluate(
    run_dir: str | os.PathLike | None = None,
    clips: Sequence[str | os.PathLike] | None = None,
    *,
    policy: str | Policy = "model",
    episodes: int = 1,
    backend: str = "mujoco",
    max_seconds: float | None = None,
    seed: int = 0,
    backend_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Evaluate a policy on clips (`evaluate_policy_on_clips`), with a run folder's settings.

    Args:
        run_dir: a `gym-motion train` run folder, or None.
        clips: clip npz(s) or folders; default: the run's training clips, else the embedded
            default motion.
        policy: ``"model"``: the run's trained SB3 model (imports the SB3 adapter); ``"zero"``:
            the zero action; or any `Policy` callable.
        episodes, backend, max_seconds, seed, backend_kwargs: see `evaluate_clip`.

    The observation mode and state-estimation choice come from the run's config.json (default
    "policy" and True). The result has ``"run"`` (str or None) besides the keys of
    `evaluate_policy_on_clips`.

    Raises:
        ValueError: an unknown policy name, or ``"model"`` without a run folder.
    """
    config: dict[str, Any] = {}
    act: Policy | None = None
    if callable(policy):
        act = policy
    elif policy == "model":
        if run_dir is None:
            raise ValueError("evaluating a model needs its run folder (--model RUN_DIR)")
        from gym_motion.adapters.sb3.policy import load_run_policy

        act, config = load_run_policy(run_dir)
    elif policy != "zero":
        raise ValueError(f"policy must be 'model', 'zero' or a callable, got {policy!r}")
    if not config and run_dir is not None and (Path(run_dir) / "config.json").is_file():
        config = json.loads((Path(run_dir) / "config.json").read_text())
    train_cfg = config.get("train", {})
    if not clips:
        clips = train_cfg.get("motion") or []
    if not clips:
        from gym_motion.motion import DEFAULT_MOTION_PATH

        clips = [DEFAULT_MOTION_PATH]
    result = evaluate_policy_on_clips(
        clips,
        act,
        episodes=episodes,
        backend=backend,
        obs_mode=train_cfg.get("obs_mode", "policy"),
        state_estimation=train_cfg.get("state_estimation", True),
        max_seconds=max_seconds,
        seed=seed,
        backend_kwargs=backend_kwargs,
    )
    result["run"] = None if run_dir is None else str(run_dir)
    return result


def format_table(result: dict[str, Any]) -> str:
    """A fixed-width table of `evaluate_policy_on_clips` results, one row per clip."""
    cols = (
        ("success", "success_rate", "{:.2f}"),
        ("len", "episode_length", "{:.0f}"),
        ("len_s", "episode_length_s", "{:.2f}"),
        ("mpkpe_mm", "mpkpe_mm", "{:.1f}"),
        ("root_mpkpe_mm", "root_mpkpe_mm", "{:.1f}"),
        ("joint_rad", "joint_pos_rad", "{:.3f}"),
        ("track_rew", "tracking_reward_per_step", "{:.3f}"),
        ("track_rew_clip", "tracking_reward_per_clip_step", "{:.3f}"),
    )
    rows = [(Path(c).name, r) for c, r in result["clips"].items()]
    if len(rows) > 1:
        rows.append(("mean", result["mean"]))
    w = max(12, *(len(name) for name, _ in rows))
    lines = [f"{'clip':<{w}} " + " ".join(f"{h:>13}" for h, _, _ in cols)]
    for name, r in rows:
        lines.append(f"{name:<{w}} " + " ".join(f"{fmt.format(r[k]):>13}" for _, k, fmt in cols))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# CLI


def register_cli(subparsers: argparse._SubParsersAction) -> None:
    """Adds ``gym-motion eval`` to the CLI's subparsers."""
    p = subparsers.add_parser(
        "eval",
        help="evaluate a trained policy (or zero action) on motion clips",
        description="Play each clip from its start (no randomisation, no noise) with the "
        "deterministic policy; print per-clip success rate, MPKPE, joint error, tracking "
        "reward and episode length, and write them as JSON.",
    )
    p.add_argument("--model", default=None, metavar="RUN_DIR", help="a gym-motion train run")
    p.add_argument("--motion", nargs="+", default=None, metavar="CLIP", help="clip npz(s)")
    p.add_argument("--episodes", type=int, default=1, help="episodes per clip (in parallel)")
    p.add_argument("--policy", choices=("model", "zero"), default="model")
    p.add_argument("--backend", default="mujoco")
    p.add_argument("--max-seconds", type=float, default=None, help="cap on an episode, s")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--json",
        default=None,
        help="output JSON (default RUN_DIR/eval_<policy>.json, else eval.json)",
    )
    p.set_defaults(func=_run_cli)


def _run_cli(args: argparse.Namespace) -> int:
    if args.policy == "model" and args.model is None:
        raise SystemExit("gym-motion eval: --model RUN_DIR is required unless --policy zero")
    result = evaluate(
        args.model,
        args.motion,
        policy=args.policy,
        episodes=args.episodes,
        backend=args.backend,
        max_seconds=args.max_seconds,
        seed=args.seed,
    )
    print(format_table(result))
    path = args.json or (
        os.path.join(args.model, f"eval_{args.policy}.json") if args.model else "eval.json"
    )
    Path(path).write_text(json.dumps(result, indent=2))
    print(f"wrote {path}")
    return 0
