"""Motion library: flat storage, gather into preallocated outputs, frame advance."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gym_motion.motion import DEFAULT_MOTION_PATH, MotionLibrary, save_clip
from gym_motion.motion.clip import ARRAY_KEYS
from gym_motion.robots import g1


@pytest.fixture(scope="module")
def two_clips(default_clip):
    short = dataclasses.replace(
        default_clip, **{k: getattr(default_clip, k)[100:125] for k in ARRAY_KEYS}
    )
    return default_clip, short


def test_gather_returns_each_clips_frames(two_clips):
    lib = MotionLibrary(two_clips)
    assert lib.num_clips == 2 and lib.lengths.tolist() == [401, 25]
    assert lib.starts.tolist() == [0, 401] and lib.num_frames == 426
    clip_ids = np.array([0, 1, 1, 0, 1], np.int32)
    frames = np.array([0, 3, 24, 400, 99], np.int32)  # 99 is past the short clip: clamped
    out = lib.allocate(5)
    lib.gather(clip_ids, frames, out)
    expected_frames = [0, 3, 24, 400, 24]
    for i, (c, f) in enumerate(zip(clip_ids, expected_frames, strict=True)):
        clip = two_clips[c]
        np.testing.assert_array_equal(out.joint_pos[i], clip.joint_pos[f])
        np.testing.assert_array_equal(out.body_quat_w[i], clip.body_quat_w[f])
        np.testing.assert_array_equal(out.body_ang_vel_w[i], clip.body_ang_vel_w[f])
    assert out.body_pos_w.dtype == np.float32 and out.body_pos_w.shape == (5, 30, 3)


def test_library_stores_a_body_subset_in_the_requested_order(two_clips):
    lib = MotionLibrary(two_clips, body_names=g1.TRACKED_BODIES)
    out = lib.allocate(1)
    lib.gather(np.array([0]), np.array([10]), out)
    torso = two_clips[0].body_index("torso_link")
    np.testing.assert_array_equal(out.body_pos_w[0, 7], two_clips[0].body_pos_w[10, torso])
    np.testing.assert_array_equal(lib.body_indices(["pelvis", "torso_link"]), [0, 7])
    with pytest.raises(KeyError, match="head"):
        lib.body_indices(["head"])


def test_advance_reports_clip_ends(two_clips):
    lib = MotionLibrary(two_clips)
    clip_ids = np.array([0, 1, 1], np.int32)
    frames = np.array([5, 23, 24], np.int32)
    done = lib.advance(clip_ids, frames)
    assert done.tolist() == [False, False, True]
    assert frames.tolist() == [6, 24, 24]


def test_clips_at_other_rates_are_refused(two_clips):
    with pytest.raises(ValueError, match="60.0 fps"):
        MotionLibrary([two_clips[0], dataclasses.replace(two_clips[1], fps=60.0)])


def test_from_a_folder_loads_every_npz_resampled(default_clip, tmp_path):
    save_clip(default_clip, tmp_path / "a.npz")
    save_clip(default_clip.resample(30.0), tmp_path / "b.npz")
    lib = MotionLibrary.from_paths(tmp_path, fps=50.0)
    assert lib.names == ("a", "b") and lib.fps == 50.0
    assert lib.lengths.tolist() == [401, 401]  # 8 s at 50 fps, whatever the file's rate
    single = MotionLibrary.from_paths(DEFAULT_MOTION_PATH)
    assert single.num_clips == 1


def test_folders_load_inside_a_list_of_paths(tmp_path):
    folder = tmp_path / "clips"
    folder.mkdir()
    (folder / "a.npz").write_bytes(DEFAULT_MOTION_PATH.read_bytes())
    lib = MotionLibrary.from_paths([folder, DEFAULT_MOTION_PATH])
    assert lib.num_clips == 2 and lib.names == ("a", DEFAULT_MOTION_PATH.stem)
    with pytest.raises(FileNotFoundError, match="no .npz motion files"):
        MotionLibrary.from_paths([tmp_path / "clips", tmp_path])
