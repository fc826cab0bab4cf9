"""Evaluation of a policy (or the zero action) on motion clips; `gym-motion eval` runs it.

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
batch of actions (`gym_motion.policy.Policy`), e.g. a NumPy function::

    from gym_motion.evaluate import evaluate_policy_on_clips

    W = np.zeros((160, 29), np.float32)
    result = evaluate_policy_on_clips(["dance.npz"], lambda obs: obs @ W)
    result["clips"]["dance.npz"]["mpkpe_mm"]

A policy may also be bound to the env it runs in: an object with ``bind(env) -> Policy``
(`gym_motion.policy.BindablePolicy`) is bound once each env is built.
`gym_motion.deploy.OnnxPolicy` is one: an ONNX policy from any trainer, its joint order,
default pose, action scale and observation terms (deploy metadata) mapped onto the env's, its
``time_step`` input fed the motion frame.

The task is a `TrackingEnvCfg` (``cfg``; default: the default task), played with
`eval_cfg`; its backend steps the physics. `gym_motion.training.RunFolder.evaluate` evaluates
a `gym-motion train` run in the task it trained on, its policy loaded by the library that
trained it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gym_motion.envs.config import TrackingEnvCfg
from gym_motion.policy import BindablePolicy, Policy, bind_policy

__all__ = [
    "METRICS",
    "anchor_trace",
    "ending",
    "evaluate_clip",
    "evaluate_policy_on_clips",
    "format_table",
]

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


def evaluate_clip(
    clip: str | os.PathLike,
    policy: Policy | BindablePolicy | None,
    cfg: TrackingEnvCfg | None = None,
    *,
    episodes: int = 1,
    obs_mode: str = "policy",
    max_seconds: float | None = None,
    seed: int = 0,
    playback: str = "real_time",
    randomization: str = "none",
) -> dict[str, Any]:
    """Metrics of `policy` on one clip, `episodes` episodes in parallel from its first frame.

    Args:
        clip: a clip npz.
        policy: obs -> actions (`Policy`), or a `BindablePolicy` (bound to the env built
            here); None: the zero action (`gym_motion.policy.zero_policy`).
        cfg: the task, robot and physics backend (default: the default task), played with
            `eval_cfg` (clips from their start, no noise, no randomisation).
        episodes: N envs, one episode each.
        obs_mode: the observation `policy` takes, "policy" (N, D) or "dict".
        max_seconds: cap on the episode, s (default: the whole clip). seed: the env's seed.
        playback: "real_time" (default) or "frame_per_step" (one clip frame per control step,
            as mjlab trains; `gym_motion.motion.Playback`).
        randomization: "none" (`eval_cfg`: nothing random) or "play" (`play_cfg`: what
            mjlab's play config keeps random, each episode its own draw).

    Returns:
        Each of `METRICS` (mean over the episodes, float), and ``clip`` (str), ``episodes``,
        ``max_episode_steps`` (the horizon, control steps), ``clip_seconds``, ``playback``,
        ``randomization`` and ``terminations``: per episode ``{"causes": [cause, ...],
        "step": int}``, the ``final/termination/<cause>`` infos that fired (``time_out``: the
        horizon was reached) and the control step they fired on (1-based, the episode length).

    Raises:
        ValueError: an unknown playback or randomization, a policy that cannot be bound to the
            env, or actions of the wrong shape.
    """
    from gymnasium.vector import AutoresetMode

    from gym_motion.envs.config import EVAL_RANDOMIZATIONS, eval_cfg, play_cfg
    from gym_motion.envs.stats import tracking_terms
    from gym_motion.envs.tracking import TrackingVecEnv
    from gym_motion.motion.library import MotionLibrary

    if randomization not in EVAL_RANDOMIZATIONS:
        raise ValueError(f"randomization must be one of {EVAL_RANDOMIZATIONS}, got "
                         f"{randomization!r}")  # fmt: skip
    cfg = play_cfg(cfg) if randomization == "play" else eval_cfg(cfg)
    dt = cfg.sim.control_dt
    library = MotionLibrary.from_paths(clip, fps=1.0 / dt, robot=cfg.robot, playback=playback)
    horizon = int(library.lengths[0]) - 1
    if max_seconds is not None:
        horizon = min(horizon, max(1, round(max_seconds / dt)))
    env = TrackingVecEnv(
        num_envs=episodes,
        motion=library,
        cfg=cfg,
        autoreset_mode=AutoresetMode.SAME_STEP,
        obs_mode=obs_mode,
        max_episode_steps=horizon,
        seed=seed,
    )
    try:
        policy = bind_policy(policy, env)
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
            "randomization": randomization,
            "terminations": ends,
        }
    )
    return result


_CAUSE = "final/termination/"


def anchor_trace(
    clip: str | os.PathLike,
    policy: Policy | BindablePolicy | None,
    cfg: TrackingEnvCfg | None = None,
    *,
    obs_mode: str = "policy",
) -> dict[str, np.ndarray]:
    """The anchor's horizontal path in one episode of `policy` from the clip's first frame
    (`eval_cfg`, as `evaluate_clip` plays it), against the reference's, to tell a policy that
    leaves the clip's route from one that walks it late (``scripts/route_lag.py`` prints both).

    Args:
        clip: a clip npz, played in real time. policy, cfg, obs_mode: as `evaluate_clip`.

    Returns:
        ``robot``, ``reference``: (T, 2) float64, the robot's and the reference's anchor x, y
        (world coordinates, m) after each of the T control steps played (T = the episode
        length); ``route``: (H + 1, 2) float64, the reference anchor's x, y at every control
        frame of the clip (step k plays frame k; H = the horizon), in the same coordinates.

    Raises:
        ValueError: as `evaluate_clip`.
    """
    from gym_motion.envs.config import eval_cfg
    from gym_motion.envs.tracking import TrackingVecEnv
    from gym_motion.motion.library import MotionLibrary

    cfg = eval_cfg(cfg)
    library = MotionLibrary.from_paths(clip, fps=1.0 / cfg.sim.control_dt, robot=cfg.robot)
    horizon = int(library.lengths[0]) - 1
    env = TrackingVecEnv(1, motion=library, cfg=cfg, obs_mode=obs_mode,
                         max_episode_steps=horizon)  # fmt: skip
    try:
        act = bind_policy(policy, env)
        s, a = env.state, env.state.anchor
        robot, reference = [], []
        obs, _ = env.reset(seed=0)
        for _ in range(horizon):
            obs, _, terminated, truncated, _ = env.step(act(obs))
            # NEXT_STEP autoreset: the state is still the episode's last after it ends
            s = env.state  # read each step: the device MDP copies its reference then
            robot.append(s.robot.pos_w[0, a, :2].astype(np.float64))
            reference.append(s.ref.pos_w[0, a, :2].astype(np.float64))
            if terminated[0] or truncated[0]:
                break
        route = library.body_pos_w[: horizon + 1, library.body_names.index(s.body_names[a]), :2]
    finally:
        env.close()
    return {"robot": np.array(robot), "reference": np.array(reference),
            "route": route.astype(np.float64)}  # fmt: skip


def evaluate_policy_on_clips(
    clips: Sequence[str | os.PathLike],
    policy: Policy | BindablePolicy | None,
    cfg: TrackingEnvCfg | None = None,
    *,
    policy_name: str | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """`evaluate_clip` on each clip (a folder: its clip files, `gym_motion.motion.library.
    motion_files`) in the task `cfg`, `kwargs` passed on.

    Returns:
        ``{"policy": policy_name (default "zero" for None, else "model"), "clips": {path:
        evaluate_clip result}, "mean": {metric: mean over clips}, "library": {"clips",
        "clips_whole" (every episode to the clip's end), "steps_tracked" (steps from the
        clips' starts before each ended, summed over clips, episodes averaged), "steps_total"
        (the clips' horizons, summed), "share_tracked" (their ratio)}}``.
    """
    from gym_motion.motion.library import motion_files

    files = motion_files(clips)
    per_clip = {str(c): evaluate_clip(c, policy, cfg, **kwargs) for c in files}
    mean = {m: float(np.mean([r[m] for r in per_clip.values()])) for m in METRICS}
    name = policy_name or ("zero" if policy is None else "model")
    tracked = sum(min(r["episode_length"], r["max_episode_steps"]) for r in per_clip.values())
    total = sum(r["max_episode_steps"] for r in per_clip.values())
    library = {
        "clips": len(per_clip),
        "clips_whole": sum(r["success_rate"] == 1.0 for r in per_clip.values()),
        "steps_tracked": float(tracked),
        "steps_total": int(total),
        "share_tracked": float(tracked / total) if total else 0.0,
    }
    return {"policy": name, "clips": per_clip, "mean": mean, "library": library}


def format_table(result: dict[str, Any]) -> str:
    """A fixed-width table of `evaluate_policy_on_clips` results, one row per clip; ``ended``
    is how the first episode ended (`ending`); with several clips, their mean and a line on
    the library: clips whole and the share of its steps tracked from the clips' starts."""
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
            f"{name:<{w}} "
            + " ".join(f"{fmt.format(r[k]):>13}" for _, k, fmt in cols)
            + f"  {ended}"
        )
    lib = result.get("library")
    if len(rows) > 1 and lib:
        lines.append(
            f"library: {lib['clips_whole']} of {lib['clips']} clips whole; "
            f"{lib['steps_tracked']:.0f} of {lib['steps_total']} steps from the clips' starts "
            f"tracked ({100 * lib['share_tracked']:.0f} %); MPKPE {result['mean']['mpkpe_mm']:.1f}"
            " mm (mean over clips)"
        )
    return "\n".join(lines)


def ending(end: dict[str, Any]) -> str:
    """How an episode ended, e.g. ``"anchor_height at step 44"`` or ``"time_out at step 1618"``
    (an entry of an `evaluate_clip` result's ``terminations``)."""
    causes = "+".join(end["causes"]) or "not ended"
    return f"{causes} at step {end['step']}"
