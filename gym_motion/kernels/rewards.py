"""Reward kernels (docs/task.md section 7). Each writes one value per env into ``out`` (N,) float32.

Tracking terms are Gaussian kernels ``exp(-err^2 / std^2)`` of the BeyondMimic task
(Liao et al., 2025, "BeyondMimic", Table I). Body terms average the squared error over the
selected bodies ``body_ids`` (K,) int before the exponential.
"""

from __future__ import annotations

import math

from numba import njit, prange

from gym_motion.kernels.dispatch import row_kernel
from gym_motion.kernels.quat import quat_angle_between


@njit(cache=True, inline="always")
def _pos_exp(ref, robot, inv):
    """exp(-|ref - robot|^2 * inv) of one point, (3,) float32."""
    dx = ref[0] - robot[0]
    dy = ref[1] - robot[1]
    dz = ref[2] - robot[2]
    return math.exp(-(dx * dx + dy * dy + dz * dz) * inv)


@njit(cache=True, inline="always")
def _ori_exp(ref, robot, inv):
    """exp(-angle(ref, robot)^2 * inv) of one orientation, (4,) float32 wxyz."""
    ang = quat_angle_between(ref[0], ref[1], ref[2], ref[3], robot[0], robot[1], robot[2], robot[3])
    return math.exp(-ang * ang * inv)


@njit(cache=True, inline="always")
def _bodies_pos_exp(ref, robot, body_ids, inv):
    """exp(-sum_k |ref[k] - robot[k]|^2 * inv) over `body_ids`; ref, robot (B, 3) float32."""
    acc = 0.0
    for b in body_ids:
        for d in range(3):
            e = ref[b, d] - robot[b, d]
            acc += e * e
    return math.exp(-acc * inv)


@njit(cache=True, inline="always")
def _bodies_ori_exp(ref, robot, body_ids, inv):
    """exp(-sum_k angle(ref[k], robot[k])^2 * inv) over `body_ids`; (B, 4) float32 wxyz."""
    acc = 0.0
    for b in body_ids:
        a, q = ref[b], robot[b]
        ang = quat_angle_between(a[0], a[1], a[2], a[3], q[0], q[1], q[2], q[3])
        acc += ang * ang
    return math.exp(-acc * inv)


@njit(cache=True, inline="always")
def _sq_diff_sum(action, last_action):
    """sum_j (a_j - b_j)^2 of two (J,) float32 rows."""
    acc = 0.0
    for j in range(action.shape[0]):
        d = action[j] - last_action[j]
        acc += d * d
    return acc


@njit(cache=True, inline="always")
def _limit_violation(joint_pos, soft_limits):
    """sum_j of how far joint_pos (J,) is outside soft_limits (J, 2)."""
    acc = 0.0
    for j in range(joint_pos.shape[0]):
        q = joint_pos[j]
        acc += max(soft_limits[j, 0] - q, 0.0) + max(q - soft_limits[j, 1], 0.0)
    return acc


@row_kernel
def anchor_pos_exp(ref_pos_w, robot_pos_w, std, out):
    """exp(-|p_ref - p|^2 / std^2) of the anchor; positions (N, 3) float32, world frame, m."""
    inv = 1.0 / (std * std)
    for i in prange(out.shape[0]):
        out[i] = _pos_exp(ref_pos_w[i], robot_pos_w[i], inv)


@row_kernel
def anchor_ori_exp(ref_quat_w, robot_quat_w, std, out):
    """exp(-angle(q_ref, q)^2 / std^2) of the anchor; quaternions (N, 4) float32 wxyz, rad."""
    inv = 1.0 / (std * std)
    for i in prange(out.shape[0]):
        out[i] = _ori_exp(ref_quat_w[i], robot_quat_w[i], inv)


@row_kernel
def body_pos_exp(ref_pos_w, robot_pos_w, body_ids, std, out):
    """exp(-mean_k |p_ref[k] - p[k]|^2 / std^2); positions (N, B, 3) float32, m.

    Also used for linear and angular body velocities (same formula, other units and std).
    """
    inv = 1.0 / (std * std * body_ids.shape[0])
    for i in prange(out.shape[0]):
        out[i] = _bodies_pos_exp(ref_pos_w[i], robot_pos_w[i], body_ids, inv)


