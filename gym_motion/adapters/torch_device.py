"""Whether an env's device MDP runs where a torch learner does, and its arrays as torch
tensors there (imports torch)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch

__all__ = ["device_tensors", "shares_mdp_device"]


def shares_mdp_device(env: Any, device: torch.device | str) -> bool:
    """Whether `env` (a `TrackingVecEnv`) runs the device MDP on torch's `device`, so that its
    `device_arrays` reach torch there without a copy. Warp and torch name devices alike
    ("cpu", "cuda:N"; the env's `mdp_device` always has its index); ``"cuda"`` without an
    index is torch's current CUDA device, where torch places its tensors. An env on the host
    MDP never shares."""
    where = getattr(env, "mdp_device", None)
    if where is None:
        return False
    mdp, device = torch.device(where), torch.device(device)
    if mdp.type != device.type:
        return False
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return mdp == device


def device_tensors(env: Any, names: Mapping[str, str] | Iterable[str]) -> dict[str, torch.Tensor]:
    """Torch clones, on the device MDP's device, of `env`'s `TrackingVecEnv.device_arrays`
    (one read of them): `names` maps each key of the result to an array name ("policy",
    "critic", "reward", "terminated", "truncated"), or lists array names kept as keys.
    Clones, because the env overwrites its arrays on the next step and learners write into
    what they are given (skrl adds bootstrapped values into the reward).

    Raises:
        RuntimeError: the env runs the host MDP (from `device_arrays`).
        KeyError: a name that is not one of its arrays.
    """
    import warp as wp

    pairs = names.items() if isinstance(names, Mapping) else ((k, k) for k in names)
    arrays = env.device_arrays()
    return {k: wp.to_torch(arrays[a]).clone() for k, a in pairs}
