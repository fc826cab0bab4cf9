"""CSV conversion: reference files reproduced, time grid, velocities, explained input errors."""

from __future__ import annotations

import numpy as np
import pytest

from gym_motion.cli import main
from gym_motion.motion import MotionFormatError, convert_csv, load_clip
from gym_motion.motion._quat import angular_velocity
from gym_motion.motion.clip import resample_grid
from gym_motion.motion.convert import convert_motion


def _quat_error(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sign-aware max abs difference of quaternions (..., 4) -> (...)."""
    return np.minimum(np.abs(a - b).max(-1), np.abs(a + b).max(-1))


@pytest.fixture(scope="module")
def jazzwalk(motions_dir):
    csv = motions_dir / "g1moves_jazzwalk_60fps.csv"
    return convert_csv(csv, input_fps=60, output_fps=60, checks=False)


@pytest.fixture(scope="module")
def gangnam_50(motions_dir):
    csv = motions_dir / "unitree_gangnam_style_60fps.csv"
    return convert_csv(csv, input_fps=60, output_fps=50, checks=False)


def test_jazzwalk_60_to_60_reproduces_reference_npz(jazzwalk, motions_dir):
    ref = np.load(motions_dir / "g1moves_jazzwalk_60fps.npz")
    n = ref["joint_pos"].shape[0]  # 636: the CSV's first 636 rows
    assert jazzwalk.num_frames == n + 1  # the last CSV row is kept
    np.testing.assert_allclose(jazzwalk.joint_pos[:n], ref["joint_pos"], rtol=0, atol=1e-5)
    pos_err = np.abs(jazzwalk.body_pos_w[:n] - ref["body_pos_w"]).max(axis=(1, 2))
    quat_err = _quat_error(jazzwalk.body_quat_w[:n], ref["body_quat_w"]).max(axis=1)
    assert (pos_err < 1e-5).sum() >= 600 and pos_err.max() < 2e-3
    assert (quat_err < 1e-5).sum() >= 600 and quat_err.max() < 2e-3


def test_gangnam_60_to_50_matches_legacy_31_body_npz(gangnam_50, motions_dir):
    # real data: the source's first row is a glitch, and the warning says how to drop it
    with pytest.warns(UserWarning, match=r"jumps more than .*\(first frame 1\).*--frames 1 STOP"):
        ref = load_clip(motions_dir / "unitree_gangnam_style_50fps.npz")  # legacy, world dropped
    assert ref.body_names[0] == "pelvis" and len(ref.body_names) == 30
    assert gangnam_50.num_frames == ref.num_frames == 1618
    np.testing.assert_allclose(gangnam_50.body_pos_w, ref.body_pos_w, rtol=0, atol=1e-4)
    np.testing.assert_allclose(gangnam_50.joint_pos, ref.joint_pos, rtol=0, atol=1e-4)
    assert _quat_error(gangnam_50.body_quat_w, ref.body_quat_w).max() < 1e-4


def test_body_velocities_match_reference_convention(jazzwalk, motions_dir):
    # Same convention as the reference converter: median agreement, away from the edited frames.
    ref = np.load(motions_dir / "g1moves_jazzwalk_60fps.npz")
    n = ref["joint_pos"].shape[0]
    assert np.median(np.abs(jazzwalk.body_lin_vel_w[:n] - ref["body_lin_vel_w"])) < 1e-4
    assert np.median(np.abs(jazzwalk.body_ang_vel_w[:n] - ref["body_ang_vel_w"])) < 1e-4
    assert np.median(np.abs(jazzwalk.joint_vel[: n - 1] - ref["joint_vel"][: n - 1])) < 1e-4


def test_velocities_are_central_differences_of_the_converted_frames(jazzwalk):
    dt = 1.0 / jazzwalk.fps
    np.testing.assert_allclose(
        jazzwalk.joint_vel,
        np.gradient(jazzwalk.joint_pos.astype(np.float64), dt, axis=0),
        atol=1e-3,
    )
    root_ang = angular_velocity(jazzwalk.body_quat_w[:, 0].astype(np.float64), dt)
    np.testing.assert_allclose(jazzwalk.body_ang_vel_w[:, 0], root_ang, atol=1e-3)
    root_lin = np.gradient(jazzwalk.body_pos_w[:, 0].astype(np.float64), dt, axis=0)
    np.testing.assert_allclose(jazzwalk.body_lin_vel_w[:, 0], root_lin, atol=1e-3)
    # every body's FK velocity agrees with the finite difference of its FK position
    fd = (jazzwalk.body_pos_w[2:] - jazzwalk.body_pos_w[:-2]) / (2 * dt)
    assert np.median(np.abs(jazzwalk.body_lin_vel_w[1:-1] - fd)) < 1e-2


def test_time_grid_keeps_the_last_sample_and_the_duration():
    i0, i1, blend = resample_grid(637, 60, 60)
    assert len(i0) == 637 and i0[-1] == 636 and blend.max() == 0
    i0, _, blend = resample_grid(1942, 60, 50)  # 32.35 s -> k / 50 for k <= 1617
    assert len(i0) == 1618
    np.testing.assert_allclose((i0 + blend)[-1], 1617 * 60 / 50)
    i0, i1, blend = resample_grid(31, 30, 50)  # 1 s at 30 fps -> 51 frames, last kept
    assert len(i0) == 51 and i0[-1] == 30 and blend[-1] == 0


def test_frame_range_selects_input_rows(motions_dir, jazzwalk):
    part = convert_csv(
        motions_dir / "g1moves_jazzwalk_60fps.csv",
        input_fps=60,
        output_fps=60,
        frame_range=(100, 200),
        checks=False,
    )
    assert part.num_frames == 100
    np.testing.assert_array_equal(part.joint_pos, jazzwalk.joint_pos[100:200])


def test_wrong_column_count_is_explained(tmp_path):
    path = tmp_path / "short.csv"
    np.savetxt(path, np.zeros((5, 35)), delimiter=",")
    with pytest.raises(
        MotionFormatError,
        match=r"^unsupported format: \S*short.csv is a CSV with 35 columns; supported: G1 CSV "
        r"\(root xyz, quat xyzw, 29 joints\), gym_motion/mjlab npz, GMR pickle; a G1 CSV has "
        r"36 columns: root x y z \(m\) \| root quaternion x y z w",
    ):
        convert_csv(path, input_fps=30)


def test_header_row_is_explained(tmp_path):
    path = tmp_path / "header.csv"
    path.write_text("x,y,z\n1,2,3\n")
    with pytest.raises(MotionFormatError, match="unsupported format: .* could not be parsed"):
        convert_csv(path, input_fps=30)


def test_wxyz_quaternion_columns_are_detected(motions_dir, tmp_path):
    rows = np.loadtxt(motions_dir / "g1moves_jazzwalk_60fps.csv", delimiter=",")[:50]
    rows[:, 3:7] = rows[:, [6, 3, 4, 5]]  # xyzw -> wxyz
    path = tmp_path / "wxyz.csv"
    np.savetxt(path, rows, delimiter=",")
    with pytest.raises(MotionFormatError, match="looks like wxyz"):
        convert_csv(path, input_fps=60)
    clip = convert_csv(path, input_fps=60, output_fps=60, quat_order="wxyz")
    assert clip.num_frames == 50
    xyzw = motions_dir / "g1moves_jazzwalk_60fps.csv"  # the real order, forced the wrong way
    with pytest.raises(MotionFormatError, match="looks like xyzw"):
        convert_csv(xyzw, input_fps=60, quat_order="wxyz")


def test_non_unit_quaternion_columns_are_explained(tmp_path):
    rows = np.zeros((5, 36))
    rows[:, 2] = 0.8
    rows[:, 3:7] = [0.0, 0.0, 0.0, 2.0]
    path = tmp_path / "norm.csv"
    np.savetxt(path, rows, delimiter=",")
    with pytest.raises(MotionFormatError, match="row 0: root quaternion .* norm 2.0"):
        convert_csv(path, input_fps=30)


def test_convert_cli_writes_a_loadable_clip(motions_dir, tmp_path, capsys):
    out = tmp_path / "jazz.npz"
    csv = str(motions_dir / "g1moves_jazzwalk_60fps.csv")
    args = ["convert", csv, "-o", str(out), "--input-fps", "60", "--frames", "0", "121"]
    assert main(args) == 0
    clip = load_clip(out)
    assert clip.fps == 50 and clip.source_fps == 60 and clip.num_frames == 101
    assert main(["inspect", str(out)]) == 0
    assert "frames:      101" in capsys.readouterr().out


def _standing_rows(frames: int = 20) -> np.ndarray:
    """G1 CSV rows of the robot standing (root 0.8 m up, identity quaternion xyzw, joints 0)."""
    rows = np.zeros((frames, 36))
    rows[:, 2], rows[:, 6] = 0.8, 1.0
    return rows


def test_convert_never_writes_a_clip_load_clip_would_refuse(tmp_path):
    """Rows that make an invalid clip (root underground; values beyond float32) are refused
    with load_clip's message, and no file is written."""
    for name, edit, message in (
        ("under.csv", lambda r: r.__setitem__((slice(None), 2), -4.0), "below the floor"),
        ("huge.csv", lambda r: r.__setitem__((slice(None), 0), 1e39), "non-finite value inf"),
    ):
        rows = _standing_rows()
        edit(rows)
        csv, out = tmp_path / name, tmp_path / (name + ".npz")
        np.savetxt(csv, rows, delimiter=",")
        with pytest.raises(MotionFormatError, match=message):
            convert_csv(csv, out, input_fps=50, checks=False)
        assert not out.exists() and not list(tmp_path.glob(".*.tmp"))


def test_convert_refuses_outputs_that_cannot_take_the_clip(tmp_path, capsys):
    csv = tmp_path / "stand.csv"
    np.savetxt(csv, _standing_rows(), delimiter=",")
    before = csv.read_bytes()
    for out, message in (
        (csv, "is an input file; writing would replace it"),
        (tmp_path, "is a directory; give a file name"),
        (tmp_path / "missing" / "clip.npz", "directory .*missing does not exist"),
    ):
        with pytest.raises(ValueError, match=message):
            convert_csv(csv, out, input_fps=50)
        assert main(["convert", str(csv), "-o", str(out), "--input-fps", "50"]) != 0
        assert "error: output" in capsys.readouterr().err
    assert csv.read_bytes() == before


def test_an_npz_without_velocities_is_flagged_and_convert_recomputes_them(motions_dir, tmp_path):
    """The 50 fps Unitree gangnam npz stores zero body velocities: loading warns (the velocity
    rewards would track zero), and convert rebuilds them from the poses as from the CSV."""
    npz = motions_dir / "unitree_gangnam_style_50fps.npz"
    with pytest.warns(UserWarning, match="body_lin_vel_w, body_ang_vel_w zero in every frame"):
        load_clip(npz)
    with pytest.warns(UserWarning, match="velocities recomputed from the poses"):
        clip = convert_motion(npz, tmp_path / "g.npz", checks=False)
    from_csv = convert_csv(
        motions_dir / "unitree_gangnam_style_60fps.csv", input_fps=60, output_fps=50, checks=False
    )
    assert clip.num_frames == from_csv.num_frames == 1618
    for key in ("joint_vel", "body_lin_vel_w", "body_ang_vel_w"):
        np.testing.assert_allclose(getattr(clip, key), getattr(from_csv, key), atol=2e-3)
    assert np.abs(clip.body_lin_vel_w).max() > 1.0
