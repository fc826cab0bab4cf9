"""`gym-motion train --library rsl_rl` and `gym-motion eval` on its run folder."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("rsl_rl")

from gym_motion.cli import build_parser, main  # noqa: E402
from gym_motion.cli.train import run_config  # noqa: E402
from gym_motion.training import RunConfig, RunFolder, train, train_env_cfg  # noqa: E402
from gym_motion.training.rsl_rl.config import (  # noqa: E402
    BEYONDMIMIC_PPO,
    PPO_DEFAULTS,
    recorded_ppo,
    runner_cfg,
)

RUN_FILES = ("model.pt", "config.json", "summary.json", "training_curves.png")
SUMMARY_KEYS = {"run", "library", "interrupted", "stopped_by", "env_steps", "iterations",
                "train_wall_s", "env_steps_per_s_overall", "env_steps_per_s_rollout",
                "reset_noise_scale_final", "before", "after", "after_vs_before"}  # fmt: skip


def TrainConfig(**kwargs) -> RunConfig:  # noqa: N802
    """An rsl_rl run without the final video (tests/test_run_folder.py makes one)."""
    return RunConfig(library="rsl_rl", **{"video_seconds": 0.0, **kwargs})


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "rsl"
    argv = ["train", "--library", "rsl_rl", "--num-envs", "4", "--total-steps", "200",
            "--seed", "1", "--out", str(out), "--eval-every", "100", "--no-video",
            "--reset-noise-ramp-steps", "100",
            "--ppo", "hidden_dims=[32,32]"]  # fmt: skip
    assert main(argv) == 0
    return out


def test_cpu_scale_defaults_and_beyondmimic_settings_in_rsl_rl_form():
    cfg = runner_cfg()
    alg = cfg["algorithm"]
    assert (alg["learning_rate"], alg["desired_kl"], alg["num_learning_epochs"]) == (5e-4, 0.02, 8)
    assert cfg["actor"]["distribution_cfg"]["init_std"] == 0.37
    cfg = runner_cfg(BEYONDMIMIC_PPO)
    alg = cfg["algorithm"]
    assert cfg["num_steps_per_env"] == 24 and cfg["obs_groups"]["critic"] == ["critic"]
    assert (alg["learning_rate"], alg["desired_kl"], alg["schedule"]) == (1e-3, 0.01, "adaptive")
    assert (alg["num_learning_epochs"], alg["num_mini_batches"]) == (5, 4)
    assert (alg["entropy_coef"], alg["gamma"], alg["lam"]) == (0.005, 0.99, 0.95)
    assert cfg["actor"]["hidden_dims"] == [512, 256, 128] and cfg["actor"]["obs_normalization"]
    assert cfg["actor"]["distribution_cfg"]["init_std"] == 1.0
    assert "distribution_cfg" not in cfg["critic"]
    assert runner_cfg(obs_mode="policy")["obs_groups"] == {"actor": ["policy"],
                                                           "critic": ["policy"]}  # fmt: skip
    with pytest.raises(ValueError, match="unknown rsl_rl PPO settings"):
        train(TrainConfig(ppo={"n_steps": 8}, out="/nonexistent/never"))
    with pytest.raises(ValueError, match="sampling must be one of"):
        train_env_cfg(sampling="start")  # refused before any work, as for SB3 runs
    assert PPO_DEFAULTS["init_at_random_ep_len"] is True


def test_recorded_settings_come_back_as_overrides():
    for overrides in ({}, BEYONDMIMIC_PPO, {"hidden_dims": [32, 32], "init_std": 0.5}):
        assert recorded_ppo(runner_cfg(overrides)) == dict(overrides)
    assert recorded_ppo(runner_cfg(), init_at_random_ep_len=False) == {
        "init_at_random_ep_len": False
    }


def test_a_run_keeps_its_recorded_settings_after_the_defaults_change(tiny_run, tmp_path):
    # a run made when the defaults were BeyondMimic's, with only its std given
    run = shutil.copytree(tiny_run, tmp_path / "old")
    config = json.loads((run / "config.json").read_text())
    config["train"]["ppo"] = {"hidden_dims": [32, 32], "init_std": 0.37}
    config["rsl_rl"] = runner_cfg({**BEYONDMIMIC_PPO, "hidden_dims": [32, 32], "init_std": 0.37})
    (run / "config.json").write_text(json.dumps(config))
    ppo = RunFolder(run).run_config().ppo
    assert runner_cfg(ppo) == config["rsl_rl"]
    assert ppo["num_learning_epochs"] == 5 and ppo["learning_rate"] == 1e-3


def test_train_cli_library_switch():
    config = run_config(build_parser().parse_args(["train"]))
    assert config.library == "sb3" and config.device == "cpu"
    argv = ["train", "--library", "rsl_rl", "--device", "cuda:0"]
    config = run_config(build_parser().parse_args(argv))
    assert (config.library, config.device) == ("rsl_rl", "cuda:0")


def test_train_writes_the_run_folder(tiny_run):
    for name in RUN_FILES:
        assert (tiny_run / name).is_file(), name
    assert list(tiny_run.glob("events.out.tfevents.*"))
    config = json.loads((tiny_run / "config.json").read_text())
    assert config["library"] == "rsl_rl" and config["train"]["num_envs"] == 4
    assert config["obs_dims"] == {"policy": 160, "critic": 286} and config["num_actions"] == 29
    assert config["rsl_rl"]["actor"]["hidden_dims"] == [32, 32]
    assert config["env"]["rewards"]["anchor_pos"]["weight"] == 0.5
    summary = json.loads((tiny_run / "summary.json").read_text())
    assert set(summary) == SUMMARY_KEYS
    # 3 iterations of 24 steps x 4 envs cover the 200-step budget
    assert summary["env_steps"] == 288 and summary["iterations"] == 3
    assert summary["stopped_by"] == "total_steps" and summary["reset_noise_scale_final"] == 1.0
    for phase in ("before", "after"):
        mean = summary[phase]["mean"]
        assert mean["episode_length"] > 0 and mean["mpkpe_mm"] > 0


def test_tensorboard_has_rsl_rl_and_tracking_keys(tiny_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tiny_run))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    for tag in ("Loss/surrogate", "Train/mean_reward", "reward/body_pos", "episode/length",
                "error/mpkpe_mm", "termination/time_out", "curriculum/reset_noise_scale",
                "eval/episode_length", "eval/mpkpe_mm"):  # fmt: skip
        assert tag in tags, tag
    # ramp over the first 100 of 200 steps, set after each 96-step iteration
    scales = [round(e.value, 4) for e in acc.Scalars("curriculum/reset_noise_scale")]
    assert scales == [0.96, 1.0, 1.0]
    # evaluations at the first iteration ends past 100 and 200 steps
    assert [e.step for e in acc.Scalars("eval/episode_length")] == [1, 2]


def test_eval_loads_the_run_and_repeats_the_after_training_result(tiny_run, capsys):
    folder = RunFolder(tiny_run)
    assert folder.library() == "rsl_rl"
    summary = json.loads((tiny_run / "summary.json").read_text())
    result = folder.evaluate()
    assert result["mean"] == pytest.approx(summary["after"]["mean"])
    assert main(["eval", "--model", str(tiny_run), "--max-seconds", "0.5"]) == 0
    assert "mpkpe_mm" in capsys.readouterr().out
    (clip,) = json.loads((tiny_run / "eval_model.json").read_text())["clips"].values()
    assert clip["max_episode_steps"] == 25


class _RunsCodeWhenUnpickled:
    """Unpickling it calls ``Path.touch(marker)``: what a doctored checkpoint could do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        from pathlib import Path

        return (Path.touch, (Path(self.marker),))


