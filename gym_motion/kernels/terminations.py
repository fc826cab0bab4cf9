"""Termination kernels (docs/task.md section 8). Each writes ``out`` (N,) bool."""

from __future__ import annotations

from numba import prange

from gym_motion.kernels.dispatch import row_kernel


@row_kernel
def height_error_exceeds(ref_pos_w, robot_pos_w, body_ids, threshold, out):
    """True where any selected body's |z_ref - z| > threshold (m); positions (N, B, 3)."""
    for i in prange(out.shape[0]):
        hit = False
        for b in body_ids:
            if abs(ref_pos_w[i, b, 2] - robot_pos_w[i, b, 2]) > threshold:
                hit = True
        out[i] = hit


@row_kernel
def horizontal_error_exceeds(ref_pos_w, robot_pos_w, body_ids, threshold, since, grace, out):
    """True where any selected body's horizontal distance |xy_ref - xy| > threshold (m) and
    the row's ``since`` (N,) int32 >= ``grace`` (control steps since its state was last
    perturbed, `MDPState.steps_since_perturbation`); positions (N, B, 3), world frame."""
    for i in prange(out.shape[0]):
        hit = False
        if since[i] < grace:
            out[i] = False
            continue
        for b in body_ids:
            dx = ref_pos_w[i, b, 0] - robot_pos_w[i, b, 0]
            dy = ref_pos_w[i, b, 1] - robot_pos_w[i, b, 1]
            if dx * dx + dy * dy > threshold * threshold:
                hit = True
        out[i] = hit


@row_kernel
def gravity_z_error_exceeds(ref_quat_w, robot_quat_w, threshold, out):
    """True where |g_z(ref) - g_z(robot)| > threshold, g = world gravity direction (0, 0, -1)
    expressed in the body frame; quaternions (N, 4) wxyz. g_z = -R[2, 2] = -(1 - 2(x^2 + y^2))."""
    for i in prange(out.shape[0]):
        a, b = ref_quat_w[i], robot_quat_w[i]
        ga = -(1.0 - 2.0 * (a[1] * a[1] + a[2] * a[2]))
        gb = -(1.0 - 2.0 * (b[1] * b[1] + b[2] * b[2]))
        out[i] = abs(ga - gb) > threshold


@row_kernel
def any_fired(fired, active, out):
    """``out[i] = any_k (active[k] and fired[k, i])``, and ``fired[k, i] = False`` where term k
    is not active (a term switched off by a curriculum ends and logs nothing); fired (K, N)
    bool, active (K,) bool, out (N,) bool."""
    for i in prange(out.shape[0]):
        hit = False
        for k in range(fired.shape[0]):
            if not active[k]:
                fired[k, i] = False
            elif fired[k, i]:
                hit = True
        out[i] = hit
