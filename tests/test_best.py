"""best/: the policy of a run's best evaluation from the clip start, kept as a run folder of its
own (``--model RUN/best``), beside the final policy the run ends with."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from gym_motion.training import RunConfig, RunFolder, train  # noqa: E402
from gym_motion.training.config import legacy_curricula  # noqa: E402
from gym_motion.training.export import training_note  # noqa: E402
from gym_motion.training.libraries import LIBRARIES  # noqa: E402
from gym_motion.training.progress import BEST_KEY  # noqa: E402

SETTINGS = {
    "sb3": {"ppo": {"n_steps": 8, "net_arch": [16]}},
    "rsl_rl": {"ppo": {"num_steps_per_env": 8, "hidden_dims": [16]}},
}


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_best_keeps_the_policy_of_the_highest_scoring_evaluation(library, tmp_path):
    pytest.importorskip({"sb3": "stable_baselines3", "rsl_rl": "rsl_rl"}[library])
    out = tmp_path / "run"
    summary = train(RunConfig(
        library=library, num_envs=2, total_steps=64, eval_every_steps=16, eval_max_seconds=0.3,
        video_seconds=0.0, curricula={}, out=str(out), **SETTINGS[library],
    ))  # fmt: skip
    evals = json.loads((out / "progress.json").read_text())["evals"]
    scores = [e[f"eval/{BEST_KEY}"] for e in evals]
    assert [e["timesteps"] for e in evals] == [16, 32, 48, 64] and len(set(scores)) > 1
    first_best = scores.index(max(scores))
    best = RunFolder(out).best_path
    kept = json.loads((best / "summary.json").read_text())
    assert kept["env_steps"] == evals[first_best]["timesteps"]
    assert kept["after"]["mean"][BEST_KEY] == max(scores)
    assert json.loads((best / "config.json").read_text()) == RunFolder(out).config()
    # the policy saved there plays that evaluation again, value for value
    again = RunFolder(best).evaluate(max_seconds=0.3)
    assert again["mean"] == kept["after"]["mean"]
    assert f"{kept['env_steps'] / 1e6:.1f} M env steps" in training_note(best)
    if first_best == len(scores) - 1:  # the final policy is the best: the same evaluation
        assert summary["after"]["mean"][BEST_KEY] == pytest.approx(max(scores))


def test_best_without_periodic_evaluations_is_the_final_policy(tmp_path):
    pytest.importorskip("stable_baselines3")
    out = tmp_path / "run"
    summary = train(RunConfig(
        num_envs=2, total_steps=32, eval_every_steps=0, eval_max_seconds=0.3, video_seconds=0.0,
        curricula={}, out=str(out), **SETTINGS["sb3"],
    ))  # fmt: skip
    kept = json.loads((out / "best" / "summary.json").read_text())
    assert kept["env_steps"] == summary["env_steps"] == 32
    assert kept["after"]["mean"] == summary["after"]["mean"]


def test_a_resumed_run_keeps_the_best_of_both_sessions(tmp_path):
    """best/ records its own score (it may be newer than the checkpoint, if the process was
    killed in between): the resumed run reads it, and only a higher one replaces it."""
    pytest.importorskip("stable_baselines3")
    out = tmp_path / "run"
    common = dict(num_envs=2, eval_every_steps=16, eval_max_seconds=0.3, video_seconds=0.0,
                  curricula={}, out=str(out), **SETTINGS["sb3"])  # fmt: skip
    train(RunConfig(total_steps=32, **common))
    progress = json.loads((out / "progress.json").read_text())
    first = [e[f"eval/{BEST_KEY}"] for e in progress["evals"]]
    assert "best" not in progress  # best/ alone records it
    train(RunConfig(total_steps=64, **common), resume=True)
    evals = json.loads((out / "progress.json").read_text())["evals"]
    scores = [e[f"eval/{BEST_KEY}"] for e in evals]
    assert scores[: len(first)] == first and len(scores) > len(first)
    kept = json.loads((out / "best" / "summary.json").read_text())
    assert kept["env_steps"] == evals[scores.index(max(scores))]["timesteps"]


def test_an_interrupted_best_write_leaves_the_previous_best(tmp_path):
    folder = RunFolder(tmp_path / "run")
    folder.path.mkdir()
    (folder.path / "config.json").write_text("{}")
    evaluation = {"mean": {BEST_KEY: 1.0}}
    folder.write_best(16, 1.0, evaluation, lambda p: (p / "model.zip").write_text("first"))

    def interrupted(path):
        (path / "model.zip").write_text("second, half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        folder.write_best(32, 2.0, {"mean": {BEST_KEY: 2.0}}, interrupted)
    assert (folder.best_path / "model.zip").read_text() == "first"
    assert folder.best_evaluation() == {"timesteps": 16.0, "score": 1.0}
    third = {"mean": {BEST_KEY: 3.0}}
    folder.write_best(48, 3.0, third, lambda p: (p / "model.zip").write_text("3"))
    assert (folder.best_path / "model.zip").read_text() == "3"
    assert sorted(p.name for p in folder.path.iterdir()) == ["best", "config.json"]


def test_the_training_note_names_a_scheduled_horizontal_termination(tmp_path):
    """The ONNX ``training`` metadata of a run with the anchor-horizontal termination says its
    distance and from which step it was on; a run without it says nothing of it."""
    from gym_motion.training import train_env_cfg

    term = {"anchor_horizontal": 12_000_000}
    for i, (env, from_steps, from_s, said) in enumerate((
        (train_env_cfg(), {}, {}, None),
        (train_env_cfg(anchor_horizontal_termination=0.3), {}, {}, "termination 0.3 m, uniform"),
        (train_env_cfg(anchor_horizontal_termination=0.25), term, {},
         "default-pose actions, anchor-horizontal termination 0.25 m from 12 M steps, uniform"),
        (train_env_cfg(anchor_horizontal_termination=0.3), {}, {"anchor_horizontal": 2.0},
         "termination 0.3 m from 2 s training episodes (on at 11.3 M steps), uniform"),
        (train_env_cfg(anchor_horizontal_termination=0.3), {}, {"anchor_horizontal": 9.0},
         "termination 0.3 m from 9 s training episodes (never on), uniform"),
    )):  # fmt: skip
        folder = RunFolder(tmp_path / f"run{i}")
        folder.path.mkdir(parents=True)
        old_fields = {"termination_from_steps": from_steps, "termination_from_episode_s": from_s}
        config = RunConfig(env=env, curricula=legacy_curricula(old_fields))
        folder.write_config(config, [], {}, {})
        switched = {"anchor_horizontal": 11_286_528} if 2.0 in from_s.values() else {}
        folder.write_summary(
            {
                "env_steps": 14e6,
                "train_wall_s": 5790.0,
                **({"terminations_switched_on": switched} if from_s else {}),
            }
        )
        note = training_note(folder.path)
        assert "14.0 M env steps, 5790 s of learning" in note
        assert (said in note) if said else ("termination" not in note), note
