"""Reward terms (docs/task.md section 7) and the manager that sums them.

A term is a function ``term(state, out, **params)`` writing one value per env into ``out``
(N,) float32 (the built-in ones are `bound_term`s: bound once, then only their kernel runs each
step). The manager scales each term by its weight and the control step dt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from gym_motion import config_values as cv
from gym_motion.kernels import rewards as k
from gym_motion.kernels.dispatch import bind_builds, builds_of
from gym_motion.managers.state import MDPState
from gym_motion.managers.terms import bind_term, bound_term


@bound_term
def anchor_pos(s: MDPState, out: np.ndarray, std: float) -> Callable[[], None]:
    """exp(-|p_ref - p|^2 / std^2) of the anchor body, world frame."""
    a = s.anchor
    return partial(k.anchor_pos_exp, s.ref.pos_w[:, a], s.robot.pos_w[:, a], std, out)


@bound_term
def anchor_ori(s: MDPState, out: np.ndarray, std: float) -> Callable[[], None]:
    """exp(-angle(q_ref, q)^2 / std^2) of the anchor body."""
    a = s.anchor
    return partial(k.anchor_ori_exp, s.ref.quat_w[:, a], s.robot.quat_w[:, a], std, out)


@bound_term
def body_pos(s: MDPState, out: np.ndarray, std: float, body_ids: np.ndarray) -> Callable[[], None]:
    """exp(-mean |p_rel_ref - p|^2 / std^2) over bodies, re-anchored reference."""
    return partial(k.body_pos_exp, s.ref_rel_pos_w, s.robot.pos_w, body_ids, std, out)


@bound_term
def body_ori(s: MDPState, out: np.ndarray, std: float, body_ids: np.ndarray) -> Callable[[], None]:
    """exp(-mean angle(q_rel_ref, q)^2 / std^2) over bodies, re-anchored reference."""
    return partial(k.body_ori_exp, s.ref_rel_quat_w, s.robot.quat_w, body_ids, std, out)


@bound_term
def body_lin_vel(
    s: MDPState, out: np.ndarray, std: float, body_ids: np.ndarray
) -> Callable[[], None]:
    """exp(-mean |v_ref - v|^2 / std^2) over bodies, world frame."""
    return partial(k.body_pos_exp, s.ref.lin_vel_w, s.robot.lin_vel_w, body_ids, std, out)


@bound_term
def body_ang_vel(
    s: MDPState, out: np.ndarray, std: float, body_ids: np.ndarray
) -> Callable[[], None]:
    """exp(-mean |w_ref - w|^2 / std^2) over bodies, world frame."""
    return partial(k.body_pos_exp, s.ref.ang_vel_w, s.robot.ang_vel_w, body_ids, std, out)


@bound_term
def action_rate(s: MDPState, out: np.ndarray) -> Callable[[], None]:
    """sum_j (a_t - a_{t-1})^2."""
    return partial(k.action_rate_l2, s.action, s.last_action, out)


@bound_term
def joint_limit(s: MDPState, out: np.ndarray) -> Callable[[], None]:
    """Sum over joints of the distance beyond the soft joint limits, rad."""
    return partial(k.joint_limit_violation, s.robot.joint_pos, s.soft_joint_limits, out)


@bound_term
def self_collision(s: MDPState, out: np.ndarray) -> Callable[[], None]:
    """Number of substeps of the last step with self-contact force above the threshold."""
    return partial(np.copyto, out, s.self_contact_substeps, casting="unsafe")


@dataclass(frozen=True)
class RewardTermCfg:
    """One reward term: ``weight * func(state, out, **params) * dt``.

    ``params["bodies"]`` (tuple of tracked body names, or None for all) is resolved to
    ``body_ids`` for the term function; a ``params["std"]`` must be a finite number > 0.

    Raises:
        ValueError: func not callable, weight not a finite number, params not a dict with str
            keys, a bad ``std`` (named).
    """

    func: Callable[..., None]
    weight: float
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cv.callable_("RewardTermCfg.func", self.func)
        object.__setattr__(self, "weight", cv.real("RewardTermCfg.weight", self.weight))
        cv.params("RewardTermCfg.params", self.params, self.func, leading=2)


class RewardManager:
    """Evaluates the configured reward terms into owned buffers.

    Per-episode sums (the return and each term's dt-scaled sum) are kept here too:
    `accumulate` adds a step, `episode_log` reads them, `reset` clears rows.

    ``serial``: whether its kernels run their serial builds (the env's `NumbaThreads.serial`).

    Attributes:
        names: term names in configuration order.
        weighted: (N, K) float32, weight * term of the last step (before dt), per term.
        reward: (N,) float32, sum over terms of weight * term * dt.
        term_sums: (N, K) float64, each term's dt-scaled sum over the episode so far.
        episode_return: (N,) float64, the sum of the env's (masked) rewards over the episode.
    """

    def __init__(
        self, terms: dict[str, RewardTermCfg], state: MDPState, dt: float, *, serial: bool
    ):
        self._dt = np.float32(dt)
        self.names = tuple(terms)
        n = state.num_envs
        self._raw = np.zeros((len(terms), n), np.float32)
        self._log_keys = tuple(f"reward/{name}" for name in self.names)
        self._weights = np.array([c.weight for c in terms.values()], np.float32)
        self.weighted = np.zeros((n, len(terms)), np.float32)
        self.reward = np.zeros(n, np.float32)
        self.term_sums = np.zeros((n, len(terms)), np.float64)
        self.episode_return = np.zeros(n, np.float64)
        # the terms, then their weighting (as calls without arguments, in the build of this batch)
        self._compute = builds_of([
            *(bind_term(c.func, state, self._raw[t], state.resolve_term_params(c.params))
              for t, c in enumerate(terms.values())),
            partial(k.weigh_terms, self._raw, self._weights, self._dt, self.weighted, self.reward),
        ])[serial]  # fmt: skip
        self._accumulate = bind_builds(
            partial(
                k.add_episode_sums, self.weighted, self._dt, self.term_sums, self.episode_return
            )
        )[serial]

    def compute(self) -> np.ndarray:
        """Evaluate every term; returns `reward` (N,) float32 (owned buffer)."""
        for call in self._compute:
            call()
        return self.reward

    def accumulate(self, reward: np.ndarray) -> np.ndarray:
        """Add the last step to the episode sums: each term's ``weighted * dt``, and `reward`
        (N,) float32 (the env's reward after masking) to the return.

        Returns the step's `weighted` as a new (K, N) float32 array (each term's values a
        contiguous row, for the step's info).
        """
        columns = np.empty(self.weighted.shape[::-1], np.float32)
        self._accumulate(reward, columns)
        return columns

    def episode_log(self) -> dict[str, np.ndarray]:
        """Episode sums so far: ``{"return": (N,), "reward/<term>": (N,)}``, float32."""
        sums = np.ascontiguousarray(self.term_sums.T, np.float32)  # (K, N): one cast
        log = {"return": self.episode_return.astype(np.float32)}
        log.update(zip(self._log_keys, sums, strict=True))
        return log

    def reset(self, env_ids: np.ndarray) -> None:
        """Start new episodes on rows `env_ids`: clear their sums."""
        self.term_sums[env_ids] = 0.0
        self.episode_return[env_ids] = 0.0
