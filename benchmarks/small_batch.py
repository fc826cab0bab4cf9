"""Where a one-env step's time goes outside physics, in one run.

    python benchmarks/small_batch.py [--num-envs 1] [--steps 3000]

Prints, for a `TrackingVecEnv` of N envs (Gaussian random actions, std 0.5):

- a row kernel's call cost, parallel build (one-thread pool) against serial build;
- a built-in term called directly (`term(state, out, **params)`) against its bound form (through
  the `RowKernel`, and bound to the build the env runs, as the managers call it), and each
  manager's compute called back to back (the terminations also right after a physics step);
- a plain loop of steps (caches stay warm): ms per step, its physics phase, the ratio, and the
  time per phase. `gym-motion bench` times each step right after its bare physics replays
  (cold caches), so its ratio is higher.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from gym_motion.envs import TrackingVecEnv
from gym_motion.kernels.dispatch import bind_builds, serial_rows
from gym_motion.kernels.terminations import gravity_z_error_exceeds
from gym_motion.managers import reward


def _us(func, calls: int = 20_000) -> float:
    """Best of 3 runs of `calls` calls, microseconds per call."""
    func()
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(calls):
            func()
        best = min(best, (time.perf_counter() - t0) / calls)
    return 1e6 * best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num-envs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3000)
    args = parser.parse_args()
    n = args.num_envs
    env = TrackingVecEnv(n, seed=0)
    env.reset(seed=0)
    actions = np.random.default_rng(0).normal(0.0, 0.5, (args.steps, n, 29)).astype(np.float32)
    for a in actions[:300]:
        env.step(a)

    q = np.zeros((n, 4), np.float32)
    q[:, 0] = 1.0
    fired = np.zeros(n, bool)
    kernel = gravity_z_error_exceeds
    numba.set_num_threads(1)  # the parallel build on a one-thread pool
    par = _us(lambda: kernel.parallel(q, q, 0.8, fired))
    ser = _us(lambda: kernel.serial(q, q, 0.8, fired))
    print(f"row kernel call, N={n}: parallel build {par:.2f} us, serial build {ser:.2f} us")

    s, out = env.state, np.zeros(n, np.float32)
    bound = reward.anchor_pos.bind(s, out, std=0.3)
    build = bind_builds(bound)[n < 2048]  # the managers call this: no RowKernel frame
    with serial_rows(n < 2048):  # as the env runs them
        direct = _us(lambda: reward.anchor_pos(s, out, std=0.3))
        print(
            f"reward term anchor_pos: direct call {direct:.2f} us, bound {_us(bound):.2f} us, "
            f"bound to its build {_us(build):.2f} us"
        )
        for name, compute in (
            ("rewards", env.rewards.compute),
            ("terminations", env.terminations.compute),
            ("observations", lambda: env.observations.compute(env._rng, ("policy",))),
        ):
            print(f"{name}.compute back to back: {_us(compute, 5000):.2f} us")
        # the same call right after a physics step (MuJoCo evicted the caches): median of 300
        after = []
        for _ in range(300):
            env.backend.step(env.actions.targets)
            t0 = time.perf_counter()
            env.terminations.compute()
            after.append(time.perf_counter() - t0)
        print(f"terminations.compute right after a physics step: {1e6 * np.median(after):.2f} us")

    for key in env.phase_s:
        env.phase_s[key] = 0.0
    t0 = time.perf_counter()
    for a in actions:
        env.step(a)
    step_ms = 1e3 * (time.perf_counter() - t0) / args.steps
    phases = {k: 1e3 * v / args.steps for k, v in env.phase_s.items()}
    print(
        f"plain loop of {args.steps} steps, N={n}: {step_ms:.3f} ms per step, physics "
        f"{phases['physics']:.3f} ms, step / physics phase {step_ms / phases['physics']:.2f}"
    )
    print("  phases ms/step: " + ", ".join(f"{k} {v:.4f}" for k, v in phases.items()))
    env.close()


if __name__ == "__main__":
    main()
