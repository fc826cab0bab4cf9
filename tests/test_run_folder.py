"""A run of a non-default task goes train -> eval -> render -> export through its folder alone,
for every library: config.json's ``env`` rebuilds the task it trained on."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("torch")

from gym_motion.cli import main  # noqa: E402
from gym_motion.envs.config import RewardTermCfg, TrackingEnvCfg  # noqa: E402
from gym_motion.training import RunConfig, RunFolder, train, train_env_cfg  # noqa: E402
from gym_motion.training.libraries import LIBRARIES  # noqa: E402

# tiny networks and rollouts of each library
SETTINGS = {
    "sb3": {"ppo": {"n_steps": 8, "net_arch": [16]}},
    "rsl_rl": {"ppo": {"num_steps_per_env": 8, "hidden_dims": [16]}},
}


def task() -> TrackingEnvCfg:
    """Not the default task: no state estimation (154 task values in the policy observation),
    the reference anchor's velocity observed (6 more, `anchor_velocity_obs`), a heavier
    anchor-position reward, 4 s episodes, residual actions (exported with the reference
    folded into the graph, evaluated in a task with the default action offset)."""
    cfg = train_env_cfg(state_estimation=False)
    rewards = dict(cfg.rewards)
    old = rewards["anchor_pos"]
    rewards["anchor_pos"] = RewardTermCfg(old.func, 2.0 * old.weight, old.params)
    return replace(
        cfg,
        rewards=rewards,
        episode_length_s=4.0,
        action_offset="reference",
        anchor_velocity_obs=True,
    )


@pytest.fixture(scope="module", params=sorted(LIBRARIES))
def run(request, tmp_path_factory):
    library = request.param
    pytest.importorskip({"sb3": "stable_baselines3", "rsl_rl": "rsl_rl"}[library])
    out = tmp_path_factory.mktemp(library) / "run"
    summary = train(RunConfig(library=library, env=task(), num_envs=2, total_steps=32,
                              out=str(out), eval_every_steps=0, eval_max_seconds=0.3,
                              video_seconds=0.0, **SETTINGS[library]))  # fmt: skip
    return out, summary


def test_config_json_rebuilds_the_task(run):
    out, _ = run
    config = json.loads((out / "config.json").read_text())
    rebuilt = TrackingEnvCfg.from_json(json.dumps(config["env"]))
    assert rebuilt.to_json() == task().to_json()
    assert RunFolder(out).env_cfg().to_json() == task().to_json()
    assert RunFolder(out).run_config().env.to_json() == task().to_json()
    assert not rebuilt.state_estimation and rebuilt.episode_length_s == 4.0
    assert rebuilt.anchor_velocity_obs


def test_eval_from_the_folder_plays_the_runs_task(run, tmp_path):
    out, summary = run
    path = tmp_path / "eval.json"
    argv = ["eval", "--model", str(out), "--max-seconds", "0.3", "--json", str(path)]
    assert main(argv) == 0
    result = json.loads(path.read_text())
    assert result["mean"] == pytest.approx(summary["after"]["mean"])
    # the default weights give another tracking reward: the run's own task was played
    default = RunFolder(out).evaluate(cfg=TrackingEnvCfg(state_estimation=False,
                                                         anchor_velocity_obs=True),
                                      max_seconds=0.3)  # fmt: skip
    assert default["mean"]["episode_length"] == result["mean"]["episode_length"]
    assert default["mean"]["tracking_reward_per_step"] != pytest.approx(
        result["mean"]["tracking_reward_per_step"], rel=1e-6
    )
    # a task without the run's anchor velocity term is refused before any shape error
    with pytest.raises(ValueError, match=r"160-value policy observation \(.*anchor_vel\) but "
                       r"the env asked for .* has 154 values"):  # fmt: skip
        RunFolder(out).evaluate(cfg=TrackingEnvCfg(state_estimation=False), max_seconds=0.1)


def test_render_from_the_folder(run, gl, tmp_path, capsys):
    out, _ = run
    video = tmp_path / "run.mp4"
    argv = ["render", "--model", str(out), "-o", str(video), "--seconds", "0.2", "--no-progress"]
    assert main(argv) == 0
    assert video.is_file() and "wrote" in capsys.readouterr().out


def test_export_from_the_folder_then_eval_the_onnx(run, tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    out, summary = run
    onnx = tmp_path / "run.onnx"
    assert main(["export", "--model", str(out), "-o", str(onnx)]) == 0
    printed = capsys.readouterr().out
    assert "obs (160) -> actions (29)" in printed and "onnxruntime matches torch" in printed
    from gym_motion.deploy import OnnxPolicy

    policy = OnnxPolicy(onnx)
    names = policy.meta.observation_names
    assert names[-1] == "anchor_vel" and "motion_anchor_pos_b" not in names
    assert not policy.env_cfg().state_estimation and policy.env_cfg().anchor_velocity_obs
    path = tmp_path / "onnx.json"
    argv = ["eval", "--onnx", str(onnx), "--max-seconds", "0.3", "--json", str(path)]
    assert main(argv) == 0
    result = json.loads(path.read_text())
    # the ONNX policy reads the 154 task values and the anchor velocity (told by its
    # metadata) and plays the same episode as the run's policy
    assert result["mean"]["episode_length"] == summary["after"]["mean"]["episode_length"]
    assert result["mean"]["mpkpe_mm"] == pytest.approx(summary["after"]["mean"]["mpkpe_mm"],
                                                        rel=1e-4)  # fmt: skip


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_checkpoints_are_whole_runs_while_learning(library, tmp_path, monkeypatch):
    """Every rollout end saves (checkpoint_minutes ~0): each checkpoint loads as the run's
    policy while learning goes on, and the last one is the trained model."""
    pytest.importorskip({"sb3": "stable_baselines3", "rsl_rl": "rsl_rl"}[library])
    learner = LIBRARIES[library]
    save = learner.save
    loaded = []

    def save_and_load(self, path):
        save(self, path)
        loaded.append(RunFolder(path).policy())

    monkeypatch.setattr(learner, "save", save_and_load)
    out = tmp_path / "run"
    train(RunConfig(library=library, num_envs=2, total_steps=48, out=str(out),
                    eval_every_steps=0, eval_max_seconds=0.1, video_seconds=0.0,
                    checkpoint_minutes=1e-9, **SETTINGS[library]))  # fmt: skip
    # 3 rollouts of 8 steps x 2 envs: a checkpoint after each, the final save, and best/ (the
    # final policy, as no periodic evaluation ran)
    assert len(loaded) == 5
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]


def test_the_reference_fold_gives_the_envs_joint_targets(run, tmp_path):
    """The exported graph (reference folded in) run in a task with the default action offset
    sets the joint targets the run's policy sets in its residual task, step by step."""
    pytest.importorskip("onnxruntime")
    import numpy as np

    from gym_motion.deploy import OnnxPolicy
    from gym_motion.envs.config import eval_cfg
    from gym_motion.envs.tracking import TrackingVecEnv
    from gym_motion.training.export import export_run

    out, _ = run
    folder = RunFolder(out)
    export_run(out, tmp_path / "fold.onnx")
    # episodes start along the clip (the same frames in both envs: same seed), where the
    # reference is far from the default pose, and autoreset within the 30 steps
    residual = replace(eval_cfg(folder.env_cfg()), sampling=replace(
        folder.env_cfg().sampling, mode="uniform"))  # fmt: skip
    default = replace(residual, action_offset="default")
    mode = folder.obs_mode()
    envs = [TrackingVecEnv(3, cfg=c, obs_mode=mode, seed=0) for c in (residual, default)]
    try:
        policies = [folder.policy(), OnnxPolicy(tmp_path / "fold.onnx").bind(envs[1])]
        obs = [env.reset(seed=0)[0] for env in envs]
        far = 0.0
        for _ in range(30):
            obs = [env.step(p(o))[0] for env, p, o in zip(envs, policies, obs, strict=True)]
            np.testing.assert_array_equal(envs[1].episode_length, envs[0].episode_length)
            # a reset step (autoreset) holds the zero action, which the tasks place differently
            # and no physics step uses
            own = envs[0].episode_length > 0
            np.testing.assert_allclose(envs[1].actions.targets[own],
                                       envs[0].actions.targets[own], atol=2e-5, rtol=0)  # fmt: skip
            # both tasks observe the last action in BeyondMimic's convention (what a deploy
            # stack feeds back: the graph's output)
            np.testing.assert_allclose(envs[1].state.action_obs, envs[0].state.action_obs,
                                       atol=2e-5, rtol=0)  # fmt: skip
            ref = envs[0].state.ref.joint_pos[own]
            far = max(far, float(np.abs(ref - envs[0].cfg.robot.default_joint_pos).max()))
        assert far > 0.3  # the fold term mattered
    finally:
        for env in envs:
            env.close()


