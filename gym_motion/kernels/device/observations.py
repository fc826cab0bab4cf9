"""Observation kernels (docs/task.md section 5) for the device: twins of
`gym_motion.kernels.observations`. Outputs are written into columns ``col`` onward of an
(N, D) float32 group buffer."""

from __future__ import annotations

import warp as wp

from gym_motion.kernels.device.quat import (
    quat_mul,
    quat_rotate_inverse,
    quat_to_matrix,
    row3,
    row4,
    vec3_at,
    vec4_at,
)

# no fused multiply-adds on CUDA (its default): the host kernels' operations, one rounding each
wp.set_module_options({"fuse_fp": False})


@wp.kernel
def pos_in_frame(
    frame_pos_w: wp.array2d(dtype=float),
    frame_quat_w: wp.array2d(dtype=float),
    pos_w: wp.array3d(dtype=float),
    out: wp.array2d(dtype=float),
    col: int,
):
    """``out[i, col+3b : col+3b+3] = R_i^T (pos_w[i, b] - frame_pos_w[i])``; frame (N, 3) m and
    (N, 4) wxyz, points (N, B, 3) m, world frame."""
    i = wp.tid()
    q = row4(frame_quat_w, i)
    p = row3(frame_pos_w, i)
    for b in range(pos_w.shape[1]):
        r = quat_rotate_inverse(q, vec3_at(pos_w, i, b) - p)
        for d in range(3):
            out[i, col + 3 * b + d] = r[d]


@wp.kernel
def vec_in_frame(
    frame_quat_w: wp.array2d(dtype=float),
    vec_w: wp.array3d(dtype=float),
    out: wp.array2d(dtype=float),
    col: int,
):
    """``out[i, col+3b : col+3b+3] = R_i^T vec_w[i, b]``; frame (N, 4) wxyz, vectors (N, B, 3)."""
    i = wp.tid()
    q = row4(frame_quat_w, i)
    for b in range(vec_w.shape[1]):
        r = quat_rotate_inverse(q, vec3_at(vec_w, i, b))
        for d in range(3):
            out[i, col + 3 * b + d] = r[d]


@wp.kernel
def twist_in_frame(
    frame_quat_w: wp.array2d(dtype=float),
    lin_vel_w: wp.array2d(dtype=float),
    ang_vel_w: wp.array2d(dtype=float),
    out: wp.array2d(dtype=float),
    col: int,
):
    """``out[i, col : col+6] = (R_i^T lin_vel_w[i], R_i^T ang_vel_w[i])``; (N, 3) each."""
    i = wp.tid()
    q = row4(frame_quat_w, i)
    lin = quat_rotate_inverse(q, row3(lin_vel_w, i))
    ang = quat_rotate_inverse(q, row3(ang_vel_w, i))
    for d in range(3):
        out[i, col + d] = lin[d]
        out[i, col + 3 + d] = ang[d]


@wp.kernel
def point_vel_in_frame(
    frame_quat_w: wp.array2d(dtype=float),
    lin_vel_w: wp.array2d(dtype=float),
    ang_vel_w: wp.array2d(dtype=float),
    point_b: wp.array(dtype=float),
    out: wp.array2d(dtype=float),
    col: int,
):
    """``out[i, col : col+3] = R_i^T v_i + (R_i^T w_i) x p``: the velocity of point p (3,) m,
    fixed on the body, in the body frame; (N, 4) wxyz and (N, 3) each, world frame."""
    i = wp.tid()
    q = row4(frame_quat_w, i)
    v = quat_rotate_inverse(q, row3(lin_vel_w, i))
    w = quat_rotate_inverse(q, row3(ang_vel_w, i))
    px, py, pz = point_b[0], point_b[1], point_b[2]
    out[i, col] = v[0] + (w[1] * pz - w[2] * py)
    out[i, col + 1] = v[1] + (w[2] * px - w[0] * pz)
    out[i, col + 2] = v[2] + (w[0] * py - w[1] * px)


@wp.kernel
def ori_in_frame_6d(
    frame_quat_w: wp.array2d(dtype=float),
    quat_w: wp.array3d(dtype=float),
    out: wp.array2d(dtype=float),
    col: int,
):
    """The first two columns of R(q_frame^-1 q_b), row-major, 6 values per body (Zhou et al.,
    2019); frame (N, 4), orientations (N, B, 4), wxyz."""
    i = wp.tid()
    f = row4(frame_quat_w, i)
    f_inv = wp.vec4(f[0], -f[1], -f[2], -f[3])
    for b in range(quat_w.shape[1]):
        m = quat_to_matrix(quat_mul(f_inv, vec4_at(quat_w, i, b)))
        o = col + 6 * b
        out[i, o] = m[0, 0]
        out[i, o + 1] = m[0, 1]
        out[i, o + 2] = m[1, 0]
        out[i, o + 3] = m[1, 1]
        out[i, o + 4] = m[2, 0]
        out[i, o + 5] = m[2, 1]


