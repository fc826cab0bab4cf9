"""GMR robot-motion pickles, read without ever running code from the file.

GMR (General Motion Retargeting) writes one pickle per retargeted clip. For the G1 it holds a
dict (the layout, as read here):

| key | value |
|---|---|
| ``fps`` | frame rate, Hz (an int) |
| ``root_pos`` | (T, 3) root (pelvis) position, world frame, z up, m |
| ``root_rot`` | (T, 4) root orientation quaternion, **xyzw** (scalar last) |
| ``dof_pos`` | (T, J) joint angles, rad, in the robot's MuJoCo joint order |
| ``local_body_pos`` | optional (T, B, 3) body positions in the root frame, m; may be None |
| ``link_body_list`` | optional (B,) names of those bodies; may be None |

(``local_body_pos`` is forward kinematics with the root at the origin and unrotated.)

A pickle can name any importable callable and have the unpickler call it, so the file is read
with `RestrictedUnpickler`: it admits builtin containers and scalars and the few NumPy names that
rebuild arrays, dtypes and scalars (for NumPy 1.x and 2.x pickles); any other name is refused
with `RefusedClassError` before anything is imported or called. `read_gmr` turns a refusal, a
damaged pickle and every pickle that is not a G1 clip (23-DoF robots, ASAP/PBHC joblib files,
SMPL parameters) into the "unsupported format" `MotionFormatError`, naming what the file holds.

Conversion of the arrays into a clip (quaternion order, forward kinematics, velocities,
resampling) is the CSV path's: `gym_motion.motion.convert.convert_gmr`.
"""

from __future__ import annotations

import builtins
import os
import pickle
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy._core import multiarray as _multiarray
from numpy._core import numeric as _numeric

from gym_motion.motion import _kinematics
from gym_motion.motion.arrays import MotionFormatError
from gym_motion.motion.formats import unsupported_message
from gym_motion.robots.spec import RobotSpec

__all__ = ["GMR_KEYS", "GMRMotion", "RefusedClassError", "RestrictedUnpickler", "read_gmr"]

GMR_KEYS: tuple[str, ...] = ("fps", "root_pos", "root_rot", "dof_pos")
_JOINT_KEYS = ("dof_pos", "dof", "joint_pos", "dof_positions", "qpos")  # for describing others
_MAX_KEYS_SHOWN = 12


class RefusedClassError(pickle.UnpicklingError):
    """A pickle named a global (class or function) that `RestrictedUnpickler` does not admit.

    Attributes:
        module, name: the global as written in the file, e.g. ``"posix"``, ``"system"``.
    """

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name
        super().__init__(
            f"refused to load {module}.{name}: a motion pickle may hold only builtin containers, "
            "numbers, strings and NumPy arrays, and loading any other name could run code "
            "from the file"
        )


def _latin1_encode(text: str, encoding: str = "utf-8", errors: str = "strict") -> bytes:
    """``_codecs.encode`` as protocol 0-2 pickles use it for bytes: latin-1 only."""
    if encoding not in ("latin1", "latin-1") or not isinstance(text, str):
        raise RefusedClassError("_codecs", f"encode(..., {encoding!r})")
    return text.encode("latin-1", errors)


def _sized_from_content(kind: type) -> object:
    """``bytes``/``bytearray`` built from content only: ``bytes(n)`` would allocate ``n`` bytes
    from one number in the file."""

    def build(*args):
        if args and isinstance(args[0], int):
            raise pickle.UnpicklingError(
                f"builtins.{kind.__name__}({args[0]}) would allocate memory from a number"
            )
        return kind(*args)

    return build


def _reconstruct(subtype: type, shape: tuple, dtype: bytes) -> np.ndarray:
    """NumPy's ``_reconstruct`` for the empty placeholder every array pickle starts from (its
    data come with the state, whose size NumPy checks against the shape)."""
    if tuple(shape) != (0,):
        raise pickle.UnpicklingError(f"numpy _reconstruct of shape {shape!r} (expected (0,))")
    return _multiarray._reconstruct(subtype, shape, dtype)


def _admitted() -> dict[tuple[str, str], object]:
    # Protocols 0-2 name the builtins module as Python 2 did, "__builtin__".
    table: dict[tuple[str, str], object] = {}
    for module in ("builtins", "__builtin__"):
        for name in ("dict", "list", "tuple", "set", "frozenset", "str", "int", "float", "bool"):
            table[(module, name)] = getattr(builtins, name)
        table[(module, "complex")] = complex
        table[(module, "bytes")] = _sized_from_content(bytes)
        table[(module, "bytearray")] = _sized_from_content(bytearray)
    # NumPy arrays, dtypes and scalars: 1.x pickles name numpy.core, 2.x numpy._core. The
    # objects are taken from the running NumPy, never imported by the name in the file.
    for core in ("numpy.core", "numpy._core"):
        table[(f"{core}.multiarray", "_reconstruct")] = _reconstruct
        table[(f"{core}.multiarray", "scalar")] = _multiarray.scalar
        table[(f"{core}.numeric", "_frombuffer")] = _numeric._frombuffer
    table[("numpy", "ndarray")] = np.ndarray
    table[("numpy", "dtype")] = np.dtype
    table[("_codecs", "encode")] = _latin1_encode
    return table


