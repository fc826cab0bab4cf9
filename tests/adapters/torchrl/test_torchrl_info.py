"""TorchRL's GymWrapper with `tracking_info_reader`: the ``final/*`` results are in every step's
tensordict, and `tracking_means` averages them over the episodes that ended."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")

from torchrl.envs import GymWrapper  # noqa: E402

from gym_motion.adapters.torchrl import tracking_info_reader, tracking_means  # noqa: E402
from gym_motion.adapters.torchrl.info import info_keys  # noqa: E402
from gym_motion.envs import TrackingVecEnv  # noqa: E402


def test_final_results_reach_every_step_and_the_means():
    env = TrackingVecEnv(4, autoreset_mode="disabled", action_bound=1.0, seed=0)
    wrapped = GymWrapper(env)
    wrapped.set_info_dict_reader(tracking_info_reader(env))
    td = wrapped.reset()
    env.time_limit_offset[:2] = 499  # envs 0 and 1 time out on the first step
    td["action"] = torch.zeros(4, 29)
    td = wrapped.step(td)
    nxt = td["next"]
    done = nxt["done"].reshape(-1)
    assert done.tolist() == [True, True, False, False]
    assert nxt["final/length"].dtype == torch.int32
    assert nxt["final/length"][done].tolist() == [1, 1]
    assert nxt["final/termination/time_out"][done].all()
    for key, dtype in info_keys(env).items():
        assert nxt[key].shape == (4,) and nxt[key].dtype == dtype, key
    means = tracking_means(td, env)
    assert means["episode/length"] == 1.0 and means["termination/time_out"] == 1.0
    mpkpe = nxt["final/error/mpkpe"][done].double().mean().item()
    assert 0.001 < mpkpe < 1.0  # m: an episode mean
    assert means["error/mpkpe_mm"] == pytest.approx(1000.0 * mpkpe, rel=1e-6)
    body = nxt["reward/body_pos"].double().mean().item()
    assert means["reward/body_pos"] == pytest.approx(body, rel=1e-6)


def test_missing_results_are_zeros_on_steps_without_ended_episodes():
    env = TrackingVecEnv(2, autoreset_mode="disabled", seed=0)
    wrapped = GymWrapper(env)
    wrapped.set_info_dict_reader(tracking_info_reader(env))
    td = wrapped.reset()
    td["action"] = torch.zeros(2, 29)
    nxt = wrapped.step(td)["next"]
    assert not nxt["done"].any()
    np.testing.assert_array_equal(nxt["final/length"].numpy(), 0)
    assert "episode/length" not in tracking_means(wrapped.step(td), env)


def test_torchrl_refuses_next_step():
    with pytest.raises(RuntimeError, match="SAME_STEP or DISABLED"):
        GymWrapper(TrackingVecEnv(2))
