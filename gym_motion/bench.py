"""Throughput of `TrackingVecEnv` against the physics-only limit, measured in one run.

``gym-motion bench --num-envs 1 64 1024 --steps 200`` steps the env with random actions and
prints env-steps/s, milliseconds per step phase, the physics-only limit and the peak resident
memory. ``--json out.json`` also writes the figures.

The physics-only limit (MuJoCo backend) is the time of the env's own physics with nothing else:
the faster of two bare loops over the env's model, N, physics threads and substeps that replay
the physics inputs the env produced (each env's qpos, qvel, act, solver warm start and controls
of every control step, recorded around the env's timed step):

- `BareRollout`: ``mujoco.rollout`` on a persistent thread pool (warm start passed in);
- `BareBatch`: a ``mujoco.batch.Batch`` rollout, as the env's backend steps (its per-env model
  fields, i.e. domain randomisation, copied too; bit-identical physics).

Replaying the env's own states makes the bare loops simulate the same contacts and solver
iterations (`BareBatch` reproduces the env's next states bit for bit), which a held pose does
not: random actions and resets change the cost of a step. Machine load moves every figure, so
each env step is followed at once by the replays of its physics (only the physics calls are
timed, the recording and the state writes are not), both sides see the same load, and over
`repeats` windows of steps each side reports its fastest window: the env's figures (step
time, phases, non-physics share) come from its fastest window, the limit from the fastest
window of either loop. The ratio env / limit is then at most about 1; its value in each window
is printed, to show how much it moves.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from typing import Any

import mujoco
import mujoco.batch
import mujoco.rollout
import numpy as np

from gym_motion.atomic import write_json

REPEATS = 10  # windows of env steps (each paired with its bare replays) per N
RESET_EVERY = 50  # control steps between re-initialisations of `physics_only_steps_per_s`
_FULLPHYSICS = int(mujoco.mjtState.mjSTATE_FULLPHYSICS)
_WARMSTART = int(mujoco.mjtState.mjSTATE_WARMSTART)
_CTRL = int(mujoco.mjtState.mjSTATE_CTRL)
_INTEGRATION = int(mujoco.mjtState.mjSTATE_INTEGRATION)
# what a control step's physics depends on (the rest of a state row is unused by the env)
_INPUTS = _FULLPHYSICS | _WARMSTART | _CTRL


def peak_rss_mb() -> float:
    """Peak resident memory of this process, MB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024.0 / (1024.0 if sys.platform == "darwin" else 1.0)


def state_columns(model: mujoco.MjModel, spec: int, within: int) -> np.ndarray:
    """Column indices (K,) int64 of the components of state `spec` in a row of state `within`
    (`mujoco.mjtState` bit sets; rows list components in bit order, as ``mj_getState``)."""
    cols, offset = [], 0
    for bit in (1 << i for i in range(int(mujoco.mjtState.mjNSTATE))):
        if not within & bit:
            continue
        size = mujoco.mj_stateSize(model, bit)
        if spec & bit:
            cols.append(np.arange(offset, offset + size))
        offset += size
    return np.concatenate(cols).astype(np.int64)


class PhysicsInputs:
    """The physics inputs of one control step of a `MujocoBackend`, for replay.

    `record` copies, before the step, every env's state-row components that its physics depends
    on (`_INPUTS`: time, qpos, qvel, act, history, plugin state, warm start; `row`, (N, K)
    float64), and `record_controls`, after it, the controls the step applied.
    """

    def __init__(self, backend):
        # the backend's mujoco.batch.Batch (the bench measures the backend, so it reads it)
        self.batch = backend._batch
        self.model = backend.model
        self.decimation = backend.decimation
        self.num_envs = backend.num_envs
        self.num_threads = backend.num_threads
        self.columns = state_columns(self.model, _INPUTS, _INTEGRATION)
        self.row = np.zeros((self.num_envs, self.columns.size))
        self._ctrl = state_columns(self.model, _CTRL, _INPUTS)  # within `row`

    def record(self) -> None:
        """Before a control step: copy its inputs (the controls come with `record_controls`)."""
        np.take(self.batch.state, self.columns, axis=1, out=self.row)

    def record_controls(self) -> None:
        """After the control step: the controls it applied (the backend writes them in its
        step)."""
        self.row[:, self._ctrl] = self.batch.state[:, self.columns[self._ctrl]]

    def model_fields(self) -> dict[str, np.ndarray]:
        """Per-env model fields of the backend (field -> live (N, ...) table), e.g. friction."""
        tables = {name: self.batch.expanded(name) for name in mujoco.batch.MODEL_FIELDS}
        return {name: table for name, table in tables.items() if table is not None}


