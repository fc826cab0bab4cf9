"""One-shot GPU check of the MuJoCo Warp backend: run once where a GPU is at hand.

Measures, on one device, and prints as it goes (and writes ``<out>/gpu_check.json``):

1. the machine: warp-lang and its CUDA toolkit, the driver's CUDA version, the GPU, whether
   conditional graph nodes and Warp's memory pool are there (`graph_capture_blocker`), and
   the device ``device=None`` resolves to;
2. start-up at the largest N, in a fresh process with an empty Warp kernel cache (compile) and
   again with that cache filled (load): construction, first step (kernels compiled or loaded),
   second step (the "step" graph captured), the capture times of the "step" and "refresh"
   graphs (`MjWarpBackend.capture_s`), and ms per control step once replaying;
3. reproducibility at the largest N: two backends fed the same states and targets for 20 steps,
   bit-equal or not, with ``deterministic`` off and on, and the steps/s of each; then the
   device MDP against the host MDP at the smallest N for 100 steps (`mdp_parity`: the first
   step whose flags differ, if any, the largest observation and reward differences before it,
   and the reset states' difference, RSI being on the device); then each installed learner
   adapter (rsl_rl, skrl, TorchRL) over the device MDP with torch on the device
   (`learners_on_device`: the device path taken, env steps/s through it, its tensors equal to
   the env's device arrays); then a real policy tracking its clip with each MDP
   (`tracking_policy`: the shipped tracker on the default motion, and ``--onnx`` on
   ``--onnx-motion`` when given);
4. throughput at each N: ``benchmarks/bench_mjwarp.py`` (backend phases, physics-only limit)
   and ``gym-motion bench --backend mjwarp`` (the whole env), each in its own process;
5. the env against bare MuJoCo Warp at each N, from that bench, once with the MDP on the host
   (Numba) and once on the device (``--mdp device``, `gym_motion.envs.device_mdp`): env
   steps/s, bare physics steps/s, their ratio (the device MDP's goal: >= 0.8), the share of a
   step outside physics, the device memory per env (Warp's memory pool after warm-up; None
   on a CPU) and the bytes per env step copied to and from the host (`env.transfer_bytes`).
   With the device MDP the bench steps as a learner does: actions on the device,
   ``step_on_device``.

Usage (repo root, on the GPU machine)::

    python benchmarks/gpu_check.py --out gpu_check            # cuda:0, N = 1024 ... 16384
    python benchmarks/gpu_check.py --out gpu_check --onnx B_Fence1.onnx --onnx-motion B_Fence1.npz
    python benchmarks/gpu_check.py --device cpu --num-envs 4 --steps 5 --warm-only --no-bench
                                                              # checks the script on a CPU

Nothing here asserts a speed; it reports. A section that fails (an exception on the GPU) is
written as its error and traceback, the others still run, and the script exits 1 at the end,
naming the failed sections. The cold-cache start-up needs minutes on a GPU machine the first
time (MuJoCo Warp's kernels compile for the GPU); ``--warm-only`` skips it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def machine(device: str | None) -> dict:
    """Facts of Warp, the driver and the device that decide the backend's path."""
    import warp as wp

    wp.config.quiet = True
    wp.init()
    from gym_motion.backends import mjwarp

    info = {
        "warp": wp.__version__,
        "cuda_toolkit": wp.get_cuda_toolkit_version(),
        "cuda_driver": wp.get_cuda_driver_version(),
        "cuda_devices": wp.get_cuda_device_count(),
        "cuda_unavailable_reason": mjwarp.cuda_unavailable_reason(),
        "conditional_graphs": wp.is_conditional_graph_supported(),
        "LOCAL_RANK": os.environ.get("LOCAL_RANK"),
    }
    dev = mjwarp.resolve_device(device)
    info["device"] = dev
    info["device_name"] = wp.get_device(dev).name
    info["graph_capture_blocker"] = mjwarp.graph_capture_blocker(dev)
    if wp.get_device(dev).is_cuda:
        info["mempool_enabled"] = wp.is_mempool_enabled(dev)
    return info


