"""`gym-motion eval`: evaluate a trained policy (or zero action) on motion clips.

    gym-motion eval --model runs/NAME --motion dance.npz walk.npz --episodes 4 --json out.json
    gym-motion eval --policy zero --motion dance.npz
    gym-motion eval --onnx policy.onnx --motion dance.npz [--policy-meta meta.yaml]
    gym-motion eval --onnx B_Fence1.onnx --motion B_Fence1.npz --frame-per-step

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
``final/error/*`` infos of `TrackingVecEnv`). How each episode ended is in ``terminations``:
the causes (the ``final/termination/<cause>`` infos that fired: a termination term,
``nonfinite``, or ``time_out`` when it reached the horizon) and the control step it fired on
(the episode length).

Clips play in real time by default (resampled to the 50 Hz control rate). ``playback=
"frame_per_step"`` (``--frame-per-step``) plays one file frame per control step whatever the
clip's fps label, as mjlab trains (`gym_motion.motion.Playback`): use it for a policy trained
there, e.g. a 60 fps clip then plays at 50/60 of its speed, as the policy learned it.

With eval_cfg and the CPU backend every episode of a clip is the same, so ``--episodes 1``
(the default) suffices; more episodes only matter with a stochastic backend or config.

Evaluation needs no RL library: a policy is any callable from a batch of observations to a
batch of actions (`Policy`), e.g. a NumPy function::

    from gym_motion.evaluate import evaluate_policy_on_clips

    W = np.zeros((160, 29), np.float32)
    result = evaluate_policy_on_clips(["dance.npz"], lambda obs: obs @ W)
    result["clips"]["dance.npz"]["mpkpe_mm"]

A policy may also be bound to the env it runs in: an object with ``bind(env) -> Policy``
(`BindablePolicy`) is bound once each env is built. `gym_motion.deploy.OnnxPolicy` is one: an
ONNX policy from any trainer, its joint order, default pose, action scale and observation
terms (deploy metadata) mapped onto the env's, its ``time_step`` input fed the motion frame.

Only ``--model RUN`` (`evaluate` with ``policy="model"``) loads a `gym-motion train` run, through
the adapter of the library that trained it (`load_run_policy`: `gym_motion.adapters.sb3.policy`
or `gym_motion.adapters.rsl_rl.policy`), imported then; ``--onnx``
needs onnxruntime (the ``[onnx]`` extra) and neither SB3 nor torch.

The JSON goes where ``--json`` says; without it, ``--model RUN`` writes
``RUN/eval_<policy>.json`` and other evaluations write no file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from gym_motion import config_values as cv
from gym_motion.atomic import check_output_path, write_json
from gym_motion.backends import BACKENDS

__all__ = [
    "METRICS",
    "BindablePolicy",
    "Obs",
    "Policy",
    "RUN_LOADERS",
    "evaluate",
    "evaluate_clip",
    "evaluate_policy_on_clips",
    "format_table",
    "load_run_policy",
    "register_cli",
    "zero_policy",
]

Obs = np.ndarray | dict[str, np.ndarray]
"""A batch of observations: (N, D) float32, or ``{"policy": (N, D), "critic": (N, C)}``
float32 arrays in the env's dict observation mode."""

Policy = Callable[[Obs], np.ndarray]
"""obs (`Obs`, N rows) -> actions (N, A) float32 (A = 29 for the G1), deterministic."""


