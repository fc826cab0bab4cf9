"""Domain randomisation events (TASK_SPEC section 11): pushes, torso CoM, foot friction,
joint encoder bias. Each is switchable in `EventCfg`; all draw from the env's seeded RNG."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gym_motion.managers.state import MDPState


@dataclass(frozen=True)
class EventCfg:
    """Domain randomisation settings; a range of None switches that event off.

    Attributes:
        push_interval_s: (low, high) s between pushes of each env.
        push_velocity: (6, 2) (low, high) root velocity kick, x y z m/s, roll pitch yaw rad/s,
            world frame.
        torso_com_offset: (3, 2) (low, high) torso centre-of-mass offset, m, body frame; at start.
        foot_friction: (low, high) sliding friction of the foot geoms; at start.
        encoder_bias: (low, high) rad, per env and joint, drawn at each episode reset; added to
            observed joint positions and subtracted from position targets.
    """

    push_interval_s: tuple[float, float] | None = (1.0, 3.0)
    push_velocity: tuple[tuple[float, float], ...] = (
        (-0.5, 0.5), (-0.5, 0.5), (-0.2, 0.2), (-0.52, 0.52), (-0.52, 0.52), (-0.78, 0.78),
    )  # fmt: skip
    torso_com_offset: tuple[tuple[float, float], ...] | None = (
        (-0.025, 0.025), (-0.05, 0.05), (-0.05, 0.05),
    )  # fmt: skip
    torso_body: str = "torso_link"
    foot_friction: tuple[float, float] | None = (0.3, 1.2)
    encoder_bias: tuple[float, float] | None = (-0.01, 0.01)


NO_EVENTS = EventCfg(None, torso_com_offset=None, foot_friction=None, encoder_bias=None)


class EventManager:
    """Draws and schedules the randomisation events of `cfg` for N envs at control step dt."""

    def __init__(self, cfg: EventCfg, state: MDPState, backend, dt: float):
        self.cfg = cfg
        self._state = state
        self._backend = backend
        self._dt = dt
        n = state.num_envs
        self._push_timer = np.full(n, np.inf)
        self._push_low = np.array([r[0] for r in cfg.push_velocity])
        self._push_high = np.array([r[1] for r in cfg.push_velocity])
        self.pushed = np.zeros(n, bool)

    def startup(self, rng: np.random.Generator) -> None:
        """Per-env model randomisation (torso CoM, foot friction) of every env."""
        ids = np.arange(self._state.num_envs)
        if self.cfg.torso_com_offset is not None:
            r = np.array(self.cfg.torso_com_offset)
            off = rng.uniform(r[:, 0], r[:, 1], size=(ids.size, 3))
            self._backend.set_body_com_offset(ids, self.cfg.torso_body, off)
        if self.cfg.foot_friction is not None:
            lo, hi = self.cfg.foot_friction
            self._backend.set_foot_friction(ids, rng.uniform(lo, hi, size=ids.size))

    def reset(self, env_ids: np.ndarray, rng: np.random.Generator) -> None:
        """Episode-start events of rows `env_ids`: encoder bias and the next push time."""
        if self.cfg.encoder_bias is not None:
            lo, hi = self.cfg.encoder_bias
            nj = self._state.encoder_bias.shape[1]
            self._state.encoder_bias[env_ids] = rng.uniform(lo, hi, size=(env_ids.size, nj))
        if self.cfg.push_interval_s is not None:
            lo, hi = self.cfg.push_interval_s
            self._push_timer[env_ids] = rng.uniform(lo, hi, size=env_ids.size)

    def push_velocities(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Advance push timers one step; returns (env_ids (M,), root velocity kicks (M, 6))."""
        self._push_timer -= self._dt
        np.less_equal(self._push_timer, 0.0, out=self.pushed)
        ids = np.flatnonzero(self.pushed)
        if ids.size == 0:
            return ids, np.zeros((0, 6))
        lo, hi = self.cfg.push_interval_s
        self._push_timer[ids] = rng.uniform(lo, hi, size=ids.size)
        return ids, rng.uniform(self._push_low, self._push_high, size=(ids.size, 6))
