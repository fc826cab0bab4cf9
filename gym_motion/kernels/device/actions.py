"""Action kernel (docs/task.md section 6) for the device: the twin of
`gym_motion.kernels.actions.joint_targets` (policy actions -> joint position targets)."""

from __future__ import annotations

import warp as wp

from gym_motion.kernels.actions import MAX_TARGET

# no fused multiply-adds on CUDA (its default): the host kernels' operations, one rounding each
wp.set_module_options({"fuse_fp": False})


@wp.kernel
def count_bad_actions(
    scale: wp.array(dtype=float),
    offset: wp.array2d(dtype=float),
    encoder_bias: wp.array2d(dtype=float),
    actions: wp.array2d(dtype=float),
    bad: wp.array(dtype=wp.int32),
):
    """``bad[0] +=`` 1 for a row of `actions` with a value that is not finite or whose target
    ``a scale + offset - encoder_bias`` is beyond +-MAX_TARGET rad (the host kernel's check,
    done first so that nothing is written when it finds one)."""
    i = wp.tid()
    for j in range(actions.shape[1]):
        a = actions[i, j]
        t = a * scale[j]
        t += offset[i, j]
        t -= encoder_bias[i, j]
        if not (wp.isfinite(a) and wp.abs(t) <= float(MAX_TARGET)):
            wp.atomic_add(bad, 0, wp.int32(1))
            return


@wp.kernel
def joint_targets(
    scale: wp.array(dtype=float),
    offset: wp.array2d(dtype=float),
    default_pos: wp.array(dtype=float),
    encoder_bias: wp.array2d(dtype=float),
    action: wp.array2d(dtype=float),
    last_action: wp.array2d(dtype=float),
    action_obs: wp.array2d(dtype=float),
    targets: wp.array2d(dtype=float),
    actions: wp.array2d(dtype=float),
    held: wp.array(dtype=wp.bool),
):
    """``last_action <- action <- actions`` (rows `held` zeroed), ``targets = action scale +
    offset - encoder_bias``, ``action_obs = action + (offset - default) / scale`` (0 on held
    rows); shapes and units as the host kernel's, which also counts bad rows
    (`count_bad_actions` here)."""
    i = wp.tid()
    for j in range(actions.shape[1]):
        a = float(0.0)
        if held[i]:
            last_action[i, j] = 0.0
        else:
            a = actions[i, j]
            last_action[i, j] = action[i, j]
        action[i, j] = a
        t = a * scale[j]
        t += offset[i, j]
        t -= encoder_bias[i, j]
        targets[i, j] = t
        if held[i]:
            action_obs[i, j] = 0.0
        else:
            action_obs[i, j] = a + (offset[i, j] - default_pos[j]) / scale[j]
