"""``gym-motion eval``: a trained run, an ONNX policy or the zero action on motion clips
(`gym_motion.evaluate`), and the policy options ``gym-motion render`` shares.

    gym-motion eval --model runs/NAME --motion dance.npz walk.npz --episodes 4 --json out.json
    gym-motion eval --policy zero --motion dance.npz
    gym-motion eval --onnx policy.onnx --motion dance.npz [--policy-meta meta.yaml]
    gym-motion eval --onnx B_Fence1.onnx --motion B_Fence1.npz --frame-per-step

A run (``--model RUN``) plays in the task it trained on, its policy loaded by the library that
trained it (`gym_motion.training.RunFolder`); ``--onnx`` needs onnxruntime (the ``[onnx]``
extra) and neither SB3 nor torch. The JSON goes where ``--json`` says; without it, ``--model
RUN`` writes ``RUN/eval_<policy>.json`` and other evaluations write no file.
"""

from __future__ import annotations

import argparse
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_motion.atomic import check_output_path, write_json
from gym_motion.backends import BACKENDS
from gym_motion.cli.numbers import cli_number

__all__ = ["PolicySource", "add_policy_args", "policy_source", "register"]

# the files of a run folder that eval reads (its --json may not replace them)
_RUN_INPUTS = ("config.json", "summary.json", "model.zip", "vecnormalize.pkl", "model.pt")


def register(subparsers: argparse._SubParsersAction) -> None:
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
    p.add_argument("--episodes", type=cli_number(int, 1), default=1,
                   help="episodes per clip (in parallel)")  # fmt: skip
    p.add_argument("--max-seconds", type=cli_number(float, 0.0, low_open=True), default=None,
                   help="cap on an episode, s")  # fmt: skip
    p.add_argument("--randomization", default="none", choices=("none", "play"),
                   help="none: nothing random; play: what mjlab's tracking play config keeps "
                   "random (joint noise at the start, torso centre of mass, foot friction, "
                   "encoder bias), each episode its own draw")  # fmt: skip
    p.add_argument(
        "--json",
        default=None,
        help="write the results to this JSON file (default with --model: "
        "RUN_DIR/eval_<policy>.json, or eval_<policy>_<clip names>_<path digest>.json with "
        "--motion; else no file)",
    )
    p.set_defaults(func=_run)


def add_policy_args(p: argparse.ArgumentParser) -> None:
    """The policy and env options of ``gym-motion eval`` and ``render``: --model, --onnx,
    --policy-meta, --policy, --env-id, --frame-per-step, --backend, --mdp, --seed (read by
    `policy_source`)."""
    g = p.add_argument_group("policy")
    g.add_argument("--model", default=None, metavar="RUN_DIR", help="a gym-motion train run")
    g.add_argument(
        "--onnx", default=None, metavar="POLICY.onnx",
        help="an ONNX tracking policy from any trainer, mapped onto the env by its deploy "
        "metadata (joint order, default pose, action scale, observation terms)",
    )  # fmt: skip
    g.add_argument(
        "--policy-meta", default=None, metavar="META.yaml",
        help="deploy metadata for --onnx as YAML/JSON (the ONNX metadata keys); its keys "
        "override the file's",
    )  # fmt: skip
    g.add_argument(
        "--policy", choices=("model", "zero", *_shipped()), default=None,
        help="model (with --model), zero (the zero action), tracker (the ONNX policy shipped "
        "for the embedded default motion) or jazz (the one shipped for the G1 Moves jazz walk: "
        "with --motion g1moves_jazzwalk_60fps.npz); gym_motion.deploy.SHIPPED_POLICIES",
    )  # fmt: skip
    e = p.add_argument_group("env")
    e.add_argument(
        "--env-id", default=None, choices=_env_ids(),
        help="the env whose policy observation the policy reads (160 values, or 154 for "
        "NoStateEst); default: from the run's config or the ONNX policy's observation terms",
    )  # fmt: skip
    e.add_argument(
        "--frame-per-step", action="store_true",
        help="play one clip frame per control step whatever its fps label (as mjlab trains); "
        "default: real time",
    )  # fmt: skip
    e.add_argument("--backend", default=None, choices=BACKENDS,
                   help="physics backend (default: the run's, else mujoco)")  # fmt: skip
    e.add_argument("--mdp", default=None, choices=("auto", "host", "device"),
                   help="where the MDP's per-step math runs (BackendCfg.mdp; default: the "
                   "run's, else auto: device for mjwarp on a GPU, else host)")  # fmt: skip
    e.add_argument("--seed", type=int, default=0)


def _shipped() -> list[str]:
    from gym_motion.deploy import SHIPPED_POLICIES

    return list(SHIPPED_POLICIES)


def _env_ids() -> list[str]:
    from gym_motion import ENV_IDS

    return list(ENV_IDS)


@dataclass
class PolicySource:
    """What the policy options chose.

    Attributes:
        policy: "model" or "zero" (with `folder`), an `OnnxPolicy`, or None (zero action).
        cfg: the task to play, or None: the run's own (with `folder`).
        folder: the run folder (`RunFolder`) of ``--model``, or None.
        name: what the results call the policy.
    """

    policy: Any
    cfg: Any
    folder: Any
    name: str


