"""Motion clips: the in-memory format, validated npz loading and atomic saving.

A clip is a reference trajectory of the robot sampled at ``fps`` frames per second: joint
positions and velocities plus world-frame poses and velocities of named bodies (docs/task.md section
3). Files are npz archives with the arrays below plus ``joint_names``, ``body_names``,
``format_version`` and ``source_fps``. Legacy files (mjlab/BeyondMimic converters) have no names;
they load when their body count identifies the layout (see ``load_clip``).

Example:
    >>> from gym_motion.motion import load_clip
    >>> clip = load_clip("jazzwalk.npz", fps=50.0)  # doctest: +SKIP
    >>> clip.body_pos_w.shape  # (T, B, 3) float32, world frame, m  # doctest: +SKIP
    (531, 30, 3)
"""

from __future__ import annotations

import os
import warnings
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import mujoco
import numpy as np

from gym_motion.atomic import atomic_file
from gym_motion.motion import _kinematics, _quat
from gym_motion.motion.formats import FileKind, sniff, unsupported_message
from gym_motion.robots.spec import RobotSpec

__all__ = [
    "FORMAT_VERSION",
    "MotionClip",
    "MotionFormatError",
    "check_fps",
    "load_clip",
    "rates_equal",
    "resample_grid",
    "save_clip",
]

FORMAT_VERSION = 1

ARRAY_KEYS: tuple[str, ...] = (
    "joint_pos",
    "joint_vel",
    "body_pos_w",
    "body_quat_w",
    "body_lin_vel_w",
    "body_ang_vel_w",
)
REQUIRED_KEYS: tuple[str, ...] = ("fps",) + ARRAY_KEYS
OPTIONAL_KEYS: tuple[str, ...] = ("source_fps", "format_version", "joint_names", "body_names")
_BODY_VEC_SIZE = {"body_pos_w": 3, "body_quat_w": 4, "body_lin_vel_w": 3, "body_ang_vel_w": 3}

QUAT_NORM_TOL = 1e-3  # |norm - 1| above this is an error
KINEMATIC_TOL = 1e-2  # m, FK of root pose + joints vs stored body positions
KINEMATIC_SAMPLES = 16  # evenly spaced frames checked by FK
MOVING_TOL = 1e-3  # m, rad or quaternion units: a pose key moving more than this needs velocities
MIN_ROOT_HEIGHT = 0.0  # m, the root body origin below the floor plane is an error
JOINT_LIMIT_TOL = 1e-3  # rad beyond the joint range before a warning
MAX_JOINT_JUMP = 0.5  # rad between consecutive frames before a warning
WORLD_BODY = "world"
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


class MotionFormatError(ValueError):
    """A motion file or clip that cannot be used: the message names file, key, frame and body."""


