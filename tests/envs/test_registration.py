"""Every registered id builds and steps on both entry points; the eval id is the eval task."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import gym_motion
from gym_motion.envs import TrackingVecEnv, eval_cfg

IDS = sorted(k for k in gym.registry if k.startswith("GymMotion/"))


def test_the_package_registers_its_ids():
    assert IDS == sorted(gym_motion.ENV_IDS)
    assert "GymMotion/G1-Tracking-Eval-v0" in IDS


@pytest.mark.parametrize("env_id", IDS)
def test_every_id_builds_and_steps(env_id):
    envs = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point")
    obs, _ = envs.reset(seed=0)
    assert envs.observation_space.contains(obs)
    for _ in range(3):
        obs, reward, terminated, truncated, info = envs.step(np.zeros((2, 29), np.float32))
    assert obs.shape == envs.observation_space.shape and np.isfinite(obs).all()
    assert reward.shape == (2,) and "reward/body_pos" in info
    envs.close()
    env = gym.make(env_id)
    obs, _ = env.reset(seed=0)
    obs, reward, terminated, truncated, _ = env.step(np.zeros(29, np.float32))
    assert env.observation_space.contains(obs) and isinstance(reward, float)
    env.close()


def test_eval_id_plays_clips_from_their_start_without_noise():
    envs = gym.make_vec(
        "GymMotion/G1-Tracking-Eval-v0", num_envs=3, vectorization_mode="vector_entry_point"
    )
    env = envs.unwrapped
    assert env.cfg == eval_cfg() or (
        not env.cfg.obs_noise and env.cfg.events == {} and env.cfg.sampling.mode == "start"
    )
    obs_a, _ = envs.reset(seed=0)
    obs_b, _ = envs.reset(seed=1)
    np.testing.assert_array_equal(env.command.frames, 0)
    np.testing.assert_array_equal(obs_a, obs_b)  # no reset noise, no observation noise
    # the same as TrackingVecEnv on eval_cfg()
    direct = TrackingVecEnv(3, cfg=eval_cfg())
    np.testing.assert_array_equal(direct.reset(seed=0)[0], obs_a)
    direct.close()
    envs.close()


def test_a_library_given_to_make_is_one_object_and_its_spec_serialises():
    """gymnasium's wrappers deep-copy the spec on every ``spec`` read: a `MotionLibrary` in its
    kwargs is shared, not copied, and one built from files is named by them, so the spec
    serialises and rebuilds the same env (the playback too)."""
    import copy

    from gymnasium.envs.registration import EnvSpec
    from gymnasium.wrappers import RecordEpisodeStatistics

    from gym_motion.motion import DEFAULT_MOTION_PATH, MotionLibrary
    from gym_motion.motion.clip import load_clip

    in_memory = MotionLibrary([load_clip(DEFAULT_MOTION_PATH, fps=50.0)])
    assert in_memory.source is None and copy.deepcopy(in_memory) is in_memory
    env = RecordEpisodeStatistics(gym.make("GymMotion/G1-Tracking-v0", motion=in_memory))
    assert env.spec.kwargs["motion"] is in_memory  # through three wrappers' copies
    assert env.unwrapped.spec.kwargs["motion"] is in_memory
    env.close()

    for playback in ("real_time", "frame_per_step"):
        files = MotionLibrary.from_paths([DEFAULT_MOTION_PATH], playback=playback)
        env = RecordEpisodeStatistics(gym.make("GymMotion/G1-Tracking-v0", motion=files))
        spec = env.spec
        assert spec.kwargs["motion"] == [str(DEFAULT_MOTION_PATH.resolve())]
        assert spec.kwargs.get("motion_playback", "real_time") == playback
        rebuilt = gym.make(EnvSpec.from_json(spec.to_json()))
        a, b = files, rebuilt.unwrapped.vec.library
        assert a.num_frames == b.num_frames
        np.testing.assert_array_equal(a.joint_pos, b.joint_pos)
        env.close()
        rebuilt.close()
    vec = gym.make_vec("GymMotion/G1-Tracking-v0", num_envs=2, motion=files,
                       vectorization_mode="vector_entry_point")  # fmt: skip
    assert vec.spec.kwargs["motion"] == [str(DEFAULT_MOTION_PATH.resolve())]
    assert vec.unwrapped.library is files
    vec.close()
