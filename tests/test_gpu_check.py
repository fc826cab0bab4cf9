"""`benchmarks/gpu_check.py`'s CPU dry run: the MuJoCo Warp check a GPU machine runs, at tiny
N on Warp's CPU device, in a process of its own as a GPU machine runs it."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import mujoco_warp  # noqa: F401 - a required dependency: missing, these tests fail, not skip
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_gpu_check_runs_dry_on_the_cpu(tmp_path):
    argv = ["--device", "cpu", "--num-envs", "4", "8", "--steps", "5", "--warm-only",
            "--out", str(tmp_path)]  # fmt: skip
    proc = subprocess.run([sys.executable, "benchmarks/gpu_check.py", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads((tmp_path / "gpu_check.json").read_text())
    assert result["machine"]["device"] == "cpu"
    assert result["startup_warm_cache_n8"]["env_steps_per_s"] > 0
    assert result["reproducibility_deterministic_True_n8"]["bit_equal"] is True  # on a CPU
    parity = result["device_mdp_parity_n4"]  # the device MDP as a learner steps it, on this device
    assert parity["first_flag_mismatch_step"] is None and parity["ended"] > 0
    assert parity["max_obs_diff"] < 1e-3 and parity["max_reward_diff"] < 1e-3
    assert parity["max_robot_pos_diff_m"] < 1e-4
    assert parity["max_reset_state_diff"] == 0.0  # RSI on the device: the host's draws and math
    graphs = parity["graphs"]  # Warp's CPU device records graphs too: every sequence captured
    assert graphs["backend_capture"] and graphs["mdp_capture"]
    assert "step" in graphs["mdp_capture_s"] and "step" in graphs["backend_capture_s"]
    tracking = result["tracking_policy"]  # the shipped tracker through each MDP, on `mjwarp`
    for mdp in ("host", "device"):
        run = tracking[f"tracker_{mdp}_mdp"]
        assert run["steps"] == run["clip_steps"] == 400 and run["mpkpe_mm"] < 100.0
    learners = result["learners_on_device_n4"]  # each adapter over the device MDP, torch there
    assert sorted(learners) == ["rsl_rl", "skrl", "step_on_device", "torchrl"]
    for name, r in learners.items():
        assert r["device_path"] and r["finite"], name
        # an adapter's tensors equal the env's device arrays; the baseline is those arrays
        assert r["equal_to_device_arrays"] is (None if name == "step_on_device" else True), name
        assert r["ended"] > 0 and r["env_steps_per_s"] > 0 and r["tensor_device"] == "cpu"
    for mdp in ("host", "device"):  # the whole env, through `gym-motion bench --mdp`
        rows = result[f"env_against_bare_physics_{mdp}_mdp"]
        assert sorted(rows) == ["4", "8"]
        for row in rows.values():
            assert row["env_steps_per_s"] > 0 and row["bare_steps_per_s"] > 0
            assert math.isclose(row["ratio"], row["env_steps_per_s"] / row["bare_steps_per_s"])
            assert 0.0 < row["outside_physics"] < 1.0
            assert row["device_memory_kb_per_env"] is None  # no memory pool on a CPU
            assert row["bytes_up_per_env_step"] > 0 and row["bytes_down_per_env_step"] > 0
        bench = json.loads((tmp_path / f"bench_{mdp}_mdp.json").read_text())
        assert {r["mdp"] for r in bench} == {mdp}
    # the device MDP's learner path moves less each step than the host MDP's NumPy path
    host, device = (result[f"env_against_bare_physics_{m}_mdp"]["8"] for m in ("host", "device"))
    assert device["bytes_down_per_env_step"] < host["bytes_down_per_env_step"] / 4
    assert "outside physics" in proc.stdout and "exit 0" in proc.stdout


def test_a_failed_section_is_written_as_its_error_and_the_others_still_run(
    tmp_path, monkeypatch, capsys
):
    """One exception on a GPU (here the parity section's) must not lose the other figures of
    a scarce GPU window: it is saved with its traceback, and the script exits 1 naming it."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import gpu_check

    def broken(*args):
        raise RuntimeError("cudaErrorIllegalAddress (a stand-in)")

    monkeypatch.setattr(gpu_check, "mdp_parity", broken)
    monkeypatch.setattr(gpu_check, "startup", lambda *a: {"env_steps_per_s": 1.0})
    monkeypatch.setattr(gpu_check, "reproducibility", lambda *a: {"bit_equal": True})
    monkeypatch.setattr(gpu_check, "learners_on_device", lambda *a: {})
    monkeypatch.setattr(gpu_check, "tracking_policy", lambda *a: {})
    with pytest.raises(SystemExit, match="failed sections .*: device_mdp_parity_n4"):
        gpu_check.main(["--device", "cpu", "--num-envs", "4", "--warm-only", "--no-bench",
                        "--out", str(tmp_path)])  # fmt: skip
    result = json.loads((tmp_path / "gpu_check.json").read_text())
    assert result["device_mdp_parity_n4"]["error"].startswith("RuntimeError: cudaError")
    assert "broken" in result["device_mdp_parity_n4"]["traceback"]
    assert result["startup_warm_cache_n4"] == {"env_steps_per_s": 1.0}
    assert result["reproducibility_deterministic_True_n4"] == {"bit_equal": True}


def test_a_failing_learner_adapter_is_saved_as_its_error_and_the_others_still_step(monkeypatch):
    """A GPU machine may hold a library built for another torch: its adapter's failure must
    not lose the other adapters' figures (here on Warp's CPU device beside MuJoCo)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import gpu_check

    real = gpu_check._learners

    def with_a_broken_one():
        def broken(env, device):
            raise ImportError("undefined symbol (a stand-in)")

        return {**real(), "broken": broken}

    monkeypatch.setattr(gpu_check, "_learners", with_a_broken_one)
    result = gpu_check.learners_on_device(4, "cpu", 5, backend="mujoco")
    assert result["error"] == "failed: broken"
    assert result["broken"]["error"] == "ImportError: undefined symbol (a stand-in)"
    for name in ("rsl_rl", "skrl", "torchrl"):
        assert result[name]["device_path"] and result[name]["equal_to_device_arrays"], name
    assert result["step_on_device"]["device_path"]
