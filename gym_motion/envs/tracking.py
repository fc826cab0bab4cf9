"""`TrackingVecEnv`: the motion-tracking task as one batched `gymnasium.vector.VectorEnv`."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import replace
from time import perf_counter
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode, VectorEnv

from gym_motion import config_values as cv
from gym_motion.backends import make_backend
from gym_motion.backends.threads import NumbaThreads
from gym_motion.envs import info as infos
from gym_motion.envs.config import MAX_EPISODE_STEPS, TrackingEnvCfg
from gym_motion.envs.fork import choose_async_start_method
from gym_motion.kernels.dispatch import serial_rows_enabled
from gym_motion.kernels.episode import end_step
from gym_motion.managers.action import ActionManager
from gym_motion.managers.command import CommandManager
from gym_motion.managers.events import EventContext, EventManager
from gym_motion.managers.observation import ObservationManager
from gym_motion.managers.reward import RewardManager
from gym_motion.managers.state import MDPState
from gym_motion.managers.termination import TerminationManager
from gym_motion.motion.library import MotionLibrary, Playback
from gym_motion.render import (
    RENDER_MODES,
    EnvFrames,
    RenderCfg,
    TrackingRenderer,
    check_render_mode,
    state_qpos,
)
from gym_motion.robots.spec import body_ids

# Actions are declared in [-ACTION_BOUND, ACTION_BOUND] (RL libraries such as SB3 need a bounded
# Box). The env does not clip them, but libraries that clip to the space do: at the G1's action
# scale (0.07 .. 0.55 rad per unit) the bound reaches past every joint range except wrist pitch
# and yaw (+/- 0.745 rad around the default pose, of +/- 1.61 rad).
ACTION_BOUND = 10.0
_NO_ROWS = np.zeros(0, np.int64)  # an empty row selection (never written)
_NO_ROWS.flags.writeable = False
_NO_FLAGS = np.zeros(0, bool)
_NO_FLAGS.flags.writeable = False
PHASES = ("action", "physics", "copy", "command", "termination", "reward", "reset", "observation")


def _on_batch_threads(method):
    """Run an env method with Numba's pool sized to the env's batch (``env._numba_threads``,
    a `NumbaThreads`): one thread below 2048 rows, so small batches wake no worker."""

    @functools.wraps(method)
    def sized(self, *args, **kwargs):
        with self._numba_threads:
            return method(self, *args, **kwargs)

    return sized


def spec_with_time_limit(spec: EnvSpec | None, max_episode_steps: int) -> EnvSpec | None:
    """`spec` (None stays None) with ``max_episode_steps`` set to the env's own time limit."""
    if spec is None or spec.max_episode_steps == max_episode_steps:
        return spec
    return replace(spec, max_episode_steps=max_episode_steps)


