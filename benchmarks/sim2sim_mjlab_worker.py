"""Plays an ONNX tracking policy in mjlab's G1 tracking task (runs in the mjlab venv only).

The mjlab half of ``benchmarks/sim2sim_mjlab.py``, which starts it with the python of a
separate virtual environment holding ``mjlab``, ``torch`` and ``onnxruntime`` (mjlab pins its
own MuJoCo); it never imports gym_motion.

    python sim2sim_mjlab_worker.py --policy P.onnx --motion clip.csv --input-fps 50 --seeds 0 1
    python sim2sim_mjlab_worker.py --policy P.onnx --motion mjlab_motion.npz --out r.json

1. The motion: a G1 CSV (root xyz | root quaternion xyzw | 29 joints) is made into mjlab's
   motion npz at 50 fps by mjlab's own ``scripts/csv_to_npz.py`` (its ``main``, with the
   W&B upload it ends with left out); an npz (mjlab's motion format) is used as it is: mjlab
   plays one npz frame per 20 ms control step.
2. Per seed, one env of ``Mjlab-Tracking-Flat-Unitree-G1`` (``-No-State-Estimation`` when the
   policy observes neither the anchor position nor the base linear velocity) with mjlab's play
   config, on Warp's CPU device, the clip played from its start.
3. The policy (onnxruntime; input ``obs``: the env's "actor" observation group, plus
   ``time_step`` when the graph takes it; output ``actions``) runs until the first termination
   or the clip's end, whichever comes first.

Output (JSON, to --out or stdout): the mjlab version, task, randomisation kept, and per seed
``steps``, ``clip_steps``, ``mpkpe_m`` (episode mean), ``ended_by``, ``seconds``.
mjlab's own console output goes to stderr; this script's progress lines start with
``[sim2sim]`` and a refusal is one ``[sim2sim] error: ...`` line with exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

TASK = "Mjlab-Tracking-Flat-Unitree-G1"
TASK_NO_STATE_ESTIMATION = "Mjlab-Tracking-Flat-Unitree-G1-No-State-Estimation"
STATE_ESTIMATION_TERMS = ("motion_anchor_pos_b", "base_lin_vel")
MOTION_FPS = 50.0  # mjlab's control rate: one motion frame per env step
# The play config's randomisation that --no-randomization switches off (startup events).
RANDOMIZATION_EVENTS = ("foot_friction", "base_com", "encoder_bias")
# mjlab writes per-joint numbers with 3 decimals: half a unit of the last one, and float32 slack.
META_TOL = 5e-4 + 1e-6
PREFIX = "[sim2sim]"


class Refused(Exception):
    """A policy, clip or setup this check cannot run; the message is one line."""


def log(message: str) -> None:
    print(f"{PREFIX} {message}", file=sys.stderr, flush=True)


class _SavezTo:
    """numpy, except that ``savez`` writes to `path` (csv_to_npz saves to /tmp/motion.npz)."""

    def __init__(self, path: Path):
        self._path = path

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    def savez(self, _file: Any, **arrays: Any) -> None:
        np.savez(self._path, **arrays)


class _NoUpload:
    """Stands in for wandb: every call returns itself, so csv_to_npz's upload does nothing."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self


def csv_to_motion_npz(csv: Path, input_fps: float, out: Path) -> None:
    """mjlab's ``csv_to_npz.main`` on a G1 CSV at `input_fps` (Hz) -> `out` at 50 fps, on CPU."""
    from mjlab.scripts import csv_to_npz

    saved_np, saved_wandb = csv_to_npz.np, sys.modules.get("wandb")
    csv_to_npz.np = _SavezTo(out)
    sys.modules["wandb"] = _NoUpload()  # type: ignore[assignment]
    try:
        csv_to_npz.main(
            input_file=str(csv),
            output_name=out.stem,
            input_fps=input_fps,
            output_fps=MOTION_FPS,
            device="cpu",
        )
    finally:
        csv_to_npz.np = saved_np
        if saved_wandb is None:
            sys.modules.pop("wandb", None)
        else:
            sys.modules["wandb"] = saved_wandb
    # The CSV's first row must come back as the npz's first frame (root position, joints in
    # the robot's order): a check that the columns were read as they were written.
    row = np.loadtxt(csv, delimiter=",", max_rows=1)
    with np.load(out) as data:
        root, joints = data["body_pos_w"][0, 0], data["joint_pos"][0]
    if not (np.allclose(root, row[:3], atol=1e-4) and np.allclose(joints, row[7:], atol=1e-4)):
        raise Refused(f"csv_to_npz did not reproduce the first row of {csv} (column order?)")