@dataclass(frozen=True, eq=False)
class MotionClip:
    """A reference motion of a robot, sampled at ``fps``.

    Attributes:
        fps: frames per second of the arrays (the control rate after ``load_clip(fps=...)``).
        joint_names: ``(J,)`` joint names, the column order of the joint arrays.
        body_names: ``(B,)`` body names, the order of the body arrays (no world body).
        joint_pos: ``(T, J)`` float32, rad.
        joint_vel: ``(T, J)`` float32, rad/s.
        body_pos_w: ``(T, B, 3)`` float32, world frame, m (body frame origins, MuJoCo ``xpos``).
        body_quat_w: ``(T, B, 4)`` float32, world frame, unit quaternions wxyz (``xquat``).
        body_lin_vel_w: ``(T, B, 3)`` float32, world frame, m/s, of the body frame origins.
        body_ang_vel_w: ``(T, B, 3)`` float32, world frame, rad/s.
        source_fps: the rate the motion was recorded or converted at (metadata; equals ``fps``
            unless the clip was resampled).
        format_version: ``FORMAT_VERSION`` of the file format.
    """

    fps: float
    joint_names: tuple[str, ...]
    body_names: tuple[str, ...]
    joint_pos: np.ndarray
    joint_vel: np.ndarray
    body_pos_w: np.ndarray
    body_quat_w: np.ndarray
    body_lin_vel_w: np.ndarray
    body_ang_vel_w: np.ndarray
    source_fps: float | None = None
    format_version: int = field(default=FORMAT_VERSION)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fps", check_fps(self.fps, "MotionClip.fps"))
        object.__setattr__(self, "joint_names", tuple(str(n) for n in self.joint_names))
        object.__setattr__(self, "body_names", tuple(str(n) for n in self.body_names))
        source = self.source_fps
        source = self.fps if source is None else check_fps(source, "MotionClip.source_fps")
        object.__setattr__(self, "source_fps", source)
        with np.errstate(over="ignore"):  # beyond float32: inf, which validation names
            for key in ARRAY_KEYS:
                value = np.ascontiguousarray(getattr(self, key), np.float32)
                object.__setattr__(self, key, value)
        _check_shapes(
            {k: getattr(self, k) for k in ARRAY_KEYS},
            len(self.joint_names),
            len(self.body_names),
            "MotionClip",
        )

    @property
    def num_frames(self) -> int:
        """Number of frames T."""
        return self.joint_pos.shape[0]

    @property
    def duration(self) -> float:
        """Time from the first to the last frame, s: ``(T - 1) / fps``."""
        return (self.num_frames - 1) / self.fps

    def body_index(self, name: str) -> int:
        """Index of body ``name`` in the body arrays; KeyError naming the known bodies."""
        try:
            return self.body_names.index(name)
        except ValueError:
            raise KeyError(f"body {name!r} not in clip bodies {self.body_names}") from None

    def resample(self, fps: float) -> MotionClip:
        """This clip at another rate: lerp of positions and velocities, slerp of quaternions.

        The time grid is ``k / fps`` for ``k = 0 .. floor(duration * fps)``, so the duration is kept
        to within one frame and the last frame is kept when it falls on the grid. ``source_fps``
        is carried over; a rate equal to ``fps`` (`rates_equal`) returns this clip.

        Raises:
            ValueError: ``fps`` is not a positive number, or resampling would leave fewer than
                2 frames (`MotionFormatError`) or more than ``MAX_FRAMES``.
        """
        fps = check_fps(fps)
        if rates_equal(fps, self.fps):
            return self
        i0, i1, blend = resample_grid(self.num_frames, self.fps, fps)
        if i0.size < 2:
            raise MotionFormatError(
                f"{self.num_frames} frames at {self.fps:g} fps ({self.duration:.4g} s) give "
                f"{i0.size} frame(s) at {fps:g} fps; a motion needs at least 2"
            )
        b2 = blend[:, None]
        b3 = blend[:, None, None]

        def lerp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            x = a[i0].astype(np.float64)
            return x + (a[i1] - x) * b

        q0 = self.body_quat_w[i0]
        quat = _quat.slerp(q0, self.body_quat_w[i1], np.broadcast_to(b2, q0.shape[:-1]))
        return replace(
            self,
            fps=fps,
            joint_pos=lerp(self.joint_pos, b2),
            joint_vel=lerp(self.joint_vel, b2),
            body_pos_w=lerp(self.body_pos_w, b3),
            body_quat_w=quat,
            body_lin_vel_w=lerp(self.body_lin_vel_w, b3),
            body_ang_vel_w=lerp(self.body_ang_vel_w, b3),
        )


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


# ---------------------------------------------------------------------------------------------
# saving


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


# ---------------------------------------------------------------------------------------------
# loading and validation


