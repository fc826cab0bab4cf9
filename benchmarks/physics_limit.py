"""The physics-only limit: bare batched MuJoCo stepping, and the MuJoCo backend measured against it.

`physics_only_steps_per_s` is what every env benchmark compares itself with in the same run: the
same model, N, threads and substeps stepped by ``mujoco.rollout`` (persistent thread pool, state
carried across calls) holding the keyframe's default-pose targets, and nothing else.

The G1 falls over within about a second when it only holds its default pose, and a lying robot
is cheaper to simulate than a falling one, so both measurements re-initialise every env to the
``"default"`` keyframe every `reset_every` control steps (1 s by default), as episode resets do.

Usage (repo root):
``python benchmarks/physics_limit.py [--num-envs 1024 4096] [--seconds 20] [--rounds 4]``
prints, per N, the backend's env-steps/s (step + copy_body_state_w), the physics-only limit,
their ratio, and the peak resident memory.
"""

from __future__ import annotations

import argparse
import os
import time

import mujoco
import numpy as np

from gym_motion.bench import peak_rss_mb, physics_only_steps_per_s


def backend_steps_per_s(backend, seconds: float, reset_every: int = 50) -> float:
    """Env-steps/s of ``backend.step`` + ``copy_body_state_w`` holding keyframe targets, with
    every env re-initialised to the keyframe every `reset_every` steps (as the limit above)."""
    from gym_motion.backends import BodyState

    model = backend.model
    n = backend.num_envs
    data = mujoco.MjData(model)
    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "default")
    if key >= 0:
        mujoco.mj_resetDataKeyframe(model, data, key)
    ids = np.arange(n)
    qpos, qvel = np.tile(data.qpos, (n, 1)), np.tile(data.qvel, (n, 1))
    target = np.tile(data.ctrl, (n, 1))
    out = BodyState.zeros(n, len(backend.body_ids), model.nu)
    backend.step(target)
    backend.copy_body_state_w(out)
    backend.write_state(ids, qpos, qvel)
    steps, t0 = 0, time.perf_counter()
    while True:
        backend.step(target)
        backend.copy_body_state_w(out)
        steps += 1
        if steps % reset_every == 0:
            backend.write_state(ids, qpos, qvel)
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return n * steps / elapsed


def main(argv: list[str] | None = None) -> None:
    from gym_motion.backends import make_backend
    from gym_motion.robots import g1
    from gym_motion.robots.spec import body_ids

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-envs", type=int, nargs="+", default=[1024, 4096])
    p.add_argument("--seconds", type=float, default=20.0, help="per side, all rounds")
    p.add_argument("--decimation", type=int, default=4)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--rounds", type=int, default=4, help="interleaved measurement windows")
    args = p.parse_args(argv)

    model = g1.load_model()
    threads = args.threads or len(os.sched_getaffinity(0))
    window = args.seconds / args.rounds
    for n in args.num_envs:
        backend = make_backend(
            "mujoco", model, n, body_ids(model, g1.G1.tracked_bodies), g1.G1.joint_ids(model),
            decimation=args.decimation, num_threads=threads,
        )  # fmt: skip
        # interleaved windows, so that both see the same machine load (medians reported)
        sps, limit = [], []
        for _ in range(args.rounds):
            sps.append(backend_steps_per_s(backend, window))
            limit.append(physics_only_steps_per_s(model, n, args.decimation, threads, window))
        backend.close()
        s, lim = float(np.median(sps)), float(np.median(limit))
        print(
            f"N={n:5d} threads={threads}: backend {s:8.0f} env-steps/s | physics-only limit "
            f"{lim:8.0f} env-steps/s | ratio {s / lim:.3f} (per round: "
            f"{', '.join(f'{a / b:.2f}' for a, b in zip(sps, limit, strict=True))}) | "
            f"peak RSS {peak_rss_mb():.0f} MB",
            flush=True,
        )


if __name__ == "__main__":
    main()
