"""SB3 callbacks: PPO learns and logs through `TrackingLogCallback`; the KL-adaptive learning
rate follows the logged KL; the package's lazily imported names."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

import gym_motion.adapters.sb3 as sb3
from gym_motion.adapters.sb3 import (
    KLAdaptiveLRCallback,
    ProgressBar,
    SB3VecEnv,
    TrackingLogCallback,
)
from gym_motion.adapters.sb3.callbacks import KLAdaptiveLR
from gym_motion.envs import TrackingEnv, TrackingVecEnv
from gym_motion.robots import g1
from gym_motion.training import RunConfig
from gym_motion.training.sb3 import make_model


def test_ppo_learns_under_vecnormalize(tmp_path):
    config = RunConfig(num_envs=8, seed=0, obs_mode="policy")
    env = TrackingVecEnv(num_envs=8, autoreset_mode="SameStep", max_episode_steps=40, seed=0)
    venv = VecNormalize(SB3VecEnv(env), norm_reward=False)
    model, _ = make_model(config, venv)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    cb = TrackingLogCallback()
    model.learn(2000, callback=cb)
    assert model.num_timesteps >= 2000
    assert cb.history and "time/env_steps_per_s" in cb.history[-1]
    assert any("episode/length" in h for h in cb.history)
    assert "sampling/entropy" in cb.history[-1]
    obs = venv.reset()
    action, _ = model.predict(obs, deterministic=True)
    assert action.shape == (8, g1.NUM_JOINTS) and np.isfinite(action).all()
    venv.close()


def test_tracking_log_callback_refuses_an_env_that_is_not_sb3vecenv():
    venv = DummyVecEnv([lambda: TrackingEnv(max_episode_steps=10)])
    model = PPO("MlpPolicy", venv, n_steps=8, batch_size=8, device="cpu")
    with pytest.raises(TypeError, match="SB3VecEnv"):
        TrackingLogCallback().init_callback(model)
    venv.close()


def test_kl_callback_moves_the_learning_rate_with_the_logged_kl(tmp_path):
    env = TrackingVecEnv(num_envs=2, autoreset_mode="SameStep", seed=0)
    venv = SB3VecEnv(env)
    model, schedule = make_model(
        RunConfig(num_envs=2, obs_mode="policy", ppo={"learning_rate": 1e-3}), venv
    )
    assert isinstance(schedule, KLAdaptiveLR) and schedule.desired_kl == 0.02
    model.set_logger(configure(str(tmp_path), ["csv"]))
    cb = KLAdaptiveLRCallback(schedule)
    cb.init_callback(model)
    cb.on_rollout_start()  # no KL logged yet: unchanged
    assert schedule(1.0) == pytest.approx(1e-3)
    model.logger.record("train/approx_kl", 0.1)  # > 2 x desired
    cb.on_rollout_start()
    assert schedule(1.0) == pytest.approx(1e-3 / 1.5)
    venv.close()


def test_lazy_exports_resolve_to_their_modules():
    for name in sb3.__all__:
        module = importlib.import_module(f"gym_motion.adapters.sb3.{sb3._SOURCES[name]}")
        assert getattr(sb3, name) is getattr(module, name), name
    assert set(sb3.__all__) == set(sb3._SOURCES)
    with pytest.raises(AttributeError, match="no attribute 'TrackingStats'"):
        sb3.TrackingStats  # noqa: B018  (moved to gym_motion.envs.stats)


def test_progress_bar_of_a_continued_model_counts_the_whole_run(tmp_path):
    """A resumed run (`learn(..., reset_num_timesteps=False)`) starts its bar at the steps
    already done, so the bar ends at the run's total, not at what this session added."""
    config = RunConfig(num_envs=2, seed=0, obs_mode="policy", ppo={"n_steps": 8, "net_arch": [16]})
    env = TrackingVecEnv(num_envs=2, autoreset_mode="SameStep", max_episode_steps=40, seed=0)
    venv = VecNormalize(SB3VecEnv(env), norm_reward=False)
    model, _ = make_model(config, venv)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(16)
    bar = ProgressBar(32)
    model.learn(16, callback=bar, reset_num_timesteps=False)
    assert model.num_timesteps == 32 and bar.bar.n == 32
    venv.close()
