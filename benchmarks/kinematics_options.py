"""Fresh body kinematics after a control step: the Numba kernel against MuJoCo's own stages.

After ``Batch.rollout(decimation)`` MuJoCo's derived fields (xpos, xquat, cvel) lag one substep
behind qpos/qvel. The MuJoCo backend computes body poses and velocities from the fresh state with
a Numba kernel on the calling thread (`MujocoBackend.copy_body_state_w`). The alternative runs
MuJoCo's position and velocity stages in the batch's own threads (``Batch.forward(stage=
mjSTAGE_VEL)``), in a default batch or in a persistent one (one MjData per env). This script
times, per N, the physics call of a control step and the kinematics right after it:

- ``numba``: the backend's ``step`` (``Batch.rollout(decimation)`` recording the self-contact
  sensor, and the post-step kernel), then ``copy_body_state_w`` (every body);
- ``forward``: ``Batch.rollout(decimation)`` as above on a plain batch, then
  ``Batch.forward(stage=mjSTAGE_VEL)``;
- ``persistent``: the same two calls on a ``persistent=True`` batch.

All three follow one trajectory (the keyframe's targets plus Gaussian noise, std 0.3 rad, one
fixed sequence; every env re-initialised to the keyframe every 50 steps). Windows of the three
take turns; each prints its fastest window's milliseconds per step of the physics call and of
the kinematics, and their ratio.

Usage (repo root): ``python benchmarks/kinematics_options.py [--num-envs 1 64 1024]``
"""

from __future__ import annotations

import argparse
import os
import time
from functools import partial

import mujoco
import mujoco.batch
import numpy as np

from gym_motion.backends import BodyState, make_backend
from gym_motion.robots import g1
from gym_motion.robots.spec import body_ids

RESET_EVERY = 50


def _time_window(physics, kinematics, reset, targets: np.ndarray) -> tuple[float, float]:
    """Seconds per step of ``physics(target)`` and of ``kinematics()`` right after it, over
    `targets` (S, N, nu); ``reset()`` every RESET_EVERY steps (untimed)."""
    t_phys = t_kin = 0.0
    for k, target in enumerate(targets):
        if k % RESET_EVERY == 0:
            reset()
        t0 = time.perf_counter()
        physics(target)
        t1 = time.perf_counter()
        kinematics()
        t_phys, t_kin = t_phys + t1 - t0, t_kin + time.perf_counter() - t1
    return t_phys / len(targets), t_kin / len(targets)


def _variants(backend, n: int, decimation: int, threads: int, qpos, qvel) -> dict:
    """The three ways to step and get fresh kinematics: name -> (physics, kinematics, reset)."""
    sim_model = backend.model  # with the self-contact sensor the backend adds
    ids = np.arange(n)
    out = BodyState.zeros(n, len(backend.body_ids), sim_model.nu)
    variants = {
        "numba": (
            backend.step,
            partial(backend.copy_body_state_w, out),
            partial(backend.write_state, ids, qpos, qvel),
        )
    }
    for name, persistent in (("forward", False), ("persistent", True)):
        b = mujoco.batch.Batch(sim_model, nsim=n, nthread=threads, persistent=persistent)
        b.reset(keyframe=0)
        record = {"sensordata": np.zeros((n, decimation, sim_model.nsensordata))}

        def physics(target, b=b, record=record):
            b.ctrl[:] = target
            b.rollout(decimation, record=("sensordata",), out=record)

        def reset(b=b):
            b.qpos[:], b.qvel[:], b.qacc_warmstart[:] = qpos, qvel, 0.0

        forward = partial(b.forward, stage=mujoco.mjtStage.mjSTAGE_VEL.value)
        variants[name] = (physics, forward, reset)
    return variants


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-envs", type=int, nargs="+", default=[1, 64, 1024])
    p.add_argument("--steps", type=int, default=100, help="control steps per window")
    p.add_argument("--rounds", type=int, default=5, help="windows per variant, interleaved")
    p.add_argument("--decimation", type=int, default=4)
    args = p.parse_args(argv)

    model = g1.load_model()
    threads = len(os.sched_getaffinity(0))
    for n in args.num_envs:
        backend = make_backend(
            "mujoco", model, n, body_ids(model, g1.G1.tracked_bodies), g1.G1.joint_ids(model),
            decimation=args.decimation, num_threads=threads,
        )  # fmt: skip
        data = mujoco.MjData(backend.model)
        mujoco.mj_resetDataKeyframe(backend.model, data, 0)
        qpos, qvel = np.tile(data.qpos, (n, 1)), np.tile(data.qvel, (n, 1))
        noise = np.random.default_rng(0).normal(0.0, 0.3, (args.steps, n, backend.model.nu))
        targets = data.ctrl + noise
        variants = _variants(backend, n, args.decimation, threads, qpos, qvel)
        best = dict.fromkeys(variants, (np.inf, np.inf))
        for _ in range(args.rounds):
            for name, (physics, kinematics, reset) in variants.items():
                window = _time_window(physics, kinematics, reset, targets)
                best[name] = min(best[name], window, key=sum)
        backend.close()
        print(
            f"N={n} threads={threads}, ms per control step, physics call + kinematics (fastest "
            f"of {args.rounds} windows of {args.steps} steps): "
            + ", ".join(
                f"{k} {1e3 * a:.3f} + {1e3 * b:.3f} ({100 * b / a:.1f} %)"
                for k, (a, b) in best.items()
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
