"""A library of motion clips in flat arrays, addressed by (clip id, frame).

All clips share one rate (the control rate) and one body list. Frames of all clips are
concatenated: clip ``c`` frame ``f`` is row ``starts[c] + f`` of every array. The env's
`gym_motion.managers.command.CommandManager` reads the rows of its envs with Numba kernels.

Example:
    >>> from gym_motion.motion import DEFAULT_MOTION_PATH, MotionLibrary
    >>> lib = MotionLibrary.from_paths([DEFAULT_MOTION_PATH], fps=50.0)
    >>> lib.body_pos_w[lib.starts[0] + 10].shape  # clip 0, frame 10
    (30, 3)
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np

from gym_motion.motion import _kinematics
from gym_motion.motion.arrays import ARRAY_KEYS, MotionClip
from gym_motion.motion.clip import load_clip
from gym_motion.motion.rates import check_fps, rates_equal
from gym_motion.robots.spec import RobotSpec

__all__ = ["MotionLibrary", "Playback"]


_FIELDS = ARRAY_KEYS  # the clip arrays, stored concatenated


class Playback(StrEnum):
    """How a clip file's frames map onto control steps.

    - ``REAL_TIME`` (default): the clip is resampled from its ``fps`` label to the control
      rate, so it plays at the speed it was recorded at.
    - ``FRAME_PER_STEP``: one file frame per control step whatever the label, as mjlab and
      BeyondMimic play their npz files during training (a 60 fps clip then plays at 50/60 of
      real speed at 50 Hz). The clip is relabelled to the control rate, not resampled: frames
      and every stored array, velocities included, are the file's (``source_fps`` keeps the
      label). Use it to run a policy trained that way on the motion it saw.
    """

    REAL_TIME = "real_time"
    FRAME_PER_STEP = "frame_per_step"

    @classmethod
    def parse(cls, value: Playback | str) -> Playback:
        """A member from itself or its value; ValueError naming the valid values."""
        try:
            return cls(value)
        except ValueError:
            valid = [m.value for m in cls]
            raise ValueError(f"motion playback must be one of {valid}, got {value!r}") from None


def motion_files(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Path]:
    """The clip files `paths` name, in library order: a file as it is, a folder as its
    ``*.npz`` and ``*.pkl`` (GMR) files, sorted.

    Raises:
        FileNotFoundError: a folder without clip files.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted([*p.glob("*.npz"), *p.glob("*.pkl")])
            if not found:
                csv = sorted(p.glob("*.csv"))
                hint = ""
                if csv:
                    hint = (f"; convert its {len(csv)} .csv files first: gym-motion convert "
                            f"{csv[0].name} -o {csv[0].stem}.npz --input-fps FPS")  # fmt: skip
                raise FileNotFoundError(f"no .npz or .pkl (GMR) motion files in {p}{hint}")
            files.extend(found)
        else:
            files.append(p)
    return files