@runtime_checkable
class BindablePolicy(Protocol):
    """A policy that needs its env (its config, or state such as the motion frame): `bind`
    returns the `Policy` for one env; it may raise ValueError when it cannot run there."""

    def bind(self, env: Any) -> Policy: ...

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
    policy: Policy | BindablePolicy | None,
    *,
    episodes: int = 1,
    backend: str = "mujoco",
    obs_mode: str = "policy",
    state_estimation: bool = True,
    max_seconds: float | None = None,
    seed: int = 0,
    backend_kwargs: dict[str, Any] | None = None,
    playback: str = "real_time",
) -> dict[str, Any]:
    """Metrics of `policy` on one clip, `episodes` episodes in parallel from its first frame.

    Args:
        clip: a clip npz.
        policy: obs -> actions (`Policy`), or a `BindablePolicy` (bound to the env built
            here); None: the zero action (`zero_policy`).
        episodes: N envs, one episode each. backend, backend_kwargs: physics backend.
        obs_mode: the observation `policy` takes, "policy" (N, D) or "dict".
        state_estimation: False: the 154-value policy observation (no anchor position, no
            base linear velocity).
        max_seconds: cap on the episode, s (default: the whole clip). seed: the env's seed.
        playback: "real_time" (default) or "frame_per_step" (one clip frame per control step,
            as mjlab trains; `gym_motion.motion.Playback`).

    Returns:
        Each of `METRICS` (mean over the episodes, float), and ``clip`` (str), ``episodes``,
        ``max_episode_steps`` (the horizon, control steps), ``clip_seconds``, ``playback`` and
        ``terminations``: per episode ``{"causes": [cause, ...], "step": int}``, the
        ``final/termination/<cause>`` infos that fired (``time_out``: the horizon was reached)
        and the control step they fired on (1-based, the episode length).

    Raises:
        ValueError: an unknown playback, a policy that cannot be bound to the env, or actions
            of the wrong shape.
    """
    from gymnasium.vector import AutoresetMode

    from gym_motion.envs.config import TrackingEnvCfg, eval_cfg
    from gym_motion.envs.stats import tracking_terms
    from gym_motion.envs.tracking import TrackingVecEnv
    from gym_motion.motion.library import MotionLibrary

    cfg = eval_cfg(TrackingEnvCfg(state_estimation=state_estimation))
    dt = cfg.sim.control_dt
    library = MotionLibrary.from_paths(clip, fps=1.0 / dt, robot=cfg.robot, playback=playback)
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
        elif isinstance(policy, BindablePolicy):
            policy = policy.bind(env)
        terms = tracking_terms(env)
        n = episodes
        done = np.zeros(n, bool)
        rec: dict[str, np.ndarray] = {m: np.zeros(n) for m in METRICS}
        ends: list[dict[str, Any]] = [{"causes": [], "step": 0} for _ in range(n)]
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
            causes = [k for k in info if k.startswith(_CAUSE)]
            for i in np.flatnonzero(new):
                fired = [k[len(_CAUSE) :] for k in causes if info[k][i]]
                ends[i] = {"causes": fired, "step": int(info["final/length"][i])}
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
            "playback": str(playback),
            "terminations": ends,
        }
    )
    return result


_CAUSE = "final/termination/"


