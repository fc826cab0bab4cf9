"""Videos of a policy tracking a clip: `record_video` and `Mp4Writer` (``gym-motion render``).

    gym-motion render --model runs/NAME --motion dance.npz -o dance.mp4
    gym-motion render --policy zero --motion dance.npz -o zero.mp4 --seconds 4
    gym-motion render --onnx B_Fence1.onnx --motion B_Fence1.npz --frame-per-step -o fence.mp4

The clip plays from its first frame as `gym_motion.evaluate` plays it (`eval_cfg`: no noise,
no randomisation, the deterministic policy); every frame shows the robot and its reference
pose as a translucent ghost (`gym_motion.render`). A termination ends the episode and the
video: its frame is held for ``hold_s`` seconds. MP4 files (H.264) are written by the
``ffmpeg`` that the ``imageio-ffmpeg`` package carries (``pip install -e ".[render]"``), through
a temporary file renamed into place when complete, so a video path never holds a partial file.

This module imports neither MuJoCo nor the RL libraries at import time.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from gym_motion.envs.config import TrackingEnvCfg
    from gym_motion.policy import BindablePolicy, Policy
    from gym_motion.render import RenderCfg

__all__ = ["Mp4Writer", "check_mp4_path", "read_mp4", "record_video"]


def check_mp4_path(path: str | os.PathLike) -> Path:
    """`path` as a Path, if it names an MP4 file (suffix ``.mp4``, any case).

    Raises:
        ValueError: another suffix (a ``.gif`` would get MP4 bytes under its name), naming it.
    """
    path = Path(path)
    if path.suffix.lower() != ".mp4":
        raise ValueError(f"{path}: videos are written as MP4 (H.264); give a file name ending "
                         f"in .mp4, not {path.suffix or 'no suffix'!r}")  # fmt: skip
    return path


class Mp4Writer:
    """Streams RGB frames into an MP4 file (H.264, yuv420p), written atomically.

    Frames go to a temporary file beside `path`; `close` renames it to `path` (``os.replace``),
    `abort` deletes it. As a context manager it closes on success and aborts on an exception.

    Args:
        path: the ``.mp4`` to write (its folder must exist).
        width, height: frame size, pixels; even (yuv420p halves the colour resolution).
        fps: frames per second (> 0).

    Raises:
        ValueError: odd or non-positive size, fps <= 0, a path not ending in ``.mp4``.
        ModuleNotFoundError: ``imageio_ffmpeg`` is not installed (the ``render`` extra).

    Example:
        >>> with Mp4Writer("out.mp4", 320, 240, fps=25) as video:  # doctest: +SKIP
        ...     for frame in frames:  # (240, 320, 3) uint8 each
        ...         video.write(frame)
    """

    def __init__(self, path: str | os.PathLike, width: int, height: int, fps: float):
        import imageio_ffmpeg

        if width < 2 or height < 2 or width % 2 or height % 2:
            raise ValueError(f"MP4 frames need an even width and height, got {width}x{height}")
        if not fps > 0:
            raise ValueError(f"fps must be > 0, got {fps}")
        self.path = check_mp4_path(path)
        self.shape = (int(height), int(width), 3)
        self.fps = float(fps)
        self.frames = 0
        if not self.path.parent.is_dir():
            raise FileNotFoundError(f"folder of {self.path} does not exist")
        if self.path.is_dir():
            raise ValueError(f"{self.path} is a directory; give an .mp4 file name")
        # ffmpeg creates the file (so it gets the usual permissions); the name is unique
        self._tmp = self.path.with_name(f".{self.path.stem}.{os.getpid()}.{uuid.uuid4().hex}.mp4")
        self._gen = imageio_ffmpeg.write_frames(
            str(self._tmp),
            (int(width), int(height)),
            fps=self.fps,
            codec="libx264",
            pix_fmt_out="yuv420p",
            macro_block_size=2,
            output_params=["-y"],
        )
        self._gen.send(None)  # starts ffmpeg

    def write(self, frame: np.ndarray) -> None:
        """Append one frame, (H, W, 3) uint8 RGB of the writer's size.

        Raises:
            ValueError: wrong shape or dtype. RuntimeError: the writer is closed.
        """
        if self._gen is None:
            raise RuntimeError(f"Mp4Writer for {self.path} is closed")
        frame = np.asarray(frame)
        if frame.shape != self.shape or frame.dtype != np.uint8:
            raise ValueError(f"frame must be {self.shape} uint8, got {frame.shape} {frame.dtype}")
        self._gen.send(np.ascontiguousarray(frame))
        self.frames += 1

    def close(self) -> Path:
        """Finish the file and move it to `path`; returns `path`. Idempotent."""
        if self._gen is not None:
            gen, self._gen = self._gen, None
            try:
                gen.close()
            except BaseException:
                self._tmp.unlink(missing_ok=True)
                raise
            os.replace(self._tmp, self.path)
        return self.path

    def abort(self) -> None:
        """Stop ffmpeg and delete the temporary file; `path` is left as it was."""
        if self._gen is not None:
            gen, self._gen = self._gen, None
            try:
                gen.close()
            finally:
                self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> Mp4Writer:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def read_mp4(path: str | os.PathLike) -> tuple[np.ndarray, float]:
    """All frames of a video file and its frame rate, read with imageio-ffmpeg.

    Returns:
        frames (T, H, W, 3) uint8 RGB, fps (float).

    Raises:
        FileNotFoundError: no such file.
    """
    import imageio_ffmpeg

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no video at {path}")
    reader = imageio_ffmpeg.read_frames(str(path))
    meta = reader.__next__()
    width, height = meta["size"]
    frames = [np.frombuffer(buf, np.uint8).reshape(height, width, 3) for buf in reader]
    return np.stack(frames) if frames else np.zeros((0, height, width, 3), np.uint8), meta["fps"]


def record_video(
    path: str | os.PathLike,
    policy: Policy | BindablePolicy | None,
    clip: str | os.PathLike,
    cfg: TrackingEnvCfg | None = None,
    *,
    seconds: float | None = None,
    fps: float = 25.0,
    hold_s: float = 1.0,
    render_cfg: RenderCfg | None = None,
    obs_mode: str = "policy",
    seed: int = 0,
    playback: str = "real_time",
    progress: bool = True,
) -> dict[str, Any]:
    """Play `clip` from its first frame with `policy` and write the video to `path` (MP4).

    Args:
        path: the ``.mp4`` to write (atomically; its folder must exist).
        policy: obs -> actions (`gym_motion.policy.Policy`), or a `BindablePolicy` (e.g.
            `gym_motion.deploy.OnnxPolicy`, bound to the env built here); None: the zero
            action.
        clip: a clip npz (a folder: its first ``*.npz`` by name).
        cfg: the task, robot and physics backend (default: the default task), played with
            `gym_motion.envs.eval_cfg` (from the clip start, no noise, no randomisation).
        seconds: length of the played motion, s (default: the whole clip).
        fps: video frame rate; must divide the env's control rate (50 Hz: 50, 25, 10, ...):
            one frame every ``control rate / fps`` steps.
        hold_s: after a termination (the episode ends there), hold its frame this long, s.
        render_cfg: frame size, camera and colours (`gym_motion.render.RenderCfg`).
        obs_mode: the observation `policy` takes, "policy" or "dict".
        seed: the env's seed.
        playback: "real_time" or "frame_per_step" (`gym_motion.motion.Playback`).
        progress: show a progress bar (tqdm) over the control steps.

    Returns:
        ``{"path": str, "clip": str, "frames": int, "fps": float, "steps": int (control
        steps played), "terminated_step": int or None (the termination), "width": int,
        "height": int, "render_s": float (wall time of rendering and encoding)}``.

    Raises:
        ValueError: fps does not divide the control rate; a bad clip or render setting; a
            policy that cannot be bound to the env.
        FileNotFoundError: no clip, or no folder for `path`.
        RuntimeError: no OpenGL context (set ``MUJOCO_GL=egl`` without a display).
        ModuleNotFoundError: ``imageio_ffmpeg`` is not installed (the ``render`` extra).
    """
    import time

    from gymnasium.vector import AutoresetMode
    from tqdm import tqdm

    from gym_motion.envs.config import eval_cfg
    from gym_motion.envs.tracking import TrackingVecEnv
    from gym_motion.motion.library import MotionLibrary
    from gym_motion.policy import bind_policy
    from gym_motion.render import RenderCfg

    clip = _first_clip(clip)
    cfg = eval_cfg(cfg)
    rate = 1.0 / cfg.sim.control_dt
    every = round(rate / fps) if fps > 0 else 0
    if every < 1 or abs(rate / every - fps) > 1e-6:
        raise ValueError(
            f"fps must divide the control rate {rate:g} Hz (e.g. 50, 25, 10), got {fps}"
        )
    library = MotionLibrary.from_paths(clip, fps=rate, robot=cfg.robot, playback=playback)
    horizon = int(library.lengths[0]) - 1
    if seconds is not None:
        horizon = min(horizon, max(1, round(seconds * rate)))
    render_cfg = render_cfg or RenderCfg()
    env = TrackingVecEnv(
        num_envs=1,
        motion=library,
        cfg=cfg,
        autoreset_mode=AutoresetMode.DISABLED,
        obs_mode=obs_mode,
        max_episode_steps=horizon,
        seed=seed,
        render_mode="rgb_array",
        render_cfg=render_cfg,
    )
    t0 = time.perf_counter()
    terminated_step = None
    try:
        act = bind_policy(policy, env)
        obs, _ = env.reset(seed=seed)
        with (
            Mp4Writer(path, render_cfg.width, render_cfg.height, rate / every) as video,
            tqdm(total=horizon, desc="render", unit="step", disable=not progress) as bar,
        ):
            frame = env.render()[0]
            video.write(frame)
            step = 0
            while step < horizon:
                obs, _, terminated, _, _ = env.step(act(obs))
                step += 1
                bar.update()
                if terminated[0]:
                    terminated_step = step
                if step % every == 0 or terminated[0]:
                    frame = env.render()[0]
                    video.write(frame)
                if terminated[0]:  # the episode is over: hold its last frame
                    for _ in range(round(hold_s * rate / every)):
                        video.write(frame)
                    break
            frames = video.frames
    finally:
        env.close()
    return {
        "path": str(path),
        "clip": str(clip),
        "frames": frames,
        "fps": rate / every,
        "steps": step,
        "terminated_step": terminated_step,
        "width": render_cfg.width,
        "height": render_cfg.height,
        "render_s": round(time.perf_counter() - t0, 2),
    }


def _first_clip(clip: str | os.PathLike) -> Path:
    """`clip`, or the first ``*.npz`` (by name) of a folder."""
    path = Path(clip)
    if path.is_dir():
        clips = sorted(path.glob("*.npz"))
        if not clips:
            raise FileNotFoundError(f"no *.npz clip in the folder {path}")
        return clips[0]
    if not path.is_file():
        raise FileNotFoundError(f"no clip at {path}")
    return path
