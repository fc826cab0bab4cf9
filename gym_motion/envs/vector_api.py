"""The gymnasium `VectorEnv` plumbing of a `TrackingVecEnv`: its spaces, its autoreset mode,
`close`, and the vector ``call`` / ``get_attr`` / ``set_attr`` (as `SyncVectorEnv`'s, which RL
libraries call: skrl's trainer renders through ``call("render")``). The N envs are one object."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

if TYPE_CHECKING:
    from gym_motion.backends.base import SimBackend

__all__ = ["ACTION_BOUND", "OBS_MODES", "VectorApiMixin", "box_bound", "parse_autoreset_mode"]

# Actions are declared in [-ACTION_BOUND, ACTION_BOUND] (RL libraries such as SB3 need a bounded
# Box). The env does not clip them, but libraries that clip to the space do: at the G1's action
# scale (0.07 .. 0.55 rad per unit) the bound reaches past every joint range except wrist pitch
# and yaw (+/- 0.745 rad around the default pose, of +/- 1.61 rad).
ACTION_BOUND = 10.0
OBS_MODES = ("policy", "dict")


def box_bound(obs_mode: str, action_bound: float | None) -> float:
    """The action Box's bound for `action_bound` (None: inf), once `obs_mode` and it are checked.

    Raises:
        ValueError: obs_mode not one of `OBS_MODES`, or action_bound not > 0 (nor None).
    """
    if obs_mode not in OBS_MODES:
        raise ValueError(f"obs_mode must be 'policy' or 'dict', got {obs_mode!r}")
    if action_bound is not None and not action_bound > 0:
        raise ValueError(f"action_bound must be > 0 or None, got {action_bound!r}")
    return np.inf if action_bound is None else float(action_bound)


def parse_autoreset_mode(mode: AutoresetMode | str) -> AutoresetMode:
    """An `AutoresetMode` from a member, its value ("NextStep") or name ("next_step").

    Raises:
        ValueError: none of those.
    """
    if isinstance(mode, AutoresetMode):
        return mode
    for m in AutoresetMode:
        if str(mode).lower() in (m.value.lower(), m.name.lower()):
            return m
    raise ValueError(
        f"autoreset_mode must be one of {[m.name.lower() for m in AutoresetMode]}, got {mode!r}"
    )


class VectorApiMixin:
    """Spaces (`_init_spaces`), `close` (and the refusal of calls after it), and ``call`` /
    ``get_attr`` / ``set_attr`` of a `TrackingVecEnv` (``num_envs`` envs that share one object).

    Reads of the env: ``num_envs``, ``backend`` (closed by `close`), ``_was_reset``,
    ``render`` and ``_close_renderer`` (`RenderMixin`). Writes: the four spaces, ``closed``;
    `set_attr` writes the attribute it names.
    """

    # read
    num_envs: int
    backend: SimBackend
    _was_reset: bool
    render: Callable[..., Any]
    _close_renderer: Callable[[], None]
    # written
    single_observation_space: gym.Space
    single_action_space: gym.Space
    observation_space: gym.Space
    action_space: gym.Space
    closed: bool

    def _init_spaces(
        self, observation_space: gym.spaces.Space, num_joints: int, bound: float
    ) -> None:
        """Set the single-env spaces (the observation space given; actions
        ``Box(-bound, bound, (num_joints,), float32)``) and their batched forms."""
        self.single_observation_space = observation_space
        self.single_action_space = gym.spaces.Box(-bound, bound, (num_joints,), np.float32)
        self.observation_space = gym.vector.utils.batch_space(observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)

    def close(self, **kwargs: Any) -> None:
        """Release the backend's threads and memory, and the renderer's OpenGL context; sets
        `closed` (idempotent). `reset` and `step` then raise RuntimeError."""
        self._close_renderer()
        if getattr(self, "backend", None) is not None:
            self.backend.close()  # idempotent; the object stays, its memory goes
        self.closed = True

    def _check_usable(self, method: str) -> None:
        """Refuse `method` ("reset", "step" or "render") on a closed env, and any but "reset"
        before the first `reset`.

        Raises:
            RuntimeError: the env is closed, or was never reset.
        """
        if self.closed:
            raise RuntimeError("TrackingVecEnv is closed: make a new env")
        if method != "reset" and not self._was_reset:
            raise RuntimeError(f"TrackingVecEnv: call reset() before {method}()")

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call the env's method `name` once with `args`, `kwargs`; its result once per env, a
        tuple of `num_envs` references to it (a non-callable attribute: its value, as
        `get_attr`). ``call("render")`` is `render` (already a tuple of frames, as
        ``SyncVectorEnv.call("render")``).

        Raises:
            AttributeError: the env has no attribute `name`.
        """
        if name == "render":
            return self.render(*args, **kwargs)
        value = getattr(self, name)
        if callable(value):
            value = value(*args, **kwargs)
        return (value,) * self.num_envs

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The attribute `name` once per env: a tuple of `num_envs` references to the env's one
        value (per-env arrays such as ``episode_length`` come whole in each entry).

        Raises:
            AttributeError: the env has no attribute `name`.
        """
        return (getattr(self, name),) * self.num_envs

    def set_attr(self, name: str, values: Any) -> None:
        """Set the existing attribute `name` (e.g. ``reset_noise_scale``) for all envs: `values`
        is one value, or a list/tuple of `num_envs` equal values (as SyncVectorEnv takes).

        Raises:
            AttributeError: no attribute `name` (a misspelt setting would otherwise do nothing).
            ValueError: a list/tuple of the wrong length, or of values that differ (the N envs
                share one attribute; write a per-env array attribute instead).
        """
        if not hasattr(self, name):
            raise AttributeError(f"TrackingVecEnv has no attribute {name!r} to set")
        if isinstance(values, list | tuple):
            if len(values) != self.num_envs:
                raise ValueError(
                    f"set_attr({name!r}): {len(values)} values for {self.num_envs} envs"
                )
            if not all(_same(v, values[0]) for v in values[1:]):
                raise ValueError(
                    f"set_attr({name!r}): per-env values differ, but the {self.num_envs} envs "
                    "share one attribute; pass one value"
                )
            values = values[0]
        setattr(self, name, values)


def _same(a: Any, b: Any) -> bool:
    """Whether two attribute values are equal (arrays element-wise, with equal shapes)."""
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False
