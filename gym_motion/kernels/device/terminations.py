"""Termination kernels (docs/task.md section 8) for the device: twins of
`gym_motion.kernels.terminations`. Each writes ``out`` (N,) bool."""

from __future__ import annotations

import warp as wp

# no fused multiply-adds on CUDA (its default): the host kernels' operations, one rounding each
wp.set_module_options({"fuse_fp": False})


@wp.kernel
def height_error_exceeds(
    ref_pos_w: wp.array3d(dtype=float),
    robot_pos_w: wp.array3d(dtype=float),
    body_ids: wp.array(dtype=int),
    threshold: float,
    out: wp.array(dtype=wp.bool),
):
    """True where any body of `body_ids` has |z_ref - z| > threshold (m); (N, B, 3)."""
    i = wp.tid()
    hit = bool(False)
    for k in range(body_ids.shape[0]):
        b = body_ids[k]
        if wp.abs(ref_pos_w[i, b, 2] - robot_pos_w[i, b, 2]) > threshold:
            hit = True
    out[i] = hit


@wp.kernel
def horizontal_error_exceeds(
    ref_pos_w: wp.array3d(dtype=float),
    robot_pos_w: wp.array3d(dtype=float),
    body_ids: wp.array(dtype=int),
    threshold: float,
    since: wp.array(dtype=wp.int32),
    grace: int,
    out: wp.array(dtype=wp.bool),
):
    """True where any body of `body_ids` is more than threshold (m) from its reference
    horizontally and ``since[i] >= grace`` (control steps since the last perturbation)."""
    i = wp.tid()
    hit = bool(False)
    if int(since[i]) >= grace:
        for k in range(body_ids.shape[0]):
            b = body_ids[k]
            dx = ref_pos_w[i, b, 0] - robot_pos_w[i, b, 0]
            dy = ref_pos_w[i, b, 1] - robot_pos_w[i, b, 1]
            if dx * dx + dy * dy > threshold * threshold:
                hit = True
    out[i] = hit


@wp.kernel
def gravity_z_error_exceeds(
    ref_quat_w: wp.array2d(dtype=float),
    robot_quat_w: wp.array2d(dtype=float),
    threshold: float,
    out: wp.array(dtype=wp.bool),
):
    """True where |g_z(ref) - g_z(robot)| > threshold, g_z = -(1 - 2 (x^2 + y^2)) the world
    gravity direction's z in the body frame; (N, 4) wxyz."""
    i = wp.tid()
    a1, a2 = ref_quat_w[i, 1], ref_quat_w[i, 2]
    b1, b2 = robot_quat_w[i, 1], robot_quat_w[i, 2]
    ga = -(1.0 - 2.0 * (a1 * a1 + a2 * a2))
    gb = -(1.0 - 2.0 * (b1 * b1 + b2 * b2))
    out[i] = wp.abs(ga - gb) > threshold


@wp.kernel
def any_fired(
    fired: wp.array2d(dtype=wp.bool),
    active: wp.array(dtype=wp.bool),
    out: wp.array(dtype=wp.bool),
):
    """``out[i] = any_k (active[k] and fired[k, i])``; ``fired[k, i] = False`` where term k is
    inactive; fired (K, N)."""
    i = wp.tid()
    hit = bool(False)
    for k in range(fired.shape[0]):
        if not active[k]:
            fired[k, i] = False
        elif fired[k, i]:
            hit = True
    out[i] = hit
