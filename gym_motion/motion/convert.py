"""Convert retargeted motion CSVs (LAFAN1 G1 convention) into motion clips.

A CSV has no header and one row per frame: root position xyz (m, world, z up) | root orientation
quaternion **xyzw** | the robot's joint angles (rad) in joint order (docs/task.md section 3).

Conversion (``convert_csv``):

1. resample to the output rate on the grid of ``resample_grid`` (lerp of root position and
   joints, slerp of the root quaternion; vectorized);
2. velocities by central differences (``np.gradient`` stencil; root angular velocity from the
   neighbouring rotations, world frame);
3. every frame's body poses and velocities from MuJoCo for that frame's ``qpos`` and
   finite-difference ``qvel`` on the robot's own model, so a replayed clip is self-consistent.

Example:
    >>> from gym_motion.motion import convert_csv
    >>> clip = convert_csv("dance.csv", "dance.npz", input_fps=30, output_fps=50)  # doctest: +SKIP
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from gym_motion.motion import _kinematics, _quat
from gym_motion.motion.clip import MotionClip, MotionFormatError, resample_grid, save_clip
from gym_motion.robots.spec import RobotSpec

__all__ = ["clip_from_qpos", "convert_csv", "read_csv", "resample_qpos"]

ROOT_COLUMNS = 7  # xyz + quaternion
QUAT_NORM_TOL = 1e-2  # CSVs are often written with ~6 decimals
# Mean root up-vector z: below this in the given order but above it in the other order means the
# quaternion order looks wrong (jazzwalk: 0.99 read right, 0.57 read in the wrong order).
UPRIGHT_MIN = 0.9


def read_csv(
    csv_path: str | os.PathLike, robot: RobotSpec | None = None, quat_order: str = "xyzw"
) -> np.ndarray:
    """Read a motion CSV into MuJoCo ``qpos`` rows ``(T, 7 + J) float64``, root quaternion wxyz.

    Raises:
        MotionFormatError: a header or non-numeric cell, a column count other than ``7 + J``,
            quaternion norms off by more than ``QUAT_NORM_TOL``, or a root quaternion whose order
            looks like wxyz while ``quat_order="xyzw"`` (or the reverse).
    """
    robot = _kinematics.default_robot() if robot is None else robot
    src = str(csv_path)
    num_joints = len(robot.joint_names)
    num_cols = ROOT_COLUMNS + num_joints
    layout = (
        f"{num_cols} columns: root x y z (m) | root quaternion x y z w | {num_joints} joint "
        "angles (rad) in the robot's joint order, no header"
    )
    try:
        rows = np.loadtxt(src, delimiter=",", dtype=np.float64, ndmin=2)
    except ValueError as exc:
        raise MotionFormatError(
            f"{src}: could not parse as numbers ({exc}); expected {layout}"
        ) from exc
    if rows.shape[1] != num_cols:
        hint = ""
        if rows.shape[1] == num_cols + 1:
            hint = " (one extra column: a frame index or time column? remove it)"
        raise MotionFormatError(f"{src}: {rows.shape[1]} columns, expected {layout}{hint}")
    if rows.shape[0] < 2:
        raise MotionFormatError(f"{src}: {rows.shape[0]} row(s); a motion needs at least 2")
    bad = ~np.isfinite(rows)
    if bad.any():
        t, c = np.argwhere(bad)[0]
        raise MotionFormatError(f"{src}: row {t} column {c} is not finite ({rows[t, c]})")
    raw = rows[:, 3:7]
    norms = np.linalg.norm(raw, axis=1)
    if np.abs(norms - 1.0).max() > QUAT_NORM_TOL:
        t = int(np.argmax(np.abs(norms - 1.0)))
        raise MotionFormatError(
            f"{src}: row {t}: root quaternion (columns 3-6) has norm {norms[t]:.4f}, expected 1; "
            f"expected {layout}"
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
            f"up-vector z {up:.2f}), read as {swapped} it is upright: the columns look like "
            f"{swapped}. Pass quat_order={swapped!r} (CLI: --quat-order {swapped})"
        )
    return np.concatenate((rows[:, :3], quat, rows[:, ROOT_COLUMNS:]), axis=1)


def _up_z(quat: np.ndarray) -> float:
    """Mean world z of the root body's z axis."""
    return float(np.mean(_quat.rotate(quat, np.array([0.0, 0.0, 1.0]))[:, 2]))


def resample_qpos(qpos: np.ndarray, input_fps: float, output_fps: float) -> np.ndarray:
    """Resample ``qpos (T, 7 + J)`` rows (quaternion wxyz) on the grid of ``resample_grid``.

    Root position and joints are lerped, the root quaternion slerped; returns ``(K, 7 + J)``.
    """
    if float(input_fps) == float(output_fps):
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
) -> MotionClip:
    """Convert a retargeted motion CSV into a clip at ``output_fps`` (and save it if asked).

    Args:
        csv_path: CSV file (see module docstring for the columns).
        out_path: npz to write atomically with ``save_clip``; None writes nothing.
        input_fps: frame rate of the CSV rows (LAFAN1 retargets: 30; g1-moves: 60).
        output_fps: frame rate of the clip (the env control rate, 50).
        frame_range: ``(first, stop)`` 0-based input rows to use, half-open like a slice; None
            uses all rows.
        robot: robot module; None is ``gym_motion.robots.g1``.
        quat_order: order of the CSV's root quaternion columns, ``"xyzw"`` (LAFAN1) or ``"wxyz"``.
        progress: tqdm progress bar over frames; None shows it for long clips.

    Returns:
        The clip: ``floor(duration * output_fps) + 1`` frames (the last input row is kept when
        it falls on the output grid), float32, world frame, ``source_fps = input_fps``.

    Raises:
        MotionFormatError: malformed CSV (see ``read_csv``) or a bad ``frame_range``.
    """
    qpos = read_csv(csv_path, robot, quat_order)
    if frame_range is not None:
        first, stop = (int(v) for v in frame_range)
        if not 0 <= first < stop <= qpos.shape[0] or stop - first < 2:
            raise MotionFormatError(
                f"{csv_path}: frame_range {frame_range} must satisfy 0 <= first < stop <= "
                f"{qpos.shape[0]} (rows) with at least 2 rows"
            )
        qpos = qpos[first:stop]
    qpos = resample_qpos(qpos, input_fps, output_fps)
    clip = clip_from_qpos(qpos, output_fps, robot, source_fps=float(input_fps), progress=progress)
    if out_path is not None:
        save_clip(clip, Path(out_path))
    return clip
