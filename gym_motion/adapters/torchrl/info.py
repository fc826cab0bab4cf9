"""A `TrackingVecEnv`'s info keys for TorchRL's ``GymWrapper``, and their means per batch.

TorchRL's gym wrapper writes info entries into each step's tensordict through an info-dict
reader; its automatic reader registers only the keys of the first step it sees, and the
``final/*`` episode results appear only on steps where an episode ended. `tracking_info_reader`
declares them all with their dtypes, so every step's ``("next", key)`` entry exists (zeros for
envs whose episode did not end; the step's ``("next", "done")`` is the mask; keys that start
with "_", such as the env's own masks, are private to TorchRL and dropped by its collectors)::

    from torchrl.envs import GymWrapper
    from gym_motion.envs import TrackingVecEnv
    from gym_motion.adapters.torchrl import tracking_info_reader, tracking_means

    env = TrackingVecEnv(64, autoreset_mode="disabled", action_bound=1.0)
    torchrl_env = GymWrapper(env)
    torchrl_env.set_info_dict_reader(tracking_info_reader(env))
    ...
    for data in collector:  # data["next", "final/error/mpkpe"]: (N, T) float32
        logger_values = tracking_means(data, env)

Keys: ``reward/<term>`` (float32), ``final/return`` (float32), ``final/length`` (int32),
``final/reward/<term>`` (float32), ``final/termination/<cause>`` (bool) and
``final/error/<name>`` (float32), as in `gym_motion.envs.info`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase
from torchrl.data import Composite, Unbounded
from torchrl.envs.gym_like import default_info_dict_reader

from gym_motion.envs.info import FINAL, REWARD
from gym_motion.envs.stats import TrackingStats, tracking_terms
from gym_motion.kernels.metrics import TRACKING_ERRORS

__all__ = ["info_keys", "tracking_info_reader", "tracking_means"]


def info_keys(env: Any) -> dict[str, torch.dtype]:
    """Info key -> torch dtype of every per-step and episode-result key of `env` (a
    `TrackingVecEnv` or a wrapper around one), from its reward and termination terms."""
    base = env.unwrapped
    terms = base.rewards.names
    term = base.terminations
    causes = (*term.names, term.NONFINITE, term.TIME_OUT)
    keys: dict[str, torch.dtype] = {REWARD + t: torch.float32 for t in terms}
    keys[FINAL + "return"] = torch.float32
    keys[FINAL + "length"] = torch.int32
    keys.update({FINAL + REWARD + t: torch.float32 for t in terms})
    keys.update({f"{FINAL}termination/{c}": torch.bool for c in causes})
    keys.update({f"{FINAL}error/{e}": torch.float32 for e in TRACKING_ERRORS})
    return keys


def tracking_info_reader(env: Any) -> default_info_dict_reader:
    """An info-dict reader for ``GymWrapper.set_info_dict_reader`` with a spec of shape (N,)
    for each of `info_keys`; keys missing from a step's info are written as zeros."""
    n = env.num_envs
    keys = info_keys(env)
    spec = Composite({k: Unbounded((n,), dtype=d) for k, d in keys.items()}, shape=[n])
    return default_info_dict_reader(list(keys), spec)


def tracking_means(data: TensorDictBase, env: Any) -> dict[str, float]:
    """`TrackingStats.means` of a collected batch (any batch shape; the entries under
    ``"next"``): per-step reward terms over all its steps, episode results over the episodes
    that ended in it (``("next", "done")``; DISABLED mode, as the module docstring).

    Raises:
        KeyError: the batch lacks the keys (the env was wrapped without `tracking_info_reader`).
    """
    nxt = data["next"]
    info: dict[str, np.ndarray] = {}
    for key in info_keys(env):
        info[key] = nxt[key].reshape(-1).detach().cpu().numpy()
    done = nxt["done"].reshape(-1).detach().cpu().numpy()
    for key in list(info):
        if key.startswith(FINAL):
            info["_" + key] = done
    stats = TrackingStats(tracking_terms(env))
    stats.add(info)
    return stats.means()
