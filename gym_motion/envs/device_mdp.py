"""The MDP of a `TrackingVecEnv` on a Warp device: the per-step kernels of
`gym_motion.kernels.device`, bound once to device buffers (``BackendCfg.mdp = "device"``).

What runs on the device each control step: the actions (joint position targets, the action
history), the motion command (advance, gather, re-anchor), the termination terms and their
OR, the reward terms and their weighing, the end of the step (flags, masked reward, episode
length), the tracking errors, the episode sums, and every observation group (terms, noise
drawn on the device, clip, scale); and at a reset, the rows' state (RSI, from the host's
draws). The host keeps what it owns and mirrors it (docs/backends.md, "The MDP on the GPU"):
the random draws of resets and the adaptive sampler (on the env's stream), events, and the
Gymnasium API's NumPy results. Without observation noise a run gives the host MDP's values to
float32 rounding, and its reset states bit for bit on Warp's CPU device
(``tests/envs/test_device_mdp.py``); with
noise, the noise is the device's own.

A term runs on the device when it is one of the package's built-in terms
(`gym_motion.envs.device_terms.DEVICE_TERMS`); a task with a term of its own is refused when
the env is built.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import warp as wp

from gym_motion.backends.device_state import DeviceBodyState
from gym_motion.backends.graphs import GraphLauncher
from gym_motion.envs.device_copies import Block, Copies
from gym_motion.envs.device_terms import Launch, binder, bound, launch, refusal
from gym_motion.kernels.device import actions as k_actions
from gym_motion.kernels.device import command as k_command
from gym_motion.kernels.device import episode as k_episode
from gym_motion.kernels.device import metrics as k_metrics
from gym_motion.kernels.device import observations as k_obs
from gym_motion.kernels.device import reset as k_reset
from gym_motion.kernels.device import rewards as k_rewards
from gym_motion.kernels.device import terminations as k_term
from gym_motion.kernels.metrics import TRACKING_ERRORS
from gym_motion.managers.action import ActionManager
from gym_motion.managers.command import CommandManager
from gym_motion.managers.observation import NoiseColumns, ObservationManager, ObsTermCfg
from gym_motion.managers.reward import RewardManager, RewardTermCfg
from gym_motion.managers.state import MDPState
from gym_motion.managers.termination import TerminationManager, TerminationTermCfg

__all__ = ["DeviceMDP"]

# DLPack's device types (DLDeviceType): host memory, a CUDA device's, CUDA managed memory
_DLPACK_CPU, _DLPACK_CUDA, _DLPACK_CUDA_MANAGED = 1, 2, 13
# the library's per-frame arrays that `reference_step` reads, in its argument order
_LIBRARY_ARRAYS = ("body_pos_w", "body_quat_w", "body_lin_vel_w", "body_ang_vel_w", "joint_pos",
                   "joint_vel")  # fmt: skip


def _body_pairs(dev: DeviceBodyState, host: Any) -> list[tuple[wp.array, np.ndarray]]:
    names = ("pos_w", "quat_w", "lin_vel_w", "ang_vel_w", "joint_pos", "joint_vel")
    return [(getattr(dev, name), getattr(host, name)) for name in names]


# --------------------------------------------------------------------------------- the MDP


def _on_stream(method: Callable) -> Callable:
    """Decorator: run a `DeviceMDP` method's launches and copies on its stream (the physics
    backend's, when it has one), so that they follow the step's physics and gather in order."""

    @functools.wraps(method)
    def run(self: DeviceMDP, *args: Any, **kwargs: Any) -> Any:
        if self.stream is None:
            return method(self, *args, **kwargs)
        with wp.ScopedStream(self.stream, sync_enter=False):
            return method(self, *args, **kwargs)

    return run


class DeviceMDP:
    """The per-step MDP of N envs on a Warp device, beside the host managers it mirrors.

    Args:
        cfg: the env's `TrackingEnvCfg` (reward, termination and observation terms, noise,
            action offset).
        state: the host `MDPState` (sizes, anchor and root, default pose, soft limits).
        actions, command, rewards, terminations, observations: the host managers, whose
            buffers receive the device's results (clip frames, tracking errors, episode sums,
            fired terms, observation groups; joint targets where the backend is on the
            host).
        dt: control step, s. device: the Warp device ("cpu", "cuda:0", ...).
        robot: the robot's state on `device`, read where it is (the mjwarp backend's gather
            buffer: `MjWarpBackend.device_body_state`); None: a buffer of its own, uploaded
            from ``state.robot`` before each use.
        stream: the CUDA stream of the backend that writes `robot` (`MjWarpBackend.stream`):
            every launch and copy goes there, after the backend's; None: the device's current
            stream.
        capture: whether the step's launches and each set of observation groups' are
            captured as graphs on their second run and replayed (`GraphLauncher`; the
            backend's own choice, `MjWarpBackend.capture`, where it has one).

    Attributes:
        reads_robot_in_place: whether `robot` was given (the host's ``state.robot`` is then
            not read).
        transfer_bytes: bytes copied "to_device" and "to_host" since construction (on Warp's
            CPU device: those a GPU would move over the bus).

    Raises:
        ValueError: a term that has no device kernel, or an event term not built in (named);
            a bad term parameter.
    """

    def __init__(
        self,
        cfg: Any,
        state: MDPState,
        actions: ActionManager,
        command: CommandManager,
        rewards: RewardManager,
        terminations: TerminationManager,
        observations: ObservationManager,
        dt: float,
        device: str,
        robot: DeviceBodyState | None = None,
        stream: wp.Stream | None = None,
        capture: bool = True,
    ):
        reason = refusal(cfg)
        if reason is not None:
            raise ValueError(reason)
        self.device = device
        self.stream = stream
        self.graphs = GraphLauncher(device, stream, capture, f"the device MDP on {device}")
        self._torch_streams: dict[int, wp.Stream] = {}  # torch's streams as Warp sees them
        self.num_envs = n = state.num_envs
        self.anchor, self.root = state.anchor, state.root
        self._host = state
        self._actions = actions
        self._command, self._rewards = command, rewards
        self._terminations, self._observations = terminations, observations
        self._keep: list[wp.array] = []  # index arrays the bound launches read
        self._copies = Copies(device)
        self.transfer_bytes = self._copies.moved
        self._row_stages: dict[int, tuple[wp.array, wp.Launch]] = {}
        self._row_gathers: dict[int, tuple[wp.array, wp.Launch]] = {}
        self._host_stale = True  # the host's copies of the reference and actions lag
        b, j = len(state.body_names), state.robot.joint_pos.shape[1]
        nt, nr, ne = len(cfg.terminations), len(cfg.rewards), len(TRACKING_ERRORS)
        # what the host writes before the actions and before the step's MDP: one copy each
        self._in_act = Block(device, [("actions", (n, j), wp.float32), ("held", (n,), wp.bool)])
        self._in_step = Block(device, [
            ("self_contact_substeps", (n,), wp.int32), ("steps_since_perturbation", (n,), wp.int32),
            ("time_limit_offset", (n,), wp.int32), ("max_episode_steps", (1,), wp.int32),
            ("nonfinite", (n,), wp.bool),
            ("active", (nt,), wp.bool),
        ])  # fmt: skip
        self.reads_robot_in_place = robot is not None
        self.robot = DeviceBodyState.zeros(n, b, j, device) if robot is None else robot
        self.ref = DeviceBodyState.zeros(n, b, j, device)
        self.obs_ref = DeviceBodyState.zeros(n, b, j, device)
        self.imu_pos_b: wp.array = wp.array(state.imu_pos_b, dtype=float, device=device)
        self.ref_rel_pos_w = wp.zeros((n, b, 3), dtype=float, device=device)
        self.ref_rel_quat_w: wp.array = wp.array(state.ref_rel_quat_w, dtype=float, device=device)
        self.action = wp.zeros((n, j), dtype=float, device=device)
        self.last_action = wp.zeros((n, j), dtype=float, device=device)
        self.action_obs = wp.zeros((n, j), dtype=float, device=device)
        self.encoder_bias = wp.zeros((n, j), dtype=float, device=device)
        self._actions_in = self._in_act.arrays["actions"]
        self.targets = wp.zeros((n, j), dtype=float, device=device)
        self._bad = wp.zeros(1, dtype=wp.int32, device=device)
        self._bad_host = np.zeros(1, np.int32)
        self._scale: wp.array = wp.array(actions.scale, dtype=float, device=device)
        # where a zero action puts the joints: the default pose, or the observed reference
        self._offset: wp.array = (
            self.obs_ref.joint_pos if cfg.action_offset == "reference" else wp.array(
                np.tile(state.default_joint_pos, (n, 1)), dtype=float, device=device)
        )  # fmt: skip
        self.self_contact_substeps = self._in_step.arrays["self_contact_substeps"]
        self.steps_since_perturbation = self._in_step.arrays["steps_since_perturbation"]
        self.default_joint_pos: wp.array = wp.array(
            state.default_joint_pos, dtype=float, device=device
        )
        self.soft_joint_limits: wp.array = wp.array(
            state.soft_joint_limits, dtype=float, device=device
        )

        # the motion command: the library once, the frames per env
        lib = command.library
        lib_bodies = tuple(lib.body_names)
        body_ids = [lib_bodies.index(name) for name in state.body_names]
        self._lib: list[wp.array] = [
            wp.array(getattr(lib, name), dtype=float, device=device) for name in _LIBRARY_ARRAYS
        ]
        self._starts = self.ids(lib.starts)
        self._lengths = self.ids(lib.lengths)
        self._body_ids = self.ids(body_ids)
        # what the host reads after every step, in one block: one copy a step
        flags = ("terminated", "truncated", "clip_end_out", "done", "teleport", "any_term")
        self._out = out = Block(device, [
            *((k, (n,), wp.bool) for k in (*flags, "clip_end")),
            ("clip_ids", (n,), wp.int32), ("frames", (n,), wp.int32),
            ("episode_length", (n,), wp.int32), ("counts", (2,), wp.int32),
            ("reward", (n,), wp.float32), ("errors", (n, ne), wp.float32),
            ("columns", (nr, n), wp.float32), ("fired", (nt, n), wp.bool),
        ])  # fmt: skip
        a = out.arrays
        self.clip_ids, self.frames, self.clip_end = a["clip_ids"], a["frames"], a["clip_end"]
        self._all = self.ids(np.arange(n))
        self._rows = wp.zeros(n, dtype=int, device=device)  # rows of a refresh or reset
        self._staged_ids = np.zeros(0, np.int32)  # what `self._rows` holds
        self._advance = self._reference_step(True, self._all)
        self._refresh_all = self._reference_step(False, self._all)
        self._refresh_rows = self._reference_step(False, self._rows)  # dim set to M per use
        self._observe_all = self._observed_reference(command.observed_offset, self._all)
        self._observe_rows = self._observed_reference(command.observed_offset, self._rows)
        self._bind_rsi(command)

        # terminations, then rewards, then the end of the step
        self.fired, self.any_term = a["fired"], a["any_term"]
        self.active = self._in_step.arrays["active"]  # uploaded before every use
        self._raw = wp.zeros((nr, n), dtype=float, device=device)
        self._weights: wp.array = wp.array(
            [c.weight for c in cfg.rewards.values()], dtype=float, device=device
        )
        self.weighted = wp.zeros((n, nr), dtype=float, device=device)
        self.term_reward = wp.zeros(n, dtype=float, device=device)
        self._term_sums = wp.zeros((n, nr), dtype=wp.float64, device=device)
        self._return = wp.zeros(n, dtype=wp.float64, device=device)
        self._columns, self.errors = a["columns"], a["errors"]
        self._error_sums = wp.zeros((n, len(TRACKING_ERRORS)), dtype=wp.float64, device=device)
        # ended episodes' sums, packed (reward terms, return, tracking errors) for the host
        self._ended_sums = wp.zeros((n, nr + 1 + len(TRACKING_ERRORS)), dtype=wp.float64,
                                    device=device)  # fmt: skip
        self.episode_length = a["episode_length"]
        self._time_limit_offset = self._in_step.arrays["time_limit_offset"]
        self._flags_in = {"nonfinite": self._in_step.arrays["nonfinite"],
                          "held": self._in_act.arrays["held"]}  # fmt: skip
        self._flags_out = {k: a["clip_end_out" if k == "clip_end" else k] for k in (
            "terminated", "truncated", "clip_end", "done", "teleport")}  # fmt: skip
        self.reward, self._counts = a["reward"], a["counts"]
        self._count_bad = bound(self, k_actions.count_bad_actions, self._scale, self._offset,
                                self.encoder_bias, self._actions_in, self._bad)  # fmt: skip
        self._joint_targets = bound(
            self, k_actions.joint_targets, self._scale, self._offset, self.default_joint_pos,
            self.encoder_bias, self.action, self.last_action, self.action_obs, self.targets,
            self._actions_in, self._flags_in["held"])  # fmt: skip
        self._terms = [
            *(self._bind("termination", name, c, self.fired[k])
              for k, (name, c) in enumerate(cfg.terminations.items())),
            launch(self, k_term.any_fired, self.fired, self.active, self.any_term),
            *(self._bind("reward", name, c, self._raw[k])
              for k, (name, c) in enumerate(cfg.rewards.items())),
            launch(self, k_rewards.weigh_terms, self._raw, self._weights, float(dt),
                   self.weighted, self.term_reward),
        ]  # fmt: skip
        self._dt = float(dt)
        f = self._flags_out
        self._end_step = bound(
            self, k_episode.end_step, self.any_term, self._flags_in["nonfinite"],
            self.term_reward, self.clip_end, self._flags_in["held"], self.episode_length,
            self._time_limit_offset, self._in_step.arrays["max_episode_steps"], f["terminated"],
            f["truncated"], self.reward, f["clip_end"], f["done"], f["teleport"],
            self._counts)  # fmt: skip
        self._errors = launch(
            self, k_metrics.tracking_errors, self.ref.pos_w, self.ref.quat_w,
            self.ref_rel_pos_w, self.ref_rel_quat_w, self.robot.pos_w, self.robot.quat_w,
            self.anchor, self.root, self.ref.joint_pos, self.ref.joint_vel,
            self.robot.joint_pos, self.robot.joint_vel, self.errors, self._error_sums,
        )  # fmt: skip
        self._sums = launch(self, k_rewards.add_episode_sums, self.weighted, float(dt),
                            self._term_sums, self._return, self.reward, self._columns)  # fmt: skip
        # per reset: rows self._rows[:M] (dims set to M per use)
        self._gather_sums = bound(self, k_episode.gather_episode_rows, self._rows,
                                  self._term_sums, self._return, self._error_sums,
                                  self._ended_sums)  # fmt: skip
        self._clear_rows = bound(
            self, k_episode.clear_episode_rows, self._rows, self._term_sums, self._return,
            self._error_sums, self.episode_length, self.action, self.last_action,
            self.action_obs)  # fmt: skip

        # observation groups: terms, then noise, then each term's clip and scale
        self.buffers: dict[str, wp.array] = {}
        self._group_terms: dict[str, list[Launch]] = {}
        self._post_terms: dict[str, list[Launch]] = {}
        self._observed: tuple[str, ...] = ()  # the groups the last `observations` computed
        self._noise: dict[str, wp.Launch | None] = {}  # the draw, its seed in self._seeds
        self._seeds = wp.zeros(len(cfg.observations), dtype=int, device=device)
        self._seed_values = np.zeros(len(cfg.observations), np.int32)
        self._seed_of = {g: k for k, g in enumerate(cfg.observations)}
        for group, terms in cfg.observations.items():
            self._bind_group(group, terms, cfg.obs_noise)
        wp.synchronize_device(device)  # the buffers above are set before any stream reads them

    # ------------------------------------------------------------------ binding
    def ids(self, values: Any) -> wp.array:
        """`values` as a device int array (kept alive as long as this MDP)."""
        arr: wp.array = wp.array(
            np.asarray(values, np.int32).reshape(-1), dtype=int, device=self.device
        )
        self._keep.append(arr)
        return arr

    def _bind(
        self, kind: str, name: str, cfg: RewardTermCfg | TerminationTermCfg, out: wp.array
    ) -> Launch:
        params = self._host.resolve_term_params(cfg.params)
        return binder(kind, name, cfg.func)(self, out, **params)

    def _bind_group(self, group: str, terms: dict[str, ObsTermCfg], noise: bool) -> None:
        n = self.num_envs
        dim = sum(t.dim for t in terms.values())
        buf = self.buffers[group] = wp.zeros((n, dim), dtype=float, device=self.device)
        launches, post, noisy = [], [], []
        start = 0
        for name, t in terms.items():
            bind = binder("observation", f"{group}/{name}", t.func)
            launches.append(bind(self, buf, start))
            sl = slice(start, start + t.dim)
            if noise and t.noise:
                noisy.append((sl, t.noise))
            if t.clip is not None or t.scale is not None:
                low, high = t.clip if t.clip is not None else (0.0, 0.0)
                post.append(launch(
                    self, k_obs.clip_scale, buf, sl.start, sl.stop, float(low), float(high),
                    t.clip is not None, float(t.scale or 1.0), t.scale is not None))  # fmt: skip
            start += t.dim
        self._noise[group] = None
        if noisy:
            c = NoiseColumns.of(noisy, n)
            scale: wp.array = wp.array(c.scale, dtype=float, device=self.device)
            self._keep.append(scale)
            k = self._seed_of[group]
            self._noise[group] = bound(self, k_obs.add_drawn_uniform_noise, buf,
                                       self._seeds[k : k + 1], self.ids(c.column),
                                       scale)  # fmt: skip
        self._group_terms[group] = launches
        self._post_terms[group] = post

    def _bind_rsi(self, command: CommandManager) -> None:
        """RSI's buffers and launches (`sample_states`): per reset, rows ``self._rows[:M]``,
        their starts and uniforms in, their qpos and qvel out (dims set to M per use)."""
        n, lay, dev = self.num_envs, command.layout, self.device
        self._start_in = wp.zeros((n, 2), dtype=wp.int32, device=dev)
        self._unit_in = wp.zeros((n, 12 + lay.num_joints), dtype=wp.float64, device=dev)
        self._library_frames = wp.zeros(n, dtype=int, device=dev)
        # columns not of the robot stay at qpos0, as on the host
        self._rsi_qpos: wp.array = wp.array(np.tile(lay.qpos0, (n, 1)), dtype=wp.float64,
                                            device=dev)  # fmt: skip
        self._rsi_qvel = wp.zeros((n, lay.nv), dtype=wp.float64, device=dev)
        self._rsi_ranges = [wp.zeros(r.shape, dtype=wp.float64, device=dev)
                            for r in command.rsi_ranges]  # fmt: skip
        self._rsi_ranges_of: tuple[Any, ...] = (None,) * 3  # the host arrays last uploaded
        self._point_rows = bound(self, k_reset.point_rows, self._rows, self._start_in,
                                 self._starts, self.clip_ids, self.frames, self.clip_end,
                                 self._library_frames)  # fmt: skip
        self._rsi = bound(
            self, k_reset.rsi_state, *self._lib, command.library_root, self._library_frames,
            self._unit_in, *self._rsi_ranges, self.soft_joint_limits, lay.root_qpos_adr,
            lay.root_dof_adr, self.ids(lay.qpos_adr), self.ids(lay.dof_adr), self._rsi_qpos,
            self._rsi_qvel)  # fmt: skip

    def _reference_step(self, advance: bool, env_ids: wp.array) -> wp.Launch:
        lib = self._lib
        return wp.launch(
            k_command.reference_step,
            dim=self.num_envs,
            inputs=[
                self._starts, self._lengths, self.clip_ids, self.frames, advance, self.clip_end,
                *lib, self._body_ids, self.anchor, self.robot.pos_w[:, self.anchor],
                self.robot.quat_w[:, self.anchor], env_ids,
                self.ref.pos_w, self.ref.quat_w, self.ref.lin_vel_w, self.ref.ang_vel_w,
                self.ref.joint_pos, self.ref.joint_vel, self.ref_rel_pos_w, self.ref_rel_quat_w,
            ],
            device=self.device,
            record_cmd=True,
        )  # fmt: skip

    def _observed_reference(self, offset: int, env_ids: wp.array) -> wp.Launch:
        o = self.obs_ref
        return wp.launch(
            k_command.observed_reference,
            dim=self.num_envs,
            inputs=[
                self._starts, self._lengths, self.clip_ids, self.frames, offset, *self._lib,
                self._body_ids, env_ids, o.pos_w, o.quat_w, o.lin_vel_w, o.ang_vel_w,
                o.joint_pos, o.joint_vel,
            ],
            device=self.device,
            record_cmd=True,
        )  # fmt: skip

    # ------------------------------------------------------------------ host <-> device
    def _upload_inputs(self, every: bool, extra: dict[str, Any] | None = None) -> None:
        """Copy what the host owns to the device: the robot state (unless read in place),
        self-contact counts, steps since the last perturbation and the active terminations (a
        step changes them all), and with `every` the encoder bias (which only episode starts
        change) too; `extra`: more arrays of the step's input block (the blow-up flags, time
        limit offsets, the time limit)."""
        s = self._host
        pairs = _body_pairs(self.robot, s.robot) if not self.reads_robot_in_place else []
        if every:
            pairs.append((self.encoder_bias, s.encoder_bias))
        if pairs:
            self._copies.upload(pairs)
        self._copies.upload_block(self._in_step, {
            "self_contact_substeps": s.self_contact_substeps,
            "steps_since_perturbation": s.steps_since_perturbation,
            "active": self._terminations.active, **(extra or {})})  # fmt: skip

    def _upload_rows(self, m: int, ids: np.ndarray) -> None:
        """Copy rows `ids` (M,) of what the host writes at a reset or push (robot state
        unless read in place, encoder bias, steps since the last perturbation) to the device;
        their device ids are staged in ``self._rows``."""
        s = self._host
        floats = _body_pairs(self.robot, s.robot) if not self.reads_robot_in_place else []
        floats.append((self.encoder_bias, s.encoder_bias))
        for dev, host in floats:
            stage, scatter = self._row_scatter(dev)
            self._copies.upload_rows(stage, host[ids].reshape(m, -1))
            scatter.set_dim((m, stage.shape[1]))
            scatter.launch()
        since = self.steps_since_perturbation
        stage, scatter = self._row_scatter(since)
        self._copies.upload_rows(stage, s.steps_since_perturbation[ids])
        scatter.set_dim(m)
        scatter.launch()

    def _row_scatter(self, dev: wp.array) -> tuple[wp.array, wp.Launch]:
        """For rows on their way into `dev` (one of this MDP's buffers): a device buffer of
        its rows, flattened, and the bound scatter from its first rows (`self._rows`) into
        `dev` (dim set to the rows' count per use)."""
        made = self._row_stages.get(id(dev))
        if made is None:
            n = self.num_envs
            if dev.dtype == wp.int32:
                stage = wp.empty(n, dtype=wp.int32, device=self.device)
                scatter = bound(self, k_episode.scatter_row_counts, self._rows, stage, dev)
            else:
                flat = dev.reshape((n, -1))
                stage = wp.empty(flat.shape, dtype=dev.dtype, device=self.device)
                scatter = bound(self, k_episode.scatter_rows, self._rows, stage, flat,
                                dim=flat.shape)  # fmt: skip
            made = self._row_stages[id(dev)] = (stage, scatter)
        return made

    @_on_stream
    def sync_host(self) -> None:
        """Bring the host's copies of what the device owns (``state.ref``, ``obs_ref``,
        ``ref_rel_*``, the
        action history ``action``, ``last_action``, ``action_obs``) up to date, if a step or
        refresh changed them since the last sync (`TrackingVecEnv.state` calls it: rendering,
        evaluation and the viewer read them)."""
        if self._host_stale:
            s = self._host
            history = [(getattr(self, k), getattr(s, k))
                       for k in ("action", "last_action", "action_obs")]  # fmt: skip
            self._copies.download([*self._reference_pairs(), *history])
            self._host_stale = False

    def _frame_pairs(self) -> list[tuple[wp.array, np.ndarray]]:
        c = self._command
        return [(self.clip_ids, c.clip_ids), (self.frames, c.frames), (self.clip_end, c.clip_end)]

    def _reference_pairs(self) -> list[tuple[wp.array, np.ndarray]]:
        s = self._host
        return [*_body_pairs(self.ref, s.ref), *_body_pairs(self.obs_ref, s.obs_ref),
                (self.ref_rel_pos_w, s.ref_rel_pos_w),
                (self.ref_rel_quat_w, s.ref_rel_quat_w)]  # fmt: skip

    # ------------------------------------------------------------------ the step
    def _device_actions(self, actions: Any) -> wp.array | None:
        """`actions` as a Warp array on this MDP's device, read where they are; None for
        values the host holds (NumPy, lists, CPU tensors beside a GPU MDP; and on Warp's CPU
        device any but float32 arrays), which go through NumPy as the host MDP takes them.

        Raises:
            ValueError: actions on a GPU other than this MDP's device.
        """
        mine = wp.get_device(self.device)
        if isinstance(actions, np.ndarray) or not hasattr(actions, "__dlpack_device__"):
            return None
        kind, index = actions.__dlpack_device__()
        kind = int(kind)
        if kind in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED):
            if not (mine.is_cuda and int(index) == mine.ordinal):
                raise ValueError(f"actions on cuda:{int(index)}, but the device MDP runs on "
                                 f"{self.device}: move them there or to the host")  # fmt: skip
        elif kind != _DLPACK_CPU or mine.is_cuda:
            return None
        arr = actions if isinstance(actions, wp.array) else wp.from_dlpack(actions)
        if not isinstance(arr, wp.array) or (mine.is_cpu and arr.dtype != wp.float32):
            return None
        return arr

    def wait_for_other_streams(self) -> None:
        """On a GPU, make this MDP's stream (the backend's) wait for the work queued so far on
        the device's other current streams, Warp's and, where torch is loaded, torch's: what a
        learner launched before a step or reset (reading the last results, writing actions) is
        done before the env overwrites or reads it. Call outside the MDP's own methods."""
        if self.stream is None:
            return
        device = wp.get_device(self.device)
        others = [device.stream]
        torch = sys.modules.get("torch")
        # not is_available(): that would start torch's CUDA runtime in a process that only
        # imported torch; one that has not started has queued nothing
        if torch is not None and torch.cuda.is_initialized():
            current = torch.cuda.current_stream(device.ordinal)
            wrapped = self._torch_streams.get(current.cuda_stream)
            if wrapped is None:  # Warp's handle on torch's stream, made once per stream
                wrapped = self._torch_streams[current.cuda_stream] = wp.stream_from_torch(current)
            others.append(wrapped)
        # under the device's context: torch's legacy default stream is handle 0, which CUDA
        # resolves in the current context (another GPU's, in a process that uses several)
        with wp.ScopedDevice(device):
            for other in others:
                if other.cuda_stream != self.stream.cuda_stream:
                    self.stream.wait_stream(other)

    @_on_stream
    def act(self, actions: Any, held: np.ndarray) -> wp.array | np.ndarray:
        """Actions -> joint position targets, on the device
        (`gym_motion.kernels.device.actions`, the twin of `ActionManager.process`):
        ``last_action <- action <- actions`` (rows `held` zeroed), ``targets = action scale +
        offset - encoder_bias`` and the observed action.

        Args:
            actions: (N, J) NumPy array (float32, or float64 cast to float32), or a float32
                array on this device: a ``wp.array``, or what Warp reads through DLPack (a
                torch tensor).
            held: (N,) bool, rows being autoreset this step.

        Returns:
            The (N, J) float32 targets, rad, where the backend reads them: this MDP's device
            array when it reads the robot state in place (the mjwarp backend on the same
            device), else the host `ActionManager.targets` (copied there).

        Raises:
            ValueError: wrong shape, dtype or device; values not finite as float32, or targets
                beyond +-1e10 rad (the rows named, as `ActionManager.process` names them).
        """
        n, j = self._actions_in.shape
        arr = self._device_actions(actions)
        if arr is None:  # host values, as the host MDP takes them: one copy with `held`
            host = self._actions.as_array(actions)
            with np.errstate(over="ignore"):  # beyond float32: inf, refused below
                self._copies.upload_block(self._in_act, {"actions": host, "held": held})
        else:
            if arr.shape != (n, j):  # the host MDP's words
                raise ValueError(f"actions must have shape {(n, j)}, got {arr.shape}")
            if arr.dtype != wp.float32:
                raise ValueError(f"actions on {self.device} must be float32, got "
                                 f"{wp.types.type_repr(arr.dtype)}")  # fmt: skip
            self._copies.upload([(self._flags_in["held"], held)])
            wp.copy(self._actions_in, arr)
        self._bad.zero_()
        self._count_bad.launch()
        self._copies.download([(self._bad, self._bad_host)])
        if self._bad_host[0]:
            self.sync_host()  # the offset of residual actions: the observed reference
            refused = np.empty((n, j), np.float32)
            self._copies.download([(self._actions_in, refused)])
            raise ValueError(self._actions.refusal(refused))
        self._joint_targets.launch()
        self._host_stale = True
        if self.reads_robot_in_place:
            return self.targets
        self._copies.download([(self.targets, self._actions.targets)])
        return self._actions.targets

    @_on_stream
    def step(
        self,
        held: np.ndarray,
        nonfinite: np.ndarray,
        time_limit_offset: np.ndarray,
        max_episode_steps: int,
        episode_length: np.ndarray,
        out: dict[str, np.ndarray],
    ) -> tuple[int, int, np.ndarray]:
        """One control step's MDP after physics: the command advances, terminations, rewards,
        the end of the step (`gym_motion.kernels.episode.end_step`), tracking errors and
        episode sums.

        Args:
            held: (N,) bool rows being autoreset this step. nonfinite: (N,) bool rows whose
                physics blew up. time_limit_offset: (N,) int32. max_episode_steps: int.
            episode_length: (N,) int32, the host's episode lengths, overwritten with the
                device's (one more for every row).
            out: (N,) host arrays "terminated", "truncated", "clip_end", "done",
                "teleport" (bool) and "reward" (float32), filled in place.

        Returns:
            (done rows, teleport rows, the step's weighted terms (K, N) float32, a new array).
            The host managers' mirrors (clip frames, fired terms, tracking errors) are updated;
            the reference's and the action history's when read (`sync_host`).
        """
        self._upload_inputs(every=False, extra={
            "nonfinite": nonfinite, "time_limit_offset": time_limit_offset,
            "max_episode_steps": max_episode_steps})  # fmt: skip
        self.graphs.run("step", self._step_sequence)
        f = self._flags_out
        c, t = self._command, self._terminations
        self._copies.download_block(self._out)
        got = self._out.host
        for key in f:
            np.copyto(out[key], got["clip_end_out" if key == "clip_end" else key])
        for host, key in ((out["reward"], "reward"), (episode_length, "episode_length"),
                          (c.clip_ids, "clip_ids"), (c.frames, "frames"),
                          (c.clip_end, "clip_end"), (c.errors, "errors"), (t.fired, "fired"),
                          (t.terminated, "any_term")):  # fmt: skip
            np.copyto(host, got[key], casting="unsafe")
        self._host_stale = True
        counts = got["counts"]
        return int(counts[0]), int(counts[1]), got["columns"].copy()

    def _step_sequence(self) -> None:
        """The step's launches between its uploads and its downloads (one graph replayed)."""
        self._counts.zero_()
        self._advance.launch()
        self._observe_all.launch()
        for run in self._terms:
            run()
        self._end_step.launch()
        self._errors()
        self._sums()

    def results(self) -> dict[str, wp.array]:
        """The observation groups the last `observations` computed, and "reward",
        "terminated" and "truncated" of the last step, on the device
        (`TrackingVecEnv.device_arrays`)."""
        f = self._flags_out
        out = {g: self.buffers[g] for g in self._observed}
        out.update(reward=self.reward, terminated=f["terminated"], truncated=f["truncated"])
        return out

    @_on_stream
    def download_sums(self, ids: np.ndarray) -> None:
        """Copy the episode sums (reward terms, return, tracking errors) of rows `ids` (M,),
        the episodes that ended, into those rows of the host managers' buffers, which their
        ``episode_log`` reads (one packed copy of M rows)."""
        m = self._stage_rows(ids)
        if not m:
            return
        self._gather_sums.set_dim(m)
        self._gather_sums.launch()
        rows = self._copies.download_rows(self._ended_sums, m)
        k = self._term_sums.shape[1]
        self._rewards.term_sums[ids] = rows[:, :k]
        self._rewards.episode_return[ids] = rows[:, k]
        self._command.error_sums[ids] = rows[:, k + 1 :]

    @_on_stream
    def sample_states(
        self, ids: np.ndarray, rng: np.random.Generator, start: tuple[int, int] | None = None
    ) -> tuple[wp.array | np.ndarray, wp.array | np.ndarray]:
        """Reference state initialisation of rows `ids` (M,), the twin of
        `CommandManager.sample_states`: the same draws from `rng` on the host, in its order
        (each row's start from the sampler, or `start`; then its uniforms), the rows pointed
        at their starts on both sides, and the state computed on the device
        (`gym_motion.kernels.device.reset`, float64 as on the host). Up the bus: the ids,
        starts and uniforms, M (3 + 12 + J) values.

        Returns:
            (qpos, qvel) for the backend's `write_state`: this device's float64 (N, nq) and
            (N, nv) buffers, whose first M rows hold the rows, when the backend reads from this
            device (the robot state is read in place); else (M, nq) and (M, nv) float64 NumPy
            arrays, copied from them.

        Raises:
            ValueError: a `start` outside the library (`CommandManager.check_start`).
        """
        c = self._command
        clip_ids, frames = c.draw_starts(ids, rng, start)
        m = int(np.size(ids))
        unit = c.draw_rsi_noise(m, rng)
        if m:
            ranges = c.rsi_ranges
            if any(a is not b for a, b in zip(ranges, self._rsi_ranges_of, strict=True)):
                self._copies.upload(list(zip(self._rsi_ranges, ranges, strict=True)))
                self._rsi_ranges_of = ranges
            self._stage_rows(ids)
            self._copies.upload_rows(self._start_in, np.stack([clip_ids, frames], axis=1))
            self._copies.upload_rows(self._unit_in, unit)
            for bound_launch in (self._point_rows, self._rsi):
                bound_launch.set_dim(m)
                bound_launch.launch()
        if self.reads_robot_in_place:
            return self._rsi_qpos, self._rsi_qvel
        qpos = self._copies.download_rows(self._rsi_qpos, m).copy()
        return qpos, self._copies.download_rows(self._rsi_qvel, m).copy()

    @_on_stream
    def start_episodes(self, ids: np.ndarray) -> None:
        """New episodes on rows `ids` (M,): their sums, lengths and action history set to
        0."""
        m = self._stage_rows(ids)
        if m:
            self._clear_rows.set_dim(m)
            self._clear_rows.launch()
            self._host_stale = True

    @_on_stream
    def refresh(self, ids: np.ndarray | None = None) -> None:
        """After rows were written (a reset, an event), or every row (None): copy what the
        host wrote to the device (every input and the host's clip frames, or those rows' robot
        state unless read in place, encoder bias and steps since the last perturbation), then
        gather the reference at the rows' frames (`sample_states` set them on both sides) and
        re-anchor it on the robot there."""
        if ids is None:
            self._copies.upload(self._frame_pairs())
            self._upload_inputs(every=True)
            self._refresh_all.launch()
            self._observe_all.launch()
        else:
            m = self._stage_rows(ids)
            if m:
                self._upload_rows(m, np.asarray(ids))
                for rows in (self._refresh_rows, self._observe_rows):
                    rows.set_dim(m)
                    rows.launch()
        self._host_stale = True

    def _group_sequence(self, groups: tuple[str, ...]) -> None:
        """The launches of observation groups `groups` (one graph per set of groups)."""
        for group in groups:
            for run in self._group_terms[group]:
                run()
            noise = self._noise[group]
            if noise is not None:
                noise.launch()
            for run in self._post_terms[group]:
                run()

    @_on_stream
    def upload_observations(self, group: str) -> None:
        """Copy the host manager's buffer of observation group `group` to the device's (a
        masked `reset` writes back the other envs' last observations there); complete on
        return, for a learner's stream to read."""
        self._copies.upload([(self.buffers[group], self._observations.buffers[group])])
        self._copies.wait(self.buffers[group])

    @_on_stream
    def observation_rows(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        """Rows `ids` (M,) of the observation groups the last `observations` computed, copied
        to the host in one packed copy per group: group -> (M, D) float32 (views of staging
        buffers, valid until the next call)."""
        m = self._stage_rows(ids)
        rows = {}
        for group in self._observed:
            buf = self.buffers[group]
            packed, gather = self._row_gather(buf)
            gather.set_dim((m, buf.shape[1]))
            gather.launch()
            rows[group] = self._copies.download_rows(packed, m)
        return rows

    def _row_gather(self, buf: wp.array) -> tuple[wp.array, wp.Launch]:
        """A device buffer for rows of `buf` (N, D) packed, and the bound gather of rows
        ``self._rows`` into it (dim set per use)."""
        made = self._row_gathers.get(id(buf))
        if made is None:
            packed = wp.empty(buf.shape, dtype=buf.dtype, device=self.device)
            gather = bound(self, k_episode.gather_rows, self._rows, buf, packed,
                           dim=buf.shape)  # fmt: skip
            made = self._row_gathers[id(buf)] = (packed, gather)
        return made

    @_on_stream
    def download_observations(self, groups: tuple[str, ...]) -> None:
        """Copy the device's observation groups `groups` into the host manager's buffers (a
        masked `reset` after `step_on_device`, which left them on the device)."""
        host = self._observations.buffers
        self._copies.download([(self.buffers[g], host[g]) for g in groups])

    def _stage_rows(self, ids: np.ndarray) -> int:
        """Row ids (M,) into ``self._rows``, unless they are there already (a step's ended
        rows are usually its restarted, re-initialised and refreshed rows: one copy, and no
        wait for the copy before it to free the staging buffer); returns M."""
        rows = np.asarray(ids, np.int32).reshape(-1)
        m = rows.size
        if m and not np.array_equal(rows, self._staged_ids):
            self._copies.upload_rows(self._rows, rows)
            self._staged_ids = rows.copy()
        return m

    @_on_stream
    def observations(
        self, rng: np.random.Generator, groups: tuple[str, ...] | None = None,
        download: bool = True,
    ) -> dict[str, np.ndarray]:  # fmt: skip
        """Fill the groups `groups` (all when None) on the device and, with `download`, copy
        them into the host manager's buffers; returns those buffers (owned: copy before
        handing out; without `download` they hold what they held, and the device's groups
        are complete on return, for a learner's stream to read).

        Noise: each noisy group takes one seed from `rng` per call and draws its uniforms on
        the device (`gym_motion.kernels.device.observations.add_drawn_uniform_noise`), where
        the host MDP draws N x C floats from `rng`: with noise on, the two MDPs draw different
        noise and their streams part (the same seed still gives the same run)."""
        host = self._observations.buffers
        self._observed = groups = groups or tuple(self.buffers)
        noisy = [g for g in groups if self._noise[g] is not None]
        for group in noisy:  # one seed from the env's stream per group, the draws on the device
            self._seed_values[self._seed_of[group]] = rng.integers(0, 2**31 - 1)
        if noisy:
            self._copies.upload([(self._seeds, self._seed_values)])
        self.graphs.run("observations:" + ",".join(groups), lambda: self._group_sequence(groups))
        if download:
            self._copies.download([(self.buffers[g], host[g]) for g in self._observed])
        else:  # complete when read from another stream (a learner's)
            self._copies.wait(self.buffers[self._observed[0]])
        return host
