"""`TrackingPPO`'s device rollout path against SB3's own, on the CPU; ``--device`` handling."""

from __future__ import annotations

import csv

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
import torch  # noqa: E402
from gymnasium import spaces  # noqa: E402
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer  # noqa: E402
from stable_baselines3.common.vec_env import VecNormalize  # noqa: E402

from gym_motion.adapters.sb3.vec_env import SB3VecEnv  # noqa: E402
from gym_motion.envs import TrackingVecEnv  # noqa: E402
from gym_motion.training import RunConfig  # noqa: E402
from gym_motion.training.devices import available_devices, resolve_device  # noqa: E402
from gym_motion.training.sb3 import make_model, progress_logger  # noqa: E402
from gym_motion.training.sb3.ppo import DeviceRolloutBuffer, TrackingPPO  # noqa: E402


def _fill(buffers, obs_space, n_steps, n_envs, seed=0):
    """The same random step data into each buffer (SB3's numpy one and the device one)."""
    rng = np.random.default_rng(seed)
    for _ in range(n_steps):
        if isinstance(obs_space, spaces.Dict):
            obs = {k: rng.normal(size=(n_envs, *s.shape)).astype(np.float32)
                   for k, s in obs_space.spaces.items()}  # fmt: skip
        else:
            obs = rng.normal(size=(n_envs, *obs_space.shape)).astype(np.float32)
        act = rng.normal(size=(n_envs, 3)).astype(np.float32)
        rew = rng.normal(size=n_envs).astype(np.float32)
        start = rng.random(n_envs) < 0.2
        val = torch.from_numpy(rng.normal(size=(n_envs, 1)).astype(np.float32))
        logp = torch.from_numpy(rng.normal(size=n_envs).astype(np.float32))
        for b in buffers:
            if isinstance(b, DeviceRolloutBuffer):
                o = ({k: torch.from_numpy(v) for k, v in obs.items()} if isinstance(obs, dict)
                     else torch.from_numpy(obs))  # fmt: skip
                b.add(o, torch.from_numpy(act), torch.from_numpy(rew),
                      torch.from_numpy(start.astype(np.float32)), val, logp)  # fmt: skip
            else:
                b.add(obs, act, rew, start, val, logp)
    last = torch.from_numpy(rng.normal(size=(n_envs, 1)).astype(np.float32))
    dones = rng.random(n_envs) < 0.3
    return last, dones


@pytest.mark.parametrize("dict_obs", [False, True])
def test_device_buffer_gives_sb3s_advantages_and_minibatches_bit_for_bit(dict_obs):
    box = spaces.Box(-np.inf, np.inf, (5,), np.float32)
    obs_space = spaces.Dict({"policy": box, "critic": spaces.Box(-1, 1, (7,))}) if dict_obs \
        else box  # fmt: skip
    act_space = spaces.Box(-1.0, 1.0, (3,), np.float32)
    kw = {"gae_lambda": 0.95, "gamma": 0.99, "n_envs": 6}
    sb3 = (DictRolloutBuffer if dict_obs else RolloutBuffer)(4, obs_space, act_space, **kw)
    mine = DeviceRolloutBuffer(4, obs_space, act_space, device="cpu", **kw)
    last, dones = _fill([sb3, mine], obs_space, 4, 6)
    sb3.compute_returns_and_advantage(last, dones)
    mine.compute_returns_and_advantage(last, torch.from_numpy(dones))
    np.testing.assert_array_equal(mine.advantages.numpy(), sb3.advantages)
    np.testing.assert_array_equal(mine.returns_np, sb3.returns)
    np.random.seed(3)  # noqa: NPY002 (both buffers draw from the global generator)
    theirs = list(sb3.get(5))
    np.random.seed(3)  # noqa: NPY002 (both buffers draw from the global generator)
    ours = list(mine.get(5))
    assert [len(b.actions) for b in ours] == [5, 5, 5, 5, 4]
    for a, b in zip(theirs, ours, strict=True):
        for name in ("actions", "old_values", "old_log_prob", "advantages", "returns"):
            np.testing.assert_array_equal(getattr(b, name).numpy(), getattr(a, name).numpy())
        if dict_obs:
            for k in obs_space.spaces:
                np.testing.assert_array_equal(b.observations[k].numpy(), a.observations[k].numpy())
        else:
            np.testing.assert_array_equal(b.observations.numpy(), a.observations.numpy())
    with pytest.raises(RuntimeError, match="holds 4 steps already"):
        mine.add(*([torch.zeros(6)] * 6))


