"""Conversion steps below `load_clip`: configurations (``qpos`` rows) and GMR pickles into clips.

`gym_motion.motion.convert` is the public face; its docstring describes the steps. They sit apart
from it because `gym_motion.motion.clip.load_clip` converts GMR pickles in memory while
`convert_motion` loads npz files with `load_clip`: kept here, they import neither module.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from gym_motion.atomic import check_output_path
from gym_motion.motion import _kinematics, _quat, gmr
from gym_motion.motion.arrays import MotionClip, MotionFormatError
from gym_motion.motion.checks import check_motion, warn_motion_checks
from gym_motion.motion.npz import save_clip
from gym_motion.motion.rates import check_fps, rates_equal, resample_grid
from gym_motion.motion.validation import KINEMATIC_SAMPLES, validate_clip
from gym_motion.robots.spec import RobotSpec

__all__ = [
    "clip_from_qpos",
    "convert_gmr",
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

    model, layout = _kinematics.robot_model(robot), _kinematics.robot_layout(robot)
    names = tuple(robot.body_names)
    ids = _kinematics.body_ids(model, names)
    pos, quat, lin_vel, ang_vel = _kinematics.body_states(model, layout, qpos, qvel, ids, progress)
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
    fk = _kinematics.body_poses(model, _kinematics.robot_layout(robot), local, ids)
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
        MotionCheckWarning: soft/hard joint limits, self or floor penetration, feet off
            the floor, a sliding stance foot, joint jumps.
    """
    check_out_path(pkl_path, out_path)
    qpos, fps = read_gmr_qpos(pkl_path, robot, quat_order)
    output_fps = fps if output_fps is None else check_fps(output_fps, "output_fps")
    return qpos_to_clip(
        qpos, str(pkl_path), fps, output_fps, frame_range, robot, progress, checks, out_path
    )


def check_out_path(path: str | os.PathLike, out_path: str | os.PathLike | None) -> None:
    """Refuse an output path that cannot take the clip, before anything is read or written
    (`gym_motion.atomic.check_output_path`; None: nothing is written).

    Raises:
        ValueError: `out_path` is a directory, is in a directory that does not exist, or is
            the input file `path` itself (converting would replace the source).
    """
    if out_path is not None:
        check_output_path(out_path, inputs=(path,))


def frame_bounds(frame_range: tuple[int, int], num_frames: int, src: str) -> tuple[int, int]:
    """``frame_range`` as checked ``(first, stop)`` input frames of ``num_frames``.

    Raises:
        MotionFormatError: not ``0 <= first < stop <= num_frames`` with at least 2 frames.
    """
    first, stop = (int(v) for v in frame_range)
    if not 0 <= first < stop <= num_frames or stop - first < 2:
        raise MotionFormatError(
            f"{src}: frame_range {tuple(frame_range)} must satisfy 0 <= first < stop <= "
            f"{num_frames} (input frames) with at least 2 frames"
        )
    return first, stop


def qpos_to_clip(
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
        first, stop = frame_bounds(frame_range, qpos.shape[0], src)
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
    return finish_clip(clip, src, robot, checks, out_path)


def finish_clip(
    clip: MotionClip,
    src: str,
    robot: RobotSpec,
    checks: bool,
    out_path: str | os.PathLike | None,
) -> MotionClip:
    """Issue the motion checks (with ``checks``) and, with ``out_path``, validate and save
    ``clip``; returns it."""
    if checks:
        warn_motion_checks(check_motion(clip, robot), src, stacklevel=4)
    if out_path is not None:  # never write a clip that load_clip would refuse
        validate_clip(clip, robot, source=src, check_kinematics=False, warn=False)
        save_clip(clip, Path(out_path))
    return clip
