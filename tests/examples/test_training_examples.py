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


@pytest.fixture
def env_spy(monkeypatch):
    """Records every `TrackingVecEnv` built and how each was stepped: ``step`` (the host path,
    NumPy results) or ``step_on_device`` (the device path, results left in `device_arrays`).
    What the env itself reports (`mdp_device`, `transfer_bytes`), not what the example was
    told, says which MDP ran."""
    from gym_motion.envs import TrackingVecEnv

    envs: list = []
    calls: dict[int, dict[str, int]] = {}
    real_init = TrackingVecEnv.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        envs.append(self)
        calls[id(self)] = {"step": 0, "step_on_device": 0}

    monkeypatch.setattr(TrackingVecEnv, "__init__", init)
    for name in ("step", "step_on_device"):
        real = getattr(TrackingVecEnv, name)

        def counted(self, *args, _real=real, _name=name, **kwargs):
            calls[id(self)][_name] += 1
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(TrackingVecEnv, name, counted)
    return envs, calls


def check_mdp_path(env_spy, mdp: str, vector_steps: int) -> None:
    """The example's one env ran the MDP `mdp` names: with "device", the device MDP on Warp's
    CPU device (`mdp_device`), every step through `step_on_device` and none through `step`, and
    bytes counted over the (emulated) bus; with "host", no device MDP, every step through
    `step`, nothing counted."""
    envs, calls = env_spy
    assert len(envs) == 1, f"{len(envs)} envs built"
    (env,) = envs
    stepped = calls[id(env)]
    if mdp == "device":
        assert env.mdp_device == "cpu"
        assert stepped == {"step": 0, "step_on_device": vector_steps}, stepped
        moved = env.transfer_bytes
        assert moved is not None and moved["to_device"] > 0 and moved["to_host"] > 0, moved
    else:
        assert env.mdp_device is None and env.transfer_bytes is None
        assert stepped == {"step": vector_steps, "step_on_device": 0}, stepped


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
def test_skrl_example(tmp_path, env_spy, mdp):
    """skrl's trainer through `SkrlVecEnv`; with ``--mdp device`` (on Warp's CPU device here)
    the tensors come from the device MDP's arrays."""
    pytest.importorskip("skrl")
    args = ["--num-envs", "32", "--timesteps", "96", "--hidden", "64", "64"]
    load("train_skrl_ppo").main([*args, "--out", str(tmp_path), "--mdp", mdp])
    # 96 x 32 = 3072 env steps, written every 24
    tags = scalars(tmp_path)
    check_tracking(tags, "skrl")
    assert "Loss / Policy loss" in tags and "Reward / Total reward (mean)" in tags
    check_mdp_path(env_spy, mdp, 96)


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
def test_torchrl_example(tmp_path, env_spy, mdp):
    """TorchRL's collector through `TorchRLVecEnv`; with ``--mdp device`` (on Warp's CPU device
    here) the tensordicts come from the device MDP's arrays."""
    pytest.importorskip("torchrl")
    args = ["--num-envs", "32", "--total-steps", "3072", "--hidden", "64", "64"]
    history = load("train_torchrl_ppo").main([*args, "--out", str(tmp_path), "--mdp", mdp])
    check_tracking(scalars(tmp_path), "torchrl")
    assert len(history) == 4 and "loss/objective" in history[0]
    check_mdp_path(env_spy, mdp, 3072 // 32)