def evaluate_policy_on_clips(
    clips: Sequence[str | os.PathLike],
    policy: Policy | BindablePolicy | None,
    *,
    policy_name: str | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """`evaluate_clip` on each clip (a folder: its ``*.npz``), `kwargs` passed on.

    Returns:
        ``{"policy": policy_name (default "zero" for None, else "model"), "clips": {path:
        evaluate_clip result}, "mean": {metric: mean over clips}}``.
    """
    files: list[Path] = []
    for c in clips:
        p = Path(c)
        files.extend(sorted(p.glob("*.npz")) if p.is_dir() else [p])
    per_clip = {str(c): evaluate_clip(c, policy, **kwargs) for c in files}
    mean = {m: float(np.mean([r[m] for r in per_clip.values()])) for m in METRICS}
    name = policy_name or ("zero" if policy is None else "model")
    return {"policy": name, "clips": per_clip, "mean": mean}


def evaluate(
    run_dir: str | os.PathLike | None = None,
    clips: Sequence[str | os.PathLike] | None = None,
    *,
    policy: str | Policy | BindablePolicy = "model",
    episodes: int = 1,
    backend: str = "mujoco",
    max_seconds: float | None = None,
    seed: int = 0,
    backend_kwargs: dict[str, Any] | None = None,
    state_estimation: bool | None = None,
    playback: str = "real_time",
) -> dict[str, Any]:
    """Evaluate a policy on clips (`evaluate_policy_on_clips`), with a run folder's settings.

    Args:
        run_dir: a `gym-motion train` run folder, or None.
        clips: clip npz(s) or folders; default: the run's training clips, else the embedded
            default motion.
        policy: ``"model"``: the run's trained model (`load_run_policy`); ``"zero"``:
            the zero action; any `Policy` callable; or a `BindablePolicy` such as
            `gym_motion.deploy.OnnxPolicy`.
        episodes, backend, max_seconds, seed, backend_kwargs, playback: see `evaluate_clip`.
        state_estimation: the policy observation (True: 160 values, False: 154); default: the
            run's config.json, else the policy's own ``state_estimation`` attribute (an
            `OnnxPolicy` tells it from its observation terms), else True.

    The observation mode comes from the run's config.json (default "policy"). The result has
    ``"run"`` (str or None) besides the keys of `evaluate_policy_on_clips`; ``"policy"`` is
    "model", "zero", or the policy's ``policy_name`` attribute ("onnx" for an `OnnxPolicy`).

    Raises:
        ValueError: an unknown policy name, ``"model"`` without a run folder, a
            `state_estimation` other than the run's, or a policy that cannot run in the env
            (`BindablePolicy.bind`).
    """
    config: dict[str, Any] = {}
    act: Policy | BindablePolicy | None = None
    name = None
    if isinstance(policy, BindablePolicy) or callable(policy):
        act = policy
        name = getattr(policy, "policy_name", None)
    elif policy == "model":
        if run_dir is None:
            raise ValueError("evaluating a model needs its run folder (--model RUN_DIR)")
        act, config = load_run_policy(run_dir)
    elif policy != "zero":
        raise ValueError(f"policy must be 'model', 'zero' or a callable, got {policy!r}")
    if not config and run_dir is not None and (Path(run_dir) / "config.json").is_file():
        config = json.loads((Path(run_dir) / "config.json").read_text())
    train_cfg = config.get("train", {})
    trained = train_cfg.get("state_estimation") if policy == "model" else None
    if state_estimation is not None and trained is not None and state_estimation != trained:
        raise ValueError(
            f"the run {run_dir} was trained with state_estimation={trained} "
            f"({160 if trained else 154}-value policy observation) but "
            f"state_estimation={state_estimation} was asked (e.g. by --env-id); leave it out "
            "to use the run's"
        )
    if state_estimation is None:
        state_estimation = train_cfg.get(
            "state_estimation", getattr(policy, "state_estimation", True)
        )
    if not clips:
        clips = train_cfg.get("motion") or []
    if not clips:
        from gym_motion.motion import DEFAULT_MOTION_PATH

        clips = [DEFAULT_MOTION_PATH]
    result = evaluate_policy_on_clips(
        clips,
        act,
        policy_name=name,
        episodes=episodes,
        backend=backend,
        obs_mode=train_cfg.get("obs_mode", "policy"),
        state_estimation=bool(state_estimation),
        max_seconds=max_seconds,
        seed=seed,
        backend_kwargs=backend_kwargs,
        playback=playback,
    )
    result["run"] = None if run_dir is None else str(run_dir)
    return result


# config.json's "library" -> the module whose ``load_run_policy(run_dir)`` loads the run's model
RUN_LOADERS = {
    "sb3": "gym_motion.adapters.sb3.policy",
    "rsl_rl": "gym_motion.adapters.rsl_rl.policy",
}


def load_run_policy(run_dir: str | os.PathLike) -> tuple[Policy, dict[str, Any]]:
    """The deterministic policy of a `gym-motion train` run folder, and its config.json, loaded
    by the adapter of the library that trained it (config.json's ``"library"``; runs without
    one are Stable-Baselines3's). Imports that adapter, and so its library, only now.

    Raises:
        ValueError: config.json names a library without a loader in `RUN_LOADERS`.
        FileNotFoundError: the run folder lacks the files its loader needs.
    """
    import importlib

    path = Path(run_dir) / "config.json"
    library = json.loads(path.read_text()).get("library", "sb3") if path.is_file() else "sb3"
    if library not in RUN_LOADERS:
        raise ValueError(
            f"{path}: a run of library {library!r}, which gym_motion cannot load; "
            f"known: {sorted(RUN_LOADERS)}"
        )
    return importlib.import_module(RUN_LOADERS[library]).load_run_policy(run_dir)


def format_table(result: dict[str, Any]) -> str:
    """A fixed-width table of `evaluate_policy_on_clips` results, one row per clip; ``ended``
    is how the first episode ended (`ending`)."""
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
    lines = [f"{'clip':<{w}} " + " ".join(f"{h:>13}" for h, _, _ in cols) + "  ended"]
    for name, r in rows:
        ended = ending(r["terminations"][0]) if r.get("terminations") else ""
        lines.append(
            f"{name:<{w}} " + " ".join(f"{fmt.format(r[k]):>13}" for _, k, fmt in cols)
            + f"  {ended}"
        )
    return "\n".join(lines)


def ending(end: dict[str, Any]) -> str:
    """How an episode ended, e.g. ``"anchor_height at step 44"`` or ``"time_out at step 1618"``
    (an entry of an `evaluate_clip` result's ``terminations``)."""
    causes = "+".join(end["causes"]) or "not ended"
    return f"{causes} at step {end['step']}"


# ---------------------------------------------------------------------------------------------
# CLI


def register_cli(subparsers: argparse._SubParsersAction) -> None:
    """Adds ``gym-motion eval`` to the CLI's subparsers."""
    p = subparsers.add_parser(
        "eval",
        help="evaluate a trained policy, an ONNX policy or the zero action on motion clips",
        description="Play each clip from its start (no randomisation, no noise) with the "
        "deterministic policy; print per-clip success rate, MPKPE, joint error, tracking "
        "reward, episode length and how the episode ended (termination cause and step).",
    )
    add_policy_args(p)
    p.add_argument("--motion", nargs="+", default=None, metavar="CLIP", help="clip npz(s)")
    p.add_argument("--episodes", type=cv.cli_number(int, 1), default=1,
                   help="episodes per clip (in parallel)")  # fmt: skip
    p.add_argument(
        "--env-id", default=None, choices=_env_ids(),
        help="the env whose policy observation the policy reads (160 values, or 154 for "
        "NoStateEst); default: from the run's config or the ONNX policy's observation terms",
    )  # fmt: skip
    p.add_argument(
        "--frame-per-step", action="store_true",
        help="play one clip frame per control step whatever its fps label (as mjlab trains); "
        "default: real time",
    )  # fmt: skip
    p.add_argument("--backend", default="mujoco", choices=BACKENDS)
    p.add_argument("--max-seconds", type=cv.cli_number(float, 0.0, low_open=True), default=None,
                   help="cap on an episode, s")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--json",
        default=None,
        help="write the results to this JSON file (default with --model: "
        "RUN_DIR/eval_<policy>.json, or eval_<policy>_<clip names>_<path digest>.json with "
        "--motion; else no file)",
    )
    p.set_defaults(func=_run_cli)


