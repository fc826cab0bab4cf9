"""Reference state initialisation (RSI, docs/task.md section 9) for the device: the twin of
`gym_motion.kernels.reset.rsi_state`, writing MuJoCo qpos and qvel rows as float64 like its
twin (MuJoCo Warp's ``Data`` holds float32: the caller casts)."""

from __future__ import annotations

import warp as wp

from gym_motion.kernels.device.quat import quat_mul, quat_rotate_inverse, vec4_at


@wp.kernel
def rsi_state(
    body_pos_w: wp.array3d(dtype=float),
    body_quat_w: wp.array3d(dtype=float),
    body_lin_vel_w: wp.array3d(dtype=float),
    body_ang_vel_w: wp.array3d(dtype=float),
    ref_joint_pos: wp.array2d(dtype=float),
    ref_joint_vel: wp.array2d(dtype=float),
    root: int,
    frames: wp.array(dtype=int),
    unit_random: wp.array2d(dtype=float),
    pose_range: wp.array2d(dtype=float),
    vel_range: wp.array2d(dtype=float),
    joint_pos_range: wp.array(dtype=float),
    soft_limits: wp.array2d(dtype=float),
    root_qadr: int,
    root_dadr: int,
    joint_qadr: wp.array(dtype=int),
    joint_dadr: wp.array(dtype=int),
    qpos: wp.array2d(dtype=wp.float64),
    qvel: wp.array2d(dtype=wp.float64),
):
    """Row m's robot state near reference frame ``frames[m]``: the host kernel's noise model
    and columns (see there); float32 math, written as float64."""
    m = wp.tid()
    f = frames[m]
    d = wp.vector(dtype=float, length=12)
    for k in range(6):
        d[k] = pose_range[k, 0] + (pose_range[k, 1] - pose_range[k, 0]) * unit_random[m, k]
        d[6 + k] = vel_range[k, 0] + (vel_range[k, 1] - vel_range[k, 0]) * unit_random[m, 6 + k]
    for k in range(3):
        qpos[m, root_qadr + k] = wp.float64(body_pos_w[f, root, k] + d[k])
    yaw = wp.vec4(wp.cos(0.5 * d[5]), 0.0, 0.0, wp.sin(0.5 * d[5]))
    pitch = wp.vec4(wp.cos(0.5 * d[4]), 0.0, wp.sin(0.5 * d[4]), 0.0)
    roll = wp.vec4(wp.cos(0.5 * d[3]), wp.sin(0.5 * d[3]), 0.0, 0.0)
    e = quat_mul(quat_mul(yaw, pitch), roll)  # q(roll, pitch, yaw) = qz qy qx
    q = quat_mul(e, vec4_at(body_quat_w, f, root))
    q = q / wp.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    for k in range(4):
        qpos[m, root_qadr + 3 + k] = wp.float64(q[k])
    for k in range(3):
        qvel[m, root_dadr + k] = wp.float64(body_lin_vel_w[f, root, k] + d[6 + k])
    w = wp.vec3(
        body_ang_vel_w[f, root, 0] + d[9],
        body_ang_vel_w[f, root, 1] + d[10],
        body_ang_vel_w[f, root, 2] + d[11],
    )
    w_body = quat_rotate_inverse(q, w)
    for k in range(3):
        qvel[m, root_dadr + 3 + k] = wp.float64(w_body[k])
    lo, hi = joint_pos_range[0], joint_pos_range[1]
    for j in range(ref_joint_pos.shape[1]):
        a = ref_joint_pos[f, j] + lo + (hi - lo) * unit_random[m, 12 + j]
        qpos[m, joint_qadr[j]] = wp.float64(wp.min(wp.max(a, soft_limits[j, 0]), soft_limits[j, 1]))
        qvel[m, joint_dadr[j]] = wp.float64(ref_joint_vel[f, j])
