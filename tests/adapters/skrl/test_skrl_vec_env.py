"""`SkrlVecEnv`: skrl's torch env interface, from NumPy results or from the device MDP's arrays."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skrl")

from skrl.envs.wrappers.torch import wrap_env  # noqa: E402

from gym_motion.adapters.skrl import SkrlInfo, SkrlVecEnv  # noqa: E402
from gym_motion.envs import TrackingEnvCfg, TrackingVecEnv  # noqa: E402

N = 8
TRACKING = tuple(n for n, t in TrackingEnvCfg().rewards.items() if t.weight > 0)
# (rtol, atol) of info["episode"] against the float64 oracle, ~4.5x the largest relative
# difference measured over 40 steps: 1.1e-7 on the host path (float32 means and tensors);
# 2.2e-6 for the device MDP's statistics against the host MDP's info (no value was 0 in one
# and not in the other)
EPISODE_TOL = (5e-7, 1e-9)
DEVICE_EPISODE_TOL = (1e-5, 1e-9)


def _env(mdp: str = "host", **kwargs) -> TrackingVecEnv:
    """N envs in SAME_STEP mode on `mdp`; without observation noise (each MDP draws its own)."""
    cfg = TrackingEnvCfg()
    cfg = dataclasses.replace(cfg, backend=dataclasses.replace(cfg.backend, mdp=mdp),
                              obs_noise=False)  # fmt: skip
    return TrackingVecEnv(N, cfg=cfg, autoreset_mode="same_step", seed=0, **kwargs)


def _actions(steps: int) -> list[torch.Tensor]:
    rng = np.random.default_rng(0)
    return [torch.as_tensor(rng.normal(0.0, 2.0, (N, 29)), dtype=torch.float32)
            for _ in range(steps)]  # fmt: skip


def _episode_oracle(info: dict, tracking: tuple[str, ...]) -> dict[str, float]:
    """``info["episode"]`` computed anew, in float64, from the env's batched NumPy info
    (not through `TrackingStats`): batch means of each ``reward/<term>`` and of the tracking
    terms' sum; the count of ended episodes; their mean return, length, per-term sums,
    termination rates and MPKPE (mm)."""
    out = {k: float(np.mean(v, dtype=np.float64)) for k, v in info.items()
           if k.startswith("reward/")}  # fmt: skip
    out["rollout/tracking_reward"] = sum(out[f"reward/{t}"] for t in tracking)
    done = info.get("_final/length", np.zeros(N, bool))  # absent: no episode ended
    out["episode/ended"] = float(done.sum())
    for k, v in info.items():
        if not done.any() or not k.startswith("final/"):
            continue
        name, m = k[len("final/") :], float(np.mean(v[done], dtype=np.float64))
        if name in ("return", "length") or name.startswith("reward/"):
            out[f"episode/{name}"] = m
        elif name.startswith("termination/"):
            out[name] = m
        elif name == "error/mpkpe":
            out["error/mpkpe_mm"] = 1000.0 * m
    return out


def _check_episode(stats: dict, oracle: dict, rtol: float, atol: float) -> None:
    """Every oracle key in ``info["episode"]``, as a 1-element float32 tensor near its value."""
    assert oracle.keys() <= stats.keys(), oracle.keys() - stats.keys()
    assert "episode/length" in oracle or oracle["episode/ended"] == 0
    for k, want in oracle.items():
        got = stats[k]
        assert got.shape == (1,) and got.dtype == torch.float32, k
        assert abs(got.item() - want) <= atol + rtol * abs(want), (k, got.item(), want)


def test_the_host_path_returns_what_skrls_gymnasium_wrapper_returns():
    """Over steps with autoresets (large actions end episodes), the same tensors, shapes and
    dtypes as skrl's own wrapper around `SkrlInfo`, and the same ``info["episode"]``."""
    import skrl

    skrl.config.torch.key = 0  # the seed skrl's wrapper resets with: the envs' own
    ours, theirs = SkrlVecEnv(_env()), wrap_env(SkrlInfo(_env()), wrapper="gymnasium")
    assert ours.observation_space == theirs.observation_space
    assert ours.action_space == theirs.action_space and ours.state_space is None
    assert ours.num_envs == theirs.num_envs == N and not ours._on_device
    obs, _ = ours.reset()
    ref, _ = theirs.reset()
    torch.testing.assert_close(obs, ref, rtol=0, atol=0)
    ended = 0
    for a in _actions(40):
        got, want = ours.step(a), theirs.step(a)
        for x, y in zip(got[:4], want[:4], strict=True):
            assert x.shape == y.shape and x.dtype == y.dtype and x.device == y.device
            torch.testing.assert_close(x, y, rtol=0, atol=0)
        assert got[4]["episode"].keys() == want[4]["episode"].keys()
        for k, v in got[4]["episode"].items():
            torch.testing.assert_close(v, want[4]["episode"][k], rtol=0, atol=0)
        # the same function made both: the values against an oracle of the env's own info
        _check_episode(got[4]["episode"], _episode_oracle(got[4], TRACKING), *EPISODE_TOL)
        ended += int(got[2].sum() + got[3].sum())
        assert ours.state() is None
    assert ended > 0
    assert ours.reset()[0] is ours._obs["policy"]  # vectorised: reset once, then the last obs


