"""`SB3VecEnv`: VecEnv conformance, Dict spaces, SB3 wrappers, and the single-env checkers."""

from __future__ import annotations

from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

from gym_motion.adapters.sb3 import SB3VecEnv
from gym_motion.envs import TrackingEnv, TrackingEnvCfg, TrackingVecEnv
from gym_motion.envs.stats import TrackingStats, tracking_terms
from gym_motion.managers.termination import TerminationTermCfg
from gym_motion.robots import g1

MOTION = None  # the embedded default motion


def quiet_cfg(threshold: float = 0.02) -> TrackingEnvCfg:
    """No obs noise and no pushes (the random streams are then only used by resets), and a
    tight anchor-height termination so short runs see terminations as well as time-outs."""
    cfg = TrackingEnvCfg(obs_noise=False, events={})
    terms = dict(cfg.terminations)
    terms["anchor_height"] = replace(terms["anchor_height"], params={"threshold": threshold})
    assert isinstance(terms["anchor_height"], TerminationTermCfg)
    return replace(cfg, terminations=terms)


def make(n=4, mode=AutoresetMode.SAME_STEP, **kw) -> TrackingVecEnv:
    kw.setdefault("seed", 0)
    return TrackingVecEnv(num_envs=n, motion=MOTION, autoreset_mode=mode, **kw)


def test_requires_same_step():
    env = make(2, AutoresetMode.NEXT_STEP)
    with pytest.raises(ValueError, match="SAME_STEP"):
        SB3VecEnv(env)
    env.close()


def test_conformance_against_lockstep_env():
    """terminal_observation / TimeLimit.truncated / episode against a no-autoreset twin that
    takes the same actions: up to each env's first episode end the two are identical."""
    n, horizon = 6, 12
    cfg = quiet_cfg()
    adapter = SB3VecEnv(make(n, cfg=cfg, max_episode_steps=horizon))
    twin = make(n, AutoresetMode.DISABLED, cfg=cfg, max_episode_steps=horizon)
    obs = adapter.reset()
    twin_obs, _ = twin.reset()
    np.testing.assert_array_equal(obs, twin_obs)
    rng = np.random.default_rng(1)
    first_done = np.zeros(n, bool)
    ep_ret = np.zeros(n)
    ep_len = np.zeros(n, int)
    causes = {"terminated": 0, "time_out": 0}
    for _ in range(3 * horizon):
        act = rng.normal(0.0, 0.5, (n, g1.NUM_JOINTS)).astype(np.float32)
        obs, rew, dones, infos = adapter.step(act)
        t_obs, t_rew, t_term, t_trunc, _ = twin.step(act)
        if (t_term | t_trunc).any():  # DISABLED: ended envs must be reset before the next step
            twin.reset(options={"reset_mask": t_term | t_trunc})
        assert isinstance(infos, list) and len(infos) == n
        assert len({id(d) for d in infos}) == n  # shared-nothing dicts
        ep_ret += rew
        ep_len += 1
        live = ~first_done
        np.testing.assert_allclose(rew[live], t_rew[live], rtol=1e-6)
        np.testing.assert_array_equal(dones[live], (t_term | t_trunc)[live])
        for i in range(n):
            if not dones[i]:
                assert infos[i] == {}
                continue
            info = infos[i]
            assert set(info) == {"terminal_observation", "TimeLimit.truncated", "episode"}
            assert info["episode"]["l"] == ep_len[i]
            assert info["episode"]["r"] == pytest.approx(ep_ret[i], rel=1e-5, abs=1e-6)
            if info["TimeLimit.truncated"]:
                assert ep_len[i] == horizon
            if not first_done[i]:
                np.testing.assert_array_equal(info["terminal_observation"], t_obs[i])
                assert not np.array_equal(obs[i], t_obs[i])  # obs[i] starts the next episode
                assert info["TimeLimit.truncated"] == bool(t_trunc[i] and not t_term[i])
                causes["time_out" if t_trunc[i] else "terminated"] += 1
            ep_ret[i], ep_len[i] = 0.0, 0
        first_done |= dones
    assert first_done.all()
    assert causes["terminated"] > 0 and causes["time_out"] > 0, causes
    adapter.close()
    twin.close()


def test_truncated_only_for_time_outs():
    n, horizon = 4, 8
    adapter = SB3VecEnv(make(n, cfg=quiet_cfg(threshold=10.0), max_episode_steps=horizon))
    adapter.reset()
    for step in range(1, 2 * horizon + 1):
        _, _, dones, infos = adapter.step(np.zeros((n, g1.NUM_JOINTS), np.float32))
        assert dones.all() == (step % horizon == 0)
        for info in infos:
            if info:
                assert info["TimeLimit.truncated"] is True
                assert info["episode"]["l"] == horizon
    adapter.close()


def test_dict_observations_map_to_sb3_dict_spaces():
    n = 3
    adapter = SB3VecEnv(make(n, obs_mode="dict", cfg=quiet_cfg(10.0), max_episode_steps=5))
    assert isinstance(adapter.observation_space, gym.spaces.Dict)
    assert set(adapter.observation_space.spaces) == {"policy", "critic"}
    obs = adapter.reset()
    for k, space in adapter.observation_space.spaces.items():
        assert obs[k].shape == (n, *space.shape)
    for _ in range(5):
        obs, _, dones, infos = adapter.step(np.zeros((n, g1.NUM_JOINTS), np.float32))
    assert dones.all()
    term = infos[0]["terminal_observation"]
    assert set(term) == {"policy", "critic"} and term["critic"].shape == (286,)
    adapter.close()


