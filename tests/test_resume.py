"""`gym-motion train --resume RUN`: a run stopped at a checkpoint continues in its own folder,
its learner's state (optimiser, normaliser, step count) and the skeleton's (evaluations and
their schedule, curves' history) carried on; only the envs' episodes start anew."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gym_motion.cli import main  # noqa: E402
from gym_motion.training import RunConfig, train  # noqa: E402
from gym_motion.training.libraries import LIBRARIES  # noqa: E402

SETTINGS = {  # SB3 without its KL early stop, so every update takes all its gradient steps
    "sb3": {"ppo": {"n_steps": 8, "net_arch": [16], "target_kl": None}},
    "rsl_rl": {"ppo": {"num_steps_per_env": 8, "hidden_dims": [16]}},
}


def learner_state(library: str, run) -> tuple[int, float]:
    """(optimiser steps, observation normaliser count) of a run folder's saved learner."""
    if library == "sb3":
        import pickle

        from stable_baselines3 import PPO

        model = PPO.load(run / "model.zip", device="cpu")
        steps = model.policy.optimizer.state_dict()["state"][0]["step"]
        with open(run / "vecnormalize.pkl", "rb") as f:
            count = pickle.load(f).obs_rms["policy"].count
        return int(steps), float(count)
    saved = torch.load(run / "model.pt", weights_only=False)
    steps = saved["optimizer_state_dict"]["state"][0]["step"]
    count = saved["actor_state_dict"]["obs_normalizer.count"]
    return int(steps), float(count)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_a_resumed_run_continues_where_its_checkpoint_left_off(library, tmp_path):
    pytest.importorskip({"sb3": "stable_baselines3", "rsl_rl": "rsl_rl"}[library])
    common = dict(library=library, num_envs=2, eval_every_steps=16, eval_max_seconds=0.1,
                  video_seconds=0.0, curricula={}, **SETTINGS[library])  # fmt: skip
    whole = train(RunConfig(total_steps=48, out=str(tmp_path / "whole"), **common))
    part = tmp_path / "part"
    first = train(RunConfig(total_steps=32, out=str(part), **common))
    assert first["env_steps"] == 32 and (part / "progress.json").is_file()
    # the same 32 steps as the uninterrupted run's first two rollouts
    resumed = train(RunConfig(total_steps=48, out=str(part), **common), resume=True)
    assert resumed["env_steps"] == whole["env_steps"] == 48
    assert resumed["resumed_from_env_steps"] == 32 and resumed["before"] == whole["before"]
    # the optimiser took the same steps; the normaliser saw the same observations, and SB3's
    # (VecNormalize, updated on resets too) also the resumed envs' first ones, one per env
    steps, count = learner_state(library, part)
    whole_steps, whole_count = learner_state(library, tmp_path / "whole")
    assert steps == whole_steps
    assert count == pytest.approx(whole_count + (2 if library == "sb3" else 0))
    progress = json.loads((part / "progress.json").read_text())
    wanted = json.loads((tmp_path / "whole" / "progress.json").read_text())
    assert progress["env_steps"] == 48 and progress["learn_s"] > first["train_wall_s"] * 0.5
    assert [e["timesteps"] for e in progress["evals"]] == [e["timesteps"] for e in wanted["evals"]]
    # best/ is the best of both sessions' evaluations
    scores = [e["eval/tracking_reward_per_clip_step"] for e in progress["evals"]]
    best = json.loads((part / "best" / "summary.json").read_text())
    assert best["after"]["mean"]["tracking_reward_per_clip_step"] == max(scores)
    assert best["env_steps"] == progress["evals"][scores.index(max(scores))]["timesteps"]
    assert [h["timesteps"] for h in progress["history"]] == [
        h["timesteps"] for h in wanted["history"]
    ]
    if library == "sb3":  # one progress.csv, the rows of both sessions
        with open(part / "progress.csv") as f:
            rows = list(csv.DictReader(f))
        assert [int(r["time/total_timesteps"]) for r in rows] == [16, 32, 32, 48, 48]


