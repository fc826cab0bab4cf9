"""Scalar quaternion helpers (wxyz, Hamilton product, active rotation) against the oracle.

The helpers are float64 scalar functions here, so they are held to float64 accuracy."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from gym_motion.kernels import quat as kq

from . import oracle as o
from .checks import SIZES, rng_for

F64 = {"rtol": 1e-12, "atol": 1e-13}


def _quats(rng, n):
    return o.normalize(o.random_unit_quat(rng, (n,)))  # unit to float64 precision


def _apply(fn, *arrays):
    return np.array([fn(*np.concatenate(row)) for row in zip(*arrays, strict=True)])


@pytest.mark.parametrize("n", SIZES)
def test_quat_mul_is_the_hamilton_product_applying_b_first(n):
    rng = rng_for(n, 71)
    a, b = _quats(rng, n), _quats(rng, n)
    ab = _apply(kq.quat_mul, a, b)
    assert_allclose(ab, o.quat_mul(a, b), **F64)
    # R(a * b) = R(a) R(b): b is applied first.
    assert_allclose(o.quat_to_rotmat(ab), o.quat_to_rotmat(a) @ o.quat_to_rotmat(b), **F64)


@pytest.mark.parametrize("n", SIZES)
def test_quat_rotate_and_inverse_match_rotation_matrix(n):
    rng = rng_for(n, 72)
    q, v = _quats(rng, n), rng.uniform(-3.0, 3.0, (n, 3))
    assert_allclose(_apply(kq.quat_rotate, q, v), o.rotate(q, v), **F64)
    assert_allclose(_apply(kq.quat_rotate_inverse, q, v), o.rotate_inverse(q, v), **F64)
    assert_allclose(_apply(kq.quat_rotate, -q, v), o.rotate(q, v), **F64)


@pytest.mark.parametrize("n", SIZES)
def test_quat_angle_between_matches_axis_angle_and_ignores_sign(n):
    rng = rng_for(n, 73)
    a = _quats(rng, n)
    # Include angles near 0 and near pi, where acos-style formulas lose accuracy.
    ang = np.concatenate([[1e-7, np.pi - 1e-7, 0.0], rng.uniform(0.0, np.pi, n)])[:n]
    axis = rng.standard_normal((n, 3))
    axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
    d = np.concatenate([np.cos(0.5 * ang)[:, None], np.sin(0.5 * ang)[:, None] * axis], -1)
    b = o.quat_mul(a, d)  # b = a * d: relative rotation a^-1 b = d, angle `ang`
    got = _apply(kq.quat_angle_between, a, b)
    assert_allclose(got, o.angle_between(a, b), rtol=1e-9, atol=1e-12)
    assert_allclose(got, ang, rtol=1e-9, atol=1e-12)
    assert np.all((got >= 0.0) & (got <= np.pi))
    for sa, sb in ((-1, 1), (1, -1), (-1, -1)):
        assert_allclose(_apply(kq.quat_angle_between, sa * a, sb * b), got, rtol=0, atol=0)


@pytest.mark.parametrize("n", SIZES)
def test_yaw_quat_is_the_unit_pure_yaw_with_the_matrix_heading(n):
    rng = rng_for(n, 74)
    q = _quats(rng, n)
    y = _apply(kq.yaw_quat, q)
    assert_allclose(np.linalg.norm(y, axis=-1), 1.0, **F64)
    assert np.all(y[:, 1:3] == 0.0)
    assert_allclose(o.quat_to_rotmat(y), o.rot_z(o.yaw_of(q)), **F64)
    assert_allclose(_apply(kq.yaw_quat, -q), y, **F64)
    # For q = Rz(psi) Ry(theta) Rx(phi) the heading is psi, whatever the tilt (|theta| < 90 deg).
    psi, th, ph = rng.uniform(-3.1, 3.1, n), rng.uniform(-1.4, 1.4, n), rng.uniform(-3, 3, n)
    half = lambda t, ax: np.concatenate(  # noqa: E731
        [np.cos(t / 2)[:, None], np.sin(t / 2)[:, None] * np.eye(3)[ax]], -1
    )
    q2 = o.quat_mul(half(psi, 2), o.quat_mul(half(th, 1), half(ph, 0)))
    y2 = _apply(kq.yaw_quat, q2)
    assert_allclose(2 * np.arctan2(y2[:, 3], y2[:, 0]), psi, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("n", SIZES)
def test_quat_to_matrix_is_row_major_rotation_matrix(n):
    rng = rng_for(n, 75)
    q = _quats(rng, n)
    m = _apply(kq.quat_to_matrix, q)
    assert_allclose(m.reshape(n, 3, 3), o.quat_to_rotmat(q), **F64)
