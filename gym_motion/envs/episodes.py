"""Episode bookkeeping of a `TrackingVecEnv`: its per-env episode counters, starting episodes,
re-initialising rows on a motion frame (RSI), and the results of the episodes that ended."""

from __future__ import annotations

import numpy as np

__all__ = ["EpisodesMixin"]


class EpisodesMixin:
    """Episodes of a `TrackingVecEnv` over its components, set up by `_init_episodes`.

    Attributes:
        episode_length: (N,) int32, control steps of each env's current episode.
        nonfinite_count: rows whose physics state blew up (re-initialised at once), summed
            since construction.
    """

    def _init_episodes(self, num_envs: int) -> None:
        self.episode_length = np.zeros(num_envs, np.int32)
        self.nonfinite_count = 0

    def _start_episodes(self, ids: np.ndarray) -> None:
        """New episodes on rows `ids`: counters, sums, actions, per-episode events."""
        self.episode_length[ids] = 0
        self._time_limit_offset[ids] = 0
        self.rewards.reset(ids)
        self.command.reset(ids)
        self.state.last_action[ids] = 0.0
        self.state.action[ids] = 0.0
        self.state.action_obs[ids] = 0.0
        self.events.reset(ids, self._rng)

    def _reinitialise(self, ids: np.ndarray, start: tuple[int, int] | None = None) -> None:
        """Sample a motion frame for rows `ids` (or take `start`, a (clip id, frame)) and
        write the robot there (RSI)."""
        qpos, qvel = self.command.sample_states(ids, self._rng, start)
        self.backend.write_state(ids, qpos, qvel)
        self.state.steps_since_perturbation[ids] = 0

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
