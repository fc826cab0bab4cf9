"""Motion checks: soft limits, self and floor penetration, feet off the floor, stance sliding,
joint jumps; inspect and convert."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest

from gym_motion.cli import main
from gym_motion.motion import convert_csv, load_clip
from gym_motion.motion.checks import (
    LIMIT_TOL,
    SLIDE_SPEED,
    MotionCheckWarning,
    check_motion,
)
from gym_motion.robots import G1
from gym_motion.robots.spec import FLOOR_GEOM

JOINTS = list(G1.joint_names)
MODEL = G1.build_model(floor=True)


def _with_joints(clip, frames: slice, **values):
    joint_pos = clip.joint_pos.copy()
    for name, value in values.items():
        joint_pos[frames, JOINTS.index(name)] = value
    return dataclasses.replace(clip, joint_pos=joint_pos)


def _pose(clip, t: int) -> mujoco.MjData:
    """MjData of the reference pose of frame ``t`` (pelvis is the clip's body 0)."""
    data = mujoco.MjData(MODEL)
    data.qpos[:3] = clip.body_pos_w[t, 0]
    data.qpos[3:7] = clip.body_quat_w[t, 0]
    data.qpos[G1.joint_qpos_adr(MODEL)] = clip.joint_pos[t]
    mujoco.mj_kinematics(MODEL, data)
    return data


def _collision_geoms(body: str) -> list[int]:
    b = MODEL.body(body).id
    return [
        g
        for g in range(MODEL.ngeom)
        if MODEL.geom_bodyid[g] == b and (MODEL.geom_contype[g] or MODEL.geom_conaffinity[g])
    ]


def _signed_distance(data: mujoco.MjData, body_a: str, body_b: str) -> float:
    """Smallest signed distance between the collision geoms of two bodies (mj_geomDistance)."""
    return min(
        mujoco.mj_geomDistance(MODEL, data, ga, gb, 1.0, None)
        for ga in _collision_geoms(body_a)
        for gb in _collision_geoms(body_b)
    )


def test_the_default_motion_passes_every_check(default_clip):
    report = check_motion(default_clip)
    for result in (
        report.hard_limits,
        report.soft_limits,
        report.self_penetration,
        report.floor_penetration,
        report.feet_off_floor,
        report.stance_slide,
        report.joint_jumps,
    ):
        assert not result and result.frames == 0
    assert report.stance_speed_median == 0.0
    assert report.warning_messages("clip") == []


def test_soft_limit_violations_are_counted_per_joint(default_clip):
    soft_hi = G1.soft_joint_limits(MODEL)[JOINTS.index("left_knee_joint"), 1]
    hard_hi = MODEL.joint("left_knee_joint").range[1]
    assert soft_hi + 0.05 < hard_hi  # beyond the soft limit, inside the joint range
    clip = _with_joints(default_clip, slice(100, 110), left_knee_joint=soft_hi + 0.05)
    report = check_motion(clip)
    assert not report.hard_limits
    (knee,) = report.soft_limits.findings
    assert (knee.name, knee.frames, knee.first_frame, knee.worst_frame) == (
        "left_knee_joint",
        10,
        100,
        100,
    )
    assert knee.worst == pytest.approx(0.05, abs=1e-6)
    assert report.soft_limits.frames == 10 and report.soft_limits.total == 401
    # entering and leaving the bent pose are jumps of more than 0.5 rad
    (jump,) = report.joint_jumps.findings
    assert (jump.name, jump.frames, jump.first_frame) == ("left_knee_joint", 2, 99)
    expected = abs(soft_hi + 0.05 - default_clip.joint_pos[99, JOINTS.index("left_knee_joint")])
    assert report.joint_jumps.findings[0].worst == pytest.approx(expected, abs=1e-6)
    assert "--frames 1 STOP" not in " ".join(report.warning_messages("clip"))


def test_a_lone_jump_out_of_the_first_frame_says_how_to_drop_it(default_clip):
    # the gangnam style's source has such a glitch: its first row's shoulder roll is 0.53 rad off
    roll = default_clip.joint_pos[0, JOINTS.index("right_shoulder_roll_joint")]
    clip = _with_joints(default_clip, slice(0, 1), right_shoulder_roll_joint=roll - 0.6)
    report = check_motion(clip)
    (jump,) = report.joint_jumps.findings
    assert (jump.name, jump.frames, jump.first_frame) == ("right_shoulder_roll_joint", 1, 0)
    (message,) = [m for m in report.warning_messages("clip.csv") if "joint jumps" in m]
    assert "only the first frame jumps" in message and "--frames 1 STOP" in message


def test_self_penetration_is_reported_per_body_pair_with_depth(default_clip):
    # the left arm rolled into the torso for 20 frames
    clip = _with_joints(default_clip, slice(200, 220), left_shoulder_roll_joint=-1.0)
    report = check_motion(clip)
    found = {f.name: f for f in report.self_penetration.findings}
    assert set(found) == {"torso_link <-> left_shoulder_yaw_link", "torso_link <-> left_elbow_link"}
    assert report.self_penetration.frames == 20
    for name, finding in found.items():
        assert (finding.frames, finding.first_frame) == (20, 200)
        body_a, body_b = name.split(" <-> ")
        depth = -_signed_distance(_pose(clip, finding.worst_frame), body_a, body_b)
        assert finding.worst == pytest.approx(depth, abs=1e-6)
    assert not report.floor_penetration


def test_floor_penetration_is_reported_per_body_with_depth(default_clip):
    body_pos_w = default_clip.body_pos_w.copy()
    body_pos_w[50:60, :, 2] -= 0.03  # the whole robot 3 cm lower for 10 frames
    clip = dataclasses.replace(default_clip, body_pos_w=body_pos_w)
    report = check_motion(clip)
    found = {f.name: f for f in report.floor_penetration.findings}
    assert set(found) == {"left_ankle_roll_link", "right_ankle_roll_link"}
    floor = MODEL.geom(FLOOR_GEOM).id
    for name, finding in found.items():
        assert (finding.frames, finding.first_frame) == (10, 50)
        data = _pose(clip, finding.worst_frame)
        lowest = min(
            mujoco.mj_geomDistance(MODEL, data, g, floor, 1.0, None) for g in _collision_geoms(name)
        )
        assert finding.worst == pytest.approx(-lowest, abs=1e-6)
        assert 0.029 < finding.worst < 0.032
    assert report.floor_penetration.frames == 10


def _lowest_foot_point(clip, t: int) -> float:
    """Signed distance between the floor and the nearest foot geom in frame ``t``."""
    data, floor = _pose(clip, t), MODEL.geom(FLOOR_GEOM).id
    return min(
        mujoco.mj_geomDistance(MODEL, data, g, floor, 1.0, None)
        for foot in G1.foot_bodies
        for g in _collision_geoms(foot)
    )


def test_feet_above_the_floor_are_reported_with_their_height(default_clip):
    body_pos_w = default_clip.body_pos_w.copy()
    body_pos_w[50:60, :, 2] += 0.02  # the whole robot 2 cm up for 10 frames: hovering
    body_pos_w[55, :, 2] += 0.01  # 3 cm in one of them
    clip = dataclasses.replace(default_clip, body_pos_w=body_pos_w)
    report = check_motion(clip)
    (feet,) = report.feet_off_floor.findings
    assert (feet.frames, feet.first_frame, feet.worst_frame) == (10, 50, 55)
    assert feet.worst == pytest.approx(_lowest_foot_point(clip, 55), abs=1e-6)
    assert feet.worst == pytest.approx(0.03, abs=1e-5)
    assert not report.floor_penetration and not report.stance_slide
    (message,) = report.warning_messages("clip")
    assert message.startswith("clip: both feet above the floor (airborne or hovering) in 10 of ")
    assert "highest 30.0 mm at frame 55 (1.10 s)" in message


def test_a_reference_that_slides_on_the_floor_is_reported_per_foot(default_clip):
    # the whole clip carried forward at 0.2 m/s: the planted feet slide at that speed throughout
    speed = 0.2
    body_pos_w = default_clip.body_pos_w.copy()
    body_pos_w[:, :, 0] += speed * np.arange(default_clip.num_frames)[:, None] / default_clip.fps
    report = check_motion(dataclasses.replace(default_clip, body_pos_w=body_pos_w))
    slide = report.stance_slide
    assert slide.total == default_clip.num_frames - 1
    # every step but those where the nearest geom of the two flat feet changes (ties)
    assert slide.total - 2 <= slide.frames
    assert sum(f.frames for f in slide.findings) == slide.frames
    assert {f.name for f in slide.findings} <= set(G1.foot_bodies)
    assert speed > SLIDE_SPEED
    for f in slide.findings:
        assert f.worst == pytest.approx(speed, abs=1e-3)
    assert report.stance_speed_median == pytest.approx(speed, abs=1e-3)
    assert not report.feet_off_floor
    # rising 0.2 m/s is lifting off, not sliding
    body_pos_w = default_clip.body_pos_w.copy()
    body_pos_w[:, :, 2] += speed * np.arange(default_clip.num_frames)[:, None] / default_clip.fps
    report = check_motion(dataclasses.replace(default_clip, body_pos_w=body_pos_w))
    assert not report.stance_slide and report.stance_speed_median == 0.0


def test_real_dance_reports_soft_limits_penetration_and_floor(motions_dir):
    with pytest.warns(UserWarning, match="jumps more than"):
        clip = load_clip(motions_dir / "unitree_gangnam_style_50fps.npz")
    report = check_motion(clip)
    soft = G1.soft_joint_limits(MODEL)
    q = clip.joint_pos  # NumPy oracle; excesses below LIMIT_TOL do not count
    over = (q > soft[:, 1] + LIMIT_TOL) | (q < soft[:, 0] - LIMIT_TOL)
    assert report.soft_limits.frames == int(over.any(axis=1).sum()) == 699
    for f in report.soft_limits.findings:
        assert f.frames == int(over[:, JOINTS.index(f.name)].sum())
    assert len(report.soft_limits.findings) == int(over.any(axis=0).sum()) == 5
    worst = report.self_penetration.findings[0]
    assert worst.name == "left_hip_roll_link <-> left_wrist_yaw_link" and worst.frames == 402
    depth = -_signed_distance(_pose(clip, worst.worst_frame), *worst.name.split(" <-> "))
    assert worst.worst == pytest.approx(depth, abs=1e-6) and depth > 0.04
    assert report.self_penetration.frames == 440
    assert {f.name for f in report.floor_penetration.findings} == {
        "left_ankle_roll_link",
        "right_ankle_roll_link",
    }


def test_convert_warns_about_the_same_at_conversion_time(motions_dir):
    csv = motions_dir / "unitree_gangnam_style_60fps.csv"
    with pytest.warns(MotionCheckWarning) as record:
        clip = convert_csv(csv, input_fps=60, output_fps=50, frame_range=(0, 600))
    messages = [str(w.message) for w in record if w.category is MotionCheckWarning]
    assert messages == check_motion(clip).warning_messages(str(csv))
    assert any("beyond the soft joint limits (90 % of the range; penalised)" in m for m in messages)
    assert any("self-penetration of the reference pose" in m for m in messages)


def test_cli_warnings_print_the_message_only(motions_dir, tmp_path, capsys):
    csv = motions_dir / "unitree_gangnam_style_60fps.csv"
    out = tmp_path / "g.npz"
    args = ["convert", str(csv), "-o", str(out), "--input-fps", "60", "--frames", "0", "600"]
    assert main(args) == 0
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith(f"warning: {csv}: ") for line in err)
    assert not any("warnings.warn" in line or ".py:" in line for line in err)
    assert any("soft joint limits" in line for line in err)


