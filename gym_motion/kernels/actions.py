"""Action kernel (docs/task.md section 6): policy actions -> joint position targets."""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from gym_motion.kernels.dispatch import row_kernel

# The largest joint target accepted, rad: MuJoCo's mjMAXVAL. MuJoCo zeroes every control of a
# model whose control exceeds it (mjWARN_BADCTRL), so such an action would not be applied.
MAX_TARGET = 1e10


@row_kernel
def joint_targets(
    scale, offset, default, encoder_bias, action, last_action, action_obs, targets, actions, held
):
    """``last_action <- action <- actions`` (rows `held` zeroed, action and history),
    ``targets = action * scale + offset - encoder_bias`` and ``action_obs = action + (offset -
    default) / scale`` (the action in BeyondMimic's convention; `action` itself when the
    offset is the default pose), rad, float32 throughout.

    actions (N, J) float32 or float64 (cast to float32); scale (J,), offset (N, J: the default
    joint pose on every row, or the reference joint positions), default (J,) and encoder_bias
    (N, J) float32, rad; held (N,) bool; action, last_action, action_obs, targets (N, J)
    float32.

    Returns the number of rows of `actions` with a value that is not finite as float32 or
    whose target (held rows included) is beyond +-`MAX_TARGET` rad; when it is not 0, nothing
    was written.
    """
    n, nj = actions.shape
    bad = 0
    for i in prange(n):
        for j in range(nj):
            a = np.float32(actions[i, j])
            t = a * scale[j]
            t += offset[i, j]
            t -= encoder_bias[i, j]
            if not (math.isfinite(a) and abs(t) <= MAX_TARGET):
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
            t += offset[i, j]
            t -= encoder_bias[i, j]
            targets[i, j] = t
            if held[i]:
                action_obs[i, j] = np.float32(0.0)
            else:
                action_obs[i, j] = a + (offset[i, j] - default[j]) / scale[j]
    return bad
