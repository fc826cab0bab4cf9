"""`TrackingVecEnv.call` / `get_attr` / `set_attr`: gymnasium's SyncVectorEnv surface, which RL
libraries use (skrl's trainer renders through ``env.call("render")``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from gym_motion.envs import TrackingVecEnv


@pytest.fixture(scope="module")
def env():
    e = TrackingVecEnv(3, seed=0)
    e.reset()
    yield e
    e.close()


def test_get_attr_gives_the_one_value_once_per_env(env):
    assert env.get_attr("max_episode_steps") == (500, 500, 500)
    lengths = env.get_attr("episode_length")
    assert len(lengths) == 3 and all(x is env.episode_length for x in lengths)
    with pytest.raises(AttributeError):
        env.get_attr("no_such_attribute")


def test_call_runs_the_method_once(env, monkeypatch):
    calls = []
    monkeypatch.setattr(env, "ping", lambda x, k=0: calls.append((x, k)) or x + k, raising=False)
    assert env.call("ping", 1, k=2) == (3, 3, 3)
    assert calls == [(1, 2)]
    assert env.call("num_envs") == (3, 3, 3)  # an attribute: its value, as get_attr


def test_call_render_is_render(env):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gymnasium's "no render_mode" warning
        assert env.call("render") is None  # render_mode None, as env.render()


def test_set_attr_sets_one_value_for_all(env):
    env.set_attr("reset_noise_scale", 0.25)
    assert env.reset_noise_scale == 0.25 and env.command.reset_noise_scale == 0.25
    env.set_attr("reset_noise_scale", [0.5, 0.5, 0.5])  # SyncVectorEnv's per-env form
    assert env.reset_noise_scale == 0.5
    env.set_attr("reset_noise_scale", 1.0)


def test_set_attr_refuses_unknown_names_and_differing_values(env):
    with pytest.raises(AttributeError, match="reset_noise_scal"):
        env.set_attr("reset_noise_scal", 0.5)
    with pytest.raises(ValueError, match="per-env values differ"):
        env.set_attr("reset_noise_scale", [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="2 values for 3 envs"):
        env.set_attr("reset_noise_scale", [0.1, 0.1])
    env.set_attr("time_limit_offset", [np.zeros(3, np.int32)] * 3)  # equal arrays: one value
    assert env.reset_noise_scale == 1.0


def test_skrl_wrapper_renders_and_reads_spaces():
    skrl = pytest.importorskip("skrl.envs.wrappers.torch")
    e = TrackingVecEnv(2, autoreset_mode="same_step", seed=0)
    wrapped = skrl.wrap_env(e, wrapper="gymnasium")
    obs, _ = wrapped.reset()
    assert tuple(obs.shape) == (2, 160) and wrapped.num_envs == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrapped.render()  # env.call("render"): raised AttributeError before
    e.close()
