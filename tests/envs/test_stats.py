"""`TrackingStats` over hand-made info dicts (the `gym_motion.envs.info` schema), and over a
real env's steps."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from gym_motion.envs import TrackingEnvCfg, TrackingVecEnv, eval_cfg
from gym_motion.envs.stats import TrackingStats, tracking_terms


def step_info(rewards: dict[str, list[float]], valid: list[bool] | None = None) -> dict:
    info = {}
    for name, values in rewards.items():
        info[f"reward/{name}"] = np.array(values, np.float32)
        if valid is not None:
            info[f"_reward/{name}"] = np.array(valid)
    return info


def with_final(info: dict, done: list[bool], **episode: list[float]) -> dict:
    mask = np.array(done)
    for key, values in episode.items():
        info[f"final/{key}"] = np.array(values)
        info[f"_final/{key}"] = mask
    return info


def test_tracking_terms_are_the_positive_weight_terms():
    env = SimpleNamespace(cfg=TrackingEnvCfg())
    assert tracking_terms(env) == (
        "anchor_pos", "anchor_ori", "body_pos", "body_ori", "body_lin_vel", "body_ang_vel",
    )  # fmt: skip


def test_step_means_leave_out_masked_rows():
    stats = TrackingStats(tracking=("a",))
    stats.add(step_info({"a": [1.0, 3.0], "pen": [-1.0, -1.0]}))
    stats.add(step_info({"a": [5.0, 100.0], "pen": [0.0, -9.0]}, valid=[True, False]))
    stats.add(step_info({"a": [7.0, 7.0], "pen": [0.0, 0.0]}, valid=[False, False]))
    m = stats.means()
    assert m["reward/a"] == pytest.approx((2.0 + 5.0 + 0.0) / 3)
    assert m["reward/pen"] == pytest.approx(-1.0 / 3)
    assert m["rollout/tracking_reward"] == pytest.approx(m["reward/a"])  # "pen" is not tracking
    assert not any(k.startswith(("episode/", "error/", "termination/")) for k in m)


def test_episode_keys_average_the_finished_envs_only_with_units():
    stats = TrackingStats()
    info = with_final(
        step_info({"a": [1.0, 1.0, 1.0]}),
        done=[True, False, True],
        **{
            "return": [2.0, 99.0, 4.0],
            "length": [10, 99, 30],
            "reward/a": [0.5, 99.0, 1.5],
            "termination/time_out": [True, False, False],
            "error/mpkpe": [0.1, 9.0, 0.2],
            "error/joint_pos": [0.01, 9.0, 0.03],
            "error/new_thing": [1.0, 9.0, 3.0],
        },
    )
    stats.add(info)
    stats.add(step_info({"a": [1.0, 1.0, 1.0]}))  # a step where nothing finished
    m = stats.means()
    assert m["episode/count"] == 2.0
    assert m["episode/return"] == pytest.approx(3.0) and m["episode/length"] == pytest.approx(20)
    assert m["episode/reward/a"] == pytest.approx(1.0)
    assert m["termination/time_out"] == pytest.approx(0.5)
    assert m["error/mpkpe_mm"] == pytest.approx(150.0)
    assert m["error/joint_pos_rad"] == pytest.approx(0.02)
    assert m["error/new_thing_si"] == pytest.approx(2.0)
    assert "rollout/tracking_reward" not in m  # no tracking terms given


def test_reset_forgets_the_rollout():
    stats = TrackingStats(tracking=("a",))
    stats.add(with_final(step_info({"a": [1.0]}), done=[True], length=[3]))
    stats.reset()
    assert stats.means() == {} and stats.steps == 0 and stats.episodes == 0


def test_real_env_time_outs():
    n, horizon = 3, 4
    env = TrackingVecEnv(n, cfg=eval_cfg(), max_episode_steps=horizon, seed=0)
    stats = TrackingStats(tracking_terms(env))
    env.reset(seed=0)
    for _ in range(horizon):
        *_, info = env.step(np.zeros((n, 29), np.float32))
        stats.add(info)
    env.close()
    m = stats.means()
    assert m["episode/count"] == n and m["episode/length"] == horizon
    assert m["termination/time_out"] == 1.0
    assert m["rollout/tracking_reward"] == pytest.approx(
        sum(m[f"reward/{t}"] for t in tracking_terms(env))
    )
    assert 0.0 < m["error/mpkpe_mm"] < 100.0
