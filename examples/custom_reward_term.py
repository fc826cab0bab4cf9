"""Add, drop and reweight reward terms through the typed task config.

    python examples/custom_reward_term.py

A term is a function ``term(state, out, **params)`` that writes one value per env into ``out``
(N,) float32; `gym_motion.managers.state.MDPState` holds the robot and reference state.
"""

from dataclasses import replace

import numpy as np

from gym_motion.envs import TrackingEnvCfg, TrackingVecEnv
from gym_motion.managers import reward
from gym_motion.managers.reward import RewardTermCfg
from gym_motion.managers.state import MDPState


def feet_height(s: MDPState, out: np.ndarray, body_ids: np.ndarray) -> None:
    """Mean height of the selected bodies above the floor, m (an example term)."""
    np.mean(s.robot.pos_w[:, body_ids, 2], axis=1, out=out)


def main() -> None:
    cfg = TrackingEnvCfg()
    rewards = dict(cfg.rewards)
    del rewards["self_collision"]  # drop a term
    rewards["action_rate"] = RewardTermCfg(reward.action_rate, weight=-0.2)  # reweight one
    rewards["feet_height"] = RewardTermCfg(  # add one, on a subset of the tracked bodies
        feet_height,
        weight=-0.5,
        params={"bodies": ("left_ankle_roll_link", "right_ankle_roll_link")},
    )
    env = TrackingVecEnv(num_envs=8, cfg=replace(cfg, rewards=rewards), seed=0)
    env.reset()
    _, _, _, _, info = env.step(np.zeros((8, 29), np.float32))
    for name in env.rewards.names:
        print(f"reward/{name:14s} {info[f'reward/{name}'].mean():+.4f}")
    env.close()


if __name__ == "__main__":
    main()
