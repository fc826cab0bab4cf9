"""Termination terms (docs/task.md section 8) and the manager that combines them.

A term is a function ``term(state, out, **params)`` writing ``out`` (N,) bool. The time limit is
not a term: the env reports it as truncation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gym_motion.kernels import terminations as k
from gym_motion.managers.state import MDPState


def anchor_height(s: MDPState, out: np.ndarray, threshold: float) -> None:
    """|z_ref - z| of the anchor body > threshold (m), reference not re-anchored."""
    a = s.anchor
    k.height_error_exceeds(s.ref.pos_w, s.robot.pos_w, np.array([a]), threshold, out)


def anchor_gravity(s: MDPState, out: np.ndarray, threshold: float) -> None:
    """|gravity z in the anchor frame, reference vs robot| > threshold."""
    a = s.anchor
    k.gravity_z_error_exceeds(s.ref.quat_w[:, a], s.robot.quat_w[:, a], threshold, out)


def body_height(s: MDPState, out: np.ndarray, threshold: float, body_ids: np.ndarray) -> None:
    """Any selected body's |z_rel_ref - z| > threshold (m), re-anchored reference."""
    k.height_error_exceeds(s.ref_rel_pos_w, s.robot.pos_w, body_ids, threshold, out)


@dataclass(frozen=True)
class TerminationTermCfg:
    """One termination condition; ``params["bodies"]`` is resolved to ``body_ids``."""

    func: Callable[..., None]
    params: dict[str, Any] = field(default_factory=dict)


class TerminationManager:
    """Evaluates the configured termination terms.

    Attributes:
        names: term names. fired: (K, N) bool, which terms fired on the last step.
        terminated: (N,) bool, any term fired.
    """

    NONFINITE = "nonfinite"  # cause: the physics state blew up (not a term)
    TIME_OUT = "time_out"  # cause: the time limit (a truncation, not a term)

    def __init__(self, terms: dict[str, TerminationTermCfg], state: MDPState):
        self._state = state
        self.names = tuple(terms)
        self._terms = []
        for cfg in terms.values():
            self._terms.append((cfg.func, state.resolve_term_params(cfg.params)))
        self.fired = np.zeros((len(self._terms), state.num_envs), bool)
        self.terminated = np.zeros(state.num_envs, bool)

    def compute(self) -> np.ndarray:
        """Evaluate every term; returns `terminated` (N,) bool (owned buffer)."""
        for t, (func, params) in enumerate(self._terms):
            func(self._state, self.fired[t], **params)
        np.any(self.fired, axis=0, out=self.terminated)
        return self.terminated

    def episode_log(
        self, done: np.ndarray, truncated: np.ndarray, nonfinite: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Why each episode ended on the last step: ``{"termination/<cause>": (N,) bool}`` for
        every term (fired, and the state was finite), `NONFINITE` and `TIME_OUT`.

        Args:
            done, truncated, nonfinite: (N,) bool of the step.
        """
        log = {
            f"termination/{name}": self.fired[t] & done & ~nonfinite
            for t, name in enumerate(self.names)
        }
        log[f"termination/{self.NONFINITE}"] = nonfinite & done
        log[f"termination/{self.TIME_OUT}"] = truncated.copy()
        return log