def test_an_exported_policy_names_its_clips_and_eval_asks_for_them(tmp_path, capsys):
    """A run trained on a user's clip exports its file name (motion_files); eval and render of
    that ONNX without --motion refuse in one line naming it, with --motion they play it."""
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("onnxruntime")
    import shutil

    from gym_motion.deploy import OnnxPolicy
    from gym_motion.motion import DEFAULT_MOTION_PATH

    clip = tmp_path / "dance.npz"
    shutil.copyfile(DEFAULT_MOTION_PATH, clip)
    out = tmp_path / "run"
    train(RunConfig(num_envs=2, total_steps=16, out=str(out), motion=[str(clip)],
                    eval_every_steps=0, eval_max_seconds=0.1, video_seconds=0.0,
                    **SETTINGS["sb3"]))  # fmt: skip
    onnx = tmp_path / "dance.onnx"
    assert main(["export", "--model", str(out), "-o", str(onnx)]) == 0
    assert OnnxPolicy(onnx).meta.motion_files == ("dance.npz",)
    for argv in (["eval", "--onnx", str(onnx), "--max-seconds", "0.1"],
                 ["render", "--onnx", str(onnx), "-o", str(tmp_path / "x.mp4")]):  # fmt: skip
        with pytest.raises(SystemExit, match=r"tracks dance\.npz .*pass --motion"):
            main(argv)
    path = tmp_path / "eval.json"
    argv = ["eval", "--onnx", str(onnx), "--motion", str(clip), "--max-seconds", "0.1",
            "--json", str(path)]  # fmt: skip
    assert main(argv) == 0
    assert list(json.loads(path.read_text())["clips"]) == [str(clip)]


