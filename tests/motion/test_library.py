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


def test_row_starts_plus_frame_holds_each_clips_frame(two_clips):
    lib = MotionLibrary(two_clips)
    assert lib.num_clips == 2 and lib.lengths.tolist() == [401, 25]
    assert lib.starts.tolist() == [0, 401] and lib.num_frames == 426
    for c, f in [(0, 0), (1, 3), (1, 24), (0, 400)]:
        clip, row = two_clips[c], lib.starts[c] + f
        for key in ARRAY_KEYS:
            np.testing.assert_array_equal(getattr(lib, key)[row], getattr(clip, key)[f])
    assert lib.body_pos_w.dtype == np.float32 and lib.body_pos_w.shape == (426, 30, 3)


def test_library_stores_a_body_subset_in_the_requested_order(two_clips):
    lib = MotionLibrary(two_clips, body_names=g1.TRACKED_BODIES)
    torso = two_clips[0].body_index("torso_link")
    np.testing.assert_array_equal(lib.body_pos_w[10, 7], two_clips[0].body_pos_w[10, torso])
    np.testing.assert_array_equal(lib.body_indices(["pelvis", "torso_link"]), [0, 7])
    with pytest.raises(KeyError, match="head"):
        lib.body_indices(["head"])


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
    with pytest.raises(FileNotFoundError, match=r"no .npz or .pkl \(GMR\) motion files"):
        MotionLibrary.from_paths([tmp_path / "clips", tmp_path])
