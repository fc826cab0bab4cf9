"""Curricula of a training run: terms that change the training env between rollouts.

A curriculum term is ``CurriculumTermCfg(func, params)``; after every rollout the training loop
(`gym_motion.training.progress.Progress`) calls ``func(state, **params)`` for each term of
`RunConfig.curricula`, in order, on one `CurriculumState`, and applies what the terms set to the
env (and to Ray samplers' envs) for the next rollout. Terms follow env steps, not wall time, so a
run's curriculum does not depend on the machine's speed. Built-in terms:

- `reset_noise_ramp`: docs/task.md section 9's reset noise ramped from none to full.
- `termination_from_steps`: a termination term ends episodes only from some env steps on.
- `termination_from_episode_s`: ... only once the training episodes last some seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gym_motion import config_values as cv

__all__ = [
    "CurriculumState",
    "CurriculumTermCfg",
    "reset_noise_ramp",
    "reset_noise_scale",
    "termination_from_episode_s",
    "termination_from_steps",
]


def reset_noise_scale(progress: float, ramp: float) -> float:
    """Reset-noise scale at `progress` (env steps done, or a fraction of the run): a linear ramp
    from 0 to 1 over the first `ramp` (in the same unit), then 1 (`ramp` 0: always 1)."""
    if ramp <= 0.0:
        return 1.0
    return min(1.0, max(0.0, progress / ramp))


@dataclass(frozen=True)
class CurriculumTermCfg:
    """One curriculum term: ``func(state: CurriculumState, **params)``.

    Raises:
        ValueError: func not callable or params not a dict of keyword arguments (named).
    """

    func: Callable[..., None]
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cv.callable_("CurriculumTermCfg.func", self.func)
        cv.params("CurriculumTermCfg.params", self.params, self.func, leading=1)


@dataclass
class CurriculumState:
    """What curriculum terms read and set after a rollout.

    Attributes:
        env_steps: env steps done (all envs, all ranks).
        switched_on: termination name -> the env step it was switched on at, for terms that
            switch on once and stay on; kept across rollouts and resumes.
        reset_noise_scale: factor on the reset noise ranges of the next rollout (1: the task's).
        inactive_terminations: termination terms that end no episode in the next rollout.
    """

    env_steps: int
    switched_on: dict[str, int]
    mean_episode_s: Callable[[], float | None] = lambda: None
    """The training episodes' mean length, s, over the last rollouts (`Progress`), or None
    when there are too few yet or no new rollout was logged. In a distributed run it is
    reduced over the ranks when first called: a term must call it on every rank or on none."""
    reset_noise_scale: float = 1.0
    inactive_terminations: list[str] = field(default_factory=list)


def reset_noise_ramp(state: CurriculumState, steps: int) -> None:
    """Ramp the reset noise linearly from none to full over the first `steps` env steps (0:
    full from the first step). A fixed step count, not a share of the run, so that a longer or
    resumed run keeps the same curriculum."""
    state.reset_noise_scale = reset_noise_scale(state.env_steps, steps)


def termination_from_steps(state: CurriculumState, term: str, steps: int) -> None:
    """Termination `term` ends episodes only from `steps` env steps on (e.g. first learn to
    survive, then keep to the clip's timing)."""
    if state.env_steps < steps:
        state.inactive_terminations.append(term)


def termination_from_episode_s(state: CurriculumState, term: str, seconds: float) -> None:
    """Termination `term` switches on once the training episodes last `seconds` on average,
    and stays on (the same curriculum as `termination_from_steps` without a per-clip step
    count); the env step it switched on at is kept in ``state.switched_on``."""
    if term in state.switched_on:
        return
    mean = state.mean_episode_s()
    if mean is not None and mean >= seconds:
        state.switched_on[term] = int(state.env_steps)
        print(
            f"gym-motion train: termination {term!r} on from {state.env_steps:,} env steps "
            f"(training episodes {mean:.2f} s on average)",
            flush=True,
        )
        return
    state.inactive_terminations.append(term)


def check_curricula(curricula: Any, terminations: dict[str, Any], episode_length_s: float) -> None:
    """Check a run's curriculum terms against its task: a ``term`` parameter names one of the
    task's `terminations`, switched by one curriculum term only; ``steps`` is an integer >= 0;
    ``seconds`` is > 0 and below the episodes' time limit `episode_length_s` (which no mean
    length reaches).

    Raises:
        ValueError: otherwise, naming the curriculum term, the parameter and the value.
    """
    cv.term_dict("RunConfig.curricula", curricula, CurriculumTermCfg)
    switched: dict[str, str] = {}
    for name, cfg in curricula.items():
        where = f"RunConfig.curricula[{name!r}].params"
        term = cfg.params.get("term")
        if "term" in cfg.params:
            if term not in terminations:
                raise ValueError(
                    f"{where}['term'] is {term!r}, which is not one of the task's termination "
                    f"terms {tuple(terminations)}"
                )
            if term in switched:
                raise ValueError(
                    f"termination {term!r} is switched on by two curriculum terms "
                    f"({switched[term]!r} and {name!r}): give one"
                )
            switched[term] = name
        if "steps" in cfg.params:
            cv.integer(f"{where}['steps']", cfg.params["steps"], low=0)
        if "seconds" in cfg.params:
            seconds = cfg.params["seconds"]
            ok = isinstance(seconds, int | float) and 0.0 < seconds < episode_length_s
            if not ok:
                raise ValueError(
                    f"{where}['seconds'] must be > 0 and below the episodes' time limit "
                    f"({episode_length_s:g} s, which no mean length reaches), got {seconds!r}"
                )
