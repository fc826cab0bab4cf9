"""A clip checked against its robot: names, finite values, unit quaternions, root height and
forward kinematics are errors; joint ranges, joint jumps and missing velocities are warnings.

`gym_motion.motion.clip.load_clip` validates every file it reads; conversion validates a clip
before saving it.
"""

from __future__ import annotations

import warnings

import mujoco
import numpy as np

from gym_motion.motion import _kinematics, _quat
from gym_motion.motion.arrays import ARRAY_KEYS, MotionClip, MotionFormatError
from gym_motion.robots.spec import RobotSpec

__all__ = [
    "JOINT_LIMIT_TOL",
    "KINEMATIC_SAMPLES",
    "KINEMATIC_TOL",
    "MAX_JOINT_JUMP",
    "MIN_ROOT_HEIGHT",
    "MOVING_TOL",
    "QUAT_NORM_TOL",
    "missing_velocities",
    "validate_clip",
]

QUAT_NORM_TOL = 1e-3  # |norm - 1| above this is an error
KINEMATIC_TOL = 1e-2  # m, FK of root pose + joints vs stored body positions
KINEMATIC_SAMPLES = 16  # evenly spaced frames checked by FK
MOVING_TOL = 1e-3  # m, rad or quaternion units: a pose key moving more than this needs velocities
MIN_ROOT_HEIGHT = 0.0  # m, the root body origin below the floor plane is an error
JOINT_LIMIT_TOL = 1e-3  # rad beyond the joint range before a warning
MAX_JOINT_JUMP = 0.5  # rad between consecutive frames before a warning


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
            f"{source}: {names_diff('joint', clip.joint_names, robot.joint_names)}"
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


def names_diff(kind: str, got: tuple[str, ...], want: tuple[str, ...]) -> str:
    """How ``kind`` names ``got`` (a file's or clip's) differ from the robot's ``want``,
    for an error message."""
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
    fk = _kinematics.body_poses(model, _kinematics.robot_layout(robot), qpos, ids)
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
            f"{jump[t, j]:.3f} rad from frame {t} to {t + 1}"
            + first_frame_jump_hint(len(frames), frames[0]),
            stacklevel=4,
        )


def first_frame_jump_hint(num_steps: int, first_step: int) -> str:
    """The advice appended to a joint-jump warning when the only jump is out of frame 0.

    Args:
        num_steps: how many frame steps t -> t + 1 change a joint too much.
        first_step: t of the first of them.

    Returns:
        The hint, starting with ``"; "``, or ``""`` when the jumps are elsewhere as well.
    """
    # A lone jump out of frame 0 is typically a glitch in the source's first row; episodes
    # from the clip start (RSI, evaluation) would begin at its huge joint velocity.
    if num_steps != 1 or first_step != 0:
        return ""
    return (
        "; only the first frame jumps: if it is a glitch of the source, convert from one row "
        "later (`gym-motion convert SOURCE --frames 1 STOP` for a whole source of STOP rows), "
        "since episodes from the clip start (evaluation's included) begin at that frame and "
        "its velocity"
    )
