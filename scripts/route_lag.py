"""Where a policy's global error comes from: off the clip's route, or late along it.

Plays one clip from its first frame as ``gym-motion eval`` does (`gym_motion.evaluate.
anchor_trace`) and prints, per control step, the anchor's horizontal distance to the reference
anchor of the same step (``anchor_xy_m``), to the nearest point of the reference anchor's whole
route (``route_m``), and the lag of that nearest point (``lag_s``: positive when the robot is
where the reference was earlier), every ``--every`` steps, then their mean and maximum. A small
route distance with a large anchor error is a policy that walks the clip's path late; the
lag is only meaningful where the reference moves (on a clip played in place, every point of
the route is near). docs/measurements.md quotes it for the shipped jazz-walk policy::

    python scripts/route_lag.py --policy jazz --motion ../shared/motions/g1moves_jazzwalk_60fps.npz
    python scripts/route_lag.py --model runs/jazz_xy03/best --motion CLIP.npz
"""

from __future__ import annotations

import argparse

import numpy as np

from gym_motion.envs import TrackingEnvCfg
from gym_motion.evaluate import anchor_trace


def load(args: argparse.Namespace):
    """(policy, task, obs_mode) of the options."""
    if args.model is not None:
        from gym_motion.training.run_folder import RunFolder

        folder = RunFolder(args.model)
        return folder.policy(), folder.env_cfg(), folder.obs_mode()
    from gym_motion.deploy import SHIPPED_POLICIES, OnnxPolicy

    policy = OnnxPolicy(SHIPPED_POLICIES.get(args.policy, args.policy))
    return policy, TrackingEnvCfg(state_estimation=policy.state_estimation), "policy"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--model", help="a gym-motion train run folder (or its best/)")
    g.add_argument("--policy", help="a shipped policy name (jazz, tracker) or an ONNX file")
    p.add_argument("--motion", required=True, help="the clip npz")
    p.add_argument("--every", type=int, default=25, help="print every this many steps")
    args = p.parse_args()
    policy, cfg, obs_mode = load(args)
    t = anchor_trace(args.motion, policy, cfg, obs_mode=obs_mode)
    dt = cfg.sim.control_dt
    error = np.linalg.norm(t["robot"] - t["reference"], axis=1)
    to_route = np.linalg.norm(t["robot"][:, None] - t["route"][None], axis=2)
    nearest = to_route.argmin(axis=1)
    route = to_route.min(axis=1)
    lag = (np.arange(1, len(error) + 1) - nearest) * dt
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
