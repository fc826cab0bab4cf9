"""``gym-motion train --samplers K``: Ray sampler actors collect PPO's rollouts for one learner.

Without Ray: a sampler collects exactly what SB3's own loop collects in-process, and the same
samples give the learner exactly the in-process update. With a local Ray (2 CPUs, 2 samplers):
samples from both arrive, a run writes a single-process run's folder, a killed sampler is
replaced, and a sampler that keeps dying or Ctrl-C end the run with its folder kept and every
actor gone.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import pickle
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

import torch  # noqa: E402
from stable_baselines3.common.callbacks import CallbackList  # noqa: E402
from stable_baselines3.common.logger import Logger  # noqa: E402
from stable_baselines3.common.vec_env import VecNormalize  # noqa: E402

from gym_motion.adapters.sb3.vec_env import SB3VecEnv  # noqa: E402
from gym_motion.curriculum import CurriculumTermCfg, termination_from_episode_s  # noqa: E402
from gym_motion.envs.stats import TrackingStats  # noqa: E402
from gym_motion.envs.tracking import TrackingVecEnv  # noqa: E402
from gym_motion.training import RunConfig, RunFolder, train, train_env_cfg  # noqa: E402
from gym_motion.training import samplers as samplers_module  # noqa: E402
from gym_motion.training.samplers import Sampler, SamplerBatch, SamplerPool  # noqa: E402
from gym_motion.training.sb3 import make_model  # noqa: E402
from gym_motion.training.sb3.sampled import (  # noqa: E402
    BUFFER_KEYS,
    SB3Collector,
    SB3SampledLearner,
)
from gym_motion.training.skeleton import train_motions  # noqa: E402

TINY = {"n_steps": 8, "net_arch": [16]}
MOTIONS = train_motions([])


class _Spaces:
    """What a sampled learner reads of its pool before learning."""

    def __init__(self, observation_space, action_space):
        self.observation_space, self.action_space = observation_space, action_space

    def take_initial(self) -> list:
        return []


def _in_process(config: RunConfig, seed: int, training: bool = True):
    """SB3's in-process PPO on `config.num_envs` envs seeded `seed`, ready to collect."""
    env = TrackingVecEnv(config.num_envs, motion=MOTIONS, cfg=config.env, obs_mode="dict",
                         autoreset_mode="same_step", seed=seed)  # fmt: skip
    venv = VecNormalize(SB3VecEnv(env), training=training, norm_obs=True, norm_reward=False,
                        clip_obs=10.0)  # fmt: skip
    model, _ = make_model(replace(config, samplers=0, seed=seed), venv)
    model.set_logger(Logger(None, []))
    model.ep_info_buffer, model.ep_success_buffer = deque(maxlen=100), deque(maxlen=100)
    return model, venv


def _no_callback(model) -> CallbackList:
    callback = CallbackList([])
    callback.init_callback(model)
    return callback


def _params(model) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy().copy() for k, v in model.policy.state_dict().items()}


