"""gym-motion: motion clips, training, evaluation, ONNX export, videos and benchmarks.

The ``gym-motion`` command line; every flag of every subcommand is defined in this package.
Each subcommand's module (`motion`, `train`, `evaluate`, `export`, `render`, `play`,
`bench`) has a
registrar that adds its parser to the subparsers and sets ``func``, the function that runs it
with the parsed arguments: it builds the typed configs and calls the library functions, and
returns an exit code. Add a subcommand by writing a registrar and listing it in
``SUBCOMMANDS``::

    def register(subparsers):
        p = subparsers.add_parser("train", help="...")
        p.set_defaults(func=_run)

The modules import no RL library, torch, MuJoCo or onnx at import time, so the command line
starts fast and without the optional extras.

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

from gym_motion.cli import bench, evaluate, export, motion, play, render, train

Registrar = Callable[[argparse._SubParsersAction], None]


SUBCOMMANDS: dict[str, Registrar] = {
    "convert": motion.register_convert,
    "inspect": motion.register_inspect,
    "train": train.register,
    "eval": evaluate.register,
    "export": export.register,
    "render": render.register,
    "play": play.register,
    "bench": bench.register,
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand of ``SUBCOMMANDS``."""
    parser = argparse.ArgumentParser(prog="gym-motion", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--import", action="append", default=[], metavar="MODULE", dest="imports",
        help="import MODULE first (repeatable): the module of your own terms, which a run's "
        "config.json names (e.g. gym-motion --import my_terms eval --model RUN)",
    )  # fmt: skip
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
    argv = sys.argv[1:] if argv is None else list(argv)
    # MuJoCo picks its OpenGL platform from MUJOCO_GL once, when first imported (the parser's
    # help texts import it): only the commands that render offscreen choose one first
    # (gym_motion.gl); the others never load OpenGL
    skip = {i + 1 for i, a in enumerate(argv) if a == "--import"}  # its MODULE argument
    command = next((a for i, a in enumerate(argv) if not a.startswith("-") and i not in skip),
                   None)  # fmt: skip
    gl_error = None
    if command == "render" or (command == "train" and "--no-video" not in argv):
        from gym_motion.gl import GLUnavailable, choose_for_rendering

        try:
            choose_for_rendering()
        except GLUnavailable as exc:
            gl_error = str(exc)
    args = build_parser().parse_args(argv)
    if gl_error and args.command == "render":
        print(f"gym-motion render: error: {gl_error}", file=sys.stderr)
        return 2
    if gl_error and args.command == "train":
        print(f"warning: {gl_error}; training without final_eval.mp4", file=sys.stderr)
        args.no_video = True
    try:
        for module in args.imports:
            _import_user_module(module)
        with warnings.catch_warnings():
            if not os.environ.get("GYM_MOTION_DEBUG"):
                warnings.showwarning = _print_warning
            return int(args.func(args) or 0)
    except ModuleNotFoundError as exc:
        if os.environ.get("GYM_MOTION_DEBUG") or exc.name not in _OPTIONAL:
            raise
        extra = _OPTIONAL[exc.name]
        what = {"sb3": "training", "rsl_rl": "rsl_rl training", "onnx": "ONNX",
                "render": "video", "viewer": "viewer"}[extra]  # fmt: skip
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


def _import_user_module(module: str) -> None:
    """Import `module` (``--import``).

    Raises:
        ValueError: it cannot be imported (the message names it and why).
    """
    import importlib

    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ValueError(f"--import {module}: {exc} (is its folder on PYTHONPATH?)") from None


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
_OPTIONAL["viser"] = "viewer"


if __name__ == "__main__":
    sys.exit(main())
