"""Termination kernels (docs/task.md section 8) against the float64 oracle."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from gym_motion.kernels import terminations as k

from . import oracle as o
from .checks import ANCHOR, N_BODIES, SIZES, SUBSET, call_unmutated, f32, perturb_quat, rng_for

# Outcomes are only compared where the oracle's value is further than this from the threshold:
# inside the band float32 rounding of the inputs may legitimately decide either way.
BAND = 1e-5


def _assert_decisions(out, value, threshold):
    assert out.dtype == np.bool_
    decided = np.abs(value - threshold) > BAND
    assert decided.mean() > 0.9
    assert_array_equal(out[decided], value[decided] > threshold)


@pytest.mark.parametrize("n", SIZES)
def test_height_error_exceeds_matches_oracle_on_body_subset(n):
    rng = rng_for(n, 11)
    ref = f32(rng.uniform(-1.0, 1.0, (n, N_BODIES, 3)))
    robot = f32(ref + rng.uniform(-0.3, 0.3, ref.shape))
    for ids in (SUBSET, np.array([ANCHOR], np.int64)):
        expected = o.height_error(ref, robot, ids)
        ref_p, robot_p = ref.copy(), robot.copy()
        others = np.setdiff1d(np.arange(N_BODIES), ids)
        # Unselected bodies far off in height, and x/y errors, must not matter.
        robot_p[:, others, 2] += 10.0
        robot_p[:, :, :2] += 5.0
        out = np.ones(n, np.bool_) ^ True
        call_unmutated(k.height_error_exceeds, ref_p, robot_p, ids, 0.25, out)
        _assert_decisions(out, expected, 0.25)
    if n > 1:
        assert 0 < out.sum() < n


@pytest.mark.parametrize("n", SIZES)
def test_horizontal_error_exceeds_matches_oracle_on_body_subset(n):
    rng = rng_for(n, 13)
    ref = f32(rng.uniform(-1.0, 1.0, (n, N_BODIES, 3)))
    robot = f32(ref + rng.uniform(-0.4, 0.4, ref.shape))
    for ids in (SUBSET, np.array([ANCHOR], np.int64)):
        expected = o.horizontal_error(ref, robot, ids)
        ref_p, robot_p = ref.copy(), robot.copy()
        others = np.setdiff1d(np.arange(N_BODIES), ids)
        # Unselected bodies far off, and height errors, must not matter.
        robot_p[:, others, :2] += 10.0
        robot_p[:, :, 2] += 5.0
        out = np.zeros(n, np.bool_)
        since = np.full(n, 7, np.int32)
        call_unmutated(k.horizontal_error_exceeds, ref_p, robot_p, ids, 0.3, since, 0, out)
        _assert_decisions(out, expected, 0.3)
        # rows perturbed fewer than `grace` control steps ago never fire; the others as before
        since = rng.integers(0, 10, n).astype(np.int32)
        graced = np.ones(n, np.bool_)
        call_unmutated(k.horizontal_error_exceeds, ref_p, robot_p, ids, 0.3, since, 5, graced)
        assert not graced[since < 5].any()
        assert_array_equal(graced[since >= 5], out[since >= 5])
    if n > 1:
        assert 0 < out.sum() < n


@pytest.mark.parametrize("n", SIZES)
def test_gravity_z_error_exceeds_matches_oracle_and_ignores_quaternion_sign(n):
    rng = rng_for(n, 12)
    ref = o.random_unit_quat(rng, (n, N_BODIES))
    robot = perturb_quat(rng, ref, 2.0)
    out = np.zeros(n, np.bool_)
    # Anchor slices of (N, B, 4) arrays, as the termination manager passes them.
    call_unmutated(k.gravity_z_error_exceeds, ref[:, ANCHOR], robot[:, ANCHOR], 0.8, out)
    value = o.gravity_z_error(ref[:, ANCHOR], robot[:, ANCHOR])
    _assert_decisions(out, value, 0.8)
    if n > 7:
        assert 0 < out.sum() < n

    ref_f, _ = o.flip_random_rows(rng, ref)
    robot_f, _ = o.flip_random_rows(rng, robot)
    out_f = np.zeros(n, np.bool_)
    k.gravity_z_error_exceeds(ref_f[:, ANCHOR], robot_f[:, ANCHOR], 0.8, out_f)
    assert_array_equal(out_f, out)

    # Identical orientation up to sign never terminates, even at threshold 0.
    k.gravity_z_error_exceeds(ref[:, ANCHOR], ref_f[:, ANCHOR], 0.0, out_f)
    assert not out_f.any()
