"""`gym_motion.evaluate` is library-neutral: any callable policy, and no SB3 or torch needed.

The no-SB3 checks run in a fresh interpreter whose import system refuses ``stable_baselines3``
and ``torch`` (as after ``pip install -e .`` without the ``[sb3]`` extra) and records every
attempt to import them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gym_motion.cli import main
from gym_motion.evaluate import METRICS, anchor_trace, evaluate_clip, evaluate_policy_on_clips
from gym_motion.motion import DEFAULT_MOTION_PATH
from gym_motion.policy import zero_policy
from gym_motion.training import RunFolder

LINEAR_MAX_SECONDS = 1.0


def linear_policy(obs: np.ndarray) -> np.ndarray:
    """A fixed random linear policy: obs (N, D) float32 -> actions (N, 29) float32."""
    w = np.random.default_rng(0).normal(0.0, 0.05, (obs.shape[1], 29)).astype(np.float32)
    return np.tanh(obs @ w)


# Run in a subprocess: block the SB3 extra, evaluate, drive the CLI; print one JSON line.
NO_SB3_SCRIPT = """
import contextlib, importlib.abc, io, json, sys

BLOCKED = ("stable_baselines3", "torch")


class Blocker(importlib.abc.MetaPathFinder):
    attempts = []

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            self.attempts.append(name)
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None


sys.meta_path.insert(0, Blocker())
tests_dir, tmp = sys.argv[1], sys.argv[2]
sys.path.insert(0, tests_dir)

from gym_motion.cli import main
from gym_motion.evaluate import evaluate_policy_on_clips
from gym_motion.motion import DEFAULT_MOTION_PATH
from test_evaluate import LINEAR_MAX_SECONDS, linear_policy

out = {"zero": evaluate_policy_on_clips([DEFAULT_MOTION_PATH], None)}
out["linear"] = evaluate_policy_on_clips([DEFAULT_MOTION_PATH], linear_policy,
                                         max_seconds=LINEAR_MAX_SECONDS)
out["cli_eval_zero"] = main(["eval", "--policy", "zero", "--max-seconds", "0.2",
                             "--json", tmp + "/zero.json"])
import onnx
from test_deploy import fence_meta, tiny_onnx
onnx.save(tiny_onnx(fence_meta()), tmp + "/tiny.onnx")
with contextlib.redirect_stdout(io.StringIO()):
    out["cli_eval_onnx"] = main(["eval", "--onnx", tmp + "/tiny.onnx", "--max-seconds", "0.2",
                                 "--json", tmp + "/onnx.json"])
out["attempts_while_evaluating"] = list(Blocker.attempts)
err = io.StringIO()
with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
    out["cli_train"] = main(["train", "--total-steps", "10", "--out", tmp + "/run"])
    out["cli_eval_model"] = main(["eval", "--model", tmp + "/run"])
out["cli_errors"] = err.getvalue()
try:
    from gym_motion.adapters.sb3 import SB3VecEnv  # noqa: F401
    out["adapter_import"] = "imported"
