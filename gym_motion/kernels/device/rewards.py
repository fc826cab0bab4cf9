"""Reward kernels (docs/task.md section 7) for the device: twins of `gym_motion.kernels.rewards`.
Each writes one value per env into ``out`` (N,) float32; tracking terms are BeyondMimic's
Gaussian kernels ``exp(-err^2 / std^2)`` (Liao et al., 2025, Table I)."""

from __future__ import annotations

import warp as wp

from gym_motion.kernels.device.quat import quat_angle_between, row3, row4, vec3_at, vec4_at

# no fused multiply-adds on CUDA (its default): the host kernels' operations, one rounding each
wp.set_module_options({"fuse_fp": False})


@wp.kernel
def anchor_pos_exp(
    ref_pos_w: wp.array2d(dtype=float),
    robot_pos_w: wp.array2d(dtype=float),
    std: float,
    out: wp.array(dtype=float),
):
    """exp(-|p_ref - p|^2 / std^2) of the anchor; positions (N, 3), m."""
    i = wp.tid()
    e = row3(ref_pos_w, i) - row3(robot_pos_w, i)
    out[i] = wp.exp(-(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]) * (1.0 / (std * std)))


@wp.kernel
def anchor_ori_exp(
    ref_quat_w: wp.array2d(dtype=float),
    robot_quat_w: wp.array2d(dtype=float),
    std: float,
    out: wp.array(dtype=float),
):
    """exp(-angle(q_ref, q)^2 / std^2) of the anchor; quaternions (N, 4) wxyz."""
    i = wp.tid()
    ang = quat_angle_between(row4(ref_quat_w, i), row4(robot_quat_w, i))
    out[i] = wp.exp(-ang * ang * (1.0 / (std * std)))


@wp.kernel
def body_pos_exp(
    ref_pos_w: wp.array3d(dtype=float),
    robot_pos_w: wp.array3d(dtype=float),
    body_ids: wp.array(dtype=int),
    std: float,
    out: wp.array(dtype=float),
):
    """exp(-mean_k |p_ref[k] - p[k]|^2 / std^2) over bodies `body_ids`; (N, B, 3). Also the
    body linear and angular velocity terms."""
    i = wp.tid()
    acc = float(0.0)
    for k in range(body_ids.shape[0]):
        b = body_ids[k]
        e = vec3_at(ref_pos_w, i, b) - vec3_at(robot_pos_w, i, b)
        acc += e[0] * e[0] + e[1] * e[1] + e[2] * e[2]
    out[i] = wp.exp(-acc * (1.0 / (std * std * float(body_ids.shape[0]))))


@wp.kernel
def body_ori_exp(
    ref_quat_w: wp.array3d(dtype=float),
    robot_quat_w: wp.array3d(dtype=float),
    body_ids: wp.array(dtype=int),
    std: float,
    out: wp.array(dtype=float),
):
    """exp(-mean_k angle(q_ref[k], q[k])^2 / std^2) over bodies `body_ids`; (N, B, 4) wxyz."""
    i = wp.tid()
    acc = float(0.0)
    for k in range(body_ids.shape[0]):
        b = body_ids[k]
        ang = quat_angle_between(vec4_at(ref_quat_w, i, b), vec4_at(robot_quat_w, i, b))
        acc += ang * ang
    out[i] = wp.exp(-acc * (1.0 / (std * std * float(body_ids.shape[0]))))


@wp.kernel
def action_rate_l2(
    action: wp.array2d(dtype=float),
    last_action: wp.array2d(dtype=float),
    out: wp.array(dtype=float),
):
    """sum_j (a_t - a_{t-1})^2; actions (N, J)."""
    i = wp.tid()
    acc = float(0.0)
    for j in range(action.shape[1]):
        d = action[i, j] - last_action[i, j]
        acc += d * d
    out[i] = acc


@wp.kernel
def joint_limit_violation(
    joint_pos: wp.array2d(dtype=float),
    soft_limits: wp.array2d(dtype=float),
    out: wp.array(dtype=float),
):
    """sum_j of how far joint j is outside [lower_j, upper_j], rad; soft_limits (J, 2)."""
    i = wp.tid()
    acc = float(0.0)
    for j in range(joint_pos.shape[1]):
        q = joint_pos[i, j]
        acc += wp.max(soft_limits[j, 0] - q, 0.0) + wp.max(q - soft_limits[j, 1], 0.0)
    out[i] = acc


@wp.kernel
def weigh_terms(
    raw: wp.array2d(dtype=float),
    weights: wp.array(dtype=float),
    dt: float,
    weighted: wp.array2d(dtype=float),
    reward: wp.array(dtype=float),
):
    """``weighted[i, k] = raw[k, i] weights[k]``, ``reward[i] = dt sum_k weighted[i, k]``;
    raw (K, N). The sum runs in term order (the host kernel follows NumPy's pairwise order,
    which equals it below 8 terms)."""
    i = wp.tid()
    acc = float(0.0)
    for k in range(raw.shape[0]):
        w = raw[k, i] * weights[k]
        weighted[i, k] = w
        acc += w
    reward[i] = acc * dt


@wp.kernel
def add_episode_sums(
    weighted: wp.array2d(dtype=float),
    dt: float,
    term_sums: wp.array2d(dtype=wp.float64),
    episode_return: wp.array(dtype=wp.float64),
    reward: wp.array(dtype=float),
    columns: wp.array2d(dtype=float),
):
    """``term_sums[i, k] += weighted[i, k] dt`` (the product in float32),
    ``episode_return[i] += reward[i]``, ``columns[k, i] = weighted[i, k]``; sums float64."""
    i = wp.tid()
    for k in range(weighted.shape[1]):
        term_sums[i, k] = term_sums[i, k] + wp.float64(weighted[i, k] * dt)
        columns[k, i] = weighted[i, k]
    episode_return[i] = episode_return[i] + wp.float64(reward[i])


@wp.kernel
def count_as_value(count: wp.array(dtype=wp.int32), out: wp.array(dtype=float)):
    """``out[i] = float(count[i])`` (the ``self_collision`` term: substeps with self-contact)."""
    i = wp.tid()
    out[i] = float(count[i])
