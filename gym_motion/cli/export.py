"""``gym-motion export``: a trained run's policy as ONNX with deploy metadata
(`gym_motion.training.export.export_run`).

    gym-motion export --model runs/dance -o dance.onnx
    gym-motion eval --onnx dance.onnx --motion dance.npz        # runs it back in the env
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gym_motion.atomic import check_output_path
from gym_motion.cli.numbers import cli_number

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds ``gym-motion export`` to the CLI's subparsers."""
    from gym_motion.training.export import MIN_OPSET, OPSET

    p = subparsers.add_parser(
        "export",
        help="export a trained run's policy as ONNX with deploy metadata",
        description="The deterministic actor of a gym-motion train run, observation "
        "normalisation folded in, as ONNX (input obs, output actions) with the deploy metadata "
        "of the run's config (joint names, gains, default pose, action scale, anchor, bodies, "
        "observation terms). Needs the [onnx] extra and the run's library's.",
    )
    p.add_argument(
        "--model", required=True, metavar="RUN_DIR", help="a gym-motion train run (sb3, rsl_rl)"
    )
    p.add_argument("-o", "--output", required=True, metavar="POLICY.onnx", help="ONNX file")
    p.add_argument("--opset", type=cli_number(int, MIN_OPSET), default=OPSET,
                   help="ONNX opset (default %(default)s)")  # fmt: skip
    p.add_argument(
        "--no-check", action="store_true", help="skip the onnxruntime-vs-torch comparison"
    )
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from gym_motion.training.export import export_run

    check_output_path(args.output, inputs=(Path(args.model) / "config.json",), make_parents=True)
    try:
        info = export_run(args.model, args.output, opset=args.opset, check=not args.no_check)
    except RuntimeError as exc:  # the ONNX check, or torch refusing the opset: the CLI's
        raise ValueError(str(exc)) from exc  # one-line user error (traceback with DEBUG)
    if info["max_abs_diff"] is not None:
        checked = f"onnxruntime matches torch to {info['max_abs_diff']:.1e}"
    else:
        checked = "not checked (--no-check)" if args.no_check else "not checked (no onnxruntime)"
    print(
        f"wrote {info['path']} ({info['library']} run): obs ({info['obs_dim']}) -> actions "
        f"({info['num_actions']}), {checked}"
    )
    print(f"observation terms: {info['metadata']['observation_names']}")
    return 0
