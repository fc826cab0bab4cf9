"""Reset sampling: adaptive failure weighting, uniform coverage, short clips, seeding."""

from __future__ import annotations

import numpy as np
import pytest

from gym_motion.motion import MotionSampler, SamplingMode


def test_bins_are_one_per_second_of_motion():
    sampler = MotionSampler([500, 25, 50, 2], fps=50.0)
    assert sampler.bin_counts.tolist() == [11, 1, 2, 1]  # floor(T / 50) + 1
    assert sampler.num_bins == 15
    np.testing.assert_allclose(sampler.probabilities, 1 / 15)
    assert sampler.entropy == pytest.approx(1.0) and sampler.top1_prob == pytest.approx(1 / 15)


def test_failures_in_one_bin_raise_its_probability():
    sampler = MotionSampler([500, 300], fps=50.0, num_envs=64, seed=0)
    # clip 1: 300 frames, 7 bins of 299 / 7 frames; frame 100 is in its bin 2
    target = sampler.bins_of(np.array([1]), np.array([100]))[0]
    assert target == sampler.bin_starts[1] + 2
    for _ in range(200):
        sampler.update(np.array([1] * 8 + [0]), np.array([100] * 8 + [10]), np.ones(9, bool))
    p = sampler.probabilities
    assert p.argmax() == target and p[target] > 3 * np.median(p)
    assert sampler.entropy < 1.0 and sampler.top1_prob == pytest.approx(p[target])
    clip_ids, frames = sampler.sample(20_000)
    in_bin = sampler.bins_of(clip_ids, frames) == target
    assert in_bin.mean() == pytest.approx(p[target], abs=0.02)


