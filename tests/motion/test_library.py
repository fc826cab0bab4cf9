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


def test_one_rate_rule_for_clip_and_library_objects(two_clips, tmp_path):
    at_30 = two_clips[0].resample(30.0)
    with pytest.raises(ValueError, match=r"clip 'clip0' is at 30.0 fps, the library at 50.0"):
        MotionLibrary([at_30], fps=50.0)
    with pytest.raises(ValueError, match=r"resample it \(clip.resample\(30.0\)"):
        MotionLibrary([at_30, two_clips[1]])  # the first clip sets the rate
    assert MotionLibrary([two_clips[1]], fps=50.0 * (1 + 1e-12)).num_frames == 25
    with pytest.raises(ValueError, match="fps must be a positive frame rate in Hz, got 0"):
        MotionLibrary(two_clips, fps=0)
    # a library object entering an env at another rate is refused ...
    lib_30 = MotionLibrary([at_30])
    with pytest.raises(ValueError, match=r"library is at 30.0 fps but the env steps at 50.0 Hz"):
        MotionLibrary.load(lib_30, g1.G1, 50.0)
    assert MotionLibrary.load(lib_30, g1.G1, 30.0 * (1 + 1e-12)) is lib_30
    # ... while files are resampled to the rate asked for, wherever they enter
    path = save_clip(at_30, tmp_path / "at30.npz")
    lib = MotionLibrary.load(path, g1.G1, 50.0)
    assert lib.fps == 50.0 and lib.lengths.tolist() == [401]
    # every 5th frame at 50 fps is a frame of the 30 fps file (every 3rd), kept exactly
    np.testing.assert_allclose(lib.joint_pos[::5], two_clips[0].joint_pos[::5], atol=1e-6)
