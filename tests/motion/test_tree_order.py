"""Clips on a model whose kinematic tree orders bodies and joints unlike the robot's joint order.

`reordered_g1_xml` (tests/conftest.py) is the package's G1 with the left arm's subtree after the
right arm's: its qpos columns of the arms follow another order than `G1.joint_names`, which is
the clips' joint order. Validation, conversion and checks must place each joint by name.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from numpy.testing import assert_allclose

from gym_motion.motion import MotionFormatError, load_clip
from gym_motion.motion._convert import clip_from_qpos
from gym_motion.motion.checks import check_motion
from gym_motion.motion.default import DEFAULT_MOTION_PATH, make_default_motion
from gym_motion.motion.validation import validate_clip
from gym_motion.robots.g1 import G1


@pytest.fixture(scope="module")
def reordered(reordered_g1_xml):
    return G1.with_mjcf(reordered_g1_xml)


def test_clips_validate_on_the_reordered_model(reordered, motions_dir):
    embedded = load_clip(DEFAULT_MOTION_PATH, robot=reordered)
    assert embedded.joint_names == G1.joint_names
    real = load_clip(motions_dir / "g1moves_jazzwalk_60fps.npz", robot=reordered)
    assert real.num_frames > 100


def test_forward_kinematics_check_still_refuses_swapped_joints(reordered, default_clip):
    left = G1.joint_names.index("left_shoulder_roll_joint")
    right = G1.joint_names.index("right_shoulder_roll_joint")
    joint_pos = default_clip.joint_pos.copy()
    joint_pos[:, [left, right]] = joint_pos[:, [right, left]]
    swapped = dataclasses.replace(default_clip, joint_pos=joint_pos)
    with pytest.raises(MotionFormatError, match="forward kinematics"):
        validate_clip(swapped, reordered, "swapped", warn=False)
    validate_clip(default_clip, reordered, "embedded", warn=False)


def test_conversion_on_the_reordered_model_gives_the_same_clip(reordered, default_clip):
    root = default_clip.body_index(G1.root_body)
    qpos = np.concatenate(
        [default_clip.body_pos_w[:60, root], default_clip.body_quat_w[:60, root],
         default_clip.joint_pos[:60]], axis=1,
    ).astype(np.float64)  # fmt: skip
    want = clip_from_qpos(qpos, default_clip.fps, G1, progress=False)
    got = clip_from_qpos(qpos, default_clip.fps, reordered, progress=False)
    assert got.body_names == want.body_names and got.joint_names == want.joint_names
    for key in ("body_pos_w", "body_quat_w", "body_lin_vel_w", "body_ang_vel_w", "joint_vel"):
        assert_allclose(getattr(got, key), getattr(want, key), rtol=0, atol=1e-9, err_msg=key)
    # the clip's own bodies: conversion on either model reproduces them
    assert_allclose(got.body_pos_w, default_clip.body_pos_w[:60], rtol=0, atol=1e-5)


def test_default_motion_and_checks_are_the_same_on_the_reordered_model(reordered, default_clip):
    made = make_default_motion(robot=reordered)
    assert_allclose(made.body_pos_w, default_clip.body_pos_w, rtol=0, atol=1e-6)
    assert_allclose(made.joint_pos, default_clip.joint_pos, rtol=0, atol=1e-6)
    a, b = check_motion(default_clip, G1), check_motion(default_clip, reordered)
    assert a.lines() == b.lines()
