"""Observation kernels (docs/task.md section 5): quantities expressed in a body frame.

Outputs are 2-D (N, D) float32 views into the observation buffer (column slices are fine).
"""

from __future__ import annotations

from numba import prange

from gym_motion.kernels.dispatch import row_kernel
from gym_motion.kernels.quat import quat_mul, quat_rotate_inverse, quat_to_matrix


@row_kernel
def pos_in_frame(frame_pos_w, frame_quat_w, pos_w, out):
    """Positions of B points in a frame: ``out[i, 3b:3b+3] = R_i^T (pos_w[i, b] - frame_pos_w[i])``.

    Args:
        frame_pos_w: (N, 3) float32, frame origin, world frame, m.
        frame_quat_w: (N, 4) float32, frame orientation, wxyz.
        pos_w: (N, B, 3) float32, points, world frame, m.
        out: (N, 3B) float32, written, m.
    """
    for i in prange(out.shape[0]):
        q = frame_quat_w[i]
        for b in range(pos_w.shape[1]):
            x, y, z = quat_rotate_inverse(
                q[0],
                q[1],
                q[2],
                q[3],
                pos_w[i, b, 0] - frame_pos_w[i, 0],
                pos_w[i, b, 1] - frame_pos_w[i, 1],
                pos_w[i, b, 2] - frame_pos_w[i, 2],
            )
            out[i, 3 * b] = x
            out[i, 3 * b + 1] = y
            out[i, 3 * b + 2] = z


@row_kernel
def vec_in_frame(frame_quat_w, vec_w, out):
    """Free vectors (velocities) in a frame: ``out[i, 3b:3b+3] = R_i^T vec_w[i, b]``.

    Args:
        frame_quat_w: (N, 4) float32, wxyz. vec_w: (N, B, 3) float32, world frame.
        out: (N, 3B) float32, written.
    """
    for i in prange(out.shape[0]):
        q = frame_quat_w[i]
        for b in range(vec_w.shape[1]):
            x, y, z = quat_rotate_inverse(
                q[0], q[1], q[2], q[3], vec_w[i, b, 0], vec_w[i, b, 1], vec_w[i, b, 2]
            )
            out[i, 3 * b] = x
            out[i, 3 * b + 1] = y
            out[i, 3 * b + 2] = z


@row_kernel
def twist_in_frame(frame_quat_w, lin_vel_w, ang_vel_w, out):
    """A twist in a frame: ``out[i] = (R_i^T lin_vel_w[i], R_i^T ang_vel_w[i])``.

    Args:
        frame_quat_w: (N, 4) float32, wxyz. lin_vel_w, ang_vel_w: (N, 3) float32, world
            frame, m/s and rad/s.
        out: (N, 6) float32, written.
    """
    for i in prange(out.shape[0]):
        q = frame_quat_w[i]
        v = lin_vel_w[i]
        out[i, 0], out[i, 1], out[i, 2] = quat_rotate_inverse(q[0], q[1], q[2], q[3], v[0], v[1],
                                                              v[2])  # fmt: skip
        v = ang_vel_w[i]
        out[i, 3], out[i, 4], out[i, 5] = quat_rotate_inverse(q[0], q[1], q[2], q[3], v[0], v[1],
                                                              v[2])  # fmt: skip


@row_kernel
def point_vel_in_frame(frame_quat_w, lin_vel_w, ang_vel_w, point_b, out):
    """Velocity of a point fixed on a body, in the body frame:
    ``out[i] = R_i^T v_i + (R_i^T w_i) x p``, the rigid-body velocity of the point ``p`` (what
    MuJoCo's velocimeter sensor reads at a site with the body's orientation).

    Args:
        frame_quat_w: (N, 4) float32, body orientation, wxyz.
        lin_vel_w: (N, 3) float32, body origin's linear velocity, world frame, m/s.
        ang_vel_w: (N, 3) float32, body angular velocity, world frame, rad/s.
        point_b: (3,) float32, the point in the body frame, m.
        out: (N, 3) float32, written, m/s.
    """
    px, py, pz = point_b[0], point_b[1], point_b[2]
    for i in prange(out.shape[0]):
        q = frame_quat_w[i]
        v, w = lin_vel_w[i], ang_vel_w[i]
        vx, vy, vz = quat_rotate_inverse(q[0], q[1], q[2], q[3], v[0], v[1], v[2])
        wx, wy, wz = quat_rotate_inverse(q[0], q[1], q[2], q[3], w[0], w[1], w[2])
        out[i, 0] = vx + (wy * pz - wz * py)
        out[i, 1] = vy + (wz * px - wx * pz)
        out[i, 2] = vz + (wx * py - wy * px)


@row_kernel
def ori_in_frame_6d(frame_quat_w, quat_w, out):
    """Orientations in a frame as the first two columns of R(q_frame^-1 q), row-major.

    ``out[i, 6b:6b+6] = (r00, r01, r10, r11, r20, r21)`` (Zhou et al., 2019, continuous 6-D
    rotation representation).

    Args:
        frame_quat_w: (N, 4) float32, wxyz. quat_w: (N, B, 4) float32, wxyz.
        out: (N, 6B) float32, written.
    """
    for i in prange(out.shape[0]):
        f = frame_quat_w[i]
        for b in range(quat_w.shape[1]):
            q = quat_w[i, b]
            w, x, y, z = quat_mul(f[0], -f[1], -f[2], -f[3], q[0], q[1], q[2], q[3])
            m = quat_to_matrix(w, x, y, z)
            o = 6 * b
            out[i, o] = m[0]
            out[i, o + 1] = m[1]
            out[i, o + 2] = m[3]
            out[i, o + 3] = m[4]
            out[i, o + 4] = m[6]
            out[i, o + 5] = m[7]


@row_kernel
def add_uniform_noise(obs, unit_random, column, scale, offset, width):
    """``obs[i, column[c]] += (2 u - 1) * scale[c]``: uniform noise in [-scale, scale] on the
    noisy columns C of a group, with ``u = unit_random[offset[c] + i * width[c]]``.

    Args:
        obs: (N, D) float32, modified in place.
        unit_random: (N * C,) float32 uniform samples in [0, 1), one (N, width) row-major block
            per term (see `gym_motion.managers.observation.NoiseColumns`).
        column, offset, width: (C,) int; scale: (C,) float32 half-widths.
    """
    for i in prange(obs.shape[0]):
        for c in range(column.shape[0]):
            u = unit_random[offset[c] + i * width[c]]
            obs[i, column[c]] += (2.0 * u - 1.0) * scale[c]