class TrackingVecEnv(VectorEnv):
    """N robots (the G1 by default) tracking reference motion clips, stepped as one batch.

    Observation: ``Box(160,)`` float32 policy observation (154 without state estimation), or
    with ``obs_mode="dict"`` a Dict of "policy" and "critic" (286) groups. Action:
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
    _spec: EnvSpec | None = None  # see the `spec` property

    def __init__(
        self,
        num_envs: int = 1,
        motion: str | os.PathLike | Sequence[str | os.PathLike] | MotionLibrary | None = None,
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
    ):
        num_envs = cv.integer("num_envs", num_envs, low=1)
        if obs_mode not in ("policy", "dict"):
            raise ValueError(f"obs_mode must be 'policy' or 'dict', got {obs_mode!r}")
        if action_bound is not None and not action_bound > 0:
            raise ValueError(f"action_bound must be > 0 or None, got {action_bound!r}")
        bound = np.inf if action_bound is None else float(action_bound)
        self.cfg = cfg = (cfg or TrackingEnvCfg()).updated(
            state_estimation, model_path, backend, backend_kwargs
        )
        robot = cfg.robot
        self.num_envs = n = num_envs
        self.autoreset_mode = _autoreset_mode(autoreset_mode)
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode}
        self.obs_mode = obs_mode
        self.render_mode = check_render_mode(render_mode)
        if not 1 <= render_envs <= num_envs:
            raise ValueError(f"render_envs must be in [1, num_envs={num_envs}], got {render_envs}")
        self.render_envs = int(render_envs)
        self.render_cfg = render_cfg or RenderCfg()
        self._renderer: TrackingRenderer | None = None  # made by the first `render`
        self.dt = cfg.sim.control_dt
        if max_episode_steps is not None:
            max_episode_steps = cv.integer("max_episode_steps", max_episode_steps, low=1)
            if max_episode_steps >= MAX_EPISODE_STEPS:
                raise ValueError(
                    f"max_episode_steps must be < {MAX_EPISODE_STEPS:,} (int32 episode "
                    f"counters), got {max_episode_steps}"
                )
        self.max_episode_steps = int(max_episode_steps or round(cfg.episode_length_s / self.dt))
        self.metadata["render_fps"] = round(1.0 / self.dt)
        self._seed = seed

        self.library = MotionLibrary.load(motion, robot, 1.0 / self.dt, motion_playback)
        self.model = robot.build_model(floor=True)
        self.model.opt.timestep = cfg.sim.physics_dt
        self.backend = make_backend(
            cfg.backend.name,
            self.model,
            n,
            body_ids(self.model, robot.tracked_bodies),
            robot.joint_ids(self.model),
            decimation=cfg.sim.decimation,
            self_contact_threshold=cfg.sim.self_contact_threshold,
            **cfg.backend.kwargs(),
        )

        self.state = s = MDPState.for_robot(robot, self.model, n)
        self.actions = ActionManager(s, robot.action_scale)
        self.command = CommandManager(
            self.library, s, robot.root_body, cfg.sampling, cfg.reset, self.dt
        )
        self.rewards = RewardManager(cfg.rewards, s, self.dt)
        self.terminations = TerminationManager(cfg.terminations, s)
        ctx = EventContext.for_robot(s, self.backend, robot, self.model)
        self.events = EventManager(cfg.events, ctx, self.dt)
        self.observations = ObservationManager(cfg.observation_groups(), s, cfg.obs_noise)

        self.episode_length = np.zeros(n, np.int32)
        # Steps counted against the time limit on top of episode_length, per env (0 at each
        # episode start; `final/length` stays episode_length). A trainer that spreads episode
        # ends writes it (rsl_rl's init_at_random_ep_len, through `RslRlVecEnv`).
        self._time_limit_offset = np.zeros(n, np.int32)
        # rows that ended and must restart: NEXT_STEP does it next step, DISABLED refuses to step
        self._needs_reset = np.zeros(n, bool)
        self._num_needs_reset = 0  # count_nonzero(_needs_reset), kept with it
        self._held = np.zeros(n, bool)  # rows being autoreset on this step (NEXT_STEP mode)
        self._num_held = 0  # count_nonzero(_held)
        # after make_backend, which sized this thread's Numba pool (the ceiling) to the budget
        self._numba_threads = NumbaThreads.for_rows(n)
        self.nonfinite_count = 0
        self._was_reset = False
        # Wall time per step phase, s, summed since construction (read by `gym-motion bench`).
        self.phase_s = dict.fromkeys(PHASES, 0.0)
        self._rng = np.random.default_rng(seed)

        self.single_observation_space = self.observations.space(obs_mode)
        self.single_action_space = gym.spaces.Box(
            -bound, bound, (robot.num_joints,), np.float32
        )
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, n)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, n)
        # the dummy env of gymnasium's AsyncVectorEnv: its workers must not be forked from a
        # process running GNU OpenMP (gym_motion.envs.fork)
        choose_async_start_method()

    # ------------------------------------------------------------------ API
    @_on_batch_threads
    def reset(
        self, *, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all envs (or, in DISABLED mode, the rows of ``options["reset_mask"]``).

        ``seed`` (int) re-seeds every random stream: sampling, reset noise, observation noise,
        domain randomisation; the constructor's seed stands in for it on the first reset only.
        Returns (observation, info); arrays belong to the caller. After a masked reset the
        observation rows of the envs not reset are those the last step returned (as
        gymnasium's `SyncVectorEnv`).

        Raises:
            ValueError: a reset mask of the wrong shape, or a list of seeds.
        """
        if self.closed:
            raise RuntimeError("TrackingVecEnv is closed: make a new env")
        pending, self._seed = self._seed, None  # the constructor's seed: first reset only
        if seed is None:
            seed = pending
        if isinstance(seed, Sequence):
            raise ValueError("TrackingVecEnv takes one int seed for all envs, not a list")
        mask = None if options is None else options.get("reset_mask")
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            self.command.sampler.failure_ema.fill(0.0)
        if mask is None:
            ids = np.arange(self.num_envs)
            self.events.startup(self._rng)
        else:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ValueError(f"reset_mask must be a bool array of shape ({self.num_envs},)")
            ids = np.flatnonzero(mask)
        kept = {}  # group -> the observation rows last returned to the envs not reset
        if mask is not None and self._was_reset:
            groups = ("policy",) if self.obs_mode == "policy" else tuple(self.observations.buffers)
            kept = {g: self.observations.buffers[g][~mask] for g in groups}
        self._needs_reset[ids] = False
        self._num_needs_reset = int(np.count_nonzero(self._needs_reset))
        self._start_episodes(ids)
        self._reinitialise(ids)
        self.backend.copy_body_state_w(self.state.robot)
        self.command.refresh()
        self._was_reset = True
        obs = self._observation()
        for group, rows in kept.items():  # in the buffers too: the next masked reset reads them
            self.observations.buffers[group][~mask] = rows
            (obs[group] if self.obs_mode == "dict" else obs)[~mask] = rows
        return obs, {}

    @_on_batch_threads
    def step(self, actions: np.ndarray):
        """Step every env one control step; see the class docstring for the order and info.

        Args:
            actions: (N, J) finite floats.

        Raises:
            ValueError: wrong shape, values not finite as float32, or joint targets beyond
                +-1e10 rad (MuJoCo's mjMAXVAL; the offending rows are named).
            RuntimeError: `reset` was not called first, or the env is closed.
            gymnasium.error.ResetNeeded: DISABLED mode, and envs that terminated or truncated
                were not reset (``reset(options={"reset_mask": mask})``) since (the envs are
                named; as gymnasium's SyncVectorEnv, which refuses such a step).
        """
        if not self._was_reset or self.closed:
            raise RuntimeError(
                "TrackingVecEnv is closed: make a new env"
                if self.closed
                else "TrackingVecEnv: call reset() before step()"
            )
        s, n, mode = self.state, self.num_envs, self.autoreset_mode
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
        targets = self.actions.process(actions, held)
        t = self._lap("action", t)
        self.backend.step(targets)
        t = self._lap("physics", t)
        nonfinite = self.backend.nonfinite  # all False unless blew_up (then copied: RSI clears it)
        blew_up = np.count_nonzero(nonfinite)
        if blew_up:
            nonfinite = nonfinite.copy()
            self.nonfinite_count += int(blew_up)
            self._reinitialise(nonfinite.nonzero()[0])
        self.backend.copy_body_state_w(s.robot)
        np.copyto(s.self_contact_substeps, self.backend.self_contact_substeps)
        t = self._lap("copy", t)

        # 3-4: reference, terminations, rewards, episode sums
        past_end = self.command.advance()
        t = self._lap("command", t)
        any_term = self.terminations.compute()
        t = self._lap("termination", t)
        term_reward = self.rewards.compute()
        terminated, truncated, clip_end = np.empty(n, bool), np.empty(n, bool), np.empty(n, bool)
        reward, done, teleport = np.empty(n, np.float32), np.empty(n, bool), np.empty(n, bool)
        num_done, num_teleport = end_step.builds[serial_rows_enabled()](
            any_term, nonfinite, term_reward, past_end, held, self.episode_length,
            self._time_limit_offset, self.max_episode_steps, terminated, truncated, reward,
            clip_end, done, teleport,
        )  # fmt: skip
        self.command.compute_errors()
        columns = self.rewards.accumulate(reward)
        info = infos.step_info(self.rewards.names, columns, ~held)
        done_ids = done.nonzero()[0] if num_done else _NO_ROWS
        if num_done:
            infos.add_episode_results(info, done, self._episode_log(done, truncated, nonfinite))
        t = self._lap("reward", t)

        # 5: interval events; the adaptive sampler
        pushed = self.events.step(self._rng)
        self.command.update_sampler(done_ids, terminated[done_ids] if num_done else _NO_FLAGS)

        # 6: resets (which rows restart depends on the autoreset mode)
        infos.add_clip_end(info, teleport)
        if mode is AutoresetMode.SAME_STEP:
            if num_done:
                infos.add_same_step_final(info, self._observation(), done)
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
            self.backend.copy_body_state_w(s.robot, written)
            self.command.refresh(written)
        t = self._lap("reset", t)

        # 7: observations
        obs = self._observation()
        self._lap("observation", t)
        return obs, reward, terminated, truncated, info

    def render(self) -> EnvFrames | None:
        """One frame per env with ``render_mode="rgb_array"`` (as gymnasium's `SyncVectorEnv`,
        whose vector wrappers such as ``RecordVideo`` need one per env): an `EnvFrames`
        sequence of N (H, W, 3) uint8 arrays of the envs as they are now. The first
        `render_envs` are drawn at once, the others when first read (a frame costs ~20 ms of
        CPU). None (with gymnasium's warning) without a render mode. The first call makes the
        OpenGL context (`TrackingRenderer`).

        Raises:
            RuntimeError: `reset` was not called first, the env is closed, or no OpenGL
                context could be made.
        """
        if self.render_mode is None:
            gym.logger.warn("TrackingVecEnv.render() without a render_mode returns None")
            return None
        if self.closed:
            raise RuntimeError("TrackingVecEnv is closed: make a new env")
        if not self._was_reset:
            raise RuntimeError("TrackingVecEnv: call reset() before render()")
        if self._renderer is None:
            self._renderer = TrackingRenderer(self.cfg.robot, self.render_cfg)
        s, ids = self.state, np.arange(self.num_envs)
        ghost = state_qpos(s.ref, s.root, ids) if self.render_cfg.ghost else None
        frames = EnvFrames(self._renderer, state_qpos(s.robot, s.root, ids), ghost)
        for i in range(self.render_envs):
            frames[i]  # noqa: B018 (drawn now; the others when first read)
        return frames

    def close(self, **kwargs: Any) -> None:
        """Release the backend's threads and memory, and the renderer's OpenGL context; sets
        `closed` (idempotent). `reset` and `step` then raise RuntimeError."""
        if getattr(self, "_renderer", None) is not None:
            self._renderer.close()
            self._renderer = None
        if getattr(self, "backend", None) is not None:
            self.backend.close()
            self.backend = None
        self.closed = True

    # gymnasium's vector `call` / `get_attr` / `set_attr` (as SyncVectorEnv's, which RL libraries
    # call: skrl's trainer renders through call("render")). The N envs are one object here.
    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call the env's method `name` once with `args`, `kwargs`; its result once per env, a
        tuple of `num_envs` references to it (a non-callable attribute: its value, as
        `get_attr`). ``call("render")`` is `render` (already a tuple of frames, as
        ``SyncVectorEnv.call("render")``).

        Raises:
            AttributeError: the env has no attribute `name`.
        """
        if name == "render":
            return self.render(*args, **kwargs)
        value = getattr(self, name)
        if callable(value):
            value = value(*args, **kwargs)
        return (value,) * self.num_envs

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The attribute `name` once per env: a tuple of `num_envs` references to the env's one
        value (per-env arrays such as ``episode_length`` come whole in each entry).

        Raises:
            AttributeError: the env has no attribute `name`.
        """
        return (getattr(self, name),) * self.num_envs

    def set_attr(self, name: str, values: Any) -> None:
        """Set the existing attribute `name` (e.g. ``reset_noise_scale``) for all envs: `values`
        is one value, or a list/tuple of `num_envs` equal values (as SyncVectorEnv takes).

        Raises:
            AttributeError: no attribute `name` (a misspelt setting would otherwise do nothing).
            ValueError: a list/tuple of the wrong length, or of values that differ (the N envs
                share one attribute; write a per-env array attribute instead).
        """
        if not hasattr(self, name):
            raise AttributeError(f"TrackingVecEnv has no attribute {name!r} to set")
        if isinstance(values, list | tuple):
            if len(values) != self.num_envs:
                raise ValueError(
                    f"set_attr({name!r}): {len(values)} values for {self.num_envs} envs"
                )
            if not all(_same(v, values[0]) for v in values[1:]):
                raise ValueError(
                    f"set_attr({name!r}): per-env values differ, but the {self.num_envs} envs "
                    "share one attribute; pass one value"
                )
            values = values[0]
        setattr(self, name, values)

    @property
    def spec(self) -> EnvSpec | None:
        """The `EnvSpec` that ``gymnasium.make_vec`` set (None when built directly), its
        ``max_episode_steps`` always the env's own time limit (`max_episode_steps`)."""
        self._spec = spec_with_time_limit(self._spec, self.max_episode_steps)
        return self._spec

    @spec.setter
    def spec(self, spec: EnvSpec | None) -> None:
        self._spec = spec

    @property
    def time_limit_offset(self) -> np.ndarray:
        """(N,) int32: steps counted against the time limit on top of `episode_length`, per env
        (0 at each episode start). Written in place or assigned (values are copied in,
        broadcast to (N,))."""
        return self._time_limit_offset

    @time_limit_offset.setter
    def time_limit_offset(self, values: Any) -> None:
        self._time_limit_offset[...] = values

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
    def sampling_stats(self) -> dict[str, float]:
        """Normalised entropy and top-1 probability of the adaptive sampler's bins."""
        sampler = self.command.sampler
        return {"entropy": float(sampler.entropy), "top1_prob": float(sampler.top1_prob)}

    # ------------------------------------------------------------------ internals
    def _lap(self, phase: str, start: float) -> float:
        """Add the time since `start` to `phase_s[phase]`; returns now."""
        now = perf_counter()
        self.phase_s[phase] += now - start
        return now

    def _observation(self):
        if self.obs_mode == "dict":
            bufs = self.observations.compute(self._rng)
            return {g: b.copy() for g, b in bufs.items()}
        return self.observations.compute(self._rng, ("policy",))["policy"].copy()

    def _episode_log(self, done, truncated, nonfinite) -> dict[str, np.ndarray]:
        """The episode results of every row (valid where `done`), in `envs.info` key order."""
        rewards = self.rewards.episode_log()
        return {
            "return": rewards.pop("return"),
            "length": self.episode_length.copy(),
            **rewards,
            **self.terminations.episode_log(done, truncated, nonfinite),
            **self.command.episode_log(self.episode_length),
        }

    def _start_episodes(self, ids: np.ndarray) -> None:
        """New episodes on rows `ids`: counters, sums, actions, per-episode events."""
        self.episode_length[ids] = 0
        self._time_limit_offset[ids] = 0
        self.rewards.reset(ids)
        self.command.reset(ids)
        self.state.last_action[ids] = 0.0
        self.state.action[ids] = 0.0
        self.events.reset(ids, self._rng)

    def _reinitialise(self, ids: np.ndarray) -> None:
        """Sample a motion frame for rows `ids` and write the robot there (RSI)."""
        qpos, qvel = self.command.sample_states(ids, self._rng)
        self.backend.write_state(ids, qpos, qvel)


def _same(a: Any, b: Any) -> bool:
    """Whether two attribute values are equal (arrays element-wise, with equal shapes)."""
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _autoreset_mode(mode: AutoresetMode | str) -> AutoresetMode:
    """An `AutoresetMode` from a member, its value ("NextStep") or name ("next_step")."""
    if isinstance(mode, AutoresetMode):
        return mode
    for m in AutoresetMode:
        if str(mode).lower() in (m.value.lower(), m.name.lower()):
            return m
    raise ValueError(
        f"autoreset_mode must be one of {[m.name.lower() for m in AutoresetMode]}, got {mode!r}"
    )
