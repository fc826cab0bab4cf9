"""One time limit, the user's, always reported by the env: its truncation carries the episode
results (``final/*``) on both entry points, above and below the default 500 steps, and
``spec.max_episode_steps`` says what it is."""

from __future__ import annotations

from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import TimeLimit

import gym_motion
from gym_motion.envs import TrackingVecEnv, eval_cfg

ID = "GymMotion/G1-Tracking-v0"
# No termination terms: an episode ends at the time limit only, whatever the robot does.
CFG = replace(eval_cfg(), terminations={})
ZERO = np.zeros(29, np.float32)


def run_single(env, steps: int):
    """Step `steps` times with zero actions; returns every (terminated, truncated, info)."""
    env.reset(seed=0)
    return [env.step(ZERO)[2:] for _ in range(steps)]


def run_vec(envs, steps: int):
    envs.reset(seed=0)
    zeros = np.zeros((envs.num_envs, 29), np.float32)
    return [envs.step(zeros)[2:] for _ in range(steps)]


def test_registered_ids_leave_the_limit_to_the_env():
    for env_id in gym_motion.ENV_IDS:
        assert gym.spec(env_id).max_episode_steps is None


@pytest.mark.parametrize("limit", [20, 600])
def test_make_truncates_at_the_given_limit_with_the_episode_results(limit):
    env = gym.make(ID, max_episode_steps=limit, cfg=CFG)
    assert env.spec.max_episode_steps == limit
    assert env.unwrapped.max_episode_steps == limit
    steps = run_single(env, limit)
    ends = [t for t, (term, trunc, _) in enumerate(steps, 1) if term or trunc]
    assert ends == [limit]  # not at 500, not earlier
    term, trunc, info = steps[-1]
    assert trunc and not term
    assert info["final/length"] == limit and info["final/termination/time_out"]
    assert np.isfinite(info["final/return"]) and info["final/return"] > 0.0
    env.close()


def test_make_without_a_limit_applies_no_wrapper_and_reports_the_env_default():
    env = gym.make(ID, cfg=replace(CFG, episode_length_s=0.6))  # 30 steps of 0.02 s
    assert not isinstance(env, TimeLimit)
    assert env.spec.max_episode_steps == 30
    steps = run_single(env, 30)
    assert [t for t, (_, trunc, _) in enumerate(steps, 1) if trunc] == [30]
    assert steps[-1][2]["final/length"] == 30
    env.close()
    env = gym.make(ID, max_episode_steps=-1)  # gymnasium's "no TimeLimit": the env default
    assert not isinstance(env, TimeLimit) and env.spec.max_episode_steps == 500
    env.close()


def test_make_gives_the_eval_id_the_limit_too():
    env = gym.make("GymMotion/G1-Tracking-Eval-v0", max_episode_steps=7)
    assert env.spec.max_episode_steps == 7
    steps = run_single(env, 7)
    term, trunc, info = steps[-1]
    assert (term or trunc) and info["final/length"] == 7
    assert not any(t or u for t, u, _ in steps[:-1])
    env.close()


@pytest.mark.parametrize("limit", [20, 600])
def test_make_vec_truncates_at_the_given_limit_with_the_episode_results(limit):
    envs = gym.make_vec(ID, num_envs=2, max_episode_steps=limit, cfg=CFG)
    assert envs.spec.max_episode_steps == limit
    assert envs.unwrapped.max_episode_steps == limit
    steps = run_vec(envs, limit)
    assert not any((term | trunc).any() for term, trunc, _ in steps[:-1])
    term, trunc, info = steps[-1]
    np.testing.assert_array_equal(trunc, [True, True])
    np.testing.assert_array_equal(term, [False, False])
    np.testing.assert_array_equal(info["final/length"], [limit, limit])
    np.testing.assert_array_equal(info["_final/length"], [True, True])
    np.testing.assert_array_equal(info["final/termination/time_out"], [True, True])
    envs.close()


def test_make_vec_without_a_limit_reports_the_env_default():
    envs = gym.make_vec(ID, num_envs=2, cfg=replace(CFG, episode_length_s=0.3))
    assert envs.spec.max_episode_steps == 15 and envs.unwrapped.max_episode_steps == 15
    envs.close()


def test_sync_make_vec_sub_envs_report_the_given_limit():
    envs = gym.make_vec(ID, num_envs=2, vectorization_mode="sync", max_episode_steps=5, cfg=CFG)
    steps = run_vec(envs, 5)
    term, trunc, info = steps[-1]
    np.testing.assert_array_equal(trunc, [True, True])
    np.testing.assert_array_equal(info["final/length"], [5, 5])
    assert not any((t | u).any() for t, u, _ in steps[:-1])
    envs.close()


def test_spec_follows_a_later_change_of_the_limit():
    envs = gym.make_vec(ID, num_envs=2, max_episode_steps=20, cfg=CFG)
    envs.unwrapped.max_episode_steps = 7  # as SB3's set_attr does
    assert envs.spec.max_episode_steps == 7
    envs.close()


def test_a_limit_below_one_is_refused():
    with pytest.raises(ValueError, match="max_episode_steps must be an integer >= 1, got 0"):
        TrackingVecEnv(1, max_episode_steps=0)


def test_time_limit_offset_assigned_is_copied_into_the_env_and_broadcast():
    env = TrackingVecEnv(3, cfg=CFG, max_episode_steps=5, seed=0)
    env.reset(seed=0)
    buffer = env.time_limit_offset
    env.time_limit_offset = np.array([3])  # broadcast to every env
    assert env.time_limit_offset is buffer and buffer.tolist() == [3, 3, 3]
    env.step(np.zeros((3, 29), np.float32))
    _, _, _, truncated, _ = env.step(np.zeros((3, 29), np.float32))
    assert truncated.all()  # 2 steps + 3 offset = the limit of 5
    env.close()
