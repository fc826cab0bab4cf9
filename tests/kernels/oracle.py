"""Independent float64 NumPy oracle for the Numba kernels (tests only).

Written from the formulas of docs/task.md (sections 4, 5, 7, 8, 9) and the kernel docstrings,
deliberately NOT from the kernel code: rotations go through explicit rotation matrices
(R = (w^2 - u.u) I + 2 u u^T + 2 w [u]x), quaternion products through the 4x4 left-product
matrix, angles through the axis-angle of R_a^T R_b (atan2 of sine and cosine, well conditioned
at 0 and pi), and yaw through the matrix entries (atan2(r10, r00)). Everything is vectorised.
Quaternions are wxyz; float32 inputs are promoted to float64 and renormalised where a formula
assumes unit quaternions.
"""

from __future__ import annotations

import numpy as np

# ---------------------------------------------------------------- random states


def random_unit_quat(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Uniformly distributed unit quaternions (normalised 4-D Gaussians), float32, wxyz."""
    q = rng.standard_normal((*shape, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    return q.astype(np.float32)


def flip_random_rows(rng: np.random.Generator, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Copy of q with a random half of its quaternions negated (exact in float32)."""
    mask = rng.random(q.shape[:-1]) < 0.5
    out = q.copy()
    out[mask] = -out[mask]
    return out, mask


# ---------------------------------------------------------------- quaternion algebra


def normalize(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, np.float64)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def skew(u: np.ndarray) -> np.ndarray:
    """[u]x such that [u]x v = u x v, shape (..., 3, 3)."""
    z = np.zeros(u.shape[:-1])
    x, y, w = u[..., 0], u[..., 1], u[..., 2]
    return np.stack(
        [np.stack([z, -w, y], -1), np.stack([w, z, -x], -1), np.stack([-y, x, z], -1)], -2
    )


def quat_to_rotmat(q: np.ndarray) -> np.ndarray:
    """Rotation matrix (..., 3, 3) of q (renormalised), active rotation v -> q v q*."""
    q = normalize(q)
    w, u = q[..., 0], q[..., 1:]
    eye = np.broadcast_to(np.eye(3), (*q.shape[:-1], 3, 3))
    return (
        (w * w - np.sum(u * u, -1))[..., None, None] * eye
        + 2.0 * u[..., :, None] * u[..., None, :]
        + 2.0 * w[..., None, None] * skew(u)
    )


def left_matrix(a: np.ndarray) -> np.ndarray:
    """L(a) with a * b = L(a) @ b (Hamilton product, wxyz)."""
    a = np.asarray(a, np.float64)
    w, x, y, z = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    return np.stack(
        [
            np.stack([w, -x, -y, -z], -1),
            np.stack([x, w, -z, y], -1),
            np.stack([y, z, w, -x], -1),
            np.stack([z, -y, x, w], -1),
        ],
        -2,
    )


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a * b (apply b first)."""
    return np.einsum("...ij,...j->...i", left_matrix(a), np.asarray(b, np.float64))


def conj(q: np.ndarray) -> np.ndarray:
    return np.asarray(q, np.float64) * np.array([1.0, -1.0, -1.0, -1.0])


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """R(q) v."""
    return np.einsum("...ij,...j->...i", quat_to_rotmat(q), np.asarray(v, np.float64))


def rotate_inverse(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """R(q)^T v."""
    return np.einsum("...ji,...j->...i", quat_to_rotmat(q), np.asarray(v, np.float64))


def angle_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rotation angle in [0, pi] of R_a^T R_b (sign of a, b irrelevant by construction)."""
    m = np.swapaxes(quat_to_rotmat(a), -1, -2) @ quat_to_rotmat(b)
    cos = 0.5 * (np.trace(m, axis1=-2, axis2=-1) - 1.0)
    axis2 = np.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                      m[..., 1, 0] - m[..., 0, 1]], -1)  # fmt: skip
    sin = 0.5 * np.linalg.norm(axis2, axis=-1)
    return np.arctan2(sin, cos)


def yaw_of(q: np.ndarray) -> np.ndarray:
    """Heading (ZYX yaw) of q from its rotation matrix: atan2(r10, r00)."""
    m = quat_to_rotmat(q)
    return np.arctan2(m[..., 1, 0], m[..., 0, 0])


def rot_z(yaw: np.ndarray) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    z, o = np.zeros_like(yaw), np.ones_like(yaw)
    return np.stack(
        [np.stack([c, -s, z], -1), np.stack([s, c, z], -1), np.stack([z, z, o], -1)], -2
    )


def rot_y(a: np.ndarray) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    z, o = np.zeros_like(a), np.ones_like(a)
    return np.stack(
        [np.stack([c, z, s], -1), np.stack([z, o, z], -1), np.stack([-s, z, c], -1)], -2
    )


def rot_x(a: np.ndarray) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    z, o = np.zeros_like(a), np.ones_like(a)
    return np.stack(
        [np.stack([o, z, z], -1), np.stack([z, c, -s], -1), np.stack([z, s, c], -1)], -2
    )


