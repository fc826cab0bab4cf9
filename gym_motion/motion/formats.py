"""What a motion file is, read from its bytes (never from its name), and the supported formats.

`sniff` looks at a file's content and returns its `FileKind` with a short description for
messages ("a pickle", "an empty file", "a zip archive with members ['data.pkl']" ...). Loading
(`gym_motion.motion.load_clip`) and conversion (`gym_motion.motion.convert.convert_motion`)
dispatch on the kind, so a clip saved under the wrong suffix still loads, and every file that
is none of the supported formats gets one message, `unsupported_message`::

    unsupported format: walk.bvh is a text file (first line 'HIERARCHY'); supported: G1 CSV
    (root xyz, quat xyzw, 29 joints), gym_motion/mjlab npz, GMR pickle

Sniffing reads at most `SNIFF_BYTES` bytes, plus the member list of a zip archive and, for a
file that does not start with a pickle protocol header, a parse of pickle opcodes
(`pickletools.genops`, which decodes opcodes and never executes anything).
"""

from __future__ import annotations

import codecs
import enum
import os
import pickletools
import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FileKind", "Sniffed", "sniff", "supported_formats", "unsupported_message"]

SNIFF_BYTES = 1 << 16  # bytes read to tell the kind of a file
_PICKLE_SNIFF_MAX = 1 << 26  # protocol 0/1 pickles (no header) are recognised up to this size
_LINE_PREVIEW = 60  # characters of a text file's first line quoted in messages


class FileKind(enum.Enum):
    """The kinds of file a motion path can hold."""

    NPZ = "npz"  # a zip archive of .npy members (numpy.savez)
    PICKLE = "pickle"  # a Python pickle (GMR motions are pickled dicts)
    CSV = "csv"  # text whose first line is comma-separated values
    UNSUPPORTED = "unsupported"  # anything else (see Sniffed.description)


@dataclass(frozen=True)
class Sniffed:
    """The result of `sniff`: the file's kind and a description for messages.

    Attributes:
        kind: the `FileKind`.
        description: what the file is, as the object of "<file> is ...": e.g. ``"a pickle"``,
            ``"an empty file (0 bytes)"``, ``"a single NumPy array (.npy), not an npz archive"``.
    """

    kind: FileKind
    description: str


def supported_formats(robot_name: str, num_joints: int) -> str:
    """The supported input formats, one phrase each, for messages and help texts."""
    return (
        f"{robot_name.upper()} CSV (root xyz, quat xyzw, {num_joints} joints), "
        "gym_motion/mjlab npz, GMR pickle"
    )


def unsupported_message(src: str, description: str, robot_name: str, num_joints: int) -> str:
    """``"unsupported format: <src> is <description>; supported: <formats>"``."""
    return (
        f"unsupported format: {src} is {description}; supported: "
        f"{supported_formats(robot_name, num_joints)}"
    )


def sniff(path: str | os.PathLike) -> Sniffed:
    """Tell what ``path`` holds from its content.

    Returns:
        `Sniffed`: NPZ for a zip archive whose members are all ``.npy`` files; PICKLE for a
        pickle (protocol 2+ header, or a whole file that parses as protocol 0/1 opcodes);
        CSV for UTF-8 text whose first non-empty line contains a comma; UNSUPPORTED with a
        description otherwise (a directory, empty file, single ``.npy`` array, other zip
        archive, compressed file, HDF5, other text, other binary data).

    Raises:
        FileNotFoundError: no such file.
    """
    path = Path(path)
    size = path.stat().st_size
    if path.is_dir():
        return Sniffed(FileKind.UNSUPPORTED, "a directory, not a motion file")
    with open(path, "rb") as f:
        head = f.read(SNIFF_BYTES)
    if size == 0:
        return Sniffed(FileKind.UNSUPPORTED, "an empty file (0 bytes)")
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return _sniff_zip(path)
    if head.startswith(b"\x93NUMPY"):
        return Sniffed(
            FileKind.UNSUPPORTED,
            "a single NumPy array (.npy), not an npz archive of named arrays",
        )
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return Sniffed(FileKind.PICKLE, f"a pickle (protocol {head[1]})")
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return Sniffed(FileKind.UNSUPPORTED, what)
    if size <= _PICKLE_SNIFF_MAX and head[:1] in (b"(", b"]", b"}", b"c") and _is_pickle(path):
        return Sniffed(FileKind.PICKLE, "a pickle (protocol 0/1)")
    text = _as_text(head, complete=size <= SNIFF_BYTES)
    if text is None:
        return Sniffed(
            FileKind.UNSUPPORTED,
            f"binary data of {size} bytes (starts with {head[:8].hex(' ')})",
        )
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    if not line:
        return Sniffed(FileKind.UNSUPPORTED, f"a text file of {size} bytes with no content")
    if "," in line:
        return Sniffed(FileKind.CSV, "a CSV")
    preview = line if len(line) <= _LINE_PREVIEW else line[:_LINE_PREVIEW] + "..."
    return Sniffed(
        FileKind.UNSUPPORTED, f"a text file whose first line {preview!r} is not comma-separated"
    )


# Leading bytes of common non-motion binary formats users hand over by mistake.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "a gzip-compressed file (a compressed pickle or joblib file?)"),
    (b"BZh", "a bzip2-compressed file"),
    (b"\xfd7zXZ\x00", "an xz-compressed file"),
    (b"\x28\xb5\x2f\xfd", "a zstd-compressed file"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file"),
)


def _sniff_zip(path: Path) -> Sniffed:
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    except (zipfile.BadZipFile, OSError) as exc:
        return Sniffed(FileKind.UNSUPPORTED, f"a damaged zip archive ({exc})")
    if names and all(n.endswith(".npy") for n in names):
        return Sniffed(FileKind.NPZ, "an npz archive")
    shown = names[:5] + (["..."] if len(names) > 5 else [])
    hint = ""
    if any(n.endswith("data.pkl") for n in names):
        hint = " (a PyTorch checkpoint?)"
    if not names:
        return Sniffed(FileKind.UNSUPPORTED, "an empty zip archive")
    return Sniffed(
        FileKind.UNSUPPORTED,
        f"a zip archive that is not an npz (members {shown}, not all .npy){hint}",
    )


def _is_pickle(path: Path) -> bool:
    """True when the whole file is one stream of pickle opcodes ending with STOP."""
    size = path.stat().st_size
    last = None
    with open(path, "rb") as stream:
        try:
            for op in pickletools.genops(stream):
                last = op
        except Exception:  # noqa: BLE001 - any decoding failure means "not a pickle"
            return False
        return last is not None and last[0].name == "STOP" and stream.tell() == size


def _as_text(head: bytes, complete: bool) -> str | None:
    """``head`` decoded as UTF-8 text, or None for binary data (control characters other than
    whitespace, invalid UTF-8)."""
    if head.translate(None, _TEXT_CONTROLS) != head:
        return None
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        return decoder.decode(head, final=complete)
    except UnicodeDecodeError:
        return None


# Bytes that do not occur in text: C0 controls except tab, newline, vertical tab, form feed and
# carriage return, and DEL.
_TEXT_CONTROLS = bytes([*range(0, 9), *range(14, 32), 127])
