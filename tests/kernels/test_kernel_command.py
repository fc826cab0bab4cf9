"""The motion command kernel (docs/task.md section 4): advancing, gathering and re-anchoring
against fancy indexing and the float64 oracle."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from gym_motion.kernels.command import observed_reference, reference_step

from . import oracle as o
from .checks import ANCHOR, N_BODIES, SIZES, call_unmutated, f32, rng_for

EPS32 = float(np.finfo(np.float32).eps)


def _state(rng, n):
    ref_pos = f32(rng.uniform(-1.0, 1.0, (n, N_BODIES, 3)) + [0.0, 0.0, 0.8])
    ref_quat = o.random_unit_quat(rng, (n, N_BODIES))
    robot_pos = f32(rng.uniform(-2.0, 2.0, (n, 3)))
    robot_quat = o.random_unit_quat(rng, (n,))
    return ref_pos, ref_quat, robot_pos, robot_quat


class Lib:
    """A motion library as `reference_step` takes it: C clips of `lengths` frames each."""

    def __init__(self, rng, lengths, n_bodies=N_BODIES, n_joints=29):
        f = int(sum(lengths))
        self.lengths = np.asarray(lengths, np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)
        self.pos = f32(rng.standard_normal((f, n_bodies, 3)))
        self.quat = o.random_unit_quat(rng, (f, n_bodies))
        self.lin_vel = f32(rng.standard_normal((f, n_bodies, 3)))
        self.ang_vel = f32(rng.standard_normal((f, n_bodies, 3)))
        self.joint_pos = f32(rng.standard_normal((f, n_joints)))
        self.joint_vel = f32(rng.standard_normal((f, n_joints)))


def _step(lib, clip_ids, frames, body_ids, robot_pos, robot_quat, env_ids, advance=False,
          outs=None):  # fmt: skip
    """Run `reference_step` (inputs checked unmutated); returns (clip_end, ref arrays...,
    out_pos, out_quat), outputs NaN-filled (False) where not written."""
    n, nb, nj = clip_ids.shape[0], body_ids.shape[0], lib.joint_pos.shape[1]
    if outs is None:
        outs = [np.zeros(n, bool)] + [
            np.full(shape, np.nan, np.float32)
            for shape in ((n, nb, 3), (n, nb, 4), (n, nb, 3), (n, nb, 3), (n, nj), (n, nj),
                          (n, nb, 3), (n, nb, 4))
        ]  # fmt: skip
    clip_end, *ref = outs
    call_unmutated(
        reference_step, lib.starts, lib.lengths, clip_ids, frames, advance, clip_end,
        lib.pos, lib.quat, lib.lin_vel, lib.ang_vel, lib.joint_pos, lib.joint_vel, body_ids,
        ANCHOR, robot_pos, robot_quat, env_ids, *ref,
        written=(3, 5, *range(-8, 0)),
    )  # fmt: skip
    return outs


def _run(ref_pos, ref_quat, robot_pos, robot_quat, env_ids=None):
    """Re-anchor the reference (N, B, .) of each env: one library frame per env."""
    n = ref_pos.shape[0]
    lib = Lib(np.random.default_rng(0), [n + 1])
    lib.pos[:n], lib.quat[:n] = ref_pos, ref_quat
    ids = np.arange(n, dtype=np.int64) if env_ids is None else env_ids
    *_, out_pos, out_quat = _step(
        lib, np.zeros(n, np.int32), np.arange(n, dtype=np.int32), np.arange(N_BODIES),
        robot_pos, robot_quat, ids,
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
def test_reference_step_gathers_the_frame_of_each_row(n):
    rng = rng_for(n, 36)
    lib = Lib(rng, [7, 40, 3], n_bodies=20)
    clip_ids = rng.integers(0, 3, n).astype(np.int32)
    frames = (rng.random(n) * (lib.lengths[clip_ids] - 1)).astype(np.int32)
    frames[: min(n, 2)] = lib.lengths[clip_ids[: min(n, 2)]] - 1  # the last frames
    body_ids = np.array([0, 5, 2, 19, 7, 11], np.int64)
    robot_pos, robot_quat = f32(rng.standard_normal((n, 3))), o.random_unit_quat(rng, (n,))
    every = np.arange(n, dtype=np.int64)
    clip_end, pos, quat, lin, ang, jp, jv, *_ = _step(
        lib, clip_ids, frames, body_ids, robot_pos, robot_quat, every
    )
    rows = lib.starts[clip_ids] + frames
    for got, src in ((pos, lib.pos), (quat, lib.quat), (lin, lib.lin_vel), (ang, lib.ang_vel)):
        assert got.tobytes() == src[rows][:, body_ids].tobytes()
    assert jp.tobytes() == lib.joint_pos[rows].tobytes()
    assert jv.tobytes() == lib.joint_vel[rows].tobytes()
    assert not clip_end.any()  # not advanced: untouched

    some = every[::3]  # only these rows are written; the others keep their NaN
    outs = _step(lib, clip_ids, frames, body_ids, robot_pos, robot_quat, some)
    for got, full in zip(outs[1:], (pos, quat, lin, ang, jp, jv), strict=False):
        assert got[some].tobytes() == full[some].tobytes()
        assert np.isnan(np.delete(got, some, axis=0)).all()


@pytest.mark.parametrize("n", SIZES)
def test_reference_step_advances_one_frame_and_holds_the_last(n):
    rng = rng_for(n, 37)
    lib = Lib(rng, [5, 9])
    clip_ids = rng.integers(0, 2, n).astype(np.int32)
    last = (lib.lengths[clip_ids] - 1).astype(np.int32)
    frames = np.minimum(rng.integers(0, 10, n), last).astype(np.int32)
    start = frames.copy()
    robot_pos, robot_quat = f32(rng.standard_normal((n, 3))), o.random_unit_quat(rng, (n,))
    every = np.arange(n, dtype=np.int64)
    clip_end, pos, *_ = _step(
        lib, clip_ids, frames, np.arange(N_BODIES), robot_pos, robot_quat, every, advance=True
    )
    assert_array_equal(clip_end, start + 1 > last)
    assert_array_equal(frames, np.minimum(start + 1, last))
    assert pos.tobytes() == lib.pos[lib.starts[clip_ids] + frames].tobytes()


@pytest.mark.parametrize("n", SIZES)
def test_reanchor_bodies_on_reset_rows_leaves_other_rows_untouched(n):
    rng = rng_for(n, 38)
    ref_pos, ref_quat, robot_pos, robot_quat = _state(rng, n)
    full_pos, full_quat = _run(ref_pos, ref_quat, robot_pos, robot_quat)
    some = np.arange(n, dtype=np.int64)[::2]
    out_pos, out_quat = _run(ref_pos, ref_quat, robot_pos, robot_quat, some)
    assert out_pos[some].tobytes() == full_pos[some].tobytes()
    assert out_quat[some].tobytes() == full_quat[some].tobytes()
    assert np.isnan(np.delete(out_pos, some, axis=0)).all()
    assert np.isnan(np.delete(out_quat, some, axis=0)).all()


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("offset", [0, 1])
def test_observed_reference_gathers_the_frame_offset_frames_on_held_at_the_clip_end(n, offset):
    """Rows `env_ids` get library frame min(frame + offset, last) of their clip, by fancy
    indexing; other rows are not written."""
    rng = rng_for(n, 77 + offset)
    lib = Lib(rng, [5, 1, 9], n_bodies=20)
    body_ids = np.array([0, 3, 4, 7, 8, 10, 11, 12, 13, 15, 16, 17, 18, 19], np.int64)
    clip_ids = rng.integers(0, 3, n).astype(np.int32)
    frames = (rng.random(n) * lib.lengths[clip_ids]).astype(np.int32)
    frames[0] = lib.lengths[clip_ids[0]] - 1  # one row on its clip's last frame
    env_ids = np.flatnonzero(rng.random(n) < 0.7) if n > 1 else np.array([0])
    nb, nj = body_ids.shape[0], lib.joint_pos.shape[1]
    shapes = ((n, nb, 3), (n, nb, 4), (n, nb, 3), (n, nb, 3), (n, nj), (n, nj))
    outs = [np.full(s, np.nan, np.float32) for s in shapes]
    call_unmutated(
        observed_reference, lib.starts, lib.lengths, clip_ids, frames, offset,
        lib.pos, lib.quat, lib.lin_vel, lib.ang_vel, lib.joint_pos, lib.joint_vel, body_ids,
        env_ids, *outs, written=tuple(range(-6, 0)),
    )  # fmt: skip
    c = clip_ids[env_ids]
    rows = lib.starts[c] + np.minimum(frames[env_ids] + offset, lib.lengths[c] - 1)
    for got, src in zip(outs[:4], (lib.pos, lib.quat, lib.lin_vel, lib.ang_vel), strict=True):
        assert_array_equal(got[env_ids], src[rows][:, body_ids])
    assert_array_equal(outs[4][env_ids], lib.joint_pos[rows])
    assert_array_equal(outs[5][env_ids], lib.joint_vel[rows])
    others = np.setdiff1d(np.arange(n), env_ids)
    assert np.isnan(outs[0][others]).all()