def test_a_sampler_collects_what_sb3_collects_in_process():
    # a 1 mm horizontal term, switched off by the curriculum on both sides: were the sampler
    # not to apply `inactive_terminations`, its episodes would end at their first step
    env = train_env_cfg(anchor_horizontal_termination=1e-3)
    config = RunConfig(num_envs=2, samplers=1, seed=5, ppo=TINY, env=env)
    sampler = Sampler(0, config, MOTIONS, SB3Collector(config), seed=5)
    sampler.setup()
    learner = SB3SampledLearner(config, _Spaces(sampler.collector.observation_space,
                                                sampler.collector.action_space), None)  # fmt: skip
    rng = np.random.default_rng(0)
    for rms in learner.venv.obs_rms.values():  # statistics that change the normalised obs
        rms.mean = rng.normal(size=rms.mean.shape)
        rms.var = rng.uniform(0.5, 2.0, size=rms.var.shape)
    payload = learner.payload()
    torch.manual_seed(7)
    off = ("anchor_horizontal",)
    batch = sampler.collect(copy.deepcopy(payload), reset_noise_scale=1.0,
                            inactive_terminations=off)  # fmt: skip

    model, venv = _in_process(config, seed=5, training=False)
    venv.unwrapped.venv.reset_noise_scale = 1.0
    venv.unwrapped.venv.inactive_terminations = off
    venv.obs_rms = copy.deepcopy(payload["obs_rms"])
    model.policy.load_state_dict({k: torch.tensor(v) for k, v in payload["policy"].items()})
    model._last_obs, model._last_episode_starts = venv.reset(), np.ones(2, bool)
    torch.manual_seed(7)
    model.collect_rollouts(venv, _no_callback(model), model.rollout_buffer, 8)

    buf = model.rollout_buffer
    for key in BUFFER_KEYS:
        ours, theirs = batch.data[key], getattr(buf, key)
        if isinstance(theirs, dict):
            for group in theirs:
                np.testing.assert_allclose(ours[group], theirs[group], rtol=0, atol=1e-6)
        else:
            np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6, err_msg=key)
    assert batch.env_steps == 16 and batch.stats.steps == 8
    # the reset's observations go to the learner before the first rollout, the steps' after it
    assert sampler.collector.initial["obs_moments"]["policy"][2] == 2
    assert batch.data["obs_moments"]["policy"][2] == 16


def test_the_same_samples_give_the_in_process_update():
    config = RunConfig(num_envs=4, samplers=2, seed=3, ppo=TINY)
    model, venv = _in_process(config, seed=3)
    model._last_obs, model._last_episode_starts = venv.reset(), np.ones(4, bool)
    model.collect_rollouts(venv, _no_callback(model), model.rollout_buffer, 8)
    buf = model.rollout_buffer

    def part(arr, k):
        return arr[:, 2 * k : 2 * k + 2].copy()

    batches = []
    for k in (0, 1):
        data = {key: ({g: part(a, k) for g, a in getattr(buf, key).items()}
                      if key == "observations" else part(getattr(buf, key), k))
                for key in BUFFER_KEYS}  # fmt: skip
        data["obs_moments"] = {g: (0.0, 1.0, 0.0) for g in buf.observations}
        data["ep_infos"] = []
        batches.append(SamplerBatch(k, data, TrackingStats(), {}, 2, 16, 0.0, "", 0))
    learner = SB3SampledLearner(config, _Spaces(venv.observation_space, venv.action_space), None)
    learner.model.policy.load_state_dict(model.policy.state_dict())
    learner.model.set_logger(Logger(None, []))
    learner.model.ep_info_buffer = deque(maxlen=100)
    learner.absorb(batches)
    assert learner.model.num_timesteps == 32

    before = _params(model)
    updates = []
    for m in (model, learner.model):
        np.random.seed(11)  # noqa: NPY002 - SB3 shuffles minibatches with it
        torch.manual_seed(11)
        m.train()
        updates.append(_params(m))
    moved = max(float(np.abs(updates[0][k] - before[k]).max()) for k in before)
    assert moved > 1e-4  # the update did something
    for key in before:
        np.testing.assert_allclose(updates[1][key], updates[0][key], rtol=0, atol=1e-6,
                                   err_msg=key)  # fmt: skip


def test_the_package_and_its_cli_do_not_import_ray():
    code = ("import sys, gym_motion, gym_motion.training.libraries, gym_motion.cli; "
            "sys.exit('ray' in sys.modules)")  # fmt: skip
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0


def test_samplers_without_ray_say_which_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'gym_motion\[ray\]'"):
        SB3SampledLearner.check(RunConfig(num_envs=4, samplers=2))
    with pytest.raises(ValueError, match="--samplers trains with library sb3, not 'rsl_rl'"):
        train(RunConfig(library="rsl_rl", num_envs=4, samplers=2))
    with pytest.raises(ValueError, match="--samplers trains PPO"):
        SB3SampledLearner.check(RunConfig(num_envs=4, samplers=2, algo="sac", obs_mode="policy"))


# -- on a local Ray -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, object_store_memory=80 * 2**20, include_dashboard=False,
             log_to_driver=False)  # fmt: skip
    yield ray
    ray.shutdown()


