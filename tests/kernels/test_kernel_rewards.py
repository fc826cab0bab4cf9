"""Reward kernels (docs/task.md section 7) against the float64 oracle."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from gym_motion.kernels import rewards as k

from . import oracle as o
from .checks import ANCHOR, F32, N_BODIES, SIZES, SUBSET, call_unmutated, f32, perturb_quat, rng_for


def _assert_gaussian(out: np.ndarray, sq_err: np.ndarray, std: float) -> None:
    """exp(-e/std^2) agrees directly and, well conditioned for large e, in the log domain."""
    assert out.dtype == np.float32
    assert_allclose(out, o.gaussian(sq_err, std), **F32)
    # -std^2 log(out) recovers the (mean) squared error with float32 relative accuracy even
    # where exp is tiny; the absolute part covers float32 rounding of out near 1.
    assert_allclose(
        -(std**2) * np.log(out.astype(np.float64)), sq_err, rtol=2e-6, atol=2e-7 * std**2
    )


def _bodies(rng, n, pos_noise):
    ref = f32(rng.uniform(-1.0, 1.0, (n, N_BODIES, 3)))
    robot = f32(ref + rng.normal(0.0, pos_noise, ref.shape))
    return ref, robot


@pytest.mark.parametrize("n", SIZES)
def test_anchor_pos_exp_matches_oracle(n):
    rng = rng_for(n, 1)
    ref, robot = _bodies(rng, n, 0.2)
    out = np.full(n, np.nan, np.float32)
    # Anchor slices of (N, B, 3) arrays, as the reward manager passes them (non-contiguous).
    call_unmutated(k.anchor_pos_exp, ref[:, ANCHOR], robot[:, ANCHOR], 0.3, out)
    _assert_gaussian(out, o.anchor_pos_sq(ref[:, ANCHOR], robot[:, ANCHOR]), 0.3)


@pytest.mark.parametrize("n", SIZES)
def test_anchor_ori_exp_matches_oracle_and_ignores_quaternion_sign(n):
    rng = rng_for(n, 2)
    ref = o.random_unit_quat(rng, (n, N_BODIES))
    robot = perturb_quat(rng, ref, 1.0)
    out = np.full(n, np.nan, np.float32)
    call_unmutated(k.anchor_ori_exp, ref[:, ANCHOR], robot[:, ANCHOR], 0.4, out)
    _assert_gaussian(out, o.anchor_ori_sq(ref[:, ANCHOR], robot[:, ANCHOR]), 0.4)

    ref_f, _ = o.flip_random_rows(rng, ref)
    robot_f, _ = o.flip_random_rows(rng, robot)
    out_f = np.full(n, np.nan, np.float32)
    k.anchor_ori_exp(ref_f[:, ANCHOR], robot_f[:, ANCHOR], 0.4, out_f)
    assert_array_equal(out_f, out)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("std", [0.3, 1.0, 3.14])  # body position, linear, angular velocity
def test_body_pos_exp_matches_oracle_on_non_contiguous_body_subset(n, std):
    rng = rng_for(n, 3)
    ref, robot = _bodies(rng, n, 0.5 * std)
    expected = o.body_pos_sq(ref, robot, SUBSET)
    # Bodies outside the subset must not be read: poison them.
    others = np.setdiff1d(np.arange(N_BODIES), SUBSET)
    ref[:, others] = np.nan
    robot[:, others] = np.inf
    out = np.full(n, np.nan, np.float32)
    call_unmutated(k.body_pos_exp, ref, robot, SUBSET, std, out)
    _assert_gaussian(out, expected, std)

    all_ids = np.arange(N_BODIES, dtype=np.int64)
    ref2, robot2 = _bodies(rng, n, 0.5 * std)
    call_unmutated(k.body_pos_exp, ref2, robot2, all_ids, std, out)
    _assert_gaussian(out, o.body_pos_sq(ref2, robot2, all_ids), std)


@pytest.mark.parametrize("n", SIZES)
def test_body_ori_exp_matches_oracle_and_ignores_quaternion_sign(n):
    rng = rng_for(n, 4)
    ref = o.random_unit_quat(rng, (n, N_BODIES))
    robot = perturb_quat(rng, ref, 1.0)
    for ids in (SUBSET, np.arange(N_BODIES, dtype=np.int64)):
        out = np.full(n, np.nan, np.float32)
        call_unmutated(k.body_ori_exp, ref, robot, ids, 0.4, out)
        _assert_gaussian(out, o.body_ori_sq(ref, robot, ids), 0.4)

        ref_f, _ = o.flip_random_rows(rng, ref)
        robot_f, _ = o.flip_random_rows(rng, robot)
        out_f = np.full(n, np.nan, np.float32)
        k.body_ori_exp(ref_f, robot_f, ids, 0.4, out_f)
        assert_array_equal(out_f, out)


@pytest.mark.parametrize("n", SIZES)
def test_body_ori_exp_ignores_bodies_outside_subset(n):
    rng = rng_for(n, 5)
    ref = o.random_unit_quat(rng, (n, N_BODIES))
    robot = perturb_quat(rng, ref, 1.0)
    expected = o.body_ori_sq(ref, robot, SUBSET)
    others = np.setdiff1d(np.arange(N_BODIES), SUBSET)
    ref[:, others] = np.nan
    robot[:, others] = np.nan
    out = np.full(n, np.nan, np.float32)
    k.body_ori_exp(ref, robot, SUBSET, 0.4, out)
    _assert_gaussian(out, expected, 0.4)


@pytest.mark.parametrize("n", SIZES)
def test_tracking_rewards_are_one_when_robot_equals_reference(n):
    rng = rng_for(n, 6)
    pos = f32(rng.uniform(-1.0, 1.0, (n, N_BODIES, 3)))
    quat = o.random_unit_quat(rng, (n, N_BODIES))
    quat_f, _ = o.flip_random_rows(rng, quat)
    ids = np.arange(N_BODIES, dtype=np.int64)
    out = np.full(n, np.nan, np.float32)
    k.anchor_pos_exp(pos[:, ANCHOR], pos[:, ANCHOR], 0.3, out)
    assert_array_equal(out, 1.0)
    k.anchor_ori_exp(quat[:, ANCHOR], quat_f[:, ANCHOR], 0.4, out)
    assert_array_equal(out, 1.0)
    k.body_pos_exp(pos, pos, ids, 0.3, out)
    assert_array_equal(out, 1.0)
    k.body_ori_exp(quat, quat_f, ids, 0.4, out)
    assert_array_equal(out, 1.0)


@pytest.mark.parametrize("n", SIZES)
def test_action_rate_l2_matches_oracle(n):
    rng = rng_for(n, 7)
    a = f32(rng.uniform(-2.0, 2.0, (n, 29)))
    last = f32(rng.uniform(-2.0, 2.0, (n, 29)))
    out = np.full(n, np.nan, np.float32)
    call_unmutated(k.action_rate_l2, a, last, out)
    assert_allclose(out, o.action_rate_l2(a, last), **F32)
    k.action_rate_l2(a, a, out)
    assert_array_equal(out, 0.0)


@pytest.mark.parametrize("n", SIZES)
def test_joint_limit_violation_matches_oracle_and_is_zero_inside_limits(n):
    rng = rng_for(n, 8)
    lower = rng.uniform(-2.5, -0.1, 29)
    upper = lower + rng.uniform(0.2, 3.0, 29)
    limits = f32(np.stack([lower, upper], -1))
    q = f32(rng.uniform(lower - 0.5, upper + 0.5, (n, 29)))
    out = np.full(n, np.nan, np.float32)
    call_unmutated(k.joint_limit_violation, q, limits, out)
    expected = o.joint_limit_violation(q, limits)
    assert np.any(expected > 0)
    assert_allclose(out, expected, **F32)

    inside = f32(np.clip(q, limits[:, 0], limits[:, 1]))
    k.joint_limit_violation(inside, limits, out)
    assert_array_equal(out, 0.0)
