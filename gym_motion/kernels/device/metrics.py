"""Per-step tracking errors (logs and evaluation) for the device: the twin of
`gym_motion.kernels.metrics.tracking_errors`, columns in the order of
`gym_motion.kernels.metrics.TRACKING_ERRORS`."""

from __future__ import annotations

import warp as wp

from gym_motion.kernels.device.quat import quat_angle_between, vec3_at, vec4_at

# no fused multiply-adds on CUDA (its default): the host kernels' operations, one rounding each
wp.set_module_options({"fuse_fp": False})


@wp.kernel
def tracking_errors(
    ref_pos_w: wp.array3d(dtype=float),
    ref_quat_w: wp.array3d(dtype=float),
    ref_rel_pos_w: wp.array3d(dtype=float),
    ref_rel_quat_w: wp.array3d(dtype=float),
    pos_w: wp.array3d(dtype=float),
    quat_w: wp.array3d(dtype=float),
    anchor: int,
    root: int,
    ref_joint_pos: wp.array2d(dtype=float),
    ref_joint_vel: wp.array2d(dtype=float),
    joint_pos: wp.array2d(dtype=float),
    joint_vel: wp.array2d(dtype=float),
    out: wp.array2d(dtype=float),
    sums: wp.array2d(dtype=wp.float64),
):
    """Tracking errors of env i (see the host kernel for each column's meaning and unit);
    out (N, 8) float32 written, sums (N, 8) float64 incremented by it."""
    i = wp.tid()
    nb = pos_w.shape[1]
    nj = joint_pos.shape[1]
    out[i, 0] = wp.length(vec3_at(ref_pos_w, i, anchor) - vec3_at(pos_w, i, anchor))
    out[i, 1] = quat_angle_between(vec4_at(ref_quat_w, i, anchor), vec4_at(quat_w, i, anchor))
    body_pos = float(0.0)
    body_rot = float(0.0)
    mpkpe = float(0.0)
    root_mpkpe = float(0.0)
    ref_root = vec3_at(ref_pos_w, i, root)
    robot_root = vec3_at(pos_w, i, root)
    for b in range(nb):
        p = vec3_at(pos_w, i, b)
        ref = vec3_at(ref_pos_w, i, b)
        body_pos += wp.length(vec3_at(ref_rel_pos_w, i, b) - p)
        mpkpe += wp.length(ref - p)
        root_mpkpe += wp.length((ref - ref_root) - (p - robot_root))
        body_rot += quat_angle_between(vec4_at(ref_rel_quat_w, i, b), vec4_at(quat_w, i, b))
    out[i, 2] = body_pos / float(nb)
    out[i, 3] = body_rot / float(nb)
    jp = float(0.0)
    jv = float(0.0)
    for j in range(nj):
        jp += wp.abs(ref_joint_pos[i, j] - joint_pos[i, j])
        jv += wp.abs(ref_joint_vel[i, j] - joint_vel[i, j])
    out[i, 4] = jp / float(nj)
    out[i, 5] = jv / float(nj)
    out[i, 6] = mpkpe / float(nb)
    out[i, 7] = root_mpkpe / float(nb)
    for k in range(8):
        sums[i, k] = sums[i, k] + wp.float64(out[i, k])
