"""How long a run's policy lasts in its own training task, and what ends its episodes.

Evaluation plays a clip from its start without noise; training starts episodes anywhere on the
clip with the task's reset noise, observation noise and pushes. This script steps a run's
deterministic policy in the run's training task (config.json's ``env``) for ``--steps`` control
steps on ``--num-envs`` envs and prints, per variant of the task, the episodes that ended,
their mean length (control steps; biased towards short ones, as long ones may not end within
``--steps``), the share that ended within 10, 25 and 50 steps, and the count per cause.
Variants (``--variants``; default all): ``task`` (as trained), ``no_reset_noise``,
``no_obs_noise``, ``no_events`` (no randomisation, no pushes), ``none`` (none of the three),
and ``grace`` (the ``anchor_horizontal`` term held off for ``--grace-s`` after each episode
start and push). For example (docs/measurements.md)::

    python scripts/training_episodes.py --model runs/jazz_len2_h02 --variants task grace
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np

from gym_motion.envs import TrackingVecEnv
from gym_motion.envs.config import NO_RESET_NOISE, TrackingEnvCfg
from gym_motion.training.run_folder import RunFolder

VARIANTS = ("task", "no_reset_noise", "no_obs_noise", "no_events", "none", "grace")


def variant(cfg: TrackingEnvCfg, name: str, grace_s: float) -> TrackingEnvCfg:
    """The run's training task `cfg` changed as variant `name` says."""
    if name == "grace":
        term = cfg.terminations.get("anchor_horizontal")
        if term is None:
            raise SystemExit("--variants grace: the run's task has no anchor_horizontal term")
        grace = round(grace_s / cfg.sim.control_dt)
        term = replace(term, params={**term.params, "grace_steps": grace})
        return replace(cfg, terminations={**cfg.terminations, "anchor_horizontal": term})
    off = {"task": {}, "no_reset_noise": {"reset": NO_RESET_NOISE},
           "no_obs_noise": {"obs_noise": False}, "no_events": {"events": {}},
           "none": {"reset": NO_RESET_NOISE, "obs_noise": False, "events": {}}}  # fmt: skip
    return replace(cfg, **off[name])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="a gym-motion train run folder (or its best/)")
    p.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    p.add_argument("--num-envs", type=int, default=256)
    p.add_argument("--steps", type=int, default=400, help="control steps per variant")
    p.add_argument("--grace-s", type=float, default=1.0, help="the grace variant's (s)")
    p.add_argument("--seed", type=int, default=123)
    args = p.parse_args()
    folder = RunFolder(args.model)
    policy, cfg, motions = folder.policy(), folder.env_cfg(), folder.motions()
    print(f"{'variant':<15} {'ended':>6} {'mean length':>12} {'<=10':>6} {'<=25':>6} {'<=50':>6}  "
          "causes")  # fmt: skip
    for name in args.variants:
        env = TrackingVecEnv(num_envs=args.num_envs, motion=motions,
                             cfg=variant(cfg, name, args.grace_s), autoreset_mode="same_step",
                             obs_mode=folder.obs_mode(), seed=args.seed)  # fmt: skip
        obs, _ = env.reset(seed=args.seed)
        lengths, causes = [], {}
        for _ in range(args.steps):
            obs, _, terminated, truncated, info = env.step(policy(obs))
            done = terminated | truncated
            if not done.any():
                continue
            lengths.extend(info["final/length"][done].tolist())
            for key, fired in info.items():
                if key.startswith("final/termination/"):
                    cause = key.removeprefix("final/termination/")
                    causes[cause] = causes.get(cause, 0) + int(np.count_nonzero(fired[done]))
        env.close()
        n = np.array(lengths)
        within = [f"{np.mean(n <= k):>6.2f}" if n.size else f"{'-':>6}" for k in (10, 25, 50)]
        mean = f"{n.mean():>12.1f}" if n.size else f"{'-':>12}"
        named = ", ".join(f"{c} {v}" for c, v in causes.items() if v)
        print(f"{name:<15} {n.size:>6} {mean} {' '.join(within)}  {named}", flush=True)


if __name__ == "__main__":
    main()