except ModuleNotFoundError as exc:
    out["adapter_import"] = exc.name
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def without_sb3(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("no_sb3")
    proc = subprocess.run(
        [sys.executable, "-c", NO_SB3_SCRIPT, str(Path(__file__).parent), str(tmp)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["zero_json"] = json.loads((tmp / "zero.json").read_text())
    result["onnx_json"] = json.loads((tmp / "onnx.json").read_text())
    return result


def test_zero_policy_evaluates_without_sb3_or_torch(without_sb3):
    here = evaluate_policy_on_clips([DEFAULT_MOTION_PATH], None)
    there = without_sb3["zero"]
    # an evaluation without a run folder has no "run" (RunFolder.evaluate adds it; the eval
    # command writes "run": null, test_eval_cli_with_zero_policy_imports_neither_sb3_nor_torch)
    assert set(there) == set(here) == {"policy", "clips", "mean", "library"}
    assert there["policy"] == "zero"
    (clip,) = here["clips"]
    assert Path(clip) == DEFAULT_MOTION_PATH
    assert set(there["clips"][clip]) == set(here["clips"][clip])
    # the zero action falls on the default motion: the episode ends before the clip does
    assert 0 < here["mean"]["episode_length"] < here["clips"][clip]["max_episode_steps"]
    assert there["mean"]["episode_length"] == here["mean"]["episode_length"]
    for metric in METRICS:
        assert there["mean"][metric] == pytest.approx(here["mean"][metric], rel=1e-6), metric


def test_numpy_callable_evaluates_without_sb3_or_torch(without_sb3):
    here = evaluate_policy_on_clips([DEFAULT_MOTION_PATH], linear_policy,
                                    max_seconds=LINEAR_MAX_SECONDS)  # fmt: skip
    there = without_sb3["linear"]
    assert set(there) == set(here)
    assert here["policy"] == "model"
    (clip,) = here["clips"].values()
    assert clip["max_episode_steps"] == 50
    # a different policy from the zero action: different errors
    assert here["mean"]["joint_pos_rad"] != without_sb3["zero"]["mean"]["joint_pos_rad"]
    for metric in METRICS:
        assert there["mean"][metric] == pytest.approx(here["mean"][metric], rel=1e-6), metric


def test_eval_cli_with_zero_policy_imports_neither_sb3_nor_torch(without_sb3):
    assert without_sb3["cli_eval_zero"] == 0
    assert without_sb3["attempts_while_evaluating"] == []
    assert without_sb3["zero_json"]["policy"] == "zero"
    assert without_sb3["zero_json"]["run"] is None
    assert without_sb3["zero_json"]["mean"]["episode_length"] <= 10


def test_eval_cli_with_an_onnx_policy_imports_neither_sb3_nor_torch(without_sb3):
    # tiny_onnx acts 0 whatever it sees: the zero action's episode, through the ONNX path
    assert without_sb3["cli_eval_onnx"] == 0
    assert without_sb3["attempts_while_evaluating"] == []
    onnx_run, zero_run = without_sb3["onnx_json"], without_sb3["zero_json"]
    assert onnx_run["policy"] == "onnx"
    assert onnx_run["mean"] == pytest.approx(zero_run["mean"], rel=1e-6)


def test_sb3_commands_without_sb3_say_what_to_install(without_sb3):
    assert without_sb3["cli_train"] == 2 and without_sb3["cli_eval_model"] == 2
    errors = without_sb3["cli_errors"]
    assert errors.count("stable_baselines3 is not installed") == 2, errors
    assert 'pip install -e ".[sb3]"' in errors and "Traceback" not in errors
    assert without_sb3["adapter_import"] == "stable_baselines3"


def test_evaluate_clip_takes_any_callable_and_checks_its_actions():
    calls = []

    def policy(obs: np.ndarray) -> np.ndarray:
        assert obs.dtype == np.float32 and obs.shape == (2, 160)
        calls.append(len(obs))
        return zero_policy(29)(obs)

    result = evaluate_clip(DEFAULT_MOTION_PATH, policy, episodes=2, max_seconds=0.1)
    assert calls == [2] * 5 and result["episodes"] == 2
    assert result["success_rate"] == 1.0 and result["episode_length"] == 5
    with pytest.raises(ValueError, match="shape"):
        evaluate_clip(DEFAULT_MOTION_PATH, lambda obs: np.zeros((2, 28), np.float32),
                      episodes=2, max_seconds=0.1)  # fmt: skip


def test_dict_observations_reach_the_policy_as_a_dict():
    seen = []

    def policy(obs: dict[str, np.ndarray]) -> np.ndarray:
        seen.append({k: v.shape for k, v in obs.items()})
        return zero_policy(29)(obs)

    evaluate_clip(DEFAULT_MOTION_PATH, policy, obs_mode="dict", max_seconds=0.04)
    assert seen == [{"policy": (1, 160), "critic": (1, 286)}] * 2


def test_anchor_trace_is_the_episode_evaluate_clip_scores_on_the_clips_route():
    """The zero action on the default motion: as many steps as `evaluate_clip`'s episode, the
    reference on the clip's route one frame per step, and the
    horizontal anchor error no larger than the 3-D one `evaluate_clip` averages."""
    from gym_motion.motion import load_clip
    from gym_motion.robots.g1 import G1

    scored = evaluate_clip(DEFAULT_MOTION_PATH, None)
    trace = anchor_trace(DEFAULT_MOTION_PATH, None)
    steps = len(trace["robot"])
    assert steps == scored["episode_length"] < scored["max_episode_steps"]  # it falls
    clip = load_clip(DEFAULT_MOTION_PATH)
    assert trace["route"].shape == (clip.num_frames, 2)
    np.testing.assert_allclose(trace["reference"], trace["route"][1 : steps + 1], atol=1e-5)
    anchor_xy = clip.body_pos_w[:, clip.body_index(G1.anchor_body), :2]
    np.testing.assert_allclose(trace["route"], anchor_xy, atol=1e-6)
    horizontal = np.linalg.norm(trace["robot"] - trace["reference"], axis=1).mean()
    assert 0.2 * scored["anchor_pos_m"] < horizontal <= scored["anchor_pos_m"] + 1e-6


def test_unknown_policy_name_is_refused(tmp_path):
    import argparse

    from gym_motion.cli.evaluate import add_policy_args, policy_source

    with pytest.raises(ValueError, match="'model', 'zero' or a callable"):
        RunFolder(tmp_path).evaluate(policy="random")
    # the model without a run folder: only a RunFolder evaluates its model; the policy options
    # refuse --policy model without --model
    p = argparse.ArgumentParser()
    add_policy_args(p)
    with pytest.raises(SystemExit, match="gym-motion eval: --model RUN_DIR or --onnx"):
        policy_source(p.parse_args(["--policy", "model"]), "eval")


def test_eval_zero_policy_cli(tmp_path):
    path = tmp_path / "zero.json"
    assert main(["eval", "--policy", "zero", "--max-seconds", "0.2", "--json", str(path)]) == 0
    result = json.loads(path.read_text())
    assert result["policy"] == "zero" and result["mean"]["episode_length"] <= 10


@pytest.mark.parametrize("command", ["eval", "render"])
def test_policy_options_are_checked_alike_for_eval_and_render(command):
    import argparse

    from gym_motion.cli.evaluate import add_policy_args, policy_source
    from gym_motion.deploy import DEFAULT_POLICY_PATH

    p = argparse.ArgumentParser()
    add_policy_args(p)
    args = p.parse_args(["--policy", "tracker"])
    policy_source(args, command)
    assert (args.onnx, args.policy) == (str(DEFAULT_POLICY_PATH), None)
    for argv, message in (
        (["--policy", "tracker", "--model", "run"], "--policy tracker runs a shipped ONNX"),
        (["--policy", "jazz", "--onnx", "p.onnx"], "--policy jazz runs a shipped ONNX"),
        (["--onnx", "p.onnx", "--policy", "zero"], "--onnx runs the ONNX policy; drop"),
        (["--policy-meta", "m.yaml"], "--policy-meta goes with --onnx"),
    ):
        with pytest.raises(SystemExit, match=f"gym-motion {command}: {message}"):
            policy_source(p.parse_args(argv), command)
    # the shipped jazz-walk policy names its clip (not shipped) and asks for it
    with pytest.raises(SystemExit, match=r"jazz_walk_tracker\.onnx tracks g1moves_jazzwalk_60fps"
                       r"\.npz .*pass --motion"):  # fmt: skip
        policy_source(p.parse_args(["--policy", "jazz"]), command)


def test_play_randomization_is_mjlabs_play_config():
    """`play_cfg` keeps what mjlab's tracking play config keeps random (joint noise at the
    start, torso centre of mass, foot friction, encoder bias) and nothing else; evaluated so,
    each episode draws its own, and the same seed draws the same."""
    from gym_motion.envs.config import TrackingEnvCfg, play_cfg

    task = TrackingEnvCfg()
    cfg = play_cfg(task)
    assert sorted(cfg.events) == ["encoder_bias", "foot_friction", "torso_com"]
    assert cfg.reset.joint_pos_range == task.reset.joint_pos_range == (-0.1, 0.1)
    assert set(cfg.reset.pose_range) == set(cfg.reset.velocity_range) == {(0.0, 0.0)}
    assert not cfg.obs_noise and cfg.sampling.mode == "start"

    def played(randomization: str, seed: int) -> list[float]:
        result = evaluate_clip(DEFAULT_MOTION_PATH, None, episodes=3, max_seconds=0.5,
                               seed=seed, randomization=randomization)  # fmt: skip
        assert result["randomization"] == randomization
        return result["joint_pos_rad"], result["mpkpe_mm"]

    assert played("play", 0) == played("play", 0)
    assert played("play", 0) != played("play", 1)
    assert played("none", 0) == played("none", 1)
    with pytest.raises(ValueError, match="randomization must be one of"):
        played("mjlab", 0)


def test_several_clips_give_one_row_each_and_a_line_on_the_library(tmp_path):
    """``eval --motion FOLDER``: a row per clip, their mean, and the library's clips whole and
    share of steps tracked from the clips' starts (the zero action: none whole)."""
    import shutil

    from gym_motion.evaluate import evaluate_policy_on_clips, format_table

    for name in ("a.npz", "b.npz"):
        shutil.copy(DEFAULT_MOTION_PATH, tmp_path / name)
    result = evaluate_policy_on_clips([tmp_path], None, max_seconds=2.0)
    lib = result["library"]
    lengths = [r["episode_length"] for r in result["clips"].values()]
    assert lib["clips"] == 2 and lib["clips_whole"] == 0 and lib["steps_total"] == 2 * 100
    assert lib["steps_tracked"] == sum(lengths) and 0 < lib["share_tracked"] < 1
    table = format_table(result)
    assert "a.npz" in table and "b.npz" in table and "mean" in table
    assert f"library: 0 of 2 clips whole; {sum(lengths):.0f} of 200 steps" in table


def test_a_folder_without_clips_is_refused_by_name_and_csvs_are_said_to_be_converted(tmp_path):
    from gym_motion.evaluate import evaluate_policy_on_clips

    (tmp_path / "dance.csv").write_text("0\n")
    with pytest.raises(FileNotFoundError, match=r"no .npz or .pkl .* convert its 1 .csv files"):
        evaluate_policy_on_clips([tmp_path], None, max_seconds=0.1)
