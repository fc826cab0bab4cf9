"""tracking_errors (per-step metrics) against the float64 oracle."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from gym_motion.kernels.metrics import TRACKING_ERRORS, tracking_errors

from . import oracle as o
from .checks import ANCHOR, F32, N_BODIES, ROOT, SIZES, call_unmutated, f32, perturb_quat, rng_for

NJ = 29


def _reference(rng, n):
    return {
        "ref_pos": f32(rng.uniform(-1.0, 1.0, (n, N_BODIES, 3))),
        "ref_quat": o.random_unit_quat(rng, (n, N_BODIES)),
        "ref_rel_pos": f32(rng.uniform(-1.0, 1.0, (n, N_BODIES, 3))),
        "ref_rel_quat": o.random_unit_quat(rng, (n, N_BODIES)),
        "ref_jp": f32(rng.uniform(-2.0, 2.0, (n, NJ))),
        "ref_jv": f32(rng.uniform(-5.0, 5.0, (n, NJ))),
    }


def _run(r, pos, quat, jp, jv):
    n = pos.shape[0]
    out = np.full((n, len(TRACKING_ERRORS)), np.nan, np.float32)
    sums = np.random.default_rng(n).normal(size=out.shape)
    before = sums.copy()
    call_unmutated(
        tracking_errors, r["ref_pos"], r["ref_quat"], r["ref_rel_pos"], r["ref_rel_quat"],
        pos, quat, ANCHOR, ROOT, r["ref_jp"], r["ref_jv"], jp, jv, out, sums, written=(-2, -1),
    )  # fmt: skip
    assert sums.tobytes() == (before + out).tobytes()  # the episode sums: + the float32 errors
    return out


def _oracle(r, pos, quat, jp, jv):
    return o.tracking_errors(
        r["ref_pos"], r["ref_quat"], r["ref_rel_pos"], r["ref_rel_quat"], pos, quat,
        ANCHOR, ROOT, r["ref_jp"], r["ref_jv"], jp, jv,
    )  # fmt: skip


@pytest.mark.parametrize("n", SIZES)
def test_tracking_errors_are_zero_when_robot_equals_reference(n):
    rng = rng_for(n, 51)
    r = _reference(rng, n)
    r["ref_rel_pos"], r["ref_rel_quat"] = r["ref_pos"], r["ref_quat"]
    quat_f, _ = o.flip_random_rows(rng, r["ref_quat"])
    out = _run(r, r["ref_pos"].copy(), quat_f, r["ref_jp"].copy(), r["ref_jv"].copy())
    rot = [TRACKING_ERRORS.index("anchor_rot"), TRACKING_ERRORS.index("body_rot")]
    exact = [c for c in range(len(TRACKING_ERRORS)) if c not in rot]
    assert_array_equal(out[:, exact], 0.0)
    # q_ref^-1 q evaluated in float32 leaves a vector part of ~1 ulp of the products (the
    # kernel's summation order does not cancel exactly), i.e. angles of a few 1e-8 rad; an
    # acos-based angle would give ~3e-4 here.
    assert np.all((out[:, rot] >= 0.0) & (out[:, rot] <= F32["atol"]))


@pytest.mark.parametrize("n", SIZES)
def test_tracking_errors_match_oracle_and_ignore_quaternion_sign(n):
    rng = rng_for(n, 52)
    r = _reference(rng, n)
    pos = f32(r["ref_pos"] + rng.normal(0.0, 0.1, r["ref_pos"].shape))
    quat = perturb_quat(rng, r["ref_rel_quat"], 1.0)
    quat[:, ANCHOR] = perturb_quat(rng, r["ref_quat"][:, ANCHOR], 1.0)
    jp = f32(r["ref_jp"] + rng.normal(0.0, 0.1, r["ref_jp"].shape))
    jv = f32(r["ref_jv"] + rng.normal(0.0, 1.0, r["ref_jv"].shape))
    out = _run(r, pos, quat, jp, jv)
    expected = _oracle(r, pos, quat, jp, jv)
    assert out.shape == (n, 8) and out.dtype == np.float32
    assert_allclose(out, expected, **F32)

    r_f = dict(r)
    r_f["ref_quat"], _ = o.flip_random_rows(rng, r["ref_quat"])
    r_f["ref_rel_quat"], _ = o.flip_random_rows(rng, r["ref_rel_quat"])
    quat_f, _ = o.flip_random_rows(rng, quat)
    assert_array_equal(_run(r_f, pos, quat_f, jp, jv), out)


@pytest.mark.parametrize("n", SIZES)
def test_tracking_errors_separate_world_relative_and_root_relative_position_errors(n):
    """A rigid world translation of the robot shows in anchor_pos and mpkpe, not root_mpkpe;
    body_pos compares against the re-anchored reference, not the recorded one."""
    rng = rng_for(n, 53)
    r = _reference(rng, n)
    shift = f32(rng.uniform(-1.0, 1.0, (n, 1, 3)))
    pos = f32(r["ref_pos"] + shift)
    out = _run(r, pos, r["ref_quat"].copy(), r["ref_jp"].copy(), r["ref_jv"].copy())
    expected = _oracle(r, pos, r["ref_quat"], r["ref_jp"], r["ref_jv"])
    assert_allclose(out, expected, **F32)
    norm = np.linalg.norm(shift[:, 0].astype(np.float64), axis=-1)
    col = {name: i for i, name in enumerate(TRACKING_ERRORS)}
    assert_allclose(out[:, col["anchor_pos"]], norm, rtol=2e-6, atol=4e-7)
    assert_allclose(out[:, col["mpkpe"]], norm, rtol=2e-6, atol=4e-7)
    assert np.all(out[:, col["root_mpkpe"]] <= 4e-7)
    assert_array_equal(out[:, [col["joint_pos"], col["joint_vel"]]], 0.0)
    assert np.all(out[:, col["anchor_rot"]] <= F32["atol"])  # float32 rounding, see above
