"""Where a policy's global error comes from: off the clip's route, or late along it.

Plays one clip from its first frame (`gym_motion.envs.eval_cfg`, as ``gym-motion eval`` does)
and prints, per control step, the anchor's horizontal distance to the reference anchor of the
same step (``anchor_xy_m``), to the nearest point of the reference anchor's whole route
(``route_m``), and the lag of that nearest point (``lag_s``: positive when the robot is where
the reference was earlier), every ``--every`` steps, then their mean and maximum. A small
route distance with a large anchor error is a policy that walks the clip's path late; the
lag is only meaningful where the reference moves (on a clip played in place, every point of
the route is near). docs/measurements.md quotes it for the shipped jazz-walk policy::

    python scripts/route_lag.py --policy jazz --motion ../shared/motions/g1moves_jazzwalk_60fps.npz
    python scripts/route_lag.py --model runs/jazz_xy03/best --motion CLIP.npz
"""

from __future__ import annotations

import argparse

import numpy as np

from gym_motion.envs import TrackingEnvCfg, TrackingVecEnv, eval_cfg
from gym_motion.motion.library import MotionLibrary
from gym_motion.policy import bind_policy


def load(args: argparse.Namespace):
    """(policy, task, obs_mode) of the options."""
    if args.model is not None:
        from gym_motion.training.run_folder import RunFolder

        folder = RunFolder(args.model)
        return folder.policy(), folder.env_cfg(), folder.obs_mode()
    from gym_motion.deploy import SHIPPED_POLICIES, OnnxPolicy

    policy = OnnxPolicy(SHIPPED_POLICIES.get(args.policy, args.policy))
    return policy, TrackingEnvCfg(state_estimation=policy.state_estimation), "policy"


def trace(policy, cfg: TrackingEnvCfg, obs_mode: str, clip: str) -> dict[str, np.ndarray]:
    """Per-step horizontal anchor positions of robot and reference (m, world frame), and the
    reference anchor's route at every control frame of the clip (F, 2)."""
    cfg = eval_cfg(cfg)
    library = MotionLibrary.from_paths(clip, fps=1.0 / cfg.sim.control_dt, robot=cfg.robot)
    horizon = int(library.lengths[0]) - 1
    env = TrackingVecEnv(1, motion=library, cfg=cfg, obs_mode=obs_mode,
                         max_episode_steps=horizon)  # fmt: skip
    try:
        act = bind_policy(policy, env)
        s, a = env.state, env.state.anchor
        obs, _ = env.reset(seed=0)
        robot, ref = [], []
        for _ in range(horizon):
            obs, _, terminated, truncated, _ = env.step(act(obs))
            robot.append(s.robot.pos_w[0, a, :2].astype(np.float64))  # NEXT_STEP autoreset:
            ref.append(s.ref.pos_w[0, a, :2].astype(np.float64))  # still the episode's last
            if terminated[0] or truncated[0]:
                break
        src = library.body_names.index(s.body_names[a])
        route = library.body_pos_w[: horizon + 1, src, :2].astype(np.float64)
    finally:
        env.close()
    ref = np.array(ref)
    route += ref[0] - route[1]  # the env's origin: step 1 plays frame 1
    if not np.allclose(ref, route[1 : len(ref) + 1], atol=1e-4):
        raise RuntimeError("the reference the env played is not the clip's route")
    return {"robot": np.array(robot), "ref": ref, "route": route}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--model", help="a gym-motion train run folder (or its best/)")
    g.add_argument("--policy", help="a shipped policy name (jazz, tracker) or an ONNX file")
    p.add_argument("--motion", required=True, help="the clip npz")
    p.add_argument("--every", type=int, default=25, help="print every this many steps")
    args = p.parse_args()
    policy, cfg, obs_mode = load(args)
    t = trace(policy, cfg, obs_mode, args.motion)
    dt = cfg.sim.control_dt
    error = np.linalg.norm(t["robot"] - t["ref"], axis=1)
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
