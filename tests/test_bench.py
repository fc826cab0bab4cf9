"""`gym-motion bench`: the physics-only limit replays the env's own physics, and the result
carries the documented keys (timings themselves are benchmark figures, not tested)."""

from __future__ import annotations

import numpy as np

from gym_motion.bench import BareBatch, BareRollout, PhysicsInputs, bench_env, format_result
from gym_motion.envs import TrackingVecEnv


def test_bare_batch_replays_the_env_physics_bit_for_bit():
    n = 6
    # the training config (domain randomisation, pushes); SAME_STEP: rows restart on the step
    # that ends them
    env = TrackingVecEnv(n, seed=0, autoreset_mode="same_step")
    env.reset(seed=0)
    inputs = PhysicsInputs(env.backend)
    batch, rollout = BareBatch(inputs), BareRollout(inputs)
    env_qpos, bare_qpos = env.backend._batch.bind("qpos"), batch._batch.bind("qpos")
    rng = np.random.default_rng(0)
    matched = 0
    for _ in range(25):
        inputs.record()
        _, _, term, trunc, info = env.step(rng.normal(0.0, 0.5, (n, 29)).astype(np.float32))
        inputs.record_controls()
        assert batch.run() > 0.0 and rollout.run() > 0.0
        # rows the env re-initialised after its physics (episode ends, clip ends) moved on
        kept = ~(term | trunc | info["clip_end"])
        np.testing.assert_array_equal(bare_qpos[kept], env_qpos[kept])
        matched += int(kept.sum())
    assert matched > 100
    batch.close()
    rollout.close()
    env.close()


def test_bench_result_keys_and_ratio():
    r = bench_env(2, steps=6, repeats=3)
    assert r["steps"] == 6 and r["steps_per_repeat"] == 2 and r["repeats"] == 3
    assert set(r["phases_ms"]) == {
        "action", "physics", "copy", "command", "termination", "reward", "reset", "observation"
    }  # fmt: skip
    lim = r["physics_limit_env_steps_per_s"]
    assert r["physics_limit_method"] in ("rollout", "batch")
    assert lim == max(r["physics_limit_rollout_env_steps_per_s"],
                      r["physics_limit_batch_env_steps_per_s"])  # fmt: skip
    assert np.isclose(r["ratio_to_limit"], r["env_steps_per_s"] / lim)
    assert np.isclose(r["step_over_physics"], 1.0 / r["ratio_to_limit"])
    assert len(r["ratio_to_limit_per_repeat"]) == 3
    assert 0.0 < r["non_physics_fraction"] < 1.0
    text = format_result(r)
    assert "physics-only limit" in text and "rollout" in text and "batch" in text
