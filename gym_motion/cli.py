"""The ``gym-motion`` command line.

Each subcommand is a registrar function that adds its parser to the subparsers and sets
``func``, the function that runs it with the parsed arguments and returns an exit code. Add a
subcommand by writing a registrar and listing it in ``SUBCOMMANDS``::

    def _register_train(subparsers):
        p = subparsers.add_parser("train", help="...")
        p.set_defaults(func=_run_train)

    SUBCOMMANDS["train"] = _register_train

Example:
    gym-motion convert dance.csv -o dance.npz --input-fps 30 --output-fps 50
    gym-motion inspect dance.npz
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Sequence

import numpy as np

Registrar = Callable[[argparse._SubParsersAction], None]


# ---------------------------------------------------------------------------------------------
# convert


def _register_convert(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "convert",
        help="convert a retargeted motion CSV (root xyz, root quat xyzw, joints) to a clip npz",
        description="Resample a LAFAN1-style G1 CSV, differentiate it and fill body poses and "
        "velocities by MuJoCo forward kinematics.",
    )
    p.add_argument("csv", help="input CSV: no header, 36 columns")
    p.add_argument("-o", "--output", required=True, help="output .npz")
    p.add_argument("--input-fps", type=float, required=True, help="frame rate of the CSV rows")
    p.add_argument("--output-fps", type=float, default=50.0, help="frame rate of the clip")
    p.add_argument(
        "--frames",
        type=int,
        nargs=2,
        metavar=("FIRST", "STOP"),
        help="0-based input rows [FIRST, STOP) to convert (a slice)",
    )
    p.add_argument(
        "--quat-order", choices=("xyzw", "wxyz"), default="xyzw", help="root quaternion columns"
    )
    p.set_defaults(func=_run_convert)


def _run_convert(args: argparse.Namespace) -> int:
    from gym_motion.motion.convert import convert_csv

    clip = convert_csv(
        args.csv,
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


# ---------------------------------------------------------------------------------------------
# inspect


def _register_inspect(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("inspect", help="summarise and validate a motion clip npz")
    p.add_argument("clip", help="motion .npz")
    p.add_argument("--top", type=int, default=5, help="how many largest joint jumps to list")
    p.set_defaults(func=_run_inspect)


def _run_inspect(args: argparse.Namespace) -> int:
    from gym_motion.motion import _kinematics
    from gym_motion.motion.clip import load_clip

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clip = load_clip(args.clip)
    robot = _kinematics.default_robot()
    model = _kinematics.robot_model(robot)
    root_z = clip.body_pos_w[:, clip.body_index(robot.root_body), 2]
    print(f"clip:        {args.clip}")
    print(f"frames:      {clip.num_frames}")
    print(f"duration:    {clip.duration:.3f} s")
    print(f"fps:         {clip.fps:g} (source {clip.source_fps:g})")
    print(f"bodies:      {len(clip.body_names)} ({clip.body_names[0]} first)")
    print(f"root height: {root_z.min():.3f} .. {root_z.max():.3f} m")

    ranges = np.array([model.joint(n).range for n in clip.joint_names])
    limited = np.array([bool(model.joint(n).limited) for n in clip.joint_names])
    over = np.maximum(clip.joint_pos - ranges[:, 1], ranges[:, 0] - clip.joint_pos)
    over = np.where(limited, over, 0.0)
    violating = np.flatnonzero((over > 0).any(axis=0))
    print(f"joint-limit violations: {len(violating)} joint(s)")
    for j in violating:
        frames = np.flatnonzero(over[:, j] > 0)
        print(
            f"  {clip.joint_names[j]:28s} {len(frames):5d} frames (first {frames[0]}), "
            f"worst {over[:, j].max():.4f} rad at frame {int(np.argmax(over[:, j]))}"
        )
    jumps = np.abs(np.diff(clip.joint_pos, axis=0))  # (T-1, J)
    order = np.argsort(jumps, axis=None)[::-1][: args.top]
    print(f"largest joint jumps between consecutive frames (top {len(order)}):")
    for flat in order:
        t, j = np.unravel_index(flat, jumps.shape)
        print(f"  {clip.joint_names[j]:28s} {jumps[t, j]:.4f} rad, frame {t} -> {t + 1}")
    for w in caught:
        print(f"warning: {w.message}")
    return 0


def _register_train(subparsers: argparse._SubParsersAction) -> None:
    # Training is Stable-Baselines3's; registering it imports neither SB3 nor torch.
    from gym_motion.adapters.sb3.train import register_cli

    register_cli(subparsers)


def _register_eval(subparsers: argparse._SubParsersAction) -> None:
    from gym_motion.evaluate import register_cli

    register_cli(subparsers)


def _register_bench(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "bench",
        help="env-steps/s, per-phase ms and the physics-only limit, in one run",
        description="Step TrackingVecEnv with random actions; compare with bare batched physics.",
    )
    p.add_argument("--num-envs", type=int, nargs="+", default=[1024])
    p.add_argument("--steps", type=int, default=200, help="timed control steps per N")
    p.add_argument("--backend", default="mujoco", choices=("mujoco", "mjwarp"))
    p.add_argument("--threads", type=int, default=None, help="physics threads (mujoco)")
    p.add_argument("--device", default=None, help="Warp device (mjwarp), e.g. cuda:0 or cpu")
    p.add_argument("--json", default=None, help="also write the results to this JSON file")
    p.set_defaults(func=_run_bench)


def _run_bench(args: argparse.Namespace) -> int:
    from gym_motion.bench import run

    kwargs = {}
    if args.threads is not None:
        kwargs["num_threads"] = args.threads
    if args.device is not None:
        kwargs["device"] = args.device
    run(args.num_envs, args.steps, args.backend, args.json, kwargs)
    return 0


SUBCOMMANDS: dict[str, Registrar] = {
    "convert": _register_convert,
    "inspect": _register_inspect,
    "train": _register_train,
    "eval": _register_eval,
    "bench": _register_bench,
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand of ``SUBCOMMANDS``."""
    parser = argparse.ArgumentParser(prog="gym-motion", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in SUBCOMMANDS.values():
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``gym-motion`` command line; returns the exit code.

    User errors (bad values, motion format errors, missing files, a missing optional
    dependency) are printed as one line with exit code 2; set ``GYM_MOTION_DEBUG=1`` for the
    traceback.
    """
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ModuleNotFoundError as exc:
        if os.environ.get("GYM_MOTION_DEBUG") or exc.name not in _OPTIONAL:
            raise
        print(
            f"gym-motion {args.command}: error: {exc.name} is not installed; "
            f'install the training extras: pip install -e ".[sb3]"',
            file=sys.stderr,
        )
        return 2
    except (ValueError, FileNotFoundError, FileExistsError) as exc:  # MotionFormatError too
        if os.environ.get("GYM_MOTION_DEBUG"):
            raise
        print(f"gym-motion {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and the like
        return 0


# Packages of the [sb3] extra: their absence is a set-up problem, not a bug.
_OPTIONAL = ("stable_baselines3", "torch", "tensorboard", "matplotlib")


if __name__ == "__main__":
    sys.exit(main())