def read_policy(path: Path) -> tuple[Any, dict[str, str]]:
    """An onnxruntime session (1 thread) and the model's metadata_props."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    meta = dict(session.get_modelmeta().custom_metadata_map)
    missing = [k for k in ("joint_names", "observation_names") if k not in meta]
    if missing:
        raise Refused(f"{path}: no {', '.join(missing)} in its ONNX metadata")
    inputs = {i.name for i in session.get_inputs()}
    if "obs" not in inputs or inputs - {"obs", "time_step"}:
        raise Refused(f"{path}: inputs {sorted(inputs)}; this check feeds 'obs' and 'time_step'")
    if "actions" not in {o.name for o in session.get_outputs()}:
        raise Refused(f"{path}: no output named 'actions'")
    return session, meta


def task_for(meta: dict[str, str]) -> str:
    """The mjlab task whose actor observation has the policy's terms."""
    terms = meta["observation_names"].split(",")
    return TASK if any(t in terms for t in STATE_ESTIMATION_TERMS) else TASK_NO_STATE_ESTIMATION


def check_policy(
    session: Any, meta: dict[str, str], env: Any, source: str, ignore_conventions: bool = False
) -> list[str]:
    """Refuse a policy whose metadata disagrees with the env: joint order (of the robot and of
    the action term), observation size, default pose and action scale; and, unless
    `ignore_conventions`, observation conventions (term names, the reference frame observed).

    Returns:
        The observation conventions that differ from mjlab's (empty when none), one phrase each.
    """
    robot = env.scene["robot"]
    action = env.action_manager.get_term("joint_pos")
    joints = tuple(meta["joint_names"].split(","))
    if joints != tuple(robot.joint_names) or joints != tuple(action.target_names):
        first = next(
            (i for i, (a, b) in enumerate(zip(joints, robot.joint_names, strict=False)) if a != b),
            min(len(joints), len(robot.joint_names)),
        )
        raise Refused(
            f"{source}: joint_names differ from mjlab's G1 joint order at index {first} "
            f"({len(joints)} policy joints, {len(robot.joint_names)} in mjlab)"
        )
    obs_dim = env.observation_manager.group_obs_dim["actor"][0]
    width = {i.name: i.shape for i in session.get_inputs()}["obs"][-1]
    if isinstance(width, int) and width != obs_dim:
        raise Refused(f"{source}: input obs has {width} values, mjlab's actor group {obs_dim}")
    expected = {
        "default_joint_pos": action.offset[0],
        "action_scale": action.scale[0] if hasattr(action.scale, "shape") else action.scale,
    }
    for key, env_value in expected.items():
        if key not in meta:
            raise Refused(f"{source}: no {key} in its ONNX metadata")
        value = np.array([float(v) for v in meta[key].split(",")])
        if value.shape != (len(joints),):
            raise Refused(f"{source}: {key} has {value.size} values for {len(joints)} joints")
        env_value = np.broadcast_to(np.asarray(env_value, np.float64), value.shape)
        bad = np.flatnonzero(np.abs(value - env_value) > META_TOL)
        if bad.size:
            i = int(bad[0])
            raise Refused(
                f"{source}: {key} of {joints[i]} is {value[i]:g}, mjlab's is {env_value[i]:g} "
                f"({bad.size} joints differ)"
            )
    terms = meta["observation_names"].split(",")
    env_terms = list(env.observation_manager.active_terms["actor"])
    if len(terms) != len(env_terms):
        raise Refused(f"{source}: observation_names {terms}, mjlab's actor terms {env_terms}")
    pairs = zip(terms, env_terms, strict=True)
    differences = [f"{t} (mjlab feeds its {e})" for t, e in pairs if t != e]
    frame = meta.get("observed_frame", "next")  # gym_motion's key; mjlab shows the next frame
    if frame != "next":
        differences.append(f"observed_frame {frame} (mjlab shows the next reference frame)")
    if differences and not ignore_conventions:
        raise Refused(
            f"{source}: observes other than mjlab's actor group: {'; '.join(differences)}; "
            "--ignore-conventions plays it on mjlab's observation anyway"
        )
    return differences


