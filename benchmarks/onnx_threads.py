"""onnxruntime intra-op threads for an ONNX policy, in one run.

    python benchmarks/onnx_threads.py [--steps 1000] [--threads 0 1 2]

Prints, for the shared B_Fence1 policy (``../shared/policies``) bound to a one-env evaluation
of its clip (frame per step), the process CPU time and wall time per env step with each
intra-op thread count (0: onnxruntime's default pool, one thread per core); then, for the
shipped tracker (batch not fixed), CPU and wall time per run at 1 to 4096 rows on 1 and 2
threads. CPU time is the whole process's (``time.process_time``): a spinning pool shows there.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from gym_motion.deploy import DEFAULT_POLICY_PATH, OnnxPolicy
from gym_motion.envs import TrackingVecEnv, eval_cfg

FENCE = Path(__file__).resolve().parents[2] / "shared" / "policies" / "g1moves_B_Fence1"


def eval_steps(threads: int, steps: int) -> tuple[float, float]:
    """(CPU ms, wall ms) per env step of B_Fence1 with `threads` intra-op threads (0: ORT's
    default options)."""
    policy = OnnxPolicy(FENCE / "B_Fence1.onnx", intra_op_threads=max(threads, 1))
    if threads == 0:  # onnxruntime's defaults, as OnnxPolicy used them before item 5
        policy.session = ort.InferenceSession(str(policy.path), providers=["CPUExecutionProvider"])
    env = TrackingVecEnv(1, motion=FENCE / "B_Fence1.npz", cfg=eval_cfg(),
                         motion_playback="frame_per_step")  # fmt: skip
    try:
        act = policy.bind(env)
        obs, _ = env.reset(seed=0)
        for _ in range(50):
            obs, *_ = env.step(act(obs))
        obs, _ = env.reset(seed=0)
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(steps):
            obs, *_ = env.step(act(obs))
        return (time.process_time() - c0) / steps * 1e3, (time.perf_counter() - w0) / steps * 1e3
    finally:
        env.close()


def batch_runs(rows: int, threads: int) -> tuple[float, float]:
    """(CPU ms, wall ms) per run of the shipped tracker on `rows` rows."""
    policy = OnnxPolicy(DEFAULT_POLICY_PATH, intra_op_threads=threads)
    obs = np.random.default_rng(0).normal(size=(rows, 160)).astype(np.float32)
    reps = max(20, 4000 // rows)
    for _ in range(10):
        policy.run(obs)
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(reps):
        policy.run(obs)
    return (time.process_time() - c0) / reps * 1e3, (time.perf_counter() - w0) / reps * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--threads", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    for threads in args.threads:
        for trial in range(3):
            cpu, wall = eval_steps(threads, args.steps)
            print(f"B_Fence1 eval, intra-op threads {threads or 'default'} (trial {trial}): "
                  f"{cpu:.3f} ms CPU, {wall:.3f} ms wall per env step")  # fmt: skip
    for rows in (1, 64, 256, 1024, 4096):
        for threads in (1, 2):
            cpu, wall = batch_runs(rows, threads)
            print(f"tracker, {rows} rows, {threads} threads: {cpu:.3f} ms CPU, {wall:.3f} ms wall")


if __name__ == "__main__":
    main()
