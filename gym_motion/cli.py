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

from gym_motion import config_values as cv

Registrar = Callable[[argparse._SubParsersAction], None]


# ---------------------------------------------------------------------------------------------
# convert


def _register_convert(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "convert",
        help="convert a retargeted motion (G1 CSV, GMR pickle, npz) to a clip npz",
        description="Resample a LAFAN1-style G1 CSV (root xyz, root quat xyzw, 29 joints) or a "
        "GMR pickle (or an npz), differentiate it, fill body poses and velocities by MuJoCo "
        "forward kinematics, and warn about soft-limit violations, self and floor penetration "
        "and joint jumps. The format is read from the file's content.",
    )
    p.add_argument("input", help="a G1 CSV (no header, 36 columns), a GMR .pkl or a clip .npz")
    p.add_argument("-o", "--output", required=True, help="output .npz")
    p.add_argument(
        "--input-fps",
        type=cv.cli_number(float, 0.0, low_open=True),
        default=None,
        help="frame rate of a CSV's rows (required for a CSV; a pickle or npz states its own)",
    )
    p.add_argument("--output-fps", type=cv.cli_number(float, 0.0, low_open=True), default=50.0,
                   help="frame rate of the clip")  # fmt: skip
    p.add_argument(
        "--frames",
        type=cv.cli_number(int, 0),
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


# ---------------------------------------------------------------------------------------------
# inspect


def _register_inspect(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "inspect",
        help="validate motion clips and report what a perfect tracker is penalised for",
        description="Per clip: soft and hard joint-limit violations per joint, self-penetration "
        "per body pair and floor penetration per body in the reference pose (frames and "
        "depth), and joint jumps.",
    )
    p.add_argument("clip", nargs="+", help="motion .npz or GMR .pkl file(s)")
    p.add_argument("--top", type=cv.cli_number(int, 0), default=5,
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


def _register_train(subparsers: argparse._SubParsersAction) -> None:
    # Training is Stable-Baselines3's; registering it imports neither SB3 nor torch.
    from gym_motion.adapters.sb3.train import register_cli

    register_cli(subparsers)


def _register_eval(subparsers: argparse._SubParsersAction) -> None:
    from gym_motion.evaluate import register_cli

    register_cli(subparsers)


def _register_export(subparsers: argparse._SubParsersAction) -> None:
    # registering it imports no RL library, torch nor onnx
    from gym_motion.deploy.export import register_cli

    register_cli(subparsers)


def _register_render(subparsers: argparse._SubParsersAction) -> None:
    from gym_motion.video import register_cli

    register_cli(subparsers)


def _register_bench(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "bench",
        help="env-steps/s, per-phase ms and the physics-only limit, in one run",
        description="Step TrackingVecEnv with random actions; compare with bare batched physics.",
    )
    p.add_argument("--num-envs", type=cv.cli_number(int, 1), nargs="+", default=[1024])
    p.add_argument("--steps", type=cv.cli_number(int, 1), default=200,
                   help="timed control steps per N")  # fmt: skip
    p.add_argument(
        "--backend",
        nargs="+",
        default=["mujoco"],
        choices=("mujoco", "mjwarp", "motrix"),
        help="one or more; several run in turn for each N, each in its own process",
    )
    p.add_argument("--threads", type=cv.cli_number(int, 1), default=None,
                   help="physics threads (mujoco, motrix)")  # fmt: skip
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
    "export": _register_export,
    "render": _register_render,
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
    # MuJoCo picks its OpenGL platform from MUJOCO_GL once, when first imported (not yet
    # here): without a display, offscreen rendering (render, train's video) needs EGL, which
    # also works in software without a GPU. A value set by the user wins.
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        os.environ.setdefault("MUJOCO_GL", "egl")
    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            if not os.environ.get("GYM_MOTION_DEBUG"):
                warnings.showwarning = _print_warning
            return int(args.func(args) or 0)
    except ModuleNotFoundError as exc:
        if os.environ.get("GYM_MOTION_DEBUG") or exc.name not in _OPTIONAL:
            raise
        extra = _OPTIONAL[exc.name]
        what = {"sb3": "training", "rsl_rl": "rsl_rl training", "onnx": "ONNX",
                "render": "video"}[extra]  # fmt: skip
        print(
            f"gym-motion {args.command}: error: {exc.name} is not installed; "
            f'install the {what} extras: pip install -e ".[{extra}]"',
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


def _print_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Show a warning as ``warning: <message>`` on stderr: the message only, without the
    file, line and source text of the code that issued it (``GYM_MOTION_DEBUG=1`` keeps
    Python's format)."""
    print(f"warning: {message}", file=sys.stderr if file is None else file)


# Packages of the optional extras -> the extra: their absence is a set-up problem, not a bug.
_OPTIONAL = dict.fromkeys(("stable_baselines3", "torch", "tensorboard", "matplotlib"), "sb3")
_OPTIONAL.update(dict.fromkeys(("onnx", "onnxruntime", "yaml"), "onnx"))
_OPTIONAL.update(dict.fromkeys(("rsl_rl", "tensordict"), "rsl_rl"))
_OPTIONAL["imageio_ffmpeg"] = "render"


if __name__ == "__main__":
    sys.exit(main())
