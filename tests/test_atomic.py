"""Every file gym_motion writes goes through `gym_motion.atomic`: whole or not at all, with the
permissions a plain open() would give (ONNX and JSON outputs came out 0600 before)."""

from __future__ import annotations

import os
import stat

import pytest

from gym_motion.atomic import atomic_file, write_bytes, write_json
from gym_motion.motion import DEFAULT_MOTION_PATH, load_clip, save_clip


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_files_get_the_umask_default_and_replaced_files_keep_their_mode(tmp_path, umask_022):
    default_clip = load_clip(DEFAULT_MOTION_PATH)
    json_path, onnx_path, clip_path = tmp_path / "r.json", tmp_path / "p.onnx", tmp_path / "c.npz"
    write_json(json_path, {"a": 1})
    write_bytes(onnx_path, b"onnx")
    save_clip(default_clip, clip_path)
    assert [_mode(p) for p in (json_path, onnx_path, clip_path)] == [0o644] * 3
    os.chmod(json_path, 0o600)
    write_json(json_path, {"a": 2})
    assert _mode(json_path) == 0o600 and json_path.read_text().count("2") == 1
    assert load_clip(clip_path).num_frames == default_clip.num_frames


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "r.json"
    write_json(path, {"old": True})
    with pytest.raises(RuntimeError, match="midway"):
        with atomic_file(path, "w") as f:
            f.write('{"new": ')
            raise RuntimeError("midway")
    assert path.read_text() == '{\n  "old": true\n}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
    with pytest.raises(FileNotFoundError):
        write_bytes(tmp_path / "missing" / "p.onnx", b"x")
