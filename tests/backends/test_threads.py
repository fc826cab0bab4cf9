"""Numba's pool sized to the batch: the kernels' serial builds for small batches, the choice
restored afterwards, and the same results at any pool size and build (timings are benchmark
figures, `gym-motion bench`)."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import gym_motion.backends.threads as threads
from gym_motion.backends.mujoco import _body_state_kernel
from gym_motion.backends.threads import (
    MIN_ROWS_PER_NUMBA_THREAD,
    NumbaThreads,
    available_cpus,
    numba_threads_for,
)
from gym_motion.envs import TrackingVecEnv
from gym_motion.kernels import rewards
from gym_motion.kernels.dispatch import serial_rows, serial_rows_enabled
from gym_motion.kernels.episode import end_step

TWO_THREADS = pytest.mark.skipif(
    numba.config.NUMBA_NUM_THREADS < 2, reason="needs a Numba pool of 2 threads"
)
# an env's pool ceiling is its CPU block (`ThreadBudget`)
TWO_CPUS = pytest.mark.skipif(
    min(numba.config.NUMBA_NUM_THREADS, len(available_cpus())) < 2,
    reason="needs 2 CPUs and a Numba pool of 2 threads",
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
        with NumbaThreads(1):  # serial builds; the pool is left alone
            assert serial_rows_enabled() and numba.get_num_threads() == 2
            numba.set_num_threads(1)
            with NumbaThreads(2):
                assert not serial_rows_enabled() and numba.get_num_threads() == 2
            assert serial_rows_enabled() and numba.get_num_threads() == 1
            numba.set_num_threads(2)
        assert not serial_rows_enabled() and numba.get_num_threads() == 2
        with pytest.raises(KeyError), NumbaThreads(1):
            raise KeyError("inside")
        assert not serial_rows_enabled()
    finally:
        numba.set_num_threads(before)
    with pytest.raises(ValueError, match="threads must be >= 1"):
        NumbaThreads(0)


def test_a_row_kernel_runs_the_build_the_thread_chose(monkeypatch):
    from gym_motion.kernels.terminations import gravity_z_error_exceeds as kernel

    # two builds with their own compile flags, and their own names, which key Numba's disk cache
    assert kernel.parallel.targetoptions.get("parallel")
    assert "parallel" not in kernel.serial.targetoptions
    assert kernel.serial.py_func.__qualname__ == kernel.parallel.py_func.__qualname__ + "__serial"
    calls = []
    for build in ("serial", "parallel"):
        compiled = getattr(kernel, build)
        monkeypatch.setattr(kernel, build, lambda *a, b=build, c=compiled: calls.append(b) or c(*a))
    q = np.zeros((3, 4), np.float32)
    q[:, 0] = 1.0
    out = np.ones(3, bool)
    kernel(q, q, 0.5, out)
    with serial_rows():
        kernel(q, q, 0.5, out)
        with serial_rows(False):
            kernel(q, q, 0.5, out)
    assert calls == ["parallel", "serial", "parallel"] and not out.any()


@TWO_THREADS
def test_small_env_runs_its_kernels_serially_and_restores_the_choice():
    env = TrackingVecEnv(4, seed=0, backend_kwargs={"num_threads": 2})
    assert env._numba_threads.threads == 1
    seen = []
    compute = env.rewards.compute

    def spy():
        seen.append((serial_rows_enabled(), numba.get_num_threads()))
        return compute()

    env.rewards.compute = spy
    pool = numba.get_num_threads()
    env.reset(seed=0)
    env.step(np.zeros((4, 29), np.float32))
    assert seen == [(True, pool)] and not serial_rows_enabled()
    env.close()


@TWO_CPUS
@pytest.mark.parametrize("min_rows", [MIN_ROWS_PER_NUMBA_THREAD, 4])
def test_the_env_binds_the_build_of_its_batch_when_built(monkeypatch, min_rows):
    """8 rows: serial builds; parallel once 4 rows a thread give the batch 2 threads. The
    managers, the step's kernel and the MuJoCo backend all call the build chosen then."""
    monkeypatch.setattr(threads, "MIN_ROWS_PER_NUMBA_THREAD", min_rows)
    calls = set()
    for kernel in (end_step, rewards.add_episode_sums, _body_state_kernel):
        spies = tuple(
            lambda *a, name=name, build=build: calls.add(name) or build(*a)
            for name, build in zip(("parallel", "serial"), kernel.builds, strict=True)
        )
        monkeypatch.setattr(kernel, "builds", spies)
    env = TrackingVecEnv(8, seed=0, backend_kwargs={"num_threads": 2})
    env.reset(seed=0)
    env.step(np.zeros((8, 29), np.float32))
    env.close()
    assert env._numba_threads.serial == (min_rows > 4)
    assert calls == {"serial" if min_rows > 4 else "parallel"}


@TWO_CPUS
def test_results_are_bit_identical_at_any_pool_size(monkeypatch):
    def rollout(min_rows: int) -> list[np.ndarray]:
        monkeypatch.setattr(threads, "MIN_ROWS_PER_NUMBA_THREAD", min_rows)
        env = TrackingVecEnv(8, seed=0, obs_mode="dict")
        assert env._numba_threads.threads == (1 if min_rows > 4 else 2)
        obs, _ = env.reset(seed=0)
        out = [obs["critic"]]
        rng = np.random.default_rng(1)
        for _ in range(30):
            obs, reward, *_ = env.step(rng.normal(0.0, 0.5, (8, 29)).astype(np.float32))
            out += [obs["critic"], reward]
        env.close()
        return out

    for a, b in zip(rollout(MIN_ROWS_PER_NUMBA_THREAD), rollout(4), strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_split_follows_the_module_setting(monkeypatch):
    monkeypatch.setattr(threads, "MIN_ROWS_PER_NUMBA_THREAD", 128)
    assert numba_threads_for(1024, 8) == 8 and numba_threads_for(255, 8) == 1
    assert numba_threads_for(1024, 8, min_rows=512) == 2
