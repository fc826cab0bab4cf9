"""Re-anchoring and gathering kernels (docs/task.md section 4) against the float64 oracle."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from gym_motion.kernels.command import gather_frames, gather_rows, reanchor_bodies

from . import oracle as o
from .checks import ANCHOR, N_BODIES, SIZES, call_unmutated, f32, rng_for

EPS32 = float(np.finfo(np.float32).eps)


def _state(rng, n):
    ref_pos = f32(rng.uniform(-1.0, 1.0, (n, N_BODIES, 3)) + [0.0, 0.0, 0.8])
    ref_quat = o.random_unit_quat(rng, (n, N_BODIES))
    robot_pos = f32(rng.uniform(-2.0, 2.0, (n, 3)))
    robot_quat = o.random_unit_quat(rng, (n,))
    return ref_pos, ref_quat, robot_pos, robot_quat


def _run(ref_pos, ref_quat, robot_pos, robot_quat):
    n = ref_pos.shape[0]
    out_pos = np.full((n, N_BODIES, 3), np.nan, np.float32)
    out_quat = np.full((n, N_BODIES, 4), np.nan, np.float32)
    call_unmutated(
        reanchor_bodies, ref_pos, ref_quat, ANCHOR, robot_pos, robot_quat,
        np.arange(ref_pos.shape[0]), out_pos, out_quat, written=(-1, -2),
    )  # fmt: skip
    return out_pos, out_quat


def _yaw_conditioning(ref_quat, robot_quat):
    """sqrt(r00^2 + r10^2) of R_robot R_ref_anchor^T: the heading's atan2 denominator.

    The kernel forms this relative rotation from a float32 quaternion product, so its heading
    carries ~eps32 / conditioning of absolute error (a genuine float32 limit near pitch +/-90
    deg, where the heading is undefined)."""
    m = o.quat_to_rotmat(robot_quat) @ np.swapaxes(o.quat_to_rotmat(ref_quat[:, ANCHOR]), -1, -2)
    return np.hypot(m[:, 0, 0], m[:, 1, 0])


@pytest.mark.parametrize("n", SIZES)
def test_reanchor_bodies_matches_oracle(n):
    rng = rng_for(n, 31)
    ref_pos, ref_quat, robot_pos, robot_quat = _state(rng, n)
    out_pos, out_quat = _run(ref_pos, ref_quat, robot_pos, robot_quat)
    exp_pos, exp_quat, _ = o.reanchor_bodies(ref_pos, ref_quat, ANCHOR, robot_pos, robot_quat)

    # Error model (measured over 12000 random envs: k <= 2.6, quaternions <= 1.2 eps/cond):
    # float32 rounding of the output plus a heading error of k eps32 / cond rad acting on the
    # body's lever arm |p - p_anchor|.
    cond = _yaw_conditioning(ref_quat, robot_quat)[:, None]
    lever = np.linalg.norm(ref_pos.astype(np.float64) - ref_pos[:, ANCHOR : ANCHOR + 1], axis=-1)
    err = np.linalg.norm(out_pos - exp_pos, axis=-1)
    assert np.all(err <= 2 * EPS32 * np.linalg.norm(exp_pos, axis=-1) + 4 * EPS32 * lever / cond)

    # dq's sign is a convention (the heading's half angle wraps at +/-pi): align per env, so
    # every body of an env must share the same sign.
    aligned = o.align_sign(out_quat.astype(np.float64), exp_quat, axis=(-2, -1))
    assert np.all(np.abs(aligned - exp_quat) <= EPS32 * (2 + 2 / cond[..., None]))


@pytest.mark.parametrize("n", SIZES)
def test_reanchor_bodies_puts_anchor_exactly_at_robot_xy_and_reference_height(n):
    rng = rng_for(n, 32)
    ref_pos, ref_quat, robot_pos, robot_quat = _state(rng, n)
    out_pos, _ = _run(ref_pos, ref_quat, robot_pos, robot_quat)
    assert_array_equal(out_pos[:, ANCHOR, :2], robot_pos[:, :2])
    assert_array_equal(out_pos[:, ANCHOR, 2], ref_pos[:, ANCHOR, 2])


@pytest.mark.parametrize("n", SIZES)
def test_reanchor_bodies_preserves_relative_geometry_and_applies_pure_yaw(n):
    rng = rng_for(n, 33)
    ref_pos, ref_quat, robot_pos, robot_quat = _state(rng, n)
    out_pos, out_quat = _run(ref_pos, ref_quat, robot_pos, robot_quat)
    p_out, p_ref = out_pos.astype(np.float64), ref_pos.astype(np.float64)

    def pairwise(p):
        return np.linalg.norm(p[:, :, None] - p[:, None, :], axis=-1)

    assert_allclose(pairwise(p_out), pairwise(p_ref), rtol=2e-6, atol=2e-7 * 8)
    # Heights relative to the anchor are unchanged (rotation about world z).
    assert_allclose(
        p_out[..., 2] - p_out[:, ANCHOR : ANCHOR + 1, 2],
        p_ref[..., 2] - p_ref[:, ANCHOR : ANCHOR + 1, 2],
        rtol=0, atol=2e-7 * 8,
    )  # fmt: skip
    # The applied rotation dq = out_quat * ref_quat^-1 is the same pure yaw for every body and
    # is the one that moved the positions.
    dq = o.quat_mul(out_quat, o.conj(o.normalize(ref_quat)))
    assert np.all(np.abs(dq[..., 1:3]) <= 2 * EPS32)
    assert_allclose(np.linalg.norm(dq, axis=-1), 1.0, atol=4 * EPS32)
    yaw = 2.0 * np.arctan2(dq[..., 3], dq[..., 0])
    spread = np.angle(np.exp(1j * (yaw - yaw[:, :1])))
    assert np.all(np.abs(spread) <= 4 * EPS32)
    rel_out = p_out - p_out[:, ANCHOR : ANCHOR + 1]
    rel_ref = p_ref - p_ref[:, ANCHOR : ANCHOR + 1]
    rotated = np.einsum("nij,nbj->nbi", o.rot_z(yaw[:, 0]), rel_ref)
    # out_quat's float32 rounding leaves ~eps32 of heading uncertainty on lever arms <= 3.5 m.
    assert_allclose(rel_out, rotated, rtol=0, atol=4 * EPS32 * 4 + 2 * EPS32 * 3.5)
    # ... and it is the heading of q_robot * q_ref_anchor^-1.
    _, _, yaw_oracle = o.reanchor_bodies(ref_pos, ref_quat, ANCHOR, robot_pos, robot_quat)
    cond = _yaw_conditioning(ref_quat, robot_quat)
    err = np.angle(np.exp(1j * (yaw[:, 0] - yaw_oracle)))
    assert np.all(np.abs(err) <= 4 * EPS32 / cond)


@pytest.mark.parametrize("n", SIZES)
def test_reanchor_bodies_ignores_quaternion_sign_of_anchors(n):
    rng = rng_for(n, 34)
    ref_pos, ref_quat, robot_pos, robot_quat = _state(rng, n)
    out_pos, out_quat = _run(ref_pos, ref_quat, robot_pos, robot_quat)
    ref_f, flipped = o.flip_random_rows(rng, ref_quat)
    robot_f, _ = o.flip_random_rows(rng, robot_quat)
    pos_f, quat_f = _run(ref_pos, ref_f, robot_pos, robot_f)
    assert_array_equal(pos_f, out_pos)
    sign = np.where(flipped, -1.0, 1.0).astype(np.float32)[..., None]
    assert_array_equal(quat_f, out_quat * sign)


@pytest.mark.parametrize("n", SIZES)
def test_reanchor_bodies_is_identity_when_robot_anchor_matches_reference_anchor(n):
    rng = rng_for(n, 35)
    ref_pos, ref_quat, _, _ = _state(rng, n)
    out_pos, out_quat = _run(
        ref_pos, ref_quat, ref_pos[:, ANCHOR].copy(), ref_quat[:, ANCHOR].copy()
    )
    assert_allclose(out_pos, ref_pos, rtol=0, atol=2e-7 * 8)
    assert_allclose(out_quat, ref_quat, rtol=0, atol=4 * EPS32)


@pytest.mark.parametrize("n", SIZES)
def test_gather_frames_equals_fancy_indexing(n):
    rng = rng_for(n, 36)
    src = f32(rng.standard_normal((50, 20, 4)))
    rows = rng.integers(0, 50, n).astype(np.int64)
    rows[: min(n, 3)] = 49  # repeated rows and the last frame
    body_ids = np.array([0, 5, 2, 19, 7, 11], np.int64)
    out = np.full((n, body_ids.size, 4), np.nan, np.float32)
    every = np.arange(n, dtype=np.int64)
    call_unmutated(gather_frames, src, rows, body_ids, every, out)
    assert out.tobytes() == src[rows][:, body_ids].tobytes()
    out3 = np.full((n, 20, 3), np.nan, np.float32)
    src3 = f32(rng.standard_normal((50, 20, 3)))
    call_unmutated(gather_frames, src3, rows, np.arange(20, dtype=np.int64), every, out3)
    assert out3.tobytes() == src3[rows].tobytes()
    some = every[::3]  # only these rows are written; the others keep their NaN
    out4 = np.full((n, body_ids.size, 4), np.nan, np.float32)
    call_unmutated(gather_frames, src, rows, body_ids, some, out4)
    assert out4[some].tobytes() == src[rows[some]][:, body_ids].tobytes()
    assert np.isnan(np.delete(out4, some, axis=0)).all()


@pytest.mark.parametrize("n", SIZES)
def test_gather_rows_equals_fancy_indexing(n):
    rng = rng_for(n, 37)
    src = f32(rng.standard_normal((50, 29)))
    rows = rng.integers(0, 50, n).astype(np.int64)
    rows[: min(n, 2)] = 0
    out = np.full((n, 29), np.nan, np.float32)
    call_unmutated(gather_rows, src, rows, np.arange(n, dtype=np.int64), out)
    assert out.tobytes() == src[rows].tobytes()
    some = np.arange(n, dtype=np.int64)[1::2]
    out2 = np.full((n, 29), np.nan, np.float32)
    call_unmutated(gather_rows, src, rows, some, out2)
    assert out2[some].tobytes() == src[rows[some]].tobytes()
    assert np.isnan(np.delete(out2, some, axis=0)).all()


@pytest.mark.parametrize("n", SIZES)
def test_reanchor_bodies_on_reset_rows_leaves_other_rows_untouched(n):
    rng = rng_for(n, 38)
    ref_pos, ref_quat, robot_pos, robot_quat = _state(rng, n)
    full_pos, full_quat = _run(ref_pos, ref_quat, robot_pos, robot_quat)
    some = np.arange(n, dtype=np.int64)[::2]
    out_pos = np.full((n, N_BODIES, 3), np.nan, np.float32)
    out_quat = np.full((n, N_BODIES, 4), np.nan, np.float32)
    call_unmutated(
        reanchor_bodies, ref_pos, ref_quat, ANCHOR, robot_pos, robot_quat, some,
        out_pos, out_quat, written=(-1, -2),
    )  # fmt: skip
    assert out_pos[some].tobytes() == full_pos[some].tobytes()
    assert out_quat[some].tobytes() == full_quat[some].tobytes()
    assert np.isnan(np.delete(out_pos, some, axis=0)).all()
    assert np.isnan(np.delete(out_quat, some, axis=0)).all()
