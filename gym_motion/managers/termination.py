"""Termination terms (docs/task.md section 8) and the manager that combines them.

A term is a function ``term(state, out, **params)`` writing ``out`` (N,) bool (the built-in
ones are `bound_term`s). The time limit is
not a term: the env reports it as truncation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from gym_motion import config_values as cv
from gym_motion.kernels import terminations as k
from gym_motion.kernels.dispatch import builds_of
from gym_motion.managers.state import MDPState
from gym_motion.managers.terms import bind_term, bound_term


@bound_term
def anchor_height(s: MDPState, out: np.ndarray, threshold: float) -> Callable[[], None]:
    """|z_ref - z| of the anchor body > threshold (m), reference not re-anchored."""
    ids = np.array([s.anchor])
    return partial(k.height_error_exceeds, s.ref.pos_w, s.robot.pos_w, ids, threshold, out)


@bound_term
def anchor_horizontal(
    s: MDPState, out: np.ndarray, threshold: float, grace_steps: int = 0
) -> Callable[[], None]:
    """|xy_ref - xy| of the anchor body > threshold (m), reference not re-anchored, on rows
    whose state was last perturbed (episode start, re-initialisation, push) at least
    `grace_steps` control steps ago (`MDPState.steps_since_perturbation`; 0: every step).

    Not one of the task's terminations (docs/task.md section 8): an option that makes the task
    track the clip's global path, which BeyondMimic's terms leave to the ``anchor_pos`` reward
    (`gym-motion train --anchor-horizontal-termination`, ``--...-grace-s``).

    Raises:
        ValueError: `grace_steps` not an integer >= 0.
    """
    if not (isinstance(grace_steps, int | np.integer) and grace_steps >= 0):
        raise ValueError(f"anchor_horizontal: grace_steps must be an integer >= 0, got "
                         f"{grace_steps!r}")  # fmt: skip
    ids = np.array([s.anchor])
    since = s.steps_since_perturbation
    return partial(k.horizontal_error_exceeds, s.ref.pos_w, s.robot.pos_w, ids, threshold, since,
                   int(grace_steps), out)  # fmt: skip


@bound_term
def anchor_gravity(s: MDPState, out: np.ndarray, threshold: float) -> Callable[[], None]:
    """|gravity z in the anchor frame, reference vs robot| > threshold."""
    a = s.anchor
    ref, robot = s.ref.quat_w[:, a], s.robot.quat_w[:, a]
    return partial(k.gravity_z_error_exceeds, ref, robot, threshold, out)


@bound_term
def body_height(
    s: MDPState, out: np.ndarray, threshold: float, body_ids: np.ndarray
) -> Callable[[], None]:
    """Any selected body's |z_rel_ref - z| > threshold (m), re-anchored reference."""
    ref, robot = s.ref_rel_pos_w, s.robot.pos_w
    return partial(k.height_error_exceeds, ref, robot, body_ids, threshold, out)


@dataclass(frozen=True)
class TerminationTermCfg:
    """One termination condition; ``params["bodies"]`` is resolved to ``body_ids``.

    Raises:
        ValueError: func not callable, or params not a dict with str keys (named).
    """

    func: Callable[..., None]
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cv.callable_("TerminationTermCfg.func", self.func)
        cv.params("TerminationTermCfg.params", self.params, self.func, leading=2)


class TerminationManager:
    """Evaluates the configured termination terms.

    ``serial``: whether its kernels run their serial builds (the env's `NumbaThreads.serial`).

    Attributes:
        names: term names. fired: (K, N) bool, which active terms fired on the last step.
        terminated: (N,) bool, any active term fired. active: (K,) bool, the terms that end
            episodes (all, unless a training curriculum switches some off); the kernels hold
            this array, so change it through `inactive` or in place, never by assignment.
    """

    NONFINITE = "nonfinite"  # cause: the physics state blew up (not a term)
    TIME_OUT = "time_out"  # cause: the time limit (a truncation, not a term)

    def __init__(self, terms: dict[str, TerminationTermCfg], state: MDPState, *, serial: bool):
        self.names = tuple(terms)
        self.fired = np.zeros((len(terms), state.num_envs), bool)
        self._log_keys = tuple(f"termination/{name}" for name in self.names)
        self.terminated = np.zeros(state.num_envs, bool)
        self.active = np.ones(len(terms), bool)
        # the terms, then their OR (as calls without arguments, in the build of this batch)
        self._compute = builds_of([
            *(bind_term(c.func, state, self.fired[t], state.resolve_term_params(c.params))
              for t, c in enumerate(terms.values())),
            partial(k.any_fired, self.fired, self.active, self.terminated),
        ])[serial]  # fmt: skip

    @property
    def inactive(self) -> tuple[str, ...]:
        """Names of the terms switched off: they end no episode and never count as fired."""
        return tuple(name for name, on in zip(self.names, self.active, strict=True) if not on)

    @inactive.setter
    def inactive(self, names: tuple[str, ...] | list[str]) -> None:
        names = tuple(names)
        unknown = [name for name in names if name not in self.names]
        if unknown:
            raise ValueError(f"no termination term named {unknown} (the terms: {self.names})")
        self.active[:] = [name not in names for name in self.names]

    def compute(self) -> np.ndarray:
        """Evaluate every term; returns `terminated` (N,) bool (owned buffer)."""
        for call in self._compute:
            call()
        return self.terminated

    def episode_log(
        self, done: np.ndarray, truncated: np.ndarray, nonfinite: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Why each episode ended on the last step: ``{"termination/<cause>": (N,) bool}`` for
        every term (fired, and the state was finite), `NONFINITE` and `TIME_OUT`.

        Args:
            done, truncated, nonfinite: (N,) bool of the step.
        """
        fired = self.fired & (done & ~nonfinite)
        log = dict(zip(self._log_keys, fired, strict=True))
        log[f"termination/{self.NONFINITE}"] = nonfinite & done
        log[f"termination/{self.TIME_OUT}"] = truncated.copy()
        return log
