"""Train a G1 tracking policy with rsl_rl's PPO (``OnPolicyRunner``), using the library directly.

``gym-motion train --library rsl_rl`` does the same with a run folder, evaluations and plots;
this script shows the pieces: the batched env in SAME_STEP mode with the policy and privileged
critic observation groups, `RslRlVecEnv` (torch tensors, ``time_outs``, the tracking statistics
in ``extras["log"]``), BeyondMimic's PPO settings adapted to a CPU (`runner_cfg`) and rsl_rl's
own loop with randomised initial episode lengths. rsl_rl writes its TensorBoard log and
checkpoints to --out.

    pip install -e ".[rsl_rl]"
    python examples/train_rsl_rl.py --num-envs 64 --iterations 50
    tensorboard --logdir runs/rsl_rl
"""

from __future__ import annotations

import argparse

import torch
from rsl_rl.runners import OnPolicyRunner

from gym_motion.adapters.rsl_rl import RslRlVecEnv
from gym_motion.envs import TrackingVecEnv
from gym_motion.training.rsl_rl import runner_cfg


def main(argv: list[str] | None = None) -> OnPolicyRunner:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--motion", nargs="*", default=None, help="clip npz(s); default motion")
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--iterations", type=int, default=50, help="of 24 steps x num-envs")
    parser.add_argument("--hidden", type=int, nargs="+", default=[512, 256, 128])
    parser.add_argument("--out", default="runs/rsl_rl")
    parser.add_argument("--device", default="cpu", help="torch device, e.g. cuda:0")
    args = parser.parse_args(argv)

    torch.manual_seed(0)
    env = TrackingVecEnv(
        args.num_envs,
        motion=args.motion or None,
        autoreset_mode="same_step",  # rsl_rl steps on with the next episode's first observation
        obs_mode="dict",  # "policy" (actor) and "critic" (privileged) groups
        seed=0,
    )
    vec_env = RslRlVecEnv(env, device=args.device)
    cfg = runner_cfg({"hidden_dims": args.hidden})  # the package's CPU-scale PPO values otherwise
    runner = OnPolicyRunner(vec_env, cfg, log_dir=args.out, device=args.device)
    runner.learn(args.iterations, init_at_random_ep_len=True)
    vec_env.close()
    return runner


if __name__ == "__main__":
    main()
