"""`TrackingVecEnv`: the G1 motion-tracking task as one batched `gymnasium.vector.VectorEnv`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from time import perf_counter
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from gym_motion.backends import make_backend
from gym_motion.backends.base import BodyState
from gym_motion.envs.config import TrackingEnvCfg
from gym_motion.kernels.metrics import TRACKING_ERRORS, tracking_errors
from gym_motion.kernels.reset import rsi_state
from gym_motion.managers.command import CommandManager
from gym_motion.managers.events import EventManager
from gym_motion.managers.observation import ObservationManager
from gym_motion.managers.reward import RewardManager
from gym_motion.managers.state import MDPState
from gym_motion.managers.termination import TerminationManager
from gym_motion.motion._quat import rotate_inverse
from gym_motion.motion.library import MotionLibrary
from gym_motion.motion.sampler import MotionSampler
from gym_motion.robots import g1

# Actions are declared in [-ACTION_BOUND, ACTION_BOUND] (RL libraries such as SB3 need a bounded
# Box): at ACTION_SCALE (0.07 .. 0.55 rad per unit) that reaches past every joint range, so the
# bound only rules out values no policy needs. Actions are not clipped.
ACTION_BOUND = 10.0
PHASES = ("action", "physics", "copy", "command", "termination", "reward", "reset", "observation")
NONFINITE = "nonfinite"
TIME_OUT = "time_out"


class TrackingVecEnv(VectorEnv):
    """N Unitree G1 robots tracking reference motion clips, stepped as one batch.

    Observation: ``Box(160,)`` float32 policy observation (154 without state estimation), or
    with ``obs_mode="dict"`` a Dict of "policy" and "critic" (286) groups. Action:
    ``Box(-10, 10, (29,), float32)`` (`ACTION_BOUND`; not clipped), joint position offsets
    scaled by `g1.ACTION_SCALE` around the default pose (TASK_SPEC section 6). Reward: sum of
    the configured terms times the control step 0.02 s.

    Step order (one control step):
      1. actions -> joint position targets (default + scale * action - encoder bias);
      2. physics: `decimation` substeps on the backend, then one fused copy of the body state;
         rows whose state went non-finite are re-initialised at once (never observed);
      3. motion time advances one frame; the reference is gathered and re-anchored;
      4. terminations, then rewards (zero for non-finite rows), tracking errors, episode sums;
      5. events (pushes); the adaptive sampler sees the finished episodes;
      6. reset rows: finished episodes (per the autoreset mode) and envs past their clip's end
         (re-initialised on a new frame, the episode goes on); every state write is followed by
         forward kinematics and a fresh copy + re-anchoring before anything reads it;
      7. observations.

    Info (per-env arrays of length N with ``_key`` masks): ``reward/<term>`` per-step weighted
    term (before dt) for every env (masked out for rows being autoreset in NEXT_STEP mode);
    for envs whose episode ended on this step,
    ``final/return``, ``final/length``, ``final/reward/<term>`` (dt-scaled episode sum),
    ``final/termination/<cause>`` (bool; causes are the termination terms, "nonfinite" and
    "time_out"), ``final/error/<name>`` (episode mean of the tracking errors of
    `gym_motion.kernels.metrics.TRACKING_ERRORS`, m and rad). ``clip_end`` marks envs that
    were re-initialised at their clip's end.

    Args:
        num_envs: N.
        motion: clip path(s) (npz), a folder of npz, or a `MotionLibrary`; default: the
            embedded default motion.
        backend: "mujoco" (CPU threads) or "mjwarp".
        cfg: the task; default `TrackingEnvCfg()`.
        autoreset_mode: NEXT_STEP (default), SAME_STEP or DISABLED (or "next_step", ...).
        obs_mode: "policy" (flat Box) or "dict" (policy and critic groups).
        state_estimation: overrides cfg.state_estimation (False: 154-value policy observation).
        max_episode_steps: time limit in control steps; default cfg.episode_length_s / dt.
        seed: seed of the first `reset`.
        model_path: an MJCF of the G1 to use instead of the project's (names are checked).
        backend_kwargs: passed to the backend (e.g. ``num_threads``, ``cpu_ids``, ``device``).

    Example:
        >>> import gymnasium as gym, gym_motion  # doctest: +SKIP
        >>> envs = gym.make_vec("GymMotion/G1-Tracking-v0", num_envs=16,
        ...                     vectorization_mode="vector_entry_point")
        >>> obs, info = envs.reset(seed=0)
        >>> obs, rew, terminated, truncated, info = envs.step(envs.action_space.sample())
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int = 1,
        motion: str | os.PathLike | Sequence[str | os.PathLike] | MotionLibrary | None = None,
        backend: str = "mujoco",
        cfg: TrackingEnvCfg | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        obs_mode: str = "policy",
        state_estimation: bool | None = None,
        max_episode_steps: int | None = None,
        seed: int | None = None,
        model_path: str | os.PathLike | None = None,
        backend_kwargs: dict[str, Any] | None = None,
        render_mode: str | None = None,
    ):
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if obs_mode not in ("policy", "dict"):
            raise ValueError(f"obs_mode must be 'policy' or 'dict', got {obs_mode!r}")
        cfg = cfg or TrackingEnvCfg()
        if state_estimation is not None:
            cfg = replace(cfg, state_estimation=state_estimation)
        self.cfg = cfg
        self.num_envs = n = int(num_envs)
        self.autoreset_mode = _autoreset_mode(autoreset_mode)
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode}
        self.obs_mode = obs_mode
        self.render_mode = render_mode
        self.dt = cfg.sim.control_dt
        self.max_episode_steps = int(max_episode_steps or round(cfg.episode_length_s / self.dt))
        self._seed = seed

        if isinstance(motion, MotionLibrary):
            self.library = motion
        else:
            if motion is None:
                from gym_motion.motion import DEFAULT_MOTION_PATH as motion
            self.library = MotionLibrary.from_paths(motion, fps=1.0 / self.dt, robot=g1)
        self.model = g1.load_model(floor=True, xml_path=model_path)
        self.model.opt.timestep = cfg.sim.physics_dt
        bodies = g1.TRACKED_BODIES
        self.backend = make_backend(
            backend,
            self.model,
            n,
            bodies,
            g1.JOINT_NAMES,
            decimation=cfg.sim.decimation,
            self_contact_threshold=cfg.sim.self_contact_threshold,
            **(backend_kwargs or {}),
        )

        j = g1.NUM_JOINTS
        self.state = s = MDPState(
            body_names=bodies,
            anchor=bodies.index(g1.ANCHOR_BODY),
            root=bodies.index(g1.ROOT_BODY),
            robot=BodyState.zeros(n, len(bodies), j),
            ref=BodyState.zeros(n, len(bodies), j),
            default_joint_pos=g1.DEFAULT_JOINT_POS.astype(np.float32),
            soft_joint_limits=g1.G1.soft_joint_limits(self.model).astype(np.float32),
        )
        self.command = CommandManager(self.library, s)
        self.sampler = MotionSampler(
            self.library.lengths,
            fps=1.0 / self.dt,
            mode=cfg.sampling.mode,
            num_envs=n,
            alpha=cfg.sampling.ema_alpha,
            uniform_ratio=cfg.sampling.uniform_weight,
            bin_seconds=cfg.sampling.bin_s,
        )
        self.rewards = RewardManager(cfg.rewards, s, self.dt)
        self.terminations = TerminationManager(cfg.terminations, s)
        self.events = EventManager(cfg.events, s, self.backend, self.dt)
        self.observations = ObservationManager(cfg.observation_groups(), s, cfg.obs_noise)

        self._action_scale = g1.ACTION_SCALE.astype(np.float32)
        self._targets = np.zeros((n, j), np.float32)
        self._errors = np.zeros((n, len(TRACKING_ERRORS)), np.float32)
        self._error_sums = np.zeros((n, len(TRACKING_ERRORS)), np.float64)
        self._term_sums = np.zeros((n, len(self.rewards.names)), np.float64)
        self._return = np.zeros(n, np.float64)
        self.episode_length = np.zeros(n, np.int32)
        self._needs_reset = np.zeros(n, bool)
        self._truncated = np.zeros(n, bool)
        self.nonfinite_count = 0
        self._was_reset = False
        # Wall time per step phase, s, summed since construction (read by `gym-motion bench`).
        self.phase_s = dict.fromkeys(PHASES, 0.0)
        self._rng = np.random.default_rng(seed)
        self.reset_noise_scale = 1.0  # sets the RSI noise ranges from cfg.reset
        self._qpos_w = np.zeros((n, self.model.nq))
        self._qvel_w = np.zeros((n, self.model.nv))

        self._setup_spaces()

    # ------------------------------------------------------------------ spaces
    def _setup_spaces(self) -> None:
        n, j = self.num_envs, g1.NUM_JOINTS
        dims = {g: b.shape[1] for g, b in self.observations.buffers.items()}

        def box(d: int) -> gym.spaces.Box:
            return gym.spaces.Box(-np.inf, np.inf, (d,), np.float32)

        if self.obs_mode == "dict":
            self.single_observation_space = gym.spaces.Dict({g: box(d) for g, d in dims.items()})
        else:
            self.single_observation_space = box(dims["policy"])
        self.single_action_space = gym.spaces.Box(-ACTION_BOUND, ACTION_BOUND, (j,), np.float32)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, n)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, n)

    # ------------------------------------------------------------------ API
    def reset(
        self, *, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all envs (or, in DISABLED mode, the rows of ``options["reset_mask"]``).

        ``seed`` (int) re-seeds every random stream: sampling, reset noise, observation noise,
        domain randomisation. Returns (observation, info); arrays belong to the caller.

        Raises:
            ValueError: a reset mask of the wrong shape, or a list of seeds.
        """
        if seed is None and self._seed is not None:
            seed, self._seed = self._seed, None
        if isinstance(seed, Sequence):
            raise ValueError("TrackingVecEnv takes one int seed for all envs, not a list")
        mask = None if options is None else options.get("reset_mask")
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            self.sampler.failure_ema.fill(0.0)
        if mask is None:
            ids = np.arange(self.num_envs)
            self.events.startup(self._rng)
        else:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ValueError(f"reset_mask must be a bool array of shape ({self.num_envs},)")
            ids = np.flatnonzero(mask)
        self.state.action[ids] = 0.0
        self._needs_reset[ids] = False
        self._start_episodes(ids)
        self._reinitialise(ids)
        self.backend.copy_body_state_w(self.state.robot)
        self.command.refresh()
        self._was_reset = True
        return self._observation(), {}

    def step(self, actions: np.ndarray):
        """Step every env one control step; see the class docstring for the order and info.

        Args:
            actions: (N, 29) finite floats.

        Raises:
            ValueError: wrong shape, or non-finite values (the offending rows are named).
            RuntimeError: `reset` was not called first.
        """
        if not self._was_reset:
            raise RuntimeError("TrackingVecEnv: call reset() before step()")
        s, n = self.state, self.num_envs
        t = perf_counter()
        actions = np.asarray(actions)
        if actions.shape != (n, g1.NUM_JOINTS):
            raise ValueError(f"actions must have shape ({n}, {g1.NUM_JOINTS}), got {actions.shape}")
        if not np.isfinite(actions).all():
            bad = np.flatnonzero(~np.isfinite(actions).all(axis=1))
            raise ValueError(f"actions of envs {bad[:10].tolist()} are not finite")
        np.copyto(s.last_action, s.action)
        np.copyto(s.action, actions, casting="same_kind")
        autoreset = self._needs_reset if self.autoreset_mode is AutoresetMode.NEXT_STEP else None
        if autoreset is not None:
            autoreset = autoreset.copy()
            s.action[autoreset] = 0.0
            s.last_action[autoreset] = 0.0

        # 1-2: actions -> physics -> fresh state
        np.multiply(s.action, self._action_scale, out=self._targets)
        self._targets += s.default_joint_pos
        self._targets -= s.encoder_bias
        t = self._lap("action", t)
        self.backend.step(self._targets)
        t = self._lap("physics", t)
        nonfinite = self.backend.nonfinite.copy()
        if nonfinite.any():
            self.nonfinite_count += int(nonfinite.sum())
            self._reinitialise(np.flatnonzero(nonfinite))
        self.backend.copy_body_state_w(s.robot)
        np.copyto(s.self_contact_substeps, self.backend.self_contact_substeps)
        t = self._lap("copy", t)

        # 3-4: reference, terminations, rewards, logs
        clip_end = self.command.advance().copy()
        self.command.refresh()
        t = self._lap("command", t)
        terminated = self.terminations.compute().copy()
        terminated |= nonfinite
        t = self._lap("termination", t)
        reward = self.rewards.compute().copy()
        reward[nonfinite] = 0.0
        self.episode_length += 1
        truncated = (self.episode_length >= self.max_episode_steps) & ~terminated
        if autoreset is not None:
            reward[autoreset] = 0.0
            terminated[autoreset] = False
            truncated[autoreset] = False
            clip_end[autoreset] = False
        self._accumulate(reward)
        done = terminated | truncated
        info = self._step_info(terminated, truncated, nonfinite, done, autoreset)
        t = self._lap("reward", t)

        # 5: events and the adaptive sampler
        push_ids, kick = self.events.push_velocities(self._rng)
        if push_ids.size:
            self._push(push_ids, kick)
        done_ids = np.flatnonzero(done)
        self.sampler.update(
            self.command.clip_ids[done_ids], self.command.frames[done_ids], terminated[done_ids]
        )

        # 6: resets
        teleport = clip_end & ~done
        info["clip_end"], info["_clip_end"] = teleport, np.ones(n, bool)
        if self.autoreset_mode is AutoresetMode.SAME_STEP and done_ids.size:
            final_obs = self._observation()
            info["final_obs"], info["_final_obs"] = final_obs, done.copy()
            final_info = {k: v for k, v in info.items() if k.startswith(("final/", "_final/"))}
            info["final_info"], info["_final_info"] = final_info, done.copy()
        restart = done_ids if self.autoreset_mode is AutoresetMode.SAME_STEP else None
        if autoreset is not None:
            restart = np.flatnonzero(autoreset)
            self._needs_reset[:] = done
        reinit = np.flatnonzero(teleport)
        if restart is not None and restart.size:
            self._start_episodes(restart)
            reinit = np.union1d(reinit, restart)
        if reinit.size:
            self._reinitialise(reinit)
        written = np.union1d(reinit, push_ids)
        if written.size:
            self.backend.copy_body_state_w(s.robot, written)
            self.command.refresh(written)
        t = self._lap("reset", t)

        # 7: observations
        obs = self._observation()
        self._lap("observation", t)
        return obs, reward, terminated, truncated, info

    def close(self, **kwargs: Any) -> None:
        """Release the backend's threads and memory."""
        if getattr(self, "backend", None) is not None:
            self.backend.close()
            self.backend = None

    @property
    def reset_noise_scale(self) -> float:
        """Factor on every `ResetCfg` range (root pose, root velocity, joints) of later resets.

        1.0 (the default) is ``cfg.reset``; 0.0 starts episodes exactly on the reference. A
        training curriculum can raise it from 0 to 1 (see `gym_motion.train`). Setting it
        raises ValueError unless it is a finite number >= 0. The random draws do not depend
        on it, so runs that differ only in the scale see the same frames and directions.
        """
        return self._reset_noise_scale

    @reset_noise_scale.setter
    def reset_noise_scale(self, scale: float) -> None:
        scale = float(scale)
        if not (np.isfinite(scale) and scale >= 0.0):
            raise ValueError(f"reset_noise_scale must be a finite number >= 0, got {scale}")
        reset = self.cfg.reset
        self._reset_pose = scale * np.array(reset.pose_range, np.float64)
        self._reset_vel = scale * np.array(reset.velocity_range, np.float64)
        self._reset_joint = scale * np.array(reset.joint_pos_range, np.float64)
        self._reset_noise_scale = scale

    # ------------------------------------------------------------------ stats
    @property
    def sampling_stats(self) -> dict[str, float]:
        """Normalised entropy and top-1 probability of the adaptive sampler's bins."""
        return {"entropy": float(self.sampler.entropy), "top1_prob": float(self.sampler.top1_prob)}

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

    def _start_episodes(self, ids: np.ndarray) -> None:
        """New episodes on rows `ids`: counters, logs, per-episode events, a sampled frame."""
        self.episode_length[ids] = 0
        self._term_sums[ids] = 0.0
        self._error_sums[ids] = 0.0
        self._return[ids] = 0.0
        self.state.last_action[ids] = 0.0
        self.state.action[ids] = 0.0
        self.events.reset(ids, self._rng)

    def _reinitialise(self, ids: np.ndarray) -> None:
        """Sample a motion frame for rows `ids` and write the robot there (RSI)."""
        clip_ids, frames = self.sampler.sample(ids.size, self._rng)
        self.command.set_frames(ids, clip_ids, frames)
        lib = self.library
        rows = self.command.reference_rows(ids)
        root = lib.body_names.index(g1.ROOT_BODY)
        m = ids.size
        qpos, qvel = self._qpos_w[:m], self._qvel_w[:m]
        unit = self._rng.random((m, 12 + g1.NUM_JOINTS))
        rsi_state(
            lib.body_pos_w[rows, root], lib.body_quat_w[rows, root],
            lib.body_lin_vel_w[rows, root], lib.body_ang_vel_w[rows, root],
            lib.joint_pos[rows], lib.joint_vel[rows], unit,
            self._reset_pose, self._reset_vel, self._reset_joint,
            self.state.soft_joint_limits, qpos, qvel,
        )  # fmt: skip
        self.backend.write_state(ids, qpos, qvel)

    def _push(self, ids: np.ndarray, kick: np.ndarray) -> None:
        """Add world-frame root velocity kicks (M, 6) to rows `ids`, keeping their pose."""
        r, root, m = self.state.robot, self.state.root, ids.size
        qpos, qvel = self._qpos_w[:m], self._qvel_w[:m]
        qpos[:, :3] = r.pos_w[ids, root]
        qpos[:, 3:7] = r.quat_w[ids, root]
        qpos[:, 7:] = r.joint_pos[ids]
        qvel[:, :3] = r.lin_vel_w[ids, root] + kick[:, :3]
        w = r.ang_vel_w[ids, root] + kick[:, 3:]
        qvel[:, 3:6] = rotate_inverse(qpos[:, 3:7], w)  # free joint: body frame
        qvel[:, 6:] = r.joint_vel[ids]
        self.backend.write_state(ids, qpos, qvel)

    def _accumulate(self, reward: np.ndarray) -> None:
        s = self.state
        tracking_errors(
            s.ref.pos_w, s.ref.quat_w, s.ref_rel_pos_w, s.ref_rel_quat_w,
            s.robot.pos_w, s.robot.quat_w, s.anchor, s.root,
            s.ref.joint_pos, s.ref.joint_vel, s.robot.joint_pos, s.robot.joint_vel, self._errors,
        )  # fmt: skip
        self._error_sums += self._errors
        self._term_sums += self.rewards.weighted * self.dt
        self._return += reward

    def _step_info(
        self, terminated, truncated, nonfinite, done, autoreset
    ) -> dict[str, np.ndarray]:
        # Rows being autoreset (NEXT_STEP) have no step of their own: masked out.
        every = np.ones(self.num_envs, bool) if autoreset is None else ~autoreset
        info: dict[str, np.ndarray] = {}
        for t, name in enumerate(self.rewards.names):
            info[f"reward/{name}"] = self.rewards.weighted[:, t].copy()
            info[f"_reward/{name}"] = every
        if not done.any():
            return info
        length = np.maximum(self.episode_length, 1)
        final = {
            "final/return": self._return.astype(np.float32),
            "final/length": self.episode_length.copy(),
        }
        for t, name in enumerate(self.rewards.names):
            final[f"final/reward/{name}"] = self._term_sums[:, t].astype(np.float32)
        for t, name in enumerate(self.terminations.names):
            final[f"final/termination/{name}"] = self.terminations.fired[t] & done & ~nonfinite
        final[f"final/termination/{NONFINITE}"] = nonfinite & done
        final[f"final/termination/{TIME_OUT}"] = truncated.copy()
        for e, name in enumerate(TRACKING_ERRORS):
            final[f"final/error/{name}"] = (self._error_sums[:, e] / length).astype(np.float32)
        for key, value in final.items():
            info[key] = value
            info["_" + key] = done
        return info


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