def _gone(pids: list[int], within_s: float = 20.0) -> bool:
    """Whether every process of `pids` has ended within `within_s` seconds."""
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        alive = []
        for pid in pids:
            try:
                os.kill(pid, 0)
                alive.append(pid)
            except ProcessLookupError:
                pass
        if not alive:
            return True
        time.sleep(0.2)
    return False


def _run_config(tmp_path, name: str, **kw) -> RunConfig:
    settings = {"num_envs": 4, "total_steps": 96, "seed": 1, "ppo": TINY,
                "eval_every_steps": 32, "eval_max_seconds": 0.3, "video_seconds": 0.0,
                "checkpoint_minutes": 0.0}  # fmt: skip
    return RunConfig(out=str(tmp_path / name), **{**settings, **kw})


def test_a_run_with_samplers_writes_a_single_process_runs_folder(local_ray, tmp_path,
                                                                  monkeypatch):  # fmt: skip
    original, rollouts = SamplerPool.collect, []

    def collect(pool, payload):
        rollouts.append((original(pool, payload), pool.cpu_ids))
        return rollouts[-1][0]

    monkeypatch.setattr(SamplerPool, "collect", collect)
    single = train(_run_config(tmp_path, "single"))
    sampled = train(_run_config(tmp_path, "sampled", samplers=2))

    # samples from both samplers arrived, each from its own process, envs and CPU
    assert len(rollouts) == 3
    for batches, cpu_ids in rollouts:
        assert [b.index for b in batches] == [0, 1] and [b.env_steps for b in batches] == [16, 16]
        assert len({b.pid for b in batches} - {os.getpid()}) == 2
        obs = [b.data["observations"]["critic"] for b in batches]
        assert all(o.shape == (8, 2, 286) for o in obs) and not np.allclose(obs[0], obs[1])
        assert all(b.nbytes > sum(o.nbytes for o in b.data["observations"].values())
                   for b in batches)  # fmt: skip
        if len(os.sched_getaffinity(0)) >= 2:  # one CPU each, not the same one
            assert not set(cpu_ids[0]) & set(cpu_ids[1])
    assert _gone(sorted({b.pid for batches, _ in rollouts for b in batches}))

    # the run folder of a single-process run, and the samplers' entries
    files = {}
    for name in ("single", "sampled"):
        files[name] = sorted("events" if p.name.startswith("events.out") else p.name
                             for p in (tmp_path / name).iterdir())  # fmt: skip
    assert files["sampled"] == files["single"]
    extra = {"samplers", "envs_per_sampler", "sampler_env_steps", "sampler_restarts",
             "cpus_per_sampler", "ray_address", "iteration"}  # fmt: skip
    assert set(sampled) == set(single) | extra
    assert sampled["samplers"] == 2 and sampled["envs_per_sampler"] == 2
    assert sampled["sampler_env_steps"] == [48, 48] and sampled["env_steps"] == 96
    assert sampled["sampler_restarts"] == [0, 0] and sampled["stopped_by"] == "total_steps"
    assert sampled["iteration"]["bytes_in"] > 0 and sampled["iteration"]["learner_s"] > 0
    config = json.loads((tmp_path / "sampled" / "config.json").read_text())
    assert config["train"]["samplers"] == 2 and config["ppo"]["rollout_size"] == 32

    def header(name):
        with open(tmp_path / name / "progress.csv") as f:
            return set(next(csv.reader(f)))

    assert header("single") <= header("sampled")
    assert {"time/learner_s", "time/overhead_s", "ray/bytes_in"} <= header("sampled")
    evals = [e["timesteps"] for e in json.loads(
        (tmp_path / "sampled" / "progress.json").read_text())["evals"]]  # fmt: skip
    assert evals[:2] == [32.0, 64.0]  # the periodic evaluations, as in-process
    counts = []  # observations in the statistics: the resets' and every step's, in both
    for name in ("single", "sampled"):
        with open(tmp_path / name / "vecnormalize.pkl", "rb") as f:
            counts.append({k: r.count for k, r in pickle.load(f).obs_rms.items()})
    assert counts[0] == counts[1] == pytest.approx({"policy": 4 + 96, "critic": 4 + 96}, abs=1e-3)
    act = RunFolder(tmp_path / "sampled").policy()
    obs = {"policy": np.zeros((1, 160), np.float32), "critic": np.zeros((1, 286), np.float32)}
    assert act(obs).shape == (1, 29)


