"""``gym-motion convert`` and ``gym-motion inspect``: motion clips in, checked clips out."""

from __future__ import annotations

import argparse
import warnings

from gym_motion.cli.numbers import cli_number

__all__ = ["register_convert", "register_inspect"]


def register_convert(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "convert",
        help="convert a retargeted motion (G1 CSV, GMR pickle, npz) to a clip npz",
        description="Resample a LAFAN1-style G1 CSV (root xyz, root quat xyzw, 29 joints) or a "
        "GMR pickle (or an npz), differentiate it, fill body poses and velocities by MuJoCo "
        "forward kinematics, and warn about soft-limit violations, self and floor penetration, "
        "feet off the floor, a sliding stance foot and joint jumps. The format is read from the "
        "file's content.",
    )
    p.add_argument("input", help="a G1 CSV (no header, 36 columns), a GMR .pkl or a clip .npz")
    p.add_argument("-o", "--output", required=True, help="output .npz")
    p.add_argument(
        "--input-fps",
        type=cli_number(float, 0.0, low_open=True),
        default=None,
        help="frame rate of a CSV's rows (required for a CSV; a pickle or npz states its own)",
    )
    p.add_argument("--output-fps", type=cli_number(float, 0.0, low_open=True), default=50.0,
                   help="frame rate of the clip")  # fmt: skip
    p.add_argument(
        "--frames",
        type=cli_number(int, 0),
        nargs=2,
        metavar=("FIRST", "STOP"),
        help="0-based input rows [FIRST, STOP) to convert (a slice)",
    )
    p.add_argument(
        "--quat-order",
        choices=("xyzw", "wxyz"),
        default="xyzw",
        help="root quaternion order of a CSV or pickle",
    )
    p.set_defaults(func=_run_convert)


def _run_convert(args: argparse.Namespace) -> int:
    from gym_motion.motion.convert import convert_motion

    clip = convert_motion(
        args.input,
        args.output,
        input_fps=args.input_fps,
        output_fps=args.output_fps,
        frame_range=tuple(args.frames) if args.frames else None,
        quat_order=args.quat_order,
    )
    print(
        f"wrote {args.output}: {clip.num_frames} frames at {clip.fps:g} fps "
        f"({clip.duration:.2f} s, from {clip.source_fps:g} fps)"
    )
    return 0


def register_inspect(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "inspect",
        help="validate motion clips and report what a perfect tracker is penalised for",
        description="Per clip: soft and hard joint-limit violations per joint, self-penetration "
        "per body pair and floor penetration per body in the reference pose (frames and "
        "depth), frames with both feet above the floor, stance-foot sliding per foot, and joint "
        "jumps.",
    )
    p.add_argument("clip", nargs="+", help="motion .npz or GMR .pkl file(s)")
    p.add_argument("--top", type=cli_number(int, 0), default=5,
                   help="how many largest joint jumps to list")  # fmt: skip
    p.set_defaults(func=_run_inspect)


def _run_inspect(args: argparse.Namespace) -> int:
    from gym_motion.motion.checks import check_motion
    from gym_motion.motion.clip import load_clip

    for n, path in enumerate(args.clip):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            clip = load_clip(path)
        if n:
            print()
        print(f"clip:        {path}")
        for line in check_motion(clip, top_jumps=args.top).lines():
            print(line)
        for w in caught:
            print(f"warning: {w.message}")
    return 0