def yaw_quat_from_angle(yaw: np.ndarray) -> np.ndarray:
    z = np.zeros_like(yaw)
    return np.stack([np.cos(0.5 * yaw), z, z, np.sin(0.5 * yaw)], -1)


def align_sign(q: np.ndarray, ref: np.ndarray, axis: tuple[int, ...] = (-1,)) -> np.ndarray:
    """q with its sign chosen to agree with ref (dot product summed over ``axis``)."""
    s = np.sign(np.sum(np.asarray(q, np.float64) * ref, axis=axis, keepdims=True))
    s[s == 0] = 1.0
    return q * s


# ---------------------------------------------------------------- command (section 4)


def reanchor_bodies(ref_pos, ref_quat, anchor, robot_anchor_pos, robot_anchor_quat):
    """dp = (robot x, robot y, ref z); dq = yaw(q_robot * q_ref_anchor^-1);
    pos = dp + R(dq) (p - p_anchor); quat = dq * q. Returns (pos, quat, yaw)."""
    ref_pos = np.asarray(ref_pos, np.float64)
    m_rel = quat_to_rotmat(robot_anchor_quat) @ np.swapaxes(
        quat_to_rotmat(ref_quat[:, anchor]), -1, -2
    )
    yaw = np.arctan2(m_rel[:, 1, 0], m_rel[:, 0, 0])
    dp = np.concatenate(
        [np.asarray(robot_anchor_pos, np.float64)[:, :2], ref_pos[:, anchor, 2:3]], -1
    )
    rel = ref_pos - ref_pos[:, anchor : anchor + 1]
    pos = dp[:, None] + np.einsum("nij,nbj->nbi", rot_z(yaw), rel)
    dq = yaw_quat_from_angle(yaw)
    quat = quat_mul(dq[:, None], ref_quat)
    return pos, quat, yaw


# ---------------------------------------------------------------- rewards (section 7)


def gaussian(sq_err: np.ndarray, std: float) -> np.ndarray:
    return np.exp(-sq_err / std**2)


def anchor_pos_sq(ref_pos, pos) -> np.ndarray:
    d = np.asarray(ref_pos, np.float64) - np.asarray(pos, np.float64)
    return np.sum(d * d, -1)


def anchor_ori_sq(ref_quat, quat) -> np.ndarray:
    return angle_between(ref_quat, quat) ** 2


def body_pos_sq(ref_pos, pos, body_ids) -> np.ndarray:
    d = np.asarray(ref_pos, np.float64)[:, body_ids] - np.asarray(pos, np.float64)[:, body_ids]
    return np.mean(np.sum(d * d, -1), -1)


def body_ori_sq(ref_quat, quat, body_ids) -> np.ndarray:
    return np.mean(angle_between(ref_quat[:, body_ids], quat[:, body_ids]) ** 2, -1)


def action_rate_l2(action, last_action) -> np.ndarray:
    d = np.asarray(action, np.float64) - np.asarray(last_action, np.float64)
    return np.sum(d * d, -1)


def joint_limit_violation(joint_pos, soft_limits) -> np.ndarray:
    q = np.asarray(joint_pos, np.float64)
    lim = np.asarray(soft_limits, np.float64)
    below = np.clip(lim[:, 0] - q, 0.0, None)
    above = np.clip(q - lim[:, 1], 0.0, None)
    return np.sum(below + above, -1)


# ---------------------------------------------------------------- terminations (section 8)


def horizontal_error(ref_pos, pos, body_ids) -> np.ndarray:
    """max_k |xy_ref - xy| over the selected bodies."""
    d = (
        np.asarray(ref_pos, np.float64)[:, body_ids, :2]
        - np.asarray(pos, np.float64)[:, body_ids, :2]
    )
    return np.max(np.linalg.norm(d, axis=-1), -1)


def height_error(ref_pos, pos, body_ids) -> np.ndarray:
    """max_k |z_ref - z| over the selected bodies."""
    dz = (
        np.asarray(ref_pos, np.float64)[:, body_ids, 2]
        - np.asarray(pos, np.float64)[:, body_ids, 2]
    )
    return np.max(np.abs(dz), -1)


def gravity_z_error(ref_quat, quat) -> np.ndarray:
    """|g_z(ref) - g_z(robot)| with g = R^T (0, 0, -1) (world gravity in the body frame)."""
    g = np.array([0.0, 0.0, -1.0])
    ga = rotate_inverse(ref_quat, np.broadcast_to(g, (*ref_quat.shape[:-1], 3)))
    gb = rotate_inverse(quat, np.broadcast_to(g, (*quat.shape[:-1], 3)))
    return np.abs(ga[..., 2] - gb[..., 2])


# ---------------------------------------------------------------- observations (section 5)