def test_a_resumed_sb3_run_writes_progress_csv_after_the_earlier_rows_not_at_its_end(tmp_path):
    """The rows of the earlier sessions up to the checkpoint are in progress.csv while the
    resumed session runs (a session killed before it closes loses none); rows past the
    checkpoint (logged after it by a killed session) are dropped; CRLF line ends (what earlier
    versions wrote on resume) and blank lines are read; a new column keeps every row aligned."""
    pytest.importorskip("stable_baselines3")
    from gym_motion.training.sb3 import progress_logger

    steps = "time/total_timesteps"
    earlier = f"{steps},b\r\n\r\n16,2\r\n32,4\r\n48,6\r\n".encode()
    (tmp_path / "progress.csv").write_bytes(earlier)
    logger = progress_logger(tmp_path, resumed_at=32)
    try:
        logger.record(steps, 48)
        logger.record("c", 6)
        logger.dump(48)
        with open(tmp_path / "progress.csv", newline="") as f:
            rows = list(csv.DictReader(f))
    finally:
        logger.close()
    assert rows == [{steps: "16", "b": "2", "c": ""}, {steps: "32", "b": "4", "c": ""},
                    {steps: "48", "b": "", "c": "6"}]  # fmt: skip


def test_sigterm_stops_a_background_run_as_ctrl_c_does(tmp_path):
    """``kill PID`` on a run started as ``nohup gym-motion train ... &`` (SIGINT ignored, as in a
    background job): exit code 130, the model and an interrupted summary.json saved, and the
    run can be resumed from them."""
    import signal
    import subprocess
    import sys
    import time

    pytest.importorskip("stable_baselines3")
    out = tmp_path / "run"
    code = "import sys; from gym_motion.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = [sys.executable, "-c", code, "train", "--num-envs", "2", "--total-steps", "100000000",
            "--out", str(out), "--no-video", "--eval-every", "0", "--checkpoint-minutes", "60",
            "--ppo", "n_steps=8", "net_arch=[16]"]  # fmt: skip

    def background():  # what ``&`` does to a job in a non-interactive shell
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    run = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           preexec_fn=background)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not (out / "progress.csv").is_file() or (out / "progress.csv").stat().st_size == 0:
            assert run.poll() is None and time.monotonic() < deadline, run.stderr.read()
            time.sleep(0.2)  # learning has started: its first update is logged
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=120) == 130
    finally:
        run.kill()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] and summary["stopped_by"] == "interrupt"
    assert 0 < summary["env_steps"] < 100_000_000 and (out / "model.zip").is_file()
    assert main(["train", "--resume", str(out), "--total-steps", str(summary["env_steps"] + 16),
                 "--no-video"]) == 0  # fmt: skip


