"""The policy observation, term by term, against what MuJoCo computes itself for the same state
(docs/task.md sections 5 and 13): the IMU site's velocimeter and gyro, the anchor body's pose,
the joints, and the clip frame the policy should see (mjlab's: the next one)."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest
from numpy.testing import assert_allclose

from gym_motion.envs import TrackingVecEnv, eval_cfg, with_root_origin_velocity
from gym_motion.envs.config import TrackingEnvCfg
from gym_motion.robots.g1 import G1

IMU_SITE = "imu_in_pelvis"


def _matrix(quat: np.ndarray) -> np.ndarray:
    """(3, 3) rotation matrix of a wxyz quaternion, by MuJoCo."""
    m = np.zeros(9)
    mujoco.mju_quat2Mat(m, np.asarray(quat, np.float64))
    return m.reshape(3, 3)


def _in_frame(quat: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """`vec` (3,) world frame, in the frame of orientation `quat`: R^T vec."""
    return _matrix(quat).T @ np.asarray(vec, np.float64)


def _ori_6d(frame_quat: np.ndarray, quat: np.ndarray) -> np.ndarray:
    """First two columns of R_frame^T R_quat, row by row (docs/task.md section 5)."""
    return (_matrix(frame_quat).T @ _matrix(quat))[:, :2].reshape(-1)


def _model_with_sensors() -> tuple[mujoco.MjModel, dict[str, slice]]:
    """A test copy of the task's G1 model with mjlab's IMU sensors at ``imu_in_pelvis``: a
    velocimeter and a gyro (the env's model has none)."""
    spec = mujoco.MjSpec.from_file(str(G1.mjcf_path))
    for name, kind in (("imu_lin_vel", mujoco.mjtSensor.mjSENS_VELOCIMETER),
                       ("imu_ang_vel", mujoco.mjtSensor.mjSENS_GYRO)):  # fmt: skip
        spec.add_sensor(name=name, type=kind, objtype=mujoco.mjtObj.mjOBJ_SITE, objname=IMU_SITE)
    model = spec.compile()
    cols = {}
    for name in ("imu_lin_vel", "imu_ang_vel"):
        s = model.sensor(name)
        cols[name] = slice(int(s.adr[0]), int(s.adr[0]) + 3)
    return model, cols


def _stepped(cfg: TrackingEnvCfg, n: int = 3, steps: int = 25) -> TrackingVecEnv:
    """An env of `cfg` after `steps` steps of random actions from random clip frames: the
    robot moves, turns and leans (velocities and angular rates far from zero)."""
    sampling = dataclasses.replace(cfg.sampling, mode="uniform")
    env = TrackingVecEnv(n, cfg=dataclasses.replace(cfg, sampling=sampling), seed=3,
                         obs_mode="dict")  # fmt: skip
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    for _ in range(steps):
        env.step(rng.normal(0.0, 0.6, (n, 29)).astype(np.float32))
    return env


def test_every_policy_term_is_what_mujoco_computes_for_the_same_state():
    model, cols = _model_with_sensors()
    data = mujoco.MjData(model)
    env = _stepped(eval_cfg())
    try:
        obs = env.observations.buffers["policy"]
        sl = env.observations.term_slices["policy"]
        lib, command = env.library, env.command
        anchor = model.body(G1.anchor_body).id
        nq = model.nq
        assert env.model.nq == nq and env.layout.qpos_adr.tolist() == list(range(7, nq))
        moved = []
        for i in range(env.num_envs):
            data.qpos[:], data.qvel[:] = env.backend.qpos[i], env.backend.qvel[i]
            mujoco.mj_forward(model, data)
            # the reference frame the policy sees: the one after the robot's (mjlab's)
            row = lib.starts[command.clip_ids[i]] + command.frames[i] + 1
            b_anchor = lib.body_names.index(G1.anchor_body)
            ref_pos = lib.body_pos_w[row, b_anchor].astype(np.float64)
            ref_quat = lib.body_quat_w[row, b_anchor].astype(np.float64)
            want = {
                "command": np.concatenate([lib.joint_pos[row], lib.joint_vel[row]]),
                "anchor_pos": _in_frame(data.xquat[anchor], ref_pos - data.xpos[anchor]),
                "anchor_ori": _ori_6d(data.xquat[anchor], ref_quat),
                "base_lin_vel": data.sensordata[cols["imu_lin_vel"]],
                "base_ang_vel": data.sensordata[cols["imu_ang_vel"]],
                "joint_pos": data.qpos[7:] - G1.default_joint_pos,
                "joint_vel": data.qvel[6:],
                "last_action": env.state.action[i],
            }
            assert list(want) == list(sl)  # every term of the policy observation
            for name, value in want.items():
                assert_allclose(obs[i, sl[name]], value, rtol=1e-5, atol=2e-5, err_msg=name)
            # the IMU site's velocity is not the pelvis origin's: the test tells them apart
            origin = np.zeros(6)
            mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_BODY,
                                     model.body("pelvis").id, origin, 1)  # fmt: skip
            moved.append(np.abs(data.sensordata[cols["imu_lin_vel"]] - origin[3:]).max())
        assert max(moved) > 1e-3
    finally:
        env.close()


def test_the_old_term_reads_the_root_origin_and_the_old_frame_the_current_one():
    """`with_root_origin_velocity` and ``observed_frame="current"`` give the observation older
    run folders trained on: the pelvis origin's velocity, the robot's own frame."""
    cfg = with_root_origin_velocity(dataclasses.replace(eval_cfg(), observed_frame="current"))
    env = _stepped(cfg)
    try:
        obs = env.observations.buffers["policy"]
        sl = env.observations.term_slices["policy"]
        lib, command, s = env.library, env.command, env.state
        rows = lib.starts[command.clip_ids] + command.frames
        assert_allclose(obs[:, sl["command"]][:, :29], lib.joint_pos[rows], rtol=0, atol=0)
        pelvis = s.body_names.index("pelvis")
        origin = [
            _in_frame(q, v)
            for q, v in zip(s.robot.quat_w[:, pelvis], s.robot.lin_vel_w[:, pelvis], strict=True)
        ]
        assert_allclose(obs[:, sl["base_lin_vel"]], origin, rtol=1e-5, atol=1e-5)
    finally:
        env.close()


@pytest.mark.parametrize("frame", ["next", "current"])
def test_residual_actions_are_offset_by_the_reference_the_policy_observed(frame):
    cfg = dataclasses.replace(eval_cfg(), action_offset="reference", observed_frame=frame)
    env = _stepped(cfg, steps=3)
    try:
        observed = env.observations.buffers["policy"][:, :29].copy()
        env.step(np.zeros((env.num_envs, 29), np.float32))
        assert_allclose(env.actions.targets, observed - env.state.encoder_bias, atol=1e-6)
    finally:
        env.close()
