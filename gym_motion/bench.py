"""Throughput of `TrackingVecEnv` against the physics-only limit, measured in one run.

``gym-motion bench --num-envs 1024 4096 --steps 200`` steps the env with random actions and
prints env-steps/s, milliseconds per step phase, the physics-only limit (bare batched stepping of
the same model, N, threads and substeps, with nothing else) and the peak resident memory.
``--json out.json`` also writes the figures.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from typing import Any

import mujoco
import mujoco.rollout
import numpy as np


def peak_rss_mb() -> float:
    """Peak resident memory of this process, MB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024.0 / (1024.0 if sys.platform == "darwin" else 1.0)


def physics_only_steps_per_s(
    model: mujoco.MjModel,
    num_envs: int,
    decimation: int,
    num_threads: int,
    seconds: float,
    reset_every: int = 50,
) -> float:
    """Env-steps/s of bare batched MuJoCo stepping: N x `decimation` substeps per env step.

    `mujoco.rollout` with a persistent pool of `num_threads` threads, state carried across
    calls, holding the keyframe "default" targets. The G1 falls within about a second when it
    only holds its default pose, and a lying robot is cheaper to simulate than a falling one,
    so every env is re-initialised to the keyframe every `reset_every` steps, as resets do.

    Returns:
        num_envs * steps / elapsed seconds.
    """
    data = mujoco.MjData(model)
    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "default")
    if key >= 0:
        mujoco.mj_resetDataKeyframe(model, data, key)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state0 = np.empty(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, data, state0, spec)
    state = np.tile(state0, (num_envs, 1))
    out = np.empty((num_envs, decimation, state0.size))
    sens = np.empty((num_envs, decimation, model.nsensordata))
    ctrl = np.ascontiguousarray(np.broadcast_to(data.ctrl, (num_envs, decimation, model.nu)))
    models = [model] * num_envs
    datas = [mujoco.MjData(model) for _ in range(max(1, num_threads))]
    ctrl_spec = int(mujoco.mjtState.mjSTATE_CTRL)
    with mujoco.rollout.Rollout(nthread=num_threads if num_threads > 1 else 0) as pool:

        def step() -> None:
            pool.rollout(
                models, datas, state, ctrl, control_spec=ctrl_spec, skip_checks=True,
                nstep=decimation, state=out, sensordata=sens,
            )  # fmt: skip
            state[:] = out[:, -1]

        step()
        state[:] = state0
        steps, t0 = 0, time.perf_counter()
        while True:
            step()
            steps += 1
            if steps % reset_every == 0:
                state[:] = state0
            elapsed = time.perf_counter() - t0
            if elapsed >= seconds:
                return num_envs * steps / elapsed


def mjwarp_physics_only_steps_per_s(backend, steps: int) -> float:
    """Env-steps/s of bare ``mujoco_warp.step`` x decimation on an `MjWarpBackend`'s model and
    data (a CUDA graph on GPU), nothing else; the backend's state is advanced."""
    import mujoco_warp as mjw
    import warp as wp

    m, d, dev = backend._m, backend._d, backend.device

    def physics() -> None:
        for _ in range(backend.decimation):
            mjw.step(m, d)

    with wp.ScopedDevice(dev):
        physics()
        graph = None
        if wp.get_device(dev).is_cuda:
            with wp.ScopedCapture() as capture:
                physics()
            graph = capture.graph
        wp.synchronize_device(dev)
        t0 = time.perf_counter()
        for _ in range(steps):
            if graph is not None:
                wp.capture_launch(graph)
            else:
                physics()
        wp.synchronize_device(dev)
        return backend.num_envs * steps / (time.perf_counter() - t0)


