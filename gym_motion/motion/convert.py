"""Convert retargeted motions (LAFAN1-style G1 CSVs, GMR pickles) into motion clips.

A CSV has no header and one row per frame: root position xyz (m, world, z up) | root orientation
quaternion **xyzw** | the robot's joint angles (rad) in joint order (docs/task.md section 3).
A GMR pickle holds the same three arrays and its frame rate (`gym_motion.motion.gmr`); both
become MuJoCo ``qpos`` rows and then a clip by the same steps, so a pickle and a CSV of the
same motion give the same clip.

Conversion (``convert_csv``, ``convert_gmr``; ``convert_motion`` picks by the file's content):

1. resample to the output rate on the grid of ``resample_grid`` (lerp of root position and
   joints, slerp of the root quaternion; vectorized);
2. velocities by central differences (``np.gradient`` stencil; root angular velocity from the
   neighbouring rotations, world frame);
3. every frame's body poses and velocities from MuJoCo for that frame's ``qpos`` and
   finite-difference ``qvel`` on the robot's own model, so a replayed clip is self-consistent;
4. the motion checks of `gym_motion.motion.checks` (soft limits, self and floor penetration,
   feet off the floor, a sliding stance foot, joint jumps), issued as `MotionCheckWarning` warnings.

The steps and the GMR path live in `gym_motion.motion._convert`, below `load_clip` (which
converts GMR pickles too); their names are importable from here.

Example:
    >>> from gym_motion.motion import convert_csv
    >>> clip = convert_csv("dance.csv", "dance.npz", input_fps=30, output_fps=50)  # doctest: +SKIP
    >>> clip = convert_motion("dance.pkl", "dance.npz")  # a GMR pickle  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os
import warnings

import numpy as np

from gym_motion.motion import _kinematics
from gym_motion.motion._convert import (  # noqa: F401 - constants, re-exported for users
    GMR_BODY_TOL,
    QUAT_NORM_TOL,
    ROOT_COLUMNS,
    UPRIGHT_MIN,
    check_out_path,
    clip_from_qpos,
    convert_gmr,
    finish_clip,
    frame_bounds,
    qpos_to_clip,
    read_gmr_qpos,
    resample_qpos,
    root_qpos,
)
from gym_motion.motion.arrays import ARRAY_KEYS, MotionClip, MotionFormatError
from gym_motion.motion.checks import MotionCheckWarning
from gym_motion.motion.clip import load_clip
from gym_motion.motion.formats import FileKind, sniff, unsupported_message
from gym_motion.motion.rates import check_fps, rates_equal
from gym_motion.motion.validation import missing_velocities
from gym_motion.robots.spec import RobotSpec

__all__ = [
    "clip_from_qpos",
    "convert_csv",
    "convert_gmr",
    "convert_motion",
    "read_csv",
    "read_gmr_qpos",
    "resample_qpos",
    "root_qpos",
]


def read_csv(
    csv_path: str | os.PathLike, robot: RobotSpec | None = None, quat_order: str = "xyzw"
) -> np.ndarray:
    """Read a motion CSV into MuJoCo ``qpos`` rows ``(T, 7 + J) float64``, root quaternion wxyz.

    Raises:
        MotionFormatError: "unsupported format" for a file that is not comma-separated text,
            text that does not parse as numbers (a header row, words) or has a column count
            other than ``7 + J``; fewer than 2 rows, non-finite cells; quaternion norms off by
            more than ``QUAT_NORM_TOL``, or a root quaternion whose order looks like wxyz while
            ``quat_order="xyzw"`` (or the reverse).
        ValueError: ``quat_order`` is neither ``"xyzw"`` nor ``"wxyz"``.
        FileNotFoundError: no such file.
    """
    robot = _kinematics.default_robot() if robot is None else robot
    src = str(csv_path)
    num_joints = len(robot.joint_names)
    num_cols = ROOT_COLUMNS + num_joints
    layout = (
        f"a {robot.name.upper()} CSV has {num_cols} columns: root x y z (m) | root quaternion "
        f"x y z w | {num_joints} joint angles (rad) in the robot's joint order, no header"
    )
    found = sniff(csv_path)
    if found.kind is not FileKind.CSV:
        raise MotionFormatError(_unsupported(src, found.description, robot))
    try:
        rows = np.loadtxt(src, delimiter=",", dtype=np.float64, ndmin=2)
    except ValueError as exc:
        what = f"a CSV that could not be parsed as numbers ({exc}; a header row?)"
        raise MotionFormatError(f"{_unsupported(src, what, robot)}; {layout}") from exc
    if rows.shape[1] != num_cols:
        hint = ""
        if rows.shape[1] == num_cols + 1:
            hint = " (one extra column: a frame index or time column? remove it)"
        what = f"a CSV with {rows.shape[1]} columns{hint}"
        raise MotionFormatError(f"{_unsupported(src, what, robot)}; {layout}")
    if rows.shape[0] < 2:
        raise MotionFormatError(f"{src}: {rows.shape[0]} row(s); a motion needs at least 2")
    bad = ~np.isfinite(rows)
    if bad.any():
        t, c = np.argwhere(bad)[0]
        raise MotionFormatError(f"{src}: row {t} column {c} is not finite ({rows[t, c]})")
    return root_qpos(
        rows[:, :3],
        rows[:, 3:7],
        rows[:, ROOT_COLUMNS:],
        quat_order,
        src,
        where=("row", "(columns 3-6)"),
    )


def convert_csv(
    csv_path: str | os.PathLike,
    out_path: str | os.PathLike | None = None,
    *,
    input_fps: float,
    output_fps: float = 50.0,
    frame_range: tuple[int, int] | None = None,
    robot: RobotSpec | None = None,
    quat_order: str = "xyzw",
    progress: bool | None = None,
    checks: bool = True,
) -> MotionClip:
    """Convert a retargeted motion CSV into a clip at ``output_fps`` (and save it if asked).

    Args:
        csv_path: CSV file (see module docstring for the columns).
        out_path: npz to write atomically with ``save_clip``; None writes nothing.
        input_fps: frame rate of the CSV rows, Hz (LAFAN1 retargets: 30; g1-moves: 60).
        output_fps: frame rate of the clip, Hz (the env control rate, 50).
        frame_range: ``(first, stop)`` 0-based input rows to use, half-open like a slice; None
            uses all rows.
        robot: the `RobotSpec`; None is `gym_motion.robots.G1`.
        quat_order: order of the CSV's root quaternion columns, ``"xyzw"`` (LAFAN1) or ``"wxyz"``.
        progress: tqdm progress bar over frames; None shows it for long clips.
        checks: run `gym_motion.motion.checks.check_motion` on the clip and issue its findings
            as `MotionCheckWarning` warnings.

    Returns:
        The clip: ``floor(duration * output_fps) + 1`` frames (the last input row is kept when
        it falls on the output grid), float32, world frame, ``source_fps = input_fps``.

    Raises:
        MotionFormatError: malformed CSV (see ``read_csv``) or a bad ``frame_range``.
        ValueError: ``input_fps`` or ``output_fps`` is not a positive number.

    Warns:
        MotionCheckWarning: soft/hard joint limits, self or floor penetration, feet off
            the floor, a sliding stance foot, joint jumps.
    """
    check_out_path(csv_path, out_path)
    input_fps = check_fps(input_fps, "input_fps")
    output_fps = check_fps(output_fps, "output_fps")
    qpos = read_csv(csv_path, robot, quat_order)
    return qpos_to_clip(
        qpos, str(csv_path), input_fps, output_fps, frame_range, robot, progress, checks, out_path
    )


def convert_motion(
    path: str | os.PathLike,
    out_path: str | os.PathLike | None = None,
    *,
    input_fps: float | None = None,
    output_fps: float = 50.0,
    frame_range: tuple[int, int] | None = None,
    robot: RobotSpec | None = None,
    quat_order: str = "xyzw",
    progress: bool | None = None,
    checks: bool = True,
) -> MotionClip:
    """Convert any supported motion file into a clip at ``output_fps``: ``gym-motion convert``.

    The format is read from the content (`gym_motion.motion.formats.sniff`): a CSV goes to
    `convert_csv`, a GMR pickle to `convert_gmr`, an npz is loaded (`load_clip`), cut to
    ``frame_range``, resampled and saved in this package's format.

    Args:
        path: the input file.
        out_path: npz to write atomically; None writes nothing.
        input_fps: rate of a CSV's rows, Hz (required for a CSV, which does not state it). A
            pickle or npz states its rate; a different ``input_fps`` is refused.
        output_fps, frame_range, robot, progress, checks: as in `convert_csv`.
        quat_order: root quaternion order of a CSV or pickle (an npz is wxyz).

    Returns:
        The clip.

    Raises:
        MotionFormatError: "unsupported format: ..." for a file of another kind; a CSV without
            ``input_fps``; an ``input_fps`` other than the file's rate; errors of the reader.
        ValueError: a rate that is not a positive number.
    """
    check_out_path(path, out_path)
    robot = _kinematics.default_robot() if robot is None else robot
    src = str(path)
    found = sniff(path)
    if found.kind is FileKind.CSV:
        if input_fps is None:
            raise MotionFormatError(
                f"{src}: a CSV does not state its frame rate: give input_fps (CLI: --input-fps), "
                "e.g. 30 for LAFAN1 retargets, 60 for G1 Moves clips"
            )
        return convert_csv(
            path,
            out_path,
            input_fps=input_fps,
            output_fps=output_fps,
            frame_range=frame_range,
            robot=robot,
            quat_order=quat_order,
            progress=progress,
            checks=checks,
        )
    output_fps = check_fps(output_fps, "output_fps")
    if found.kind is FileKind.PICKLE:
        qpos, fps = read_gmr_qpos(path, robot, quat_order)
        _check_input_fps(input_fps, fps, src)
        return qpos_to_clip(
            qpos, src, fps, output_fps, frame_range, robot, progress, checks, out_path
        )
    if found.kind is FileKind.NPZ:
        with warnings.catch_warnings():  # said below, with what convert does about it
            warnings.filterwarnings("ignore", message=".*the file carries no velocities")
            clip = load_clip(path, robot)
        _check_input_fps(input_fps, clip.fps, src)
        missing = missing_velocities(clip)
        if missing:  # poses only: rebuilt from qpos as a CSV would be
            warnings.warn(
                f"{src}: {', '.join(missing)} zero in every frame while the motion moves: "
                "velocities recomputed from the poses (as for a CSV)",
                MotionCheckWarning,
                stacklevel=2,
            )
            root = clip.body_index(robot.root_body)
            qpos = np.concatenate(
                [clip.body_pos_w[:, root], clip.body_quat_w[:, root], clip.joint_pos], axis=1
            ).astype(np.float64)
            return qpos_to_clip(
                qpos, src, clip.fps, output_fps, frame_range, robot, progress, checks, out_path
            )
        if frame_range is not None:
            first, stop = frame_bounds(frame_range, clip.num_frames, src)
            clip = dataclasses.replace(
                clip, **{k: getattr(clip, k)[first:stop] for k in ARRAY_KEYS}
            )
        clip = clip.resample(output_fps)
        return finish_clip(clip, src, robot, checks, out_path)
    raise MotionFormatError(_unsupported(src, found.description, robot))


def _check_input_fps(input_fps: float | None, file_fps: float, src: str) -> None:
    if input_fps is not None and not rates_equal(check_fps(input_fps, "input_fps"), file_fps):
        raise MotionFormatError(
            f"{src}: the file states {file_fps:g} fps but input_fps {input_fps:g} was given; "
            "leave input_fps out (CLI: --input-fps) to use the file's rate"
        )


def _unsupported(src: str, what: str, robot: RobotSpec) -> str:
    return unsupported_message(src, what, robot.name, len(robot.joint_names))