def _build(n: int, device: str, **kwargs):
    """(backend, keyframe qpos (n, nq), qvel (n, nv), targets (n, nu) float32, BodyState)."""
    import mujoco

    from gym_motion.backends.base import BodyState
    from gym_motion.backends.mjwarp import MjWarpBackend
    from gym_motion.robots import g1
    from gym_motion.robots.spec import body_ids

    model = g1.load_model()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key(g1.KEYFRAME).id)
    robot = g1.G1
    be = MjWarpBackend(
        model, n, body_ids(model, robot.tracked_bodies), robot.joint_ids(model), device=device,
        **kwargs,
    )  # fmt: skip
    qpos, qvel = np.tile(data.qpos, (n, 1)), np.tile(data.qvel, (n, 1))
    targets = np.tile(data.ctrl, (n, 1)).astype(np.float32)
    out = BodyState.zeros(n, len(robot.tracked_bodies), len(robot.joint_names))
    return be, qpos, qvel, targets, out


def startup(n: int, device: str, steps: int) -> dict:
    """Start-up and steady-state times of one backend at N = n (this process's Warp cache)."""
    import warp as wp

    wp.config.quiet = True
    t0 = time.perf_counter()
    be, qpos, qvel, targets, out = _build(n, device)
    r = {"construct_s": time.perf_counter() - t0}
    for name in ("first_step_s", "second_step_s"):  # compile or load; capture
        t0 = time.perf_counter()
        be.step(targets)
        be.copy_body_state_w(out)
        r[name] = time.perf_counter() - t0
    for _ in range(2):  # the second refresh captures its graph
        be.write_state(np.arange(n), qpos, qvel)
        be.copy_body_state_w(out)
    r["capture_s"] = dict(be.capture_s)
    r["capture"] = be.capture
    t0 = time.perf_counter()
    for _ in range(steps):
        be.step(targets)
        be.copy_body_state_w(out)
    r["ms_per_step"] = 1e3 * (time.perf_counter() - t0) / steps
    r["env_steps_per_s"] = n * steps / (time.perf_counter() - t0)
    be.close()
    return r


def reproducibility(n: int, device: str, steps: int, deterministic: bool) -> dict:
    """Two backends, same perturbed states and targets: max |difference| of body positions and
    joint velocities after `steps` control steps, and env-steps/s of the first."""
    rng = np.random.default_rng(0)
    finals, rate = [], 0.0
    noise = None
    for _ in range(2):
        be, qpos, qvel, targets, out = _build(n, device, deterministic=deterministic)
        if noise is None:
            noise = rng.uniform(-0.1, 0.1, (steps, *targets.shape)).astype(np.float32)
        qpos[:, 2] -= 0.01  # feet in contact from the first substep
        be.write_state(np.arange(n), qpos, qvel)
        be.step(targets)  # compile or load, outside the timing
        be.write_state(np.arange(n), qpos, qvel)
        t0 = time.perf_counter()
        for k in range(steps):
            be.step(targets + noise[k])
        be.copy_body_state_w(out)
        rate = rate or n * steps / (time.perf_counter() - t0)
        finals.append((out.pos_w.copy(), out.joint_vel.copy()))
        be.close()
    (p0, v0), (p1, v1) = finals
    return {
        "deterministic": deterministic,
        "bit_equal": bool(np.array_equal(p0, p1) and np.array_equal(v0, v1)),
        "max_pos_diff_m": float(np.abs(p0 - p1).max()),
        "max_joint_vel_diff": float(np.abs(v0 - v1).max()),
        "env_steps_per_s": rate,
    }