def test_with_the_device_mdp_tensors_come_from_its_arrays_as_clones():
    """Warp's CPU device stands in for a GPU: the wrapper steps with `step_on_device` and
    takes observations, critic state, reward and flags from `device_arrays` (their values, in
    tensors of its own: the env overwrites its arrays, skrl adds into the reward); the host
    MDP's NumPy results agree within float32 rounding."""
    import warp as wp

    env = SkrlVecEnv(_env("device", obs_mode="dict"))
    host = SkrlVecEnv(_env(obs_mode="dict"))
    assert env._on_device and env.state_space.shape == (286,)
    assert env.observation_space.shape == (160,)
    base = env.unwrapped
    stepped = []
    real_step = base.step_on_device
    base.step_on_device = lambda a: stepped.append(a) or real_step(a)
    env.reset(), host.reset()
    ended = 0
    for a in _actions(40):
        obs, reward, terminated, truncated, info = env.step(a)
        h_obs, h_reward, h_terminated, h_truncated, h_info = host.step(a)
        arrays = base.device_arrays()
        assert isinstance(stepped[-1], torch.Tensor)  # the actions went to the device as they are
        for tensor, name in ((obs, "policy"), (env.state(), "critic")):
            np.testing.assert_array_equal(tensor.numpy(), arrays[name].numpy())
            assert tensor.data_ptr() != wp.to_torch(arrays[name]).data_ptr()
        np.testing.assert_array_equal(reward.numpy()[:, 0], arrays["reward"].numpy())
        assert reward.shape == (N, 1) and terminated.dtype == torch.bool
        torch.testing.assert_close(terminated, h_terminated, rtol=0, atol=0)
        torch.testing.assert_close(truncated, h_truncated, rtol=0, atol=0)
        torch.testing.assert_close(reward, h_reward, rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(obs, h_obs, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(env.state(), host.state(), rtol=1e-4, atol=1e-5)
        assert info["episode"]["episode/ended"] == h_info["episode"]["episode/ended"]
        # the device MDP's statistics against the host MDP's info, through the oracle
        _check_episode(info["episode"], _episode_oracle(h_info, TRACKING), *DEVICE_EPISODE_TOL)
        ended += int(terminated.sum() + truncated.sum())
    assert ended > 0 and len(stepped) == 40


def test_refuses_next_step_mode_other_envs_and_a_taken_info_key():
    import gymnasium as gym

    from gym_motion.envs.single import TrackingEnv

    with pytest.raises(ValueError, match="SAME_STEP"):
        SkrlVecEnv(TrackingVecEnv(2))
    with pytest.raises(ValueError, match="needs a vector env .*got TrackingEnv"):
        SkrlVecEnv(TrackingEnv())
    stats = gym.wrappers.vector.RecordEpisodeStatistics(_env())
    with pytest.raises(ValueError, match="RecordEpisodeStatistics writes info\\['episode'\\]"):
        SkrlVecEnv(stats)  # refused when built, not when its first episode ends
    SkrlVecEnv(stats, key="tracking")
    with pytest.raises(ValueError, match="SkrlInfo writes info\\['episode'\\]"):
        SkrlVecEnv(SkrlInfo(_env()))  # the statistics twice
    with pytest.raises(ValueError, match="SkrlVecEnv needs a TrackingVecEnv, got SyncVectorEnv"):
        SkrlVecEnv(gym.make_vec("Pendulum-v1", 2, vectorization_mode="sync",
                                vector_kwargs={"autoreset_mode": "SameStep"}))  # fmt: skip
    env = SkrlVecEnv(_env(), key="reward/body_pos")
    env.reset()
    with pytest.raises(ValueError, match="already has 'reward/body_pos'"):
        env.step(torch.zeros(N, 29))
    env.close()
    with pytest.raises(RuntimeError, match="the env is closed"):
        env.reset()  # not the last observations, cached