# The normalised observations (VecNormalize, clipped at 10) of the two paths, absolute: about
# 4x the largest difference measured over both tests and obs modes (seed 1, 6 envs, 2 updates).
# Policy group ("" in policy mode): measured max 4.6e-6 (the float32 rounding of the two
# MDPs' kernels). Critic group: measured max 1.4e-4 (4.8e-5 in the first test), in a column of
# small variance, which the normalisation divides by.
OBS_ATOL = {"": 2e-5, "policy": 2e-5, "critic": 5e-4}


def _model(device_rollouts: bool, obs_mode: str):
    """A 6-env PPO on the default motion with 12-step episodes (time-outs in every rollout)."""
    config = RunConfig(num_envs=6, obs_mode=obs_mode, seed=1,
                       ppo={"n_steps": 16, "n_epochs": 2, "net_arch": [32, 32]})  # fmt: skip
    env = TrackingVecEnv(6, cfg=config.env, autoreset_mode="same_step", obs_mode=obs_mode,
                         max_episode_steps=12, seed=1)  # fmt: skip
    venv = VecNormalize(SB3VecEnv(env), norm_obs=True, norm_reward=False, clip_obs=10.0)
    model, _ = make_model(config, venv, device_rollouts=device_rollouts)
    return model, venv


@pytest.mark.parametrize("obs_mode", ["dict", "policy"])
def test_device_rollouts_take_the_samples_and_updates_of_sb3s_path(obs_mode, tmp_path):
    """Two updates each way from one seed: the same observations, actions, rewards (time-outs
    bootstrapped), statistics and weights, to float rounding (the batched time-out values)."""
    runs = {}
    for device_rollouts in (False, True):
        model, venv = _model(device_rollouts, obs_mode)
        out = tmp_path / str(device_rollouts)
        model.set_logger(progress_logger(out))
        assert isinstance(model, TrackingPPO)
        assert isinstance(model.rollout_buffer, DeviceRolloutBuffer) == device_rollouts
        model.learn(2 * 16 * 6)
        buf = model.rollout_buffer
        obs = buf.observations
        obs = {k: np.asarray(v) for k, v in obs.items()} if isinstance(obs, dict) \
            else {"": np.asarray(obs)}  # fmt: skip
        runs[device_rollouts] = {
            "obs": obs,
            "rewards": np.asarray(buf.rewards),
            "starts": np.asarray(buf.episode_starts),
            "actions": np.asarray(buf.actions),
            "rms": venv.obs_rms,
            "weights": {k: v.numpy().copy() for k, v in model.policy.state_dict().items()},
            "log": dict(model.logger.name_to_value),
            "csv": list(csv.DictReader(open(out / "progress.csv"))),
            "steps": model.num_timesteps,
            "episodes": len(model.ep_info_buffer),
        }
    a, b = runs[False], runs[True]
    assert a["steps"] == b["steps"] == 2 * 16 * 6
    assert a["episodes"] == b["episodes"] > 0
    assert b["starts"].sum() > 0  # episodes ended (by the 12-step limit) within the rollout
    np.testing.assert_array_equal(a["starts"], b["starts"])
    for k in a["obs"]:  # SB3's update flattened its (T, N, D) in place, env-major
        ours = np.swapaxes(b["obs"][k], 0, 1).reshape(a["obs"][k].shape)
        np.testing.assert_allclose(ours, a["obs"][k], rtol=0, atol=OBS_ATOL[k], err_msg=k)
    np.testing.assert_allclose(b["rewards"], a["rewards"], atol=1e-5)
    rms_a = a["rms"] if isinstance(a["rms"], dict) else {"": a["rms"]}
    rms_b = b["rms"] if isinstance(b["rms"], dict) else {"": b["rms"]}
    for k in rms_a:
        np.testing.assert_allclose(rms_b[k].mean, rms_a[k].mean, rtol=1e-5, atol=1e-6)
        assert rms_b[k].count == rms_a[k].count
    for name, w in a["weights"].items():
        np.testing.assert_allclose(b["weights"][name], w, rtol=1e-4, atol=1e-5, err_msg=name)
    # the per-update profile: the update in both, the rollout's parts where they are measured
    assert b["log"]["time/update_s"] > 0 and a["log"]["time/update_s"] > 0
    assert float(b["csv"][-1]["time/update_s"]) > 0  # the first update, in the second row
    for key in ("time/env_s", "time/normalizer_s", "time/policy_s"):
        assert all(float(row[key]) > 0 for row in b["csv"]), key