class RestrictedUnpickler(pickle.Unpickler):
    """A `pickle.Unpickler` that resolves only admitted globals; see the module docstring.

    Admitted: builtins (``builtins`` or ``__builtin__``) ``dict list tuple set frozenset bytes
    bytearray str int float complex bool`` (``bytes`` and ``bytearray`` from content, not from
    a size); NumPy's ``ndarray``, ``dtype`` and the array and scalar rebuilders
    (``multiarray._reconstruct`` of an empty placeholder, ``multiarray.scalar``,
    ``numeric._frombuffer`` of ``numpy.core`` or ``numpy._core``); ``_codecs.encode``
    restricted to latin-1 (bytes in protocol 0-2 pickles). Memory use is then bounded by the
    file's size.

    Raises:
        RefusedClassError: from `load` when the pickle names any other global; nothing named
            by the file is imported or called.
    """

    _ADMITTED = _admitted()

    def find_class(self, module: str, name: str) -> object:  # noqa: D102 - see the class
        try:
            return self._ADMITTED[(module, name)]
        except KeyError:
            raise RefusedClassError(module, name) from None

    def persistent_load(self, pid: object) -> object:  # noqa: D102 - see the class
        raise pickle.UnpicklingError(f"persistent id {pid!r} (not a plain pickle)")


@dataclass(frozen=True, eq=False)
class GMRMotion:
    """The arrays of a GMR pickle, checked for shapes and finiteness (see `read_gmr`).

    Attributes:
        fps: frame rate of the rows, Hz.
        root_pos: (T, 3) float64, world frame, m.
        root_rot: (T, 4) float64, the root quaternion as stored (GMR: xyzw).
        dof_pos: (T, J) float64, rad, the robot's joint order.
        local_body_pos: (T, B, 3) float64 root-frame body positions, m, or None.
        link_body_list: (B,) body names of ``local_body_pos``, or None.
    """

    fps: float
    root_pos: np.ndarray
    root_rot: np.ndarray
    dof_pos: np.ndarray
    local_body_pos: np.ndarray | None = None
    link_body_list: tuple[str, ...] | None = None


def load_pickle(path: str | os.PathLike, robot: RobotSpec | None = None) -> object:
    """Unpickle ``path`` with `RestrictedUnpickler`.

    Raises:
        MotionFormatError: "unsupported format" naming the refused global, or naming the
            error of a damaged, truncated or memory-inflating pickle.
        FileNotFoundError: no such file.
    """
    robot = _kinematics.default_robot() if robot is None else robot
    src = str(path)
    with open(path, "rb") as f:
        try:
            return RestrictedUnpickler(f).load()
        except RefusedClassError as exc:
            what = (
                f"a pickle that needs {exc.module}.{exc.name}, which is refused (reading a "
                "motion never imports or runs anything a file names)"
            )
            if exc.module.startswith("joblib"):
                what += "; a joblib file"
            raise MotionFormatError(_unsupported(src, what, robot)) from exc
        except Exception as exc:  # noqa: BLE001 - any failure of untrusted bytes is a bad file
            what = f"a pickle that cannot be read ({type(exc).__name__}: {exc})"
            raise MotionFormatError(_unsupported(src, what, robot)) from exc


def read_gmr(path: str | os.PathLike, robot: RobotSpec | None = None) -> GMRMotion:
    """Read a GMR motion pickle of ``robot`` (default `gym_motion.robots.G1`).

    Args:
        path: the pickle.
        robot: the robot the clip must be for (its joint count is checked).

    Returns:
        `GMRMotion` with float64 arrays; ``fps`` a positive float.

    Raises:
        MotionFormatError: "unsupported format" for a pickle that is not a GMR dict of this
            robot (naming its keys and, where found, its joint count, e.g. "23 joints; this
            robot has 29"), a refused global or a damaged pickle; otherwise a message naming
            the file and key for a bad ``fps``, a wrong shape, non-numeric or non-finite
            values, fewer than 2 frames, or ``local_body_pos`` / ``link_body_list`` that do
            not match each other.
        FileNotFoundError: no such file.
    """
    robot = _kinematics.default_robot() if robot is None else robot
    src = str(path)
    obj = load_pickle(path, robot)
    num_joints = len(robot.joint_names)
    if not isinstance(obj, Mapping) or not all(k in obj for k in GMR_KEYS):
        raise MotionFormatError(_unsupported(src, "a pickle of " + _describe(obj, robot), robot))
    dof = _numeric_array(obj["dof_pos"], "dof_pos", src)
    if dof.ndim != 2 or dof.shape[1] != num_joints:
        joints = f"{dof.shape[1]} joints; " if dof.ndim == 2 else ""
        what = (
            f"a GMR pickle whose 'dof_pos' has shape {dof.shape} ({joints}this robot has "
            f"{num_joints})"
        )
        raise MotionFormatError(_unsupported(src, what, robot))
    fps = _fps(obj["fps"], src)
    num_frames = dof.shape[0]
    root_pos = _numeric_array(obj["root_pos"], "root_pos", src)
    root_rot = _numeric_array(obj["root_rot"], "root_rot", src)
    for key, value, width in (("root_pos", root_pos, 3), ("root_rot", root_rot, 4)):
        if value.shape != (num_frames, width):
            raise MotionFormatError(
                f"{src}: key {key!r} has shape {value.shape}, expected ({num_frames}, {width}) "
                f"(T={num_frames} frames of 'dof_pos')"
            )
    if num_frames < 2:
        raise MotionFormatError(f"{src}: {num_frames} frame(s); a motion needs at least 2")
    for key, value in (("root_pos", root_pos), ("root_rot", root_rot), ("dof_pos", dof)):
        _check_finite(value, key, src)
    local, names = _local_bodies(obj, num_frames, src)
    return GMRMotion(fps, root_pos, root_rot, dof, local, names)


