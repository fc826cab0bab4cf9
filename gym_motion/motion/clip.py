"""Motion clips: validated loading of npz files and GMR pickles (`load_clip`).

A clip is a reference trajectory of the robot sampled at ``fps`` frames per second: joint
positions and velocities plus world-frame poses and velocities of named bodies (docs/task.md section
3). Files are npz archives with the arrays of ``ARRAY_KEYS`` plus ``joint_names``, ``body_names``,
``format_version`` and ``source_fps``. Legacy files (mjlab/BeyondMimic converters) have no names;
they load when their body count identifies the layout (see ``load_clip``).

The in-memory format (`gym_motion.motion.arrays`), frame rates (`gym_motion.motion.rates`),
validation (`gym_motion.motion.validation`) and npz writing (`gym_motion.motion.npz`) sit below
this module because conversion, which `load_clip` runs on GMR pickles, needs them too; their
names are importable from here.

Example:
    >>> from gym_motion.motion import load_clip
    >>> clip = load_clip("jazzwalk.npz", fps=50.0)  # doctest: +SKIP
    >>> clip.body_pos_w.shape  # (T, B, 3) float32, world frame, m  # doctest: +SKIP
    (531, 30, 3)
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from gym_motion.motion import _kinematics
from gym_motion.motion._convert import convert_gmr
from gym_motion.motion.arrays import (  # noqa: F401 - the format's names, re-exported for users
    ARRAY_KEYS,
    BODY_VEC_SIZE,
    FORMAT_VERSION,
    OPTIONAL_KEYS,
    REQUIRED_KEYS,
    MotionClip,
    MotionFormatError,
    check_shapes,
)
from gym_motion.motion.formats import FileKind, sniff, unsupported_message
from gym_motion.motion.npz import read_npz, save_clip
from gym_motion.motion.rates import (  # noqa: F401 - re-exported for users
    MAX_FRAMES,
    RATE_RTOL,
    check_fps,
    rates_equal,
    resample_grid,
)
from gym_motion.motion.validation import (  # noqa: F401 - tolerances, re-exported for users
    JOINT_LIMIT_TOL,
    KINEMATIC_SAMPLES,
    KINEMATIC_TOL,
    MAX_JOINT_JUMP,
    MIN_ROOT_HEIGHT,
    MOVING_TOL,
    QUAT_NORM_TOL,
    missing_velocities,
    names_diff,
    validate_clip,
)
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

WORLD_BODY = "world"


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
    data = read_npz(path, src, robot)

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
    check_shapes(arrays, len(joint_names), len(names), src)  # before any reordering
    if joint_order is not None:  # the robot's joints, named in another order: reorder
        for key in ("joint_pos", "joint_vel"):
            arrays[key] = arrays[key][:, joint_order]
        joint_names = tuple(robot.joint_names)
    keep = [i for i, n in enumerate(names) if n != WORLD_BODY]
    if len(keep) != len(names):
        world = names.index(WORLD_BODY)
        _check_static_body(arrays, world, src)
        for key in BODY_VEC_SIZE:
            arrays[key] = arrays[key][:, keep]
        names = tuple(names[i] for i in keep)
    check_shapes(arrays, len(joint_names), len(names), src)

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
                f"{src}: key 'joint_names': {names_diff('joint', names, robot.joint_names)}"
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
