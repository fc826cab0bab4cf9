"""Per-step tracking errors for logs and evaluation (not rewards)."""

from __future__ import annotations

import math

from numba import prange

from gym_motion.kernels.dispatch import row_kernel
from gym_motion.kernels.quat import quat_angle_between

TRACKING_ERRORS: tuple[str, ...] = (
    "anchor_pos",  # |p_ref - p| of the anchor, world frame, m
    "anchor_rot",  # rotation angle between reference and robot anchor, rad
    "body_pos",  # mean over bodies of |p_rel_ref - p|, re-anchored reference, m
    "body_rot",  # mean over bodies of angle(q_rel_ref, q), rad
    "joint_pos",  # mean over joints of |q_ref - q|, rad
    "joint_vel",  # mean over joints of |qd_ref - qd|, rad/s
    "mpkpe",  # mean per-body position error, world frame, m
    "root_mpkpe",  # mean per-body position error relative to the root body, m
)


@row_kernel
def tracking_errors(
    ref_pos_w,
    ref_quat_w,
    ref_rel_pos_w,
    ref_rel_quat_w,
    pos_w,
    quat_w,
    anchor,
    root,
    ref_joint_pos,
    ref_joint_vel,
    joint_pos,
    joint_vel,
    out,
    sums,
):
    """Tracking errors of each env, in the order of `TRACKING_ERRORS`.

    Args:
        ref_pos_w, ref_rel_pos_w, pos_w: (N, B, 3) float32, reference (as recorded and
            re-anchored) and robot body positions, world frame, m.
        ref_quat_w, ref_rel_quat_w, quat_w: (N, B, 4) float32, wxyz.
        anchor, root: int, indices of the anchor and root bodies along B.
        ref_joint_pos, ref_joint_vel, joint_pos, joint_vel: (N, J) float32, rad, rad/s.
        out: (N, 8) float32, written.
        sums: (N, 8) float64, `out` added to it (episode sums).
    """
    nb = pos_w.shape[1]
    nj = joint_pos.shape[1]
    for i in prange(out.shape[0]):
        a = anchor
        dx = ref_pos_w[i, a, 0] - pos_w[i, a, 0]
        dy = ref_pos_w[i, a, 1] - pos_w[i, a, 1]
        dz = ref_pos_w[i, a, 2] - pos_w[i, a, 2]
        out[i, 0] = math.sqrt(dx * dx + dy * dy + dz * dz)
        r, q = ref_quat_w[i, a], quat_w[i, a]
        out[i, 1] = quat_angle_between(r[0], r[1], r[2], r[3], q[0], q[1], q[2], q[3])
        body_pos = 0.0
        body_rot = 0.0
        mpkpe = 0.0
        root_mpkpe = 0.0
        for b in range(nb):
            e_rel = 0.0
            e_w = 0.0
            e_root = 0.0
            for d in range(3):
                e = ref_rel_pos_w[i, b, d] - pos_w[i, b, d]
                e_rel += e * e
                e = ref_pos_w[i, b, d] - pos_w[i, b, d]
                e_w += e * e
                e = (ref_pos_w[i, b, d] - ref_pos_w[i, root, d]) - (
                    pos_w[i, b, d] - pos_w[i, root, d]
                )
                e_root += e * e
            body_pos += math.sqrt(e_rel)
            mpkpe += math.sqrt(e_w)
            root_mpkpe += math.sqrt(e_root)
            r, q = ref_rel_quat_w[i, b], quat_w[i, b]
            body_rot += quat_angle_between(r[0], r[1], r[2], r[3], q[0], q[1], q[2], q[3])
        out[i, 2] = body_pos / nb
        out[i, 3] = body_rot / nb
        jp = 0.0
        jv = 0.0
        for j in range(nj):
            jp += abs(ref_joint_pos[i, j] - joint_pos[i, j])
            jv += abs(ref_joint_vel[i, j] - joint_vel[i, j])
        out[i, 4] = jp / nj
        out[i, 5] = jv / nj
        out[i, 6] = mpkpe / nb
        out[i, 7] = root_mpkpe / nb
        for k in range(out.shape[1]):
            sums[i, k] += out[i, k]
