"""Vectorized numpy quaternion helpers for motion data (wxyz, unit quaternions, float64).

These are offline helpers for conversion and resampling; the per-step kernels of the env live in
``gym_motion.kernels``. Every function broadcasts over leading dimensions: ``(..., 4)`` in,
``(..., 4)`` or ``(..., 3)`` out.
"""

from __future__ import annotations

import numpy as np

_SMALL = 1e-12


def normalize(q: np.ndarray) -> np.ndarray:
    """Unit quaternions ``(..., 4)`` from ``q`` (any norm > 0)."""
    q = np.asarray(q, dtype=np.float64)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def conj(q: np.ndarray) -> np.ndarray:
    """Conjugate (the inverse of a unit quaternion), ``(..., 4)`` wxyz."""
    out = np.array(q, dtype=np.float64, copy=True)
    out[..., 1:] *= -1.0
    return out


def mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a * b`` of wxyz quaternions, ``(..., 4)``."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack(
        (
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ),
        axis=-1,
    )


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors ``v (..., 3)`` by unit quaternions ``q (..., 4)`` (frame of q to parent)."""
    q = np.asarray(q, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def rotate_inverse(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors ``v (..., 3)`` by the inverse of unit quaternions ``q (..., 4)``."""
    return rotate(conj(q), v)


def to_axis_angle(q: np.ndarray) -> np.ndarray:
    """Rotation vectors ``(..., 3)`` (axis * angle, rad, angle in [0, pi]) of unit quaternions."""
    q = np.asarray(q, dtype=np.float64)
    q = np.where(q[..., :1] < 0.0, -q, q)  # shortest rotation
    s = np.linalg.norm(q[..., 1:], axis=-1)
    angle = 2.0 * np.arctan2(s, q[..., 0])
    # angle / sin(angle / 2) -> 2 as the angle -> 0
    scale = np.where(s > _SMALL, angle / np.maximum(s, _SMALL), 2.0)
    return q[..., 1:] * scale[..., None]


def from_axis_angle(v: np.ndarray) -> np.ndarray:
    """Unit quaternions ``(..., 4)`` wxyz of rotation vectors ``v (..., 3)`` (axis * angle)."""
    v = np.asarray(v, dtype=np.float64)
    angle = np.linalg.norm(v, axis=-1)
    half = 0.5 * angle
    # sin(angle / 2) / angle -> 1/2 as the angle -> 0
    scale = np.where(angle > _SMALL, np.sin(half) / np.maximum(angle, _SMALL), 0.5)
    return np.concatenate((np.cos(half)[..., None], v * scale[..., None]), axis=-1)


def slerp(q0: np.ndarray, q1: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Spherical linear interpolation along the shortest arc.

    Args:
        q0, q1: ``(..., 4)`` unit quaternions wxyz.
        t: ``(...)`` blend factors in [0, 1]; 0 gives ``q0``, 1 gives ``q1`` (up to sign).

    Returns:
        ``(..., 4)`` unit quaternions, float64.
    """
    q0 = np.asarray(q0, dtype=np.float64)
    q1 = np.asarray(q1, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)[..., None]
    dot = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(dot < 0.0, -q1, q1)
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    sin_theta = np.sin(theta)
    near = sin_theta < 1e-6
    safe = np.where(near, 1.0, sin_theta)
    w0 = np.where(near, 1.0 - t, np.sin((1.0 - t) * theta) / safe)
    w1 = np.where(near, t, np.sin(t * theta) / safe)
    return normalize(w0 * q0 + w1 * q1)


def angular_velocity(q: np.ndarray, dt: float) -> np.ndarray:
    """World-frame angular velocity ``(T, ..., 3)`` rad/s of rotations ``(T, ..., 4)`` wxyz.

    Central differences from the neighbouring rotations, ``log(q[k+1] q[k-1]^-1) / (2 dt)``;
    one-sided ``log(q[1] q[0]^-1) / dt`` at the ends (the same stencil as ``np.gradient``).
    Needs ``T >= 2``.
    """
    q = np.asarray(q, dtype=np.float64)
    if q.shape[0] < 2:
        raise ValueError("angular_velocity needs at least 2 rotations")
    out = np.empty(q.shape[:-1] + (3,), dtype=np.float64)
    out[0] = to_axis_angle(mul(q[1], conj(q[0]))) / dt
    out[-1] = to_axis_angle(mul(q[-1], conj(q[-2]))) / dt
    if q.shape[0] > 2:
        out[1:-1] = to_axis_angle(mul(q[2:], conj(q[:-2]))) / (2.0 * dt)
    return out
