"""Train a G1 tracking policy with Stable-Baselines3 PPO, using the library API directly.

`gym-motion train` does the same with a run folder, evaluations and plots; this script shows
the pieces: the batched env in SAME_STEP mode, the SB3 adapter, observation normalisation,
PPO with the BeyondMimic hyperparameters, the reset-noise curriculum and the logging callback.

    python examples/train_sb3_ppo.py --motion ../shared/motions/g1moves_jazzwalk_60fps.npz \
        --num-envs 64 --total-steps 200000
    tensorboard --logdir runs/
"""

from __future__ import annotations

import argparse

from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import VecNormalize

from gym_motion.adapters.sb3 import (
    KLAdaptiveLRCallback,
    ResetNoiseCurriculum,
    SB3VecEnv,
    TrackingLogCallback,
)
from gym_motion.envs import TrackingVecEnv
from gym_motion.training import RunConfig
from gym_motion.training.sb3 import make_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--motion", nargs="*", default=None, help="clip npz(s); default motion")
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--total-steps", type=int, default=200_000)
    parser.add_argument("--out", default="runs/example")
    args = parser.parse_args()

    env = TrackingVecEnv(
        num_envs=args.num_envs,
        motion=args.motion or None,
        autoreset_mode="SameStep",
        obs_mode="dict",  # the actor reads the policy group, the critic the privileged one
        seed=0,
    )
    env.reset_noise_scale = 0.0  # first episodes: the curriculum below starts from none
    venv = VecNormalize(SB3VecEnv(env), norm_obs=True, norm_reward=False)
    model, lr = make_model(RunConfig(num_envs=args.num_envs), venv)  # PPO_DEFAULTS
    model.set_logger(configure(args.out, ["stdout", "tensorboard"]))
    # reset noise from none (the reference state) to the task's (docs/task.md section 9)
    # over the first half of the steps
    curriculum = ResetNoiseCurriculum(ramp=0.5, total_steps=args.total_steps)
    callbacks = [curriculum, TrackingLogCallback(), KLAdaptiveLRCallback(lr)]
    model.learn(args.total_steps, callback=callbacks)
    model.save(f"{args.out}/model.zip")
    venv.save(f"{args.out}/vecnormalize.pkl")
    venv.close()


if __name__ == "__main__":
    main()
