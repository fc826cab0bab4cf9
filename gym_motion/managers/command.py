"""The motion command: which clip frame each env tracks, the reference there, and how far the
robot is from it.

The command manager owns everything about the reference motion (docs/task.md sections 4, 9 and
10): sampling start frames (`MotionSampler`), reference state initialisation (RSI) of reset
rows, advancing the motion one frame per control step, flagging envs past their clip's end (the
env re-initialises them on a new frame; the episode goes on), the re-anchored reference, and the
tracking errors with their per-episode means.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from gym_motion.kernels.command import observed_reference, reference_step
from gym_motion.kernels.dispatch import bind_builds
from gym_motion.kernels.metrics import TRACKING_ERRORS, tracking_errors
from gym_motion.kernels.reset import rsi_state
from gym_motion.managers.state import MDPState
from gym_motion.motion.library import MotionLibrary
from gym_motion.motion.sampler import MotionSampler
from gym_motion.robots.layout import JointLayout

_ERROR_LOG_KEYS = tuple(f"error/{name}" for name in TRACKING_ERRORS)


class CommandManager:
    """Per-env motion state over a motion library, and the reference it implies.

    Args:
        library: a `MotionLibrary` at the env's control rate, holding every tracked body.
        state: the shared MDP state; `state.ref` and the re-anchored reference are written here.
        root_body: name of the floating base in the library (its pose and velocity start RSI).
        sampling: a `gym_motion.envs.config.SamplingCfg` (mode, EMA rate, uniform weight, bins).
        reset: a `gym_motion.envs.config.ResetCfg` (RSI noise ranges).
        dt: control step, s (the library's frame period).
        layout: the robot's `JointLayout` in the physics model: RSI states are written in the
            model's qpos/qvel columns.
        serial: whether its kernels run their serial builds (the env's `NumbaThreads.serial`).
        observed_offset: frames between the robot's frame and the reference the policy
            observes (`MDPState.obs_ref`): 1 (``observed_frame="next"``, mjlab's) or 0
            ("current").

    Attributes:
        clip_ids: (N,) int32, clip of each env. frames: (N,) int32, frame within the clip.
        clip_end: (N,) bool, set by `advance` for envs that ran past their clip's last frame.
        sampler: the `MotionSampler` of start frames.
        errors: (N, len(TRACKING_ERRORS)) float32, tracking errors of the last step.
        error_sums: (N, len(TRACKING_ERRORS)) float64, their sums over each episode so far.

    Raises:
        ValueError: the library lacks a tracked body or the root body.
    """

    def __init__(self, library: MotionLibrary, state: MDPState, root_body: str, sampling, reset,
                 dt: float, *, layout: JointLayout, serial: bool,
                 observed_offset: int = 1):  # fmt: skip
        self.library = library
        self._state = state
        lib_bodies = tuple(library.body_names)
        missing = [b for b in (*state.body_names, root_body) if b not in lib_bodies]
        if missing:
            raise ValueError(f"motion library lacks tracked bodies {missing}")
        self._body_ids = np.array([lib_bodies.index(b) for b in state.body_names], np.int64)
        self._lib_root = lib_bodies.index(root_body)
        self._starts = np.asarray(library.starts, np.int64)
        self._lengths = np.asarray(library.lengths, np.int64)
        n, j = state.num_envs, state.robot.joint_pos.shape[1]
        if layout.num_joints != j:
            raise ValueError(f"the layout has {layout.num_joints} joints, the state {j}")
        self._layout = layout
        if observed_offset not in (0, 1):
            raise ValueError(f"observed_offset must be 0 or 1, got {observed_offset!r}")
        self._observed_offset = observed_offset
        self.clip_ids = np.zeros(n, np.int32)
        self.frames = np.zeros(n, np.int32)
        self.clip_end = np.zeros(n, bool)
        self._all = np.arange(n, dtype=np.int64)
        self.sampler = MotionSampler(
            library.lengths,
            fps=1.0 / dt,
            mode=sampling.mode,
            num_envs=n,
            alpha=sampling.ema_alpha,
            uniform_ratio=sampling.uniform_weight,
            bin_seconds=sampling.bin_s,
        )
        self._reset_cfg = reset
        self.reset_noise_scale = 1.0
        self._qpos = np.tile(layout.qpos0, (n, 1))  # columns not of the robot stay at qpos0
        self._qvel = np.zeros((n, layout.nv))
        self.errors = np.zeros((n, len(TRACKING_ERRORS)), np.float32)
        self.error_sums = np.zeros((n, len(TRACKING_ERRORS)), np.float64)
        # every step's kernels, bound once in the build of this batch
        self._advance_all = bind_builds(self._reference_step(True, self._all))[serial]
        self._refresh_all = bind_builds(self._reference_step(False, self._all))[serial]
        self._observe_all = bind_builds(self._observed_reference(self._all))[serial]
        s = state
        self._errors = bind_builds(partial(
            tracking_errors, s.ref.pos_w, s.ref.quat_w, s.ref_rel_pos_w, s.ref_rel_quat_w,
            s.robot.pos_w, s.robot.quat_w, s.anchor, s.root, s.ref.joint_pos, s.ref.joint_vel,
            s.robot.joint_pos, s.robot.joint_vel, self.errors, self.error_sums,
        ))[serial]  # fmt: skip

    # ------------------------------------------------------------------ reset states
    @property
    def reset_noise_scale(self) -> float:
        """Factor on every `ResetCfg` range (root pose, root velocity, joints) of later resets.

        1.0 is the configured noise; 0.0 starts episodes exactly on the reference. Setting it
        raises ValueError unless it is a finite number >= 0. The random draws do not depend on
        it, so runs that differ only in the scale see the same frames and directions.
        """
        return self._reset_noise_scale

    @reset_noise_scale.setter
    def reset_noise_scale(self, scale: float) -> None:
        scale = float(scale)
        if not (np.isfinite(scale) and scale >= 0.0):
            raise ValueError(f"reset_noise_scale must be a finite number >= 0, got {scale}")
        reset = self._reset_cfg
        self._reset_pose = scale * np.array(reset.pose_range, np.float64)
        self._reset_vel = scale * np.array(reset.velocity_range, np.float64)
        self._reset_joint = scale * np.array(reset.joint_pos_range, np.float64)
        self._reset_noise_scale = scale

    def sample_states(
        self,
        env_ids: np.ndarray,
        rng: np.random.Generator,
        start: tuple[int, int] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Reference state initialisation of rows `env_ids` (M,) (docs/task.md section 9).

        Draws a start (clip, frame) per row from the sampler (or takes `start`, one (clip id,
        frame) for every row, checked by `check_start`), points the rows there and returns
        the robot state near that reference frame in the physics model's columns (the
        layout's): qpos (M, nq) = root position (m, world frame), root quaternion (wxyz),
        joints (rad); qvel (M, nv) = root linear velocity (m/s, world frame), root angular
        velocity (rad/s, root frame), joint velocities. The arrays are views of owned buffers,
        valid until the next call.
        """
        clip_ids, frames = self.draw_starts(env_ids, rng, start)
        lib, m, lay = self.library, env_ids.size, self._layout
        qpos, qvel = self._qpos[:m], self._qvel[:m]
        pose, vel, joint = self.rsi_ranges
        rsi_state(
            lib.body_pos_w, lib.body_quat_w, lib.body_lin_vel_w, lib.body_ang_vel_w,
            lib.joint_pos, lib.joint_vel, self._lib_root, self._starts[clip_ids] + frames,
            self.draw_rsi_noise(m, rng), pose, vel, joint, self._state.soft_joint_limits,
            lay.root_qpos_adr, lay.root_dof_adr, lay.qpos_adr, lay.dof_adr, qpos, qvel,
        )  # fmt: skip
        return qpos, qvel

    def draw_starts(
        self, env_ids: np.ndarray, rng: np.random.Generator, start: tuple[int, int] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The first half of `sample_states`: draw a start (clip id, frame) for each of rows
        `env_ids` (M,) from the sampler (or take `start`, checked by `check_start`) and point
        the rows there; returns (clip_ids, frames), (M,) int32 each."""
        if start is None:
            clip_ids, frames = self.sampler.sample(env_ids.size, rng)
        else:
            clip, frame = self.check_start(start)
            clip_ids = np.full(env_ids.size, clip, np.int32)
            frames = np.full(env_ids.size, frame, np.int32)
        self.set_frames(env_ids, clip_ids, frames)
        return clip_ids, frames

    def draw_rsi_noise(self, num_rows: int, rng: np.random.Generator) -> np.ndarray:
        """The second half's random draws: (M, 12 + J) float64 uniforms in [0, 1), the columns
        `gym_motion.kernels.reset.rsi_state` reads (pose 6 | velocity 6 | joints J)."""
        return rng.random((num_rows, 12 + self._layout.num_joints))

    @property
    def rsi_ranges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The reset noise's (low, high) ranges as RSI reads them, float64, scaled by
        `reset_noise_scale`: root pose (6, 2) (x, y, z m; roll, pitch, yaw rad), root velocity
        (6, 2) (m/s, rad/s, world frame), joint positions (2,) rad. New arrays whenever the
        scale is set."""
        return self._reset_pose, self._reset_vel, self._reset_joint

    @property
    def observed_offset(self) -> int:
        """Frames between each env's motion frame and the reference its policy observes (1 or
        0, `MDPState.obs_ref`)."""
        return self._observed_offset

    @property
    def library_root(self) -> int:
        """Index of the robot's root body among the motion library's bodies (RSI's root)."""
        return self._lib_root

    @property
    def layout(self) -> JointLayout:
        """The physics model's qpos/qvel columns (`JointLayout`) that RSI writes."""
        return self._layout

    def check_start(self, start: tuple[int, int]) -> tuple[int, int]:
        """`start` as (clip id, frame) ints, checked against the library.

        Raises:
            ValueError: not two ints, a clip id outside [0, C), or a frame outside
                [0, T - 2] of that clip (an episode needs a next frame to step to).
        """
        try:
            clip, frame = (int(v) for v in start)
        except (TypeError, ValueError):
            raise ValueError(f"start must be (clip id, frame) ints, got {start!r}") from None
        if not 0 <= clip < self._lengths.size:
            raise ValueError(f"start clip id must be in [0, {self._lengths.size}), got {clip}")
        last = int(self._lengths[clip]) - 2
        if not 0 <= frame <= last:
            raise ValueError(f"start frame of clip {clip} must be in [0, {last}], got {frame}")
        return clip, frame

    def update_sampler(self, env_ids: np.ndarray, terminated: np.ndarray) -> None:
        """Fold the episodes that ended this step on rows `env_ids` (M,) into the adaptive
        sampler; `terminated` (M,) bool marks failures. Call once per step."""
        self.sampler.update(self.clip_ids[env_ids], self.frames[env_ids], terminated)

    def set_frames(self, env_ids: np.ndarray, clip_ids: np.ndarray, frames: np.ndarray) -> None:
        """Point rows `env_ids` (M,) at (clip_ids, frames) (M,) int."""
        self.clip_ids[env_ids] = clip_ids
        self.frames[env_ids] = frames
        self.clip_end[env_ids] = False

    # ------------------------------------------------------------------ per step
    def advance(self) -> np.ndarray:
        """Advance every env one frame and `refresh` the reference there; returns `clip_end`
        (N,) bool (owned buffer).

        Envs past their clip's last frame stay on it until the env re-initialises them. Must
        run after the robot state is fresh (after physics).
        """
        self._advance_all()
        self._observe_all()
        return self.clip_end

    def reference_rows(self, env_ids: np.ndarray) -> np.ndarray:
        """Flat library frame index (M,) int64 of rows `env_ids` (M,)."""
        return self._starts[self.clip_ids[env_ids]] + self.frames[env_ids]

    def refresh(self, env_ids: np.ndarray | None = None) -> None:
        """Gather the reference at the current frames and re-anchor it on the robot, and the
        reference the policy observes (`MDPState.obs_ref`), for all envs or rows `env_ids`
        (M,) int64 only.

        Must run after the robot state of those rows is fresh (after physics or a state write).
        """
        if env_ids is None:
            self._refresh_all()
            self._observe_all()
        else:
            self._reference_step(False, env_ids)()
            self._observed_reference(env_ids)()

    def _observed_reference(self, env_ids: np.ndarray) -> partial:
        """`observed_reference` over rows `env_ids`, bound to its arguments."""
        lib, o = self.library, self._state.obs_ref
        return partial(
            observed_reference,
            self._starts, self._lengths, self.clip_ids, self.frames, self._observed_offset,
            lib.body_pos_w, lib.body_quat_w, lib.body_lin_vel_w, lib.body_ang_vel_w,
            lib.joint_pos, lib.joint_vel, self._body_ids, env_ids,
            o.pos_w, o.quat_w, o.lin_vel_w, o.ang_vel_w, o.joint_pos, o.joint_vel,
        )  # fmt: skip

    def _reference_step(self, advance: bool, env_ids: np.ndarray) -> partial:
        """`reference_step` over rows `env_ids` (advancing them first or not), bound to its
        arguments."""
        lib, s = self.library, self._state
        ref, a = s.ref, s.anchor
        return partial(
            reference_step,
            self._starts, self._lengths, self.clip_ids, self.frames, advance, self.clip_end,
            lib.body_pos_w, lib.body_quat_w, lib.body_lin_vel_w, lib.body_ang_vel_w,
            lib.joint_pos, lib.joint_vel, self._body_ids,
            a, s.robot.pos_w[:, a], s.robot.quat_w[:, a], env_ids,
            ref.pos_w, ref.quat_w, ref.lin_vel_w, ref.ang_vel_w, ref.joint_pos, ref.joint_vel,
            s.ref_rel_pos_w, s.ref_rel_quat_w,
        )  # fmt: skip

    def compute_errors(self) -> np.ndarray:
        """Tracking errors of every env (`TRACKING_ERRORS` order, m and rad) into `errors`,
        added to the episode sums; returns `errors` (owned buffer)."""
        self._errors()
        return self.errors

    # ------------------------------------------------------------------ episodes
    def episode_log(self, length: np.ndarray) -> dict[str, np.ndarray]:
        """Episode means of the tracking errors, ``{"error/<name>": (N,) float32}``, for
        episodes of `length` (N,) steps so far (rows with length 0 divide by 1)."""
        means = self.error_sums / np.maximum(length, 1)[:, None]
        means = np.ascontiguousarray(means.T, np.float32)  # (E, N): one cast
        return dict(zip(_ERROR_LOG_KEYS, means, strict=True))

    def reset(self, env_ids: np.ndarray) -> None:
        """Start new episodes on rows `env_ids`: clear their error sums."""
        self.error_sums[env_ids] = 0.0
