"""Numba's pool sized to the batch: one thread for small batches, restored afterwards, and the
same results at any pool size (timings are benchmark figures, `gym-motion bench`)."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from gym_motion.backends.threads import (
    MIN_ROWS_PER_NUMBA_THREAD,
    NumbaThreads,
    numba_threads_for,
)
from gym_motion.envs import TrackingVecEnv

TWO_THREADS = pytest.mark.skipif(
    numba.config.NUMBA_NUM_THREADS < 2, reason="needs a Numba pool of 2 threads"
)


def test_pool_grows_one_thread_per_min_rows():
    m = MIN_ROWS_PER_NUMBA_THREAD
    assert [numba_threads_for(n, 8) for n in (1, 64, m, 2 * m - 1)] == [1, 1, 1, 1]
    assert [numba_threads_for(n, 8) for n in (2 * m, 5 * m, 8 * m, 100 * m)] == [2, 5, 8, 8]
    assert numba_threads_for(100 * m, 1) == 1


@TWO_THREADS
def test_numba_threads_sets_and_restores_also_on_error_and_nested():
    before = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        with NumbaThreads(1):
            assert numba.get_num_threads() == 1
            with NumbaThreads(2):
                assert numba.get_num_threads() == 2
            assert numba.get_num_threads() == 1
        assert numba.get_num_threads() == 2
        with pytest.raises(KeyError), NumbaThreads(1):
            raise KeyError("inside")
        assert numba.get_num_threads() == 2
    finally:
        numba.set_num_threads(before)
    with pytest.raises(ValueError, match="threads must be >= 1"):
        NumbaThreads(0)


@TWO_THREADS
def test_small_env_runs_its_kernels_on_one_thread_and_restores_the_pool():
    env = TrackingVecEnv(4, seed=0, backend_kwargs={"num_threads": 2})
    assert env._numba_threads.threads == 1
    seen = []
    compute = env.rewards.compute

    def spy():
        seen.append(numba.get_num_threads())
        return compute()

    env.rewards.compute = spy
    pool = numba.get_num_threads()
    env.reset(seed=0)
    env.step(np.zeros((4, 29), np.float32))
    assert seen == [1] and numba.get_num_threads() == pool
    env.close()


@TWO_THREADS
def test_results_are_bit_identical_at_any_pool_size():
    def rollout(threads: int) -> list[np.ndarray]:
        env = TrackingVecEnv(8, seed=0, obs_mode="dict")
        env._numba_threads = NumbaThreads(threads)
        obs, _ = env.reset(seed=0)
        out = [obs["critic"]]
        rng = np.random.default_rng(1)
        for _ in range(30):
            obs, reward, *_ = env.step(rng.normal(0.0, 0.5, (8, 29)).astype(np.float32))
            out += [obs["critic"], reward]
        env.close()
        return out

    for a, b in zip(rollout(1), rollout(2), strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_split_follows_the_module_setting(monkeypatch):
    import gym_motion.backends.threads as threads

    monkeypatch.setattr(threads, "MIN_ROWS_PER_NUMBA_THREAD", 128)
    assert numba_threads_for(1024, 8) == 8 and numba_threads_for(255, 8) == 1
    assert numba_threads_for(1024, 8, min_rows=512) == 2
