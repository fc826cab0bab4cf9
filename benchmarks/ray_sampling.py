"""Ray samplers against the in-process path, side by side in one process, iterations interleaved:
``python benchmarks/ray_sampling.py [--iterations 6] [--samplers 2] [--envs-per-sampler 128]
[--bytes-at 1 4096] [--json ray_sampling.json]``.

Per PPO iteration (default PPO settings: 24 steps per env, 8 epochs, 4 minibatches):

- in-process: ``collect_rollouts`` of SB3's PPO on one `TrackingVecEnv` of K x N envs, then
  ``PPO.train`` (what ``gym-motion train --num-envs K*N`` runs);
- samplers: `SB3SampledLearner` over a `SamplerPool` of K actors with N envs each on a local
  Ray (what ``gym-motion train --samplers K --envs-per-sampler N`` runs): the learner's wait
  for the rollouts, the slowest sampler's own collection time, the difference (transfer and
  scheduling overhead), ``PPO.train``, bytes out (weights) and in (rollouts).

The first iteration of each path is a warm-up and left out. Also measured: the round trip of
an empty actor call (what stepping remote envs per call would pay per step), and the bytes a
sampler returns at each ``--bytes-at`` env count (one sampler object in this process, no Ray;
its pickled size too).
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import time
from collections import deque

import numpy as np


def _in_process(config):
    from stable_baselines3.common.callbacks import CallbackList
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.vec_env import VecNormalize

    from gym_motion.adapters.sb3.vec_env import SB3VecEnv
    from gym_motion.envs.tracking import TrackingVecEnv
    from gym_motion.training.sb3 import make_model
    from gym_motion.training.skeleton import train_motions

    env = TrackingVecEnv(config.num_envs, motion=train_motions([]), cfg=config.env,
                         obs_mode="dict", autoreset_mode="same_step", seed=0)  # fmt: skip
    venv = VecNormalize(SB3VecEnv(env), norm_obs=True, norm_reward=False, clip_obs=10.0)
    model, _ = make_model(config, venv)
    model.set_logger(Logger(None, []))
    model.ep_info_buffer, model.ep_success_buffer = deque(maxlen=100), deque(maxlen=100)
    model._last_obs, model._last_episode_starts = venv.reset(), np.ones(config.num_envs, bool)
    callback = CallbackList([])
    callback.init_callback(model)

    def iteration() -> dict[str, float]:
        t0 = time.perf_counter()
        model.collect_rollouts(venv, callback, model.rollout_buffer, model.n_steps)
        t1 = time.perf_counter()
        model.train()
        t2 = time.perf_counter()
        steps = model.n_steps * config.num_envs
        return {"collect_s": t1 - t0, "learner_s": t2 - t1, "env_steps_per_s": steps / (t1 - t0)}

    return iteration, venv


def _sampled(config):
    from stable_baselines3.common.logger import Logger

    from gym_motion.training.samplers import SamplerPool, array_bytes
    from gym_motion.training.sb3.sampled import SB3Collector, SB3SampledLearner
    from gym_motion.training.skeleton import train_motions

    pool = SamplerPool(config, train_motions([]), SB3Collector(config), seed=0)
    learner = SB3SampledLearner(config, pool, None)
    learner.model.set_logger(Logger(None, []))
    learner.model.ep_info_buffer = deque(maxlen=100)

    def iteration() -> dict[str, float]:
        t0 = time.perf_counter()
        payload = learner.payload()
        batches = pool.collect(payload)
        t1 = time.perf_counter()
        learner.absorb(batches)
        t2 = time.perf_counter()
        learner.model.train()
        t3 = time.perf_counter()
        slowest = max(b.collect_s for b in batches)
        steps = sum(b.env_steps for b in batches)
        return {
            "collect_s": t1 - t0, "sampler_collect_s": slowest, "overhead_s": t1 - t0 - slowest,
            "absorb_s": t2 - t1, "learner_s": t3 - t2, "env_steps_per_s": steps / (t1 - t0),
            "sampler_env_steps_per_s": sum(b.env_steps / b.collect_s for b in batches),
            "bytes_out": float(array_bytes(payload["policy"])),
            "bytes_in": float(sum(b.nbytes for b in batches)),
        }  # fmt: skip

    return iteration, pool


def _round_trip_s(pool, calls: int = 200) -> float:
    """Median seconds of an empty actor call (``pid``) and its answer."""
    import ray

    actor = pool._actors[0]
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        ray.get(actor.pid.remote())
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _bytes_at(config, num_envs: int) -> dict[str, float]:
    """What one sampler of `num_envs` envs returns for a rollout: array bytes, pickled bytes,
    and per env."""
    from dataclasses import replace

    from gym_motion.training.samplers import Sampler
    from gym_motion.training.sb3.sampled import SB3Collector, SB3SampledLearner
    from gym_motion.training.skeleton import train_motions

    cfg = replace(config, num_envs=num_envs, samplers=1)
    sampler = Sampler(0, cfg, train_motions([]), SB3Collector(cfg), seed=0)
    sampler.setup()
    col = sampler.collector

    class _Spaces:
        observation_space, action_space = col.observation_space, col.action_space

        def take_initial(self) -> list:
            return []

    payload = SB3SampledLearner(cfg, _Spaces(), None).payload()
    t0 = time.perf_counter()
    batch = sampler.collect(payload, 1.0)
    seconds = time.perf_counter() - t0
    pickled = len(pickle.dumps(batch, protocol=5))
    sampler.close()
    return {"num_envs": num_envs, "array_bytes": batch.nbytes, "pickled_bytes": pickled,
            "payload_pickled_bytes": len(pickle.dumps(payload, protocol=5)),
            "collect_s": seconds}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, default=6)
    p.add_argument("--samplers", type=int, default=2)
    p.add_argument("--envs-per-sampler", type=int, default=128)
    p.add_argument("--bytes-at", type=int, nargs="*", default=[1, 4096])
    p.add_argument("--json", default="ray_sampling.json")
    args = p.parse_args()

    import ray

    from gym_motion.backends.threads import available_cpus
    from gym_motion.training import RunConfig

    k, n = args.samplers, args.envs_per_sampler
    sampled_cfg = RunConfig(num_envs=k * n, samplers=k)
    local_cfg = RunConfig(num_envs=k * n)
    cpus = len(available_cpus())
    ray.init(num_cpus=cpus, object_store_memory=256 * 2**20, include_dashboard=False,
             log_to_driver=False)  # fmt: skip
    result: dict = {"cpus": cpus, "samplers": k, "envs_per_sampler": n}
    try:
        sampled, pool = _sampled(sampled_cfg)
        local, venv = _in_process(local_cfg)
        rows: dict[str, list[dict[str, float]]] = {"in_process": [], "samplers": []}
        for i in range(args.iterations + 1):
            for name, it in (("in_process", local), ("samplers", sampled)):
                row = it()
                print(f"{i} {name}: " + ", ".join(f"{k_}={v:.4g}" for k_, v in row.items()),
                      flush=True)  # fmt: skip
                if i:  # the first is a warm-up
                    rows[name].append(row)
        result["rows"] = rows
        result["median"] = {
            name: {key: statistics.median(r[key] for r in rs) for key in rs[0]}
            for name, rs in rows.items()
        }
        result["round_trip_s"] = _round_trip_s(pool)
        pool.close()
        venv.close()
    finally:
        ray.shutdown()
    result["bytes_at"] = [_bytes_at(local_cfg, m) for m in args.bytes_at]
    print(json.dumps({k_: v for k_, v in result.items() if k_ != "rows"}, indent=1))
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
