"""A run's training curves as a PNG (``training_curves.png``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["plot_curves"]


def plot_curves(
    history: list[dict[str, float]], path: Path, evals: Sequence[dict[str, float]] = ()
) -> None:
    """Training curves against env steps, to a PNG: episode length and tracking reward per step
    of the training rollouts (``history`` rows with ``timesteps``, ``episode/length``,
    ``rollout/tracking_reward``), and (from `evals`) the deterministic evaluation's episode
    length and MPKPE (``eval/episode_length``, ``eval/mpkpe_mm``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), constrained_layout=True)
    panels = (
        (history, "episode/length", "training: mean episode length (steps)"),
        (history, "rollout/tracking_reward", "training: tracking reward per step"),
        (evals, "eval/episode_length", "eval from clip start: episode length (steps)"),
        (evals, "eval/mpkpe_mm", "eval from clip start: MPKPE (mm)"),
    )
    for ax, (rows, key, title) in zip(axes.flat, panels, strict=True):
        pts = [(h["timesteps"], h[key]) for h in rows if key in h]
        if pts:
            x, y = zip(*pts, strict=True)
            ax.plot(x, y, lw=1.2, marker="o" if len(x) < 30 else None, ms=3)
        ax.set_title(title)
        ax.set_xlabel("env steps")
        ax.grid(alpha=0.3)
    fig.savefig(path, dpi=110)
    plt.close(fig)
