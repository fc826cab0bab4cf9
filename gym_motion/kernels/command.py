"""The motion command's per-step kernel: advance the motion, gather the reference frame and
re-anchor it onto the robot (docs/task.md section 4), in one pass over the rows."""

from __future__ import annotations

from numba import njit, prange

from gym_motion.kernels.cache import CACHE
from gym_motion.kernels.dispatch import row_kernel
from gym_motion.kernels.quat import quat_mul, quat_rotate, yaw_quat


@njit(cache=CACHE, inline="always")
def _reanchor_row(i, ref_pos_w, ref_quat_w, anchor, robot_anchor_pos_w, robot_anchor_quat_w,
                  out_pos, out_quat):  # fmt: skip
    """Row `i` of `reference_step`'s re-anchoring (see there)."""
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
    for b in range(ref_pos_w.shape[1]):
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


@njit(cache=CACHE, inline="always")
def _gather_row(i, r, lib_pos_w, lib_quat_w, lib_lin_vel_w, lib_ang_vel_w, lib_joint_pos,
                lib_joint_vel, body_ids, pos_w, quat_w, lin_vel_w, ang_vel_w, joint_pos,
                joint_vel):  # fmt: skip
    """Row `i` of the reference: library frame `r`'s bodies `body_ids` and joints."""
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


@row_kernel
def reference_step(
    starts, lengths, clip_ids, frames, advance, clip_end,
    lib_pos_w, lib_quat_w, lib_lin_vel_w, lib_ang_vel_w, lib_joint_pos, lib_joint_vel, body_ids,
    anchor, robot_anchor_pos_w, robot_anchor_quat_w, env_ids,
    ref_pos_w, ref_quat_w, ref_lin_vel_w, ref_ang_vel_w, ref_joint_pos, ref_joint_vel,
    out_pos, out_quat,
):  # fmt: skip
    """The reference of rows `env_ids` at their motion frame, optionally advanced one frame.

    Per row i of `env_ids`:

    1. if `advance`: ``frames[i] += 1``; ``clip_end[i]`` = it passed its clip's last frame
       ``lengths[clip_ids[i]] - 1``, where it is then held;
    2. gather library frame ``starts[clip_ids[i]] + frames[i]``: bodies `body_ids` into
       `ref_*_w`, joints into `ref_joint_*`;
    3. re-anchor the reference bodies under the robot's anchor: with dp = (robot anchor x,
       robot anchor y, reference anchor z) and dq the yaw part of
       q_anchor_robot * inverse(q_anchor_ref),
       ``out_pos[b] = dp + R(dq) (p_ref[b] - p_ref[anchor])`` and ``out_quat[b] = dq * q_ref[b]``.

    Other rows are untouched.

    Args:
        starts, lengths: (C,) int, each clip's first flat frame and its frame count.
        clip_ids, frames: (N,) int32, clip and frame of each env (`frames` written if advance).
        advance: bool. clip_end: (N,) bool, written if advance.
        lib_pos_w, lib_quat_w, lib_lin_vel_w, lib_ang_vel_w: (F, B_all, 3 or 4) float32 library
            body frames (world frame of the clip; m, wxyz, m/s, rad/s).
        lib_joint_pos, lib_joint_vel: (F, J) float32, rad and rad/s.
        body_ids: (B,) int, the library bodies tracked, in tracked order.
        anchor: int, index of the anchor along B.
        robot_anchor_pos_w: (N, 3) float32, m. robot_anchor_quat_w: (N, 4) float32, wxyz.
        env_ids: (M,) int, the rows to compute.
        ref_pos_w, ref_quat_w, ref_lin_vel_w, ref_ang_vel_w: (N, B, 3 or 4) float32, written.
        ref_joint_pos, ref_joint_vel: (N, J) float32, written.
        out_pos: (N, B, 3) float32, written: re-anchored reference positions, world frame, m.
        out_quat: (N, B, 4) float32, written: re-anchored reference orientations, wxyz.
    """
    for m in prange(env_ids.shape[0]):
        i = env_ids[m]
        c = clip_ids[i]
        if advance:
            last = lengths[c] - 1
            f = frames[i] + 1
            clip_end[i] = f > last
            frames[i] = min(f, last)
        _gather_row(
            i, starts[c] + frames[i], lib_pos_w, lib_quat_w, lib_lin_vel_w, lib_ang_vel_w,
            lib_joint_pos, lib_joint_vel, body_ids,
            ref_pos_w, ref_quat_w, ref_lin_vel_w, ref_ang_vel_w, ref_joint_pos, ref_joint_vel,
        )  # fmt: skip
        _reanchor_row(
            i, ref_pos_w, ref_quat_w, anchor, robot_anchor_pos_w, robot_anchor_quat_w,
            out_pos, out_quat,
        )  # fmt: skip


@row_kernel
def observed_reference(
    starts, lengths, clip_ids, frames, offset,
    lib_pos_w, lib_quat_w, lib_lin_vel_w, lib_ang_vel_w, lib_joint_pos, lib_joint_vel, body_ids,
    env_ids, pos_w, quat_w, lin_vel_w, ang_vel_w, joint_pos, joint_vel,
):  # fmt: skip
    """The reference the policy observes: rows `env_ids` gathered `offset` frames after their
    motion frame, held at their clip's last frame (docs/task.md section 5).

    Per row i of `env_ids`: library frame ``starts[c] + min(frames[i] + offset, lengths[c] -
    1)`` with ``c = clip_ids[i]``, bodies `body_ids` into `*_w`, joints into `joint_*`. With
    offset 1 the policy sees the frame its next step is scored on, as mjlab's does (its
    command advances once after a reset); with 0 the frame its robot is on.

    Args:
        starts, lengths: (C,) int, each clip's first flat frame and its frame count.
        clip_ids, frames: (N,) int32, clip and frame of each env. offset: int, >= 0.
        lib_pos_w, lib_quat_w, lib_lin_vel_w, lib_ang_vel_w: (F, B_all, 3 or 4) float32 library
            body frames (world frame of the clip; m, wxyz, m/s, rad/s).
        lib_joint_pos, lib_joint_vel: (F, J) float32, rad and rad/s.
        body_ids: (B,) int, the library bodies tracked, in tracked order.
        env_ids: (M,) int, the rows to compute.
        pos_w, quat_w, lin_vel_w, ang_vel_w: (N, B, 3 or 4) float32, written.
        joint_pos, joint_vel: (N, J) float32, written.
    """
    for m in prange(env_ids.shape[0]):
        i = env_ids[m]
        c = clip_ids[i]
        f = min(frames[i] + offset, lengths[c] - 1)
        _gather_row(
            i, starts[c] + f, lib_pos_w, lib_quat_w, lib_lin_vel_w, lib_ang_vel_w,
            lib_joint_pos, lib_joint_vel, body_ids, pos_w, quat_w, lin_vel_w, ang_vel_w,
            joint_pos, joint_vel,
        )  # fmt: skip