def policy_source(args: argparse.Namespace, command: str) -> PolicySource:
    """The policy, task and run folder of the options of `add_policy_args` (``gym-motion
    <command>``); ``--policy tracker`` / ``jazz`` become ``--onnx`` of that shipped file
    (`gym_motion.deploy.SHIPPED_POLICIES`). An ONNX
    policy's mapping onto the env is checked (and printed by eval) before any env is built.

    Raises:
        SystemExit: contradictory or missing options (a shipped policy or --onnx with --model
            or --policy; --policy-meta without --onnx; no policy; an ONNX policy whose
            metadata names the clips it tracks (motion_files) without --motion), in one line
            naming them.
        ValueError: an ONNX policy that cannot run in the env.
    """
    from gym_motion.deploy import SHIPPED_POLICIES
    from gym_motion.envs.config import TrackingEnvCfg

    if args.policy in SHIPPED_POLICIES:
        if args.onnx is not None or args.model is not None:
            raise SystemExit(f"gym-motion {command}: --policy {args.policy} runs a shipped ONNX "
                             "policy; drop --model/--onnx")  # fmt: skip
        args.onnx, args.policy = str(SHIPPED_POLICIES[args.policy]), None
    if args.onnx is not None and (args.model is not None or args.policy is not None):
        raise SystemExit(
            f"gym-motion {command}: --onnx runs the ONNX policy; drop --model/--policy"
        )
    if args.policy_meta is not None and args.onnx is None:
        raise SystemExit(f"gym-motion {command}: --policy-meta goes with --onnx")
    state_estimation = None
    if args.env_id is not None:
        from gym_motion import ENV_IDS

        state_estimation = bool(ENV_IDS[args.env_id][2].get("state_estimation", True))
    folder = None
    if args.model is not None:
        from gym_motion.training.run_folder import RunFolder

        folder = RunFolder(args.model)
    if args.onnx is not None:
        from gym_motion.deploy import OnnxPolicy

        policy = OnnxPolicy(args.onnx, args.policy_meta)
        clips = policy.meta.motion_files
        if clips and not getattr(args, "motion", None):
            raise SystemExit(
                f"gym-motion {command}: {args.onnx} tracks {', '.join(clips)} (its deploy "
                "metadata's motion_files), not the embedded default motion; pass --motion "
                "with that clip"
            )
        cfg = policy.env_cfg(state_estimation)
        env_id = args.env_id or (
            "GymMotion/G1-Tracking-" + ("v0" if cfg.state_estimation else "NoStateEst-v0")
        ) + (" with anchor_vel" if cfg.anchor_velocity_obs else "")
        mapping = policy.mapping(cfg, env_id)  # checked before any env is built
        if command == "eval":
            print(f"{args.onnx} in {env_id}: {mapping.describe()}")
        return PolicySource(policy, _with_backend(cfg, args), None, policy.policy_name)
    name = args.policy or "model"
    if name == "model" and folder is None:
        raise SystemExit(
            f"gym-motion {command}: --model RUN_DIR or --onnx POLICY.onnx is required unless "
            "--policy zero or --policy tracker"
        )
    cfg = None
    if folder is not None and folder.config():
        cfg = folder.env_cfg()
        if state_estimation is not None:
            cfg = cfg.updated(state_estimation=state_estimation)
    elif state_estimation is not None or args.backend is not None or args.mdp is not None:
        cfg = TrackingEnvCfg().updated(state_estimation=state_estimation is not False)
    return PolicySource(name, _with_backend(cfg, args), folder, name)


def _with_backend(cfg, args: argparse.Namespace):
    if cfg is not None and args.backend is not None:
        cfg = cfg.updated(backend=args.backend)
    if cfg is not None and args.mdp is not None:
        cfg = cfg.updated(backend_kwargs={"mdp": args.mdp})
    return cfg


def _run(args: argparse.Namespace) -> int:
    if args.json is not None:  # not onto what this command reads
        run = [Path(args.model) / n for n in _RUN_INPUTS] if args.model else []
        reads = (*run, *(args.motion or ()), *(p for p in (args.onnx, args.policy_meta) if p))
        check_output_path(args.json, inputs=tuple(reads), make_parents=True)
    source = policy_source(args, "eval")
    settings = {
        "episodes": args.episodes,
        "max_seconds": args.max_seconds,
        "seed": args.seed,
        "playback": "frame_per_step" if args.frame_per_step else "real_time",
        "randomization": args.randomization,
    }
    if source.folder is not None:
        result = source.folder.evaluate(args.motion, policy=source.policy, cfg=source.cfg,
                                        **settings)  # fmt: skip
    else:
        from gym_motion.evaluate import evaluate_policy_on_clips
        from gym_motion.motion import DEFAULT_MOTION_PATH

        policy = None if source.policy == "zero" else source.policy
        result = evaluate_policy_on_clips(args.motion or [DEFAULT_MOTION_PATH], policy,
                                          source.cfg, policy_name=source.name,
                                          **settings)  # fmt: skip
        result["run"] = None
    if args.onnx is not None:
        result["onnx"] = str(args.onnx)
    _print_result(result)
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


def _print_result(result: dict[str, Any]) -> None:
    from gym_motion.evaluate import ending, format_table

    print(format_table(result))
    for clip, r in result["clips"].items():
        ends = sorted({ending(e) for e in r["terminations"]})
        print(f"{Path(clip).name}: {r['episodes']} episode(s) ended: {'; '.join(ends)}")
