"""Terms bound once by the managers give what calling them directly gives; user terms (plain
functions, no binder) run every step too."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gym_motion.envs import TrackingVecEnv
from gym_motion.envs.config import TrackingEnvCfg, eval_cfg
from gym_motion.managers.reward import RewardTermCfg
from gym_motion.managers.terms import bind_term, bound_term


def _stepped_env(cfg: TrackingEnvCfg, n: int = 6) -> TrackingVecEnv:
    env = TrackingVecEnv(n, cfg=cfg, seed=0, obs_mode="dict")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(12):
        env.step(rng.normal(0.0, 0.5, (n, 29)).astype(np.float32))
    return env


def test_bound_builtin_terms_equal_their_direct_calls():
    cfg = eval_cfg()
    env = _stepped_env(cfg)
    s = env.state
    s.robot.pos_w[::2, :, 2] += 0.3  # every height term fires on even rows
    s.robot.quat_w[1::3, s.anchor] = [0.0, 1.0, 0.0, 0.0]  # upside down: the gravity term
    env.rewards.compute()
    for t, term in enumerate(cfg.rewards.values()):
        assert hasattr(term.func, "bind")
        out = np.full(env.num_envs, np.nan, np.float32)
        term.func(s, out, **s.resolve_term_params(term.params))
        assert out.tobytes() == env.rewards._raw[t].tobytes()
    env.terminations.compute()
    for t, term in enumerate(cfg.terminations.values()):
        out = np.ones(env.num_envs, bool)
        term.func(s, out, **s.resolve_term_params(term.params))
        assert out.tobytes() == env.terminations.fired[t].tobytes()
        assert out.any() and not out.all()
    buffers = env.observations.compute(env._rng)
    for group, terms in cfg.observations.items():
        for name, term in terms.items():
            sl = env.observations.term_slices[group][name]
            out = np.full((env.num_envs, term.dim), np.nan, np.float32)
            term.func(s, out)
            assert out.tobytes() == np.ascontiguousarray(buffers[group][:, sl]).tobytes(), name
    env.close()


def test_a_user_term_is_called_with_its_params_every_step():
    calls = []

    def anchor_height(s, out, scale):
        calls.append(scale)
        out[:] = scale * s.robot.pos_w[:, s.anchor, 2]

    height = RewardTermCfg(anchor_height, 2.0, {"scale": 3.0})
    rewards = {**TrackingEnvCfg().rewards, "height": height}
    env = _stepped_env(dataclasses.replace(eval_cfg(), rewards=rewards))
    assert calls == [3.0] * 12
    env.rewards.compute()
    expected = (3.0 * env.state.robot.pos_w[:, env.state.anchor, 2]).astype(np.float32)
    np.testing.assert_array_equal(env.rewards._raw[-1], expected)
    env.close()


def test_bind_term_binds_a_bound_term_once_and_wraps_a_plain_one():
    binds = []

    @bound_term
    def twice(state, out, factor):
        binds.append(factor)
        return lambda: np.multiply(state, factor, out=out)

    state, out = np.arange(3.0), np.zeros(3)
    evaluate = bind_term(twice, state, out, {"factor": 2.0})
    evaluate()
    evaluate()
    assert binds == [2.0] and out.tolist() == [0.0, 2.0, 4.0]
    twice(state, out, factor=3.0)  # a direct call binds and evaluates
    assert out.tolist() == [0.0, 3.0, 6.0]

    def plain(state, out, factor):
        out[:] = state + factor

    bind_term(plain, state, out, {"factor": 1.0})()
    assert out.tolist() == [1.0, 2.0, 3.0]


def test_state_buffers_cannot_be_reassigned_only_written():
    env = TrackingVecEnv(2, seed=0)
    s = env.state
    with pytest.raises(AttributeError, match=r"MDPState.action cannot be reassigned.*in place"):
        s.action = np.ones_like(s.action)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.robot.pos_w = np.zeros_like(s.robot.pos_w)
    s.action[...] = 1.0  # in place: what the bound terms read
    env.rewards.compute()
    assert env.rewards._raw[env.rewards.names.index("action_rate")].tolist() == [29.0, 29.0]
    env.close()


def test_actions_that_are_views_of_the_action_history_step_as_copies():
    def run(alias: bool) -> list[np.ndarray]:
        env = TrackingVecEnv(3, cfg=eval_cfg(), seed=0)
        env.reset(seed=0)
        rng, out = np.random.default_rng(1), []
        for t in range(6):
            env.step(rng.normal(0.0, 0.5, (3, 29)).astype(np.float32))
            views = (env.state.last_action, env.state.action[::-1], env.state.action[:, ::-1])
            actions = views[t % 3]
            obs, reward, *_ = env.step(actions if alias else actions.copy())
            out += [obs, reward, env.state.action.copy()]
        env.close()
        return out

    for a, b in zip(run(True), run(False), strict=True):
        assert a.tobytes() == b.tobytes()
