"""Clip files as npz archives: the atomic, deterministic writer and the reader of their keys.

An archive holds the arrays of `ARRAY_KEYS` plus ``fps``, ``source_fps``, ``format_version``,
``joint_names`` and ``body_names``; `gym_motion.motion.clip.load_clip` turns the keys into a
validated clip.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from gym_motion.atomic import atomic_file
from gym_motion.motion.arrays import (
    ARRAY_KEYS,
    OPTIONAL_KEYS,
    REQUIRED_KEYS,
    MotionClip,
    MotionFormatError,
)
from gym_motion.motion.formats import unsupported_message
from gym_motion.robots.spec import RobotSpec

__all__ = ["read_npz", "save_clip"]


def save_clip(clip: MotionClip, path: str | os.PathLike) -> Path:
    """Write ``clip`` to ``path`` (npz) atomically and deterministically.

    The archive is written to a temporary file in the same directory, flushed and fsynced, then
    renamed over ``path`` with ``os.replace``: a crash leaves either the old file or the new one,
    never half a file. Entries are stored uncompressed with fixed timestamps, so equal clips give
    equal bytes. Returns the path written.
    """
    path = Path(path)
    entries: dict[str, np.ndarray] = {
        "format_version": np.asarray(clip.format_version, dtype=np.int64),
        "fps": np.asarray(clip.fps, dtype=np.float64),
        "source_fps": np.asarray(clip.source_fps, dtype=np.float64),
        "joint_names": np.asarray(clip.joint_names, dtype=np.str_),
        "body_names": np.asarray(clip.body_names, dtype=np.str_),
    }
    for key in ARRAY_KEYS:
        entries[key] = np.ascontiguousarray(getattr(clip, key), dtype=np.float32)
    with atomic_file(path, "wb") as f:
        _write_npz(f, entries)
    return path


def _write_npz(fileobj, entries: dict[str, np.ndarray]) -> None:
    with zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_STORED) as zf:
        for key, value in entries.items():
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            with zf.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(value), allow_pickle=False)


def read_npz(path: Path, src: str, robot: RobotSpec) -> dict[str, np.ndarray]:
    """The motion keys of an npz archive (other keys are not read)."""
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise MotionFormatError(f"{src}: a damaged npz archive ({exc})") from exc
    with archive:
        keys = sorted(archive.files)
        if not any(k in archive.files for k in ARRAY_KEYS):
            what = f"an npz without motion arrays (keys {keys}; a clip has {list(REQUIRED_KEYS)})"
            raise MotionFormatError(
                unsupported_message(src, what, robot.name, len(robot.joint_names))
            )
        missing = [k for k in REQUIRED_KEYS if k not in archive.files]
        if missing:
            raise MotionFormatError(
                f"{src}: missing key(s) {missing}; a motion npz needs {list(REQUIRED_KEYS)} "
                f"(found {keys})"
            )
        data = {}
        for key in REQUIRED_KEYS + OPTIONAL_KEYS:
            if key not in archive.files:
                continue
            try:
                data[key] = np.asarray(archive[key])
            except (ValueError, OSError, zipfile.BadZipFile) as exc:
                if "allow_pickle" in str(exc):
                    reason = "holds Python objects (an object array), not numbers or names"
                else:
                    reason = f"cannot be read ({exc})"
                raise MotionFormatError(f"{src}: key {key!r} {reason}") from exc
    return data
