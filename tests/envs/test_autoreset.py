"""DISABLED autoreset: stepping an env that ended without a masked reset is refused, naming
the envs, on the step where gymnasium's SyncVectorEnv refuses it; SAME_STEP and NEXT_STEP
restart ended envs themselves."""

from __future__ import annotations

from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode

import gym_motion  # noqa: F401  (registers the ids)
from gym_motion.envs import TrackingEnv, TrackingVecEnv, eval_cfg

CFG = replace(eval_cfg(), terminations={})  # episodes end at the time limit only
LIMIT = 3


def zeros(n: int) -> np.ndarray:
    return np.zeros((n, 29), np.float32)


def test_disabled_mode_refuses_to_step_envs_that_ended_without_reset():
    env = TrackingVecEnv(2, cfg=CFG, autoreset_mode="disabled", max_episode_steps=LIMIT)
    env.reset(seed=0)
    for _ in range(LIMIT):
        _, _, term, trunc, info = env.step(zeros(2))
    np.testing.assert_array_equal(trunc, [True, True])
    np.testing.assert_array_equal(info["final/length"], [LIMIT, LIMIT])
    frames, ema = env.command.frames.copy(), env.command.sampler.failure_ema.copy()
    with pytest.raises(ResetNeeded, match=r"envs \[0, 1\] terminated or truncated"):
        env.step(zeros(2))
    # the refused step changed nothing: no longer episode, no frame advance, no sampler update
    np.testing.assert_array_equal(env.episode_length, [LIMIT, LIMIT])
    np.testing.assert_array_equal(env.command.frames, frames)
    np.testing.assert_array_equal(env.command.sampler.failure_ema, ema)
    env.reset(options={"reset_mask": np.array([True, False])})
    with pytest.raises(ResetNeeded, match=r"envs \[1\] terminated"):
        env.step(zeros(2))
    env.reset(options={"reset_mask": np.array([False, True])})
    _, _, term, trunc, info = env.step(zeros(2))
    assert not (term | trunc).any() and "final/length" not in info
    np.testing.assert_array_equal(env.episode_length, [1, 1])
    env.close()


def test_disabled_mode_full_reset_clears_every_ended_env():
    env = TrackingVecEnv(2, cfg=CFG, autoreset_mode="disabled", max_episode_steps=LIMIT)
    env.reset(seed=0)
    for _ in range(LIMIT):
        env.step(zeros(2))
    env.reset()
    for _ in range(LIMIT - 1):
        _, _, term, trunc, _ = env.step(zeros(2))
        assert not (term | trunc).any()
    env.close()


def test_disabled_mode_refuses_the_step_sync_vector_env_refuses():
    """gymnasium's SyncVectorEnv over two single envs, DISABLED: the 4th step is refused."""
    sync = gym.make_vec(
        "GymMotion/G1-Tracking-v0",
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.DISABLED},
        max_episode_steps=LIMIT,
        cfg=CFG,
    )
    ours = TrackingVecEnv(2, cfg=CFG, autoreset_mode="disabled", max_episode_steps=LIMIT)
    refused = {}
    for name, env in (("sync", sync), ("ours", ours)):
        env.reset(seed=0)
        for t in range(1, LIMIT + 2):
            try:
                env.step(zeros(2))
            except (AssertionError, ResetNeeded):
                refused[name] = t
                break
        env.close()
    assert refused == {"sync": LIMIT + 1, "ours": LIMIT + 1}


@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP])
def test_other_modes_restart_ended_envs_themselves(mode):
    env = TrackingVecEnv(2, cfg=CFG, autoreset_mode=mode, max_episode_steps=LIMIT)
    env.reset(seed=0)
    ends = []
    for t in range(1, 3 * LIMIT + 1):
        _, _, term, trunc, _ = env.step(zeros(2))
        if trunc.any():
            ends.append(t)
    # SAME_STEP restarts at once; NEXT_STEP spends one step on the restart
    assert ends == ([3, 6, 9] if mode is AutoresetMode.SAME_STEP else [3, 7])
    env.close()


def test_single_env_asks_for_reset_after_its_episode_ended():
    env = TrackingEnv(cfg=CFG, max_episode_steps=LIMIT)
    env.reset(seed=0)
    for _ in range(LIMIT):
        _, _, term, trunc, info = env.step(zeros(1)[0])
    assert trunc and not term and info["final/length"] == LIMIT
    with pytest.raises(ResetNeeded, match=r"envs \[0\]"):
        env.step(zeros(1)[0])
    env.reset()
    _, _, term, trunc, info = env.step(zeros(1)[0])
    assert not (term or trunc) and "final/length" not in info
    env.close()
