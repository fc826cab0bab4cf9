"""Videos: `record_video`, `Mp4Writer` (atomic MP4 files) and ``gym-motion render``."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from gym_motion.cli import main
from gym_motion.envs import TrackingVecEnv, eval_cfg
from gym_motion.motion import DEFAULT_MOTION_PATH
from gym_motion.render import RenderCfg, TrackingRenderer
from gym_motion.robots.g1 import G1
from gym_motion.video import Mp4Writer, read_mp4, record_video

pytest.importorskip("imageio_ffmpeg", reason="MP4 tests need the render extra (imageio-ffmpeg)")

TINY = RenderCfg(width=96, height=64)


def test_mp4_has_the_expected_frame_count_and_size(gl, tmp_path):
    path = tmp_path / "zero.mp4"
    # 0.5 s = 25 control steps at 50 Hz, before the zero action falls: a frame every 2 steps
    result = record_video(path, None, DEFAULT_MOTION_PATH, seconds=0.5, fps=25, render_cfg=TINY,
                          progress=False)  # fmt: skip
    assert result["steps"] == 25 and result["terminated_step"] is None
    assert result["frames"] == 25 // 2 + 1
    frames, fps = read_mp4(path)
    assert frames.shape == (13, 64, 96, 3) and frames.dtype == np.uint8
    assert fps == 25.0
    assert [p.name for p in tmp_path.iterdir()] == ["zero.mp4"]  # no temporary file left

    # The first frame is the env's first picture (up to H.264 loss): robot under its ghost.
    renderer = TrackingRenderer(G1, TINY)
    env = TrackingVecEnv(num_envs=1, cfg=eval_cfg(), motion=DEFAULT_MOTION_PATH, seed=0)
    env.reset()
    first = renderer.render_state(env.state, 0)
    env.close()
    renderer.close()
    assert np.abs(frames[0].astype(int) - first.astype(int)).mean() < 6.0
    assert np.abs(frames[-1].astype(int) - first.astype(int)).mean() > 0.5  # the motion moved


def test_a_termination_ends_the_video_and_holds_its_frame(gl, tmp_path):
    path = tmp_path / "fall.mp4"
    result = record_video(path, None, DEFAULT_MOTION_PATH, seconds=3.0, fps=25, hold_s=0.2,
                          render_cfg=TINY, progress=False)  # fmt: skip
    t = result["terminated_step"]
    assert t is not None and result["steps"] == t < 150
    held = round(0.2 * 25)
    assert result["frames"] == 1 + t // 2 + (t % 2) + held
    frames, _ = read_mp4(path)
    assert len(frames) == result["frames"]
    tail = frames[-held - 1 :].astype(int)
    assert np.abs(tail - tail[0]).mean() < 1.0  # the last picture, held


def test_fps_must_divide_the_control_rate(tmp_path):
    with pytest.raises(ValueError, match="fps must divide the control rate 50"):
        record_video(tmp_path / "x.mp4", None, DEFAULT_MOTION_PATH, fps=30, progress=False)


def test_writer_refuses_odd_sizes_and_wrong_frames(tmp_path):
    with pytest.raises(ValueError, match="even width and height"):
        Mp4Writer(tmp_path / "odd.mp4", 95, 64, fps=25)
    with Mp4Writer(tmp_path / "ok.mp4", 32, 16, fps=25) as video:
        with pytest.raises(ValueError, match=r"\(16, 32, 3\) uint8"):
            video.write(np.zeros((16, 32, 3), np.float32))
        video.write(np.full((16, 32, 3), 200, np.uint8))
    frames, _ = read_mp4(tmp_path / "ok.mp4")
    assert frames.shape == (1, 16, 32, 3) and abs(int(frames[0, 8, 16, 0]) - 200) <= 3
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Mp4Writer(tmp_path / "missing" / "x.mp4", 32, 16, fps=25)


def test_a_failed_video_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "video.mp4"
    path.write_bytes(b"previous video")
    with pytest.raises(RuntimeError, match="policy failed"):
        with Mp4Writer(path, 32, 16, fps=25) as video:
            video.write(np.zeros((16, 32, 3), np.uint8))
            raise RuntimeError("policy failed")
    assert path.read_bytes() == b"previous video"
    assert [p.name for p in tmp_path.iterdir()] == ["video.mp4"]


def test_cli_render_writes_the_video(gl, tmp_path, capsys):
    out = tmp_path / "zero.mp4"
    argv = ["render", "--policy", "zero", "--seconds", "0.2", "--width", "64", "--height", "48",
            "-o", str(out), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    assert "wrote" in capsys.readouterr().out
    frames, fps = read_mp4(out)
    assert frames.shape == (10 // 2 + 1, 48, 64, 3) and fps == 25.0


def test_cli_render_needs_a_run_or_the_zero_policy(tmp_path):
    with pytest.raises(SystemExit, match="--model RUN_DIR or --onnx POLICY.onnx is required"):
        main(["render", "-o", str(tmp_path / "x.mp4")])
    assert main(["render", "--model", str(tmp_path), "-o", str(tmp_path / "x.mp4")]) == 2


def test_a_bindable_policy_is_bound_to_the_video_env(gl, tmp_path):
    class Bindable:
        def __init__(self):
            self.envs = []

        def bind(self, env):
            self.envs.append(env)
            return lambda obs: np.zeros((len(obs), 29), np.float32)

    policy = Bindable()
    result = record_video(tmp_path / "b.mp4", policy, DEFAULT_MOTION_PATH, seconds=0.1, fps=50,
                          render_cfg=TINY, progress=False)  # fmt: skip
    (env,) = policy.envs
    assert env.num_envs == 1 and env.render_mode == "rgb_array"
    assert result["frames"] == 5 + 1 and result["fps"] == 50.0


SHARED_FENCE = Path(__file__).resolve().parents[1].parent / "shared/policies/g1moves_B_Fence1"


def test_cli_render_runs_the_shared_onnx_policy(gl, tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    if not (SHARED_FENCE / "B_Fence1.onnx").is_file():
        pytest.skip(f"shared B_Fence1 policy not found at {SHARED_FENCE}")
    out = tmp_path / "fence.mp4"
    argv = ["render", "--onnx", str(SHARED_FENCE / "B_Fence1.onnx"), "--motion",
            str(SHARED_FENCE / "B_Fence1.npz"), "--frame-per-step", "--seconds", "0.4",
            "--width", "64", "--height", "48", "-o", str(out), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    assert "20 steps of B_Fence1.npz, no termination" in capsys.readouterr().out
    frames, _ = read_mp4(out)
    assert frames.shape == (20 // 2 + 1, 48, 64, 3)
    with pytest.raises(SystemExit, match="drop --model/--policy"):
        main(["render", "--onnx", "x.onnx", "--policy", "zero", "-o", str(out)])


def test_cli_render_without_imageio_ffmpeg_names_the_extra(gl, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # as if not installed
    argv = ["render", "--policy", "zero", "--seconds", "0.1", "--width", "32", "--height", "32",
            "-o", str(tmp_path / "x.mp4"), "--no-progress"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "imageio_ffmpeg is not installed" in err and 'pip install -e ".[render]"' in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["clip.gif", "clip", "clip.MP4.bak"])
def test_a_video_name_other_than_mp4_is_refused_before_anything_is_written(name, tmp_path, capsys):
    """``render -o x.gif`` wrote MP4 bytes under a .gif name and exited 0: now one line names
    the file and nothing is written, by the CLI and by `Mp4Writer`."""
    from gym_motion.video import Mp4Writer, check_mp4_path

    out = tmp_path / name
    assert main(["render", "--policy", "zero", "--seconds", "0.1", "-o", str(out)]) != 0
    err = capsys.readouterr().err
    assert name in err and ".mp4" in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="give a file name ending in .mp4"):
        Mp4Writer(out, 64, 64, fps=25)
    assert check_mp4_path(tmp_path / "ok.MP4").name == "ok.MP4"