class MotionLibrary:
    """Clips at one rate concatenated into flat float32 arrays.

    Frame rates, the same rule wherever clips enter: files are resampled to the rate asked
    for when loaded (`load_clip` ``fps=``, `from_paths`, `load` with paths); clip and library
    objects at another rate are refused with an error naming both rates (here, and in `load`
    for a library), compared with `gym_motion.motion.clip.rates_equal`.

    Args:
        clips: one or more clips with equal ``fps`` and ``joint_names``; each must contain every
            body of ``body_names`` (in any order).
        body_names: bodies to store, in this order; None stores the first clip's bodies.
        names: a label per clip (for logs); default ``clip0, clip1, ...``.
        fps: the rate the library must have, Hz; None takes the first clip's.

    Raises:
        ValueError: no clips; a clip at another rate than ``fps`` (or the first clip's), with
            other joints, or lacking a body of ``body_names``; ``fps`` not a positive number.

    A library is read-only once built, so copies share it: ``copy.deepcopy`` returns the same
    object (gymnasium deep-copies an env's spec, whose kwargs may hold the library, on every
    wrapper's ``spec`` read).

    Attributes:
        source: how `from_paths` built it, ``{"paths": [...], "playback": ...}`` (absolute clip
            paths), from which an env spec rebuilds it; None for a library of clips in memory.
        fps: frames per second of all clips.
        joint_names, body_names: name tuples of the stored columns.
        lengths: ``(C,) int32`` frames per clip; starts: ``(C,) int64`` first row of each clip.
        joint_pos ... body_ang_vel_w: ``(F, J)`` / ``(F, B, k)`` float32, F = total frames.
    """

    def __init__(
        self,
        clips: Sequence[MotionClip],
        body_names: Sequence[str] | None = None,
        names: Sequence[str] | None = None,
        fps: float | None = None,
    ) -> None:
        clips = list(clips)
        if not clips:
            raise ValueError("a MotionLibrary needs at least one clip")
        self.source: dict[str, Any] | None = None
        first = clips[0]
        self.fps = first.fps if fps is None else check_fps(fps)
        self.joint_names = first.joint_names
        self.body_names = tuple(first.body_names if body_names is None else body_names)
        self.names = (
            tuple(names) if names is not None else tuple(f"clip{i}" for i in range(len(clips)))
        )
        if len(self.names) != len(clips):
            raise ValueError(f"{len(self.names)} names for {len(clips)} clips")
        for name, clip in zip(self.names, clips, strict=True):
            if not rates_equal(clip.fps, self.fps):
                raise ValueError(
                    f"clip {name!r} is at {clip.fps} fps, the library at {self.fps}: resample it "
                    f"(clip.resample({self.fps}), or load_clip(..., fps={self.fps}))"
                )
            if clip.joint_names != self.joint_names:
                raise ValueError(f"clip {name!r} has other joint names than the first clip")
            missing = [b for b in self.body_names if b not in clip.body_names]
            if missing:
                raise ValueError(f"clip {name!r} lacks bodies {missing}")
        self.lengths = np.array([c.num_frames for c in clips], dtype=np.int32)
        self.starts = np.zeros(len(clips), dtype=np.int64)
        self.starts[1:] = np.cumsum(self.lengths[:-1], dtype=np.int64)
        for key in _FIELDS:
            if key.startswith("joint"):
                parts = [getattr(c, key) for c in clips]
            else:
                parts = [
                    getattr(c, key)[:, [c.body_index(b) for b in self.body_names]] for c in clips
                ]
            setattr(self, key, np.ascontiguousarray(np.concatenate(parts), dtype=np.float32))

    @classmethod
    def from_paths(
        cls,
        paths: str | os.PathLike | Sequence[str | os.PathLike],
        fps: float = 50.0,
        robot: RobotSpec | None = None,
        body_names: Sequence[str] | None = None,
        playback: Playback | str = Playback.REAL_TIME,
    ) -> MotionLibrary:
        """Load clips (one npz or folder of ``*.npz``, or a list of them) at ``fps``.

        Every clip is validated by ``load_clip``; bodies default to ``robot.body_names``.
        `playback` (`Playback`): ``"real_time"`` resamples each clip from its label to ``fps``;
        ``"frame_per_step"`` relabels it as ``fps`` without resampling (one file frame per
        step, as mjlab plays clips).

        Raises:
            ValueError: an unknown playback, or `fps` not a positive frame rate.
        """
        playback = Playback.parse(playback)
        fps = check_fps(fps)
        robot = _kinematics.default_robot() if robot is None else robot
        files = motion_files(paths)
        if playback is Playback.FRAME_PER_STEP:
            clips = [dataclasses.replace(load_clip(f, robot=robot), fps=fps) for f in files]
        else:
            clips = [load_clip(f, robot=robot, fps=fps) for f in files]
        names = body_names if body_names is not None else robot.body_names
        library = cls(clips, body_names=names, names=[f.stem for f in files])
        library.source = {"paths": [str(f.resolve()) for f in files], "playback": str(playback)}
        return library

    def __deepcopy__(self, memo: dict[int, Any]) -> MotionLibrary:
        return self  # read-only: a copy shares it (see the class docstring)

    @classmethod
    def load(
        cls,
        motion: str | os.PathLike | Sequence[str | os.PathLike] | MotionLibrary | None,
        robot: RobotSpec,
        fps: float,
        playback: Playback | str = Playback.REAL_TIME,
    ) -> MotionLibrary:
        """The library an env at ``fps`` tracks on `robot`: clip path(s) or a folder (loaded and
        validated against the robot's model by `from_paths`, played as `playback` says), None
        (the embedded default motion), or a library (checked, used as built).

        Raises:
            ValueError: a library whose joints are not the robot's, or whose rate is not ``fps``;
                an unknown playback.
        """
        playback = Playback.parse(playback)
        if isinstance(motion, MotionLibrary):
            if tuple(motion.joint_names) != robot.joint_names:
                raise ValueError(
                    f"the motion library's joints {list(motion.joint_names)} are not those of "
                    f"robot {robot.name!r} {list(robot.joint_names)}"
                )
            if not rates_equal(motion.fps, fps):
                raise ValueError(
                    f"the motion library is at {motion.fps} fps but the env steps at {fps} Hz; "
                    f"build it with MotionLibrary.from_paths(..., fps={fps})"
                )
            return motion
        if motion is None:
            from gym_motion.motion.default import DEFAULT_MOTION_PATH as motion
        return cls.from_paths(motion, fps=fps, robot=robot, playback=playback)

    @property
    def num_clips(self) -> int:
        """Number of clips C."""
        return len(self.lengths)

    @property
    def num_frames(self) -> int:
        """Total number of frames of all clips."""
        return self.joint_pos.shape[0]

    @property
    def durations(self) -> np.ndarray:
        """``(C,) float64`` clip durations ``(T - 1) / fps``, s."""
        return (self.lengths - 1) / self.fps

    def body_indices(self, names: Sequence[str]) -> np.ndarray:
        """``(len(names),) int64`` indices of bodies in the body arrays; KeyError if absent."""
        missing = [n for n in names if n not in self.body_names]
        if missing:
            raise KeyError(f"bodies {missing} are not in the library ({self.body_names})")
        return np.array([self.body_names.index(n) for n in names], dtype=np.int64)