@pytest.mark.parametrize("obs_mode", ["dict", "policy"])
def test_observations_read_on_the_envs_device_take_the_same_samples_and_statistics(obs_mode):
    """The device path over the host MDP against it over the device MDP (Warp's CPU device
    and torch's CPU stand in for one GPU): the env's arrays read and normalised where they
    are give the same observations, rewards, episode starts, VecNormalize statistics and
    weights, to float rounding (without observation noise: each MDP draws its own)."""
    import dataclasses

    runs = {}
    for mdp in ("host", "device"):
        config = RunConfig(num_envs=6, obs_mode=obs_mode, seed=1,
                           ppo={"n_steps": 16, "n_epochs": 2, "net_arch": [32, 32]})  # fmt: skip
        task = dataclasses.replace(config.env, obs_noise=False)
        task = dataclasses.replace(task, backend=dataclasses.replace(task.backend, mdp=mdp))
        env = TrackingVecEnv(6, cfg=task, autoreset_mode="same_step", obs_mode=obs_mode,
                             max_episode_steps=12, seed=1)  # fmt: skip
        venv = VecNormalize(SB3VecEnv(env), norm_obs=True, norm_reward=False, clip_obs=10.0)
        model, _ = make_model(config, venv, device_rollouts=True)
        assert model._device_observations(venv.venv) == (mdp == "device")
        model.learn(2 * 16 * 6)
        buf = model.rollout_buffer
        obs = buf.observations if isinstance(buf.observations, dict) else {"": buf.observations}
        rms = venv.obs_rms if isinstance(venv.obs_rms, dict) else {"": venv.obs_rms}
        runs[mdp] = {
            "obs": {k: np.asarray(v) for k, v in obs.items()},
            "rewards": np.asarray(buf.rewards),
            "starts": np.asarray(buf.episode_starts),
            "rms": {k: (r.mean.copy(), r.var.copy(), r.count) for k, r in rms.items()},
            "weights": {k: v.numpy().copy() for k, v in model.policy.state_dict().items()},
        }
    a, b = runs["host"], runs["device"]
    np.testing.assert_array_equal(b["starts"], a["starts"])
    assert a["starts"].sum() > 0
    for k in a["obs"]:
        np.testing.assert_allclose(b["obs"][k], a["obs"][k], rtol=0, atol=OBS_ATOL[k], err_msg=k)
    np.testing.assert_allclose(b["rewards"], a["rewards"], atol=1e-5)
    for k, (mean, var, count) in a["rms"].items():
        np.testing.assert_allclose(b["rms"][k][0], mean, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b["rms"][k][1], var, rtol=1e-4, atol=1e-6)
        assert b["rms"][k][2] == count
    for name, w in a["weights"].items():
        np.testing.assert_allclose(b["weights"][name], w, rtol=1e-4, atol=1e-5, err_msg=name)


def test_a_cpu_run_is_sb3s_ppo_bit_for_bit():
    """`TrackingPPO` on the CPU is SB3's PPO: same seed, same weights after an update."""
    from stable_baselines3 import PPO

    weights = []
    for cls in (PPO, TrackingPPO):
        env = TrackingVecEnv(4, autoreset_mode="same_step", obs_mode="policy", seed=0)
        venv = VecNormalize(SB3VecEnv(env), norm_reward=False)
        model = cls("MlpPolicy", venv, n_steps=8, batch_size=16, n_epochs=2, seed=0,
                    device="cpu", policy_kwargs={"net_arch": [16]})  # fmt: skip
        model.learn(32)
        weights.append({k: v.numpy().copy() for k, v in model.policy.state_dict().items()})
    for name, w in weights[0].items():
        np.testing.assert_array_equal(weights[1][name], w, err_msg=name)


def test_devices_resolve_or_are_refused_in_one_line():
    assert resolve_device("cpu") == "cpu"
    assert available_devices()[0] == "cpu"
    assert resolve_device("auto") == ("cuda:0" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match=r"^device 'tpu0' is not a torch device; use one of"):
        resolve_device("tpu0")
    missing = f"cuda:{torch.cuda.device_count()}"
    with pytest.raises(ValueError, match=r"is not available here.*torch lists \['cpu'") as err:
        resolve_device(missing)
    assert "\n" not in str(err.value)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="'cuda' is not available here"):
            resolve_device("cuda")


@pytest.mark.skipif(torch.cuda.is_available(), reason="torch lists a CUDA device here")
@pytest.mark.parametrize(("library", "algo"), [("sb3", "ppo"), ("sb3", "sac"), ("rsl_rl", "ppo")])
def test_every_learner_refuses_a_gpu_torch_does_not_list_before_any_work(tmp_path, library, algo):
    from gym_motion.training import train

    if library == "rsl_rl":
        pytest.importorskip("rsl_rl")
    config = RunConfig(library=library, algo=algo, device="cuda:0", num_envs=2,
                       obs_mode="policy" if algo == "sac" else "dict",
                       total_steps=48, out=str(tmp_path / "run"))  # fmt: skip
    with pytest.raises(ValueError, match=r"^device 'cuda:0' is not available here") as err:
        train(config)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("library", "algo"), [("sb3", "ppo"), ("sb3", "sac"), ("rsl_rl", "ppo")])
