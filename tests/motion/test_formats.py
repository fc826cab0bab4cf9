"""Input formats are read from content; every unsupported kind gets the one message, everywhere."""

from __future__ import annotations

import gzip
import pickle
import zipfile

import numpy as np
import pytest

from gym_motion.cli import main
from gym_motion.motion import MotionFormatError, load_clip, save_clip
from gym_motion.motion.convert import convert_csv, convert_motion
from gym_motion.motion.formats import FileKind, sniff

SUPPORTED = "supported: G1 CSV (root xyz, quat xyzw, 29 joints), gym_motion/mjlab npz, GMR pickle"


def _zip(path, members):
    with zipfile.ZipFile(path, "w") as zf:
        for name in members:
            zf.writestr(name, b"x")


# (file name, writer, what the message says the file is)
UNSUPPORTED = [
    ("empty.npz", lambda p: p.write_bytes(b""), "an empty file (0 bytes)"),
    (
        "junk.npz",
        lambda p: p.write_bytes(bytes(range(7, 107))),
        "binary data of 100 bytes (starts with 07 08 09 0a 0b 0c 0d 0e)",
    ),
    (
        "walk.bvh",
        lambda p: p.write_text("HIERARCHY\nROOT Hips\n"),
        "a text file whose first line 'HIERARCHY' is not comma-separated",
    ),
    (
        "blank.csv",
        lambda p: p.write_text("\n  \n"),
        "a text file of 4 bytes with no content",
    ),
    (
        "model.pt",
        lambda p: _zip(p, ["archive/data.pkl", "archive/version"]),
        "a zip archive that is not an npz (members ['archive/data.pkl', 'archive/version'], "
        "not all .npy) (a PyTorch checkpoint?)",
    ),
    ("empty.zip", lambda p: _zip(p, []), "an empty zip archive"),
    (
        "poses.npy",
        lambda p: np.save(p, np.zeros((3, 36))),
        "a single NumPy array (.npy), not an npz archive of named arrays",
    ),
    (
        "amass.npz",
        lambda p: np.savez(p, poses=np.zeros((3, 72)), trans=np.zeros((3, 3))),
        "an npz without motion arrays (keys ['poses', 'trans']; a clip has ['fps', 'joint_pos', "
        "'joint_vel', 'body_pos_w', 'body_quat_w', 'body_lin_vel_w', 'body_ang_vel_w'])",
    ),
    (
        "clip.pkl.gz",
        lambda p: p.write_bytes(gzip.compress(pickle.dumps({"fps": 30}))),
        "a gzip-compressed file (a compressed pickle or joblib file?)",
    ),
    (
        "list.pkl",
        lambda p: p.write_bytes(pickle.dumps(["a", "b"])),
        "a pickle of a list of 2 items",
    ),
]


@pytest.mark.parametrize(("name", "write", "what"), UNSUPPORTED, ids=[u[0] for u in UNSUPPORTED])
def test_unsupported_files_get_one_message_from_load_clip_and_convert(
    tmp_path, capsys, name, write, what
):
    path = tmp_path / name
    write(path)
    expected = f"unsupported format: {path} is {what}; {SUPPORTED}"
    with pytest.raises(MotionFormatError) as info:
        load_clip(path)
    assert str(info.value) == expected
    with pytest.raises(MotionFormatError) as info:
        convert_motion(path, input_fps=30)
    assert str(info.value) == expected
    assert main(["convert", str(path), "-o", str(tmp_path / "out.npz"), "--input-fps", "30"]) == 2
    assert capsys.readouterr().err == f"gym-motion convert: error: {expected}\n"
    assert "allow_pickle" not in expected and "utf-8" not in expected


def test_csv_reader_refuses_a_pickle_with_the_same_message(tmp_path):
    path = tmp_path / "clip.csv"  # the suffix does not matter
    path.write_bytes(pickle.dumps({"fps": 30}))
    with pytest.raises(MotionFormatError, match=r"is a pickle \(protocol \d\); supported: G1 CSV"):
        convert_csv(path, input_fps=30)


def test_kinds_come_from_content_not_the_suffix(default_clip, tmp_path):
    npz = save_clip(default_clip, tmp_path / "clip.npz")
    renamed = tmp_path / "clip.dat"
    renamed.write_bytes(npz.read_bytes())
    assert sniff(renamed).kind is FileKind.NPZ
    np.testing.assert_array_equal(load_clip(renamed).joint_pos, default_clip.joint_pos)
    protocol0 = tmp_path / "old.txt"
    protocol0.write_bytes(pickle.dumps({"fps": 30}, protocol=0))
    assert sniff(protocol0).kind is FileKind.PICKLE
    csv = tmp_path / "rows.txt"
    csv.write_text("0.1,0.2,0.3\n")
    assert sniff(csv).kind is FileKind.CSV
    with pytest.raises(MotionFormatError, match="is a CSV, which has no frame rate"):
        load_clip(csv)


def test_an_object_array_in_an_npz_is_explained_without_numpys_pickle_advice(
    default_clip, tmp_path
):
    path = save_clip(default_clip, tmp_path / "obj.npz")
    data = dict(np.load(path))
    data["joint_names"] = np.array(list(default_clip.joint_names), dtype=object)
    np.savez(path, **data)
    with pytest.raises(MotionFormatError) as info:
        load_clip(path)
    message = str(info.value)
    assert message == (
        f"{path}: key 'joint_names' holds Python objects (an object array), not numbers or names"
    )


def test_extra_keys_of_an_npz_are_not_read(default_clip, tmp_path):
    path = save_clip(default_clip, tmp_path / "extra.npz")
    data = dict(np.load(path))
    data["metadata"] = np.array([{"author": "x"}], dtype=object)  # needs pickle; never read
    np.savez(path, **data)
    np.testing.assert_array_equal(load_clip(path).body_pos_w, default_clip.body_pos_w)


def test_convert_needs_the_rate_of_a_csv_only(motions_dir, default_clip, tmp_path, capsys):
    csv = motions_dir / "g1moves_jazzwalk_60fps.csv"
    out = tmp_path / "out.npz"
    assert main(["convert", str(csv), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "a CSV does not state its frame rate: give input_fps (CLI: --input-fps)" in err
    npz = save_clip(default_clip, tmp_path / "clip.npz")  # an npz: resampled and cut
    assert (
        main(["convert", str(npz), "-o", str(out), "--output-fps", "25", "--frames", "0", "101"])
        == 0
    )
    clip = load_clip(out)
    assert clip.fps == 25.0 and clip.num_frames == 51 and clip.source_fps == 50.0
    np.testing.assert_allclose(clip.joint_pos[10], default_clip.joint_pos[20], atol=1e-7)


def test_a_directory_is_not_a_motion_file(tmp_path, capsys):
    with pytest.raises(MotionFormatError) as info:
        load_clip(tmp_path)
    assert (
        str(info.value)
        == f"unsupported format: {tmp_path} is a directory, not a motion file; {SUPPORTED}"
    )
    assert main(["inspect", str(tmp_path)]) == 2
    assert "is a directory, not a motion file" in capsys.readouterr().err
