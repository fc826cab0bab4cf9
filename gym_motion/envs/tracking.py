"""`TrackingVecEnv`: the motion-tracking task as one batched `gymnasium.vector.VectorEnv`.

This file holds the MDP top to bottom: what the env is built of (`build_parts`, unpacked by
`TrackingVecEnv.__init__` into annotated attributes), `reset`, `step` and the episode
bookkeeping they share. Three parts live apart as mixins that declare every attribute they read
and write: the vector-API plumbing (`gym_motion.envs.vector_api`), rendering
(`gym_motion.envs.rendering`) and the time limit (`gym_motion.envs.time_limit`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any

import mujoco
import numpy as np
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode, VectorEnv

from gym_motion import config_values as cv
from gym_motion.backends import make_backend
from gym_motion.backends.base import SimBackend
from gym_motion.backends.threads import NumbaThreads
from gym_motion.envs import info as infos
from gym_motion.envs.config import OBSERVED_OFFSET, TrackingEnvCfg
from gym_motion.envs.fork import choose_async_start_method
from gym_motion.envs.rendering import RenderMixin
from gym_motion.envs.time_limit import TimeLimitMixin
from gym_motion.envs.vector_api import ACTION_BOUND, VectorApiMixin, box_bound, parse_autoreset_mode
from gym_motion.kernels.episode import end_step
from gym_motion.managers.action import ActionManager
from gym_motion.managers.command import CommandManager
from gym_motion.managers.events import EventContext, EventManager
from gym_motion.managers.observation import ObservationManager
from gym_motion.managers.reward import RewardManager
from gym_motion.managers.state import MDPState
from gym_motion.managers.termination import TerminationManager
from gym_motion.motion.library import MotionLibrary, Playback
from gym_motion.render import RENDER_MODES, RenderCfg
from gym_motion.robots.layout import JointLayout
from gym_motion.robots.spec import body_ids

if TYPE_CHECKING:
    from gym_motion.envs.device_mdp import DeviceMDP

__all__ = [
    "ACTION_BOUND",
    "PHASES",
    "EnvParts",
    "TrackingVecEnv",
    "build_parts",
    "runs_mdp_on_device",
]

_NO_ROWS = np.zeros(0, np.int64)  # an empty row selection (never written)
_NO_ROWS.flags.writeable = False
_NO_FLAGS = np.zeros(0, bool)
_NO_FLAGS.flags.writeable = False
PHASES = ("action", "physics", "copy", "command", "termination", "reward", "reset", "observation")

Motion = str | os.PathLike | Sequence[str | os.PathLike] | MotionLibrary | None


@dataclass(frozen=True)
class EnvParts:
    """What a `TrackingVecEnv` is built of (`build_parts`).

    Attributes:
        library: the `MotionLibrary` at the control rate. model: the compiled ``MjModel``.
        layout: the robot's `JointLayout` in `model` (robot order <-> the model's columns).
        backend: the `SimBackend` of N envs. numba_threads: Numba's pool sized to the batch
            (`NumbaThreads`; its ``serial`` is the kernel build every manager bound).
        state: the `MDPState` every manager reads and writes. actions, command, rewards,
            terminations, events, observations: the managers.
        device_mdp: the `DeviceMDP` that runs the managers' per-step math on a Warp device
            (`runs_mdp_on_device`), mirroring their buffers; else None.
    """

    library: MotionLibrary
    model: mujoco.MjModel
    layout: JointLayout
    backend: SimBackend
    numba_threads: NumbaThreads
    state: MDPState
    actions: ActionManager
    command: CommandManager
    rewards: RewardManager
    terminations: TerminationManager
    events: EventManager
    observations: ObservationManager
    device_mdp: DeviceMDP | None = None


def runs_mdp_on_device(cfg: TrackingEnvCfg, backend_device: str) -> bool:
    """Whether the device MDP runs task `cfg` on a backend on Warp device `backend_device`
    ("cpu" for the CPU backends): ``cfg.backend.mdp == "device"``, or "auto" on mjwarp on a
    CUDA device (there the MDP's per-step math is Warp kernels beside the physics), unless the
    task has a term or event of its own (`gym_motion.envs.device_terms.refusal`): then the
    host MDP runs it, with a warning naming the term."""
    mdp = cfg.backend.mdp
    if mdp != "auto":
        return mdp == "device"
    if cfg.backend.name != "mjwarp" or not backend_device.startswith("cuda"):
        return False
    from gym_motion.envs.device_terms import refusal

    reason = refusal(cfg)
    if reason is not None:
        warnings.warn(f"the MDP runs on the host, beside MuJoCo Warp on {backend_device}: "
                      f"{reason}", stacklevel=3)  # fmt: skip
    return reason is None


def build_parts(
    cfg: TrackingEnvCfg, num_envs: int, dt: float, motion: Motion, playback: Playback | str
) -> EnvParts:
    """Build every part of an env of `num_envs` envs on `cfg` at control step `dt` (s), its
    clips from `motion` played as `playback` (`MotionLibrary.load`), and size Numba's pool to
    the batch; the managers bind the kernel build that implies, once.

    Raises:
        ValueError: a motion library whose joints or rate do not fit, a bad backend setting.
    """
    robot, n = cfg.robot, num_envs
    library = MotionLibrary.load(motion, robot, 1.0 / dt, playback)
    model = robot.build_model(floor=True)
    model.opt.timestep = cfg.sim.physics_dt
    layout = robot.layout(model)
    backend = make_backend(
        cfg.backend.name,
        model,
        n,
        body_ids(model, robot.tracked_bodies),
        layout.joint_ids,
        decimation=cfg.sim.decimation,
        self_contact_threshold=cfg.sim.self_contact_threshold,
        **cfg.backend.kwargs(),
    )
    # after make_backend, which sized this thread's Numba pool (the ceiling) to the budget
    threads = NumbaThreads.for_rows(n)
    serial = threads.serial
    state = MDPState.for_robot(robot, model, n)
    ctx = EventContext.for_robot(state, backend, robot, model)
    parts = EnvParts(
        library=library,
        model=model,
        layout=layout,
        backend=backend,
        numba_threads=threads,
        state=state,
        actions=ActionManager(state, robot.action_scale, cfg.action_offset, serial=serial),
        command=CommandManager(
            library,
            state,
            robot.root_body,
            cfg.sampling,
            cfg.reset,
            dt,
            layout=layout,
            serial=serial,
            observed_offset=OBSERVED_OFFSET[cfg.observed_frame],
        ),  # fmt: skip
        rewards=RewardManager(cfg.rewards, state, dt, serial=serial),
        terminations=TerminationManager(cfg.terminations, state, serial=serial),
        events=EventManager(cfg.events, ctx, dt, serial=serial),
        observations=ObservationManager(cfg.observations, state, cfg.obs_noise, serial=serial),
    )
    device = getattr(backend, "device", "cpu")
    if runs_mdp_on_device(cfg, device):
        parts = dataclasses.replace(parts, device_mdp=_device_mdp(cfg, parts, dt, device))
    return parts


def _device_mdp(cfg: TrackingEnvCfg, parts: EnvParts, dt: float, device: str) -> DeviceMDP | None:
    """The `DeviceMDP` mirroring `parts`' managers on Warp device `device`: on mjwarp's device
    reading its gather buffer, beside the other backends on Warp's CPU device. With
    ``mdp="auto"`` one that cannot be built (its kernels compiled for the device, its buffers
    allocated) leaves the host MDP in charge, with a warning that gives the error; with
    ``mdp="device"`` the error is raised."""
    from gym_motion.envs.device_mdp import DeviceMDP

    backend = parts.backend
    in_place = getattr(backend, "device_body_state", None)
    try:
        return DeviceMDP(cfg, parts.state, parts.actions, parts.command, parts.rewards,
                         parts.terminations, parts.observations, dt, device,
                         in_place() if in_place is not None else None,
                         getattr(backend, "stream", None),
                         getattr(backend, "capture", True))  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - Warp's compilers and CUDA raise several kinds
        if cfg.backend.mdp != "auto":
            raise
        warnings.warn(f"the MDP runs on the host, beside MuJoCo Warp on {device}: the device "
                      f"MDP could not be built there ({type(exc).__name__}: {exc})",
                      stacklevel=4)  # fmt: skip
        return None


def on_batch_threads(method: Callable) -> Callable:
    """Decorator: run an env method with Numba's pool sized to the env's batch
    (``self._numba_threads``, a `NumbaThreads`): one thread below 2048 rows, so small batches
    wake no worker; kernels called through a `RowKernel` (resets, sampling) pick their build
    from it, the one the managers bound."""

    @functools.wraps(method)
    def sized(self, *args, **kwargs):
        with self._numba_threads:
            return method(self, *args, **kwargs)

    return sized


class TrackingVecEnv(VectorApiMixin, RenderMixin, TimeLimitMixin, VectorEnv):
    """N robots (the G1 by default) tracking reference motion clips, stepped as one batch.

    Observation: ``Box(160,)`` float32 policy observation (154 without state estimation; 6
    more in both groups with ``cfg.anchor_velocity_obs``), or with ``obs_mode="dict"`` a Dict
    of "policy" and "critic" (286) groups. Action:
    ``Box(-10, 10, (J,), float32)`` (`ACTION_BOUND`, or ``action_bound``; not clipped), joint
    position offsets scaled by the robot's action scale around its default pose (docs/task.md
    section 6).
    Reward: sum of the configured terms times the control step 0.02 s.

    Step order (one control step):
      1. actions -> joint position targets (default + scale * action - encoder bias);
      2. physics: `decimation` substeps on the backend, then one fused copy of the body state;
         rows whose state went non-finite are re-initialised at once (never observed);
      3. command: the motion advances one frame; the reference is gathered and re-anchored;
      4. terminations, then rewards (zero for non-finite rows), tracking errors, episode sums;
      5. interval events (pushes); the adaptive sampler sees the finished episodes;
      6. reset rows: finished episodes (per the autoreset mode) and envs past their clip's end
         (re-initialised on a new frame, the episode goes on); every state write is followed by
         a fresh copy and re-anchoring before anything reads it;
      7. observations.

    Info: per-env arrays with ``_key`` masks, per-step ``reward/<term>`` and, for envs whose
    episode ended, ``final/...`` episode results; the schema is in `gym_motion.envs.info`.

    Args:
        num_envs: N.
        motion: clip path(s) (npz), a folder of npz, or a `MotionLibrary`; default: the
            embedded default motion.
        backend: "mujoco" (CPU threads) or "mjwarp"; default ``cfg.backend.name``.
        cfg: the task, robot and backend; default `TrackingEnvCfg()`.
        autoreset_mode: NEXT_STEP (default), SAME_STEP or DISABLED (or "next_step", ...).
        obs_mode: "policy" (flat Box) or "dict" (policy and critic groups).
        state_estimation: overrides cfg.state_estimation (False: 154-value policy observation).
        max_episode_steps: time limit in control steps (truncation, with the episode results
            in ``final/...``); default cfg.episode_length_s / dt. ``gymnasium.make_vec`` and
            ``gymnasium.make`` pass theirs here; ``env.spec.max_episode_steps`` reports it.
        seed: seed of the first `reset`.
        model_path: an MJCF of the robot to use instead of the spec's (names are checked;
            clips are validated against it).
        backend_kwargs: backend settings of `BackendCfg` (``num_threads``, ``cpu_ids``,
            ``device``, ``nconmax``, ``njmax``, ``on_overflow``), over ``cfg.backend``.
        render_mode: None or "rgb_array": `render` returns one frame per env (as gymnasium's
            `SyncVectorEnv`), (H, W, 3) uint8 each: the robot and its reference pose as a
            translucent ghost, from a camera on the anchor body (`gym_motion.render`). Needs
            an OpenGL context (``MUJOCO_GL=egl`` without a display).
        render_envs: how many frames `render` draws at once (the first envs'), 1 .. num_envs;
            the others are drawn when first read.
        render_cfg: frame size, camera and colours (`gym_motion.render.RenderCfg`).
        motion_playback: how clip files play (`gym_motion.motion.Playback`): "real_time"
            (default, resampled to the control rate) or "frame_per_step" (one file frame per
            control step whatever its fps label, as mjlab trains; not resampled).
        action_bound: the action space declared, ``Box(-action_bound, action_bound)``; None:
            ``Box(-inf, inf)``. The env never clips. The default, `ACTION_BOUND` (10), reaches
            past the joint ranges, for libraries that clip to the space (SB3). Libraries that
            scale policy outputs to the bounds (TorchRL's TanhNormal, RLlib's default) start
            with actions of +/- 10 under it: declare the policy's natural range instead, e.g.
            ``action_bound=1.0`` (one action unit: 0.07 to 0.55 rad on the G1).

    After construction ``env.cfg`` holds all of these choices but the motion, the modes and
    the time limit: ``TrackingEnvCfg.from_json(env.cfg.to_json())`` rebuilds the same task.

    Raises:
        ValueError: bad num_envs, obs_mode, autoreset_mode, render_mode, render_envs, backend
            or backend setting, or a motion library whose joints are not the robot's.

    Example:
        >>> import gymnasium as gym, gym_motion  # doctest: +SKIP
        >>> envs = gym.make_vec("GymMotion/G1-Tracking-v0", num_envs=16,
        ...                     vectorization_mode="vector_entry_point")
        >>> obs, info = envs.reset(seed=0)
        >>> obs, rew, terminated, truncated, info = envs.step(envs.action_space.sample())
    """

    metadata = {
        "autoreset_mode": AutoresetMode.NEXT_STEP,
        "render_modes": list(RENDER_MODES),
        "render_fps": 50,  # instances: 1 / control step
    }

    def __init__(
        self,
        num_envs: int = 1,
        motion: Motion = None,
        backend: str | None = None,
        cfg: TrackingEnvCfg | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        obs_mode: str = "policy",
        state_estimation: bool | None = None,
        max_episode_steps: int | None = None,
        seed: int | None = None,
        model_path: str | os.PathLike | None = None,
        backend_kwargs: dict[str, Any] | None = None,
        render_mode: str | None = None,
        render_envs: int = 1,
        render_cfg: RenderCfg | None = None,
        motion_playback: Playback | str = Playback.REAL_TIME,
        action_bound: float | None = ACTION_BOUND,
    ) -> None:
        num_envs = cv.integer("num_envs", num_envs, low=1)
        bound = box_bound(obs_mode, action_bound)
        self.cfg = cfg = (cfg or TrackingEnvCfg()).updated(
            state_estimation, model_path, backend, backend_kwargs
        )
        self.num_envs = n = num_envs
        self.autoreset_mode = parse_autoreset_mode(autoreset_mode)
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode}
        self.obs_mode = obs_mode
        self._init_render(render_mode, render_envs, render_cfg)
        self.dt = cfg.sim.control_dt
        self._init_time_limit(max_episode_steps, round(cfg.episode_length_s / self.dt), n)
        self.metadata["render_fps"] = round(1.0 / self.dt)
        self._seed = seed
        self._sampler_carry: dict[str, Any] | None = None  # see load_sampler_state
        parts = build_parts(cfg, n, self.dt, motion, motion_playback)
        self.library: MotionLibrary = parts.library
        self.model: mujoco.MjModel = parts.model
        self.layout: JointLayout = parts.layout
        self.backend: SimBackend = parts.backend
        self._numba_threads: NumbaThreads = parts.numba_threads
        self._state: MDPState = parts.state
        self.actions: ActionManager = parts.actions
        self.command: CommandManager = parts.command
        self.rewards: RewardManager = parts.rewards
        self.terminations: TerminationManager = parts.terminations
        self.events: EventManager = parts.events
        self.observations: ObservationManager = parts.observations
        self._device_mdp: DeviceMDP | None = parts.device_mdp
        # the device MDP reads the backend's body state where it is (mjwarp): after a step only
        # written rows are brought up to date there, and the host copy when `state` is read
        self._sync_device_rows: Callable[[], None] | None = None
        if parts.device_mdp is not None and parts.device_mdp.reads_robot_in_place:
            self._sync_device_rows = self.backend.sync_device_state  # type: ignore[attr-defined]
        self._robot_stale = False  # the host copy of the robot state lags the backend's
        self._end_step = end_step.builds[self._numba_threads.serial]  # the batch's build
        # control steps of each env's current episode
        self.episode_length: np.ndarray = np.zeros(n, np.int32)
        # rows whose physics state blew up (re-initialised at once), since construction
        self.nonfinite_count = 0
        # rows that ended and must restart: NEXT_STEP does it next step, DISABLED refuses to step
        self._needs_reset = np.zeros(n, bool)
        self._num_needs_reset = 0  # count_nonzero(_needs_reset), kept with it
        self._held = np.zeros(n, bool)  # rows being autoreset on this step (NEXT_STEP mode)
        self._num_held = 0  # count_nonzero(_held)
        self._was_reset = False
        # Wall time per step phase, s, summed since construction (read by `gym-motion bench`).
        self.phase_s = dict.fromkeys(PHASES, 0.0)
        self._rng = np.random.default_rng(seed)
        self._init_spaces(self.observations.space(obs_mode), cfg.robot.num_joints, bound)
        # the dummy env of gymnasium's AsyncVectorEnv: its workers must not be forked from a
        # process running GNU OpenMP (gym_motion.envs.fork)
        choose_async_start_method()

    @property
    def state(self) -> MDPState:
        """The `MDPState` every manager reads: robot and reference state, actions, ... (its
        buffers are the managers': read them, write only as a manager would). With the device
        MDP, the host copies of the reference, and of the robot state where the device MDP reads
        it on the backend's device, are brought up to date here, when read."""
        if self._device_mdp is not None:
            self._device_mdp.sync_host()
        if self._robot_stale:
            self.backend.copy_body_state_w(self._state.robot)
            self._robot_stale = False
        return self._state

    # ------------------------------------------------------------------ curricula
    @property
    def reset_noise_scale(self) -> float:
        """Factor on every RSI noise range of later resets (`CommandManager.reset_noise_scale`):
        1.0 is ``cfg.reset``, 0.0 starts episodes exactly on the reference. A training
        curriculum can raise it from 0 to 1."""
        return self.command.reset_noise_scale

    @reset_noise_scale.setter
    def reset_noise_scale(self, scale: float) -> None:
        self.command.reset_noise_scale = scale

    @property
    def inactive_terminations(self) -> tuple[str, ...]:
        """Termination terms switched off (`TerminationManager.inactive`): they do not end
        episodes, and their ``termination/*`` logs say never fired. A training curriculum can
        switch a term on after some env steps (`gym_motion.curriculum.termination_from_steps`).

        Raises:
            ValueError: (setter) a name that is not one of ``cfg.terminations``.
        """
        return self.terminations.inactive

    @inactive_terminations.setter
    def inactive_terminations(self, names: tuple[str, ...] | list[str]) -> None:
        self.terminations.inactive = names

    @property
    def mdp_device(self) -> str | None:
        """The Warp device of the device MDP ("cuda:0", "cpu"), or None for the host MDP."""
        return None if self._device_mdp is None else self._device_mdp.device

    def close(self, **kwargs: Any) -> None:
        """As `VectorApiMixin.close`; with the device MDP the host copies of what it owns are
        brought up to date first, so that `state` still reads the last step after closing."""
        mdp = getattr(self, "_device_mdp", None)
        if not getattr(self, "closed", True) and mdp is not None:
            self.state  # noqa: B018 - the property brings the host copies up to date
            mdp.graphs.clear()
        super().close(**kwargs)

    @property
    def transfer_bytes(self) -> dict[str, int] | None:
        """Bytes copied "to_device" and "to_host" since construction by a backend on a Warp
        device and by the device MDP (on Warp's CPU device: those a GPU would move over the
        bus); None when neither runs (the host MDP on a host backend)."""
        counts = [getattr(self.backend, "transfer_bytes", None)]
        if self._device_mdp is not None:
            counts.append(self._device_mdp.transfer_bytes)
        present = [c for c in counts if c is not None]
        if not present:
            return None
        return {k: sum(c[k] for c in present) for k in ("to_device", "to_host")}

    def device_arrays(self) -> dict[str, Any]:
        """What the last `step` returned, where the device MDP keeps it
        (``cfg.backend.mdp == "device"``), as Warp arrays on its device: each observation
        group of the observation by name ("policy"; "critic" too with ``obs_mode="dict"``),
        (N, D) float32, also after a `reset`; "reward" (N,) float32; "terminated",
        "truncated" (N,) bool. The next step or reset overwrites them.

        A learner on the same device takes them without a copy: ``warp.to_torch(a)`` (or
        ``torch.from_dlpack(a)``) is a tensor on the same memory; clone it to keep it past the
        next step (`gym_motion.adapters.rsl_rl.RslRlVecEnv` does).

        Raises:
            RuntimeError: the env runs the host MDP.
        """
        if self._device_mdp is None:
            raise RuntimeError(
                "device_arrays() needs the device MDP: build the env with "
                "TrackingEnvCfg(backend=BackendCfg(..., mdp='device')); this env runs the "
                "host MDP"
            )
        return self._device_mdp.results()

    def sampler_state(self) -> dict[str, Any]:
        """The start-frame sampler's learnt statistics (`MotionSampler.state_dict`, JSON
        values): what a training checkpoint keeps."""
        return self.command.sampler.state_dict()

    def load_sampler_state(self, state: dict[str, Any]) -> None:
        """Continue the start-frame sampler from `sampler_state`'s output, also over the next
        seeded `reset` (a resumed run's learner seeds its first reset; later seeded resets
        start afresh).

        Raises:
            ValueError: a state of other clips (another bin count).
        """
        self.command.sampler.load_state_dict(state)
        self._sampler_carry = state

    @property
    def sampling_stats(self) -> dict[str, float]:
        """Normalised entropy and top-1 probability of the adaptive sampler's bins."""
        sampler = self.command.sampler
        return {"entropy": float(sampler.entropy), "top1_prob": float(sampler.top1_prob)}

    # ------------------------------------------------------------------ API
    @on_batch_threads
    def reset(
        self, *, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all envs (or, in DISABLED mode, the rows of ``options["reset_mask"]``).

        ``options["start"] = (clip id, frame)`` starts every env reset there (clip ids in the
        motion library's order, frame in [0, T - 2]) instead of a frame the sampler draws;
        reset noise still applies (none under `eval_cfg`). The viewer (``gym-motion play``)
        resets to a chosen frame this way.

        ``seed`` (int) re-seeds every random stream: sampling, reset noise, observation noise,
        domain randomisation; the constructor's seed stands in for it on the first reset only.
        Returns (observation, info); arrays belong to the caller. After a masked reset the
        observation rows of the envs not reset are those the last step returned (as
        gymnasium's `SyncVectorEnv`).

        Raises:
            ValueError: a reset mask of the wrong shape, a seed that is not one int (a list or
                array of seeds), or a start outside the library.
        """
        self._check_usable("reset")
        pending, self._seed = self._seed, None  # the constructor's seed: first reset only
        if seed is None:
            seed = pending
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)):
            what = "a list" if isinstance(seed, Sequence | np.ndarray) else type(seed).__name__
            raise ValueError(f"TrackingVecEnv takes one int seed for all envs, not {what}: "
                             f"{seed!r}")  # fmt: skip
        mask = None if options is None else options.get("reset_mask")
        start = None if options is None else options.get("start")
        if start is not None:
            start = self.command.check_start(start)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            self.command.sampler.failure_ema.fill(0.0)
            if self._sampler_carry is not None:  # `load_sampler_state`: kept over this reset
                self.command.sampler.load_state_dict(self._sampler_carry)
        self._sampler_carry = None
        if mask is None:
            ids = np.arange(self.num_envs)
            self.events.startup(self._rng)
        else:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ValueError(f"reset_mask must be a bool array of shape ({self.num_envs},)")
            ids = np.flatnonzero(mask)
        kept = {}  # group -> the observation rows last returned to the envs not reset
        if self._device_mdp is not None:
            self._device_mdp.wait_for_other_streams()
        if mask is not None and self._was_reset:
            groups = ("policy",) if self.obs_mode == "policy" else tuple(self.observations.buffers)
            if self._device_mdp is not None:  # `step_on_device` left them there
                self._device_mdp.download_observations(groups)
            kept = {g: self.observations.buffers[g][~mask] for g in groups}
        self._needs_reset[ids] = False
        self._num_needs_reset = int(np.count_nonzero(self._needs_reset))
        self._start_episodes(ids)
        self._reinitialise(ids, start)
        self.backend.copy_body_state_w(self._state.robot)
        self._robot_stale = False
        self._refresh()
        self._was_reset = True
        obs = self._observation()
        if kept:  # in the buffers too: the next masked reset reads them
            others = ~np.asarray(mask)
            for group, rows in kept.items():
                self.observations.buffers[group][others] = rows
                (obs[group] if self.obs_mode == "dict" else obs)[others] = rows
                if self._device_mdp is not None:
                    self._device_mdp.upload_observations(group)
        return obs, {}

    @on_batch_threads
    def step(
        self, actions: np.ndarray
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every env one control step; see the class docstring for the order and info.

        Args:
            actions: (N, J) finite floats. With the device MDP, also a float32 array on its
                device (a torch tensor, a Warp array), read there.

        Raises:
            ValueError: wrong shape, values not finite as float32, or joint targets beyond
                +-1e10 rad (MuJoCo's mjMAXVAL; the offending rows are named).
            RuntimeError: `reset` was not called first, or the env is closed.
            gymnasium.error.ResetNeeded: DISABLED mode, and envs that terminated or truncated
                were not reset (``reset(options={"reset_mask": mask})``) since (the envs are
                named; as gymnasium's SyncVectorEnv, which refuses such a step).
        """
        return self._step(actions, host_obs=True)

    @on_batch_threads
    def step_on_device(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """`step` for a learner on the device MDP's device: the step's observations stay
        there, in `device_arrays` with its reward and flags (complete when this returns);
        nothing of them is copied to the host but what the step's info needs (SAME_STEP's
        ``final_obs``: the ended envs' rows, the others 0).

        Args:
            actions: (N, J) float32 on the device MDP's device (a torch tensor, a Warp array)
                read there, or NumPy floats.

        Returns:
            (reward, terminated, truncated, info) as `step` returns them (the host copies,
            which the env's episode bookkeeping reads anyway).

        Raises:
            RuntimeError: the env runs the host MDP (and as `step`).
            ValueError: as `step`; a device array of another shape, dtype or device.
        """
        if self._device_mdp is None:
            raise RuntimeError(
                "step_on_device() needs the device MDP: build the env with "
                "TrackingEnvCfg(backend=BackendCfg(..., mdp='device')); this env runs the "
                "host MDP (use step())"
            )
        return self._step(actions, host_obs=False)[1:]

    def _step(
        self, actions: Any, host_obs: bool
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """`step`; with `host_obs` False the observations are left on the device (None)."""
        self._check_usable("step")
        if self._device_mdp is not None:
            self._device_mdp.wait_for_other_streams()
        s, n, mode = self._state, self.num_envs, self.autoreset_mode
        if mode is AutoresetMode.DISABLED and self._num_needs_reset:
            ended = np.flatnonzero(self._needs_reset).tolist()
            raise ResetNeeded(
                f"TrackingVecEnv (autoreset mode DISABLED): envs {ended} terminated or truncated "
                "and were not reset; call reset(options={'reset_mask': mask}) with those envs "
                "True (or reset()) before step()"
            )
        t = perf_counter()
        # NEXT_STEP: rows that ended last step are reset now; this step is not theirs.
        held = self._held
        num_held = self._num_needs_reset if mode is AutoresetMode.NEXT_STEP else 0
        if num_held or self._num_held:
            np.copyto(held, self._needs_reset if num_held else False)
        self._num_held = num_held

        # 1-2: actions -> physics -> fresh state
        if self._device_mdp is None:
            targets = self.actions.process(actions, held)
        else:
            targets = self._device_mdp.act(actions, held)
        t = self._lap("action", t)
        self.backend.step(targets)
        t = self._lap("physics", t)
        nonfinite = self.backend.nonfinite  # all False unless blew_up (then copied: RSI clears it)
        blew_up = np.count_nonzero(nonfinite)
        if blew_up:
            nonfinite = nonfinite.copy()
            self.nonfinite_count += int(blew_up)
            self._reinitialise(nonfinite.nonzero()[0])
        if self._sync_device_rows is not None:  # the host copy when `state` is read
            if blew_up:  # the rows just re-initialised, on the device
                self._sync_device_rows()
            self._robot_stale = True
        else:
            self.backend.copy_body_state_w(s.robot)
        np.copyto(s.self_contact_substeps, self.backend.self_contact_substeps)
        s.steps_since_perturbation[:] += 1
        t = self._lap("copy", t)

        # 3-4: reference, terminations, rewards, episode sums
        terminated, truncated, clip_end = np.empty(n, bool), np.empty(n, bool), np.empty(n, bool)
        reward, done, teleport = np.empty(n, np.float32), np.empty(n, bool), np.empty(n, bool)
        if self._device_mdp is None:
            past_end = self.command.advance()
            t = self._lap("command", t)
            any_term = self.terminations.compute()
            t = self._lap("termination", t)
            term_reward = self.rewards.compute()
            num_done, num_teleport = self._end_step(
                any_term, nonfinite, term_reward, past_end, held, self.episode_length,
                self.time_limit_offset, self.max_episode_steps, terminated, truncated, reward,
                clip_end, done, teleport,
            )  # fmt: skip
            self.command.compute_errors()
            columns = self.rewards.accumulate(reward)
        else:  # the same on the device, timed as "reward"
            out = {"terminated": terminated, "truncated": truncated, "clip_end": clip_end,
                   "done": done, "teleport": teleport, "reward": reward}  # fmt: skip
            num_done, num_teleport, columns = self._device_mdp.step(
                held, nonfinite, self.time_limit_offset, self.max_episode_steps,
                self.episode_length, out,
            )  # fmt: skip
        info = infos.step_info(self.rewards.names, columns, ~held)
        done_ids = done.nonzero()[0] if num_done else _NO_ROWS
        if num_done and self._device_mdp is not None:
            self._device_mdp.download_sums(done_ids)
        if num_done:
            infos.add_episode_results(info, done, self._episode_log(done, truncated, nonfinite))
        t = self._lap("reward", t)

        # 5: interval events; the adaptive sampler
        pushed = self.events.step(self._rng)
        s.steps_since_perturbation[pushed] = 0
        self.command.update_sampler(done_ids, terminated[done_ids] if num_done else _NO_FLAGS)

        # 6: resets (which rows restart depends on the autoreset mode)
        infos.add_clip_end(info, teleport)
        if mode is AutoresetMode.SAME_STEP:
            if num_done:
                final = self._observation() if host_obs else self._final_rows(done_ids)
                infos.add_same_step_final(info, final, done)
            restart = done_ids
        elif mode is AutoresetMode.NEXT_STEP:
            restart = held.nonzero()[0] if num_held else _NO_ROWS
            self._needs_reset[:] = done
            self._num_needs_reset = num_done
        else:  # DISABLED: the caller resets with options["reset_mask"] before the next step
            restart = _NO_ROWS
            self._needs_reset[:] = done
            self._num_needs_reset = num_done
        reinit = teleport.nonzero()[0] if num_teleport else _NO_ROWS
        if restart.size:
            self._start_episodes(restart)
            reinit = np.union1d(reinit, restart) if reinit.size else restart
        if reinit.size:
            self._reinitialise(reinit)
        if pushed.size and reinit.size:
            written = np.union1d(reinit, pushed)
        else:
            written = reinit if reinit.size else pushed
        if written.size:
            if self._sync_device_rows is not None:
                self._sync_device_rows()
            else:
                self.backend.copy_body_state_w(s.robot, written)
            self._refresh(written)
        t = self._lap("reset", t)

        # 7: observations
        obs = self._observation(host=host_obs)
        self._lap("observation", t)
        return obs, reward, terminated, truncated, info

    # ------------------------------------------------------------------ episodes
    def _start_episodes(self, ids: np.ndarray) -> None:
        """New episodes on rows `ids`: counters, sums, actions, per-episode events."""
        self.episode_length[ids] = 0
        self.time_limit_offset[ids] = 0
        self.rewards.reset(ids)
        self.command.reset(ids)
        self._state.last_action[ids] = 0.0
        self._state.action[ids] = 0.0
        self._state.action_obs[ids] = 0.0
        self.events.reset(ids, self._rng)
        if self._device_mdp is not None:
            self._device_mdp.start_episodes(ids)

    def _reinitialise(self, ids: np.ndarray, start: tuple[int, int] | None = None) -> None:
        """Sample a motion frame for rows `ids` (or take `start`, a (clip id, frame)) and
        write the robot there (RSI)."""
        if self._device_mdp is None:
            qpos, qvel = self.command.sample_states(ids, self._rng, start)
        else:  # the same draws; the state computed where the backend reads it
            qpos, qvel = self._device_mdp.sample_states(ids, self._rng, start)
        self.backend.write_state(ids, qpos, qvel)
        self._state.steps_since_perturbation[ids] = 0

    def _episode_log(
        self, done: np.ndarray, truncated: np.ndarray, nonfinite: np.ndarray
    ) -> dict[str, np.ndarray]:
        """The episode results of every row (valid where `done`), in `envs.info` key order."""
        rewards = self.rewards.episode_log()
        return {
            "return": rewards.pop("return"),
            "length": self.episode_length.copy(),
            **rewards,
            **self.terminations.episode_log(done, truncated, nonfinite),
            **self.command.episode_log(self.episode_length),
        }

    # ------------------------------------------------------------------ internals
    def _lap(self, phase: str, start: float) -> float:
        """Add the time since `start` to `phase_s[phase]`; returns now."""
        now = perf_counter()
        self.phase_s[phase] += now - start
        return now

    def _refresh(self, ids: np.ndarray | None = None) -> None:
        """The reference of every row, or of rows `ids`, gathered and re-anchored on the
        robot state just copied (`CommandManager.refresh`, or its device twin)."""
        if self._device_mdp is None:
            self.command.refresh(ids)
        else:
            self._device_mdp.refresh(ids)

    def _final_rows(self, ids: np.ndarray) -> Any:
        """SAME_STEP's final observation with the observations left on the device: computed
        there, only rows `ids` (the ended episodes') copied to the host, in arrays shaped as
        `_observation`'s (other rows 0: masked out)."""
        self._observation(host=False)
        rows = self._device_mdp.observation_rows(ids)  # type: ignore[union-attr]
        out = {}
        for group, values in rows.items():
            out[group] = np.zeros((self.num_envs, values.shape[1]), np.float32)
            out[group][ids] = values
        return out if self.obs_mode == "dict" else out["policy"]

    def _observation(self, host: bool = True) -> Any:
        """A copy of the policy observation, or of every group's (``obs_mode="dict"``); with
        the device MDP and `host` False, computed on the device only (returns None)."""
        groups = None if self.obs_mode == "dict" else ("policy",)
        if self._device_mdp is None:
            bufs = self.observations.compute(self._rng, groups)
        else:
            bufs = self._device_mdp.observations(self._rng, groups, download=host)
            if not host:
                return None
        if self.obs_mode == "dict":
            return {g: b.copy() for g, b in bufs.items()}
        return bufs["policy"].copy()
