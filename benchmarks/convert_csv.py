"""Benchmark: convert a 4-minute 30 fps motion CSV to a 50 fps clip; prints the time.

The CSV is built from the real Gangnam Style clip of ``../shared/motions`` (60 fps): time-stretched
to 30 fps rows by taking every second row, then tiled (each repeat shifted so the root path is
continuous) to 4 minutes. Target: under 10 s on one core.

Usage (from the repo root, package installed or ``PYTHONPATH=.``):
``python benchmarks/convert_csv.py [--minutes 4] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from gym_motion.motion import convert_csv

SOURCE = Path(__file__).resolve().parents[1].parent / "shared" / "motions"
SOURCE_CSV = SOURCE / "unitree_gangnam_style_60fps.csv"


def build_csv(path: Path, minutes: float, fps: float = 30.0) -> int:
    """Write a ``minutes`` long CSV at ``fps`` rows per second; returns the row count."""
    rows = np.loadtxt(SOURCE_CSV, delimiter=",")[::2]  # 60 -> 30 fps
    need = int(minutes * 60 * fps) + 1
    reps = -(-need // len(rows))
    drift = rows[-1, :2] - rows[0, :2]
    tiles = []
    for k in range(reps):
        tile = rows.copy()
        tile[:, :2] += k * drift
        tiles.append(tile)
    out = np.concatenate(tiles)[:need]
    np.savetxt(path, out, delimiter=",", fmt="%.6f")
    return need


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=4.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if not SOURCE_CSV.exists():
        raise SystemExit(f"source clip not found: {SOURCE_CSV}")
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "long.csv"
        rows = build_csv(csv, args.minutes)
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            clip = convert_csv(
                csv, Path(tmp) / "long.npz", input_fps=30, output_fps=50, progress=False
            )
            times.append(time.perf_counter() - start)
    print(
        f"convert_csv: {rows} rows at 30 fps ({args.minutes:g} min) -> {clip.num_frames} frames "
        f"at 50 fps, saved: best {min(times):.2f} s, median {np.median(times):.2f} s "
        f"of {args.repeats} (target < 10 s)"
    )


if __name__ == "__main__":
    main()
