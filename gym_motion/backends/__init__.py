"""Physics backends behind the `SimBackend` protocol, built by name with `make_backend`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gym_motion.backends.base import BodyState, SimBackend

__all__ = ["BACKENDS", "BodyState", "SimBackend", "make_backend"]

# name -> "module:class", imported only when chosen (each pulls in its own engine)
BACKENDS: dict[str, str] = {
    "mujoco": "gym_motion.backends.mujoco:MujocoBackend",
    "mjwarp": "gym_motion.backends.mjwarp:MjWarpBackend",
}


def make_backend(
    name: str,
    model: Any,
    num_envs: int,
    body_names: Sequence[str],
    joint_names: Sequence[str],
    **kwargs: Any,
) -> SimBackend:
    """Build the backend `name` for N = `num_envs` copies of `model` (a ``mujoco.MjModel``).

    Keyword arguments go to the backend's constructor (for "mujoco": decimation, num_threads,
    cpu_ids, self_contact_threshold; see `gym_motion.backends.mujoco.MujocoBackend` and
    `gym_motion.backends.mjwarp.MjWarpBackend`).

    Raises:
        ValueError: unknown backend name (the message lists the valid ones).
    """
    if name not in BACKENDS:
        raise ValueError(
            f"unknown backend {name!r}; valid choices: {', '.join(repr(n) for n in BACKENDS)}"
        )
    import importlib

    module, cls = BACKENDS[name].split(":")
    backend_cls = getattr(importlib.import_module(module), cls)
    return backend_cls(model, num_envs, body_names, joint_names, **kwargs)
