"""The in-memory motion clip: `MotionClip`, the names of its arrays and `MotionFormatError`.

A clip is a reference trajectory of the robot sampled at ``fps`` frames per second: joint
positions and velocities plus world-frame poses and velocities of named bodies (docs/task.md section
3). Files hold the same arrays (`gym_motion.motion.npz`); `gym_motion.motion.clip.load_clip` reads
and validates them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from gym_motion.motion import _quat
from gym_motion.motion.rates import check_fps, rates_equal, resample_grid

__all__ = [
    "ARRAY_KEYS",
    "FORMAT_VERSION",
    "OPTIONAL_KEYS",
    "REQUIRED_KEYS",
    "MotionClip",
    "MotionFormatError",
]

FORMAT_VERSION = 1

ARRAY_KEYS: tuple[str, ...] = (
    "joint_pos",
    "joint_vel",
    "body_pos_w",
    "body_quat_w",
    "body_lin_vel_w",
    "body_ang_vel_w",
)
REQUIRED_KEYS: tuple[str, ...] = ("fps",) + ARRAY_KEYS
OPTIONAL_KEYS: tuple[str, ...] = ("source_fps", "format_version", "joint_names", "body_names")
BODY_VEC_SIZE = {"body_pos_w": 3, "body_quat_w": 4, "body_lin_vel_w": 3, "body_ang_vel_w": 3}


class MotionFormatError(ValueError):
    """A motion file or clip that cannot be used: the message names file, key, frame and body."""


@dataclass(frozen=True, eq=False)
class MotionClip:
    """A reference motion of a robot, sampled at ``fps``.

    Attributes:
        fps: frames per second of the arrays (the control rate after ``load_clip(fps=...)``).
        joint_names: ``(J,)`` joint names, the column order of the joint arrays.
        body_names: ``(B,)`` body names, the order of the body arrays (no world body).
        joint_pos: ``(T, J)`` float32, rad.
        joint_vel: ``(T, J)`` float32, rad/s.
        body_pos_w: ``(T, B, 3)`` float32, world frame, m (body frame origins, MuJoCo ``xpos``).
        body_quat_w: ``(T, B, 4)`` float32, world frame, unit quaternions wxyz (``xquat``).
        body_lin_vel_w: ``(T, B, 3)`` float32, world frame, m/s, of the body frame origins.
        body_ang_vel_w: ``(T, B, 3)`` float32, world frame, rad/s.
        source_fps: the rate the motion was recorded or converted at (metadata; equals ``fps``
            unless the clip was resampled).
        format_version: ``FORMAT_VERSION`` of the file format.
    """

    fps: float
    joint_names: tuple[str, ...]
    body_names: tuple[str, ...]
    joint_pos: np.ndarray
    joint_vel: np.ndarray
    body_pos_w: np.ndarray
    body_quat_w: np.ndarray
    body_lin_vel_w: np.ndarray
    body_ang_vel_w: np.ndarray
    source_fps: float | None = None
    format_version: int = field(default=FORMAT_VERSION)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fps", check_fps(self.fps, "MotionClip.fps"))
        object.__setattr__(self, "joint_names", tuple(str(n) for n in self.joint_names))
        object.__setattr__(self, "body_names", tuple(str(n) for n in self.body_names))
        source = self.source_fps
        source = self.fps if source is None else check_fps(source, "MotionClip.source_fps")
        object.__setattr__(self, "source_fps", source)
        with np.errstate(over="ignore"):  # beyond float32: inf, which validation names
            for key in ARRAY_KEYS:
                value = np.ascontiguousarray(getattr(self, key), np.float32)
                object.__setattr__(self, key, value)
        check_shapes(
            {k: getattr(self, k) for k in ARRAY_KEYS},
            len(self.joint_names),
            len(self.body_names),
            "MotionClip",
        )

    @property
    def num_frames(self) -> int:
        """Number of frames T."""
        return self.joint_pos.shape[0]

    @property
    def duration(self) -> float:
        """Time from the first to the last frame, s: ``(T - 1) / fps``."""
        return (self.num_frames - 1) / self.fps

    def body_index(self, name: str) -> int:
        """Index of body ``name`` in the body arrays; KeyError naming the known bodies."""
        try:
            return self.body_names.index(name)
        except ValueError:
            raise KeyError(f"body {name!r} not in clip bodies {self.body_names}") from None

    def resample(self, fps: float) -> MotionClip:
        """This clip at another rate: lerp of positions and velocities, slerp of quaternions.

        The time grid is ``k / fps`` for ``k = 0 .. floor(duration * fps)``, so the duration is kept
        to within one frame and the last frame is kept when it falls on the grid. ``source_fps``
        is carried over; a rate equal to ``fps`` (`rates_equal`) returns this clip.

        Raises:
            ValueError: ``fps`` is not a positive number, or resampling would leave fewer than
                2 frames (`MotionFormatError`) or more than ``MAX_FRAMES``.
        """
        fps = check_fps(fps)
        if rates_equal(fps, self.fps):
            return self
        i0, i1, blend = resample_grid(self.num_frames, self.fps, fps)
        if i0.size < 2:
            raise MotionFormatError(
                f"{self.num_frames} frames at {self.fps:g} fps ({self.duration:.4g} s) give "
                f"{i0.size} frame(s) at {fps:g} fps; a motion needs at least 2"
            )
        b2 = blend[:, None]
        b3 = blend[:, None, None]

        def lerp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            x = a[i0].astype(np.float64)
            return x + (a[i1] - x) * b

        q0 = self.body_quat_w[i0]
        quat = _quat.slerp(q0, self.body_quat_w[i1], np.broadcast_to(b2, q0.shape[:-1]))
        return replace(
            self,
            fps=fps,
            joint_pos=lerp(self.joint_pos, b2),
            joint_vel=lerp(self.joint_vel, b2),
            body_pos_w=lerp(self.body_pos_w, b3),
            body_quat_w=quat,
            body_lin_vel_w=lerp(self.body_lin_vel_w, b3),
            body_ang_vel_w=lerp(self.body_ang_vel_w, b3),
        )


def check_shapes(arrays: dict, num_joints: int, num_bodies: int, src: str) -> None:
    """Raise `MotionFormatError` (naming ``src``) unless ``arrays`` have the shapes of a clip
    of ``num_joints`` joints and ``num_bodies`` bodies, with at least 2 frames."""
    jp = arrays["joint_pos"]
    if jp.ndim != 2:
        raise MotionFormatError(f"{src}: key 'joint_pos' must be (T, J), got shape {jp.shape}")
    num_frames = jp.shape[0]
    expected = {"joint_pos": (num_frames, num_joints), "joint_vel": (num_frames, num_joints)}
    for key, size in BODY_VEC_SIZE.items():
        expected[key] = (num_frames, num_bodies, size)
    for key, shape in expected.items():
        if arrays[key].shape != shape:
            raise MotionFormatError(
                f"{src}: key {key!r} has shape {arrays[key].shape}, expected {shape} "
                f"(T={num_frames} frames, J={num_joints} joints, B={num_bodies} bodies)"
            )
    if num_frames < 2:
        raise MotionFormatError(f"{src}: {num_frames} frame(s); a motion needs at least 2")
