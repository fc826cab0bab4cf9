"""The end of a control step for the device: twins of `gym_motion.kernels.episode` (flags,
masked reward, episode length and time limit; event timers). Counts are added to ``counts``
(atomic) instead of returned."""

from __future__ import annotations

import warp as wp

# no fused multiply-adds on CUDA (its default): the host kernels' operations, one rounding each
wp.set_module_options({"fuse_fp": False})


@wp.kernel
def end_step(
    any_term: wp.array(dtype=wp.bool),
    nonfinite: wp.array(dtype=wp.bool),
    term_reward: wp.array(dtype=float),
    past_clip_end: wp.array(dtype=wp.bool),
    held: wp.array(dtype=wp.bool),
    episode_length: wp.array(dtype=wp.int32),
    time_limit_offset: wp.array(dtype=wp.int32),
    max_episode_steps: wp.array(dtype=wp.int32),
    terminated: wp.array(dtype=wp.bool),
    truncated: wp.array(dtype=wp.bool),
    reward: wp.array(dtype=float),
    clip_end: wp.array(dtype=wp.bool),
    done: wp.array(dtype=wp.bool),
    teleport: wp.array(dtype=wp.bool),
    counts: wp.array(dtype=wp.int32),
):
    """The step's results of env i as the host kernel's (the time limit read from device
    memory, ``max_episode_steps[0]``, so that a captured graph follows it); ``counts[0] +=``
    done rows, ``counts[1] +=`` teleport rows."""
    i = wp.tid()
    term = any_term[i] or nonfinite[i]
    r = term_reward[i]
    if nonfinite[i]:
        r = 0.0
    length = episode_length[i] + wp.int32(1)
    episode_length[i] = length
    trunc = int(length) + int(time_limit_offset[i]) >= int(max_episode_steps[0]) and not term
    end = past_clip_end[i]
    if held[i]:
        r = 0.0
        term = False
        trunc = False
        end = False
    terminated[i] = term
    truncated[i] = trunc
    reward[i] = r
    clip_end[i] = end
    d = term or trunc
    done[i] = d
    teleport[i] = end and not d
    if d:
        wp.atomic_add(counts, 0, wp.int32(1))
    if end and not d:
        wp.atomic_add(counts, 1, wp.int32(1))


@wp.kernel
def count_down(timer: wp.array(dtype=wp.float64), dt: wp.float64, due: wp.array(dtype=wp.int32)):
    """``timer -= dt`` (s); ``due[0] +=`` 1 for each timer now <= 0."""
    i = wp.tid()
    t = timer[i] - dt
    timer[i] = t
    if t <= wp.float64(0.0):
        wp.atomic_add(due, 0, wp.int32(1))


@wp.kernel
def clear_episode_rows(
    ids: wp.array(dtype=int),
    term_sums: wp.array2d(dtype=wp.float64),
    episode_return: wp.array(dtype=wp.float64),
    error_sums: wp.array2d(dtype=wp.float64),
    episode_length: wp.array(dtype=wp.int32),
    action: wp.array2d(dtype=float),
    last_action: wp.array2d(dtype=float),
    action_obs: wp.array2d(dtype=float),
):
    """New episodes on rows ``ids[tid]``: their reward-term and tracking-error sums, return,
    length, action, last action and observed action set to 0."""
    i = ids[wp.tid()]
    for k in range(term_sums.shape[1]):
        term_sums[i, k] = wp.float64(0.0)
    for k in range(error_sums.shape[1]):
        error_sums[i, k] = wp.float64(0.0)
    episode_return[i] = wp.float64(0.0)
    episode_length[i] = wp.int32(0)
    for j in range(action.shape[1]):
        action[i, j] = 0.0
        last_action[i, j] = 0.0
        action_obs[i, j] = 0.0


@wp.kernel
def scatter_rows(ids: wp.array(dtype=int), rows: wp.array2d(dtype=float),
                 out: wp.array2d(dtype=float)):  # fmt: skip
    """``out[ids[r], c] = rows[r, c]``: rows the host wrote (a reset, a push) copied into a
    device buffer (one thread per value)."""
    r, c = wp.tid()
    out[ids[r], c] = rows[r, c]


@wp.kernel
def scatter_row_counts(ids: wp.array(dtype=int), rows: wp.array(dtype=wp.int32),
                       out: wp.array(dtype=wp.int32)):  # fmt: skip
    """``out[ids[r]] = rows[r]``: the int32 twin of `scatter_rows` for per-env counters."""
    r = wp.tid()
    out[ids[r]] = rows[r]


@wp.kernel
def gather_episode_rows(
    ids: wp.array(dtype=int),
    term_sums: wp.array2d(dtype=wp.float64),
    episode_return: wp.array(dtype=wp.float64),
    error_sums: wp.array2d(dtype=wp.float64),
    out: wp.array2d(dtype=wp.float64),
):
    """Row r of `out` = env ``ids[r]``'s episode sums: its K reward-term sums, its return,
    its E tracking-error sums (K + 1 + E columns): the rows of ended episodes, packed for one
    copy to the host."""
    r = wp.tid()
    i = ids[r]
    k_terms = term_sums.shape[1]
    for k in range(k_terms):
        out[r, k] = term_sums[i, k]
    out[r, k_terms] = episode_return[i]
    for k in range(error_sums.shape[1]):
        out[r, k_terms + 1 + k] = error_sums[i, k]


@wp.kernel
def gather_rows(ids: wp.array(dtype=int), src: wp.array2d(dtype=float),
                out: wp.array2d(dtype=float)):  # fmt: skip
    """``out[r, c] = src[ids[r], c]``: rows of a device buffer packed for one copy to the host
    (one thread per value; the inverse of `scatter_rows`)."""
    r, c = wp.tid()
    out[r, c] = src[ids[r], c]
