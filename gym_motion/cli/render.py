"""``gym-motion render``: an MP4 of a policy tracking a clip beside its reference
(`gym_motion.video.record_video`).

    gym-motion render --model runs/NAME --motion dance.npz -o dance.mp4
    gym-motion render --policy zero --motion dance.npz -o zero.mp4 --seconds 4
    gym-motion render --onnx B_Fence1.onnx --motion B_Fence1.npz --frame-per-step -o fence.mp4
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gym_motion.atomic import check_output_path
from gym_motion.cli.evaluate import add_policy_args, policy_source
from gym_motion.cli.numbers import cli_number

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds ``gym-motion render`` to the CLI's subparsers."""
    p = subparsers.add_parser(
        "render",
        help="write an MP4 of a policy (or zero action) tracking a clip, beside its reference",
        description="Play a clip from its start (no randomisation, no noise) with the "
        "deterministic policy and write an MP4: the robot, and its reference pose as a "
        "translucent ghost, from a camera that follows the robot.",
    )
    add_policy_args(p)
    p.add_argument(
        "--motion", default=None, metavar="CLIP",
        help="clip npz (default: the run's first training clip, else the embedded default)",
    )  # fmt: skip
    p.add_argument("-o", "--output", required=True, help="output .mp4")
    positive = cli_number(float, 0.0, low_open=True)
    p.add_argument("--seconds", type=positive, default=None, help="length (default: whole clip)")
    p.add_argument("--fps", type=positive, default=25.0, help="frame rate, divides 50 (default 25)")
    p.add_argument("--width", type=cli_number(int, 2), default=640)
    p.add_argument("--height", type=cli_number(int, 2), default=480)
    p.add_argument(
        "--hold",
        type=cli_number(float, 0.0),
        default=1.0,
        help="seconds the frame of a termination is held",
    )
    p.add_argument("--meshes", default="auto", metavar="auto|off|menagerie|MJCF",
                   help="draw the robot's visual meshes (auto: the shipped set, see "
                   "gym_motion.robots.meshes), its collision primitives (off), the full "
                   "MuJoCo Menagerie set (menagerie, the meshes extra), or the meshes of this "
                   "MJCF")  # fmt: skip
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from gym_motion.render import RenderCfg
    from gym_motion.video import check_mp4_path, record_video

    check_mp4_path(args.output)
    source = policy_source(args, "render")
    check_output_path(args.output)
    folder, policy, cfg, obs_mode = source.folder, source.policy, source.cfg, "policy"
    if folder is not None:
        if folder.config():
            cfg = cfg or folder.env_cfg()
            obs_mode = folder.obs_mode()
        policy = folder.policy() if policy == "model" else None
    elif policy == "zero":
        policy = None
    clip = args.motion or next(iter(folder.motions() if folder else []), None)
    if clip is None:
        from gym_motion.motion import DEFAULT_MOTION_PATH

        clip = DEFAULT_MOTION_PATH
    result = record_video(
        args.output,
        policy,
        clip,
        cfg,
        seconds=args.seconds,
        fps=args.fps,
        hold_s=args.hold,
        render_cfg=RenderCfg(width=args.width, height=args.height, meshes=args.meshes),
        obs_mode=obs_mode,
        seed=args.seed,
        playback="frame_per_step" if args.frame_per_step else "real_time",
        progress=not args.no_progress,
    )
    fell = result["terminated_step"]
    print(
        f"wrote {result['path']}: {result['frames']} frames at {result['fps']:g} fps "
        f"({result['width']}x{result['height']}), {result['steps']} steps of "
        f"{Path(result['clip']).name}"
        + (f", terminated at step {fell}" if fell is not None else ", no termination")
    )
    return 0
