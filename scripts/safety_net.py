"""Refactoring safety net: a fixed rollout whose observations and rewards must not change.

``eval_cfg()`` and, to cover pushes, randomisation and noise, the default training config; the
shared gangnam 50 fps clip, N = 8, seed 0 and a fixed random-action stream
(``np.random.default_rng(1234)``, normal * 0.5) for 300 steps, NEXT_STEP autoreset, dict
observations (policy and critic groups). ``--save FILE`` writes the trajectory; ``--compare
FILE`` prints the largest absolute differences against it and exits non-zero above 1e-6.

    python scripts/safety_net.py --save /tmp/before.npz     # before a change
    python scripts/safety_net.py --compare /tmp/before.npz  # after it

``--mdp device`` runs the eval rollout with the MDP's per-step math on Warp's CPU device
(`gym_motion.envs.device_mdp`) and compares the ``eval/`` keys only (the training config's
observation noise is drawn on the device, not from the host stream); against a host
trajectory it agrees to float32 rounding, not bit for bit: compare it with ``--tol 1e-4``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

from gym_motion.envs import TrackingEnvCfg, TrackingVecEnv, eval_cfg

SHARED = Path(__file__).resolve().parents[2] / "shared"
CLIP = SHARED / "motions" / "unitree_gangnam_style_50fps.npz"


def rollout(cfg, steps: int = 300, num_envs: int = 8) -> dict[str, np.ndarray]:
    env = TrackingVecEnv(num_envs, motion=CLIP, cfg=cfg, obs_mode="dict", seed=0)
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(1234)
    out: dict[str, list] = {"policy": [obs["policy"]], "critic": [obs["critic"]], "reward": []}
    out["terminated"], out["truncated"] = [], []
    for _ in range(steps):
        a = (rng.standard_normal((num_envs, 29)) * 0.5).astype(np.float32)
        obs, r, term, trunc, info = env.step(a)
        out["policy"].append(obs["policy"])
        out["critic"].append(obs["critic"])
        out["reward"].append(r)
        out["terminated"].append(term)
        out["truncated"].append(trunc)
        for k, v in info.items():
            if k.startswith("reward/"):
                out.setdefault(k, []).append(v)
    env.close()
    return {k: np.stack(v) for k, v in out.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--save", type=Path)
    g.add_argument("--compare", type=Path)
    p.add_argument("--mdp", choices=("host", "device"), default="host")
    p.add_argument("--tol", type=float, default=1e-6, help="largest |diff| that passes")
    args = p.parse_args()

    def task(cfg: TrackingEnvCfg) -> TrackingEnvCfg:
        return dataclasses.replace(cfg, backend=dataclasses.replace(cfg.backend, mdp=args.mdp))

    traj = {f"eval/{k}": v for k, v in rollout(task(eval_cfg())).items()}
    if args.mdp == "host":
        traj |= {f"train/{k}": v for k, v in rollout(task(TrackingEnvCfg())).items()}
    if args.save:
        np.savez(args.save, **traj)
        print(f"saved {args.save}: " + ", ".join(f"{k} {v.shape}" for k, v in traj.items()))
        return
    ref = dict(np.load(args.compare))
    worst = 0.0
    for k, v in ref.items():
        if args.mdp == "device" and k.startswith("train/"):
            continue
        got = traj[k]
        d = float(np.max(np.abs(got.astype(np.float64) - v.astype(np.float64))))
        worst = max(worst, d)
        print(f"{k:28s} max |diff| {d:.3g}")
    print(f"worst {worst:.3g} ({'OK' if worst <= args.tol else 'CHANGED'})")
    sys.exit(0 if worst <= args.tol else 1)


if __name__ == "__main__":
    main()
