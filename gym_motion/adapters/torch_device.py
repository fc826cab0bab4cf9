"""Whether an env's device MDP runs where a torch learner does (imports torch)."""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["shares_mdp_device"]


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
