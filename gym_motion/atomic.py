"""Atomic file writes: every file gym_motion's own code writes (clips, ONNX, JSON configs,
summaries and results) goes through `atomic_file`, so a crash or Ctrl-C leaves the old file or
the new one, never half a file, and the new file gets the permissions a plain
``open(path, "w")`` would give it. (Files the RL libraries and matplotlib write themselves,
such as ``model.zip``, ``model.pt``, ``progress.csv`` and ``training_curves.png``, are theirs;
MP4s are written to a temporary file and renamed by `gym_motion.video.Mp4Writer`.)"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_file(path: str | os.PathLike, mode: str = "wb") -> Iterator[IO]:
    """Open a temporary file beside `path` for writing (`mode` "wb" or "w"); when the block
    ends without an exception it is flushed, fsynced and renamed over `path` (``os.replace``)
    with the mode bits of the file it replaces, or the umask's default for a new file
    (``tempfile.mkstemp`` alone would leave 0600). On an exception the temporary file is
    deleted and `path` is left as it was.

    Raises:
        FileNotFoundError: the folder of `path` does not exist.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, _file_mode(path))
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def check_output_path(
    path: str | os.PathLike, *, inputs: tuple = (), make_parents: bool = False
) -> Path:
    """Refuse an output path that cannot take the file, before any work is done.

    Args:
        path: the file to write.
        inputs: files being read: the output must not be one of them (it would replace it).
        make_parents: the writer creates missing folders (else a missing folder is refused).

    Raises:
        ValueError: `path` is a directory, one of `inputs`, or (without `make_parents`) in a
            folder that does not exist.
    """
    out = Path(path)
    if out.is_dir():
        raise ValueError(f"output {out} is a directory; give a file name inside it")
    if not make_parents and not out.resolve().parent.is_dir():
        raise ValueError(f"output {out}: directory {out.parent} does not exist")
    if any(out.resolve() == Path(p).resolve() for p in inputs):
        raise ValueError(f"output {out} is an input file; writing would replace it")
    return out


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write `data` to `path` atomically (`atomic_file`); returns the path."""
    with atomic_file(path, "wb") as f:
        f.write(data)
    return Path(path)


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write `obj` as indented JSON to `path` atomically (`atomic_file`); returns the path."""
    with atomic_file(path, "w") as f:
        json.dump(obj, f, indent=2)
    return Path(path)


def _file_mode(path: Path) -> int:
    """Mode bits of the file being replaced, or the umask's default for a new file."""
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