class BareBatch:
    """Bare ``mujoco.batch.Batch`` rollout of N envs on the same threads as `MujocoBackend`,
    replaying the recorded `PhysicsInputs`: the recorded rows are written to the state
    (untimed), then one ``rollout(decimation)`` call recording the sensors after every substep
    (timed). The backend's per-env model fields are copied once."""

    name = "batch"

    def __init__(self, inputs: PhysicsInputs):
        self._inputs = inputs
        self._batch = mujoco.batch.Batch(inputs.model, inputs.num_envs, inputs.num_threads)
        for name, table in inputs.model_fields().items():
            self._batch.expand(name)[...] = table
        n, dec, nsens = inputs.num_envs, inputs.decimation, inputs.model.nsensordata
        self._record = {"sensordata": np.zeros((n, dec, nsens))}

    def run(self) -> float:
        """Replay the recorded control step; returns the wall time of its physics call, s."""
        self._batch.state[:, self._inputs.columns] = self._inputs.row
        t0 = time.perf_counter()
        try:
            self._batch.rollout(self._inputs.decimation, record=("sensordata",), out=self._record)
        except mujoco.batch.SimulationError:  # as in the backend: those rows stop
            pass
        return time.perf_counter() - t0

    def close(self) -> None:
        self._batch = None


class BareRollout:
    """Bare ``mujoco.rollout`` of N envs on a persistent pool of the backend's threads,
    replaying the recorded `PhysicsInputs`: initial states, warm starts and controls are taken
    from the record (untimed), then one rollout of `decimation` substeps recording the state and
    sensors (timed). Per-env model fields are not copied (one model for all)."""

    name = "rollout"

    def __init__(self, inputs: PhysicsInputs):
        self._inputs = inputs
        m, n, dec = inputs.model, inputs.num_envs, inputs.decimation
        self._full = state_columns(m, _FULLPHYSICS, _INPUTS)  # columns within a record
        self._warm = state_columns(m, _WARMSTART, _INPUTS)
        self._ctrl = state_columns(m, _CTRL, _INPUTS)
        self._models = [m] * n
        self._datas = [mujoco.MjData(m) for _ in range(max(1, inputs.num_threads))]
        self._state = np.empty((n, self._full.size))
        self._warmstart = np.empty((n, self._warm.size))
        self._control = np.empty((n, dec, self._ctrl.size))
        self._out = np.empty((n, dec, self._full.size))
        self._sens = np.empty((n, dec, m.nsensordata))
        threads = inputs.num_threads
        self._pool = mujoco.rollout.Rollout(nthread=threads if threads > 1 else 0)

    def run(self) -> float:
        """Replay the recorded control step; returns the wall time of its physics call, s."""
        row = self._inputs.row
        np.take(row, self._full, axis=1, out=self._state)
        np.take(row, self._warm, axis=1, out=self._warmstart)
        self._control[...] = row[:, None, self._ctrl]
        t0 = time.perf_counter()
        self._pool.rollout(
            self._models, self._datas, self._state, self._control, control_spec=_CTRL,
            skip_checks=True, nstep=self._inputs.decimation, initial_warmstart=self._warmstart,
            state=self._out, sensordata=self._sens,
        )  # fmt: skip
        return time.perf_counter() - t0

    def close(self) -> None:
        self._pool.close()


class BareWarp:
    """Bare ``mujoco_warp.step`` x decimation on an `MjWarpBackend`'s own model and data (a
    CUDA graph on GPU), `steps` control steps per `run`, nothing else; it advances the
    backend's state."""

    name = "mjwarp"

    def __init__(self, backend, steps: int):
        import mujoco_warp as mjw
        import warp as wp

        self._wp, self._dev, self._steps = wp, backend.device, steps
        m, d = backend._m, backend._d

        def physics() -> None:
            for _ in range(backend.decimation):
                mjw.step(m, d)

        self._physics, self._graph = physics, None
        with wp.ScopedDevice(self._dev):
            physics()
            if wp.get_device(self._dev).is_cuda:
                with wp.ScopedCapture() as capture:
                    physics()
                self._graph = capture.graph
            wp.synchronize_device(self._dev)

    def run(self) -> float:
        """Advance `steps` control steps (device synchronised); returns the wall time, s."""
        wp = self._wp
        with wp.ScopedDevice(self._dev):
            wp.synchronize_device(self._dev)
            t0 = time.perf_counter()
            for _ in range(self._steps):
                if self._graph is not None:
                    wp.capture_launch(self._graph)
                else:
                    self._physics()
            wp.synchronize_device(self._dev)
            return time.perf_counter() - t0

    def close(self) -> None:
        self._graph = None