def test_inspect_reports_every_check_per_clip(motions_dir, tmp_path, capsys):
    gangnam = motions_dir / "unitree_gangnam_style_50fps.npz"
    jazz = motions_dir / "g1moves_jazzwalk_60fps.npz"
    assert main(["inspect", str(gangnam), str(jazz)]) == 0
    text = capsys.readouterr().out
    assert text.count("clip:        ") == 2
    gangnam_part, jazz_part = text.split(f"clip:        {jazz}")
    assert (
        "soft joint limits (90 % of each range): 5 joint(s), in 699 of 1618 frames (43.2 %)"
        in gangnam_part
    )
    assert "  right_ankle_roll_joint     506 frames ( 31.3 %), first 292" in gangnam_part
    assert "self-penetration (depth > 1 mm): 15 body pair(s), in 440 of 1618 frames" in gangnam_part
    assert "floor penetration (depth > 1 mm): 2 body(ies)" in gangnam_part
    assert "joint jumps (> 0.5 rad from one frame to the next): 1 joint(s)" in gangnam_part
    assert "hard joint limits (the model's ranges): none" in jazz_part
    assert "frames:      636" in jazz_part
    # the g1-moves retarget hovers: both feet more than 5 mm up in most frames
    assert (
        "feet above the floor (lowest point > 5 mm up; airborne or hovering): in 379 of 636 "
        "frames (59.6 %)" in jazz_part
    )
    assert "stance foot sliding (> 0.05 m/s horizontally; median stance speed 0.024 m/s)" in (
        jazz_part
    )
