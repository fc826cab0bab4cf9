"""Smoke runs of the training examples (a few thousand env steps each): per-term rewards and
episode statistics reach each library's logger (TensorBoard event files)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("tensorboard")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# what every library's log must carry (gym_motion.envs.stats names)
TRACKING_TAGS = ("reward/body_pos", "reward/action_rate", "rollout/tracking_reward",
                 "episode/length", "episode/return", "termination/anchor_height",
                 "error/mpkpe_mm")  # fmt: skip


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def scalars(log_dir: Path) -> dict[str, list[float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (events,) = {p.parent for p in log_dir.rglob("events.out.tfevents.*")}
    acc = EventAccumulator(str(events))
    acc.Reload()
    return {tag: [e.value for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def check_tracking(tags: dict[str, list[float]], library: str) -> None:
    for tag in TRACKING_TAGS:
        assert tag in tags, f"{library}: {tag} missing"
    assert all(0 < v <= 500 for v in tags["episode/length"])
    assert all(10 < v < 2000 for v in tags["error/mpkpe_mm"])  # mm, episode means


def test_rsl_rl_example(tmp_path):
    pytest.importorskip("rsl_rl")
    runner = load("train_rsl_rl").main(
        ["--num-envs", "32", "--iterations", "4", "--hidden", "64", "64", "--out", str(tmp_path)]
    )  # 4 x 24 x 32 = 3072 env steps
    runner.logger.writer.flush()
    tags = scalars(tmp_path)
    check_tracking(tags, "rsl_rl")
    assert "Loss/surrogate" in tags and len(tags["reward/body_pos"]) == 4


@pytest.mark.parametrize("mdp", ["host", "device"])
def test_skrl_example(tmp_path, mdp):
    """skrl's trainer through `SkrlVecEnv`; with ``--mdp device`` (on Warp's CPU device here)
    the tensors come from the device MDP's arrays."""
    pytest.importorskip("skrl")
    args = ["--num-envs", "32", "--timesteps", "96", "--hidden", "64", "64"]
    load("train_skrl_ppo").main([*args, "--out", str(tmp_path), "--mdp", mdp])
    # 96 x 32 = 3072 env steps, written every 24
    tags = scalars(tmp_path)
    check_tracking(tags, "skrl")
    assert "Loss / Policy loss" in tags and "Reward / Total reward (mean)" in tags


def test_cleanrl_style_example(tmp_path):
    history = load("train_cleanrl_ppo").main(
        ["--num-envs", "32", "--total-steps", "3072", "--hidden", "64", "64",
         "--out", str(tmp_path)]
    )  # fmt: skip
    tags = scalars(tmp_path)
    check_tracking(tags, "cleanrl")
    assert len(history) == 4
    for row in history:
        if "charts/episodic_length" in row:  # gymnasium's RecordEpisodeStatistics agrees
            assert row["charts/episodic_length"] == pytest.approx(row["episode/length"])
            assert row["charts/episodic_return"] == pytest.approx(row["episode/return"], 1e-4)


def test_sb3_example(tmp_path):
    pytest.importorskip("stable_baselines3")
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "train_sb3_ppo.py"), "--num-envs", "32",
         "--total-steps", "3000", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    check_tracking(scalars(tmp_path), "sb3")


@pytest.mark.parametrize("mdp", ["host", "device"])
def test_torchrl_example(tmp_path, mdp):
    """TorchRL's collector through `TorchRLVecEnv`; with ``--mdp device`` (on Warp's CPU device
    here) the tensordicts come from the device MDP's arrays."""
    pytest.importorskip("torchrl")
    args = ["--num-envs", "32", "--total-steps", "3072", "--hidden", "64", "64"]
    history = load("train_torchrl_ppo").main([*args, "--out", str(tmp_path), "--mdp", mdp])
    check_tracking(scalars(tmp_path), "torchrl")
    assert len(history) == 4 and "loss/objective" in history[0]
