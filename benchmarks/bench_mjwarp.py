"""Phase times of the MuJoCo Warp backend, and its physics-only limit, for given N.

For each N this builds `MjWarpBackend` on the G1 (keyframe targets, every world re-initialised
to the keyframe every `--reset-every` control steps, as episode resets do), then reports:

- startup: construction (``put_model``/``put_data``) and the first step (kernel compilation on a
  cold Warp cache, module loads on a warm one); on CUDA the second step captures the graph;
- per control step, with the backend's ``profile`` switch (a device synchronise between phases):
  ``upload`` (targets into the pinned host buffer, one host->device copy), ``physics``
  (decimation substeps + forward kinematics + fused gather, graph replay on CUDA),
  ``gather_copy`` (one device->host copy of the step's flags), ``reset`` (``write_state`` of
  all rows, amortised per step), ``copy_body_state_w`` (one device->host copy of the state
  buffer, then the host copy into the env's BodyState);
- env-steps/s of step + copy_body_state_w without the profiling synchronisations;
- the physics-only limit: bare ``mujoco_warp.step`` x decimation on the same model, data and N
  (a CUDA graph on GPU), nothing else, in the same run.

Usage (repo root): ``python benchmarks/bench_mjwarp.py --num-envs 4096 8192 --device cuda:0``;
``python benchmarks/bench_mjwarp.py --num-envs 4 --steps 10 --device cpu`` runs on Warp's CPU
device (slow; for checking the script).
"""

from __future__ import annotations

import argparse
import time

import mujoco
import numpy as np

from gym_motion.bench import mjwarp_physics_only_steps_per_s


def bench(
    num_envs: int,
    device: str | None,
    steps: int,
    reset_every: int = 50,
    nconmax: int = 35,
    njmax: int = 250,
) -> dict[str, float]:
    """Measure one N; returns seconds (startup) or seconds per control step (phases), and
    env-steps/s ("sps", "limit_sps")."""
    from gym_motion.backends.base import BodyState
    from gym_motion.backends.mjwarp import MjWarpBackend
    from gym_motion.robots import g1
    from gym_motion.robots.spec import body_ids

    model = g1.load_model()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key(g1.KEYFRAME).id)
    n = num_envs
    ids = np.arange(n)
    qpos, qvel = np.tile(data.qpos, (n, 1)), np.tile(data.qvel, (n, 1))
    target = np.tile(data.ctrl, (n, 1)).astype(np.float32)
    out = BodyState.zeros(n, len(g1.TRACKED_BODIES), g1.NUM_JOINTS)

    t0 = time.perf_counter()
    robot = g1.G1
    be = MjWarpBackend(
        model, n, body_ids(model, robot.tracked_bodies), robot.joint_ids(model),
        device=device, nconmax=nconmax, njmax=njmax,
    )  # fmt: skip
    r = {"construct": time.perf_counter() - t0}
    t0 = time.perf_counter()
    be.step(target)
    r["first_step"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    be.step(target)  # graph capture on CUDA
    r["second_step"] = time.perf_counter() - t0
    be.write_state(ids, qpos, qvel)
    be.copy_body_state_w(out)

    # phases (profiling synchronisations on)
    be.profile = True
    for k in be.phase_times:
        be.phase_times[k] = 0.0
    reset = copy = 0.0
    for s in range(1, steps + 1):
        be.step(target)
        t0 = time.perf_counter()
        be.copy_body_state_w(out)
        copy += time.perf_counter() - t0
        if s % reset_every == 0:
            t0 = time.perf_counter()
            be.write_state(ids, qpos, qvel)
            be.copy_body_state_w(out)
            reset += time.perf_counter() - t0
    be.profile = False
    for k, v in be.phase_times.items():
        r[k] = v / steps
    r["reset"], r["copy_body_state_w"] = reset / steps, copy / steps

    # throughput without profiling
    be.write_state(ids, qpos, qvel)
    t0 = time.perf_counter()
    for s in range(1, steps + 1):
        be.step(target)
        be.copy_body_state_w(out)
        if s % reset_every == 0:
            be.write_state(ids, qpos, qvel)
    r["sps"] = n * steps / (time.perf_counter() - t0)
    be.write_state(ids, qpos, qvel)
    be.copy_body_state_w(out)
    r["limit_sps"] = mjwarp_physics_only_steps_per_s(be, steps)
    be.close()
    return r


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-envs", type=int, nargs="+", default=[4096, 8192])
    p.add_argument(
        "--device", default=None, help='Warp device (default "cuda:0" if any, else "cpu")'
    )
    p.add_argument("--steps", type=int, default=200, help="control steps per measurement")
    p.add_argument("--reset-every", type=int, default=50)
    p.add_argument("--nconmax", type=int, default=35)
    p.add_argument("--njmax", type=int, default=250)
    args = p.parse_args(argv)

    import warp as wp

    wp.config.quiet = True
    from gym_motion.backends.mjwarp import default_device

    device = args.device or default_device()
    print(f"device {device}: {wp.get_device(device).name}", flush=True)
    ms = 1e3
    for n in args.num_envs:
        r = bench(n, device, args.steps, args.reset_every, args.nconmax, args.njmax)
        print(
            f"N={n:6d} | construct {r['construct']:.1f} s, first step {r['first_step']:.1f} s, "
            f"second {r['second_step']:.2f} s | per step: upload {r['upload'] * ms:.3f} ms, "
            f"physics {r['physics'] * ms:.3f} ms, flags copy {r['gather_copy'] * ms:.3f} ms, "
            f"reset {r['reset'] * ms:.3f} ms, copy_body_state_w "
            f"{r['copy_body_state_w'] * ms:.3f} ms | {r['sps']:.0f} env-steps/s, physics-only "
            f"limit {r['limit_sps']:.0f} env-steps/s, ratio {r['sps'] / r['limit_sps']:.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