def stated_observation(env: Any, differences: list[str]) -> Any:
    """A function turning mjlab's actor observation (1, D) into the one a policy's metadata
    states, for the conventions gym_motion used before it took mjlab's, or None when the
    policy observes mjlab's: ``base_origin_lin_vel`` (the pelvis origin's velocity: the IMU
    site's, minus w x r with the gyro's w and the site's offset r in the pelvis) and
    ``observed_frame current`` (the reference terms of the robot's own frame, one before the
    frame mjlab shows). What a deploy stack honouring gym_motion's metadata would feed it.

    Raises:
        Refused: a difference this function cannot bridge.
    """
    import torch
    from mjlab.utils.lab_api.math import matrix_from_quat, quat_apply_inverse, quat_inv, quat_mul

    if not differences:
        return None
    names = list(env.observation_manager.active_terms["actor"])
    widths = [int(np.prod(d)) for d in env.observation_manager.group_obs_term_dim["actor"]]
    starts = np.cumsum([0, *widths])
    cols = {n: slice(int(a), int(a) + w) for n, a, w in zip(names, starts, widths, strict=False)}
    origin_velocity, current_frame = False, False
    for d in differences:
        if d.startswith("base_origin_lin_vel (mjlab feeds its base_lin_vel)"):
            origin_velocity = True
        elif d.startswith("observed_frame current"):
            current_frame = True
        else:
            raise Refused(f"cannot feed a policy that observes {d}")
    model = env.sim.mj_model
    site = next(i for i in range(model.nsite) if model.site(i).name.endswith("imu_in_pelvis"))
    offset = torch.tensor(model.site_pos[site], dtype=torch.float32)
    command = env.command_manager.get_term("motion")
    anchor = command.motion_anchor_body_index

    def feed(obs: torch.Tensor) -> torch.Tensor:
        obs = obs.clone()
        if origin_velocity:
            w = obs[:, cols["base_ang_vel"]]
            obs[:, cols["base_lin_vel"]] -= torch.linalg.cross(w, offset.expand_as(w))
        if current_frame:
            f = torch.clamp(command.time_steps - 1, min=0)
            motion = command.motion
            obs[:, cols["command"]] = torch.cat([motion.joint_pos[f], motion.joint_vel[f]], -1)
            q_a, p_a = command.robot_anchor_quat_w, command.robot_anchor_pos_w
            p_ref = motion.body_pos_w[f, anchor] + env.scene.env_origins
            q_ref = motion.body_quat_w[f, anchor]
            obs[:, cols["motion_anchor_pos_b"]] = quat_apply_inverse(q_a, p_ref - p_a)
            rel = matrix_from_quat(quat_mul(quat_inv(q_a), q_ref))
            obs[:, cols["motion_anchor_ori_b"]] = rel[..., :2].reshape(rel.shape[0], -1)
        return obs

    return feed


def make_env(task: str, motion_npz: Path, seed: int, randomize: bool) -> Any:
    """One env of mjlab's play config of `task`, the clip from its start, on Warp's CPU."""
    from mjlab.envs import ManagerBasedRlEnv
    from mjlab.tasks.registry import load_env_cfg

    cfg = load_env_cfg(task, play=True)
    cfg.scene.num_envs = 1
    cfg.seed = seed
    cfg.auto_reset = False  # the terminal step's state is kept for its error
    command = cfg.commands["motion"]
    command.motion_file = str(motion_npz)
    command.sampling_mode = "start"
    command.debug_vis = False
    if not randomize:
        for name in RANDOMIZATION_EVENTS:
            cfg.events.pop(name, None)
        command.joint_position_range = (0.0, 0.0)
        command.pose_range, command.velocity_range = {}, {}
    return ManagerBasedRlEnv(cfg, device="cpu")


def randomization(env: Any) -> dict[str, Any]:
    """What the env randomises: its events and the start's joint position noise (rad)."""
    command = env.cfg.commands["motion"]
    return {
        "events": sorted(env.cfg.events),
        "joint_position_range": list(command.joint_position_range),
        "pose_range": dict(command.pose_range),
        "velocity_range": dict(command.velocity_range),
        "observation_noise": bool(env.cfg.observations["actor"].enable_corruption),
    }


def play(env: Any, session: Any, feed: Any = None) -> dict[str, Any]:
    """Run the policy from the clip's start to the first termination or the clip's end; with
    `feed` (`stated_observation`), the policy gets ``feed(actor observation)``.

    The clip ends before the step whose command update would wrap its frame index past the
    last frame (mjlab would then restart the clip). Each step's MPKPE pairs the reference
    frame the step is scored against (read before the step, as mjlab's evaluate script does)
    with the robot after the step: mean over the tracked bodies of
    ``|body_pos_w - robot_body_pos_w|``, world frame, m.

    Returns:
        ``{"steps", "clip_steps", "mpkpe_m", "ended_by"}``: ``ended_by`` is "clip_end" or the
        termination terms that fired (joined by "+").
    """
    import torch

    command = env.command_manager.get_term("motion")
    terminations = env.termination_manager
    takes_time_step = "time_step" in {i.name for i in session.get_inputs()}
    obs, _ = env.reset()
    total = int(command.motion.time_step_total)
    clip_steps = total - 1 - int(command.time_steps[0])  # reset has already advanced the frame
    errors: list[float] = []
    ended_by = "clip_end"
    while int(command.time_steps[0]) + 1 < total:
        reference = command.body_pos_w.clone()
        actor = obs["actor"] if feed is None else feed(obs["actor"])
        feeds = {"obs": actor.cpu().numpy().astype(np.float32)}
        if takes_time_step:
            feeds["time_step"] = command.time_steps.reshape(1, 1).cpu().numpy().astype(np.float32)
        actions = session.run(["actions"], feeds)[0]
        obs, _, terminated, truncated, _ = env.step(torch.from_numpy(actions))
        errors.append(float(torch.norm(reference - command.robot_body_pos_w, dim=-1).mean()))
        if bool(terminated.any() or truncated.any()):
            fired = [n for n in terminations.active_terms if bool(terminations.get_term(n).any())]
            ended_by = "+".join(fired)
            break
    return {
        "steps": len(errors),
        "clip_steps": clip_steps,
        "mpkpe_m": float(np.mean(errors)) if errors else float("nan"),
        "ended_by": ended_by,
    }


