"""Frame rates: the one comparison of rates, the check of a rate, and the resampling grid.

Every path that meets a rate uses these: `MotionClip.resample`, `load_clip`, conversion
(`gym_motion.motion.convert`) and `gym_motion.motion.MotionLibrary`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MAX_FRAMES", "RATE_RTOL", "check_fps", "rates_equal", "resample_grid"]

MAX_FRAMES = 10_000_000  # resampled frames at most (55 h at 50 fps): beyond, the rates are wrong
RATE_RTOL = 1e-9  # frame rates closer than this (relative) are the same rate


def rates_equal(a: float, b: float) -> bool:
    """True when frame rates ``a`` and ``b`` (Hz) are the same to ``RATE_RTOL`` (relative).

    The one comparison of rates wherever a clip or library enters (`load_clip`,
    `MotionClip.resample`, `gym_motion.motion.MotionLibrary` and its ``load``), so a rate
    parsed from a file as 49.99999999999 is 50.
    """
    a, b = float(a), float(b)
    return abs(a - b) <= RATE_RTOL * max(abs(a), abs(b))


def check_fps(fps: float, what: str = "fps") -> float:
    """``fps`` as a float, Hz.

    Raises:
        ValueError: ``fps`` is not a finite number > 0 (the message names ``what`` and the
            value).
    """
    try:
        value = float("nan") if isinstance(fps, bool) else float(fps)
    except (TypeError, ValueError, OverflowError):
        value = float("nan")
    if not np.isfinite(value) or value <= 0.0:
        raise ValueError(f"{what} must be a positive frame rate in Hz, got {fps!r}")
    return value


def resample_grid(
    num_frames: int, source_fps: float, target_fps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Interpolation indices resampling ``num_frames`` frames from ``source_fps`` to ``target_fps``.

    Output frame ``k`` is at time ``k / target_fps``, for ``k = 0 .. floor((num_frames - 1) *
    target_fps / source_fps)``: the grid starts at the first sample and ends at the last output
    time not after the last sample (which is kept when it falls on the grid). This is the grid of
    the mjlab/BeyondMimic converters without their dropped final sample.

    Returns:
        ``i0, i1`` ``(K,) int64`` neighbouring source frames and ``blend`` ``(K,) float64`` in
        [0, 1]: ``x[k] = (1 - blend) x[i0] + blend x[i1]``.

    Raises:
        ValueError: no frames, a rate not > 0, or more than ``MAX_FRAMES`` output frames.
    """
    if num_frames < 1 or source_fps <= 0 or target_fps <= 0:
        raise ValueError(
            f"bad resampling request: {num_frames} frames, {source_fps} -> {target_fps}"
        )
    last = np.floor((num_frames - 1) * float(target_fps) / float(source_fps) + 1e-6)
    if not last < MAX_FRAMES:
        raise ValueError(
            f"resampling {num_frames} frames from {source_fps:g} to {target_fps:g} fps would give "
            f"{last + 1:.4g} frames (more than {MAX_FRAMES:,}); check the frame rates"
        )
    last = int(last)
    x = np.arange(last + 1, dtype=np.float64) * float(source_fps) / float(target_fps)
    i0 = np.minimum(np.floor(x + 1e-9).astype(np.int64), num_frames - 1)
    i1 = np.minimum(i0 + 1, num_frames - 1)
    blend = np.clip(x - i0, 0.0, 1.0)
    blend[i0 == i1] = 0.0
    return i0, i1, blend
