"""Where envs start in the motion library: adaptive, uniform or start sampling (docs/task.md
section 10).

Every clip is cut into ``floor(T / bin_frames) + 1`` equal bins (``bin_frames`` = frames per
second of motion, so about one bin per second). Adaptive sampling keeps an exponential moving
average of the failures per bin, over all clips, and draws from a mixture of it and uniform:

    failures[b] = terminated envs whose episode ended in bin b this step (a count)
    ema = alpha * failures + (1 - alpha) * ema          (once per control step, alpha = 0.001)
    p = (1 - u) * ema / sum(ema) + u / num_bins          (u = uniform_ratio = 0.1)

p is uniform until a failure has been seen. Normalising the EMA makes the preference independent
of the number of envs: a bin where every failure happens gets 0.9 + 0.1 / num_bins of the
starts at any N (dividing the counts by N and adding a fixed floor, as this module did before,
left the failure term ~50x smaller than the floor, i.e. uniform in effect).

A start is drawn by sampling a bin from ``p`` and then a uniform frame inside it. Bin ``b`` of a
clip with T frames covers frames ``[b, b + 1) * (T - 1) / bins``, so the last frame is never a
start and a clip shorter than one bin (one bin) needs no special case.

Example:
    >>> import numpy as np
    >>> from gym_motion.motion import MotionSampler
    >>> sampler = MotionSampler([500, 25], fps=50.0, mode="adaptive", num_envs=8, seed=0)
    >>> clip_ids, frames = sampler.sample(8)
    >>> sampler.update(clip_ids[:2], frames[:2], np.array([True, False]))
    >>> round(sampler.top1_prob, 3) > 0
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

import numpy as np

from gym_motion.kernels import sampling as k

__all__ = ["MotionSampler", "SamplingMode"]


class SamplingMode(StrEnum):
    """How reset frames are drawn."""

    ADAPTIVE = "adaptive"  # failure-weighted bins (training)
    UNIFORM = "uniform"  # uniform over all start frames of all clips
    START = "start"  # frame 0 of a uniformly drawn clip (play / eval)


class MotionSampler:
    """Draws (clip id, frame) reset states for envs.

    Args:
        clip_lengths: ``(C,)`` frames per clip (``MotionLibrary.lengths``), each >= 2.
        fps: frame rate of the clips; bins are ``bin_seconds`` of motion long.
        mode: ``SamplingMode`` or its value.
        num_envs: envs per step (kept for the logs; the probabilities do not depend on it).
        alpha: EMA rate of the failure statistics per ``update`` call (control step),
            0 < alpha <= 1.
        uniform_ratio: u, the uniform share of the mixture (0 <= u <= 1).
        bin_seconds: bin length, s.
        seed: seed of the sampler's own ``np.random.Generator`` (see ``seed``).

    Raises:
        ValueError: a clip shorter than 2 frames, alpha or uniform_ratio out of range.

    Attributes:
        bin_counts: ``(C,) int64`` bins per clip; bin_starts: ``(C,) int64`` first global bin.
        num_bins: total bins; failure_ema: ``(num_bins,) float64``.
    """

    def __init__(
        self,
        clip_lengths: Sequence[int] | np.ndarray,
        fps: float,
        mode: SamplingMode | str = SamplingMode.ADAPTIVE,
        num_envs: int = 1,
        alpha: float = 0.001,
        uniform_ratio: float = 0.1,
        bin_seconds: float = 1.0,
        seed: int | None = None,
    ) -> None:
        self.lengths = np.asarray(clip_lengths, dtype=np.int64).reshape(-1)
        if self.lengths.size == 0 or self.lengths.min() < 2:
            raise ValueError(f"every clip needs at least 2 frames, got lengths {self.lengths}")
        self.mode = SamplingMode(mode)
        self.num_envs = int(num_envs)
        self.alpha = float(alpha)
        self.uniform_ratio = float(uniform_ratio)
        if not 0.0 < self.alpha <= 1.0:
            raise ValueError(f"alpha (the EMA rate) must be in (0, 1], got {alpha}")
        if not 0.0 <= self.uniform_ratio <= 1.0:
            raise ValueError(f"uniform_ratio must be in [0, 1], got {uniform_ratio}")
        bin_frames = float(fps) * float(bin_seconds)
        self.bin_counts = np.floor(self.lengths / bin_frames).astype(np.int64) + 1
        self.bin_starts = np.zeros_like(self.bin_counts)
        self.bin_starts[1:] = np.cumsum(self.bin_counts[:-1])
        self.num_bins = int(self.bin_counts.sum())
        self._bin_clip = np.repeat(np.arange(self.lengths.size), self.bin_counts)
        self._bin_local = np.arange(self.num_bins) - self.bin_starts[self._bin_clip]
        # Uniform mode: start frames 0 .. T-2 of every clip, all equally likely.
        self._start_cum = np.cumsum(self.lengths - 1)
        self.failure_ema = np.zeros(self.num_bins, dtype=np.float64)
        self._failures = np.zeros(self.num_bins, dtype=np.float64)  # fold_failures' counts
        self._cdf = np.zeros(self.num_bins, dtype=np.float64)
        self.rng = np.random.default_rng(seed)

    def seed(self, seed: int | None) -> None:
        """Reseed the sampler's generator (the env calls this from its own ``reset(seed=...)``)."""
        self.rng = np.random.default_rng(seed)

    def state_dict(self) -> dict[str, list[float]]:
        """What the sampler has learnt, as JSON values: ``{"failure_ema": [num_bins floats]}``
        (a training checkpoint keeps it, `load_state_dict` continues from it)."""
        return {"failure_ema": self.failure_ema.tolist()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a `state_dict`.

        Raises:
            ValueError: not a state of a sampler over the same bins (the counts named).
        """
        ema = np.asarray(state.get("failure_ema", ()), np.float64).reshape(-1)
        if ema.size != self.num_bins or not np.isfinite(ema).all() or (ema < 0).any():
            raise ValueError(f"the sampler state has {ema.size} failure rates (finite, >= 0 "
                             f"expected) for {self.num_bins} bins of these clips")  # fmt: skip
        self.failure_ema[:] = ema

    @property
    def probabilities(self) -> np.ndarray:
        """``(num_bins,) float64`` adaptive bin probabilities (sum 1): the mixture
        ``(1 - u) * ema / sum(ema) + u / num_bins``, uniform while ``sum(ema) == 0``."""
        p = np.empty(self.num_bins)
        k.bin_probabilities(self.failure_ema, self.failure_ema.sum(), self.uniform_ratio, p)
        return p

    @property
    def entropy(self) -> float:
        """Entropy of the bin probabilities divided by ``log(num_bins)`` (1 = uniform)."""
        if self.num_bins == 1:
            return 1.0
        p = self.probabilities
        return float(-(p * np.log(p)).sum() / np.log(self.num_bins))

    @property
    def top1_prob(self) -> float:
        """Largest bin probability."""
        return float(self.probabilities.max())

    def bins_of(self, clip_ids: np.ndarray, frames: np.ndarray) -> np.ndarray:
        """Global bin ``(N,) int64`` of (clip, frame) pairs ``(N,)`` int.

        Raises:
            ValueError: clip_ids and frames of different lengths.
            IndexError: a clip id not in [0, number of clips).
        """
        clip_ids, frames = self._checked(clip_ids, frames)
        bins = np.empty(clip_ids.shape, np.int64)
        bad = k.bins_of(clip_ids, frames, self.bin_starts, self.bin_counts, self.lengths, bins)
        self._raise_bad_clip(clip_ids, bad)
        return bins

    def _checked(self, clip_ids, frames, *more) -> tuple[np.ndarray, ...]:
        """clip_ids and frames as (K,) int64 (and `more` arrays of the same length, as they
        are); ValueError when the lengths differ."""
        clip_ids = np.asarray(clip_ids, dtype=np.int64).reshape(-1)
        frames = np.asarray(frames, dtype=np.int64).reshape(-1)
        more = tuple(np.asarray(m).reshape(-1) for m in more)
        sizes = [a.size for a in (clip_ids, frames, *more)]
        if len(set(sizes)) != 1:
            raise ValueError(f"clip_ids, frames and flags must have equal lengths, got {sizes}")
        return (clip_ids, frames, *more)

    def _raise_bad_clip(self, clip_ids: np.ndarray, bad: int) -> None:
        if bad >= 0:
            raise IndexError(
                f"clip id {clip_ids[bad]} (position {bad}) is out of range for "
                f"{self.lengths.size} clips"
            )

    def sample(
        self, n: int, rng: np.random.Generator | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n`` reset states.

        Returns ``clip_ids (n,) int32`` and ``frames (n,) int32`` (frames in ``[0, T - 2]``).
        ``rng`` defaults to the sampler's own generator.
        """
        rng = self.rng if rng is None else rng
        if self.mode is SamplingMode.START:
            clip_ids = rng.integers(0, self.lengths.size, size=n)
            return clip_ids.astype(np.int32), np.zeros(n, dtype=np.int32)
        if self.mode is SamplingMode.UNIFORM:
            flat = rng.integers(0, self._start_cum[-1], size=n)
            clip_ids = np.searchsorted(self._start_cum, flat, side="right")
            frames = flat - (self._start_cum[clip_ids] - (self.lengths[clip_ids] - 1))
            return clip_ids.astype(np.int32), frames.astype(np.int32)
        # inverse CDF: the bins of rng.choice(num_bins, size=n, p=probabilities) (tested)
        u_bin = rng.random(n)
        u_frame = rng.random(n)
        clip_ids, frames = np.empty(n, np.int32), np.empty(n, np.int32)
        k.draw_adaptive(
            self.failure_ema, self.failure_ema.sum(), self.uniform_ratio, u_bin, u_frame,
            self._bin_clip, self._bin_local, self.bin_counts, self.lengths, self._cdf, clip_ids,
            frames,
        )  # fmt: skip
        return clip_ids, frames

    def update(self, clip_ids: np.ndarray, frames: np.ndarray, failed: np.ndarray) -> None:
        """Fold one control step's resets into the failure EMA; call once per step.

        Args:
            clip_ids, frames: ``(K,)`` clip and frame where each reset env ended its episode.
            failed: ``(K,) bool``, True for terminations (not truncations or clip ends).

        Raises:
            ValueError: arguments of different lengths.
            IndexError: a clip id not in [0, number of clips) (the EMA is left as it was).
        """
        if len(clip_ids) == len(frames) == len(failed) == 0:  # nothing ended: only the decay
            self.failure_ema *= 1.0 - self.alpha
            return
        clip_ids, frames, failed = self._checked(clip_ids, frames, np.asarray(failed, bool))
        bad = k.fold_failures(
            self.failure_ema, self.alpha, clip_ids, frames, failed, self.bin_starts,
            self.bin_counts, self.lengths, self._failures,
        )  # fmt: skip
        self._raise_bad_clip(clip_ids, bad)