def test_a_killed_sampler_is_replaced_then_one_that_keeps_dying_ends_the_run_cleanly(
    local_ray, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(samplers_module, "MAX_RESTARTS", 1)
    original, calls, seen = SamplerPool.collect, [], set()

    def collect(pool, payload):
        calls.append(1)
        seen.update(pool.pids())
        if len(calls) in (2, 4):  # the process of sampler 1 dies mid-run, twice
            os.kill(pool.pids()[1], signal.SIGKILL)
        return original(pool, payload)

    monkeypatch.setattr(SamplerPool, "collect", collect)
    summary = train(_run_config(tmp_path, "dead", samplers=2, total_steps=320))
    # rollout 2 collected again by a replacement; rollout 4's sampler died past the limit
    assert summary["sampler_restarts"] == [0, 1] and summary["env_steps"] == 96
    assert summary["stopped_by"] == "error" and "after" not in summary
    assert "sampler 1 died" in summary["error"] and "--resume" in summary["error"]
    assert "sampler 1 died" in capsys.readouterr().err
    folder = tmp_path / "dead"
    for name in ("model.zip", "vecnormalize.pkl", "progress.json", "summary.json"):
        assert (folder / name).is_file(), name
    assert json.loads((folder / "progress.json").read_text())["env_steps"] == 96
    assert len(seen) == 3 and _gone(sorted(seen))  # the replacement ended too


def test_ctrl_c_stops_every_sampler(local_ray, tmp_path, monkeypatch):
    original, seen = SamplerPool.collect, set()

    def collect(pool, payload):
        seen.update(pool.pids())
        if pool.env_steps[0]:  # after the first rollout
            raise KeyboardInterrupt
        return original(pool, payload)

    monkeypatch.setattr(SamplerPool, "collect", collect)
    summary = train(_run_config(tmp_path, "stopped", samplers=2))
    assert summary["interrupted"] and summary["stopped_by"] == "interrupt"
    assert summary["sampler_env_steps"] == [16, 16]
    assert (tmp_path / "stopped" / "model.zip").is_file()
    assert len(seen) == 2 and _gone(sorted(seen))


def test_samplers_switch_the_horizontal_termination_on_with_the_learner(local_ray, tmp_path,
                                                                         monkeypatch):  # fmt: skip
    """The learner's curriculum reaches the samplers' envs with every rollout: a 1 mm term
    switched on by episode length ends no sampled episode before its switch and every one
    after (the in-process twin: tests/adapters/sb3/test_train.py)."""
    from gym_motion.training.progress import Progress

    monkeypatch.setattr(Progress, "episode_window_steps", 48)  # rollouts of 32 steps
    env = train_env_cfg(anchor_horizontal_termination=1e-3)
    switch = CurriculumTermCfg(termination_from_episode_s,
                               {"term": "anchor_horizontal", "seconds": 0.02})  # fmt: skip
    config = _run_config(tmp_path, "term", samplers=2, env=env, total_steps=480,
                         eval_every_steps=0, curricula={"anchor_horizontal": switch})  # fmt: skip
    summary = train(config)
    on = summary["terminations_switched_on"]["anchor_horizontal"]
    with open(tmp_path / "term" / "progress.csv") as f:
        fired = {int(r["time/total_timesteps"]): float(r["termination/anchor_horizontal"])
                 for r in csv.DictReader(f) if r.get("termination/anchor_horizontal")}  # fmt: skip
    assert on == min(f for f in fired if f >= 48) and fired[on] == 0.0, fired
    after = [v for t, v in fired.items() if t > on]
    assert after and all(v == 1.0 for v in after), fired