@pytest.mark.parametrize("num_envs", [16, 1024])
def test_one_always_failing_bin_gets_most_starts_at_any_env_count(num_envs):
    sampler = MotionSampler([1000], fps=50.0, num_envs=num_envs, seed=0)
    rng = np.random.default_rng(1)
    target = 7
    for _ in range(300):  # one control step each: a few envs end their episode
        clip_ids, frames = sampler.sample(num_envs // 8, rng)
        failed = sampler.bins_of(clip_ids, frames) == target
        sampler.update(clip_ids, frames, failed)
    assert sampler.probabilities[target] == pytest.approx(0.9 + 0.1 / sampler.num_bins)
    clip_ids, frames = sampler.sample(20_000, rng)
    assert (sampler.bins_of(clip_ids, frames) == target).mean() >= 0.5


def test_probabilities_are_a_mixture_of_the_normalised_ema_and_uniform():
    sampler = MotionSampler([500], fps=50.0, num_envs=4, uniform_ratio=0.1)
    k = sampler.num_bins
    np.testing.assert_allclose(sampler.probabilities, 1.0 / k)  # uniform before any failure
    sampler.update(np.array([0, 0, 0]), np.array([60, 60, 300]), np.ones(3, bool))
    e = sampler.failure_ema
    np.testing.assert_allclose(e.sum(), 0.001 * 3)  # raw counts, not divided by num_envs
    np.testing.assert_allclose(sampler.probabilities, 0.9 * e / e.sum() + 0.1 / k)
    assert sampler.probabilities.sum() == pytest.approx(1.0)


def test_truncations_do_not_count_and_the_ema_decays():
    sampler = MotionSampler([500], fps=50.0, num_envs=4)
    sampler.update(np.array([0, 0]), np.array([60, 70]), np.array([True, False]))
    assert sampler.failure_ema.sum() == pytest.approx(0.001)
    sampler.update(np.array([], np.int32), np.array([], np.int32), np.array([], bool))
    assert sampler.failure_ema.sum() == pytest.approx(0.001 * 0.999)


def test_uniform_mode_is_uniform_over_start_frames():
    sampler = MotionSampler([61, 41], fps=50.0, mode="uniform", seed=1)
    clip_ids, frames = sampler.sample(100_000)
    flat = np.where(clip_ids == 0, frames, 60 + frames)  # 60 + 40 start frames
    counts = np.bincount(flat, minlength=100)
    assert counts.size == 100  # never the last frame of a clip
    expected = len(flat) / 100
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 99 + 5 * np.sqrt(2 * 99)  # df = 99; mean + 5 sigma


@pytest.mark.parametrize("mode", list(SamplingMode))
def test_half_second_clip_works_in_every_mode(mode):
    sampler = MotionSampler([25], fps=50.0, mode=mode, num_envs=4, seed=2)
    assert sampler.num_bins == 1 and sampler.entropy == 1.0
    sampler.update(np.array([0]), np.array([24]), np.array([True]))
    clip_ids, frames = sampler.sample(1000)
    assert clip_ids.dtype == np.int32 and frames.dtype == np.int32
    assert (clip_ids == 0).all() and frames.min() >= 0 and frames.max() <= 23
    if mode is SamplingMode.START:
        assert (frames == 0).all()
    else:
        assert len(np.unique(frames)) == 24


def test_seeded_sampling_is_reproducible():
    a = MotionSampler([500, 300], fps=50.0, seed=7)
    b = MotionSampler([500, 300], fps=50.0, seed=3)
    b.seed(7)
    for x, y in zip(a.sample(100), b.sample(100), strict=True):
        np.testing.assert_array_equal(x, y)
    rng = np.random.default_rng(5)
    first = a.sample(10, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(first[1], a.sample(10, rng=rng)[1])


def test_adaptive_draws_are_rng_choice_with_the_bin_probabilities():
    sampler = MotionSampler([500, 300, 90], fps=50.0, num_envs=64, seed=0)
    rng = np.random.default_rng(3)
    for step in range(40):
        clip_ids, frames = sampler.sample(1 + step % 9, rng)
        sampler.update(clip_ids, frames, rng.random(clip_ids.size) < 0.4)
    p = sampler.probabilities
    assert p.std() > 0.0  # not uniform
    drawn, expected = np.random.default_rng(5), np.random.default_rng(5)
    clip_ids, frames = sampler.sample(5000, drawn)
    bins = expected.choice(sampler.num_bins, size=5000, p=p)
    counts, last = sampler.bin_counts[clip_ids], sampler.lengths[clip_ids] - 1
    local = bins - sampler.bin_starts[clip_ids]  # the bin within its clip
    frame_floor = np.floor((local + expected.random(5000)) / counts * last)
    np.testing.assert_array_equal(clip_ids, np.searchsorted(sampler.bin_starts, bins, "right") - 1)
    np.testing.assert_array_equal(frames, np.minimum(frame_floor, last - 1))
    assert drawn.random() == expected.random()  # and the stream goes on the same


def _numpy_sample(s: MotionSampler, n: int, rng: np.random.Generator):
    """The adaptive draw in NumPy (the sampler before its kernels): the oracle."""
    total, uniform = s.failure_ema.sum(), np.full(s.num_bins, 1.0 / s.num_bins)
    p = uniform
    if total > 0.0:
        p = (1.0 - s.uniform_ratio) * (s.failure_ema / total) + s.uniform_ratio * uniform
    assert p.tobytes() == s.probabilities.tobytes()
    cdf = p.cumsum()
    cdf /= cdf[-1]
    bins = cdf.searchsorted(rng.random(n), side="right")
    clip_ids = np.searchsorted(s.bin_starts, bins, side="right") - 1
    counts, last = s.bin_counts[clip_ids], s.lengths[clip_ids] - 1
    frames = np.floor((bins - s.bin_starts[clip_ids] + rng.random(n)) / counts * last)
    return clip_ids, np.minimum(frames.astype(np.int64), last - 1)


def _numpy_update(s: MotionSampler, ema: np.ndarray, clip_ids, frames, failed) -> None:
    counts = s.bin_counts[clip_ids]
    local = np.clip((frames.astype(np.int64) * counts) // (s.lengths[clip_ids] - 1), 0, counts - 1)
    failures = np.zeros_like(ema)
    np.add.at(failures, s.bin_starts[clip_ids] + local, failed.astype(float))
    ema *= 1.0 - s.alpha
    ema += s.alpha * failures


def test_sampler_kernels_match_numpy_bit_for_bit_over_a_run():
    lengths = [2, 25, 90, 500, 301, 7000]  # 155 bins: the EMA sum is NumPy's pairwise one
    sampler = MotionSampler(lengths, fps=50.0, num_envs=64, seed=0)
    ema = sampler.failure_ema.copy()
    rng, oracle_rng = np.random.default_rng(9), np.random.default_rng(9)
    for step in range(300):
        n = step % 7
        clip_ids, frames = sampler.sample(n, rng)
        expected = _numpy_sample(sampler, n, oracle_rng)
        np.testing.assert_array_equal(clip_ids, expected[0])
        np.testing.assert_array_equal(frames, expected[1])
        failed = rng.random(n) < 0.5
        oracle_rng.random(n)
        sampler.update(clip_ids, frames, failed)
        _numpy_update(sampler, ema, clip_ids, frames, failed)
        assert sampler.failure_ema.tobytes() == ema.tobytes()
    assert sampler.top1_prob > 2.0 / sampler.num_bins  # failures were folded in
    np.testing.assert_array_equal(sampler._failures, 0.0)  # scratch left zero


def test_bad_updates_are_refused_and_leave_the_ema_as_it_was():
    sampler = MotionSampler([500, 300], fps=50.0, num_envs=4)
    sampler.update(np.array([0]), np.array([60]), np.array([True]))
    ema = sampler.failure_ema.copy()
    with pytest.raises(IndexError, match=r"clip id 7 \(position 1\) is out of range for 2 clips"):
        sampler.update(np.array([0, 7]), np.array([3, 3]), np.array([True, True]))
    with pytest.raises(IndexError, match="clip id -1"):
        sampler.bins_of(np.array([-1]), np.array([0]))
    with pytest.raises(ValueError, match="equal lengths, got \\[1, 1, 2\\]"):
        sampler.update(np.array([0]), np.array([3]), np.array([True, False]))
    assert sampler.failure_ema.tobytes() == ema.tobytes()


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"alpha": 0.0}, "alpha"), ({"alpha": 1.5}, "alpha"),
    ({"uniform_ratio": -0.5}, "uniform_ratio"), ({"uniform_ratio": 3.0}, "uniform_ratio"),
])  # fmt: skip
def test_out_of_range_rates_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MotionSampler([500], fps=50.0, **kwargs)