def test_model_pt_loads_as_weights_only_and_a_doctored_one_is_refused(tiny_run, tmp_path):
    import torch

    from gym_motion.training.rsl_rl.policy import load_actor, load_checkpoint

    state = torch.load(tiny_run / "model.pt", weights_only=True)  # the file needs no more
    assert {"actor_state_dict", "iter"} <= set(state)
    assert set(load_checkpoint(tiny_run / "model.pt")) == set(state)
    doctored = tmp_path / "doctored"
    shutil.copytree(tiny_run, doctored)
    marker = tmp_path / "code_ran"
    torch.save({**state, "infos": _RunsCodeWhenUnpickled(marker)}, doctored / "model.pt")
    with pytest.raises(ValueError, match=r"doctored/model.pt: not only tensors and plain") as err:
        load_actor(doctored)
    assert "\n" not in str(err.value)
    assert not marker.exists()
    actor, _ = load_actor(tiny_run)  # the run's own file still loads
    assert not actor.training


def test_export_then_eval_onnx_gives_the_actors_actions_and_episode(
    tiny_run, capsys, tmp_path, same_eval_of_run_and_onnx
):
    pytest.importorskip("onnxruntime")
    import onnx

    from gym_motion.deploy import OnnxPolicy, deploy_metadata
    from gym_motion.envs.config import TrackingEnvCfg, eval_cfg
    from gym_motion.envs.tracking import TrackingVecEnv
    from gym_motion.training.export import export_run

    path = tiny_run / "policy.onnx"
    assert main(["export", "--model", str(tiny_run), "-o", str(path)]) == 0
    out = capsys.readouterr().out
    assert "(rsl_rl run)" in out and "onnxruntime matches torch" in out
    meta = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
    want = deploy_metadata(TrackingEnvCfg())
    assert {k: meta[k] for k in want} == want
    model_policy = RunFolder(tiny_run).policy()
    env = TrackingVecEnv(3, cfg=eval_cfg(), obs_mode="dict", seed=0)
    try:
        onnx_policy = OnnxPolicy(path).bind(env)
        obs, _ = env.reset(seed=0)
        for _ in range(20):
            want = model_policy(obs)
            np.testing.assert_allclose(onnx_policy(obs), want, atol=1e-5, rtol=0)
            obs, *_ = env.step(want)
    finally:
        env.close()
    same_eval_of_run_and_onnx(tiny_run, path)

    # what cannot be exported is refused before anything is written
    bad = tmp_path / "bad"
    shutil.copytree(tiny_run, bad)
    config = json.loads((bad / "config.json").read_text())
    config["rsl_rl"]["obs_groups"]["actor"] = ["policy", "critic"]
    (bad / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"actor reads the observation groups \['policy', 'crit"):
        export_run(bad, bad / "x.onnx")
    (bad / "config.json").write_text(json.dumps(config | {"library": "rllib"}))
    with pytest.raises(ValueError, match="library 'rllib', which gym_motion cannot train or lo"):
        export_run(bad, bad / "x.onnx")
    assert not (bad / "x.onnx").exists()