def test_every_learner_trains_on_the_device_auto_resolves_to(
    tmp_path, capsys, monkeypatch, library, algo
):
    import json

    from gym_motion.training import RunFolder, train

    if library == "rsl_rl":
        pytest.importorskip("rsl_rl")
        from gym_motion.training.rsl_rl.learner import RslRlLearner as Learner
    else:
        from gym_motion.training.sb3.learner import SB3Learner as Learner
    # where the learner's tensors are once it has learnt: the modules' parameters, the
    # optimiser's state (made by the updates, beside the parameters) and the rollout storage
    placed: dict[str, set[torch.device]] = {}
    real_learn = Learner.learn

    def learn(self, progress):
        real_learn(self, progress)
        if library == "rsl_rl":
            alg = self.runner.alg
            modules = {"actor": alg.actor, "critic": alg.critic}
            optimizers = [alg.optimizer]
            stored = [v for v in vars(alg.storage).values() if isinstance(v, torch.Tensor)]
        else:
            modules = {"policy": self.model.policy}
            # PPO's policy holds one optimiser; SAC's actor and critic one each
            optimizers = [
                m.optimizer
                for m in self.model.policy.modules()
                if isinstance(getattr(m, "optimizer", None), torch.optim.Optimizer)
            ]
            buf = getattr(self.model, "rollout_buffer", None)
            stored = [v for v in vars(buf).values() if isinstance(v, torch.Tensor)] if buf else []
        for name, module in modules.items():
            placed[name] = {p.device for p in module.parameters()}
        placed["optimizer"] = {v.device for o in optimizers for state in o.state.values()
                               for v in state.values() if isinstance(v, torch.Tensor)}  # fmt: skip
        placed["storage"] = {t.device for t in stored}

    monkeypatch.setattr(Learner, "learn", learn)
    out = tmp_path / "run"
    config = RunConfig(library=library, algo=algo, device="auto", num_envs=2, seed=0,
                       obs_mode="policy" if algo == "sac" else "dict", total_steps=48,
                       eval_every_steps=0, video_seconds=0.0, eval_max_seconds=0.2,
                       ppo={"n_steps": 24} if library == "sb3" and algo == "ppo" else {},
                       sac={"learning_starts": 8} if algo == "sac" else {},
                       out=str(out))  # fmt: skip
    summary = train(config)
    expected = "cuda:0" if torch.cuda.is_available() else "cpu"
    assert f"device auto -> {expected}" in capsys.readouterr().out
    assert json.loads((out / "config.json").read_text())["train"]["device"] == expected
    assert summary["env_steps"] >= 48
    assert RunFolder(out).run_config().device == expected
    assert placed and all(placed[k] for k in placed if k != "storage"), placed
    assert all(d == {torch.device(expected)} for d in placed.values() if d), placed


def test_the_rollout_path_survives_save_and_load_and_refuses_what_it_does_not_do(tmp_path):
    """A model built for SB3's host buffer (the Ray-sampled learner's) keeps it when loaded
    on any device; the device path refuses reward normalisation rather than skip it."""
    model, venv = _model(False, "policy")
    model.save(tmp_path / "model.zip")
    loaded = TrackingPPO.load(tmp_path / "model.zip", env=venv, device="cpu")
    assert loaded.device_rollouts is False
    assert not isinstance(loaded.rollout_buffer, DeviceRolloutBuffer)
    model, venv = _model(True, "policy")
    venv.norm_reward = True
    with pytest.raises(ValueError, match="norm_reward=False"):
        model.learn(16 * 6)


def test_mjwarp_physics_goes_to_the_learners_gpu_unless_the_backend_names_one():
    from gym_motion.training.skeleton import physics_on_learner_device

    gpu = RunConfig(device="cuda:1", env=RunConfig().env.updated(backend="mjwarp"))
    assert physics_on_learner_device(gpu).env.backend.device == "cuda:1"
    own = RunConfig(device="cuda:1", env=RunConfig().env.updated(
        backend="mjwarp", backend_kwargs={"device": "cuda:0"}))  # fmt: skip
    assert physics_on_learner_device(own) == own
    cpu = RunConfig(device="cpu", env=RunConfig().env.updated(backend="mjwarp"))
    assert physics_on_learner_device(cpu) == cpu
    mujoco = RunConfig(device="cuda:0")
    assert physics_on_learner_device(mujoco) == mujoco
