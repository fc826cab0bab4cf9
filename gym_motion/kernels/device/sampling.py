"""The adaptive start sampler (`gym_motion.motion.sampler`, docs/task.md section 10) for the
device: twins of `gym_motion.kernels.sampling`. The failure counts of a step are added with
atomics (whole numbers: exact in any order); the mixture's CDF is one thread's loop, as on the
host, but its EMA total is summed in bin order (the host uses NumPy's pairwise sum)."""

from __future__ import annotations

import warp as wp

# no fused multiply-adds on CUDA (its default): the host kernels' operations, one rounding each
wp.set_module_options({"fuse_fp": False})


@wp.func
def bin_of(clip: int, frame: int, bin_starts: wp.array(dtype=int),
           bin_counts: wp.array(dtype=int), lengths: wp.array(dtype=int)) -> int:  # fmt: skip
    """Global bin of frame `frame` of clip `clip`: bin b covers [b, b + 1) (T - 1) / bins."""
    count = bin_counts[clip]
    local = (frame * count) // (lengths[clip] - 1)
    return bin_starts[clip] + wp.min(wp.max(local, 0), count - 1)


@wp.kernel
def count_failures(
    clip_ids: wp.array(dtype=wp.int32),
    frames: wp.array(dtype=wp.int32),
    failed: wp.array(dtype=wp.bool),
    bin_starts: wp.array(dtype=int),
    bin_counts: wp.array(dtype=int),
    lengths: wp.array(dtype=int),
    counts: wp.array(dtype=wp.float64),
    first_bad: wp.array(dtype=wp.int32),
):
    """``counts[bin of env i] += 1`` where env i failed (one thread per env). A clip id not in
    [0, C) is never read past: its row is skipped and ``first_bad[0]`` lowered to its position
    (the host twin's check; the caller sets ``first_bad[0] = K`` and reads it when it likes)."""
    i = wp.tid()
    c = int(clip_ids[i])
    if c < 0 or c >= lengths.shape[0]:
        wp.atomic_min(first_bad, 0, wp.int32(i))
    elif failed[i]:
        b = bin_of(c, int(frames[i]), bin_starts, bin_counts, lengths)
        wp.atomic_add(counts, b, wp.float64(1.0))


@wp.kernel
def fold_counts(failure_ema: wp.array(dtype=wp.float64), alpha: wp.float64,
                counts: wp.array(dtype=wp.float64)):  # fmt: skip
    """One control step of the failure EMA, ``ema = (1 - alpha) ema + alpha counts`` in the
    host's operations (`gym_motion.kernels.sampling.fold_failures`); counts left zero (one
    thread per bin)."""
    b = wp.tid()
    ema = failure_ema[b] * (wp.float64(1.0) - alpha)
    if counts[b] != wp.float64(0.0):
        ema += alpha * counts[b]
        counts[b] = wp.float64(0.0)
    failure_ema[b] = ema


@wp.kernel
def mixture_cdf(failure_ema: wp.array(dtype=wp.float64), uniform_ratio: wp.float64,
                cdf: wp.array(dtype=wp.float64)):  # fmt: skip
    """The adaptive mixture's CDF over the bins, normalised (one thread): p[b] = (1 - u)
    ema[b] / total + u / bins, uniform while the total is 0."""
    nbins = failure_ema.shape[0]
    total = wp.float64(0.0)
    for b in range(nbins):
        total += failure_ema[b]
    uniform = wp.float64(1.0) / wp.float64(nbins)
    acc = wp.float64(0.0)
    for b in range(nbins):
        p = uniform
        if total > wp.float64(0.0):
            p = (wp.float64(1.0) - uniform_ratio) * (failure_ema[b] / total) + (
                uniform_ratio * uniform
            )
        acc += p
        cdf[b] = acc
    for b in range(nbins):
        cdf[b] = cdf[b] / acc


@wp.kernel
def draw_from_cdf(
    cdf: wp.array(dtype=wp.float64),
    u_bin: wp.array(dtype=wp.float64),
    u_frame: wp.array(dtype=wp.float64),
    bin_clip: wp.array(dtype=int),
    bin_local: wp.array(dtype=int),
    bin_counts: wp.array(dtype=int),
    lengths: wp.array(dtype=int),
    clip_out: wp.array(dtype=wp.int32),
    frame_out: wp.array(dtype=wp.int32),
):
    """Row i's bin (the first whose CDF exceeds ``u_bin[i]``) and a frame inside it,
    ``min(floor((local bin + u_frame) / bins of the clip (T - 1)), T - 2)``."""
    i = wp.tid()
    lo = int(0)
    hi = int(cdf.shape[0])
    while lo < hi:
        mid = (lo + hi) // 2
        if cdf[mid] <= u_bin[i]:
            lo = mid + 1
        else:
            hi = mid
    c = bin_clip[lo]
    x = (wp.float64(bin_local[lo]) + u_frame[i]) / wp.float64(bin_counts[c])
    frame = int(wp.floor(x * wp.float64(lengths[c] - 1)))
    clip_out[i] = wp.int32(c)
    frame_out[i] = wp.int32(wp.min(frame, lengths[c] - 2))
