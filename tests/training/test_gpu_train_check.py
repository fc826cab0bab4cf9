"""`benchmarks/gpu_train_check.py`'s CPU dry run: the script a GPU machine runs, at tiny N."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("stable_baselines3")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_train_check.py"


@pytest.mark.parametrize("mdp", [None, "device"])
def test_the_gpu_training_check_runs_dry_on_the_cpu(tmp_path, capsys, monkeypatch, mdp):
    from gym_motion.envs import TrackingVecEnv
    from gym_motion.motion import DEFAULT_MOTION_PATH
    from gym_motion.training.sb3.learner import SB3Learner

    # what the learner was given and how it stepped it: the env's own record of its MDP, not
    # the command line the script built
    learned: list = []
    stepped = {"step": 0, "step_on_device": 0}
    real_init = SB3Learner.__init__

    def init(self, config, env, *args, **kwargs):
        learned.append(env)
        real_init(self, config, env, *args, **kwargs)

    monkeypatch.setattr(SB3Learner, "__init__", init)
    for name in stepped:
        real = getattr(TrackingVecEnv, name)

        def counted(self, *args, _real=real, _name=name, **kwargs):
            if learned and self is learned[0]:
                stepped[_name] += 1
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(TrackingVecEnv, name, counted)

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
    (env,) = learned
    steps = result["env_steps"] // 4  # vector steps of the 4 envs
    # TrackingPPO reads the NumPy results on torch's CPU (its device rollouts are for a GPU:
    # `_uses_device_path`), so every step is `step`, also over the device MDP
    assert stepped == {"step": steps, "step_on_device": 0}, stepped
    if mdp == "device":  # the device MDP ran, on Warp's CPU device, its copies counted
        assert env.mdp_device == "cpu"
        moved = env.transfer_bytes
        assert moved is not None and moved["to_device"] > 0 and moved["to_host"] > 0, moved
    else:  # auto on the CPU: the host MDP
        assert env.mdp_device is None and env.transfer_bytes is None
    out = capsys.readouterr().out
    assert "env_steps_per_s_update:" in out and "evaluations (env steps" in out