def add_policy_args(p: argparse.ArgumentParser) -> None:
    """The policy-source options of ``gym-motion eval`` and ``render``: --model, --onnx,
    --policy-meta, --policy (checked by `check_policy_args`)."""
    p.add_argument("--model", default=None, metavar="RUN_DIR", help="a gym-motion train run")
    p.add_argument(
        "--onnx", default=None, metavar="POLICY.onnx",
        help="an ONNX tracking policy from any trainer, mapped onto the env by its deploy "
        "metadata (joint order, default pose, action scale, observation terms)",
    )  # fmt: skip
    p.add_argument(
        "--policy-meta", default=None, metavar="META.yaml",
        help="deploy metadata for --onnx as YAML/JSON (the ONNX metadata keys); its keys "
        "override the file's",
    )  # fmt: skip
    p.add_argument(
        "--policy", choices=("model", "zero", "tracker"), default=None,
        help="model (with --model), zero (the zero action) or tracker (the ONNX policy shipped "
        "for the embedded default motion, gym_motion.deploy.DEFAULT_POLICY_PATH)",
    )  # fmt: skip


def check_policy_args(args: argparse.Namespace, command: str) -> None:
    """Check the options of `add_policy_args` (``gym-motion <command>``) and turn ``--policy
    tracker`` into ``--onnx DEFAULT_POLICY_PATH`` (in `args`).

    Raises:
        SystemExit: contradictory options (tracker or --onnx with --model or --policy;
            --policy-meta without --onnx), in one line naming them.
    """
    if args.policy == "tracker":
        if args.onnx is not None or args.model is not None:
            raise SystemExit(f"gym-motion {command}: --policy tracker runs the shipped ONNX "
                             "policy; drop --model/--onnx")  # fmt: skip
        from gym_motion.deploy import DEFAULT_POLICY_PATH

        args.onnx, args.policy = str(DEFAULT_POLICY_PATH), None
    if args.onnx is not None and (args.model is not None or args.policy is not None):
        raise SystemExit(
            f"gym-motion {command}: --onnx runs the ONNX policy; drop --model/--policy"
        )
    if args.policy_meta is not None and args.onnx is None:
        raise SystemExit(f"gym-motion {command}: --policy-meta goes with --onnx")


