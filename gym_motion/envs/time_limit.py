"""The env's own time limit: ``max_episode_steps``, its per-env offset, and the spec reporting it.

The env truncates episodes itself (the episode results come with the truncation), so no
gymnasium ``TimeLimit`` wrapper is used; ``gymnasium.make_vec`` and ``gymnasium.make`` pass their
``max_episode_steps`` to the constructor, and ``env.spec.max_episode_steps`` reports the env's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from gymnasium.envs.registration import EnvSpec

from gym_motion import config_values as cv
from gym_motion.envs.config import MAX_EPISODE_STEPS
from gym_motion.motion.library import MotionLibrary, Playback

__all__ = ["TimeLimitMixin", "spec_with_time_limit"]


def spec_with_time_limit(spec: EnvSpec | None, max_episode_steps: int) -> EnvSpec | None:
    """`spec` (None stays None) with ``max_episode_steps`` set to the env's own time limit,
    and a `MotionLibrary` built from clip files in its kwargs given as those files (its
    ``source``: the paths, and ``motion_playback`` when not real time), so that the spec
    serialises (``to_json``) and rebuilds the same env."""
    if spec is None:
        return spec
    motion = spec.kwargs.get("motion")
    if isinstance(motion, MotionLibrary) and motion.source is not None:
        kwargs = {**spec.kwargs, "motion": list(motion.source["paths"])}
        if motion.source["playback"] != Playback.REAL_TIME:
            kwargs["motion_playback"] = motion.source["playback"]
        spec = replace(spec, kwargs=kwargs)
    if spec.max_episode_steps == max_episode_steps:
        return spec
    return replace(spec, max_episode_steps=max_episode_steps)


class TimeLimitMixin:
    """The time limit of a `TrackingVecEnv`: `max_episode_steps` (int, control steps),
    `time_limit_offset` and `spec`, set up by `_init_time_limit`.

    Reads nothing else of the env; writes only its own attributes below (the env's step and
    episode starts write `time_limit_offset` through the property, in place)."""

    max_episode_steps: int
    _time_limit_offset: np.ndarray
    _spec: EnvSpec | None = None  # see the `spec` property

    def _init_time_limit(self, max_episode_steps: int | None, default: int, num_envs: int) -> None:
        """Set `max_episode_steps` (None: `default`) and zero offsets for `num_envs` envs.

        Raises:
            ValueError: max_episode_steps not an int >= 1, or not below `MAX_EPISODE_STEPS`.
        """
        if max_episode_steps is not None:
            max_episode_steps = cv.integer("max_episode_steps", max_episode_steps, low=1)
            if max_episode_steps >= MAX_EPISODE_STEPS:
                raise ValueError(
                    f"max_episode_steps must be < {MAX_EPISODE_STEPS:,} (int32 episode "
                    f"counters), got {max_episode_steps}"
                )
        self.max_episode_steps = int(max_episode_steps or default)
        # Steps counted against the time limit on top of episode_length, per env (0 at each
        # episode start; `final/length` stays episode_length). A trainer that spreads episode
        # ends writes it (rsl_rl's init_at_random_ep_len, through `RslRlVecEnv`).
        self._time_limit_offset = np.zeros(num_envs, np.int32)

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
