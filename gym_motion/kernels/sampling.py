"""Kernels of the adaptive start sampler (`gym_motion.motion.sampler`, docs/task.md section 10).

Each does, in one call, what the sampler's NumPy did in a dozen (a reset of a few envs is
otherwise all call overhead), with the same float64 operations in the same order, so draws and
statistics are bit-identical to it (tested).
"""

from __future__ import annotations

import math

from numba import njit

from gym_motion.kernels.cache import CACHE


@njit(cache=CACHE)
def draw_adaptive(failure_ema, ema_total, uniform_ratio, u_bin, u_frame, bin_clip, bin_local,
                  bin_counts, lengths, cdf, clip_out, frame_out):  # fmt: skip
    """Draw a bin per value of `u_bin` from the adaptive mixture, then a frame inside it.

    p[b] = (1 - u) * ema[b] / ema_total + u / num_bins (uniform while ema_total <= 0); the bin
    is the inverse CDF of `u_bin` (``searchsorted(cumsum(p) / sum, side="right")``, the bins of
    ``rng.choice(num_bins, p=p)`` for the same uniforms); the frame is
    ``min(floor((local bin + u_frame) / bins of the clip * (T - 1)), T - 2)``.

    Args:
        failure_ema: (num_bins,) float64. ema_total: its sum (NumPy's, pairwise).
        uniform_ratio: u. u_bin, u_frame: (M,) float64 in [0, 1).
        bin_clip, bin_local: (num_bins,) int64, clip of each bin and its index in the clip.
        bin_counts, lengths: (C,) int64, bins and frames per clip.
        cdf: (num_bins,) float64 scratch.
        clip_out, frame_out: (M,) int32, written.
    """
    nbins = failure_ema.shape[0]
    bin_probabilities(failure_ema, ema_total, uniform_ratio, cdf)
    for b in range(1, nbins):  # cumulative sum, in place
        cdf[b] += cdf[b - 1]
    last = cdf[nbins - 1]
    for b in range(nbins):
        cdf[b] /= last
    for i in range(u_bin.shape[0]):
        lo, hi = 0, nbins
        while lo < hi:  # first bin whose cdf exceeds u_bin[i]
            mid = (lo + hi) // 2
            if cdf[mid] <= u_bin[i]:
                lo = mid + 1
            else:
                hi = mid
        c = bin_clip[lo]
        frame = math.floor((bin_local[lo] + u_frame[i]) / bin_counts[c] * (lengths[c] - 1))
        clip_out[i] = c
        frame_out[i] = min(int(frame), lengths[c] - 2)


@njit(cache=CACHE)
def bin_probabilities(failure_ema, ema_total, uniform_ratio, out):
    """``out[b] = (1 - u) * ema[b] / ema_total + u / num_bins``, or ``1 / num_bins`` while
    ema_total <= 0 (the adaptive mixture). failure_ema, out (num_bins,) float64; ema_total the
    EMA's sum (NumPy's); uniform_ratio u."""
    nbins = failure_ema.shape[0]
    uniform = 1.0 / nbins
    for b in range(nbins):
        if ema_total > 0.0:
            out[b] = (1.0 - uniform_ratio) * (failure_ema[b] / ema_total) + uniform_ratio * uniform
        else:
            out[b] = uniform


@njit(cache=CACHE)
def fold_failures(failure_ema, alpha, clip_ids, frames, failed, bin_starts, bin_counts, lengths,
                  counts):  # fmt: skip
    """One control step of the failure EMA: ``ema = (1 - alpha) * ema + alpha * failures``,
    failures[b] = envs with `failed` whose (clip, frame) lies in bin b.

    failure_ema (num_bins,) float64, updated; clip_ids, frames (K,) int; failed (K,) bool;
    bin_starts, bin_counts, lengths (C,) int64; counts (num_bins,) float64 scratch, all zero
    (left zero).

    Returns -1, or the first position whose clip id is not in [0, C) (then nothing changed).
    """
    bad = _first_bad_clip(clip_ids, lengths.shape[0])
    if bad >= 0:
        return bad
    keep = 1.0 - alpha
    for b in range(failure_ema.shape[0]):
        failure_ema[b] *= keep
    for i in range(failed.shape[0]):
        if failed[i]:
            counts[_bin_of(clip_ids[i], frames[i], bin_starts, bin_counts, lengths)] += 1.0
    for i in range(failed.shape[0]):
        if failed[i]:
            b = _bin_of(clip_ids[i], frames[i], bin_starts, bin_counts, lengths)
            if counts[b] != 0.0:
                failure_ema[b] += alpha * counts[b]
                counts[b] = 0.0
    return -1


@njit(cache=CACHE)
def bins_of(clip_ids, frames, bin_starts, bin_counts, lengths, out):
    """Global bin of each (clip, frame) pair: clip_ids, frames (K,) int; bin_starts,
    bin_counts, lengths (C,) int64; out (K,) int64, written.

    Returns -1, or the first position whose clip id is not in [0, C) (then nothing written).
    """
    bad = _first_bad_clip(clip_ids, lengths.shape[0])
    if bad >= 0:
        return bad
    for i in range(out.shape[0]):
        out[i] = _bin_of(clip_ids[i], frames[i], bin_starts, bin_counts, lengths)
    return -1


@njit(cache=CACHE, inline="always")
def _first_bad_clip(clip_ids, num_clips):
    """The first position of a clip id outside [0, num_clips), or -1."""
    for i in range(clip_ids.shape[0]):
        if clip_ids[i] < 0 or clip_ids[i] >= num_clips:
            return i
    return -1


@njit(cache=CACHE, inline="always")
def _bin_of(clip, frame, bin_starts, bin_counts, lengths):
    """Global bin of frame `frame` of clip `clip`: bin b covers [b, b + 1) * (T - 1) / bins."""
    count = bin_counts[clip]
    local = (frame * count) // (lengths[clip] - 1)
    return bin_starts[clip] + min(max(local, 0), count - 1)
