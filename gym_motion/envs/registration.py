"""Entry points of the registered ids (see `gym_motion.ENV_IDS`).

``GymMotion/G1-Tracking-Eval-v0`` is the evaluation task: `eval_cfg` of the given (or default)
config, i.e. clips played from their start, no observation noise, no reset noise, no domain
randomisation or pushes.

Time limits: the env owns its limit (its truncation carries the episode results in
``final/...``), so the ids are registered without one (``max_episode_steps=None``) and a limit
the user gives reaches the env:

- ``gymnasium.make_vec(id, max_episode_steps=K)`` passes K to the vector entry point;
- ``gymnasium.make(id, max_episode_steps=K)`` gives K only to the `TimeLimit` wrapper it puts
  around the env (Gymnasium has no way to hand it to the env, its issue #615), so the
  single-env entry points below read the limit that `make` is applying, from `make`'s own call,
  and build the env with it; the wrapper then truncates on the same step as the env.
  ``gymnasium.make(id)`` applies no wrapper and the env's default holds
  (``cfg.episode_length_s``, 500 steps by default).

Either way ``env.spec.max_episode_steps`` is the env's limit.
"""

from __future__ import annotations

import sys
from typing import Any

import gymnasium as gym

from gym_motion.envs.config import TrackingEnvCfg, eval_cfg
from gym_motion.envs.single import TrackingEnv
from gym_motion.envs.tracking import TrackingVecEnv

__all__ = ["eval_env", "eval_vec_env", "tracking_env"]


def tracking_env(**kwargs: Any) -> TrackingEnv:
    """`TrackingEnv` for ``gymnasium.make``, its time limit the one `make` applies (if any)."""
    kwargs.setdefault("max_episode_steps", _make_time_limit(sys._getframe(1)))
    return TrackingEnv(**kwargs)


def eval_vec_env(cfg: TrackingEnvCfg | None = None, **kwargs: Any) -> TrackingVecEnv:
    """`TrackingVecEnv` on ``eval_cfg(cfg)``; other keyword arguments as `TrackingVecEnv`."""
    return TrackingVecEnv(cfg=eval_cfg(cfg), **kwargs)


def eval_env(cfg: TrackingEnvCfg | None = None, **kwargs: Any) -> TrackingEnv:
    """`TrackingEnv` (single env) on ``eval_cfg(cfg)``, its time limit the one
    ``gymnasium.make`` applies (if any); other keyword arguments as `TrackingEnv`."""
    kwargs.setdefault("max_episode_steps", _make_time_limit(sys._getframe(1)))
    return TrackingEnv(cfg=eval_cfg(cfg), **kwargs)


# entry points have no class metadata: gymnasium.make reads the render modes from here
tracking_env.metadata = eval_env.metadata = TrackingEnv.metadata  # type: ignore[attr-defined]


def _make_time_limit(caller) -> int | None:
    """The `TimeLimit` steps that ``gymnasium.make`` will wrap around the env it is building.

    Args:
        caller: the frame that called the entry point.

    Returns:
        make's ``max_episode_steps`` argument, else its spec's; None when the caller is not
        ``gymnasium.make``, when there is no limit, or for ``max_episode_steps=-1`` (no wrapper).
    """
    if caller is None or caller.f_code is not gym.envs.registration.make.__code__:
        return None
    local = caller.f_locals
    steps = local.get("max_episode_steps")
    if steps is None:
        spec = local.get("env_spec")
        steps = getattr(spec, "max_episode_steps", None)
    return None if steps is None or steps == -1 else int(steps)
