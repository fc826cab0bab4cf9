"""The embedded default motion: valid, grounded, and reproduced bit for bit by its script."""

from __future__ import annotations

import runpy
import warnings
from pathlib import Path

import mujoco
import numpy as np

from gym_motion.motion import DEFAULT_MOTION_PATH, load_clip
from gym_motion.robots import g1

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "make_default_motion.py"


def test_default_motion_loads_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clip = load_clip(DEFAULT_MOTION_PATH)
    assert clip.fps == 50.0 and clip.num_frames == 401 and clip.duration == 8.0
    np.testing.assert_allclose(clip.joint_pos[0], g1.DEFAULT_JOINT_POS, atol=1e-7)
    np.testing.assert_allclose(clip.joint_pos[-1], g1.DEFAULT_JOINT_POS, atol=1e-7)
    np.testing.assert_allclose(clip.body_pos_w[0, 0, 2], g1.DEFAULT_ROOT_HEIGHT, atol=0.01)
    squat = clip.body_pos_w[:, 0, 2].min()
    assert squat < g1.DEFAULT_ROOT_HEIGHT - 0.1  # it squats


def test_lowest_foot_point_touches_the_floor(default_clip):
    model = g1.load_model(floor=False)
    data = mujoco.MjData(model)
    feet = g1.G1.foot_geom_ids(model)
    for t in range(0, default_clip.num_frames, 40):
        data.qpos[:3] = default_clip.body_pos_w[t, 0]
        data.qpos[3:7] = default_clip.body_quat_w[t, 0]
        data.qpos[7:] = default_clip.joint_pos[t]
        mujoco.mj_kinematics(model, data)
        # the soles are capsules: lowest point = lower end of the axis segment - radius
        axis = data.geom_xmat[feet].reshape(-1, 3, 3)[:, :, 2] * model.geom_size[feet, 1:2]
        ends_z = data.geom_xpos[feet, 2:3] + np.stack((axis[:, 2], -axis[:, 2]), axis=1)
        lowest = (ends_z.min(axis=1) - model.geom_size[feet, 0]).min()
        assert abs(lowest) < 1e-5, (t, lowest)


def test_generator_script_reproduces_the_file_bitwise(tmp_path):
    out = tmp_path / "default.npz"
    runpy.run_path(str(SCRIPT), run_name="make_default_motion")["main"]([str(out)])
    assert out.read_bytes() == DEFAULT_MOTION_PATH.read_bytes()


def test_feet_stay_planted_and_joints_stay_inside_the_soft_limits(default_clip):
    feet = [default_clip.body_index(b) for b in g1.G1.foot_bodies]
    xy = default_clip.body_pos_w[:, feet, :2]
    assert np.abs(xy - xy[:1]).max() < 1e-3  # m: no foot sliding
    model = g1.load_model(floor=False)
    soft = g1.G1.soft_joint_limits(model)
    margin = np.minimum(default_clip.joint_pos - soft[:, 0], soft[:, 1] - default_clip.joint_pos)
    assert margin.min() >= 0.1  # rad: an ideal tracker never pays the joint-limit penalty
