"""Observation kernels (docs/task.md section 5) against the float64 oracle, written into column
slices of a wider buffer as the observation manager does."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from gym_motion.kernels import observations as k
from gym_motion.managers.observation import NoiseColumns

from . import oracle as o
from .checks import ANCHOR, F32, N_BODIES, SIZES, call_unmutated, f32, rng_for

WIDTH = 300
EPS32 = float(np.finfo(np.float32).eps)


def _buffer(rng, n):
    """A (N, WIDTH) float32 buffer of random bits, and a bitwise copy to compare against."""
    buf = f32(rng.standard_normal((n, WIDTH)))
    return buf, buf.copy()


def _assert_only_slice_written(buf, before, lo, hi):
    assert_array_equal(buf[:, :lo], before[:, :lo])
    assert_array_equal(buf[:, hi:], before[:, hi:])
    assert buf[:, :lo].tobytes() == before[:, :lo].tobytes()
    assert buf[:, hi:].tobytes() == before[:, hi:].tobytes()


def _frame_and_bodies(rng, n, nb):
    frame_pos = f32(rng.uniform(-2.0, 2.0, (n, N_BODIES, 3)))
    frame_quat = o.random_unit_quat(rng, (n, N_BODIES))
    pos = f32(rng.uniform(-2.0, 2.0, (n, nb, 3)))
    quat = o.random_unit_quat(rng, (n, nb))
    return frame_pos, frame_quat, pos, quat


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("nb", [1, N_BODIES])
def test_pos_in_frame_matches_oracle_and_writes_only_its_column_slice(n, nb):
    rng = rng_for(n, 21 + nb)
    frame_pos, frame_quat, pos, _ = _frame_and_bodies(rng, n, nb)
    buf, before = _buffer(rng, n)
    lo, hi = 11, 11 + 3 * nb
    call_unmutated(k.pos_in_frame, frame_pos[:, ANCHOR], frame_quat[:, ANCHOR], pos, buf[:, lo:hi])
    _assert_only_slice_written(buf, before, lo, hi)
    expected = o.pos_in_frame(frame_pos[:, ANCHOR], frame_quat[:, ANCHOR], pos)
    # Positions are up to ~7 m apart: tolerance relative to that scale.
    assert_allclose(buf[:, lo:hi], expected, rtol=2e-6, atol=2e-7 * 8)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("nb", [1, N_BODIES])
def test_vec_in_frame_matches_oracle_and_writes_only_its_column_slice(n, nb):
    rng = rng_for(n, 41 + nb)
    _, frame_quat, vec, _ = _frame_and_bodies(rng, n, nb)
    buf, before = _buffer(rng, n)
    lo, hi = 58, 58 + 3 * nb
    call_unmutated(k.vec_in_frame, frame_quat[:, ANCHOR], vec, buf[:, lo:hi])
    _assert_only_slice_written(buf, before, lo, hi)
    expected = o.vec_in_frame(frame_quat[:, ANCHOR], vec)
    assert_allclose(buf[:, lo:hi], expected, rtol=2e-6, atol=2e-7 * 4)
    # A rotation preserves lengths.
    got = buf[:, lo:hi].reshape(n, nb, 3).astype(np.float64)
    assert_allclose(np.linalg.norm(got, axis=-1), np.linalg.norm(vec, axis=-1), **F32)


@pytest.mark.parametrize("n", SIZES)
def test_twist_in_frame_matches_oracle_and_writes_only_its_column_slice(n):
    """The reference anchor's velocity term: the linear then the angular velocity, each the
    oracle's `vec_in_frame`, read from non-contiguous (N, 3) body slices as the term does."""
    rng = rng_for(n, 51)
    _, frame_quat, lin, _ = _frame_and_bodies(rng, n, N_BODIES)
    ang = f32(rng.uniform(-5.0, 5.0, (n, N_BODIES, 3)))
    buf, before = _buffer(rng, n)
    lo, hi = 160, 166
    call_unmutated(k.twist_in_frame, frame_quat[:, ANCHOR], lin[:, ANCHOR], ang[:, ANCHOR],
                   buf[:, lo:hi])  # fmt: skip
    _assert_only_slice_written(buf, before, lo, hi)
    expected = np.concatenate([o.vec_in_frame(frame_quat[:, ANCHOR], v[:, ANCHOR : ANCHOR + 1])
                               for v in (lin, ang)], axis=1)  # fmt: skip
    assert_allclose(buf[:, lo:hi], expected, rtol=2e-6, atol=2e-7 * 8)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("nb", [1, N_BODIES])
