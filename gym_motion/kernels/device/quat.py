"""Quaternion helpers of the device kernels (wxyz, Hamilton product): the Warp twins of
`gym_motion.kernels.quat`, on plain floats and Warp vectors (Warp's own ``wp.quat`` is xyzw,
so it is not used). The product and the rotations are generic: float32 vectors for the
per-step kernels, float64 (``wp.vec4d``, ``wp.vec3d``) for RSI."""

from __future__ import annotations

from typing import Any

import warp as wp


@wp.func
def quat_mul(a: Any, b: Any):
    """Hamilton product a * b of two wxyz quaternions (vectors of 4, of a's type)."""
    return type(a)(
        a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
        a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
        a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
        a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0],
    )


@wp.func
def conj(q: Any):
    """The conjugate (the inverse of a unit quaternion)."""
    return type(q)(q[0], -q[1], -q[2], -q[3])


@wp.func
def quat_rotate(q: Any, v: Any):
    """Rotate v by unit q (q v q*): v + 2 w (u x v) + 2 u x (u x v), u = (x, y, z)."""
    two = type(v[0])(2.0)
    tx = two * (q[2] * v[2] - q[3] * v[1])
    ty = two * (q[3] * v[0] - q[1] * v[2])
    tz = two * (q[1] * v[1] - q[2] * v[0])
    return type(v)(
        v[0] + q[0] * tx + (q[2] * tz - q[3] * ty),
        v[1] + q[0] * ty + (q[3] * tx - q[1] * tz),
        v[2] + q[0] * tz + (q[1] * ty - q[2] * tx),
    )


@wp.func
def quat_rotate_inverse(q: Any, v: Any):
    """Rotate v by the inverse of unit q (q* v q)."""
    return quat_rotate(conj(q), v)


@wp.func
def quat_angle_between(a: wp.vec4, b: wp.vec4) -> float:
    """Rotation angle of a* b in [0, pi], rad; equal for q and -q."""
    d = quat_mul(conj(a), b)
    return 2.0 * wp.atan2(wp.sqrt(d[1] * d[1] + d[2] * d[2] + d[3] * d[3]), wp.abs(d[0]))


@wp.func
def yaw_quat(q: wp.vec4) -> wp.vec4:
    """The rotation about world z contained in q (its heading), unit wxyz."""
    yaw = wp.atan2(2.0 * (q[0] * q[3] + q[1] * q[2]), 1.0 - 2.0 * (q[2] * q[2] + q[3] * q[3]))
    return wp.vec4(wp.cos(0.5 * yaw), 0.0, 0.0, wp.sin(0.5 * yaw))


@wp.func
def quat_to_matrix(q: wp.vec4) -> wp.mat33:
    """Rotation matrix of unit q."""
    xx, yy, zz = q[1] * q[1], q[2] * q[2], q[3] * q[3]
    xy, xz, yz = q[1] * q[2], q[1] * q[3], q[2] * q[3]
    wx, wy, wz = q[0] * q[1], q[0] * q[2], q[0] * q[3]
    return wp.mat33(
        1.0 - 2.0 * (yy + zz), 2.0 * (xy - wz), 2.0 * (xz + wy),
        2.0 * (xy + wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz - wx),
        2.0 * (xz - wy), 2.0 * (yz + wx), 1.0 - 2.0 * (xx + yy),
    )  # fmt: skip


@wp.func
def vec3_at(a: wp.array3d(dtype=float), i: int, b: int) -> wp.vec3:
    """Row i, body b of an (N, B, 3) array as a vector."""
    return wp.vec3(a[i, b, 0], a[i, b, 1], a[i, b, 2])


@wp.func
def vec4_at(a: wp.array3d(dtype=float), i: int, b: int) -> wp.vec4:
    """Row i, body b of an (N, B, 4) array as a vector."""
    return wp.vec4(a[i, b, 0], a[i, b, 1], a[i, b, 2], a[i, b, 3])


@wp.func
def row3(a: wp.array2d(dtype=float), i: int) -> wp.vec3:
    """Row i of an (N, 3) array as a vector."""
    return wp.vec3(a[i, 0], a[i, 1], a[i, 2])


@wp.func
def row4(a: wp.array2d(dtype=float), i: int) -> wp.vec4:
    """Row i of an (N, 4) array as a vector."""
    return wp.vec4(a[i, 0], a[i, 1], a[i, 2], a[i, 3])
