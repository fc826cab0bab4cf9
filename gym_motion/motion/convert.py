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
   joint jumps), issued as `MotionCheckWarning` warnings.

Example:
    >>> from gym_motion.motion import convert_csv
    >>> clip = convert_csv("dance.csv", "dance.npz", input_fps=30, output_fps=50)  # doctest: +SKIP
    >>> clip = convert_motion("dance.pkl", "dance.npz")  # a GMR pickle  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from pathlib import Path

import numpy as np

from gym_motion.atomic import check_output_path
from gym_motion.motion import _kinematics, _quat, gmr
from gym_motion.motion.checks import MotionCheckWarning, check_motion, warn_motion_checks
from gym_motion.motion.clip import (
    ARRAY_KEYS,
    KINEMATIC_SAMPLES,
    MotionClip,
    MotionFormatError,
    check_fps,
    load_clip,
    missing_velocities,
    rates_equal,
    resample_grid,
    save_clip,
    validate_clip,
)
from gym_motion.motion.formats import FileKind, sniff, unsupported_message
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

ROOT_COLUMNS = 7  # xyz + quaternion
QUAT_NORM_TOL = 1e-2  # CSVs are often written with ~6 decimals
# Mean root up-vector z: below this in the given order but above it in the other order means the
# quaternion order looks wrong (jazzwalk: 0.99 read right, 0.57 read in the wrong order).
UPRIGHT_MIN = 0.9
# m between a GMR pickle's local_body_pos and forward kinematics of its root and dof_pos on the
# robot's model: the G1 models agree to well under this, while dof_pos columns in another joint
# order move bodies by decimetres.
GMR_BODY_TOL = 0.02


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


def root_qpos(
    root_pos: np.ndarray,
    root_quat: np.ndarray,
    joint_pos: np.ndarray,
    quat_order: str,
    src: str,
    where: tuple[str, str] = ("frame", ""),
) -> np.ndarray:
    """MuJoCo ``qpos`` rows ``(T, 7 + J) float64`` (root quaternion wxyz, normalised).

    The one path from a root position, root quaternion and joint angles to configurations,
    shared by CSVs and GMR pickles.

    Args:
        root_pos: (T, 3) m, world frame. root_quat: (T, 4) in ``quat_order``. joint_pos:
            (T, J) rad, the robot's joint order.
        quat_order: ``"xyzw"`` (scalar last, LAFAN1 CSVs and GMR) or ``"wxyz"``.
        src: the file, for messages. where: how messages name a row and the quaternion, e.g.
            ``("row", "(columns 3-6)")``.

    Raises:
        MotionFormatError: a quaternion norm off by more than ``QUAT_NORM_TOL``, or a root
            quaternion that tilts the robot in ``quat_order`` but is upright in the other
            order ("the columns look like ...").
        ValueError: ``quat_order`` is neither ``"xyzw"`` nor ``"wxyz"``.
    """
    raw = np.asarray(root_quat, dtype=np.float64)
    row, label = where
    label = f" {label}" if label else ""
    norms = np.linalg.norm(raw, axis=1)
    if np.abs(norms - 1.0).max() > QUAT_NORM_TOL:
        t = int(np.argmax(np.abs(norms - 1.0)))
        raise MotionFormatError(
            f"{src}: {row} {t}: root quaternion{label} has norm {norms[t]:.4f}, expected 1 "
            f"(a unit quaternion, {quat_order})"
        )
    if quat_order == "xyzw":
        quat = raw[:, [3, 0, 1, 2]]
        other = raw
    elif quat_order == "wxyz":
        quat = raw
        other = raw[:, [3, 0, 1, 2]]
    else:
        raise ValueError(f"quat_order must be 'xyzw' or 'wxyz', got {quat_order!r}")
    quat = _quat.normalize(quat)
    up = _up_z(quat)
    if up < UPRIGHT_MIN and _up_z(_quat.normalize(other)) > UPRIGHT_MIN:
        swapped = "wxyz" if quat_order == "xyzw" else "xyzw"
        raise MotionFormatError(
            f"{src}: read as {quat_order}, the root quaternion tilts the robot (mean "
            f"up-vector z {up:.2f}), read as {swapped} it is upright: the root quaternion{label} "
            f"looks like {swapped}. Pass quat_order={swapped!r} (CLI: --quat-order {swapped})"
        )
    return np.concatenate(
        (np.asarray(root_pos, np.float64), quat, np.asarray(joint_pos, np.float64)), axis=1
    )