def bench_env(
    num_envs: int,
    steps: int,
    backend: str = "mujoco",
    backend_kwargs: dict[str, Any] | None = None,
    seed: int = 0,
    action_std: float = 0.5,
) -> dict[str, Any]:
    """Step a `TrackingVecEnv` `steps` times with Gaussian random actions; time its phases.

    Returns a dict with ``env_steps_per_s``, ``physics_limit_env_steps_per_s`` (measured
    right after on the same model and N: `physics_only_steps_per_s` for "mujoco" with the
    backend's threads, `mjwarp_physics_only_steps_per_s` for "mjwarp"), ``phases_ms`` (ms per
    step), ``non_physics_fraction``, ``peak_rss_mb``, ``num_envs``, ``threads``; for "mjwarp"
    also ``backend_phases_ms`` (control upload, physics, gather + host copy), measured in a
    second pass with device synchronisations between them.
    """
    from gym_motion.envs import TrackingVecEnv

    env = TrackingVecEnv(num_envs, backend=backend, seed=seed, backend_kwargs=backend_kwargs)
    rng = np.random.default_rng(seed)
    actions = rng.normal(0.0, action_std, size=(8, num_envs, 29)).astype(np.float32)
    env.reset(seed=seed)
    for k in range(3):  # warm-up: compile, caches
        env.step(actions[k])
    for key in env.phase_s:
        env.phase_s[key] = 0.0
    t0 = time.perf_counter()
    for k in range(steps):
        env.step(actions[k % len(actions)])
    elapsed = time.perf_counter() - t0
    phases_ms = {k: 1e3 * v / steps for k, v in env.phase_s.items()}
    threads = getattr(env.backend, "num_threads", None)
    result: dict[str, Any] = {
        "num_envs": num_envs,
        "backend": backend,
        "threads": threads,
        "steps": steps,
        "env_steps_per_s": num_envs * steps / elapsed,
        "phases_ms": phases_ms,
        "step_ms": 1e3 * elapsed / steps,
        "non_physics_fraction": 1.0 - phases_ms["physics"] / (1e3 * elapsed / steps),
    }
    if backend == "mujoco":
        model, decimation = env.backend.model, env.cfg.sim.decimation
        env.close()
        limit = physics_only_steps_per_s(model, num_envs, decimation, threads, elapsed)
    else:
        be = env.backend
        be.profile = True
        for k in range(steps):
            env.step(actions[k % len(actions)])
        result["backend_phases_ms"] = {k: 1e3 * v / steps for k, v in be.phase_times.items()}
        be.profile = False
        limit = mjwarp_physics_only_steps_per_s(be, steps)
        env.close()
    result["physics_limit_env_steps_per_s"] = limit
    result["ratio_to_limit"] = result["env_steps_per_s"] / limit
    result["peak_rss_mb"] = peak_rss_mb()
    return result


def format_result(r: dict[str, Any]) -> str:
    """One human-readable block for a `bench_env` result."""
    lim = r["physics_limit_env_steps_per_s"]
    lines = [
        f"N={r['num_envs']} backend={r['backend']} threads={r['threads']}: "
        f"{r['env_steps_per_s']:.0f} env-steps/s"
        + f" | physics-only limit {lim:.0f} (ratio {r['ratio_to_limit']:.3f})"
        + f" | non-physics {100 * r['non_physics_fraction']:.1f} % of step"
        + f" | peak RSS {r['peak_rss_mb']:.0f} MB ({r['peak_rss_mb'] / r['num_envs']:.3f} MB/env)",
        "  phases ms/step: "
        + ", ".join(f"{k} {v:.3f}" for k, v in r["phases_ms"].items())
        + f" | total {r['step_ms']:.3f}",
    ]
    if "backend_phases_ms" in r:
        lines.append(
            "  backend ms/step: "
            + ", ".join(f"{k} {v:.3f}" for k, v in r["backend_phases_ms"].items())
        )
    return "\n".join(lines)


def run(
    num_envs: list[int],
    steps: int,
    backend: str,
    json_path: str | None,
    backend_kwargs: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Benchmark each N, print the results, optionally write them as JSON (atomically)."""
    results = []
    for n in num_envs:
        r = bench_env(n, steps, backend=backend, backend_kwargs=backend_kwargs)
        print(format_result(r), flush=True)
        results.append(r)
    if json_path:
        tmp = f"{json_path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(results if len(results) > 1 else results[0], f, indent=2)
        os.replace(tmp, json_path)
    return results