def load_clip(
    path: str | os.PathLike,
    robot: RobotSpec | None = None,
    fps: float | None = None,
    body_names: tuple[str, ...] | list[str] | None = None,
    check_kinematics: bool = True,
) -> MotionClip:
    """Load, validate and (optionally) resample a motion clip: an npz, or a GMR pickle.

    The format is read from the file's content, not its name (`gym_motion.motion.formats`):
    an npz (``save_clip``'s, or a legacy mjlab/BeyondMimic one), or a GMR robot-motion pickle
    (converted in memory like ``gym-motion convert`` does, `gym_motion.motion.convert.
    convert_gmr`; read without running code from the file). A CSV has no frame rate and must
    be converted first. Joints named in ``joint_names`` are reordered to the robot's joint
    order; files without names must already be in it.

    Frame rates: every file states its rate; with ``fps`` the clip is resampled to it (the rate
    rule of every entry point: files are resampled to the rate asked for, clip and library
    objects at another rate are refused, see `gym_motion.motion.MotionLibrary`).

    Args:
        path: npz file written by ``save_clip`` or a legacy converter, or a GMR pickle.
        robot: the `RobotSpec` the clip is checked against (names, and forward kinematics of its
            model); None means `gym_motion.robots.g1.G1`.
        fps: target rate, Hz (the env's control rate, e.g. 50.0); the clip is resampled when
            its rate differs (`rates_equal`) and ``source_fps`` keeps the file's rate. None
            keeps the file's rate.
        body_names: (npz) names of the body arrays' entries for legacy files without ``body_names``
            (an entry named ``"world"`` is a static world body and is dropped). Without it a
            legacy file loads only if its body count is unambiguous: ``len(BODY_NAMES)`` bodies
            (pelvis first) or one more with a static world body first.
        check_kinematics: (npz) compare forward kinematics of the root pose and ``joint_pos``
            with ``body_pos_w`` at ``KINEMATIC_SAMPLES`` frames (tolerance ``KINEMATIC_TOL``);
            a pickle's body arrays are forward kinematics already.

    Returns:
        The clip, float32 arrays, world frame, SI units.

    Raises:
        MotionFormatError: "unsupported format: <file> is <what it is>; supported: ..." for a
            file that is none of the formats (empty, text, other pickles, other zip archives,
            binary data ...); "convert it first" for a CSV; missing keys, wrong shapes, fewer
            than 2 frames, NaN/Inf, quaternion norms off by more than ``QUAT_NORM_TOL``, joint
            names or count not the robot's, body names unknown to the robot or an ambiguous
            legacy layout, the root below the floor, or body positions inconsistent with the
            root pose and joints (with "looks like xyzw" when the body quaternions match read
            scalar-last). Messages name the file, key, frame and joint/body.
        ValueError: ``fps`` is not a positive number.
        FileNotFoundError: no such file.

    Warns:
        UserWarning: joint positions beyond the model's joint ranges, or consecutive-frame joint
            jumps above ``MAX_JOINT_JUMP`` rad, with the frame index.
    """
    robot = _kinematics.default_robot() if robot is None else robot
    if fps is not None:
        fps = check_fps(fps)
    path = Path(path)
    src = str(path)
    found = sniff(path)
    if found.kind is FileKind.PICKLE:
        from gym_motion.motion.convert import convert_gmr  # convert imports this module

        clip = convert_gmr(path, output_fps=fps, robot=robot, checks=False)
        validate_clip(clip, robot, source=src, check_kinematics=False)
        return clip
    if found.kind is FileKind.CSV:
        raise MotionFormatError(
            f"{src}: is a CSV, which has no frame rate; convert it to a clip first: "
            f"gym-motion convert {path} -o clip.npz --input-fps FPS"
        )
    if found.kind is not FileKind.NPZ:
        raise MotionFormatError(
            unsupported_message(src, found.description, robot.name, len(robot.joint_names))
        )
    data = _read_npz(path, src, robot)

    file_fps = _scalar(data["fps"], "fps", src, positive=True)
    source_fps = (
        _scalar(data["source_fps"], "source_fps", src, positive=True)
        if "source_fps" in data
        else None
    )
    version = (
        int(_scalar(data["format_version"], "format_version", src, integer=True))
        if ("format_version" in data)
        else 0
    )
    if version > FORMAT_VERSION:
        raise MotionFormatError(
            f"{src}: format_version {version} is newer than this gym_motion ({FORMAT_VERSION})"
        )
    arrays = {k: data[k] for k in ARRAY_KEYS}
    for key, value in arrays.items():
        if not (np.issubdtype(value.dtype, np.integer) or np.issubdtype(value.dtype, np.floating)):
            raise MotionFormatError(
                f"{src}: key {key!r} has dtype {value.dtype}; expected real numbers"
            )

    joint_names, joint_order = _joint_names(data, arrays, robot, src)
    names = _body_names(data, arrays, robot, body_names, src)
    _check_shapes(arrays, len(joint_names), len(names), src)  # before any reordering
    if joint_order is not None:  # the robot's joints, named in another order: reorder
        for key in ("joint_pos", "joint_vel"):
            arrays[key] = arrays[key][:, joint_order]
        joint_names = tuple(robot.joint_names)
    keep = [i for i, n in enumerate(names) if n != WORLD_BODY]
    if len(keep) != len(names):
        world = names.index(WORLD_BODY)
        _check_static_body(arrays, world, src)
        for key in _BODY_VEC_SIZE:
            arrays[key] = arrays[key][:, keep]
        names = tuple(names[i] for i in keep)
    _check_shapes(arrays, len(joint_names), len(names), src)

    clip = MotionClip(
        fps=file_fps,
        joint_names=joint_names,
        body_names=names,
        source_fps=source_fps,
        format_version=FORMAT_VERSION,
        **arrays,
    )
    validate_clip(clip, robot, source=src, check_kinematics=check_kinematics)
    if fps is not None:
        try:
            clip = clip.resample(fps)
        except ValueError as exc:
            raise MotionFormatError(f"{src}: {exc}") from None
    return clip


