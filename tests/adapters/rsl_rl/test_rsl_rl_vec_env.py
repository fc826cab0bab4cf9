"""`RslRlVecEnv`: rsl_rl's VecEnv contract, a randomised episode-length buffer that keeps the
episode results true, and tracking statistics that reach rsl_rl's logger."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("rsl_rl")

from gymnasium.vector import AutoresetMode  # noqa: E402
from rsl_rl.env import VecEnv  # noqa: E402
from tensordict import TensorDict  # noqa: E402

from gym_motion.adapters.rsl_rl import RslRlVecEnv  # noqa: E402
from gym_motion.envs import TrackingVecEnv  # noqa: E402
from gym_motion.training.rsl_rl import runner_cfg  # noqa: E402

N = 6


# the device MDP against the host MDP, absolute, about 4-5x the largest difference measured
# (seed 3, N=6, 30 steps of actions ~ N(0, 2)): observations 9.5e-7 (|obs| up to ~29, where a
# float32 ulp is 1.9e-6), rewards 1.8e-7
RSL_OBS_ATOL = 4e-6
RSL_REWARD_ATOL = 1e-6


def make(n=N, obs_mode="dict", **kwargs) -> RslRlVecEnv:
    env = TrackingVecEnv(n, autoreset_mode="same_step", obs_mode=obs_mode, seed=3, **kwargs)
    return RslRlVecEnv(env)


def test_is_an_rsl_rl_vecenv_with_its_attributes():
    env = make()
    assert isinstance(env, VecEnv)
    assert (env.num_envs, env.num_actions, env.max_episode_length) == (N, 29, 500)
    assert env.device == torch.device("cpu")
    assert env.cfg["rewards"]["anchor_pos"]["weight"] == 0.5  # the task config, JSON-able
    buf = env.episode_length_buf
    assert buf.dtype == torch.long and buf.shape == (N,) and not buf.any()


def test_step_returns_tensors_of_groups_rewards_dones_and_time_outs():
    env = make()
    obs = env.get_observations()
    assert isinstance(obs, TensorDict) and obs.batch_size == torch.Size([N])
    assert obs["policy"].shape == (N, 160) and obs["critic"].shape == (N, 286)
    assert obs["policy"].dtype == torch.float32
    obs, rew, dones, extras = env.step(torch.zeros(N, 29))
    assert rew.shape == (N,) and rew.dtype == torch.float32
    assert dones.shape == (N,) and dones.dtype == torch.long
    assert extras["time_outs"].dtype == torch.bool and extras["time_outs"].shape == (N,)
    assert env.get_observations() is obs
    # the env's own values, passed through unchanged
    ref = TrackingVecEnv(N, autoreset_mode="same_step", obs_mode="dict", seed=3)
    ref.reset()
    ref_obs, ref_rew, *_ = ref.step(np.zeros((N, 29), np.float32))
    np.testing.assert_array_equal(rew.numpy(), ref_rew)
    np.testing.assert_array_equal(obs["critic"].numpy(), ref_obs["critic"])
    assert "reward/body_pos" in env.last_info and env.steps == N


def test_policy_obs_mode_gives_one_group():
    env = make(obs_mode="policy")
    assert list(env.get_observations().keys()) == ["policy"]


def test_refuses_other_autoreset_modes():
    with pytest.raises(ValueError, match="SAME_STEP"):
        RslRlVecEnv(TrackingVecEnv(2, autoreset_mode=AutoresetMode.NEXT_STEP))


def test_refuses_a_bad_buffer_shape():
    env = make()
    with pytest.raises(ValueError, match=r"shape \(6,\)"):
        env.episode_length_buf = torch.zeros(3, dtype=torch.long)


def test_random_episode_lengths_end_episodes_early_with_true_results():
    """rsl_rl's init_at_random_ep_len writes the buffer; those episodes end as time-outs after
    max - buffer steps, and their final/* are those of a run whose time limit was that short
    (writing the env's episode_length instead made final/length 500 and the error means ~20x
    too small)."""
    k = 7
    env = make()
    env.episode_length_buf = torch.full((N,), 500 - k, dtype=torch.long)
    ref = TrackingVecEnv(N, autoreset_mode="same_step", obs_mode="dict", seed=3,
                         max_episode_steps=k)  # fmt: skip
    ref.reset()
    for _ in range(k):
        _, rew, dones, extras = env.step(torch.zeros(N, 29))
        _, ref_rew, ref_term, ref_trunc, ref_info = ref.step(np.zeros((N, 29), np.float32))
        np.testing.assert_array_equal(rew.numpy(), ref_rew)
    info = env.last_info
    assert dones.all() and extras["time_outs"].all() and not ref_term.any()
    assert ref_trunc.all()
    np.testing.assert_array_equal(info["final/length"], np.full(N, k))
    for key in ("final/error/mpkpe", "final/error/joint_pos", "final/return",
                "final/reward/body_pos"):  # fmt: skip
        np.testing.assert_array_equal(info[key], ref_info[key])
    assert info["final/error/mpkpe"].min() > 0.01  # m: a real error mean, not sum / 500
    # the next episodes run the whole limit again
    assert not env.episode_length_buf.any()
    assert not env.unwrapped.time_limit_offset.any()


def test_in_place_writes_to_the_buffer_move_the_time_limit():
    env = make()
    env.episode_length_buf[2] = 499
    _, _, dones, extras = env.step(torch.zeros(N, 29))
    assert dones.tolist() == [0, 0, 1, 0, 0, 0] and extras["time_outs"][2]
    assert env.last_info["final/length"][2] == 1
    assert env.episode_length_buf.tolist() == [1, 1, 0, 1, 1, 1]


def test_log_carries_per_step_terms_and_one_value_per_ended_episode():
    env = make()
    env.episode_length_buf = torch.tensor([498, 498, 0, 0, 0, 0])
    _, _, _, extras = env.step(torch.zeros(N, 29))
    log = extras["log"]
    info = env.last_info
    assert log["reward/body_pos"] == pytest.approx(float(info["reward/body_pos"].mean()))
    assert log["episode/ended"] == 0.0 and "episode/length" not in log
    assert {"rollout/tracking_reward", "sampling/entropy", "sampling/top1_prob"} <= set(log)
    _, _, _, extras = env.step(torch.zeros(N, 29))
    log, info = extras["log"], env.last_info
    assert log["episode/ended"] == 2.0
    for key, final in (("episode/length", "final/length"),
                       ("error/mpkpe_mm", "final/error/mpkpe"),
                       ("episode/reward/body_pos", "final/reward/body_pos")):  # fmt: skip
        values = log[key]
        assert values.shape == (2,), key
        scale = 1000.0 if key.endswith("_mm") else 1.0
        expected = scale * info[final][info["_" + final]].mean()
        np.testing.assert_allclose(values.numpy(), expected, rtol=1e-5)
    assert log["termination/time_out"].tolist() == [1.0, 1.0]


def test_actions_may_be_clipped_and_come_from_any_device_dtype():
    env = RslRlVecEnv(TrackingVecEnv(2, autoreset_mode="same_step", seed=0), clip_actions=0.5)
    env.step(torch.full((2, 29), 3.0, dtype=torch.float64))
    np.testing.assert_allclose(env.unwrapped.state.action, 0.5)
    with pytest.raises(ValueError, match="clip_actions"):
        RslRlVecEnv(TrackingVecEnv(2, autoreset_mode="same_step"), clip_actions=0.0)


def test_runner_trains_and_writes_tracking_statistics_to_tensorboard(tmp_path):
    """A few thousand steps of rsl_rl's own OnPolicyRunner: per-term rewards, episode results,
    termination rates and tracking errors reach its TensorBoard log."""
    from rsl_rl.runners import OnPolicyRunner
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    torch.manual_seed(0)
    env = make(n=32)
    cfg = runner_cfg({"num_steps_per_env": 32, "hidden_dims": [64, 64]})
    runner = OnPolicyRunner(env, cfg, log_dir=str(tmp_path), device="cpu")
    runner.learn(2, init_at_random_ep_len=True)  # 2 x 32 x 32 = 2048 env steps
    runner.logger.writer.flush()
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    for tag in ("reward/body_pos", "reward/action_rate", "rollout/tracking_reward",
                "episode/length", "episode/return", "episode/reward/anchor_pos",
                "termination/time_out", "termination/anchor_height", "error/mpkpe_mm",
                "Train/mean_episode_length", "Loss/surrogate"):  # fmt: skip
        assert tag in tags, tag
    lengths = [e.value for e in acc.Scalars("episode/length")]
    assert all(0 < v <= 500 for v in lengths)
    mpkpe = [e.value for e in acc.Scalars("error/mpkpe_mm")]
    assert all(10.0 < v < 2000.0 for v in mpkpe)  # mm: episode means, not diluted sums
    assert env.steps == 2048


def test_init_at_random_ep_len_spreads_the_time_limits_not_the_lengths():
    from rsl_rl.runners import OnPolicyRunner

    torch.manual_seed(0)
    env = make(n=16)
    runner = OnPolicyRunner(env, runner_cfg({"hidden_dims": [8]}), log_dir=None, device="cpu")
    runner.learn(0, init_at_random_ep_len=True)  # writes the buffer, learns nothing
    start = env.episode_length_buf.clone()
    assert len(set(start.tolist())) > 8 and 0 <= start.min() and start.max() < 500
    env.step(torch.zeros(16, 29))
    base = env.unwrapped
    alive = ~(env.last_info.get("_final/length", np.zeros(16, bool)))
    np.testing.assert_array_equal(base.episode_length[alive], 1)
    np.testing.assert_array_equal(base.time_limit_offset[alive], start.numpy()[alive])
    np.testing.assert_array_equal(env.episode_length_buf.numpy()[alive], start.numpy()[alive] + 1)


def test_with_the_device_mdp_tensors_come_from_the_device_arrays_as_the_env_returned_them():
    """Warp's CPU device stands in for a GPU: the adapter takes the device MDP's arrays
    (`TrackingVecEnv.device_arrays`), not the NumPy results, and gives what the env returned,
    in tensors of its own (clones: the env overwrites its arrays on the next step); the host
    MDP on the same seed and actions gives the same values to float32 rounding, through
    episodes that end and reset (without observation noise: each MDP draws its own)."""
    import dataclasses

    import warp as wp

    from gym_motion.envs import TrackingEnvCfg

    cfg = dataclasses.replace(TrackingEnvCfg(), obs_noise=False)
    host = make(cfg=cfg)
    cfg = dataclasses.replace(cfg, backend=dataclasses.replace(cfg.backend, mdp="device"))
    env = make(cfg=cfg)
    assert env._on_device and env.unwrapped.mdp_device == "cpu"
    assert not host._on_device and host.unwrapped.mdp_device is None
    torch.testing.assert_close(
        env.get_observations()["policy"],
        host.get_observations()["policy"],
        rtol=0,
        atol=RSL_OBS_ATOL,
    )
    with pytest.raises(RuntimeError, match=r"device_arrays\(\) needs the device MDP"):
        make().unwrapped.device_arrays()
    read = []
    real = env.unwrapped.device_arrays
    env.unwrapped.device_arrays = lambda: read.append(1) or real()
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(30):
        actions = torch.as_tensor(rng.normal(0.0, 2.0, (N, 29)), dtype=torch.float32)
        obs, rew, dones, extras = env.step(actions)
        h_obs, h_rew, h_dones, h_extras = host.step(actions)
        assert obs["policy"].device == rew.device == dones.device == torch.device("cpu")
        torch.testing.assert_close(dones, h_dones, rtol=0, atol=0)
        torch.testing.assert_close(extras["time_outs"], h_extras["time_outs"], rtol=0, atol=0)
        torch.testing.assert_close(rew, h_rew, rtol=0, atol=RSL_REWARD_ATOL)
        for group in ("policy", "critic"):
            torch.testing.assert_close(obs[group], h_obs[group], rtol=0, atol=RSL_OBS_ATOL)
        ended += int(dones.sum())
        info = env.last_info
        arrays = real()
        np.testing.assert_array_equal(rew.numpy(), arrays["reward"].numpy())
        terminated, truncated = arrays["terminated"].numpy(), arrays["truncated"].numpy()
        np.testing.assert_array_equal(dones.numpy(), (terminated | truncated).astype(np.int64))
        np.testing.assert_array_equal(extras["time_outs"].numpy(), truncated)
        for group in ("policy", "critic"):
            np.testing.assert_array_equal(obs[group].numpy(), arrays[group].numpy())
            assert obs[group].data_ptr() != wp.to_torch(arrays[group]).data_ptr()
        assert "reward/body_pos" in info
    assert len(read) == 60  # every step: observations, then reward and flags
    assert ended > 0  # episodes ended (large actions) and the envs reset on the device too
