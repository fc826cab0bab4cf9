"""Asymmetric actor-critic for SB3's PPO: the actor reads the "policy" observation group, the
critic the privileged "critic" group (BeyondMimic's setup; docs/task.md section 5).

SB3's ``MultiInputPolicy`` feeds every key of a Dict observation to both networks, so with the
env's ``obs_mode="dict"`` the actor would see the privileged 286 values too. This policy gives
each network its own group through its own features extractor, and an MLP per network sized to
that group::

    PPO(AsymmetricActorCriticPolicy, venv)  # venv: Dict {"policy": (160,), "critic": (286,)}

A policy trained this way acts from the "policy" group alone (`actor_input_dim`), so it deploys
on the robot's own observations.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from stable_baselines3.common.policies import MultiInputActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, MlpExtractor
from torch import nn

__all__ = ["AsymmetricActorCriticPolicy", "GroupExtractor"]

ACTOR_GROUP = "policy"
CRITIC_GROUP = "critic"


class GroupExtractor(BaseFeaturesExtractor):
    """Features = one group of a Dict observation, flattened: (B, D_group) float32."""

    def __init__(self, observation_space: gym.spaces.Dict, group: str):
        if group not in observation_space.spaces:
            raise ValueError(
                f"observation has no group {group!r}; groups: {list(observation_space.spaces)} "
                "(train with the env's obs_mode='dict')"
            )
        dim = int(gym.spaces.flatdim(observation_space.spaces[group]))
        super().__init__(observation_space, features_dim=dim)
        self.group = group

    def forward(self, observations: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.flatten(observations[self.group], start_dim=1)


class _SeparateMlps(nn.Module):
    """An actor MLP on the actor's features and a critic MLP on the critic's, with the
    interface of SB3's `MlpExtractor` (``forward_actor``, ``forward_critic``, latent dims)."""

    def __init__(self, pi_dim: int, vf_dim: int, net_arch: Any, activation_fn, device):
        super().__init__()
        arch = net_arch if isinstance(net_arch, dict) else {"pi": net_arch, "vf": net_arch}
        pi_arch, vf_arch = list(arch.get("pi", [])), list(arch.get("vf", []))
        self.actor = MlpExtractor(pi_dim, {"pi": pi_arch, "vf": []}, activation_fn, device)
        self.critic = MlpExtractor(vf_dim, {"pi": [], "vf": vf_arch}, activation_fn, device)
        self.latent_dim_pi = self.actor.latent_dim_pi
        self.latent_dim_vf = self.critic.latent_dim_vf

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise RuntimeError("asymmetric networks take separate features: use forward_actor/critic")

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return self.actor.forward_actor(features)

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.critic.forward_critic(features)


class AsymmetricActorCriticPolicy(MultiInputActorCriticPolicy):
    """SB3 actor-critic policy: actor on the "policy" group, critic on the "critic" group.

    Takes the arguments of SB3's ``MultiInputActorCriticPolicy`` (``net_arch``,
    ``activation_fn``, ``log_std_init``, ...); the features extractors are fixed.

    Raises:
        ValueError: the observation space lacks the "policy" or "critic" group.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs["share_features_extractor"] = False
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.pi_features_extractor = GroupExtractor(self.observation_space, ACTOR_GROUP)
        self.vf_features_extractor = GroupExtractor(self.observation_space, CRITIC_GROUP)
        self.features_extractor = self.pi_features_extractor
        self.features_dim = self.pi_features_extractor.features_dim
        self.mlp_extractor = _SeparateMlps(
            self.pi_features_extractor.features_dim,
            self.vf_features_extractor.features_dim,
            self.net_arch,
            self.activation_fn,
            self.device,
        )

    @property
    def actor_input_dim(self) -> int:
        """Size of the observation group the actor reads (160 for the G1 task)."""
        return self.pi_features_extractor.features_dim
