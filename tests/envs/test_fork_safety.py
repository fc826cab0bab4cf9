"""``gymnasium.make_vec(id, vectorization_mode="async")``: its workers live although the parent
runs GNU OpenMP (Numba), because the env makes the async path pick a safe start method."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from gym_motion.envs.fork import choose_async_start_method

# Runs in a fresh interpreter: the test session has long started Numba's pool, and a worker
# forked from it would be killed whatever the env did.
SCRIPT = textwrap.dedent(
    """
    import json, multiprocessing, warnings
    import gymnasium as gym
    import numpy as np
    import gym_motion

    def run(**kw):
        envs = gym.make_vec("GymMotion/G1-Tracking-v0", num_envs=2,
                            vectorization_mode="async", **kw)
        obs, _ = envs.reset(seed=0)
        for _ in range(3):
            obs, rew, term, trunc, _ = envs.step(np.zeros((2, 29), np.float32))
        envs.close()
        return {"shape": list(obs.shape), "finite": bool(np.isfinite(rew).all()),
                "method": multiprocessing.get_start_method(allow_none=True)}

    if __name__ == "__main__":
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            spawned = run(vector_kwargs={"context": "spawn"})  # the user's context is kept
            spawned["warned"] = any("forkserver" in str(w.message) for w in caught)
            default = run()  # default start method: fork, which the env replaces
            default["warned"] = any("forkserver" in str(w.message) for w in caught)
        print(json.dumps({"spawn": spawned, "default": default}))
    """
)


def test_async_make_vec_with_two_workers_runs(tmp_path):
    script = tmp_path / "async_envs.py"
    script.write_text(SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "fork() called from a process already using GNU OpenMP" not in proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    spawned, default = result["spawn"], result["default"]
    assert spawned["shape"] == default["shape"] == [2, 160]
    assert spawned["finite"] and default["finite"]
    assert spawned["method"] == "fork" and not spawned["warned"]  # left alone
    assert default["method"] == "forkserver" and default["warned"]


def test_start_method_is_left_alone_outside_an_async_vector_env():
    import multiprocessing

    before = multiprocessing.get_start_method(allow_none=True)
    assert choose_async_start_method() is None
    assert multiprocessing.get_start_method(allow_none=True) == before
