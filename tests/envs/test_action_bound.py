"""The declared action space (`action_bound`): the default for libraries that clip to it, the
policy's natural range for libraries that scale to it, and no clipping by the env either way."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import gym_motion  # noqa: F401  (registers the ids)
from gym_motion.envs import TrackingVecEnv
from gym_motion.envs.tracking import ACTION_BOUND


def test_default_bound_is_unchanged():
    env = TrackingVecEnv(2)
    assert ACTION_BOUND == 10.0
    np.testing.assert_array_equal(env.single_action_space.high, np.full(29, 10.0, np.float32))
    np.testing.assert_array_equal(env.action_space.low, np.full((2, 29), -10.0, np.float32))


def test_natural_range_bound_and_no_clipping_by_the_env():
    env = TrackingVecEnv(2, action_bound=1.0, seed=0)
    space = env.single_action_space
    assert space.dtype == np.float32 and space.shape == (29,)
    np.testing.assert_array_equal(space.high, np.ones(29, np.float32))
    env.reset()
    env.step(np.full((2, 29), 3.0, np.float32))  # outside the declared range
    np.testing.assert_array_equal(env.state.action, 3.0)  # the env does not clip


def test_no_bound():
    space = TrackingVecEnv(1, action_bound=None).single_action_space
    assert np.isinf(space.high).all() and np.isinf(space.low).all()


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_bad_bounds_are_refused(bad):
    with pytest.raises(ValueError, match="action_bound must be > 0 or None"):
        TrackingVecEnv(1, action_bound=bad)


def test_a_library_that_scales_outputs_to_the_bounds_gets_one_action_unit():
    """gymnasium's RescaleAction maps a [-1, 1] output onto the declared bounds, as TorchRL's
    TanhNormal and RLlib do: under the default bound an output of 1 becomes 10 action units."""
    from gymnasium.wrappers.vector import RescaleAction

    out = np.full((2, 29), 1.0, np.float32)
    for bound, expected in ((ACTION_BOUND, 10.0), (1.0, 1.0)):
        lo, hi = np.full(29, -1.0, np.float32), np.full(29, 1.0, np.float32)
        env = RescaleAction(TrackingVecEnv(2, action_bound=bound, seed=0), lo, hi)
        env.reset()
        env.step(out)
        np.testing.assert_allclose(env.unwrapped.state.action, expected, rtol=1e-6)


def test_make_vec_and_make_pass_the_bound():
    envs = gym.make_vec("GymMotion/G1-Tracking-v0", num_envs=2,
                        vectorization_mode="vector_entry_point", action_bound=1.0)  # fmt: skip
    assert envs.single_action_space.high.max() == 1.0
    env = gym.make("GymMotion/G1-Tracking-v0", action_bound=2.0)
    assert env.action_space.high.max() == 2.0


def test_a_step_without_actions_says_none():
    from gym_motion.envs import TrackingVecEnv

    env = TrackingVecEnv(2, seed=0)
    env.reset(seed=0)
    try:
        with pytest.raises(
            ValueError, match=r"actions must be an array of shape \(2, 29\), got None"
        ):
            env.step(None)
    finally:
        env.close()