def test_vecenv_methods():
    n = 3
    adapter = SB3VecEnv(make(n, cfg=quiet_cfg()))
    assert adapter.get_attr("num_envs") == [n] * n
    assert adapter.get_attr("max_episode_steps", indices=[1]) == [500]
    adapter.set_attr("max_episode_steps", 7)
    assert adapter.venv.max_episode_steps == 7
    with pytest.raises(ValueError, match="all"):
        adapter.set_attr("max_episode_steps", 9, indices=[0])
    assert adapter.env_is_wrapped(gym.Wrapper) == [False] * n
    assert adapter.env_method("__len__" if False else "__repr__", indices=[0, 2])[0] == repr(
        adapter.venv
    )
    assert adapter.seed(5) == [5, 6, 7]
    a = adapter.reset()
    adapter.seed(5)
    b = adapter.reset()
    np.testing.assert_array_equal(a, b)
    adapter.set_options({"unused": True})
    assert adapter._options[0] == {"unused": True}
    adapter.close()


def test_attributes_and_methods_reach_the_env_under_gymnasium_vector_wrappers():
    """Gymnasium #357 / SB3 #1573: ``setattr`` on a wrapper sets the wrapper's own copy."""
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    env = make(2, cfg=quiet_cfg())
    inner = RecordEpisodeStatistics(env)
    adapter = SB3VecEnv(RecordEpisodeStatistics(inner))
    assert env.reset_noise_scale == 1.0
    adapter.set_attr("reset_noise_scale", 0.0)
    assert env.reset_noise_scale == 0.0 and "reset_noise_scale" not in vars(inner)
    assert adapter.get_attr("reset_noise_scale") == [0.0, 0.0]
    adapter.env_method("set_attr", "reset_noise_scale", 0.25)  # TrackingVecEnv's own method
    assert env.reset_noise_scale == 0.25
    assert adapter.env_method("get_attr", "max_episode_steps", indices=[0]) == [(500, 500)]
    # a wrapper's own attribute stays the wrapper's
    adapter.set_attr("episode_count", 3)
    assert adapter.venv.episode_count == 3 and inner.episode_count == 0
    with pytest.raises(AttributeError, match="Statistics > .*TrackingVecEnv .*'nosuch'"):
        adapter.set_attr("nosuch", 1)
    with pytest.raises(AttributeError, match="'nosuch'"):
        adapter.env_method("nosuch")
    adapter.close()


def test_vecnormalize_and_vecmonitor():
    n, horizon = 4, 6
    adapter = SB3VecEnv(make(n, cfg=quiet_cfg(threshold=10.0), max_episode_steps=horizon))
    venv = VecMonitor(VecNormalize(adapter, norm_reward=False))
    obs = venv.reset()
    assert obs.shape == (n, 160)
    for _ in range(horizon):
        obs, rew, dones, infos = venv.step(np.zeros((n, g1.NUM_JOINTS), np.float32))
    assert dones.all()
    for info in infos:
        assert info["episode"]["l"] == horizon  # VecMonitor's count equals the env's
        assert info["terminal_observation"].shape == (160,)
    assert np.isfinite(obs).all()
    venv.close()


def test_tracking_stats_keys():
    n, horizon = 4, 5
    env = make(n, cfg=quiet_cfg(threshold=10.0), max_episode_steps=horizon)
    adapter = SB3VecEnv(env)
    adapter.reset()
    stats = TrackingStats(tracking_terms(env))
    for _ in range(horizon):
        adapter.step(np.zeros((n, g1.NUM_JOINTS), np.float32))
        stats.add(adapter.last_info)
    m = stats.means()
    for term in env.rewards.names:
        assert f"reward/{term}" in m and f"episode/reward/{term}" in m
    for key in ("episode/return", "episode/length", "termination/time_out", "error/mpkpe_mm",
                "error/root_mpkpe_mm", "error/joint_pos_rad", "error/anchor_pos_m",
                "rollout/tracking_reward"):  # fmt: skip
        assert key in m, key
    assert m["episode/length"] == horizon and m["termination/time_out"] == 1.0
    assert m["rollout/tracking_reward"] == pytest.approx(
        sum(m[f"reward/{t}"] for t in tracking_terms(env))
    )
    adapter.close()


@pytest.mark.parametrize("obs_mode", ["policy", "dict"])
def test_single_env_passes_gymnasium_and_sb3_checkers(obs_mode):
    from gymnasium.utils.env_checker import check_env as gym_check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = TrackingEnv(motion=MOTION, obs_mode=obs_mode, max_episode_steps=50)
    gym_check_env(env, skip_render_check=True)
    sb3_check_env(env, warn=False)
    env.close()


def test_registered_single_env_passes_gymnasium_checker():
    from gymnasium.utils.env_checker import check_env as gym_check_env

    import gym_motion  # noqa: F401

    env = gym.make("GymMotion/G1-Tracking-v0")
    gym_check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_sb3_check_env_with_its_render_check_closes_then_steps_the_env(gl):
    """(gym PR #2903, stable-baselines3 #1992) SB3's render check renders, closes the env,
    then resets and steps it: `TrackingEnv.close` frees the simulation and renderer and the
    next `reset` builds them again, with the same time limit."""
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = TrackingEnv(motion=MOTION, render_mode="rgb_array", max_episode_steps=50)
    sb3_check_env(env, warn=False, skip_render_check=False)
    env.close()
    first = env.vec
    assert first.closed
    obs, _ = env.reset(seed=0)
    assert env.vec is not first and not env.vec.closed and env.max_episode_steps == 50
    assert env.observation_space.contains(obs)
    env.step(env.action_space.sample())
    assert env.render().shape[-1] == 3
    env.close()
