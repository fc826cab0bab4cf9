"""What a policy is to gym_motion: a callable from a batch of observations to a batch of
actions, or an object bound to its env first.

Evaluation, videos and deploy code all take these types; they need no RL library. Example::

    W = np.zeros((160, 29), np.float32)
    policy: Policy = lambda obs: obs @ W
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["BindablePolicy", "Obs", "Policy", "bind_policy", "zero_policy"]

Obs = np.ndarray | dict[str, np.ndarray]
"""A batch of observations: (N, D) float32, or ``{"policy": (N, D), "critic": (N, C)}``
float32 arrays in the env's dict observation mode."""

Policy = Callable[[Obs], np.ndarray]
"""obs (`Obs`, N rows) -> actions (N, A) float32 (A = 29 for the G1), deterministic."""


@runtime_checkable
class BindablePolicy(Protocol):
    """A policy that needs its env (its config, or state such as the motion frame): `bind`
    returns the `Policy` for one env; it may raise ValueError when it cannot run there."""

    def bind(self, env: Any) -> Policy: ...


def zero_policy(num_actions: int) -> Policy:
    """The zero action (the default joint pose): obs (N rows) -> (N, num_actions) float32."""

    def act(obs: Obs) -> np.ndarray:
        n = len(next(iter(obs.values()))) if isinstance(obs, dict) else len(obs)
        return np.zeros((n, num_actions), np.float32)

    return act


def bind_policy(policy: Policy | BindablePolicy | None, env: Any) -> Policy:
    """The `Policy` that runs in `env` (a `TrackingVecEnv`): a `BindablePolicy` bound to it,
    None as the zero action of the env's action size, a `Policy` as it is.

    Raises:
        ValueError: a `BindablePolicy` that cannot run in `env`.
    """
    if policy is None:
        return zero_policy(env.single_action_space.shape[0])
    if isinstance(policy, BindablePolicy):
        return policy.bind(env)
    return policy
