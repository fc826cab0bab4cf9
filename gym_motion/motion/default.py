"""The embedded default motion: stand, squat, swing the arms, stand (8 s, generated, not captured).

The motion is built from joint-space keyframes with cosine easing, starting and ending at
``DEFAULT_JOINT_POS``. The pelvis stays upright; its height is set per frame so the lowest point
of the foot collision geoms touches the floor (z = 0), and its x, y so that the feet stay where
they start (planted: the pelvis moves back as the knees move forward in the squat). Body arrays
come from the same forward-kinematics path as CSV conversion (``clip_from_qpos``). The
generator is deterministic: ``scripts/make_default_motion.py`` rewrites ``DEFAULT_MOTION_PATH``
bit for bit.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from gym_motion.motion import _kinematics
from gym_motion.motion._convert import clip_from_qpos
from gym_motion.motion.arrays import MotionClip
from gym_motion.motion.npz import save_clip
from gym_motion.robots.layout import JointLayout

__all__ = ["DEFAULT_MOTION_PATH", "KEYFRAMES", "make_default_motion", "write_default_motion"]

DEFAULT_MOTION_PATH = Path(__file__).resolve().parents[1] / "assets" / "motions" / "default.npz"
DEFAULT_FPS = 50.0

_SQUAT = {
    "hip_pitch": -0.85,
    "knee": 1.5,
    "ankle_pitch": -0.65,  # hip + knee + ankle = 0 keeps the soles level; 0.15 rad inside the
    "shoulder_pitch": -0.5,  # ankle's soft limit (-0.803 rad), so an ideal tracker pays nothing
}
_LEFT_FORWARD = {"left_shoulder_pitch": -0.6, "right_shoulder_pitch": 0.8, "elbow": 0.9}
_RIGHT_FORWARD = {"left_shoulder_pitch": 0.8, "right_shoulder_pitch": -0.6, "elbow": 0.9}

# (time s, joint overrides of the default pose); a key without side prefix sets both sides.
KEYFRAMES: tuple[tuple[float, dict[str, float]], ...] = (
    (0.0, {}),
    (1.0, {}),
    (2.5, _SQUAT),
    (3.5, _SQUAT),
    (5.0, {}),
    (5.6, _LEFT_FORWARD),
    (6.2, _RIGHT_FORWARD),
    (6.8, _LEFT_FORWARD),
    (7.4, _RIGHT_FORWARD),
    (8.0, {}),
)


def _pose(robot, overrides: dict[str, float]) -> np.ndarray:
    pose = np.array(robot.default_joint_pos, dtype=np.float64)
    for i, joint in enumerate(robot.joint_names):
        part = joint.removesuffix("_joint")
        side_free = part.removeprefix("left_").removeprefix("right_")
        if part in overrides:
            pose[i] = overrides[part]
        elif side_free in overrides:
            pose[i] = overrides[side_free]
    return pose


def _joint_trajectory(robot, fps: float) -> np.ndarray:
    """Joint positions ``(T, J)`` rad: cosine-eased interpolation of ``KEYFRAMES``."""
    key_t = np.array([t for t, _ in KEYFRAMES])
    key_q = np.stack([_pose(robot, o) for _, o in KEYFRAMES])
    num_frames = int(round(key_t[-1] * fps)) + 1
    t = np.arange(num_frames) / fps
    seg = np.clip(np.searchsorted(key_t, t, side="right") - 1, 0, len(key_t) - 2)
    u = (t - key_t[seg]) / (key_t[seg + 1] - key_t[seg])
    s = 0.5 - 0.5 * np.cos(np.pi * np.clip(u, 0.0, 1.0))
    return key_q[seg] + (key_q[seg + 1] - key_q[seg]) * s[:, None]


def _lowest_foot_point(
    model: mujoco.MjModel, layout: JointLayout, qpos: np.ndarray, geoms: np.ndarray
) -> np.ndarray:
    """``(T,)`` lowest world z of the foot collision geoms (spheres and capsules) per frame of
    robot-order ``qpos (T, 7 + J)``."""
    kinds = model.geom_type[geoms]
    supported = (mujoco.mjtGeom.mjGEOM_SPHERE, mujoco.mjtGeom.mjGEOM_CAPSULE)
    if not np.isin(kinds, supported).all():
        raise ValueError("foot collision geoms must be spheres or capsules")
    radius = model.geom_size[geoms, 0]
    half = np.where(kinds == mujoco.mjtGeom.mjGEOM_CAPSULE, model.geom_size[geoms, 1], 0.0)
    data = mujoco.MjData(model)
    qpos = layout.model_qpos(qpos)
    centre_z = np.empty((qpos.shape[0], len(geoms)))
    axis_z = np.empty((qpos.shape[0], len(geoms)))  # world z of each geom's local z axis
    for t in range(qpos.shape[0]):
        data.qpos[:] = qpos[t]
        mujoco.mj_kinematics(model, data)
        centre_z[t] = data.geom_xpos[geoms, 2]
        axis_z[t] = data.geom_xmat[geoms, 8]
    return (centre_z - half * np.abs(axis_z) - radius).min(axis=1)


def make_default_motion(fps: float = DEFAULT_FPS, robot=None) -> MotionClip:
    """Generate the default stand-squat-arm-swing clip (8 s at ``fps``, 30 bodies, float32)."""
    robot = _kinematics.default_robot() if robot is None else robot
    model, layout = _kinematics.robot_model(robot), _kinematics.robot_layout(robot)
    joints = _joint_trajectory(robot, fps)
    qpos = np.zeros((joints.shape[0], 7 + joints.shape[1]))
    qpos[:, 3] = 1.0  # upright pelvis, identity orientation
    qpos[:, 7:] = joints
    qpos[:, 2] = -_lowest_foot_point(model, layout, qpos, robot.foot_geom_ids(model))
    feet = _kinematics.body_ids(model, robot.foot_bodies)
    feet_xy = _kinematics.body_poses(model, layout, qpos, feet)
    centre = feet_xy[:, :, :2].mean(axis=1)  # (T, 2) mean foot position with the pelvis at 0
    qpos[:, :2] = -(centre - centre[0])
    return clip_from_qpos(qpos, fps, robot, progress=False)


def write_default_motion(path: str | Path = DEFAULT_MOTION_PATH) -> Path:
    """Generate the default motion and save it atomically to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return save_clip(make_default_motion(), path)