@wp.kernel
def add_uniform_noise(
    obs: wp.array2d(dtype=float),
    unit_random: wp.array(dtype=float),
    column: wp.array(dtype=int),
    scale: wp.array(dtype=float),
    offset: wp.array(dtype=int),
    width: wp.array(dtype=int),
):
    """``obs[i, column[c]] += (2 u - 1) scale[c]``, ``u = unit_random[offset[c] + i width[c]]``
    (`gym_motion.managers.observation.NoiseColumns`)."""
    i = wp.tid()
    for c in range(column.shape[0]):
        u = unit_random[offset[c] + i * width[c]]
        obs[i, column[c]] = obs[i, column[c]] + (2.0 * u - 1.0) * scale[c]


@wp.kernel
def add_drawn_uniform_noise(
    obs: wp.array2d(dtype=float),
    seed: wp.array(dtype=int),
    column: wp.array(dtype=int),
    scale: wp.array(dtype=float),
):
    """``obs[i, column[c]] += (2 u - 1) scale[c]``, u uniform in [0, 1) drawn on the device:
    Warp's PCG generator keyed by (``seed[0]``, ``i C + c``), so one seed per step gives every
    row and column a draw of its own (the device MDP's noise; its host twin reads a host draw,
    `add_uniform_noise`). The seed is read from device memory, so that a captured graph of the
    launch draws anew each replay."""
    i = wp.tid()
    nc = column.shape[0]
    for c in range(nc):
        state = wp.rand_init(seed[0], i * nc + c)
        u = wp.randf(state)
        obs[i, column[c]] = obs[i, column[c]] + (2.0 * u - 1.0) * scale[c]


@wp.kernel
def copy_columns(src: wp.array2d(dtype=float), out: wp.array2d(dtype=float), col: int):
    """``out[i, col : col+D] = src[i]``; src (N, D): the host terms' ``np.copyto`` (joint
    velocities, last action)."""
    i = wp.tid()
    for d in range(src.shape[1]):
        out[i, col + d] = src[i, d]


@wp.kernel
def reference_joints(
    ref_joint_pos: wp.array2d(dtype=float),
    ref_joint_vel: wp.array2d(dtype=float),
    out: wp.array2d(dtype=float),
    col: int,
):
    """``out[i, col : col+2J] = (ref_joint_pos[i], ref_joint_vel[i])``; (N, J) each, rad and
    rad/s (the ``command`` term)."""
    i = wp.tid()
    nj = ref_joint_pos.shape[1]
    for j in range(nj):
        out[i, col + j] = ref_joint_pos[i, j]
        out[i, col + nj + j] = ref_joint_vel[i, j]


@wp.kernel
def joint_offsets(
    joint_pos: wp.array2d(dtype=float),
    default_pos: wp.array(dtype=float),
    encoder_bias: wp.array2d(dtype=float),
    out: wp.array2d(dtype=float),
    col: int,
):
    """``out[i, col+j] = (joint_pos[i, j] - default_pos[j]) + encoder_bias[i, j]``, rad; (N, J)
    (the ``joint_pos`` term, in the host term's two float32 operations)."""
    i = wp.tid()
    for j in range(joint_pos.shape[1]):
        out[i, col + j] = (joint_pos[i, j] - default_pos[j]) + encoder_bias[i, j]


@wp.kernel
def clip_scale(
    obs: wp.array2d(dtype=float),
    start: int,
    stop: int,
    low: float,
    high: float,
    clip: bool,
    scale: float,
    rescale: bool,
):
    """Columns [start, stop) of `obs` clipped to [low, high] (if `clip`), then multiplied by
    `scale` (if `rescale`): a term's post-processing after its noise, as the host manager's
    ``np.clip`` and ``np.multiply`` (a NaN stays NaN)."""
    i = wp.tid()
    for c in range(start, stop):
        v = obs[i, c]
        if clip:
            if v < low:
                v = low
            if v > high:
                v = high
        if rescale:
            v = v * scale
        obs[i, c] = v
