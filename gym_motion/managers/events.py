"""Event terms: domain randomisation and pushes (docs/task.md section 11), and their manager.

An event term is ``EventTermCfg(func, mode, params)`` with ``func(ctx, env_ids, rng, **params)``
acting on rows `env_ids` (M,) int64 through the `EventContext` (the shared MDP state and the
physics backend). The mode says when it runs:

- ``"startup"``: once for every env, at each full `reset` (per-env model fields);
- ``"reset"``: on the rows of every new episode;
- ``"interval"``: on each env every ``U(interval_s)`` seconds of its episode (a new interval is
  drawn when the term fires and at each episode start).

Terms draw from the env's seeded generator in configuration order, so a seed repeats them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from typing import Any

import numpy as np

from gym_motion import config_values as cv
from gym_motion.kernels.dispatch import bind_builds
from gym_motion.kernels.episode import count_down
from gym_motion.managers.state import MDPState


class EventMode(StrEnum):
    """When an event term runs."""

    STARTUP = "startup"
    RESET = "reset"
    INTERVAL = "interval"


@dataclass(frozen=True)
class EventTermCfg:
    """One event term: ``func(ctx, env_ids, rng, **params)`` run in `mode`.

    Attributes:
        func: the term function. mode: `EventMode` or its value.
        params: keyword arguments of `func`.
        interval_s: (low, high) s between firings; required for (and only for) interval mode.

    A term function may declare the ranges it draws from in ``func.param_ranges`` (parameter
    -> `ParamRange`; the terms below do): each is checked here, when the config is built.

    Raises:
        ValueError: func not callable, an unknown mode, params not a dict with str keys,
            interval_s given for another mode, missing for interval mode, or not a (low, high)
            pair of finite numbers with 0 < low <= high; a declared range that is not
            (low, high) pairs of finite numbers with low <= high within its bound (one line
            naming the term, parameter and value).
    """

    func: Callable[..., None]
    mode: EventMode | str
    params: dict[str, Any] = field(default_factory=dict)
    interval_s: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        cv.callable_("EventTermCfg.func", self.func)
        modes = [m.value for m in EventMode]
        if self.mode not in modes:
            raise ValueError(f"EventTermCfg.mode must be one of {modes}, got {self.mode!r}")
        cv.params("EventTermCfg.params", self.params, self.func, leading=3)
        if (self.mode == EventMode.INTERVAL) != (self.interval_s is not None):
            raise ValueError(
                "EventTermCfg.interval_s is required for interval mode only, got "
                f"{self.interval_s!r} for mode {self.mode!r}"
            )
        if self.interval_s is not None:
            interval = cv.interval("EventTermCfg.interval_s", self.interval_s, low=0.0,
                                   low_open=True)  # fmt: skip
            object.__setattr__(self, "interval_s", interval)
        name = getattr(self.func, "__name__", repr(self.func))
        for param, spec in getattr(self.func, "param_ranges", {}).items():
            if param in self.params:
                spec.check(f"event term {name}: {param}", self.params[param])


@dataclass(frozen=True)
class ParamRange:
    """What a term's range parameter must be: one (low, high) pair (`rows` None) or `rows`
    pairs, each of finite numbers with low <= high, and both >= `low` (> `low` with
    `low_open`; None: no bound), `why` saying what the bound is for."""

    rows: int | None = None
    low: float | None = None
    low_open: bool = False
    why: str = ""

    def check(self, where: str, value: Any) -> None:
        """Raises ValueError naming `where` and the value when `value` breaks the rule."""
        pairs = [value] if self.rows is None else value
        if self.rows is not None and (not isinstance(value, (tuple, list, np.ndarray))
                                      or len(value) != self.rows):  # fmt: skip
            raise ValueError(f"{where} must be {self.rows} (low, high) pairs, got {value!r}")
        for i, pair in enumerate(pairs):
            at = where if self.rows is None else f"{where}[{i}]"
            low, _ = cv.interval(at, pair)  # finite numbers, low <= high
            if self.low is not None:
                try:
                    cv.real(f"{at}[0]", low, low=self.low, low_open=self.low_open)
                except ValueError as exc:
                    raise ValueError(f"{exc}{f' ({self.why})' if self.why else ''}") from None


@dataclass(frozen=True)
class EventContext:
    """What event terms act on.

    Attributes:
        state: the shared MDP state (e.g. `MDPState.encoder_bias`).
        backend: the physics backend (`set_model_field`, `model_field`, `add_root_velocity`).
        body_ids: robot body name -> model body id.
        foot_geom_ids: (G,) int64 model ids of the feet's collision geoms.
    """

    state: MDPState
    backend: Any
    body_ids: dict[str, int]
    foot_geom_ids: np.ndarray

    @classmethod
    def for_robot(cls, state: MDPState, backend: Any, robot: Any, model: Any) -> EventContext:
        """The context of `robot` (a `RobotSpec`) on its compiled `model`."""
        ids = {name: model.body(name).id for name in robot.body_names}
        return cls(state, backend, ids, robot.foot_geom_ids(model))


# ------------------------------------------------------------------ terms
def body_com_offset(
    ctx: EventContext, env_ids: np.ndarray, rng: np.random.Generator, body: str, offset_range
) -> None:
    """Move `body`'s centre of mass to nominal + U(offset_range) (3, 2) m, body frame."""
    r = np.array(offset_range)
    offset = rng.uniform(r[:, 0], r[:, 1], size=(env_ids.size, 3))
    bid = [ctx.body_ids[body]]
    nominal = ctx.backend.model_field("body_ipos", bid)  # (1, 3)
    ctx.backend.set_model_field("body_ipos", env_ids, bid, (nominal + offset)[:, None, :])


