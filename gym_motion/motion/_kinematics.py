"""MuJoCo forward kinematics of motion frames: the one engine path of conversion and validation.

A frame is a free-floating robot configuration in robot order ``qpos = (root xyz, root quat wxyz,
joints in RobotSpec.joint_names order)``; the model's `JointLayout` puts it in the model's own
qpos columns (an MJCF may order its tree differently). The loop over frames does nothing but copy
a row into one ``MjData``, call the engine and copy the results out; every other step is
vectorized numpy.
"""

from __future__ import annotations

import functools

import mujoco
import numpy as np
from tqdm.auto import tqdm

from gym_motion.motion import _quat
from gym_motion.robots.layout import JointLayout
from gym_motion.robots.spec import RobotSpec

_PROGRESS_CHUNK = 256  # frames between progress-bar updates
PROGRESS_MIN_FRAMES = 2000  # show a progress bar (when ``progress`` is None) from this many frames


def default_robot() -> RobotSpec:
    """The robot used when none is given: `gym_motion.robots.g1.G1`."""
    from gym_motion.robots.g1 import G1

    return G1


@functools.cache
def robot_model(robot: RobotSpec) -> mujoco.MjModel:
    """The robot's MuJoCo model without floor (cached per spec, which compares by identity).

    Bodies are ``world + robot.body_names``; its qpos and qvel columns follow the MJCF's tree
    (`robot_layout` maps robot-order rows onto them).
    """
    return robot.build_model(floor=False)


@functools.cache
def robot_layout(robot: RobotSpec) -> JointLayout:
    """The `JointLayout` of `robot_model(robot)` (cached per spec)."""
    return robot.layout(robot_model(robot))


def body_ids(model: mujoco.MjModel, names: tuple[str, ...]) -> np.ndarray:
    """MuJoCo body ids ``(len(names),) int64`` of body names (-1 for a name the model lacks)."""
    return np.array(
        [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, n) for n in names], dtype=np.int64
    )


def free_qvel(
    root_quat: np.ndarray, root_lin_vel_w: np.ndarray, root_ang_vel_w: np.ndarray, joint_vel
) -> np.ndarray:
    """MuJoCo ``qvel (T, 6 + J)`` of a free-floating robot from world-frame root velocities.

    The free joint's linear velocity is in the world frame, its angular velocity in the root body
    frame, so the world angular velocity is rotated by the inverse root orientation.
    """
    ang_local = _quat.rotate_inverse(root_quat, root_ang_vel_w)
    return np.concatenate((root_lin_vel_w, ang_local, joint_vel), axis=-1)


def body_poses(
    model: mujoco.MjModel, layout: JointLayout, qpos: np.ndarray, ids: np.ndarray
) -> np.ndarray:
    """World positions ``(T, len(ids), 3)`` float64 of bodies ``ids`` for each robot-order row of
    ``qpos (T, 7 + J)``, placed in `model`'s columns by its `layout`."""
    data = mujoco.MjData(model)
    qpos = layout.model_qpos(qpos)
    out = np.empty((qpos.shape[0], len(ids), 3))
    for t in range(qpos.shape[0]):
        data.qpos[:] = qpos[t]
        mujoco.mj_kinematics(model, data)
        out[t] = data.xpos[ids]
    return out


def body_states(
    model: mujoco.MjModel,
    layout: JointLayout,
    qpos: np.ndarray,
    qvel: np.ndarray,
    ids: np.ndarray,
    progress: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Body poses and velocities of every frame, from MuJoCo.

    Args:
        model: the robot model. layout: its `JointLayout`.
        qpos: ``(T, 7 + J)`` robot-order configurations; qvel: ``(T, 6 + J)`` robot-order
            velocities (free joint convention, `free_qvel`).
        ids: ``(B,)`` body ids to report.
        progress: show a tqdm bar; None shows it from ``PROGRESS_MIN_FRAMES`` frames.

    Returns:
        ``pos (T,B,3)`` m, ``quat (T,B,4)`` wxyz, ``lin_vel (T,B,3)`` m/s of the body frame origin
        and ``ang_vel (T,B,3)`` rad/s, all world frame, float64 (``mj_objectVelocity`` of
        ``mjOBJ_XBODY`` with ``flg_local=0``, computed from ``cvel`` for all frames at once).
    """
    qpos, qvel = layout.model_qpos(qpos), layout.model_qvel(qvel)
    num_frames = qpos.shape[0]
    num_bodies = len(ids)
    pos = np.empty((num_frames, num_bodies, 3))
    quat = np.empty((num_frames, num_bodies, 4))
    cvel = np.empty((num_frames, num_bodies, 6))
    com = np.empty((num_frames, num_bodies, 3))
    root_ids = model.body_rootid[ids]
    data = mujoco.MjData(model)
    if progress is None:
        progress = num_frames >= PROGRESS_MIN_FRAMES
    with tqdm(
        total=num_frames, desc="forward kinematics", unit="frame", disable=not progress
    ) as bar:
        for start in range(0, num_frames, _PROGRESS_CHUNK):
            stop = min(start + _PROGRESS_CHUNK, num_frames)
            for t in range(start, stop):
                data.qpos[:] = qpos[t]
                data.qvel[:] = qvel[t]
                mujoco.mj_kinematics(model, data)
                mujoco.mj_comPos(model, data)
                mujoco.mj_comVel(model, data)
                pos[t] = data.xpos[ids]
                quat[t] = data.xquat[ids]
                cvel[t] = data.cvel[ids]
                com[t] = data.subtree_com[root_ids]
            bar.update(stop - start)
    # cvel is (angular, linear) at the subtree centre of mass of the body's tree root; shift the
    # linear part to the body frame origin: v = v_com + w x (p - com) = v_com - w x (com - p).
    ang_vel = cvel[..., :3]
    lin_vel = cvel[..., 3:] - np.cross(ang_vel, com - pos)
    return pos, quat, lin_vel, np.ascontiguousarray(ang_vel)
