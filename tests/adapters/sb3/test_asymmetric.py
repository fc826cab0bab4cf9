"""Asymmetric actor-critic: the built networks read the groups they should."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("stable_baselines3")

from gym_motion.adapters.sb3.asymmetric import AsymmetricActorCriticPolicy  # noqa: E402
from gym_motion.training import RunConfig  # noqa: E402
from gym_motion.training.sb3 import make_model  # noqa: E402


def make_env(config: RunConfig):
    """The training env of `gym-motion train`'s SB3 learner for `config`."""
    from stable_baselines3.common.vec_env import VecNormalize

    from gym_motion.adapters.sb3.vec_env import SB3VecEnv
    from gym_motion.envs import TrackingVecEnv

    env = TrackingVecEnv(config.num_envs, cfg=config.env, autoreset_mode="same_step",
                         obs_mode=config.obs_mode, seed=config.seed)  # fmt: skip
    return VecNormalize(SB3VecEnv(env), norm_obs=True, norm_reward=False, clip_obs=10.0)


def first_linear(module: torch.nn.Module) -> torch.nn.Linear:
    return next(m for m in module.modules() if isinstance(m, torch.nn.Linear))


def test_default_training_policy_is_asymmetric_with_group_sized_inputs():
    config = RunConfig(num_envs=4, ppo={"n_steps": 8})
    venv = make_env(config)
    model, _ = make_model(config, venv)
    policy = model.policy
    assert isinstance(policy, AsymmetricActorCriticPolicy)
    assert first_linear(policy.mlp_extractor.actor).in_features == 160
    assert first_linear(policy.mlp_extractor.critic).in_features == 286
    assert policy.actor_input_dim == 160
    # the actor ignores the critic group: changing it leaves the actions unchanged
    obs = venv.reset()
    a1, _ = model.predict(obs, deterministic=True)
    obs2 = {"policy": obs["policy"], "critic": obs["critic"] + 5.0}
    a2, _ = model.predict(obs2, deterministic=True)
    np.testing.assert_array_equal(a1, a2)
    # ... and the critic ignores the policy group
    with torch.no_grad():
        t = {k: torch.as_tensor(v) for k, v in obs.items()}
        t2 = {"policy": t["policy"] + 5.0, "critic": t["critic"]}
        torch.testing.assert_close(policy.predict_values(t), policy.predict_values(t2))
        t3 = {"policy": t["policy"], "critic": t["critic"] + 5.0}
        assert not torch.allclose(policy.predict_values(t), policy.predict_values(t3))
    venv.close()


def test_policy_mode_keeps_one_flat_observation_for_both_networks():
    config = RunConfig(num_envs=4, obs_mode="policy", ppo={"n_steps": 8})
    venv = make_env(config)
    model, _ = make_model(config, venv)
    assert not isinstance(model.policy, AsymmetricActorCriticPolicy)
    assert first_linear(model.policy.mlp_extractor.policy_net).in_features == 160
    assert first_linear(model.policy.mlp_extractor.value_net).in_features == 160
    venv.close()
