"""The reset-noise curriculum: the scale of docs/task.md section 9's reset noise over a run."""

from __future__ import annotations

__all__ = ["reset_noise_scale"]


def reset_noise_scale(progress: float, ramp: float) -> float:
    """Reset-noise scale at `progress` (env steps done, or a fraction of the run): a linear ramp
    from 0 to 1 over the first `ramp` (in the same unit), then 1 (`ramp` 0: always 1)."""
    if ramp <= 0.0:
        return 1.0
    return min(1.0, max(0.0, progress / ramp))