def test_ori_in_frame_6d_matches_oracle_ignores_sign_and_writes_only_its_column_slice(n, nb):
    rng = rng_for(n, 61 + nb)
    _, frame_quat, _, quat = _frame_and_bodies(rng, n, nb)
    buf, before = _buffer(rng, n)
    lo, hi = 100, 100 + 6 * nb
    call_unmutated(k.ori_in_frame_6d, frame_quat[:, ANCHOR], quat, buf[:, lo:hi])
    _assert_only_slice_written(buf, before, lo, hi)
    expected = o.ori_in_frame_6d(frame_quat[:, ANCHOR], quat)
    # Entries lie in [-1, 1] and come out of a float32 quaternion product followed by
    # 1 - 2(a^2 + b^2) style cancellations, so near-zero entries carry a few ulps of 1
    # (observed up to 2.1 ulps over 3598 rotations): absolute 4 ulps of 1, relative F32.
    assert_allclose(buf[:, lo:hi], expected, rtol=F32["rtol"], atol=4 * EPS32)

    frame_f, _ = o.flip_random_rows(rng, frame_quat)
    quat_f, _ = o.flip_random_rows(rng, quat)
    buf_f = buf.copy()
    k.ori_in_frame_6d(frame_f[:, ANCHOR], quat_f, buf_f[:, lo:hi])
    assert_array_equal(buf_f, buf)

    # Frame equal to the body orientation gives the identity's first two columns.
    same = np.repeat(frame_quat[:, ANCHOR : ANCHOR + 1], nb, axis=1)
    k.ori_in_frame_6d(frame_quat[:, ANCHOR], same, buf[:, lo:hi])
    assert_allclose(buf[:, lo:hi], np.tile([1.0, 0.0, 0.0, 1.0, 0.0, 0.0], (n, nb)), atol=5e-7)


@pytest.mark.parametrize("n", SIZES)
def test_add_uniform_noise_matches_oracle_and_touches_only_noisy_columns(n):
    rng = rng_for(n, 81)
    buf, before = _buffer(rng, n)
    terms = [(slice(58, 90), 0.05), (slice(100, 101), 0.5), (slice(150, 218), 0.01)]
    cols = NoiseColumns.of(terms, n)
    unit = f32(rng.random(cols.size))
    call_unmutated(
        k.add_uniform_noise, buf, unit, cols.column, cols.scale, cols.offset, cols.width,
        written=(0,),
    )  # fmt: skip
    noisy = np.zeros(buf.shape[1], bool)
    noisy[cols.column] = True
    assert buf[:, ~noisy].tobytes() == before[:, ~noisy].tobytes()
    block = 0  # each term's uniforms: its own (n, d) row-major block, in term order
    for sl, half_width in terms:
        d = sl.stop - sl.start
        u = unit[block : block + n * d].reshape(n, d)
        expected = o.add_uniform_noise(before[:, sl], u, np.full(d, half_width))
        assert_allclose(buf[:, sl], expected, rtol=2e-6, atol=2e-7 * 4)
        block += n * d
    scale = np.zeros(buf.shape[1])
    scale[cols.column] = cols.scale
    noise = buf.astype(np.float64) - before
    assert np.all(np.abs(noise) <= scale * (1 + 1e-6) + 1e-6)


def test_one_noise_draw_per_group_is_the_stream_of_one_draw_per_term():
    n, dims = 5, (3, 29, 1)
    cols = NoiseColumns.of([(slice(0, 3), 0.1), (slice(3, 32), 0.2), (slice(40, 41), 0.3)], n)
    one = np.empty(cols.size, np.float32)
    np.random.default_rng(7).random(dtype=np.float32, out=one)
    per_term = np.random.default_rng(7)
    blocks = [per_term.random((n, d), dtype=np.float32) for d in dims]
    assert one.tobytes() == b"".join(b.tobytes() for b in blocks)


@pytest.mark.parametrize("n", SIZES)
def test_point_vel_in_frame_matches_the_world_frame_oracle(n):
    """The IMU site's velocity: R^T v + (R^T w) x p against R^T (v + w x R p)."""
    rng = rng_for(n, 61)
    quat = o.random_unit_quat(rng, (n,))
    lin, ang = f32(rng.standard_normal((n, 3))), f32(3.0 * rng.standard_normal((n, 3)))
    point = f32([0.04525, 0.0, -0.08339])
    buf, before = _buffer(rng, n)
    lo, hi = 7, 10
    call_unmutated(k.point_vel_in_frame, quat, lin, ang, point, buf[:, lo:hi])
    _assert_only_slice_written(buf, before, lo, hi)
    expected = o.point_vel_in_frame(quat, lin, ang, point)
    assert_allclose(buf[:, lo:hi], expected, rtol=2e-6, atol=2e-6)
    # the offset matters: 0.1 m at up to ~10 rad/s moves the value by up to ~1 m/s
    origin = o.vec_in_frame(quat, lin[:, None])
    assert np.abs(expected - origin).max() > 0.05