def mdp_parity(n: int, device: str, steps: int) -> dict:
    """The device MDP against the host MDP on this device: two envs of N = n on MuJoCo Warp in
    its deterministic mode (equal physics for equal inputs), without observation noise, the
    same seed and actions (normal, std 1); the device one steps as a learner does (actions as
    a Warp array there, `step_on_device`, `device_arrays`). Reports the first step whose
    flags (terminated, truncated) differ (None: none did; a flag near a threshold may flip
    from float32 rounding, and the runs then part), and the largest differences of
    observations and rewards before it, of the robot state after the first reset (RSI on
    the device) and of the robot state read back at the end; and whether the backend and the
    device MDP still capture their launch sequences as graphs (a failed capture warns and
    runs them eagerly), with each graph's capture time."""
    import dataclasses

    import warp as wp

    from gym_motion.envs import TrackingEnvCfg, TrackingVecEnv
    from gym_motion.envs.config import BackendCfg

    base = dataclasses.replace(TrackingEnvCfg(), obs_noise=False,
                               backend=BackendCfg(name="mjwarp", device=device,
                                                  deterministic=True, mdp="host"))  # fmt: skip
    host = TrackingVecEnv(n, cfg=base, seed=0, obs_mode="dict")
    dev = TrackingVecEnv(n, cfg=dataclasses.replace(
        base, backend=dataclasses.replace(base.backend, mdp="device")), seed=0,
        obs_mode="dict")  # fmt: skip
    obs, _ = host.reset()
    dev.reset()
    rng = np.random.default_rng(1)
    r: dict = {"num_envs": n, "steps": steps, "first_flag_mismatch_step": None, "ended": 0,
               "max_obs_diff": 0.0, "max_reward_diff": 0.0}  # fmt: skip
    # the reset's states, RSI computed on the device from the host's draws (0 on Warp's CPU)
    r["max_reset_state_diff"] = max(
        float(np.abs(getattr(dev.state.robot, f) - getattr(host.state.robot, f)).max())
        for f in ("pos_w", "quat_w", "lin_vel_w", "ang_vel_w", "joint_pos", "joint_vel")
    )
    for k in range(1, steps + 1):
        actions = rng.normal(0.0, 1.0, (n, 29)).astype(np.float32)
        obs, reward, term, trunc, _ = host.step(actions)
        d_reward, d_term, d_trunc, _ = dev.step_on_device(wp.array(actions, device=dev.mdp_device))
        arrays = dev.device_arrays()
        if not (np.array_equal(d_term, term) and np.array_equal(d_trunc, trunc)):
            r["first_flag_mismatch_step"] = k
            break
        r["ended"] += int(np.count_nonzero(term | trunc))
        r["max_reward_diff"] = max(
            r["max_reward_diff"],
            float(np.abs(d_reward - reward).max()),
            float(np.abs(arrays["reward"].numpy() - reward).max()),
        )
        for group, values in obs.items():
            diff = float(np.abs(arrays[group].numpy() - values).max())
            r["max_obs_diff"] = max(r["max_obs_diff"], diff)
    r["max_robot_pos_diff_m"] = float(np.abs(dev.state.robot.pos_w - host.state.robot.pos_w).max())
    # a capture that failed only warns and runs eagerly (slower, same results): say so here
    graphs = dev._device_mdp.graphs
    r["graphs"] = {
        "backend_capture": dev.backend.capture, "backend_capture_s": dict(dev.backend.capture_s),
        "mdp_capture": graphs.capture, "mdp_capture_s": dict(graphs.capture_s),
    }  # fmt: skip
    host.close()
    dev.close()
    return r


def _learners() -> dict[str, Callable]:
    """Adapter name -> a function (env, torch device) -> (step(actions) -> (observations,
    reward, done) tensors, whether it took the device path); the adapters of the libraries
    installed here (a GPU machine may lack some), after the env's own `step_on_device`."""
    import importlib.util

    import torch
    import warp as wp

    def env_itself(env, device):  # the baseline: what each adapter adds is over this
        env.reset()

        def step(x):
            reward, terminated, truncated, _ = env.step_on_device(x)
            arrays = env.device_arrays()
            done = torch.from_numpy(terminated | truncated)
            return wp.to_torch(arrays["policy"]), wp.to_torch(arrays["reward"]), done

        # the device path: the env's device MDP took the step, its arrays on `device`
        return step, env.mdp_device is not None and str(env.device_arrays()["policy"].device) == (
            "cpu" if device == "cpu" else f"cuda:{torch.device(device).index or 0}"
        )

    made: dict[str, Callable] = {"step_on_device": env_itself}
    if importlib.util.find_spec("rsl_rl"):

        def rsl_rl(env, device):
            from gym_motion.adapters.rsl_rl import RslRlVecEnv

            a = RslRlVecEnv(env, device=device)
            return (lambda x: (lambda r: (r[0]["policy"], r[1], r[2]))(a.step(x))), a._on_device

        made["rsl_rl"] = rsl_rl
    if importlib.util.find_spec("skrl"):

        def skrl(env, device):
            from gym_motion.adapters.skrl import SkrlVecEnv

            a = SkrlVecEnv(env, device=device)
            a.reset()
            return (lambda x: (lambda r: (r[0], r[1], r[2] | r[3]))(a.step(x))), a._on_device

        made["skrl"] = skrl
    if importlib.util.find_spec("torchrl"):

        def torchrl(env, device):
            from torchrl.envs.utils import step_mdp

            from gym_motion.adapters.torchrl import TorchRLVecEnv

            a = TorchRLVecEnv(env, device=device)
            last = {"td": a.reset()}

            def step(x):  # the rows that ended last step are reset first, as TorchRL does
                td = last["td"]
                if td["done"].any():
                    td = a.reset(td.set("_reset", td["done"].clone()))
                out = a.step(td.set("action", x))
                last["td"] = step_mdp(out)
                nxt = out["next"]
                return nxt["observation"], nxt["reward"], nxt["done"]

            return step, a._on_device

        made["torchrl"] = torchrl
    return made