def _read_npz(path: Path, src: str, robot: RobotSpec) -> dict[str, np.ndarray]:
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


def validate_clip(
    clip: MotionClip,
    robot: RobotSpec | None = None,
    source: str = "clip",
    check_kinematics: bool = True,
    warn: bool = True,
) -> None:
    """Check a clip against the robot; raise ``MotionFormatError`` or (with `warn`) warn about
    joint ranges and jumps (see ``load_clip``)."""
    robot = _kinematics.default_robot() if robot is None else robot
    if clip.joint_names != tuple(robot.joint_names):
        raise MotionFormatError(
            f"{source}: {_names_diff('joint', clip.joint_names, robot.joint_names)}"
        )
    unknown = [n for n in clip.body_names if n not in robot.body_names]
    if unknown:
        raise MotionFormatError(f"{source}: body name(s) {unknown} are not bodies of the robot")
    if len(set(clip.body_names)) != len(clip.body_names):
        raise MotionFormatError(f"{source}: duplicate body names in {clip.body_names}")
    if robot.root_body not in clip.body_names:
        raise MotionFormatError(f"{source}: the root body {robot.root_body!r} is missing")
    for key in ARRAY_KEYS:
        _check_finite(getattr(clip, key), key, clip, source)
    norms = np.linalg.norm(clip.body_quat_w.astype(np.float64), axis=-1)
    off = np.abs(norms - 1.0)
    if off.max() > QUAT_NORM_TOL:
        t, b = np.unravel_index(np.argmax(off), off.shape)
        raise MotionFormatError(
            f"{source}: key 'body_quat_w' frame {t} body {clip.body_names[b]!r}: quaternion norm "
            f"{norms[t, b]:.6f} is off by more than {QUAT_NORM_TOL} (expected unit wxyz)"
        )
    root = clip.body_index(robot.root_body)
    root_z = clip.body_pos_w[:, root, 2]
    if root_z.min() < MIN_ROOT_HEIGHT:
        t = int(np.argmin(root_z))
        raise MotionFormatError(
            f"{source}: key 'body_pos_w' frame {t}: root body {robot.root_body!r} is at height "
            f"{root_z[t]:.3f} m, below the floor (z = 0, z up); wrong up axis or units?"
        )
    model = _kinematics.robot_model(robot)
    if check_kinematics:
        _check_kinematics(clip, robot, model, source)
    if warn:
        _warn_joint_limits(clip, model, source)
        _warn_joint_jumps(clip, source)
        missing = missing_velocities(clip)
        if missing:
            warnings.warn(
                f"{source}: {', '.join(missing)} zero in every frame while the motion moves: the "
                "file carries no velocities, so the velocity rewards and observations would "
                f"track zero; `gym-motion convert {source} -o clip.npz` recomputes them from the "
                "poses",
                stacklevel=3,
            )


