"""Where a policy's global error comes from: off the clip's route, or late along it.

Plays one clip from its first frame as ``gym-motion eval`` does (`gym_motion.evaluate.
anchor_trace`) and prints, per control step, the anchor's horizontal distance to the reference
anchor of the same step (``anchor_xy_m``), to the nearest point of the reference anchor's route
within ``--window`` seconds of that step (``route_m``), and the lag of that point (``lag_s``:
positive when the robot is where the reference was earlier), every ``--every`` steps, then
their mean and maximum. A small route distance with a large anchor error is a policy that
walks the clip's path late. The lag means little where the reference stands still or passes
the same place twice within the window. For example (docs/measurements.md)::

    python scripts/route_lag.py --policy jazz --motion ../shared/motions/g1moves_jazzwalk_60fps.npz
    python scripts/route_lag.py --model runs/jazz_xy03/best --motion CLIP.npz \
        --drop-termination anchor_horizontal
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np

from gym_motion.evaluate import anchor_trace


def load(args: argparse.Namespace):
    """(policy, task, obs_mode) of the options."""
    if args.model is not None:
        from gym_motion.training.run_folder import RunFolder

        folder = RunFolder(args.model)
        return folder.policy(), folder.env_cfg(), folder.obs_mode()
    from gym_motion.deploy import SHIPPED_POLICIES, OnnxPolicy

    policy = OnnxPolicy(SHIPPED_POLICIES.get(args.policy, args.policy))
    return policy, policy.env_cfg(), "policy"


def positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--model", help="a gym-motion train run folder (or its best/)")
    g.add_argument("--policy", help="a shipped policy name (jazz, tracker) or an ONNX file")
    p.add_argument("--motion", required=True, help="the clip npz")
    p.add_argument("--every", type=lambda t: int(positive(t)), default=25,
                   help="print every this many steps (default 25)")  # fmt: skip
    p.add_argument(
        "--window",
        type=positive,
        default=3.0,
        help="seconds either side of a step searched on the route (default 3)",
    )
    p.add_argument("--drop-termination", action="append", default=[], metavar="TERM",
                   help="play without this termination term of the task (repeatable)")  # fmt: skip
    args = p.parse_args()
    policy, cfg, obs_mode = load(args)
    unknown = set(args.drop_termination) - set(cfg.terminations)
    if unknown:
        p.error(f"--drop-termination: the task has no term {sorted(unknown)}; it has "
                f"{sorted(cfg.terminations)}")  # fmt: skip
    terms = {k: v for k, v in cfg.terminations.items() if k not in args.drop_termination}
    cfg = replace(cfg, terminations=terms)
    t = anchor_trace(args.motion, policy, cfg, obs_mode=obs_mode)
    dt = cfg.sim.control_dt
    error = np.linalg.norm(t["robot"] - t["reference"], axis=1)
    w = round(args.window / dt)
    route, lag = np.empty(len(error)), np.empty(len(error))
    for i, xy in enumerate(t["robot"]):
        step = i + 1  # step k plays frame k
        lo = max(0, step - w)
        near = np.linalg.norm(t["route"][lo : step + w + 1] - xy, axis=1)
        route[i], lag[i] = near.min(), (step - lo - near.argmin()) * dt
    print(f"{'step':>6} {'anchor_xy_m':>12} {'route_m':>9} {'lag_s':>7}")
    for i in range(args.every - 1, len(error), args.every):
        print(f"{i + 1:>6} {error[i]:>12.3f} {route[i]:>9.3f} {lag[i]:>7.2f}")
    worst = int(error.argmax())
    print(f"{len(error)} steps played of {len(t['route']) - 1}")
    print(f"anchor_xy_m mean {error.mean():.3f} max {error.max():.3f} (step {worst + 1}, "
          f"lag {lag[worst]:.2f} s)")  # fmt: skip
    print(f"route_m     mean {route.mean():.3f} max {route.max():.3f}")


if __name__ == "__main__":
    main()