def _up_z(quat: np.ndarray) -> float:
    """Mean world z of the root body's z axis."""
    return float(np.mean(_quat.rotate(quat, np.array([0.0, 0.0, 1.0]))[:, 2]))


def resample_qpos(qpos: np.ndarray, input_fps: float, output_fps: float) -> np.ndarray:
    """Resample ``qpos (T, 7 + J)`` rows (quaternion wxyz) on the grid of ``resample_grid``.

    Root position and joints are lerped, the root quaternion slerped; returns ``(K, 7 + J)``.
    """
    if rates_equal(input_fps, output_fps):
        return np.array(qpos, dtype=np.float64)
    i0, i1, blend = resample_grid(qpos.shape[0], input_fps, output_fps)
    b = blend[:, None]
    out = qpos[i0] + (qpos[i1] - qpos[i0]) * b
    out[:, 3:7] = _quat.slerp(qpos[i0, 3:7], qpos[i1, 3:7], blend)
    return out


def clip_from_qpos(
    qpos: np.ndarray,
    fps: float,
    robot: RobotSpec | None = None,
    source_fps: float | None = None,
    progress: bool | None = None,
) -> MotionClip:
    """A clip from configurations ``qpos (T, 7 + J)`` (root xyz, root quat wxyz, joints) at ``fps``.

    Velocities are central differences (``np.gradient`` stencil, one-sided at the ends; root
    angular velocity from neighbouring rotations), body arrays come from MuJoCo for every frame
    (all ``robot.body_names``). ``progress`` shows a tqdm bar (None: for long clips).
    """
    robot = _kinematics.default_robot() if robot is None else robot
    qpos = np.asarray(qpos, dtype=np.float64)
    if qpos.ndim != 2 or qpos.shape[0] < 2:
        raise MotionFormatError(f"qpos must be (T >= 2, 7 + J), got shape {qpos.shape}")
    dt = 1.0 / float(fps)
    qpos = qpos.copy()
    qpos[:, 3:7] = _quat.normalize(qpos[:, 3:7])
    root_lin_vel = np.gradient(qpos[:, :3], dt, axis=0)
    root_ang_vel = _quat.angular_velocity(qpos[:, 3:7], dt)
    joint_vel = np.gradient(qpos[:, ROOT_COLUMNS:], dt, axis=0)
    qvel = _kinematics.free_qvel(qpos[:, 3:7], root_lin_vel, root_ang_vel, joint_vel)

    model = _kinematics.robot_model(robot)
    names = tuple(robot.body_names)
    ids = _kinematics.body_ids(model, names)
    pos, quat, lin_vel, ang_vel = _kinematics.body_states(model, qpos, qvel, ids, progress)
    return MotionClip(
        fps=fps,
        joint_names=tuple(robot.joint_names),
        body_names=names,
        joint_pos=qpos[:, ROOT_COLUMNS:],
        joint_vel=joint_vel,
        body_pos_w=pos,
        body_quat_w=quat,
        body_lin_vel_w=lin_vel,
        body_ang_vel_w=ang_vel,
        source_fps=source_fps,
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
        MotionCheckWarning: soft/hard joint limits, self or floor penetration, joint jumps.
    """
    _check_out_path(csv_path, out_path)
    input_fps = check_fps(input_fps, "input_fps")
    output_fps = check_fps(output_fps, "output_fps")
    qpos = read_csv(csv_path, robot, quat_order)
    return _qpos_to_clip(
        qpos, str(csv_path), input_fps, output_fps, frame_range, robot, progress, checks, out_path
    )


def read_gmr_qpos(
    pkl_path: str | os.PathLike, robot: RobotSpec | None = None, quat_order: str = "xyzw"
) -> tuple[np.ndarray, float]:
    """Read a GMR motion pickle into MuJoCo ``qpos`` rows and its frame rate.

    The pickle is read by `gym_motion.motion.gmr.read_gmr` (never running code from the file).
    When it carries ``local_body_pos`` and ``link_body_list``, the bodies the robot shares
    with the list are checked against forward kinematics of ``dof_pos`` with the root at the
    origin (``KINEMATIC_SAMPLES`` frames, tolerance ``GMR_BODY_TOL``).

    Returns:
        ``qpos (T, 7 + J) float64`` (root xyz, root quaternion wxyz, joints) and ``fps``, Hz.

    Raises:
        MotionFormatError: see `read_gmr` and `root_qpos`; ``local_body_pos`` off forward
            kinematics (naming frame, body and distance).
    """
    robot = _kinematics.default_robot() if robot is None else robot
    src = str(pkl_path)
    motion = gmr.read_gmr(pkl_path, robot)
    qpos = root_qpos(
        motion.root_pos,
        motion.root_rot,
        motion.dof_pos,
        quat_order,
        src,
        where=("frame", "(key 'root_rot')"),
    )
    if motion.local_body_pos is not None:
        _check_local_body_pos(qpos, motion, robot, src)
    return qpos, motion.fps


def _check_local_body_pos(
    qpos: np.ndarray, motion: gmr.GMRMotion, robot: RobotSpec, src: str
) -> None:
    shared = [(i, n) for i, n in enumerate(motion.link_body_list) if n in robot.body_names]
    if not shared:
        return
    model = _kinematics.robot_model(robot)
    frames = np.unique(np.linspace(0, qpos.shape[0] - 1, KINEMATIC_SAMPLES).round().astype(int))
    local = qpos[frames].copy()
    local[:, :3] = 0.0
    local[:, 3:7] = (1.0, 0.0, 0.0, 0.0)
    ids = _kinematics.body_ids(model, tuple(n for _, n in shared))
    fk = _kinematics.body_poses(model, local, ids)
    stored = motion.local_body_pos[frames][:, [i for i, _ in shared]]
    err = np.linalg.norm(fk - stored, axis=-1)  # (F, B)
    if err.max() > GMR_BODY_TOL:
        f, b = np.unravel_index(np.argmax(err), err.shape)
        raise MotionFormatError(
            f"{src}: key 'local_body_pos' frame {frames[f]} body {shared[b][1]!r}: forward "
            f"kinematics of 'dof_pos' on robot {robot.name!r} puts it {err[f, b]:.3f} m away "
            f"(tolerance {GMR_BODY_TOL} m; {int((err > GMR_BODY_TOL).sum())} of {err.size} "
            "sampled body-frames off): the 'dof_pos' columns are not in the robot's joint "
            f"order {list(robot.joint_names)[:3]}..., or the pickle was made for another model"
        )


def convert_gmr(
    pkl_path: str | os.PathLike,
    out_path: str | os.PathLike | None = None,
    *,
    output_fps: float | None = 50.0,
    frame_range: tuple[int, int] | None = None,
    robot: RobotSpec | None = None,
    quat_order: str = "xyzw",
    progress: bool | None = None,
    checks: bool = True,
) -> MotionClip:
    """Convert a GMR motion pickle into a clip at ``output_fps`` (and save it if asked).

    The same steps as `convert_csv` after reading (`read_gmr_qpos`), so a pickle and a CSV
    holding the same rows give the same clip.

    Args:
        pkl_path: the pickle (layout in `gym_motion.motion.gmr`).
        out_path: npz to write atomically with ``save_clip``; None writes nothing.
        output_fps: frame rate of the clip, Hz; None keeps the pickle's ``fps``.
        frame_range: ``(first, stop)`` 0-based input frames, half-open; None uses all.
        robot: the `RobotSpec`; None is `gym_motion.robots.G1`.
        quat_order: order of ``root_rot``: ``"xyzw"`` (GMR's) or ``"wxyz"``.
        progress: tqdm progress bar over frames; None shows it for long clips.
        checks: issue the motion checks as `MotionCheckWarning` warnings.

    Returns:
        The clip, float32, world frame, ``source_fps`` = the pickle's ``fps``.

    Raises:
        MotionFormatError: see `read_gmr_qpos`; a bad ``frame_range``.
        ValueError: ``output_fps`` is not a positive number.

    Warns:
        MotionCheckWarning: soft/hard joint limits, self or floor penetration, joint jumps.
    """
    _check_out_path(pkl_path, out_path)
    qpos, fps = read_gmr_qpos(pkl_path, robot, quat_order)
    output_fps = fps if output_fps is None else check_fps(output_fps, "output_fps")
    return _qpos_to_clip(
        qpos, str(pkl_path), fps, output_fps, frame_range, robot, progress, checks, out_path
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
    _check_out_path(path, out_path)
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
        return _qpos_to_clip(
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
            return _qpos_to_clip(
                qpos, src, clip.fps, output_fps, frame_range, robot, progress, checks, out_path
            )
        if frame_range is not None:
            first, stop = _frame_range(frame_range, clip.num_frames, src)
            clip = dataclasses.replace(
                clip, **{k: getattr(clip, k)[first:stop] for k in ARRAY_KEYS}
            )
        clip = clip.resample(output_fps)
        return _finish(clip, src, robot, checks, out_path)
    raise MotionFormatError(_unsupported(src, found.description, robot))


def _check_out_path(path: str | os.PathLike, out_path: str | os.PathLike | None) -> None:
    """Refuse an output path that cannot take the clip, before anything is read or written
    (`gym_motion.atomic.check_output_path`; None: nothing is written).

    Raises:
        ValueError: `out_path` is a directory, is in a directory that does not exist, or is
            the input file `path` itself (converting would replace the source).
    """
    if out_path is not None:
        check_output_path(out_path, inputs=(path,))


def _check_input_fps(input_fps: float | None, file_fps: float, src: str) -> None:
    if input_fps is not None and not rates_equal(check_fps(input_fps, "input_fps"), file_fps):
        raise MotionFormatError(
            f"{src}: the file states {file_fps:g} fps but input_fps {input_fps:g} was given; "
            "leave input_fps out (CLI: --input-fps) to use the file's rate"
        )


def _frame_range(frame_range: tuple[int, int], num_frames: int, src: str) -> tuple[int, int]:
    first, stop = (int(v) for v in frame_range)
    if not 0 <= first < stop <= num_frames or stop - first < 2:
        raise MotionFormatError(
            f"{src}: frame_range {tuple(frame_range)} must satisfy 0 <= first < stop <= "
            f"{num_frames} (input frames) with at least 2 frames"
        )
    return first, stop


def _qpos_to_clip(
    qpos: np.ndarray,
    src: str,
    input_fps: float,
    output_fps: float,
    frame_range: tuple[int, int] | None,
    robot: RobotSpec | None,
    progress: bool | None,
    checks: bool,
    out_path: str | os.PathLike | None,
) -> MotionClip:
    """Steps 1-4 of the module docstring on input ``qpos`` rows, then save if asked."""
    robot = _kinematics.default_robot() if robot is None else robot
    if frame_range is not None:
        first, stop = _frame_range(frame_range, qpos.shape[0], src)
        qpos = qpos[first:stop]
    try:
        qpos = resample_qpos(qpos, input_fps, output_fps)
    except ValueError as exc:
        raise MotionFormatError(f"{src}: {exc}") from None
    if qpos.shape[0] < 2:
        raise MotionFormatError(
            f"{src}: the input frames at {input_fps:g} fps give {qpos.shape[0]} frame(s) at "
            f"{output_fps:g} fps; a motion needs at least 2"
        )
    clip = clip_from_qpos(qpos, output_fps, robot, source_fps=input_fps, progress=progress)
    return _finish(clip, src, robot, checks, out_path)


def _finish(
    clip: MotionClip,
    src: str,
    robot: RobotSpec,
    checks: bool,
    out_path: str | os.PathLike | None,
) -> MotionClip:
    if checks:
        warn_motion_checks(check_motion(clip, robot), src, stacklevel=4)
    if out_path is not None:  # never write a clip that load_clip would refuse
        validate_clip(clip, robot, source=src, check_kinematics=False, warn=False)
        save_clip(clip, Path(out_path))
    return clip


def _unsupported(src: str, what: str, robot: RobotSpec) -> str:
    return unsupported_message(src, what, robot.name, len(robot.joint_names))