def pos_in_frame(frame_pos, frame_quat, pos) -> np.ndarray:
    rel = np.asarray(pos, np.float64) - np.asarray(frame_pos, np.float64)[:, None]
    out = rotate_inverse(np.asarray(frame_quat)[:, None], rel)
    return out.reshape(out.shape[0], -1)


def vec_in_frame(frame_quat, vec) -> np.ndarray:
    out = rotate_inverse(np.asarray(frame_quat)[:, None], vec)
    return out.reshape(out.shape[0], -1)


def point_vel_in_frame(frame_quat, lin_vel, ang_vel, point) -> np.ndarray:
    """Rigid-body velocity of body point p in the body frame, formed in the world frame:
    R^T (v + w x R p); (N, 3)."""
    q = np.asarray(frame_quat, np.float64)
    p_w = rotate(q, np.broadcast_to(np.asarray(point, np.float64), q.shape[:-1] + (3,)))
    v_w = np.asarray(lin_vel, np.float64) + np.cross(np.asarray(ang_vel, np.float64), p_w)
    return rotate_inverse(q, v_w)


def ori_in_frame_6d(frame_quat, quat) -> np.ndarray:
    """First two columns of R_frame^T R_q, row-major: (r00, r01, r10, r11, r20, r21)."""
    m = np.swapaxes(quat_to_rotmat(np.asarray(frame_quat)[:, None]), -1, -2) @ quat_to_rotmat(quat)
    return m[..., :, :2].reshape(m.shape[0], -1)


def add_uniform_noise(obs, unit_random, scale) -> np.ndarray:
    return np.asarray(obs, np.float64) + (2.0 * np.asarray(unit_random, np.float64) - 1.0) * (
        np.asarray(scale, np.float64)
    )


# ---------------------------------------------------------------- metrics


def tracking_errors(
    ref_pos, ref_quat, ref_rel_pos, ref_rel_quat, pos, quat, anchor, root,
    ref_joint_pos, ref_joint_vel, joint_pos, joint_vel,
) -> np.ndarray:  # fmt: skip
    """Columns in the order of TRACKING_ERRORS (see gym_motion.kernels.metrics)."""
    f = lambda a: np.asarray(a, np.float64)  # noqa: E731
    ref_pos, ref_rel_pos, pos = f(ref_pos), f(ref_rel_pos), f(pos)
    norm = lambda a: np.linalg.norm(a, axis=-1)  # noqa: E731
    cols = [
        norm(ref_pos[:, anchor] - pos[:, anchor]),
        angle_between(ref_quat[:, anchor], quat[:, anchor]),
        norm(ref_rel_pos - pos).mean(-1),
        angle_between(ref_rel_quat, quat).mean(-1),
        np.abs(f(ref_joint_pos) - f(joint_pos)).mean(-1),
        np.abs(f(ref_joint_vel) - f(joint_vel)).mean(-1),
        norm(ref_pos - pos).mean(-1),
        norm((ref_pos - ref_pos[:, root : root + 1]) - (pos - pos[:, root : root + 1])).mean(-1),
    ]
    return np.stack(cols, -1)


# ---------------------------------------------------------------- reset (section 9)


def rsi_state(
    ref_root_pos, ref_root_quat, ref_root_lin_vel, ref_root_ang_vel, ref_joint_pos,
    ref_joint_vel, unit_random, pose_range, vel_range, joint_pos_range, soft_limits,
):  # fmt: skip
    """Returns (root_pos, root_rotmat, lin_vel_w, ang_vel_body, joint_pos, joint_vel).

    Root orientation R = Rz(yaw) Ry(pitch) Rx(roll) R(q_ref) (extrinsic xyz noise in the world
    frame); the free-joint angular velocity is R^T (w_ref + noise).
    """
    f = lambda a: np.asarray(a, np.float64)  # noqa: E731
    u = f(unit_random)
    pr, vr, jr = f(pose_range), f(vel_range), f(joint_pos_range)
    d_pose = pr[:, 0] + (pr[:, 1] - pr[:, 0]) * u[:, 0:6]
    d_vel = vr[:, 0] + (vr[:, 1] - vr[:, 0]) * u[:, 6:12]
    root_pos = f(ref_root_pos) + d_pose[:, :3]
    r_noise = rot_z(d_pose[:, 5]) @ rot_y(d_pose[:, 4]) @ rot_x(d_pose[:, 3])
    root_r = r_noise @ quat_to_rotmat(ref_root_quat)
    lin_vel = f(ref_root_lin_vel) + d_vel[:, :3]
    ang_w = f(ref_root_ang_vel) + d_vel[:, 3:]
    ang_b = np.einsum("nji,nj->ni", root_r, ang_w)
    lim = f(soft_limits)
    joint_pos = np.clip(
        f(ref_joint_pos) + jr[0] + (jr[1] - jr[0]) * u[:, 12:], lim[:, 0], lim[:, 1]
    )
    return root_pos, root_r, lin_vel, ang_b, joint_pos, f(ref_joint_vel)