def _unsupported(src: str, what: str, robot: RobotSpec) -> str:
    return unsupported_message(src, what, robot.name, len(robot.joint_names))


def _fps(value: object, src: str) -> float:
    try:
        fps = float(np.asarray(value).reshape(()))
    except (TypeError, ValueError, OverflowError):
        fps = float("nan")
    if not np.isfinite(fps) or fps <= 0:
        raise MotionFormatError(
            f"{src}: key 'fps' must be a positive frame rate in Hz, got {value!r}"
        )
    return fps


def _numeric_array(value: object, key: str, src: str) -> np.ndarray:
    try:
        a = np.asarray(value)
    except Exception as exc:  # noqa: BLE001 - ragged lists and the like
        raise MotionFormatError(f"{src}: key {key!r} is not an array ({exc})") from exc
    if not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
        raise MotionFormatError(
            f"{src}: key {key!r} holds {type(value).__name__} of dtype {a.dtype}, expected "
            "real numbers"
        )
    return a.astype(np.float64)


def _check_finite(a: np.ndarray, key: str, src: str) -> None:
    bad = ~np.isfinite(a)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise MotionFormatError(
            f"{src}: key {key!r} frame {index[0]} column {index[1]}: non-finite value "
            f"{a[index]} ({int(bad.sum())} non-finite values in the key)"
        )


def _local_bodies(
    obj: Mapping, num_frames: int, src: str
) -> tuple[np.ndarray | None, tuple[str, ...] | None]:
    local = obj.get("local_body_pos")
    names = obj.get("link_body_list")
    if local is None or names is None:
        return None, None
    local = _numeric_array(local, "local_body_pos", src)
    if isinstance(names, str) or not all(isinstance(n, str) for n in np.asarray(names).ravel()):
        raise MotionFormatError(f"{src}: key 'link_body_list' must be a list of body names")
    names = tuple(str(n) for n in np.asarray(names).ravel())
    expected = (num_frames, len(names), 3)
    if local.shape != expected:
        raise MotionFormatError(
            f"{src}: key 'local_body_pos' has shape {local.shape}, expected {expected} "
            f"(T={num_frames} frames, B={len(names)} names in 'link_body_list')"
        )
    _check_finite(local.reshape(num_frames, -1), "local_body_pos", src)
    return local, names


def _describe(obj: object, robot: RobotSpec, depth: int = 0) -> str:
    """What an unpickled object is, for the "unsupported format" message."""
    if isinstance(obj, Mapping):
        keys = [str(k) for k in obj]
        shown = keys[:_MAX_KEYS_SHOWN] + (["..."] if len(keys) > _MAX_KEYS_SHOWN else [])
        if depth == 0 and obj and all(isinstance(v, Mapping) for v in obj.values()):
            first = next(iter(obj))
            return (
                f"a dict of {len(obj)} entries ({shown}) whose first, {first!r}, is "
                + _describe(obj[first], robot, depth + 1)
            )
        text = f"a dict with keys {shown}"
        missing = [k for k in GMR_KEYS if k not in obj]
        if len(missing) < len(GMR_KEYS):
            text += f", without the GMR key(s) {missing}"
        for key in _JOINT_KEYS:
            value = obj.get(key)
            shape = np.shape(value) if isinstance(value, (np.ndarray, list, tuple)) else ()
            if len(shape) == 2:
                text += (
                    f" ({key!r} {shape}: {shape[1]} joints; this robot has "
                    f"{len(robot.joint_names)})"
                )
                break
        return text
    if isinstance(obj, np.ndarray):
        return f"a NumPy array of shape {obj.shape}, dtype {obj.dtype}"
    if isinstance(obj, (list, tuple)):
        return f"a {type(obj).__name__} of {len(obj)} items"
    return f"a {type(obj).__name__}"