def missing_velocities(clip: MotionClip) -> list[str]:
    """The velocity keys of `clip` that are zero in every frame while what they differentiate
    moves (joint_pos or body_pos_w by more than ``MOVING_TOL``, body_quat_w likewise): files
    that carry poses only (e.g. some mjlab/Unitree npz exports)."""
    moves = {
        "joint_vel": clip.joint_pos,
        "body_lin_vel_w": clip.body_pos_w,
        "body_ang_vel_w": clip.body_quat_w,
    }
    return [
        key for key, pose in moves.items()
        if not np.any(getattr(clip, key)) and np.ptp(pose, axis=0).max() > MOVING_TOL
    ]  # fmt: skip


def _scalar(value: np.ndarray, key: str, src: str, *, positive: bool = False,
            integer: bool = False) -> float:  # fmt: skip
    """A scalar key of a file as a float: a finite real number (> 0 with `positive`, a whole
    number >= 0 with `integer`); otherwise MotionFormatError naming file, key and value."""
    if value.size != 1:
        raise MotionFormatError(f"{src}: key {key!r} must be a scalar, got shape {value.shape}")
    v = value.reshape(())
    real = np.issubdtype(v.dtype, np.integer) or np.issubdtype(v.dtype, np.floating)
    x = float(v) if real else float("nan")
    ok = real and np.isfinite(x)
    if positive:
        ok = ok and x > 0
    if integer:
        ok = ok and x >= 0 and x.is_integer()
    if not ok:
        kind = "a whole number >= 0" if integer else "a number > 0" if positive else "a number"
        raise MotionFormatError(f"{src}: key {key!r} must be {kind}, got {v.item()!r} ({v.dtype})")
    return x


def _names_diff(kind: str, got: tuple[str, ...], want: tuple[str, ...]) -> str:
    if len(got) != len(want):
        missing = [n for n in want if n not in got]
        extra = [n for n in got if n not in want]
        return (
            f"{len(got)} {kind}s but the robot has {len(want)}; missing {missing}, unknown {extra}"
        )
    first = next(i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b)
    return (
        f"{kind} names differ from the robot's at index {first}: file has {got[first]!r}, robot "
        f"has {want[first]!r} (a {kind} order or naming mismatch)"
    )


def _joint_names(
    data: dict, arrays: dict, robot: RobotSpec, src: str
) -> tuple[tuple[str, ...], list[int] | None]:
    """The file's joint names (column order) and the column order that gives the robot's
    joint order (None: already in it)."""
    jp = arrays["joint_pos"]
    if "joint_names" in data:
        names = tuple(str(n) for n in data["joint_names"].reshape(-1))
        if names != tuple(robot.joint_names) and sorted(names) == sorted(robot.joint_names):
            # the same joints, named, in another order (e.g. another simulator's)
            return names, [names.index(j) for j in robot.joint_names]
        if names != tuple(robot.joint_names):
            raise MotionFormatError(
                f"{src}: key 'joint_names': {_names_diff('joint', names, robot.joint_names)}"
            )
        return names, None
    count = jp.shape[-1] if jp.ndim == 2 else None
    if count != len(robot.joint_names):
        raise MotionFormatError(
            f"{src}: key 'joint_pos' has shape {jp.shape}; a legacy file without 'joint_names' "
            f"must have (T, {len(robot.joint_names)}) joints in the robot's joint order"
        )
    return tuple(robot.joint_names), None


