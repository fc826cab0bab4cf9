"""`benchmarks/gpu_train_check.py`'s CPU dry run: the script a GPU machine runs, at tiny N."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("stable_baselines3")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_train_check.py"


@pytest.mark.parametrize("mdp", [None, "device"])
def test_the_gpu_training_check_runs_dry_on_the_cpu(tmp_path, capsys, mdp):
    from gym_motion.motion import DEFAULT_MOTION_PATH

    spec = importlib.util.spec_from_file_location("gpu_train_check", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    argv = ["--device", "cpu", "--motion", str(DEFAULT_MOTION_PATH), "--num-envs", "4",
            "--total-steps", "400", "--eval-every", "200", "--eval-max-seconds", "0.5",
            "--out", str(tmp_path)]  # fmt: skip
    if mdp is not None:
        argv += ["--mdp", mdp]
    assert script.main(argv) == 0
    result = json.loads((tmp_path / "gpu_train_check.json").read_text())
    assert result["machine"]["device"] == "cpu"
    assert "--recipe clip --device cpu" in result["command"]
    assert ("--set env.backend.mdp=device" in result["command"]) == (mdp == "device")
    settings = result["settings"]
    assert (settings["device"], settings["backend"], settings["num_envs"]) == ("cpu", "mujoco", 4)
    assert settings["ppo"]["n_steps"] == 24
    assert result["env_steps"] >= 400 and result["env_steps_per_s_overall"] > 0
    assert result["env_steps_per_s_rollout"] > 0 and result["env_steps_per_s_update"] > 0
    profile = result["profile_s_per_update"]
    assert profile["rollout_s"] > 0 and profile["update_s"] > 0 and profile["eval_s"] > 0
    evals = result["evaluations"]
    assert [e["env_steps"] for e in evals] == sorted(e["env_steps"] for e in evals)
    assert evals and all(e["minutes"] is not None and e["episode_length"] > 0 for e in evals)
    assert result["after"]["episode_length"] > 0
    out = capsys.readouterr().out
    assert "env_steps_per_s_update:" in out and "evaluations (env steps" in out
