"""The motion command: which clip frame each env tracks, and the reference state there.

Each control step the motion time advances one frame; an env that runs past the end of its
clip is flagged so the env can re-initialise it on a freshly sampled frame (TASK_SPEC 4).
"""

from __future__ import annotations

import numpy as np

from gym_motion.kernels.command import gather_frames, gather_rows, reanchor_bodies
from gym_motion.managers.state import MDPState


class CommandManager:
    """Per-env motion state over a motion library, and the reference it implies.

    Args:
        library: a `gym_motion.motion.MotionLibrary` at the env's control rate.
        state: the shared MDP state; `state.ref` and the re-anchored reference are written here.

    Attributes:
        clip_ids: (N,) int32, clip of each env. frames: (N,) int32, frame within the clip.
        clip_end: (N,) bool, set by `advance` for envs that ran past their clip's last frame.
    """

    def __init__(self, library, state: MDPState):
        self.library = library
        self._state = state
        lib_bodies = tuple(library.body_names)
        missing = [b for b in state.body_names if b not in lib_bodies]
        if missing:
            raise ValueError(f"motion library lacks tracked bodies {missing}")
        self._body_ids = np.array([lib_bodies.index(b) for b in state.body_names], np.int64)
        self._starts = np.asarray(library.starts, np.int64)
        self._lengths = np.asarray(library.lengths, np.int64)
        n = state.num_envs
        self.clip_ids = np.zeros(n, np.int32)
        self.frames = np.zeros(n, np.int32)
        self.clip_end = np.zeros(n, bool)
        self._rows = np.zeros(n, np.int64)
        self._all = np.arange(n, dtype=np.int64)

    def set_frames(self, env_ids: np.ndarray, clip_ids: np.ndarray, frames: np.ndarray) -> None:
        """Point rows `env_ids` (M,) at (clip_ids, frames) (M,) int."""
        self.clip_ids[env_ids] = clip_ids
        self.frames[env_ids] = frames
        self.clip_end[env_ids] = False

    def advance(self) -> np.ndarray:
        """Advance every env one frame; returns `clip_end` (N,) bool (owned buffer).

        Envs past their clip's last frame stay on it until the env re-initialises them.
        """
        self.frames += 1
        last = self._lengths[self.clip_ids] - 1
        np.greater(self.frames, last, out=self.clip_end)
        np.minimum(self.frames, last, out=self.frames, casting="unsafe")
        return self.clip_end

    def reference_rows(self, env_ids: np.ndarray | None = None) -> np.ndarray:
        """Flat library frame index (M,) int64 of rows `env_ids` (all when None)."""
        if env_ids is None:
            np.add(self._starts[self.clip_ids], self.frames, out=self._rows)
            return self._rows
        return self._starts[self.clip_ids[env_ids]] + self.frames[env_ids]

    def refresh(self, env_ids: np.ndarray | None = None) -> None:
        """Gather the reference at the current frames and re-anchor it on the robot, for all
        envs or rows `env_ids` (M,) int64 only.

        Must run after the robot state of those rows is fresh (after physics or a state write).
        """
        lib, s = self.library, self._state
        rows = self.reference_rows()
        ids = self._all if env_ids is None else env_ids
        ref = s.ref
        gather_frames(lib.body_pos_w, rows, self._body_ids, ids, ref.pos_w)
        gather_frames(lib.body_quat_w, rows, self._body_ids, ids, ref.quat_w)
        gather_frames(lib.body_lin_vel_w, rows, self._body_ids, ids, ref.lin_vel_w)
        gather_frames(lib.body_ang_vel_w, rows, self._body_ids, ids, ref.ang_vel_w)
        gather_rows(lib.joint_pos, rows, ids, ref.joint_pos)
        gather_rows(lib.joint_vel, rows, ids, ref.joint_vel)
        a = s.anchor
        reanchor_bodies(
            ref.pos_w, ref.quat_w, a, s.robot.pos_w[:, a], s.robot.quat_w[:, a], ids,
            s.ref_rel_pos_w, s.ref_rel_quat_w,
        )  # fmt: skip