def _body_names(data: dict, arrays: dict, robot: RobotSpec, given, src: str) -> tuple[str, ...]:
    bp = arrays["body_pos_w"]
    if bp.ndim != 3:
        raise MotionFormatError(f"{src}: key 'body_pos_w' must be (T, B, 3), got shape {bp.shape}")
    count = bp.shape[1]
    if "body_names" in data:
        names = tuple(str(n) for n in data["body_names"].reshape(-1))
        origin = "key 'body_names'"
    elif given is not None:
        names = tuple(str(n) for n in given)
        origin = "argument body_names"
    else:
        robot_names = tuple(robot.body_names)
        if count == len(robot_names):
            return robot_names
        if count == len(robot_names) + 1:
            return (WORLD_BODY,) + robot_names
        raise MotionFormatError(
            f"{src}: legacy file without 'body_names' has {count} bodies; only "
            f"{len(robot_names)} (robot bodies, {robot_names[0]} first) or {len(robot_names) + 1} "
            "(a static world body first) are unambiguous: pass body_names=[...] naming each entry"
        )
    if len(names) != count:
        raise MotionFormatError(
            f"{src}: {origin} has {len(names)} names but 'body_pos_w' has {count} bodies"
        )
    return names


def _check_static_body(arrays: dict, index: int, src: str) -> None:
    for key in ("body_pos_w", "body_quat_w"):
        a = arrays[key][:, index]
        if a.shape[0] and not np.allclose(a, a[:1], atol=1e-6):
            raise MotionFormatError(
                f"{src}: key {key!r} entry {index} ('world') moves; the layout is ambiguous: pass "
                "body_names=[...] naming each body entry"
            )


def _check_shapes(arrays: dict, num_joints: int, num_bodies: int, src: str) -> None:
    jp = arrays["joint_pos"]
    if jp.ndim != 2:
        raise MotionFormatError(f"{src}: key 'joint_pos' must be (T, J), got shape {jp.shape}")
    num_frames = jp.shape[0]
    expected = {"joint_pos": (num_frames, num_joints), "joint_vel": (num_frames, num_joints)}
    for key, size in _BODY_VEC_SIZE.items():
        expected[key] = (num_frames, num_bodies, size)
    for key, shape in expected.items():
        if arrays[key].shape != shape:
            raise MotionFormatError(
                f"{src}: key {key!r} has shape {arrays[key].shape}, expected {shape} "
                f"(T={num_frames} frames, J={num_joints} joints, B={num_bodies} bodies)"
            )
    if num_frames < 2:
        raise MotionFormatError(f"{src}: {num_frames} frame(s); a motion needs at least 2")


def _check_finite(a: np.ndarray, key: str, clip: MotionClip, src: str) -> None:
    bad = ~np.isfinite(a)
    if not bad.any():
        return
    index = np.argwhere(bad)[0]
    what = (
        f"joint {clip.joint_names[index[1]]!r}"
        if key.startswith("joint")
        else f"body {clip.body_names[index[1]]!r}"
    )
    raise MotionFormatError(
        f"{src}: key {key!r} frame {index[0]} {what}: non-finite value {a[tuple(index)]} "
        f"({int(bad.sum())} non-finite values in the key)"
    )


def _root_qpos(
    clip: MotionClip, root: str, frames: np.ndarray, scalar_last: bool = False
) -> np.ndarray:
    """``qpos (F, 7 + J)`` of ``frames``: the root body's pose and the joints.

    ``scalar_last`` reads the stored root quaternion as xyzw instead of wxyz.
    """
    r = clip.body_index(root)
    quat = clip.body_quat_w[frames, r]
    if scalar_last:
        quat = quat[:, [3, 0, 1, 2]]
    pos = clip.body_pos_w[frames, r].astype(np.float64)
    return np.concatenate((pos, _quat.normalize(quat), clip.joint_pos[frames]), axis=-1)


