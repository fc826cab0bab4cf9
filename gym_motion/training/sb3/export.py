"""The deterministic actor of an SB3 run, for `gym-motion export` (`gym_motion.training.export`).

The module computes, for PPO, ``actions = clip(actor(clip((obs - mean) / sqrt(var + eps), -c,
c)), -10, 10)``: VecNormalize's observation normalisation folded in, the last clip SB3's (to the
env's action space); for SAC, the squashed mean ``tanh(mu)`` rescaled to the action space. For a
run trained with the asymmetric actor-critic, ``obs`` is the "policy" group the actor reads.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

__all__ = ["actor_module"]


def actor_module(run_dir: str | os.PathLike):
    """The run's actor as a torch module ``obs (B, D) float32 -> actions (B, J) float32``, with
    D and J: ``(module, D, J)``.

    Raises:
        FileNotFoundError: no model.zip in `run_dir`.
        ValueError: an actor that reads every observation group (SB3's MultiInputPolicy), not
            the policy group alone.
    """
    from gym_motion.training.sb3.policy import load_run

    model, norm, _ = load_run(Path(run_dir))
    module, dim = _actor(model, norm)
    return module, dim, int(model.policy.action_space.shape[0])


def _actor(model, norm):
    """torch module: obs -> normalised -> deterministic, clipped actions; and the obs size."""
    import gymnasium as gym
    import torch

    policy = model.policy
    space = policy.observation_space
    sac = hasattr(policy, "actor")  # SAC's policy: a squashed-Gaussian actor and critics
    extractor = policy.actor.features_extractor if sac else policy.pi_features_extractor
    group = None
    if isinstance(space, gym.spaces.Dict):
        group = getattr(extractor, "group", None)
        if group is None or group not in space.spaces:
            raise ValueError(
                f"the run's actor ({type(policy).__name__}) reads every observation group "
                f"{list(space.spaces)}; only an actor that reads the 'policy' group alone "
                "deploys (train with --obs-mode dict, the asymmetric actor-critic, or policy)"
            )
        obs_space = space.spaces[group]
    else:
        obs_space = space
    dim = int(np.prod(obs_space.shape))
    mean = np.zeros(dim, np.float64)
    std = np.ones(dim, np.float64)
    clip_obs = None
    if norm is not None and norm.norm_obs:
        rms = norm.obs_rms[group] if isinstance(norm.obs_rms, dict) else norm.obs_rms
        if group is not None and group not in (norm.norm_obs_keys or []):
            rms = None
        if rms is not None:
            mean, std = np.asarray(rms.mean), np.sqrt(np.asarray(rms.var) + norm.epsilon)
            clip_obs = float(norm.clip_obs)
    low = torch.as_tensor(policy.action_space.low, dtype=torch.float32)
    high = torch.as_tensor(policy.action_space.high, dtype=torch.float32)

    class Actor(torch.nn.Module):
        def __init__(self):
            super().__init__()
            if sac:
                self.actor = policy.actor
            else:
                self.extractor = extractor
                self.mlp = policy.mlp_extractor
                self.action_net = policy.action_net
            self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))
            self.register_buffer("std", torch.as_tensor(std, dtype=torch.float32))
            self.register_buffer("low", low)
            self.register_buffer("high", high)

        def forward(self, obs: torch.Tensor) -> torch.Tensor:
            x = (obs - self.mean) / self.std
            if clip_obs is not None:
                x = torch.clamp(x, -clip_obs, clip_obs)
            if sac:  # tanh(mean) in [-1, 1], rescaled to the action space as SB3 does
                squashed = self.actor(x, deterministic=True)
                return self.low + 0.5 * (squashed + 1.0) * (self.high - self.low)
            features = self.extractor({group: x} if group is not None else x)
            actions = self.action_net(self.mlp.forward_actor(features))
            return torch.maximum(torch.minimum(actions, self.high), self.low)

    return Actor().eval(), dim