def test_wall_clock_budget_and_ctrl_c(tmp_path, monkeypatch):
    small = {"hidden_dims": [16], "num_steps_per_env": 8}
    summary = train(TrainConfig(num_envs=2, total_steps=100_000, max_minutes=1e-5, ppo=small,
                                out=str(tmp_path / "budget"), eval_max_seconds=0.1))  # fmt: skip
    assert summary["stopped_by"] == "max_minutes" and summary["env_steps"] == 16
    assert "after" in summary and (tmp_path / "budget" / "model.pt").is_file()

    from rsl_rl.runners import OnPolicyRunner

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(OnPolicyRunner, "learn", interrupted)
    summary = train(TrainConfig(num_envs=2, total_steps=100, ppo=small,
                                out=str(tmp_path / "ctrl_c"), eval_max_seconds=0.1))  # fmt: skip
    assert summary["interrupted"] and "after" not in summary
    for name in ("model.pt", "summary.json", "config.json"):
        assert (tmp_path / "ctrl_c" / name).is_file(), name
    with pytest.raises(FileExistsError, match="already holds a run"):
        train(TrainConfig(out=str(tmp_path / "ctrl_c")))


def test_ctrl_c_in_the_final_evaluation_keeps_the_model_and_summary(tmp_path, monkeypatch):
    """model.pt is saved before the final evaluations; a Ctrl-C in them ends them, not the run."""
    from gym_motion.evaluate import evaluate_policy_on_clips

    calls = []

    def evaluate_then_interrupt(*args, **kwargs):  # the before evaluation, then Ctrl-C
        calls.append(1)
        if len(calls) > 1:
            raise KeyboardInterrupt
        return evaluate_policy_on_clips(*args, **kwargs)

    monkeypatch.setattr("gym_motion.training.skeleton.evaluate_policy_on_clips",
                        evaluate_then_interrupt)  # fmt: skip
    out = tmp_path / "run"
    summary = train(TrainConfig(num_envs=2, total_steps=16, eval_every_steps=1_000_000,
                                ppo={"hidden_dims": [16], "num_steps_per_env": 8}, out=str(out),
                                eval_max_seconds=0.1))  # fmt: skip
    assert summary["interrupted"] and "after" not in summary and len(calls) == 2
    assert (out / "model.pt").is_file()
    assert json.loads((out / "summary.json").read_text())["interrupted"]
