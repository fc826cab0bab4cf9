"""Reward kernels (docs/task.md section 7). Each writes one value per env into ``out`` (N,) float32.

Tracking terms are Gaussian kernels ``exp(-err^2 / std^2)`` of the BeyondMimic task
(Liao et al., 2025, "BeyondMimic", Table I). Body terms average the squared error over the
selected bodies ``body_ids`` (K,) int before the exponential.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from gym_motion.kernels.cache import CACHE
from gym_motion.kernels.dispatch import row_kernel
from gym_motion.kernels.quat import quat_angle_between


@row_kernel
def anchor_pos_exp(ref_pos_w, robot_pos_w, std, out):
    """exp(-|p_ref - p|^2 / std^2) of the anchor; positions (N, 3) float32, world frame, m."""
    inv = 1.0 / (std * std)
    for i in prange(out.shape[0]):
        dx = ref_pos_w[i, 0] - robot_pos_w[i, 0]
        dy = ref_pos_w[i, 1] - robot_pos_w[i, 1]
        dz = ref_pos_w[i, 2] - robot_pos_w[i, 2]
        out[i] = math.exp(-(dx * dx + dy * dy + dz * dz) * inv)


@row_kernel
def anchor_ori_exp(ref_quat_w, robot_quat_w, std, out):
    """exp(-angle(q_ref, q)^2 / std^2) of the anchor; quaternions (N, 4) float32 wxyz, rad."""
    inv = 1.0 / (std * std)
    for i in prange(out.shape[0]):
        a, b = ref_quat_w[i], robot_quat_w[i]
        ang = quat_angle_between(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3])
        out[i] = math.exp(-ang * ang * inv)


@row_kernel
def body_pos_exp(ref_pos_w, robot_pos_w, body_ids, std, out):
    """exp(-mean_k |p_ref[k] - p[k]|^2 / std^2); positions (N, B, 3) float32, m.

    Also used for linear and angular body velocities (same formula, other units and std).
    """
    inv = 1.0 / (std * std * body_ids.shape[0])
    for i in prange(out.shape[0]):
        acc = 0.0
        for b in body_ids:
            for d in range(3):
                e = ref_pos_w[i, b, d] - robot_pos_w[i, b, d]
                acc += e * e
        out[i] = math.exp(-acc * inv)


@row_kernel
def body_ori_exp(ref_quat_w, robot_quat_w, body_ids, std, out):
    """exp(-mean_k angle(q_ref[k], q[k])^2 / std^2); quaternions (N, B, 4) float32, wxyz."""
    inv = 1.0 / (std * std * body_ids.shape[0])
    for i in prange(out.shape[0]):
        acc = 0.0
        for b in body_ids:
            a, q = ref_quat_w[i, b], robot_quat_w[i, b]
            ang = quat_angle_between(a[0], a[1], a[2], a[3], q[0], q[1], q[2], q[3])
            acc += ang * ang
        out[i] = math.exp(-acc * inv)


@row_kernel
def action_rate_l2(action, last_action, out):
    """sum_j (a_t - a_{t-1})^2; actions (N, J) float32."""
    for i in prange(out.shape[0]):
        acc = 0.0
        for j in range(action.shape[1]):
            d = action[i, j] - last_action[i, j]
            acc += d * d
        out[i] = acc


@row_kernel
def joint_limit_violation(joint_pos, soft_limits, out):
    """sum_j of how far each joint is outside [lower_j, upper_j], rad.

    Args:
        joint_pos: (N, J) float32, rad.
        soft_limits: (J, 2) float32, (lower, upper) soft limits, rad.
    """
    for i in prange(out.shape[0]):
        acc = 0.0
        for j in range(joint_pos.shape[1]):
            q = joint_pos[i, j]
            acc += max(soft_limits[j, 0] - q, 0.0) + max(q - soft_limits[j, 1], 0.0)
        out[i] = acc


@row_kernel
def weigh_terms(raw, weights, dt, weighted, reward):
    """``weighted[i, k] = raw[k, i] * weights[k]`` and ``reward[i] = dt * sum_k weighted[i, k]``,
    float32; the sum as NumPy's ``np.sum(weighted, axis=1)``, bit for bit (tested).

    raw (K, N) float32, the terms' values; weights (K,) float32; dt float32, s; weighted (N, K)
    and reward (N,) float32 are written.
    """
    nk = raw.shape[0]
    for i in prange(reward.shape[0]):
        row = weighted[i]
        for k in range(nk):
            row[k] = raw[k, i] * weights[k]
        # NumPy's add.reduce: the identity 0.0 plus the pairwise sum (so -0.0 sums give 0.0)
        reward[i] = (np.float32(0.0) + _numpy_pairwise_sum(row)) * dt


@njit(cache=CACHE)
def _numpy_pairwise_sum(x):
    """Sum of a float32 vector in the order of NumPy's ``pairwise_sum``
    (numpy/_core/src/umath/loops_utils.h.src): sequential below 8 values; up to 128, 8
    interleaved partial sums combined as a tree, then the remainder; above, the two halves
    (split at a multiple of 8) summed so and added."""
    n = x.shape[0]
    if n < 8:
        res = np.float32(0.0)
        for i in range(n):
            res += x[i]
        return res
    if n > 128:
        half = n // 2
        half -= half % 8
        return _numpy_pairwise_sum(x[:half]) + _numpy_pairwise_sum(x[half:])
    r0, r1, r2, r3, r4, r5, r6, r7 = x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]
    i = 8
    while i < n - n % 8:
        r0 += x[i]
        r1 += x[i + 1]
        r2 += x[i + 2]
        r3 += x[i + 3]
        r4 += x[i + 4]
        r5 += x[i + 5]
        r6 += x[i + 6]
        r7 += x[i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += x[i]
        i += 1
    return res


@row_kernel
def add_episode_sums(weighted, dt, term_sums, episode_return, reward, columns):
    """Episode sums of one step: ``term_sums[i, k] += weighted[i, k] * dt`` (the product in
    float32) and ``episode_return[i] += reward[i]``; ``columns[k, i] = weighted[i, k]``.

    weighted (N, K) float32; dt float32, s; reward (N,) float32; term_sums (N, K) and
    episode_return (N,) float64, updated in place; columns (K, N) float32, written.
    """
    for i in prange(reward.shape[0]):
        for k in range(weighted.shape[1]):
            term_sums[i, k] += weighted[i, k] * dt
            columns[k, i] = weighted[i, k]
        episode_return[i] += reward[i]
