"""Reference state initialisation (RSI, docs/task.md section 9) for the device: the twin of
`gym_motion.kernels.reset.rsi_state`, in float64 as the host kernel computes it (the state it
writes is the physics' starting point, where a rounding difference would grow), and the
pointing of reset rows at their start frames."""

from __future__ import annotations

import warp as wp

from gym_motion.kernels.device.quat import quat_mul, quat_rotate_inverse

F64 = wp.float64
# no fused multiply-adds on CUDA (its default): the host's float64 operations, one rounding each
wp.set_module_options({"fuse_fp": False})


@wp.kernel
def point_rows(
    rows: wp.array(dtype=int),
    start: wp.array2d(dtype=wp.int32),
    starts: wp.array(dtype=int),
    clip_ids: wp.array(dtype=wp.int32),
    frames: wp.array(dtype=wp.int32),
    clip_end: wp.array(dtype=wp.bool),
    library_frames: wp.array(dtype=int),
):
    """Point row ``rows[m]`` at clip ``start[m, 0]``, frame ``start[m, 1]``, its clip end
    cleared (the host's `CommandManager.set_frames`), and give its frame's index in the
    library's arrays, ``library_frames[m] = starts[clip] + frame`` (one thread per reset
    row)."""
    m = wp.tid()
    i = rows[m]
    clip_ids[i] = start[m, 0]
    frames[i] = start[m, 1]
    clip_end[i] = False
    library_frames[m] = starts[int(start[m, 0])] + int(start[m, 1])


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
    unit_random: wp.array2d(dtype=F64),
    pose_range: wp.array2d(dtype=F64),
    vel_range: wp.array2d(dtype=F64),
    joint_pos_range: wp.array(dtype=F64),
    soft_limits: wp.array2d(dtype=float),
    root_qadr: int,
    root_dadr: int,
    joint_qadr: wp.array(dtype=int),
    joint_dadr: wp.array(dtype=int),
    qpos: wp.array2d(dtype=F64),
    qvel: wp.array2d(dtype=F64),
):
    """Row m's robot state near library frame ``frames[m]``: the host kernel's noise model,
    columns and float64 operations (see there; the library's float32 values widened). Columns
    not of the robot are left as they are (one thread per reset row)."""
    m = wp.tid()
    f = frames[m]
    d = wp.vector(dtype=F64, length=12)
    for k in range(6):
        d[k] = pose_range[k, 0] + (pose_range[k, 1] - pose_range[k, 0]) * unit_random[m, k]
        d[6 + k] = vel_range[k, 0] + (vel_range[k, 1] - vel_range[k, 0]) * unit_random[m, 6 + k]
    for k in range(3):
        qpos[m, root_qadr + k] = F64(body_pos_w[f, root, k]) + d[k]
    half = F64(0.5)
    zero = F64(0.0)
    yaw = wp.vec4d(wp.cos(half * d[5]), zero, zero, wp.sin(half * d[5]))
    pitch = wp.vec4d(wp.cos(half * d[4]), zero, wp.sin(half * d[4]), zero)
    roll = wp.vec4d(wp.cos(half * d[3]), wp.sin(half * d[3]), zero, zero)
    e = quat_mul(quat_mul(yaw, pitch), roll)  # q(roll, pitch, yaw) = qz qy qx
    r = wp.vec4d(F64(body_quat_w[f, root, 0]), F64(body_quat_w[f, root, 1]),
                 F64(body_quat_w[f, root, 2]), F64(body_quat_w[f, root, 3]))  # fmt: skip
    q = quat_mul(e, r)
    norm = wp.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    q = wp.vec4d(q[0] / norm, q[1] / norm, q[2] / norm, q[3] / norm)
    for k in range(4):
        qpos[m, root_qadr + 3 + k] = q[k]
    for k in range(3):
        qvel[m, root_dadr + k] = F64(body_lin_vel_w[f, root, k]) + d[6 + k]
    w = wp.vec3d(
        F64(body_ang_vel_w[f, root, 0]) + d[9],
        F64(body_ang_vel_w[f, root, 1]) + d[10],
        F64(body_ang_vel_w[f, root, 2]) + d[11],
    )
    w_body = quat_rotate_inverse(q, w)
    for k in range(3):
        qvel[m, root_dadr + 3 + k] = w_body[k]
    lo, hi = joint_pos_range[0], joint_pos_range[1]
    for j in range(ref_joint_pos.shape[1]):
        a = F64(ref_joint_pos[f, j]) + lo + (hi - lo) * unit_random[m, 12 + j]
        lower, upper = F64(soft_limits[j, 0]), F64(soft_limits[j, 1])
        qpos[m, joint_qadr[j]] = wp.min(wp.max(a, lower), upper)
        qvel[m, joint_dadr[j]] = F64(ref_joint_vel[f, j])
