"""Reference state initialisation (RSI, docs/task.md section 9) of reset rows."""

from __future__ import annotations

import math

from numba import prange

from gym_motion.kernels.dispatch import row_kernel
from gym_motion.kernels.quat import quat_mul, quat_rotate_inverse


@row_kernel
def rsi_state(
    body_pos_w,
    body_quat_w,
    body_lin_vel_w,
    body_ang_vel_w,
    ref_joint_pos,
    ref_joint_vel,
    root,
    frames,
    unit_random,
    pose_range,
    vel_range,
    joint_pos_range,
    soft_limits,
    root_qadr,
    root_dadr,
    joint_qadr,
    joint_dadr,
    qpos,
    qvel,
):
    """Robot state near the reference: MuJoCo qpos (M, nq) and qvel (M, nv) of M reset rows,
    row m near reference frame ``frames[m]`` of the motion library's arrays.

    Values land in the model's own columns (`gym_motion.robots.layout.JointLayout`), so a model
    whose kinematic tree orders the joints unlike the robot gets each joint's reference; other
    columns are left as they are.

    Root position += U(pose_range[0:3]); root orientation = q(roll, pitch, yaw) * q_ref with
    (roll, pitch, yaw) ~ U(pose_range[3:6]) (extrinsic xyz, world frame); root linear and
    angular velocity (world frame) += U(vel_range); joints = reference + U(joint_pos_range),
    clipped to the soft limits; joint velocities = reference. The free joint's angular velocity
    is written in the root body frame, as MuJoCo expects.

    Args:
        body_pos_w: (F, B, 3) float32, m. body_quat_w: (F, B, 4) float32, wxyz.
        body_lin_vel_w, body_ang_vel_w: (F, B, 3) float32, world frame, m/s and rad/s.
        ref_joint_pos, ref_joint_vel: (F, J) float32, rad and rad/s.
        root: index of the root body along B. frames: (M,) int, the frame of each row.
        unit_random: (M, 12 + J) float uniform samples in [0, 1): pose 6 | velocity 6 | joints J.
        pose_range, vel_range: (6, 2) float, (low, high) of x, y, z, roll, pitch, yaw noise.
        joint_pos_range: (2,) float, (low, high) of joint position noise, rad.
        soft_limits: (J, 2) float, joint soft limits, rad.
        root_qadr, root_dadr: int, first qpos / qvel column of the root's free joint.
        joint_qadr, joint_dadr: (J,) int64, qpos / qvel column of each joint (robot order).
        qpos: (M, nq) float64, written. qvel: (M, nv) float64, written.
    """
    nj = ref_joint_pos.shape[1]
    for m in prange(qpos.shape[0]):
        f = frames[m]
        u = unit_random[m]
        d = [0.0] * 12
        for k in range(6):
            d[k] = pose_range[k, 0] + (pose_range[k, 1] - pose_range[k, 0]) * u[k]
            d[6 + k] = vel_range[k, 0] + (vel_range[k, 1] - vel_range[k, 0]) * u[6 + k]
        for k in range(3):
            qpos[m, root_qadr + k] = body_pos_w[f, root, k] + d[k]
        cr, sr = math.cos(0.5 * d[3]), math.sin(0.5 * d[3])
        cp, sp = math.cos(0.5 * d[4]), math.sin(0.5 * d[4])
        cy, sy = math.cos(0.5 * d[5]), math.sin(0.5 * d[5])
        # q(roll, pitch, yaw) = qz(yaw) * qy(pitch) * qx(roll)
        ew, ex, ey, ez = quat_mul(cy, 0.0, 0.0, sy, cp, 0.0, sp, 0.0)
        ew, ex, ey, ez = quat_mul(ew, ex, ey, ez, cr, sr, 0.0, 0.0)
        r = body_quat_w[f, root]
        w, x, y, z = quat_mul(ew, ex, ey, ez, r[0], r[1], r[2], r[3])
        norm = math.sqrt(w * w + x * x + y * y + z * z)
        w, x, y, z = w / norm, x / norm, y / norm, z / norm
        qpos[m, root_qadr + 3] = w
        qpos[m, root_qadr + 4] = x
        qpos[m, root_qadr + 5] = y
        qpos[m, root_qadr + 6] = z
        for k in range(3):
            qvel[m, root_dadr + k] = body_lin_vel_w[f, root, k] + d[6 + k]
        ax, ay, az = quat_rotate_inverse(
            w,
            x,
            y,
            z,
            body_ang_vel_w[f, root, 0] + d[9],
            body_ang_vel_w[f, root, 1] + d[10],
            body_ang_vel_w[f, root, 2] + d[11],
        )
        qvel[m, root_dadr + 3] = ax
        qvel[m, root_dadr + 4] = ay
        qvel[m, root_dadr + 5] = az
        lo, hi = joint_pos_range[0], joint_pos_range[1]
        for j in range(nj):
            q = ref_joint_pos[f, j] + lo + (hi - lo) * u[12 + j]
            qpos[m, joint_qadr[j]] = min(max(q, soft_limits[j, 0]), soft_limits[j, 1])
            qvel[m, joint_dadr[j]] = ref_joint_vel[f, j]
