"""A trained rsl_rl actor as a plain policy callable, for `gym_motion.evaluate`.

Example::

    from gym_motion.training.rsl_rl.policy import load_run_policy
    from gym_motion.evaluate import evaluate_policy_on_clips

    policy, config = load_run_policy("runs/rsl")  # a `gym-motion train --library rsl_rl` run
    result = evaluate_policy_on_clips(["dance.npz"], policy, obs_mode="dict")
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict

from gym_motion.policy import Obs, Policy

__all__ = ["actor_policy", "load_actor", "load_checkpoint", "load_run_policy"]


def load_checkpoint(path: str | os.PathLike, device: str | torch.device = "cpu") -> dict:
    """An rsl_rl checkpoint (``model.pt``: state dicts, the iteration, plain ``infos``) read
    with ``torch.load(weights_only=True)``: tensors and plain containers only, so a file from
    elsewhere cannot run code while it is read (a full unpickle can).

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file holds other objects (the file and torch's reason named).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"rsl_rl checkpoint not found: {path}")
    try:
        return torch.load(path, map_location=device, weights_only=True)
    except pickle.UnpicklingError as exc:
        reason = " ".join(str(exc).split())[:300]
        raise ValueError(
            f"{path}: not only tensors and plain containers, so it is not unpickled "
            f"(torch.load weights_only=True: {reason})"
        ) from None


def actor_policy(actor: torch.nn.Module, device: str | torch.device = "cpu") -> Policy:
    """The deterministic policy of an rsl_rl actor (``MLPModel``: its normaliser, then the
    mean of its action distribution): obs (N, D) float32, or a dict of groups with "policy"
    among them -> actions (N, A) float32. Changes neither the actor's mode nor its statistics.
    """

    def act(obs: Obs) -> np.ndarray:
        groups = obs if isinstance(obs, dict) else {"policy": obs}
        n = len(next(iter(groups.values())))
        td = TensorDict(
            {k: torch.as_tensor(v, dtype=torch.float32, device=device) for k, v in groups.items()},
            batch_size=[n],
            device=device,
        )
        with torch.inference_mode():
            action = actor(td)
        return action.to("cpu").numpy().astype(np.float32, copy=False)

    return act


def load_actor(run_dir: str | os.PathLike, device: str = "cpu") -> tuple[torch.nn.Module, dict]:
    """The actor of a `gym-motion train --library rsl_rl` run folder, in eval mode, and its
    config.json.

    The actor is rebuilt from the run's ``rsl_rl`` runner config and ``obs_dims`` (config.json)
    and its weights and normaliser statistics loaded from ``model.pt`` (`load_checkpoint`:
    tensors and plain containers only). config.json names the actor's class, which is
    imported: load run folders you trust.

    Raises:
        FileNotFoundError: no model.pt or config.json in the folder.
        ValueError: config.json lacks the ``rsl_rl`` or ``obs_dims`` entries (not an rsl_rl
            run), or model.pt holds more than tensors and plain containers.
    """
    from rsl_rl.utils import resolve_class

    run = Path(run_dir)
    for name in ("model.pt", "config.json"):
        if not (run / name).is_file():
            raise FileNotFoundError(f"{run / name}: no {name} in the rsl_rl run folder {run}")
    config = json.loads((run / "config.json").read_text())
    if "rsl_rl" not in config or "obs_dims" not in config:
        raise ValueError(f"{run / 'config.json'} is not an rsl_rl run's (no rsl_rl/obs_dims)")
    cfg, dims = config["rsl_rl"], config["obs_dims"]
    obs = TensorDict(
        {k: torch.zeros(1, int(d)) for k, d in dims.items()}, batch_size=[1], device=device
    )
    actor_class, actor_cfg = resolve_class(cfg["actor"])
    actor = actor_class(obs, cfg["obs_groups"], "actor", int(config["num_actions"]), **actor_cfg)
    state = load_checkpoint(run / "model.pt", device)
    actor.load_state_dict(state["actor_state_dict"])
    actor.to(device).eval()
    return actor, config


def load_run_policy(run_dir: str | os.PathLike) -> tuple[Policy, dict[str, Any]]:
    """The deterministic policy of a `gym-motion train --library rsl_rl` run folder (on the
    CPU), and its config.json; see `load_actor` for what is read and raised."""
    actor, config = load_actor(run_dir)
    return actor_policy(actor), config