def run_seed(
    args: argparse.Namespace, task: str, motion_npz: Path, seed: int, policy: tuple[Any, dict]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One seed: build the env, check the policy (session, metadata) against it, play.

    Returns:
        (`play`'s result with ``seed``, ``seconds`` (playing) and ``build_s``; the env's
        ``clip_frames`` and ``randomization``).
    """
    session, meta = policy
    start = time.perf_counter()
    env = make_env(task, motion_npz, seed, not args.no_randomization)
    try:
        bridge = args.ignore_conventions or args.as_stated
        differences = check_policy(session, meta, env, str(args.policy), bridge)
        feed = stated_observation(env, differences) if args.as_stated else None
        facts = {
            "convention_differences": differences,
            "fed_as_stated": feed is not None,
            "clip_frames": int(env.command_manager.get_term("motion").motion.time_step_total),
            "randomization": randomization(env),
        }
        built = time.perf_counter()
        outcome = play(env, session, feed)
    finally:
        env.close()
    outcome.update(seed=seed, seconds=time.perf_counter() - built, build_s=built - start)
    return outcome, facts


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The whole check (see the module docstring); returns the JSON-able results."""
    import torch

    os.environ.setdefault("MJLAB_WARP_QUIET", "1")  # no line per Warp kernel loaded
    import mjlab.tasks  # noqa: F401  (registers the tasks)

    torch.set_num_threads(1)
    policy = read_policy(args.policy)
    task = args.task or task_for(policy[1])
    results: dict[str, Any] = {
        "mjlab_version": importlib.metadata.version("mjlab"),
        "task": task,
        "play_config": True,
        "device": "cpu",
        "policy": str(args.policy),
        "motion": str(args.motion),
        "csv_input_fps": args.input_fps,
        "csv_to_npz_s": None,
        "seeds": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        motion = args.motion
        if args.input_fps is not None:
            start = time.perf_counter()
            motion = args.npz_out or Path(tmp) / "motion.npz"
            csv_to_motion_npz(args.motion, args.input_fps, motion)
            results["csv_to_npz_s"] = seconds = time.perf_counter() - start
            log(f"csv_to_npz: {args.motion.name} at {args.input_fps:g} fps ({seconds:.0f} s)")
        for seed in args.seeds:
            outcome, facts = run_seed(args, task, motion, seed, policy)
            results.update(facts)
            results["seeds"].append(outcome)
            steps, seconds = outcome["steps"], outcome["seconds"]
            log(
                f"seed {seed}: {steps}/{outcome['clip_steps']} steps, MPKPE "
                f"{outcome['mpkpe_m'] * 1e3:.1f} mm, {outcome['ended_by']} "
                f"({seconds:.0f} s, {steps / max(seconds, 1e-9):.1f} steps/s)"
            )
    return results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy", type=Path, required=True, help="ONNX policy with mjlab metadata")
    p.add_argument("--motion", type=Path, required=True, help="G1 CSV (with --input-fps) or npz")
    p.add_argument("--input-fps", type=float, help="the CSV's frame rate, Hz")
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument(
        "--no-randomization",
        action="store_true",
        help="also switch off the play config's foot friction, CoM, encoder bias and RSI noise",
    )
    p.add_argument(
        "--ignore-conventions",
        action="store_true",
        help="play a policy that states other observation conventions on mjlab's observation",
    )
    p.add_argument(
        "--as-stated",
        action="store_true",
        help="feed a policy that states gym_motion's older conventions the observation they "
        "describe, computed from mjlab's state",
    )
    p.add_argument("--task", help=f"mjlab task id (default: {TASK} or its -No-State-Estimation)")
    p.add_argument("--npz-out", type=Path, help="keep the npz csv_to_npz made here")
    p.add_argument("--out", type=Path, help="JSON results file (default: stdout)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        with contextlib.redirect_stdout(sys.stderr):  # mjlab prints its tables to stdout
            results = run(args)
    except Refused as exc:
        log(f"error: {exc}")
        return 2
    text = json.dumps(results, indent=2)
    if args.out is None:
        print(text)
    else:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