def foot_friction(
    ctx: EventContext, env_ids: np.ndarray, rng: np.random.Generator, friction_range
) -> None:
    """Sliding friction of every foot geom := U(friction_range), one draw per env."""
    lo, hi = friction_range
    mu = rng.uniform(lo, hi, size=env_ids.size)
    geoms = ctx.foot_geom_ids
    nominal = ctx.backend.model_field("geom_friction", geoms)  # (G, 3)
    values = np.repeat(nominal[None], env_ids.size, axis=0)
    values[:, :, 0] = mu[:, None]
    ctx.backend.set_model_field("geom_friction", env_ids, geoms, values)


def encoder_bias(
    ctx: EventContext, env_ids: np.ndarray, rng: np.random.Generator, bias_range
) -> None:
    """Joint encoder bias := U(bias_range) rad per env and joint (added to observed joint
    positions, subtracted from position targets)."""
    lo, hi = bias_range
    nj = ctx.state.encoder_bias.shape[1]
    ctx.state.encoder_bias[env_ids] = rng.uniform(lo, hi, size=(env_ids.size, nj))


def push_root(
    ctx: EventContext, env_ids: np.ndarray, rng: np.random.Generator, velocity_range
) -> None:
    """Add a root velocity kick U(velocity_range) (6, 2): x y z m/s, roll pitch yaw rad/s,
    world frame; the pose is kept."""
    r = np.array(velocity_range)
    kick = rng.uniform(r[:, 0], r[:, 1], size=(env_ids.size, 6))
    ctx.backend.add_root_velocity(env_ids, kick[:, :3], kick[:, 3:])


# the ranges each term draws from, checked when its EventTermCfg is built
body_com_offset.param_ranges = {"offset_range": ParamRange(rows=3)}
foot_friction.param_ranges = {
    "friction_range": ParamRange(low=0.0, low_open=True,
                                 why="a friction coefficient <= 0 makes MuJoCo's contacts diverge")
}  # fmt: skip
encoder_bias.param_ranges = {"bias_range": ParamRange()}
push_root.param_ranges = {"velocity_range": ParamRange(rows=6)}


# ------------------------------------------------------------------ manager
class EventManager:
    """Runs the configured event terms for N envs at control step dt.

    Args:
        terms: name -> `EventTermCfg`, in the order they run.
        ctx: what the terms act on.
        dt: control step, s.
        serial: whether its kernels run their serial builds (the env's `NumbaThreads.serial`).

    Raises:
        ValueError: an unknown mode, or interval_s missing for an interval term.
    """

    def __init__(
        self, terms: dict[str, EventTermCfg], ctx: EventContext, dt: float, *, serial: bool
    ):
        self.ctx = ctx
        self._dt = dt
        n = ctx.state.num_envs
        self._terms: list[tuple[str, EventTermCfg, EventMode]] = []
        for name, term in terms.items():
            mode = EventMode(term.mode)
            if (mode is EventMode.INTERVAL) != (term.interval_s is not None):
                raise ValueError(f"event {name!r}: interval_s is required for interval mode only")
            self._terms.append((name, term, mode))
        self.names = tuple(terms)
        self._timers = {
            name: np.full(n, np.inf) for name, _, m in self._terms if m is EventMode.INTERVAL
        }
        self.fired = np.zeros(n, bool)
        self._any_fired = False
        # (name, term, its timer's count-down in the build of this batch) of the interval terms
        self._interval_terms = [
            (nm, t, bind_builds(partial(count_down, self._timers[nm], dt))[serial])
            for nm, t, m in self._terms
            if m is EventMode.INTERVAL
        ]
        self._none_fired = np.zeros(0, np.int64)
        self._none_fired.flags.writeable = False

    def startup(self, rng: np.random.Generator) -> None:
        """Run the startup terms on every env."""
        ids = np.arange(self.ctx.state.num_envs)
        for _, term, mode in self._terms:
            if mode is EventMode.STARTUP:
                term.func(self.ctx, ids, rng, **term.params)

    def reset(self, env_ids: np.ndarray, rng: np.random.Generator) -> None:
        """Episode start of rows `env_ids`: run the reset terms, draw the interval timers."""
        for name, term, mode in self._terms:
            if mode is EventMode.RESET:
                term.func(self.ctx, env_ids, rng, **term.params)
            elif mode is EventMode.INTERVAL:
                lo, hi = term.interval_s
                self._timers[name][env_ids] = rng.uniform(lo, hi, size=env_ids.size)

    def step(self, rng: np.random.Generator) -> np.ndarray:
        """Advance the interval timers one control step and run the terms that are due.

        Returns the rows (M,) int64 on which any interval term fired (their physics state may
        have been written: read it again before use). `fired` (N,) bool marks them.
        """
        if self._any_fired:  # clear the last step's marks
            self.fired[:] = False
            self._any_fired = False
        for name, term, tick in self._interval_terms:
            if not tick():
                continue
            timer = self._timers[name]
            ids = np.flatnonzero(timer <= 0.0)
            lo, hi = term.interval_s
            timer[ids] = rng.uniform(lo, hi, size=ids.size)
            term.func(self.ctx, ids, rng, **term.params)
            self.fired[ids] = True
            self._any_fired = True
        return np.flatnonzero(self.fired) if self._any_fired else self._none_fired