def learners_on_device(n: int, device: str, steps: int, backend: str = "mjwarp") -> dict:
    """Each installed learner adapter (rsl_rl, skrl, TorchRL) over the device MDP on this
    device, with torch there, after the env's own `step_on_device` (the baseline): whether it
    took the device path (no host copies of the observations), its env steps/s over `steps`
    steps of normal actions (std 1) made by torch on the device (autoresets included; the
    first step, which compiles and captures, untimed) and ms per step, whether its
    observations and rewards equal the env's device arrays bit for bit at every step (on a
    GPU: no stream race between the env and torch; None for the baseline, whose tensors are
    those arrays), whether they are finite, and how many
    episodes ended. `backend` "mujoco" puts the device MDP on Warp's CPU device (the adapters'
    host cost, with physics nearly free at small N). An adapter that fails is saved as its
    error and the others still run; the result then has an "error" naming it."""
    import dataclasses

    from gym_motion.envs import TrackingEnvCfg
    from gym_motion.envs.config import BackendCfg

    warp_device = device if backend == "mjwarp" else None  # others: the MDP on Warp's CPU
    cfg = dataclasses.replace(TrackingEnvCfg(), backend=BackendCfg(
        name=backend, device=warp_device, mdp="device"))  # fmt: skip
    mode = {"rsl_rl": "same_step", "skrl": "same_step", "torchrl": "disabled",
            "step_on_device": "same_step"}  # fmt: skip
    out: dict = {}
    errors = []
    for name, make in _learners().items():
        try:
            out[name] = _step_learner(
                name, make, n, device, steps, cfg, mode.get(name, "same_step")
            )
        except Exception as exc:  # noqa: BLE001 - one adapter's failure keeps the others'
            out[name] = {"error": f"{type(exc).__name__}: {exc}",
                         "traceback": traceback.format_exc()}  # fmt: skip
            errors.append(name)
    if errors:
        out["error"] = f"failed: {', '.join(errors)}"
    return out


def _step_learner(name: str, make: Callable, n: int, device: str, steps: int, cfg: Any,
                  mode: str) -> dict:  # fmt: skip
    """`learners_on_device`'s figures of one adapter (`make`, from `_learners`)."""
    import torch
    import warp as wp

    from gym_motion.envs import TrackingVecEnv

    kwargs = {"action_bound": 1.0} if name == "torchrl" else {}
    env = TrackingVecEnv(n, cfg=cfg, seed=0, autoreset_mode=mode, **kwargs)
    try:
        step, on_device = make(env, device)
        gen = torch.Generator(device=device).manual_seed(0)
        shape = (n, *env.single_action_space.shape)
        same, finite, elapsed, ended = True, True, 0.0, 0
        for k in range(steps + 1):
            actions = torch.randn(shape, generator=gen, device=device).clamp(-1.0, 1.0)
            t0 = time.perf_counter()
            obs, reward, done = step(actions)
            if device != "cpu":
                torch.cuda.synchronize(device)
            if k:  # the first step compiles, loads and captures
                elapsed += time.perf_counter() - t0
            arrays = env.device_arrays()
            same &= torch.equal(obs, wp.to_torch(arrays["policy"]))
            same &= torch.equal(reward.reshape(-1), wp.to_torch(arrays["reward"]))
            finite &= bool(torch.isfinite(obs).all() and torch.isfinite(reward).all())
            ended += int(done.sum())
    finally:
        env.close()
    # the baseline's tensors are the device arrays themselves: nothing to compare (None)
    same_or_none = None if name == "step_on_device" else same
    return {"device_path": bool(on_device), "env_steps_per_s": n * steps / elapsed,
            "ms_per_step": 1e3 * elapsed / steps, "equal_to_device_arrays": same_or_none,
            "finite": finite, "ended": ended, "tensor_device": str(obs.device)}  # fmt: skip


