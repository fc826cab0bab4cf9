"""`TrackingVecEnv`: the motion-tracking task as one batched `gymnasium.vector.VectorEnv`.

Here: the MDP, `reset` and `step`. Its mixins, in `gym_motion.envs`: `components` (what it is
built of), `episodes`, `vector_api`, `rendering`, `time_limit`, and `batch_threads` (Numba).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from time import perf_counter
from typing import Any

import numpy as np
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode, VectorEnv

from gym_motion import config_values as cv
from gym_motion.envs import info as infos
from gym_motion.envs.batch_threads import on_batch_threads
from gym_motion.envs.components import ComponentsMixin
from gym_motion.envs.config import TrackingEnvCfg
from gym_motion.envs.episodes import EpisodesMixin
from gym_motion.envs.fork import choose_async_start_method
from gym_motion.envs.rendering import RenderMixin
from gym_motion.envs.time_limit import TimeLimitMixin
from gym_motion.envs.vector_api import ACTION_BOUND, VectorApiMixin, box_bound, parse_autoreset_mode
from gym_motion.kernels.episode import end_step
from gym_motion.motion.library import MotionLibrary, Playback
from gym_motion.render import RENDER_MODES, RenderCfg

__all__ = ["ACTION_BOUND", "PHASES", "TrackingVecEnv"]

_NO_ROWS = np.zeros(0, np.int64)  # an empty row selection (never written)
_NO_ROWS.flags.writeable = False
_NO_FLAGS = np.zeros(0, bool)
_NO_FLAGS.flags.writeable = False
PHASES = ("action", "physics", "copy", "command", "termination", "reward", "reset", "observation")


class TrackingVecEnv(
    VectorApiMixin, ComponentsMixin, EpisodesMixin, RenderMixin, TimeLimitMixin, VectorEnv
):
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
        self._init_components(motion, motion_playback)
        self._end_step = end_step.builds[self._numba_threads.serial]  # the batch's build
        self._init_episodes(n)
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
        self._reinitialise(ids, start)
        self.backend.copy_body_state_w(self.state.robot)
        self.command.refresh()
        self._was_reset = True
        obs = self._observation()
        for group, rows in kept.items():  # in the buffers too: the next masked reset reads them
            self.observations.buffers[group][~mask] = rows
            (obs[group] if self.obs_mode == "dict" else obs)[~mask] = rows
        return obs, {}

    @on_batch_threads
    def step(
        self, actions: np.ndarray
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
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
        self._check_usable("step")
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
        s.steps_since_perturbation[:] += 1
        t = self._lap("copy", t)

        # 3-4: reference, terminations, rewards, episode sums
        past_end = self.command.advance()
        t = self._lap("command", t)
        any_term = self.terminations.compute()
        t = self._lap("termination", t)
        term_reward = self.rewards.compute()
        terminated, truncated, clip_end = np.empty(n, bool), np.empty(n, bool), np.empty(n, bool)
        reward, done, teleport = np.empty(n, np.float32), np.empty(n, bool), np.empty(n, bool)
        num_done, num_teleport = self._end_step(
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
        s.steps_since_perturbation[pushed] = 0
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

    # ------------------------------------------------------------------ internals
    def _lap(self, phase: str, start: float) -> float:
        """Add the time since `start` to `phase_s[phase]`; returns now."""
        now = perf_counter()
        self.phase_s[phase] += now - start
        return now

    def _observation(self) -> Any:
        """A copy of the policy observation, or of every group's (``obs_mode="dict"``)."""
        if self.obs_mode == "dict":
            bufs = self.observations.compute(self._rng)
            return {g: b.copy() for g, b in bufs.items()}
        return self.observations.compute(self._rng, ("policy",))["policy"].copy()