def _env_ids() -> list[str]:
    from gym_motion import ENV_IDS

    return list(ENV_IDS)


def _env_id_state_estimation(env_id: str) -> bool:
    from gym_motion import ENV_IDS

    return bool(ENV_IDS[env_id][2].get("state_estimation", True))


# the files of a run folder that eval reads (its --json may not replace them)
_RUN_INPUTS = ("config.json", "summary.json", "model.zip", "vecnormalize.pkl", "model.pt")


def _run_cli(args: argparse.Namespace) -> int:
    check_policy_args(args, "eval")
    if args.json is not None:  # not onto what this command reads
        run = [Path(args.model) / n for n in _RUN_INPUTS] if args.model else []
        reads = (*run, *(args.motion or ()), *(p for p in (args.onnx, args.policy_meta) if p))
        check_output_path(args.json, inputs=tuple(reads), make_parents=True)
    state_estimation = None
    if args.env_id is not None:
        state_estimation = _env_id_state_estimation(args.env_id)
    playback = "frame_per_step" if args.frame_per_step else "real_time"
    policy: str | BindablePolicy
    if args.onnx is not None:
        from gym_motion.deploy import OnnxPolicy
        from gym_motion.envs.config import TrackingEnvCfg

        policy = OnnxPolicy(args.onnx, args.policy_meta)
        if state_estimation is None:
            state_estimation = policy.state_estimation
        env_id = args.env_id or (
            "GymMotion/G1-Tracking-" + ("v0" if state_estimation else "NoStateEst-v0")
        )
        # check (and show) the mapping before any env is built
        mapping = policy.mapping(TrackingEnvCfg(state_estimation=state_estimation), env_id)
        print(f"{args.onnx} in {env_id}: {mapping.describe()}")
    else:
        policy = args.policy or "model"
        if policy == "model" and args.model is None:
            raise SystemExit(
                "gym-motion eval: --model RUN_DIR or --onnx POLICY.onnx is required unless "
                "--policy zero or --policy tracker"
            )
    result = evaluate(
        args.model,
        args.motion,
        policy=policy,
        episodes=args.episodes,
        backend=args.backend,
        max_seconds=args.max_seconds,
        seed=args.seed,
        state_estimation=state_estimation,
        playback=playback,
    )
    if args.onnx is not None:
        result["onnx"] = str(args.onnx)
    print(format_table(result))
    for clip, r in result["clips"].items():
        ends = sorted({ending(e) for e in r["terminations"]})
        print(f"{Path(clip).name}: {r['episodes']} episode(s) ended: {'; '.join(ends)}")
    path = args.json
    if path is None and args.model is not None:
        # named for the clips when they are not the run's own, so the run's result stays:
        # their names and a digest of their full paths (equal names in other folders differ)
        clips = ""
        if args.motion:
            resolved = "\n".join(str(Path(m).resolve()) for m in args.motion)
            digest = hashlib.sha256(resolved.encode()).hexdigest()[:8]
            clips = "".join(f"_{Path(m).stem}" for m in args.motion)[:60] + f"_{digest}"
        path = os.path.join(args.model, f"eval_{result['policy']}{clips}.json")
    if path is None:
        print("results not written (no --json)")
        return 0
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_json(path, result)
    print(f"wrote {path}")
    return 0

