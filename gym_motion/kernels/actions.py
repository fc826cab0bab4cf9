"""Action kernel (docs/task.md section 6): policy actions -> joint position targets."""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from gym_motion.kernels.dispatch import row_kernel


@row_kernel
def joint_targets(scale, default_joint_pos, encoder_bias, action, last_action, targets, actions,
                  held):  # fmt: skip
    """``last_action <- action <- actions`` (rows `held` zeroed, action and history) and
    ``targets = action * scale + default_joint_pos - encoder_bias``, rad, float32 throughout.

    actions (N, J) float32 or float64 (cast to float32); scale, default_joint_pos (J,) and
    encoder_bias (N, J) float32, rad; held (N,) bool; action, last_action, targets (N, J) float32.

    Returns the number of rows of `actions` holding a non-finite value; when it is not 0,
    nothing was written.
    """
    n, nj = actions.shape
    bad = 0
    for i in prange(n):
        for j in range(nj):
            if not math.isfinite(actions[i, j]):
                bad += 1
                break
    if bad:
        return bad
    for i in prange(n):
        for j in range(nj):
            a = np.float32(0.0) if held[i] else np.float32(actions[i, j])
            last_action[i, j] = np.float32(0.0) if held[i] else action[i, j]
            action[i, j] = a
            t = a * scale[j]
            t += default_joint_pos[j]
            t -= encoder_bias[i, j]
            targets[i, j] = t
    return bad
