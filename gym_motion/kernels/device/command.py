"""The motion command's per-step kernel for the device: the twin of
`gym_motion.kernels.command.reference_step` (advance the motion, gather the reference frame,
re-anchor it onto the robot; docs/task.md section 4)."""

from __future__ import annotations

import warp as wp

from gym_motion.kernels.device.quat import quat_mul, quat_rotate, row3, row4, vec4_at, yaw_quat

# no fused multiply-adds on CUDA (its default): the host kernels' operations, one rounding each
wp.set_module_options({"fuse_fp": False})


@wp.func
def gather_row(
    i: int,
    r: int,
    lib_pos_w: wp.array3d(dtype=float),
    lib_quat_w: wp.array3d(dtype=float),
    lib_lin_vel_w: wp.array3d(dtype=float),
    lib_ang_vel_w: wp.array3d(dtype=float),
    lib_joint_pos: wp.array2d(dtype=float),
    lib_joint_vel: wp.array2d(dtype=float),
    body_ids: wp.array(dtype=int),
    pos_w: wp.array3d(dtype=float),
    quat_w: wp.array3d(dtype=float),
    lin_vel_w: wp.array3d(dtype=float),
    ang_vel_w: wp.array3d(dtype=float),
    joint_pos: wp.array2d(dtype=float),
    joint_vel: wp.array2d(dtype=float),
):
    """Row `i` of a reference: library frame `r`'s bodies `body_ids` and joints (the host
    kernels' ``_gather_row``)."""
    for k in range(body_ids.shape[0]):
        src = body_ids[k]
        for d in range(3):
            pos_w[i, k, d] = lib_pos_w[r, src, d]
            lin_vel_w[i, k, d] = lib_lin_vel_w[r, src, d]
            ang_vel_w[i, k, d] = lib_ang_vel_w[r, src, d]
        for d in range(4):
            quat_w[i, k, d] = lib_quat_w[r, src, d]
    for j in range(lib_joint_pos.shape[1]):
        joint_pos[i, j] = lib_joint_pos[r, j]
        joint_vel[i, j] = lib_joint_vel[r, j]


@wp.kernel
def reference_step(
    starts: wp.array(dtype=int),
    lengths: wp.array(dtype=int),
    clip_ids: wp.array(dtype=wp.int32),
    frames: wp.array(dtype=wp.int32),
    advance: bool,
    clip_end: wp.array(dtype=wp.bool),
    lib_pos_w: wp.array3d(dtype=float),
    lib_quat_w: wp.array3d(dtype=float),
    lib_lin_vel_w: wp.array3d(dtype=float),
    lib_ang_vel_w: wp.array3d(dtype=float),
    lib_joint_pos: wp.array2d(dtype=float),
    lib_joint_vel: wp.array2d(dtype=float),
    body_ids: wp.array(dtype=int),
    anchor: int,
    robot_anchor_pos_w: wp.array2d(dtype=float),
    robot_anchor_quat_w: wp.array2d(dtype=float),
    env_ids: wp.array(dtype=int),
    ref_pos_w: wp.array3d(dtype=float),
    ref_quat_w: wp.array3d(dtype=float),
    ref_lin_vel_w: wp.array3d(dtype=float),
    ref_ang_vel_w: wp.array3d(dtype=float),
    ref_joint_pos: wp.array2d(dtype=float),
    ref_joint_vel: wp.array2d(dtype=float),
    out_pos: wp.array3d(dtype=float),
    out_quat: wp.array3d(dtype=float),
):
    """The reference of row ``env_ids[tid]`` at its motion frame, optionally advanced one
    frame, gathered and re-anchored; arguments, shapes and steps as the host kernel's."""
    i = env_ids[wp.tid()]
    c = int(clip_ids[i])
    if advance:
        last = lengths[c] - 1
        f = int(frames[i]) + 1
        clip_end[i] = f > last
        frames[i] = wp.int32(wp.min(f, last))
    r = starts[c] + int(frames[i])
    gather_row(
        i, r, lib_pos_w, lib_quat_w, lib_lin_vel_w, lib_ang_vel_w, lib_joint_pos,
        lib_joint_vel, body_ids, ref_pos_w, ref_quat_w, ref_lin_vel_w, ref_ang_vel_w,
        ref_joint_pos, ref_joint_vel,
    )  # fmt: skip
    a = vec4_at(ref_quat_w, i, anchor)
    dq = yaw_quat(quat_mul(row4(robot_anchor_quat_w, i), wp.vec4(a[0], -a[1], -a[2], -a[3])))
    p_anchor = wp.vec3(ref_pos_w[i, anchor, 0], ref_pos_w[i, anchor, 1], ref_pos_w[i, anchor, 2])
    robot = row3(robot_anchor_pos_w, i)
    origin = wp.vec3(robot[0], robot[1], p_anchor[2])
    for b in range(ref_pos_w.shape[1]):
        p = wp.vec3(ref_pos_w[i, b, 0], ref_pos_w[i, b, 1], ref_pos_w[i, b, 2])
        rp = origin + quat_rotate(dq, p - p_anchor)
        q = quat_mul(dq, vec4_at(ref_quat_w, i, b))
        for d in range(3):
            out_pos[i, b, d] = rp[d]
        for d in range(4):
            out_quat[i, b, d] = q[d]


@wp.kernel
def observed_reference(
    starts: wp.array(dtype=int),
    lengths: wp.array(dtype=int),
    clip_ids: wp.array(dtype=wp.int32),
    frames: wp.array(dtype=wp.int32),
    offset: int,
    lib_pos_w: wp.array3d(dtype=float),
    lib_quat_w: wp.array3d(dtype=float),
    lib_lin_vel_w: wp.array3d(dtype=float),
    lib_ang_vel_w: wp.array3d(dtype=float),
    lib_joint_pos: wp.array2d(dtype=float),
    lib_joint_vel: wp.array2d(dtype=float),
    body_ids: wp.array(dtype=int),
    env_ids: wp.array(dtype=int),
    pos_w: wp.array3d(dtype=float),
    quat_w: wp.array3d(dtype=float),
    lin_vel_w: wp.array3d(dtype=float),
    ang_vel_w: wp.array3d(dtype=float),
    joint_pos: wp.array2d(dtype=float),
    joint_vel: wp.array2d(dtype=float),
):
    """The reference row ``env_ids[tid]``'s policy observes: `offset` frames after its motion
    frame, held at its clip's last; arguments and shapes as the host kernel's."""
    i = env_ids[wp.tid()]
    c = int(clip_ids[i])
    r = starts[c] + wp.min(int(frames[i]) + offset, lengths[c] - 1)
    gather_row(
        i, r, lib_pos_w, lib_quat_w, lib_lin_vel_w, lib_ang_vel_w, lib_joint_pos,
        lib_joint_vel, body_ids, pos_w, quat_w, lin_vel_w, ang_vel_w, joint_pos, joint_vel,
    )  # fmt: skip