def test_resume_cli_keeps_the_runs_settings_and_refuses_a_folder_without_a_checkpoint(
    tmp_path, capsys
):
    pytest.importorskip("stable_baselines3")
    out = tmp_path / "run"
    argv = ["train", "--num-envs", "2", "--total-steps", "16", "--out", str(out), "--no-video",
            "--eval-every", "0", "--ppo", "n_steps=8", "net_arch=[16]", "--action-offset",
            "reference"]  # fmt: skip
    assert main(argv) == 0
    assert main(["train", "--resume", str(out), "--total-steps", "32", "--no-video"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    config = json.loads((out / "config.json").read_text())
    assert summary["env_steps"] == 32 and summary["resumed_from_env_steps"] == 16
    assert config["train"]["num_envs"] == 2 and config["train"]["total_steps"] == 32
    assert config["env"]["action_offset"] == "reference" and config["ppo"]["n_steps"] == 8
    capsys.readouterr()
    assert main(["train", "--resume", str(tmp_path / "none")]) == 2
    assert "no gym-motion train run to resume" in capsys.readouterr().err


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_a_resumed_run_continues_the_adaptive_samplers_statistics(library, tmp_path):
    """(whole_body_tracking #68, rsl_rl #89) With adaptive starts, the checkpoint keeps the
    sampler's failure statistics and the resumed run starts from them: its envs' sampler holds
    them after the learner's first (seeded) reset, not a uniform one."""
    pytest.importorskip({"sb3": "stable_baselines3", "rsl_rl": "rsl_rl"}[library])
    from gym_motion.training import train_env_cfg
    from gym_motion.training.run_folder import RunFolder

    common = dict(library=library, num_envs=4, eval_every_steps=0, video_seconds=0.0,
                  curricula={}, env=train_env_cfg(sampling="adaptive"),
                  **SETTINGS[library])  # fmt: skip
    run = tmp_path / "run"
    train(RunConfig(total_steps=480, out=str(run), **common))
    saved = RunFolder(run).progress()["sampler"]["failure_ema"]
    assert sum(saved) > 0  # episodes failed: the sampler learnt something
    seen = {}
    from gym_motion.envs.tracking import TrackingVecEnv

    original = TrackingVecEnv.reset

    def spy(self, *a, **kw):  # the sampler's state after each reset of the resumed run's env
        out = original(self, *a, **kw)
        seen.setdefault("first", list(self.command.sampler.failure_ema))
        return out

    TrackingVecEnv.reset = spy
    try:
        train(RunConfig(total_steps=512, out=str(run), **common), resume=True)
    finally:
        TrackingVecEnv.reset = original
    assert seen["first"] == pytest.approx(saved, rel=0, abs=0)


def test_a_run_whose_clips_moved_resumes_with_the_same_clips_at_their_new_path(tmp_path, capsys):
    """The run folder records its clips' SHA-256: with the clips moved, --resume says to give
    --motion; --motion with the same files resumes, with another file it is refused by name."""
    pytest.importorskip("stable_baselines3")
    import shutil

    from gym_motion.motion import DEFAULT_MOTION_PATH

    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    shutil.copy(DEFAULT_MOTION_PATH, old / "dance.npz")
    out = tmp_path / "run"
    argv = ["train", "--num-envs", "2", "--total-steps", "16", "--out", str(out), "--no-video",
            "--eval-every", "0", "--ppo", "n_steps=8", "net_arch=[16]", "--motion",
            str(old / "dance.npz")]  # fmt: skip
    assert main(argv) == 0
    shutil.move(old, new)
    capsys.readouterr()
    assert main(["train", "--resume", str(out), "--total-steps", "32"]) == 2
    err = capsys.readouterr().err
    assert "not there any more" in err and "--motion" in err
    other = tmp_path / "other.npz"
    data = dict(np.load(DEFAULT_MOTION_PATH))
    data["joint_pos"] = data["joint_pos"] + np.float32(0.01)
    np.savez(other, **data)
    assert main(["train", "--resume", str(out), "--total-steps", "32", "--motion", str(other)]) == 2
    assert "is not the run's clip 1" in capsys.readouterr().err
    resumed = [
        "train",
        "--resume",
        str(out),
        "--total-steps",
        "32",
        "--no-video",
        "--motion",
        str(new),
    ]  # fmt: skip  (a folder holding the same file)
    assert main(resumed) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["train"]["motion"] == [str(new.resolve())]
    assert json.loads((out / "summary.json").read_text())["env_steps"] == 32
    # eval of the run finds its clips gone and says how to give them
    shutil.move(new, tmp_path / "newer")
    assert main(["eval", "--model", str(out)]) == 2
    assert "not there any more; give the clips to play with --motion" in capsys.readouterr().err


def test_a_gpu_run_resumed_on_a_machine_without_one_says_that_device_cpu_resumes_it(
    tmp_path, capsys
):
    pytest.importorskip("stable_baselines3")
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    out = tmp_path / "run"
    argv = ["train", "--num-envs", "2", "--total-steps", "16", "--out", str(out), "--no-video",
            "--eval-every", "0", "--ppo", "n_steps=8", "net_arch=[16]"]  # fmt: skip
    assert main(argv) == 0
    config = json.loads((out / "config.json").read_text())
    config["train"]["device"] = "cuda"  # as a GPU machine wrote it
    (out / "config.json").write_text(json.dumps(config))
    capsys.readouterr()
    assert main(["train", "--resume", str(out), "--total-steps", "32"]) == 2
    assert "--device cpu (or another device) resumes it here" in capsys.readouterr().err
    assert main(["train", "--resume", str(out), "--total-steps", "32", "--device", "cpu",
                 "--no-video"]) == 0  # fmt: skip