def tracking_policy(out: Path, onnx: str | None, motion: str | None) -> dict:
    """A real policy tracking its clip on MuJoCo Warp on its default device (cuda:0 where Warp
    lists a GPU), with the MDP on the host and on the device (``gym-motion eval ... --backend
    mjwarp --mdp host|device``, each in its own process): the shipped tracker on the
    embedded default motion, and `onnx` on `motion` one clip frame per step (an mjlab policy
    such as B_Fence1) when given. Per run: steps survived of the clip's, MPKPE (mm), how the
    episode ended."""
    runs = {"tracker": ["--policy", "tracker"]}
    if onnx is not None:
        runs[Path(onnx).stem] = ["--onnx", str(Path(onnx).resolve()), "--frame-per-step"]
        runs[Path(onnx).stem] += [] if motion is None else ["--motion", str(Path(motion).resolve())]
    result: dict = {}
    errors = []
    for name, policy in runs.items():
        for mdp in ("host", "device"):
            path = (out / f"eval_{name}_{mdp}_mdp.json").resolve()
            cmd = [sys.executable, "-m", "gym_motion.cli", "eval", *policy, "--backend",
                   "mjwarp", "--mdp", mdp, "--json", str(path)]  # fmt: skip
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            if proc.returncode != 0 or not path.exists():  # the other runs still run
                errors.append(f"{' '.join(cmd)}: {proc.stderr[-2000:]}")
                continue
            clip = next(iter(json.loads(path.read_text())["clips"].values()))
            result[f"{name}_{mdp}_mdp"] = {
                "steps": clip["episode_length"], "clip_steps": clip["max_episode_steps"],
                "mpkpe_mm": clip["mpkpe_mm"], "ended": clip["terminations"],
            }  # fmt: skip
    if errors:
        result["error"] = "\n".join(errors)
    return result


def against_physics(bench: dict | list[dict]) -> dict:
    """Per N, from ``gym-motion bench --json`` results: env steps/s, bare MuJoCo Warp steps/s,
    their ratio, the share of a step outside physics, the device memory per env (kB, None
    where unread) and the bytes per env step copied up and down; printed as a table."""
    rows = {}
    print("\n     N   env steps/s   bare steps/s   ratio   outside physics   kB/env"
          "   B/env-step up, down")  # fmt: skip
    for r in bench if isinstance(bench, list) else [bench]:
        n = r["num_envs"]
        mb = r.get("device_memory_mb")
        kb = None if mb is None else 1024 * mb / n
        moved = r.get("transfer_kb_per_step", {})
        up, down = (1024 * moved[k] / n if k in moved else None for k in ("to_device", "to_host"))
        rows[str(n)] = row = {
            "env_steps_per_s": r["env_steps_per_s"],
            "bare_steps_per_s": r["physics_limit_env_steps_per_s"],
            "ratio": r["ratio_to_limit"],
            "outside_physics": r["non_physics_fraction"],
            "device_memory_kb_per_env": kb,
            "bytes_up_per_env_step": up,
            "bytes_down_per_env_step": down,
        }
        bus = "-" if up is None or down is None else f"{up:.0f}, {down:.0f}"
        print(f"{n:>6} {row['env_steps_per_s']:>13.0f} {row['bare_steps_per_s']:>14.0f}"
              f" {row['ratio']:>7.2f} {100 * row['outside_physics']:>16.0f} %"
              f" {'-' if kb is None else f'{kb:.1f}':>8} {bus:>21}")  # fmt: skip
    return rows


def _child(args: argparse.Namespace) -> None:
    """Run one measurement in this (fresh) process and print its JSON on the last line."""
    print(json.dumps(startup(max(args.num_envs), args.device, args.steps)), flush=True)


