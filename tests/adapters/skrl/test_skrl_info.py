"""`SkrlInfo`: the step's tracking statistics as 1-element tensors in ``info["episode"]``."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gym_motion.adapters.skrl import SkrlInfo  # noqa: E402
from gym_motion.envs import TrackingVecEnv  # noqa: E402


def test_statistics_as_one_element_tensors():
    base = TrackingVecEnv(4, autoreset_mode="same_step", seed=0)
    env = SkrlInfo(base)
    env.reset(seed=0)
    base.time_limit_offset[:2] = 499  # two episodes end (time-out) on the first step
    *_, info = env.step(np.zeros((4, 29), np.float32))
    stats = info["episode"]
    assert all(isinstance(v, torch.Tensor) and v.numel() == 1 for v in stats.values())
    assert stats["episode/ended"].item() == 2.0
    assert stats["episode/length"].item() == 1.0
    assert stats["termination/time_out"].item() == 1.0
    mask = info["_final/error/mpkpe"]
    expected = 1000.0 * info["final/error/mpkpe"][mask].mean()
    assert stats["error/mpkpe_mm"].item() == pytest.approx(expected, rel=1e-5)
    assert stats["reward/body_pos"].item() == pytest.approx(info["reward/body_pos"].mean())
    *_, info = env.step(np.zeros((4, 29), np.float32))
    assert "episode/length" not in info["episode"]  # no episode ended on this step


def test_forwards_vector_calls_and_refuses_next_step():
    env = SkrlInfo(TrackingVecEnv(2, autoreset_mode="same_step"))
    assert env.get_attr("max_episode_steps") == (500, 500)
    env.set_attr("reset_noise_scale", 0.5)
    assert env.unwrapped.reset_noise_scale == 0.5
    assert env.call("num_envs") == (2, 2)
    with pytest.raises(ValueError, match="SAME_STEP"):
        SkrlInfo(TrackingVecEnv(2))