OLD_RUN = Path(__file__).parent / "data" / "run_046e225"


def test_a_run_folder_of_an_older_version_evaluates_as_trained(tmp_path):
    """A run folder written before ``observed_frame`` and ``imu_lin_vel`` (tests/data/
    run_046e225) plays the same episode today as at its own commit: its config.json rebuilds
    the conventions it trained on (the current frame, the pelvis origin's velocity)."""
    from gym_motion.managers import observation as obs
    from gym_motion.motion import DEFAULT_MOTION_PATH

    folder = RunFolder(OLD_RUN)
    cfg = folder.env_cfg()
    assert cfg.observed_frame == "current"
    assert cfg.observations["policy"]["base_lin_vel"].func is obs.base_lin_vel
    assert TrackingEnvCfg().observed_frame == "next"  # today's default differs

    def played(run_dir) -> dict:
        out = tmp_path / f"{run_dir.name}.json"
        argv = ["eval", "--model", str(run_dir), "--motion", str(DEFAULT_MOTION_PATH),
                "--json", str(out)]  # fmt: skip
        assert main(argv) == 0
        return next(iter(json.loads(out.read_text())["clips"].values()))

    then = json.loads((OLD_RUN / "eval_at_046e225.json").read_text())
    now = played(OLD_RUN)
    assert now["terminations"] == then.pop("terminations")
    for key, value in then.items():
        assert now[key] == pytest.approx(value, rel=1e-6), key
    # the same policy under today's conventions plays another episode: the check can fail
    today = tmp_path / "today"
    today.mkdir()
    for f in OLD_RUN.iterdir():
        (today / f.name).write_bytes(f.read_bytes())
    config = json.loads((today / "config.json").read_text())
    config["env"]["observed_frame"] = "next"
    (today / "config.json").write_text(json.dumps(config))
    assert played(today)["mpkpe_mm"] != pytest.approx(then["mpkpe_mm"], rel=1e-6)


def test_runs_started_in_the_same_second_get_their_own_folders(tmp_path, monkeypatch):
    """Without --out, each run claims a new ``runs/<date>-<time>`` folder atomically, so two
    runs of the same second never share one (wandb PR #5860); a run that stops before writing
    anything leaves no empty folder behind."""
    import time

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(time, "strftime", lambda fmt, *a: "20261208-010203")
    made = [RunFolder.create(None, "model.zip").path for _ in range(3)]
    assert [p.name for p in made] == ["20261208-010203", "20261208-010203-2", "20261208-010203-3"]
    assert all(p.is_dir() for p in made)
    for p in made:
        p.rmdir()
    (tmp_path / "clip.npz").write_text("not a clip")
    with pytest.raises(ValueError, match="clip.npz"):  # found after the folder is claimed
        train(RunConfig(motion=[str(tmp_path / "clip.npz")], total_steps=64, num_envs=2))
    assert list((tmp_path / "runs").iterdir()) == []
    with pytest.raises(ValueError, match=r"RunConfig.seed \(--seed\) must be below 2\*\*32"):
        RunConfig(seed=2**32)


def _old_run_copy(tmp_path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    for f in OLD_RUN.iterdir():
        (run / f.name).write_bytes(f.read_bytes())
    return run


def test_run_folders_of_other_versions_are_read_with_one_default_per_field_or_refused_in_a_line(
    tmp_path,
):
    """(stable-baselines3 #1320) A key this version does not know names the file, the key and
    both versions; a missing ``train.obs_mode`` is the same mode for the folder and the
    resumed config; a progress.json without ``checkpoints`` resumes, one without
    ``env_steps`` is refused by name."""
    import gym_motion

    run = _old_run_copy(tmp_path)
    config = json.loads((run / "config.json").read_text())
    config["versions"]["gym_motion"] = "9.9.9"
    config["env"]["a_field_of_the_future"] = 1
    (run / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError) as err:
        RunFolder(run).env_cfg()
    line = str(err.value)
    assert "\n" not in line and str(run / "config.json") in line
    assert "a_field_of_the_future" in line and "9.9.9" in line and gym_motion.__version__ in line

    del config["env"]["a_field_of_the_future"]
    del config["train"]["obs_mode"]
    (run / "config.json").write_text(json.dumps(config))
    folder = RunFolder(run)
    assert folder.obs_mode() == folder.run_config().obs_mode == "policy"

    progress = json.loads((run / "progress.json").read_text())
    del progress["checkpoints"]
    (run / "progress.json").write_text(json.dumps(progress))
    assert RunFolder(run).progress()["checkpoints"] == 0
    del progress["env_steps"]
    (run / "progress.json").write_text(json.dumps(progress))
    with pytest.raises(ValueError, match=r"progress.json: no 'env_steps', which resuming needs"):
        RunFolder(run).progress()