def _run_child(args: argparse.Namespace) -> dict:
    """`startup` at the largest N in a fresh process (same Warp cache as this one)."""
    cmd = [sys.executable, __file__, "--child", "--device", args.device or "", "--steps",
           str(args.steps), "--num-envs", str(max(args.num_envs))]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr[-2000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _run_tool(cmd: list[str], out: Path, name: str) -> None:
    print(f"\n$ {' '.join(cmd)}", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    text = proc.stdout + proc.stderr
    (out / f"{name}.txt").write_text(text)
    print(text.rstrip(), f"\n({time.perf_counter() - t0:.0f} s, exit {proc.returncode})")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None, help="Warp device (default: the backend's)")
    p.add_argument("--num-envs", type=int, nargs="+", default=[1024, 4096, 8192, 16384])
    p.add_argument("--steps", type=int, default=200, help="timed control steps per run")
    p.add_argument("--out", default="gpu_check", help="folder of the results")
    p.add_argument("--warm-only", action="store_true", help="skip the empty-cache start-up")
    p.add_argument("--no-bench", action="store_true", help="skip the throughput tools")
    p.add_argument("--onnx", help="an ONNX tracking policy to play too (e.g. B_Fence1.onnx)")
    p.add_argument("--onnx-motion", help="its clip npz, played one frame per step")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.onnx_motion is not None and args.onnx is None:
        p.error("--onnx-motion plays the clip of an --onnx policy: give --onnx too")
    args.device = args.device or None
    if args.child:
        _child(args)
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cache = None
    if not args.warm_only:  # one empty kernel cache for every measurement of this run
        cache = tempfile.mkdtemp(prefix="warp_cache_")
        os.environ["WARP_CACHE_PATH"] = cache  # before Warp starts here; children inherit it
    result: dict = {"machine": machine(args.device)}
    args.device = result["machine"]["device"]
    print(json.dumps(result["machine"], indent=1), flush=True)

    failed: list[str] = []

    def save(key: str, value: dict) -> None:
        result[key] = value
        print(f"{key}: {json.dumps(value)}", flush=True)
        (out / "gpu_check.json").write_text(json.dumps(result, indent=1))

    def section(key: str, measure: Callable[..., dict], *measure_args) -> None:
        """`measure`'s result saved under `key`; an exception saved in its place (a GPU's
        time is scarce: one failure must not lose the other sections)."""
        try:
            value = measure(*measure_args)
        except Exception as exc:
            value = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        if "error" in value:  # raised here, or in a child process
            failed.append(key)
        save(key, value)

    n = max(args.num_envs)
    if cache is None:
        section(f"startup_warm_cache_n{n}", startup, n, args.device, args.steps)
    else:
        for run in ("cold", "warm"):  # the cold run compiles into `cache`, the warm one loads
            section(f"startup_{run}_cache_n{n}", _run_child, args)
    for det in (False, True):
        section(f"reproducibility_deterministic_{det}_n{n}", reproducibility, n, args.device, 20,
                det)  # fmt: skip
    small = min(args.num_envs)
    section(f"device_mdp_parity_n{small}", mdp_parity, small, args.device, 100)
    section(f"learners_on_device_n{small}", learners_on_device, small, args.device, 50)
    section("tracking_policy", tracking_policy, out, args.onnx, args.onnx_motion)

    if not args.no_bench:
        sizes = [str(k) for k in args.num_envs]
        dev = ["--device", args.device]
        _run_tool([sys.executable, "benchmarks/bench_mjwarp.py", "--num-envs", *sizes, *dev,
                   "--steps", str(args.steps)], out, "bench_mjwarp")  # fmt: skip
        for mdp in ("host", "device"):
            bench = out / f"bench_{mdp}_mdp.json"
            _run_tool([sys.executable, "-m", "gym_motion.cli", "bench", "--backend", "mjwarp",
                       *dev, "--mdp", mdp, "--num-envs", *sizes, "--steps", str(args.steps),
                       "--json", str(bench)], out, f"gym_motion_bench_{mdp}_mdp")  # fmt: skip
            if bench.exists():
                print(f"\nthe MDP on the {mdp}:")
                rows = against_physics(json.loads(bench.read_text()))
                save(f"env_against_bare_physics_{mdp}_mdp", rows)
    if cache is not None:
        shutil.rmtree(cache, ignore_errors=True)
    print(f"\nresults in {out}/")
    if failed:
        sys.exit(f"failed sections (their errors are in {out}/gpu_check.json): "
                 f"{', '.join(failed)}")  # fmt: skip


if __name__ == "__main__":
    main()