class BareMotrix:
    """Bare ``SceneModel.step_n(data, decimation)`` on a `MotrixBackend`'s own scene and data,
    `steps` control steps per `run`, nothing else (no sensor reads, no NaN guard); it advances
    the backend's state."""

    name = "motrix"

    def __init__(self, backend, steps: int):
        self._scene, self._data = backend.scene, backend.data
        self._dec, self._steps = backend.decimation, steps

    def run(self) -> float:
        """Advance `steps` control steps; returns the wall time, s."""
        t0 = time.perf_counter()
        for _ in range(self._steps):
            self._scene.step_n(self._data, self._dec)
        return time.perf_counter() - t0

    def close(self) -> None:
        self._scene = self._data = None


def physics_only_steps_per_s(
    model: mujoco.MjModel,
    num_envs: int,
    decimation: int,
    num_threads: int,
    seconds: float,
    reset_every: int = RESET_EVERY,
) -> float:
    """Env-steps/s of bare ``mujoco.rollout`` holding the keyframe "default" targets, for
    `seconds`: N x `decimation` substeps per env step on a persistent pool of `num_threads`
    threads, state carried across calls (without the solver's warm start), every env
    re-initialised to the keyframe every `reset_every` steps (the G1 falls within about a
    second when it only holds its default pose, and a lying robot is cheaper to simulate).
    A model-only reference (``benchmarks/physics_limit.py``); `bench_env` replays the env's
    own states instead.

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
    with mujoco.rollout.Rollout(nthread=num_threads if num_threads > 1 else 0) as pool:

        def step() -> None:
            pool.rollout(
                models, datas, state, ctrl, control_spec=_CTRL, skip_checks=True,
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
    """Env-steps/s of `BareWarp` over `steps` control steps (the backend's state advances)."""
    loop = BareWarp(backend, steps)
    elapsed = loop.run()
    loop.close()
    return backend.num_envs * steps / elapsed


def bench_env(
    num_envs: int,
    steps: int,
    backend: str = "mujoco",
    backend_kwargs: dict[str, Any] | None = None,
    seed: int = 0,
    action_std: float = 0.5,
    repeats: int = REPEATS,
) -> dict[str, Any]:
    """Step a `TrackingVecEnv` with Gaussian random actions in `repeats` windows of
    ``ceil(steps / repeats)`` control steps, against the bare physics of the same steps.

    "mujoco": every env step is timed on its own and followed at once by the timed replays of
    its physics by `BareRollout` and `BareBatch` (the env's model, N, physics threads and
    substeps; they take turns going first), so both sides see the same load. "mjwarp" and
    "motrix": each env window is followed by a window of as many `BareWarp` / `BareMotrix`
    steps.

    Returns a dict with ``env_steps_per_s`` (fastest env window), ``phases_ms`` (ms per step in
    that window), ``step_ms``, ``non_physics_fraction`` (1 - physics phase / step),
    ``physics_limit_env_steps_per_s`` (fastest window of any bare loop; per loop in
    ``physics_limit_<name>_env_steps_per_s``, the winner in ``physics_limit_method``),
    ``ratio_to_limit`` (env / limit), ``ratio_to_limit_per_repeat`` (each env window against
    the faster bare loop on its steps), ``step_over_physics`` (step time / bare physics time of
    a control step, 1 / ratio), ``peak_rss_mb`` (the env's, after warm-up, before the bare
    loops exist), ``num_envs``, ``threads``, ``steps`` (all windows), ``repeats``,
    ``steps_per_repeat``, ``mdp`` (where the MDP ran, "host" or
    "device", as ``backend_kwargs["mdp"]`` chose, by default `runs_mdp_on_device`; with
    "device" the env steps as a learner on its device does: actions there,
    `TrackingVecEnv.step_on_device`); for "mjwarp" also ``backend_phases_ms`` (control
    upload, physics, the copy of the step's flags), measured in a further pass with device
    synchronisations between them,
    ``device_memory_mb`` (`device_memory_mb`, after warm-up, before the bare loop exists) and
    ``transfer_kb_per_step`` (kB copied "to_device" and "to_host" per env step in the timed
    windows, `TrackingVecEnv.transfer_bytes`).

    Raises:
        ValueError: steps or repeats < 1, or an unknown backend (from the env).
    """
    from gym_motion.envs import TrackingVecEnv

    if steps < 1 or repeats < 1:
        raise ValueError(f"steps and repeats must be >= 1, got {steps} and {repeats}")
    per = -(-steps // repeats)
    env = TrackingVecEnv(num_envs, backend=backend, seed=seed, backend_kwargs=backend_kwargs)
    rng = np.random.default_rng(seed)
    actions = list(rng.normal(0.0, action_std, size=(8, num_envs, 29)).astype(np.float32))
    step: Any = env.step
    if env.mdp_device is not None:  # as a learner on that device steps: nothing leaves it
        import warp as wp

        actions = [wp.array(a, dtype=float, device=env.mdp_device) for a in actions]
        step = env.step_on_device
    env.reset(seed=seed)
    for k in range(3):  # warm-up: compile, caches
        step(actions[k])
    rss = peak_rss_mb()
    memory = device_memory_mb(env.backend.device) if backend == "mjwarp" else None
    threads = getattr(env.backend, "num_threads", None)
    paired = backend == "mujoco"
    if paired:
        inputs = PhysicsInputs(env.backend)
        loops = [BareRollout(inputs), BareBatch(inputs)]
    else:
        loops = [(BareMotrix if backend == "motrix" else BareWarp)(env.backend, per)]
    env_s: list[float] = []
    bare_s: dict[str, list[float]] = {loop.name: [] for loop in loops}
    phases_ms: dict[str, float] = {}
    moved = dict(env.transfer_bytes or {})
    count = 0
    for _ in range(repeats):
        for key in env.phase_s:
            env.phase_s[key] = 0.0
        elapsed = 0.0
        bare = dict.fromkeys(bare_s, 0.0)
        for _ in range(per):
            if paired:
                inputs.record()
            t0 = time.perf_counter()
            step(actions[count % len(actions)])
            elapsed += time.perf_counter() - t0
            if paired:
                inputs.record_controls()
                for loop in loops[count % 2 :] + loops[: count % 2]:
                    bare[loop.name] += loop.run()
            count += 1
        if not paired:
            bare = {loop.name: loop.run() for loop in loops}
        env_s.append(elapsed)
        for name, t in bare.items():
            bare_s[name].append(t)
        if elapsed == min(env_s):
            phases_ms = {k: 1e3 * v / per for k, v in env.phase_s.items()}
    result = _summary(num_envs, backend, threads, per, repeats, env_s, phases_ms, bare_s)
    result["mdp"] = "host" if env.mdp_device is None else "device"
    if moved:
        now = env.transfer_bytes or {}
        result["transfer_kb_per_step"] = {k: (now[k] - v) / 1024 / count for k, v in moved.items()}
    if backend == "mjwarp":
        be = env.backend
        result["device_memory_mb"] = memory
        be.profile = True
        for k in range(per):
            step(actions[k % len(actions)])
        result["backend_phases_ms"] = {k: 1e3 * v / per for k, v in be.phase_times.items()}
        be.profile = False
    for loop in loops:
        loop.close()
    env.close()
    result["peak_rss_mb"] = rss
    return result


def device_memory_mb(device: str) -> float | None:
    """MB of Warp's memory pool in use on `device` (every Warp array and graph temporary of
    this process there), or None where Warp has no pool to read: a CPU device, or a GPU whose
    pool is off."""
    import warp as wp

    dev = wp.get_device(device)
    if not dev.is_cuda or not wp.is_mempool_enabled(dev):
        return None
    return wp.get_mempool_used_mem_current(dev) / 2**20


def _summary(
    num_envs: int,
    backend: str,
    threads: int | None,
    per: int,
    repeats: int,
    env_s: list[float],
    phases_ms: dict[str, float],
    bare_s: dict[str, list[float]],
) -> dict[str, Any]:
    """The result dict of `bench_env` from the window times, s."""
    step_s = min(env_s)
    sps = {name: num_envs * per / min(times) for name, times in bare_s.items()}
    method = max(sps, key=sps.__getitem__)
    limit = sps[method]
    env_sps = num_envs * per / step_s
    per_repeat = [min(times[r] for times in bare_s.values()) / env_s[r] for r in range(len(env_s))]
    result: dict[str, Any] = {
        "num_envs": num_envs,
        "backend": backend,
        "threads": threads,
        "steps": per * repeats,
        "repeats": repeats,
        "steps_per_repeat": per,
        "env_steps_per_s": env_sps,
        "phases_ms": phases_ms,
        "step_ms": 1e3 * step_s / per,
        "non_physics_fraction": 1.0 - phases_ms["physics"] / (1e3 * step_s / per),
        "physics_limit_env_steps_per_s": limit,
        "physics_limit_method": method,
        **{f"physics_limit_{name}_env_steps_per_s": v for name, v in sps.items()},
        "ratio_to_limit": env_sps / limit,
        "ratio_to_limit_per_repeat": per_repeat,
        "step_over_physics": limit / env_sps,
    }
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
    if "physics_limit_method" in r:
        bare = ", ".join(
            f"{name} {r[f'physics_limit_{name}_env_steps_per_s']:.0f}"
            for name in (BareRollout.name, BareBatch.name, BareWarp.name, BareMotrix.name)
            if f"physics_limit_{name}_env_steps_per_s" in r
        )
        lines.append(
            f"  limit: {bare} env-steps/s (best of {r['repeats']} alternating windows of "
            f"{r['steps_per_repeat']} steps) | step = {r['step_over_physics']:.2f} x bare "
            f"physics | ratio per window "
            + " ".join(f"{x:.3f}" for x in r["ratio_to_limit_per_repeat"])
        )
    if "backend_phases_ms" in r:
        lines.append(
            "  backend ms/step: "
            + ", ".join(f"{k} {v:.3f}" for k, v in r["backend_phases_ms"].items())
        )
    if "transfer_kb_per_step" in r:
        kb = r["transfer_kb_per_step"]
        lines.append(f"  host <-> device: {kb['to_device']:.1f} kB up, {kb['to_host']:.1f} kB "
                     "down per step")  # fmt: skip
    if r.get("device_memory_mb") is not None:
        mb = r["device_memory_mb"]
        lines.append(f"  device memory {mb:.0f} MB ({1024 * mb / r['num_envs']:.1f} kB/env)")
    return "\n".join(lines)


def run(
    num_envs: list[int],
    steps: int,
    backend: str | list[str],
    json_path: str | None,
    backend_kwargs: dict[str, Any] | None = None,
    repeats: int = REPEATS,
) -> list[dict[str, Any]]:
    """Benchmark each N (and each backend, when a list), print the results, optionally write
    them as JSON (atomically).

    With several backends, each (N, backend) runs in a child process of its own, backends in
    turn for each N, so that each peak RSS is that backend's alone and both see the same
    machine load; `backend_kwargs` then go to the backends that take them (``num_threads``:
    mujoco, motrix; ``device``: mjwarp).
    """
    backends = [backend] if isinstance(backend, str) else list(backend)
    results = []
    for n in num_envs:
        for name in backends:
            if len(backends) > 1:
                r = _bench_child(n, steps, name, backend_kwargs or {}, repeats)
            else:
                r = bench_env(n, steps, name, backend_kwargs=backend_kwargs, repeats=repeats)
                print(format_result(r), flush=True)
            results.append(r)
    if json_path:
        write_json(json_path, results if len(results) > 1 else results[0])
    return results


def _bench_child(
    num_envs: int, steps: int, backend: str, kwargs: dict[str, Any], repeats: int
) -> dict[str, Any]:
    """`bench_env` in a fresh Python process (it prints its block); returns its result."""
    import subprocess
    import tempfile

    own = {"mujoco": ("num_threads", "mdp"), "motrix": ("num_threads", "mdp"),
           "mjwarp": ("device", "mdp")}  # fmt: skip
    kw = {k: v for k, v in kwargs.items() if k in own.get(backend, ())}
    code = (
        "import json, sys; from gym_motion.bench import bench_env, format_result; "
        "a = json.loads(sys.argv[1]); r = bench_env(a['n'], a['steps'], a['backend'], "
        "backend_kwargs=a['kw'], repeats=a['repeats']); print(format_result(r), flush=True); "
        "json.dump(r, open(a['out'], 'w'))"
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        args = {"n": num_envs, "steps": steps, "backend": backend, "kw": kw}
        args |= {"repeats": repeats, "out": out}
        subprocess.run([sys.executable, "-c", code, json.dumps(args)], check=True)
        with open(out) as f:
            return json.load(f)
