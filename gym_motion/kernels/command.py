"""Re-anchoring of the reference motion onto the robot (docs/task.md section 4)."""

from __future__ import annotations

from numba import njit, prange

from gym_motion.kernels.quat import quat_mul, quat_rotate, yaw_quat


@njit(parallel=True, cache=True)
def reanchor_bodies(
    ref_pos_w, ref_quat_w, anchor, robot_anchor_pos_w, robot_anchor_quat_w, env_ids, out_pos,
    out_quat,
):  # fmt: skip
    """Move the reference bodies so that its anchor sits under the robot's anchor.

    With dp = (robot anchor x, robot anchor y, reference anchor z) and dq the yaw part of
    q_anchor_robot * inverse(q_anchor_ref):
    ``out_pos[b] = dp + R(dq) (p_ref[b] - p_ref[anchor])`` and ``out_quat[b] = dq * q_ref[b]``.

    Args:
        ref_pos_w: (N, B, 3) float32, reference body positions, world frame, m.
        ref_quat_w: (N, B, 4) float32, reference body orientations, wxyz.
        anchor: int, index of the anchor body along B.
        robot_anchor_pos_w: (N, 3) float32, robot anchor position, world frame, m.
        robot_anchor_quat_w: (N, 4) float32, robot anchor orientation, wxyz.
        env_ids: (M,) int, the rows to compute; other rows of the outputs are untouched.
        out_pos: (N, B, 3) float32, written: re-anchored reference positions, world frame, m.
        out_quat: (N, B, 4) float32, written: re-anchored reference orientations, wxyz.
    """
    nb = ref_pos_w.shape[1]
    for m in prange(env_ids.shape[0]):
        i = env_ids[m]
        aw, ax, ay, az = (
            ref_quat_w[i, anchor, 0],
            ref_quat_w[i, anchor, 1],
            ref_quat_w[i, anchor, 2],
            ref_quat_w[i, anchor, 3],
        )
        rq = robot_anchor_quat_w[i]
        qw, qx, qy, qz = quat_mul(rq[0], rq[1], rq[2], rq[3], aw, -ax, -ay, -az)
        dw, dx, dy, dz = yaw_quat(qw, qx, qy, qz)
        px, py, pz = ref_pos_w[i, anchor, 0], ref_pos_w[i, anchor, 1], ref_pos_w[i, anchor, 2]
        ox, oy, oz = robot_anchor_pos_w[i, 0], robot_anchor_pos_w[i, 1], pz
        for b in range(nb):
            rx, ry, rz = quat_rotate(
                dw,
                dx,
                dy,
                dz,
                ref_pos_w[i, b, 0] - px,
                ref_pos_w[i, b, 1] - py,
                ref_pos_w[i, b, 2] - pz,
            )
            out_pos[i, b, 0] = ox + rx
            out_pos[i, b, 1] = oy + ry
            out_pos[i, b, 2] = oz + rz
            q = ref_quat_w[i, b]
            w, x, y, z = quat_mul(dw, dx, dy, dz, q[0], q[1], q[2], q[3])
            out_quat[i, b, 0] = w
            out_quat[i, b, 1] = x
            out_quat[i, b, 2] = y
            out_quat[i, b, 3] = z


@njit(parallel=True, cache=True)
def gather_frames(src, row_ids, body_ids, env_ids, out):
    """Gather ``out[i, k] = src[row_ids[i], body_ids[k]]`` for i in `env_ids`.

    Args:
        src: (F, B_all, D) float32, concatenated motion frames.
        row_ids: (N,) int, flat frame index of each env.
        body_ids: (B,) int, which bodies to gather.
        env_ids: (M,) int, the rows to gather; other rows of `out` are untouched.
        out: (N, B, D) float32, written.
    """
    for m in prange(env_ids.shape[0]):
        i = env_ids[m]
        r = row_ids[i]
        for k in range(body_ids.shape[0]):
            for d in range(src.shape[2]):
                out[i, k, d] = src[r, body_ids[k], d]


@njit(parallel=True, cache=True)
def gather_rows(src, row_ids, env_ids, out):
    """Gather ``out[i] = src[row_ids[i]]`` for i in `env_ids` (M,) from a (F, D) array into
    out (N, D); other rows untouched."""
    for m in prange(env_ids.shape[0]):
        i = env_ids[m]
        r = row_ids[i]
        for d in range(src.shape[1]):
            out[i, d] = src[r, d]