def _fk_error(
    clip: MotionClip, robot: RobotSpec, model: mujoco.MjModel, frames: np.ndarray, scalar_last
) -> np.ndarray:
    """``(F, B)`` m between forward kinematics and the stored body positions."""
    qpos = _root_qpos(clip, robot.root_body, frames, scalar_last)
    ids = _kinematics.body_ids(model, clip.body_names)
    fk = _kinematics.body_poses(model, qpos, ids)
    return np.linalg.norm(fk - clip.body_pos_w[frames], axis=-1)


def _check_kinematics(clip: MotionClip, robot: RobotSpec, model: mujoco.MjModel, src: str) -> None:
    frames = np.unique(np.linspace(0, clip.num_frames - 1, KINEMATIC_SAMPLES).round().astype(int))
    err = _fk_error(clip, robot, model, frames, scalar_last=False)  # (F, B)
    if err.max() <= KINEMATIC_TOL:
        return
    f, b = np.unravel_index(np.argmax(err), err.shape)
    cause = (
        "The file's body order or joint order does not match its names (or the robot's order "
        "for a legacy file)"
    )
    # The other quaternion convention: a clip stored xyzw poses the root wrongly read as wxyz.
    other = _fk_error(clip, robot, model, frames, scalar_last=True)
    if other.max() <= KINEMATIC_TOL:
        cause = (
            f"key 'body_quat_w' looks like xyzw (scalar last): read that way, forward kinematics "
            f"matches to {other.max() * 1e3:.2f} mm. Store quaternions wxyz (scalar first), "
            "e.g. body_quat_w[..., [3, 0, 1, 2]]"
        )
    raise MotionFormatError(
        f"{src}: key 'body_pos_w' frame {frames[f]} body {clip.body_names[b]!r}: forward "
        f"kinematics of the root pose and joint_pos puts it {err[f, b]:.3f} m away (tolerance "
        f"{KINEMATIC_TOL} m; {int((err > KINEMATIC_TOL).sum())} of {err.size} sampled "
        f"body-frames off). {cause}"
    )


def _warn_joint_limits(clip: MotionClip, model: mujoco.MjModel, src: str) -> None:
    ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in clip.joint_names]
    limited = model.jnt_limited[ids].astype(bool)
    lo = np.where(limited, model.jnt_range[ids, 0], -np.inf) - JOINT_LIMIT_TOL
    hi = np.where(limited, model.jnt_range[ids, 1], np.inf) + JOINT_LIMIT_TOL
    over = np.maximum(clip.joint_pos - hi, lo - clip.joint_pos)  # (T, J), > 0 beyond a limit
    if over.max() > 0.0:
        t, j = np.unravel_index(np.argmax(over), over.shape)
        frames = np.flatnonzero((over > 0.0).any(axis=1))
        warnings.warn(
            f"{src}: joint_pos beyond joint limits in {len(frames)} frame(s) (first frame "
            f"{frames[0]}); worst: joint {clip.joint_names[j]!r} frame {t}, {over[t, j]:.4f} rad "
            "outside its range",
            stacklevel=4,
        )


def _warn_joint_jumps(clip: MotionClip, src: str) -> None:
    jump = np.abs(np.diff(clip.joint_pos, axis=0))
    if jump.max() > MAX_JOINT_JUMP:
        t, j = np.unravel_index(np.argmax(jump), jump.shape)
        frames = np.flatnonzero((jump > MAX_JOINT_JUMP).any(axis=1))
        warnings.warn(
            f"{src}: joint_pos jumps more than {MAX_JOINT_JUMP} rad in one frame at {len(frames)} "
            f"frame(s) (first frame {frames[0] + 1}); worst: joint {clip.joint_names[j]!r} "
            f"{jump[t, j]:.3f} rad from frame {t} to {t + 1}",
            stacklevel=4,
        )
