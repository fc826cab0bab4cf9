"""``gym-motion bench``: env steps per second beside the physics-only limit, in one run."""

from __future__ import annotations

import argparse

from gym_motion.cli.numbers import cli_number

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "bench",
        help="env-steps/s, per-phase ms and the physics-only limit, in one run",
        description="Step TrackingVecEnv with random actions; compare with bare batched physics.",
    )
    p.add_argument("--num-envs", type=cli_number(int, 1), nargs="+", default=[1024])
    p.add_argument("--steps", type=cli_number(int, 1), default=200,
                   help="timed control steps per N")  # fmt: skip
    p.add_argument(
        "--backend",
        nargs="+",
        default=["mujoco"],
        choices=("mujoco", "mjwarp", "motrix"),
        help="one or more; several run in turn for each N, each in its own process",
    )
    p.add_argument("--threads", type=cli_number(int, 1), default=None,
                   help="physics threads (mujoco, motrix)")  # fmt: skip
    p.add_argument("--device", default=None, help="Warp device (mjwarp), e.g. cuda:0 or cpu")
    p.add_argument("--mdp", default=None, choices=("auto", "host", "device"),
                   help="where the MDP's per-step math runs (BackendCfg.mdp): host (Numba), "
                   "device (Warp kernels on the mjwarp device, or Warp's CPU device); default "
                   "auto: device for mjwarp on a GPU, else host")  # fmt: skip
    p.add_argument("--json", default=None, help="also write the results to this JSON file")
    p.set_defaults(func=_run_bench)


def _run_bench(args: argparse.Namespace) -> int:
    from gym_motion.bench import run

    kwargs = {}
    if args.threads is not None:
        kwargs["num_threads"] = args.threads
    if args.device is not None:
        kwargs["device"] = args.device
    if args.mdp is not None:
        kwargs["mdp"] = args.mdp
    run(args.num_envs, args.steps, args.backend, args.json, kwargs)
    return 0
