"""The step's bookkeeping kernels against the NumPy they replace, bit for bit, in both builds:
action targets, reward weighting and episode sums, the termination OR, the end of a step."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from gym_motion.kernels import rewards, terminations
from gym_motion.kernels.actions import joint_targets
from gym_motion.kernels.episode import end_step

from .checks import SIZES, f32, rng_for

BUILDS = ("parallel", "serial")


def _build(kernel, build):
    return getattr(kernel, build)


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("residual", [False, True])
def test_joint_targets_match_numpy_and_zero_held_rows(build, n, dtype, residual):
    rng = rng_for(n, 40)
    j = 29
    actions = rng.normal(0.0, 3.0, (n, j)).astype(dtype)
    scale, default = f32(rng.uniform(0.05, 0.6, j)), f32(rng.uniform(-1, 1, j))
    bias = f32(rng.uniform(-0.01, 0.01, (n, j)))
    held = rng.random(n) < 0.3
    action, last = f32(rng.normal(size=(n, j))), f32(rng.normal(size=(n, j)))
    # the default pose on every row, or reference joint positions (residual actions)
    offset = f32(rng.uniform(-1, 1, (n, j))) if residual else np.tile(default, (n, 1))
    # the NumPy of ActionManager before the kernel
    exp_last, exp_action = action.copy(), np.empty_like(action)
    np.copyto(exp_action, actions, casting="same_kind")
    exp_action[held] = 0.0
    exp_last[held] = 0.0
    expected = np.multiply(exp_action, scale)
    expected += offset
    expected -= bias
    # the action in BeyondMimic's convention, zero on held rows (a new episode's)
    exp_obs = exp_action + (offset - default) / scale
    exp_obs[held] = 0.0
    targets, action_obs = (np.full((n, j), np.nan, np.float32) for _ in range(2))
    kernel = _build(joint_targets, build)
    bad = kernel(scale, offset, default, bias, action, last, action_obs, targets, actions, held)
    assert bad == 0
    for got, want in ((targets, expected), (action, exp_action), (last, exp_last),
                      (action_obs, exp_obs)):  # fmt: skip
        assert got.tobytes() == want.tobytes()
    if not residual:  # the default offset: the observed action is the action, bit for bit
        np.testing.assert_array_equal(action_obs[~held], action[~held])


@pytest.mark.parametrize("build", BUILDS)
def test_joint_targets_count_non_finite_rows_and_write_nothing(build):
    n, j = 6, 29
    actions = np.zeros((n, j), np.float32)
    actions[1, 3], actions[4, 0], actions[4, 7] = np.nan, np.inf, -np.inf
    action, last, obs, targets = (np.full((n, j), 7.0, np.float32) for _ in range(4))
    zeros = np.zeros((n, j), np.float32)
    args = (np.ones(j, np.float32), zeros, np.zeros(j, np.float32), zeros)
    kernel = _build(joint_targets, build)
    bad = kernel(*args, action, last, obs, targets, actions, np.zeros(n, bool))
    assert bad == 2
    for a in (action, last, obs, targets):
        assert (a == 7.0).all()


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("n", (1, 7, 257, 3000))
def test_weigh_terms_is_numpys_multiply_and_sum_bit_for_bit(build, n):
    rng = rng_for(n, 41)
    for k in (1, 2, 7, 8, 9, 15, 16, 17, 31, 64, 127, 128, 129, 200, 257):
        raw = f32(rng.normal(size=(k, n)) * 10.0 ** rng.uniform(-3, 3, (k, n)))
        raw[:, ::5] = -0.0  # penalty terms at zero: NumPy's sum of -0.0 values is +0.0
        weights, dt = f32(rng.normal(size=k)), np.float32(0.02)
        expected_weighted = np.multiply(raw.T, weights, out=np.empty((n, k), np.float32))
        expected = np.sum(expected_weighted, axis=1)
        expected *= dt
        weighted, reward = np.empty((n, k), np.float32), np.empty(n, np.float32)
        _build(rewards.weigh_terms, build)(raw, weights, dt, weighted, reward)
        assert weighted.tobytes() == expected_weighted.tobytes()
        assert reward.tobytes() == expected.tobytes(), k
    for k in (3, 9):  # only penalties, all at zero: -0.0 terms sum to +0.0, as in NumPy
        weighted, reward = np.empty((n, k), np.float32), np.empty(n, np.float32)
        raw, weights = np.full((k, n), 0.0, np.float32), np.full(k, -1.0, np.float32)
        _build(rewards.weigh_terms, build)(raw, weights, np.float32(0.02), weighted, reward)
        assert np.signbit(weighted).all() and not np.signbit(reward).any()


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("n", SIZES)
def test_add_episode_sums_match_numpy(build, n):
    rng = rng_for(n, 42)
    weighted, reward = f32(rng.normal(size=(n, 9))), f32(rng.normal(size=n))
    sums, ret = rng.normal(size=(n, 9)), rng.normal(size=n)
    expected_sums = sums + weighted * 0.02  # float32 product (NumPy 2: a weak Python float)
    expected_ret = ret + reward
    columns = np.full((9, n), np.nan, np.float32)
    _build(rewards.add_episode_sums, build)(weighted, np.float32(0.02), sums, ret, reward, columns)
    assert_array_equal(columns, weighted.T)
    assert sums.tobytes() == expected_sums.tobytes()
    assert ret.tobytes() == expected_ret.tobytes()


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("n", SIZES)
def test_any_fired_is_any_over_the_active_terms(build, n):
    rng = rng_for(n, 43)
    for k in (0, 1, 3):
        fired = rng.random((k, n)) < 0.2
        for active in (np.ones(k, bool), rng.random(k) < 0.5):
            got, out = fired.copy(), np.ones(n, bool)
            _build(terminations.any_fired, build)(got, active, out)
            assert_array_equal(out, fired[active].any(axis=0))
            assert_array_equal(got, fired & active[:, None])  # an inactive term logs nothing


def _end_step_numpy(any_term, nonfinite, term_reward, past_end, held, length, offset, limit):
    """The NumPy of `TrackingVecEnv.step` before the kernel."""
    terminated = any_term | nonfinite
    reward = term_reward.copy()
    reward[nonfinite] = 0.0
    length = length + 1
    truncated = (length + offset >= limit) & ~terminated
    clip_end = past_end.copy()
    for a in (reward, terminated, truncated, clip_end):
        a[held] = 0
    done = terminated | truncated
    return terminated, truncated, reward, clip_end, done, clip_end & ~done, length


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("n", SIZES)
def test_end_step_matches_numpy(build, n):
    rng = rng_for(n, 44)
    flags = [rng.random(n) < p for p in (0.2, 0.1, 0.1, 0.2)]  # any_term nonfinite end held
    term_reward = f32(rng.normal(size=n))
    length = rng.integers(0, 30, n).astype(np.int32)
    offset = rng.integers(0, 5, n).astype(np.int32)
    expected = _end_step_numpy(flags[0], flags[1], term_reward, flags[2], flags[3], length,
                               offset, 28)  # fmt: skip
    outs = [np.empty(n, bool), np.empty(n, bool), np.empty(n, np.float32)]
    outs += [np.empty(n, bool) for _ in range(3)]
    counts = _build(end_step, build)(
        flags[0], flags[1], term_reward, flags[2], flags[3], length, offset, 28, *outs
    )
    for got, want in zip([*outs, length], expected, strict=True):
        assert got.tobytes() == want.tobytes()
    assert counts == (expected[4].sum(), expected[5].sum())
    if n > 100:  # every case was exercised
        assert expected[1].any() and expected[5].any() and expected[0].any()


@pytest.mark.parametrize("build", BUILDS)
def test_joint_targets_refuse_what_float32_or_mujoco_cannot_hold(build):
    """float64 actions beyond float32's range, and targets past MuJoCo's mjMAXVAL (1e10 rad),
    which MuJoCo would replace by zero controls, count as bad rows; nothing is written."""
    from gym_motion.kernels.actions import MAX_TARGET

    n, j = 5, 29
    scale = np.full(j, 0.5, np.float32)
    actions = np.zeros((n, j), np.float64)
    actions[0, 2] = 1e300  # finite float64, inf as float32
    actions[2, 5] = -2.1 * MAX_TARGET  # target -1.05e10
    actions[3, 5] = 1.9 * MAX_TARGET  # target 0.95e10: accepted
    action, last, obs, targets = (np.full((n, j), 7.0, np.float32) for _ in range(4))
    zeros = np.zeros((n, j), np.float32)
    args = (scale, zeros, np.zeros(j, np.float32), zeros)
    kernel = _build(joint_targets, build)
    assert kernel(*args, action, last, obs, targets, actions, np.zeros(n, bool)) == 2
    for a in (action, last, obs, targets):
        assert (a == 7.0).all()
    actions[[0, 2]] = 0.0
    assert kernel(*args, action, last, obs, targets, actions, np.zeros(n, bool)) == 0
    assert np.isfinite(targets).all() and targets[3, 5] == np.float32(0.95 * MAX_TARGET)
