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


@pytest.mark.parametrize("obs_mode", ["policy", "dict"])
def test_masked_reset_returns_the_last_observation_of_the_envs_it_does_not_reset(obs_mode):
    """As gymnasium's SyncVectorEnv: rows outside the mask keep what the last step returned
    (with the training config's observation noise, a fresh draw would differ)."""
    env = TrackingVecEnv(4, autoreset_mode="disabled", obs_mode=obs_mode)
    env.reset(seed=0)
    for _ in range(3):
        stepped, *_ = env.step(zeros(4))
    mask = np.array([True, False, True, False])
    obs, _ = env.reset(options={"reset_mask": mask})
    again, _ = env.reset(options={"reset_mask": np.array([False, True, False, False])})
    for group in stepped if obs_mode == "dict" else {"policy": None}:
        before = stepped[group] if obs_mode == "dict" else stepped
        after = obs[group] if obs_mode == "dict" else obs
        np.testing.assert_array_equal(after[~mask], before[~mask])
        assert not np.array_equal(after[mask], before[mask])
        # a second masked reset keeps what the first returned (not a fresh noise draw)
        later = again[group] if obs_mode == "dict" else again
        np.testing.assert_array_equal(later[[0, 2, 3]], after[[0, 2, 3]])
    env.close()


def test_the_constructor_seed_is_used_by_the_first_reset_only():
    built = TrackingVecEnv(2, seed=3)
    first, _ = built.reset()  # the constructor's seed stands in
    plain = TrackingVecEnv(2)
    np.testing.assert_array_equal(first, plain.reset(seed=3)[0])
    # a first reset with its own seed uses that one; later seedless resets never rewind
    built.reset(seed=5)
    for _ in range(5):
        built.step(zeros(2))
    again, _ = built.reset()
    assert not np.array_equal(again, plain.reset(seed=3)[0])
    assert not np.array_equal(again, plain.reset(seed=5)[0])
    for env in (built, plain):
        env.close()


def test_a_closed_env_says_so():
    env = TrackingVecEnv(1)
    env.reset(seed=0)
    assert not env.closed
    env.close()
    env.close()  # idempotent
    assert env.closed
    for call in (lambda: env.step(zeros(1)), env.reset):
        with pytest.raises(RuntimeError, match="closed"):
            call()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_autoreset_mode_for_per_env_vectorisation_is_refused_with_where_it_goes(mode):
    with pytest.raises(ValueError, match=r"vector_kwargs=\{'autoreset_mode'"):
        gym.make_vec("GymMotion/G1-Tracking-v0", num_envs=2, vectorization_mode=mode,
                     autoreset_mode="same_step")  # fmt: skip
    with pytest.raises(ValueError, match="TrackingEnv is one env: num_envs must be 1, got 3"):
        TrackingEnv(num_envs=3)