@row_kernel
def body_ori_exp(ref_quat_w, robot_quat_w, body_ids, std, out):
    """exp(-mean_k angle(q_ref[k], q[k])^2 / std^2); quaternions (N, B, 4) float32, wxyz."""
    inv = 1.0 / (std * std * body_ids.shape[0])
    for i in prange(out.shape[0]):
        out[i] = _bodies_ori_exp(ref_quat_w[i], robot_quat_w[i], body_ids, inv)


@row_kernel
def action_rate_l2(action, last_action, out):
    """sum_j (a_t - a_{t-1})^2; actions (N, J) float32."""
    for i in prange(out.shape[0]):
        out[i] = _sq_diff_sum(action[i], last_action[i])


@row_kernel
def joint_limit_violation(joint_pos, soft_limits, out):
    """sum_j of how far each joint is outside [lower_j, upper_j], rad.

    Args:
        joint_pos: (N, J) float32, rad.
        soft_limits: (J, 2) float32, (lower, upper) soft limits, rad.
    """
    for i in prange(out.shape[0]):
        out[i] = _limit_violation(joint_pos[i], soft_limits)


# Codes of the terms `reward_terms` evaluates in one pass (the built-in terms of
# gym_motion.managers.reward, which maps its term functions to them).
ANCHOR_POS, ANCHOR_ORI, BODY_POS, BODY_ORI, BODY_LIN_VEL, BODY_ANG_VEL = 0, 1, 2, 3, 4, 5
ACTION_RATE, JOINT_LIMIT, SELF_COLLISION = 6, 7, 8


@row_kernel
def reward_terms(
    codes, stds, body_ids, body_counts, rows, anchor,
    ref_pos_w, ref_quat_w, ref_rel_pos_w, ref_rel_quat_w, ref_lin_vel_w, ref_ang_vel_w,
    pos_w, quat_w, lin_vel_w, ang_vel_w, action, last_action, joint_pos, soft_limits,
    self_contact_substeps, out,
):  # fmt: skip
    """Several reward terms in one pass over the envs: term t (code ``codes[t]``, one of the
    codes above) is written to ``out[rows[t]]``, each value exactly what its own kernel above
    gives (the same row functions).

    Args:
        codes: (T,) int. stds: (T,) float64 (tracking terms' std, unused otherwise).
        body_ids: (T, B) int, the bodies of each body term in its first ``body_counts[t]``.
        rows: (T,) int, the row of `out` of each term. anchor: int, the anchor's body index.
        ref_*, pos_w ... ang_vel_w: (N, B, 3 or 4) float32, as `gym_motion.managers.state.
            MDPState` holds them (reference, re-anchored reference, robot; world frame).
        action, last_action, joint_pos: (N, J) float32. soft_limits: (J, 2) float32.
        self_contact_substeps: (N,) int32. out: (K, N) float32, rows `rows` written.
    """
    for i in prange(out.shape[1]):
        for t in range(codes.shape[0]):
            c = codes[t]
            std = stds[t]
            ids = body_ids[t, : body_counts[t]]
            if c == ANCHOR_POS:
                v = _pos_exp(ref_pos_w[i, anchor], pos_w[i, anchor], 1.0 / (std * std))
            elif c == ANCHOR_ORI:
                v = _ori_exp(ref_quat_w[i, anchor], quat_w[i, anchor], 1.0 / (std * std))
            elif c == BODY_POS:
                inv = 1.0 / (std * std * ids.shape[0])
                v = _bodies_pos_exp(ref_rel_pos_w[i], pos_w[i], ids, inv)
            elif c == BODY_ORI:
                inv = 1.0 / (std * std * ids.shape[0])
                v = _bodies_ori_exp(ref_rel_quat_w[i], quat_w[i], ids, inv)
            elif c == BODY_LIN_VEL:
                inv = 1.0 / (std * std * ids.shape[0])
                v = _bodies_pos_exp(ref_lin_vel_w[i], lin_vel_w[i], ids, inv)
            elif c == BODY_ANG_VEL:
                inv = 1.0 / (std * std * ids.shape[0])
                v = _bodies_pos_exp(ref_ang_vel_w[i], ang_vel_w[i], ids, inv)
            elif c == ACTION_RATE:
                v = _sq_diff_sum(action[i], last_action[i])
            elif c == JOINT_LIMIT:
                v = _limit_violation(joint_pos[i], soft_limits)
            else:  # SELF_COLLISION
                v = float(self_contact_substeps[i])
            out[rows[t], i] = v
