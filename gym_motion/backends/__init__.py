"""Physics backends behind the `SimBackend` protocol, built by name with `make_backend`."""

from __future__ import annotations

from typing import Any

import numpy as np

from gym_motion.backends.base import BodyState, SimBackend

__all__ = ["BACKENDS", "BodyState", "SimBackend", "make_backend"]

# name -> "module:class", imported only when chosen (each pulls in its own engine)
BACKENDS: dict[str, str] = {
    "mujoco": "gym_motion.backends.mujoco:MujocoBackend",
    "mjwarp": "gym_motion.backends.mjwarp:MjWarpBackend",
    "motrix": "gym_motion.backends.motrix:MotrixBackend",
}


def make_backend(
    name: str,
    model: Any,
    num_envs: int,
    body_ids: np.ndarray,
    joint_ids: np.ndarray,
    **kwargs: Any,
) -> SimBackend:
    """Build the backend `name` for N = `num_envs` copies of `model` (a ``mujoco.MjModel``).

    Args:
        name: a key of `BACKENDS`.
        model: the compiled model (copied by the backend).
        num_envs: N >= 1.
        body_ids: (B,) int MuJoCo body ids whose state `SimBackend.copy_body_state_w` fills,
            in that order (e.g. ``[model.body(n).id for n in names]``).
        joint_ids: (J,) int MuJoCo hinge/slide joint ids of the joint state and the position
            targets, in that order; each driven by exactly one actuator, J == model.nu.
        **kwargs: the backend's constructor keywords: for both ``decimation`` (4) and
            ``self_contact_threshold`` (10.0 N); "mujoco" and "motrix": ``num_threads``,
            ``cpu_ids``;
            "mjwarp": ``device``, ``nconmax``, ``njmax``, ``on_overflow``, ``deterministic``,
            ``contact_sensor_maxmatch``, ``capture`` (see
            `gym_motion.backends.mujoco.MujocoBackend`, `gym_motion.backends.mjwarp.MjWarpBackend`,
            `gym_motion.backends.motrix.MotrixBackend`).

    Raises:
        ValueError: unknown backend name (the message lists the valid ones), or ids the model
            does not have (see `SimBackend`).
    """
    if name not in BACKENDS:
        raise ValueError(
            f"unknown backend {name!r}; valid choices: {', '.join(repr(n) for n in BACKENDS)}"
        )
    import importlib

    module, cls = BACKENDS[name].split(":")
    backend_cls = getattr(importlib.import_module(module), cls)
    return backend_cls(model, num_envs, body_ids, joint_ids, **kwargs)
