"""What a `TrackingVecEnv` is built of: its motion library, MuJoCo model, physics backend, MDP
state and managers (`ComponentsMixin._init_components`), and the env attributes that forward to
them (`reset_noise_scale`, `inactive_terminations`, `sampling_stats`)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from gym_motion.backends import make_backend
from gym_motion.backends.threads import NumbaThreads
from gym_motion.managers.action import ActionManager
from gym_motion.managers.command import CommandManager
from gym_motion.managers.events import EventContext, EventManager
from gym_motion.managers.observation import ObservationManager
from gym_motion.managers.reward import RewardManager
from gym_motion.managers.state import MDPState
from gym_motion.managers.termination import TerminationManager
from gym_motion.motion.library import MotionLibrary, Playback
from gym_motion.robots.spec import body_ids

__all__ = ["ComponentsMixin"]


class ComponentsMixin:
    """The components of a `TrackingVecEnv`, built by `_init_components`.

    Attributes:
        library: the `MotionLibrary` at the control rate. model: the compiled ``MjModel``.
        layout: the robot's `JointLayout` in `model` (robot order <-> the model's columns).
        backend: the `SimBackend` of N envs. state: the `MDPState`. actions, command, rewards,
        terminations, events, observations: the managers.
    """

    def _init_components(
        self,
        motion: str | os.PathLike | Sequence[str | os.PathLike] | MotionLibrary | None,
        motion_playback: Playback | str,
    ) -> None:
        """Build every component from ``self.cfg`` for ``self.num_envs`` envs at control step
        ``self.dt``, and size Numba's pool to the batch (``self._numba_threads``, a
        `NumbaThreads`); the managers bind the kernel build that implies, once."""
        cfg, robot, n = self.cfg, self.cfg.robot, self.num_envs
        self.library = MotionLibrary.load(motion, robot, 1.0 / self.dt, motion_playback)
        self.model = robot.build_model(floor=True)
        self.model.opt.timestep = cfg.sim.physics_dt
        self.layout = robot.layout(self.model)
        self.backend = make_backend(
            cfg.backend.name,
            self.model,
            n,
            body_ids(self.model, robot.tracked_bodies),
            self.layout.joint_ids,
            decimation=cfg.sim.decimation,
            self_contact_threshold=cfg.sim.self_contact_threshold,
            **cfg.backend.kwargs(),
        )
        # after make_backend, which sized this thread's Numba pool (the ceiling) to the budget
        self._numba_threads = NumbaThreads.for_rows(n)
        serial = self._numba_threads.serial

        self.state = s = MDPState.for_robot(robot, self.model, n)
        self.actions = ActionManager(s, robot.action_scale, cfg.action_offset, serial=serial)
        self.command = CommandManager(
            self.library, s, robot.root_body, cfg.sampling, cfg.reset, self.dt,
            layout=self.layout, serial=serial,
        )  # fmt: skip
        self.rewards = RewardManager(cfg.rewards, s, self.dt, serial=serial)
        self.terminations = TerminationManager(cfg.terminations, s, serial=serial)
        ctx = EventContext.for_robot(s, self.backend, robot, self.model)
        self.events = EventManager(cfg.events, ctx, self.dt, serial=serial)
        groups = cfg.observation_groups()
        self.observations = ObservationManager(groups, s, cfg.obs_noise, serial=serial)

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
        switch a term on after some env steps (`RunConfig.termination_from_steps`).

        Raises:
            ValueError: (setter) a name that is not one of ``cfg.terminations``.
        """
        return self.terminations.inactive

    @inactive_terminations.setter
    def inactive_terminations(self, names: tuple[str, ...] | list[str]) -> None:
        self.terminations.inactive = names

    @property
    def sampling_stats(self) -> dict[str, float]:
        """Normalised entropy and top-1 probability of the adaptive sampler's bins."""
        sampler = self.command.sampler
        return {"entropy": float(sampler.entropy), "top1_prob": float(sampler.top1_prob)}
