"""Scalar quaternion helpers for Numba kernels (wxyz, Hamilton product, active rotation).

Each helper takes and returns plain floats so that kernels can inline them without allocating.
A quaternion q = (w, x, y, z) rotates a vector v by ``q v q*``; ``quat_mul(a, b)`` applies b
first, then a.
"""

from __future__ import annotations

import math

from numba import njit

from gym_motion.kernels.cache import CACHE


@njit(cache=CACHE, inline="always")
def quat_mul(aw, ax, ay, az, bw, bx, by, bz):
    """Hamilton product a * b of two wxyz quaternions, as a 4-tuple."""
    return (
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    )


@njit(cache=CACHE, inline="always")
def quat_rotate(qw, qx, qy, qz, vx, vy, vz):
    """Rotate vector v by unit quaternion q (q v q*), as a 3-tuple.

    Uses v' = v + 2 w (u x v) + 2 u x (u x v) with u = (x, y, z).
    """
    tx = 2.0 * (qy * vz - qz * vy)
    ty = 2.0 * (qz * vx - qx * vz)
    tz = 2.0 * (qx * vy - qy * vx)
    return (
        vx + qw * tx + (qy * tz - qz * ty),
        vy + qw * ty + (qz * tx - qx * tz),
        vz + qw * tz + (qx * ty - qy * tx),
    )


@njit(cache=CACHE, inline="always")
def quat_rotate_inverse(qw, qx, qy, qz, vx, vy, vz):
    """Rotate vector v by the inverse of unit quaternion q (q* v q), as a 3-tuple."""
    return quat_rotate(qw, -qx, -qy, -qz, vx, vy, vz)


@njit(cache=CACHE, inline="always")
def quat_angle_between(aw, ax, ay, az, bw, bx, by, bz):
    """Rotation angle of a* b in [0, pi], rad; equal for q and -q (sign-aware)."""
    w, x, y, z = quat_mul(aw, -ax, -ay, -az, bw, bx, by, bz)
    return 2.0 * math.atan2(math.sqrt(x * x + y * y + z * z), abs(w))


@njit(cache=CACHE, inline="always")
def yaw_quat(qw, qx, qy, qz):
    """The rotation about world z contained in q (its heading), as a unit wxyz 4-tuple."""
    yaw = math.atan2(2.0 * (qw * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz))
    return math.cos(0.5 * yaw), 0.0, 0.0, math.sin(0.5 * yaw)


@njit(cache=CACHE, inline="always")
def quat_to_matrix(qw, qx, qy, qz):
    """Rotation matrix of unit q as 9 floats in row-major order (r00, r01, ..., r22)."""
    xx, yy, zz = qx * qx, qy * qy, qz * qz
    xy, xz, yz = qx * qy, qx * qz, qy * qz
    wx, wy, wz = qw * qx, qw * qy, qw * qz
    return (
        1.0 - 2.0 * (yy + zz), 2.0 * (xy - wz), 2.0 * (xz + wy),
        2.0 * (xy + wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz - wx),
        2.0 * (xz - wy), 2.0 * (yz + wx), 1.0 - 2.0 * (xx + yy),
    )  # fmt: skip
