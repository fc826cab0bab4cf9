"""`gym-motion train` and `gym-motion eval`: a tiny run writes every file, eval reads it back."""

from __future__ import annotations

import contextlib
import csv
import json

import pytest

from gym_motion.adapters.sb3.callbacks import KLAdaptiveLR
from gym_motion.cli import build_parser, main
from gym_motion.cli.train import print_summary, run_config
from gym_motion.curriculum import (
    CurriculumTermCfg,
    reset_noise_ramp,
    reset_noise_scale,
    termination_from_episode_s,
    termination_from_steps,
)
from gym_motion.training import RunConfig, RunFolder, train, train_env_cfg

RUN_FILES = ("model.zip", "vecnormalize.pkl", "config.json", "summary.json",
             "training_curves.png", "progress.csv")  # fmt: skip

SUMMARY_KEYS = {"run", "library", "interrupted", "stopped_by", "env_steps", "train_wall_s",
                "env_steps_per_s_overall", "env_steps_per_s_rollout", "reset_noise_scale_final",
                "before", "after", "after_vs_before", "video"}  # fmt: skip


def by_steps_term(term: str, steps: int) -> CurriculumTermCfg:
    return CurriculumTermCfg(termination_from_steps, {"term": term, "steps": steps})


def by_length_term(term: str, seconds: float) -> CurriculumTermCfg:
    return CurriculumTermCfg(termination_from_episode_s, {"term": term, "seconds": seconds})


def switches(config: RunConfig) -> dict[str, tuple[str, float]]:
    """The terminations the run's curricula switch on: term -> ("steps" | "seconds", value)."""
    out = {}
    for c in config.curricula.values():
        if "term" in c.params:
            kind = "steps" if c.func is termination_from_steps else "seconds"
            out[c.params["term"]] = (kind, c.params[kind])
    return out


def test_kl_adaptive_lr():
    s = KLAdaptiveLR(1e-3, desired_kl=0.01)
    s.update(0.05)
    assert s(1.0) == pytest.approx(1e-3 / 1.5)
    s.update(0.001)
    assert s(0.5) == pytest.approx(1e-3)
    s.update(0.01)
    assert s(0.0) == pytest.approx(1e-3)
    s.update(float("nan"))
    assert s(0.0) == pytest.approx(1e-3)


def test_kl_adaptive_lr_fixed_without_desired_kl():
    s = KLAdaptiveLR(3e-4, desired_kl=None)
    s.update(1.0)
    s.update(0.0)
    assert s(0.0) == pytest.approx(3e-4)


def test_reset_noise_ramp():
    assert [reset_noise_scale(p, 0.5) for p in (0.0, 0.25, 0.5, 0.9, 1.2)] == [
        0.0, 0.5, 1.0, 1.0, 1.0
    ]  # fmt: skip
    assert reset_noise_scale(0.0, 0.0) == 1.0
    with pytest.raises(
        ValueError, match=r"curricula\['reset_noise'\].params\['steps'\] must be an"
    ):
        RunConfig(curricula={"reset_noise": CurriculumTermCfg(reset_noise_ramp, {"steps": 0.5})})


def test_train_cli_flags_and_defaults():
    args = vars(build_parser().parse_args(["train"]))
    args.pop("func")
    assert args == {
        "command": "train", "motion": [], "num_envs": None, "total_steps": None, "resume": None,
        "init": None, "max_minutes": None, "backend": None, "seed": None, "out": None,
        "obs_mode": None,
        "no_state_estimation": False, "num_threads": None, "reset_noise_ramp_steps": None,
        "ppo": [], "settings": [], "imports": [],
        "eval_every": None, "no_video": False, "library": None, "device": None,
        "distributed": False, "algo": None, "sac": [], "sampling": None,
        "checkpoint_minutes": None, "action_offset": None, "samplers": None, "recipe": None,
        "envs_per_sampler": None, "ray_address": None, "anchor_horizontal_termination": None,
        "anchor_horizontal_termination_from": None,
        "anchor_horizontal_termination_from_episode_s": None, "policy_obs_noise": [],
        "anchor_horizontal_termination_grace_s": None,
        "anchor_velocity_obs": False,
    }  # fmt: skip
    # the observation mode follows the algorithm unless given
    for argv, mode in ((["train"], "dict"), (["train", "--algo", "sac"], "policy"),
                       (["train", "--obs-mode", "policy"], "policy")):  # fmt: skip
        assert run_config(build_parser().parse_args(argv)).obs_mode == mode
    # task flags land in the run's TrackingEnvCfg
    argv = ["train", "--no-state-estimation", "--sampling", "adaptive", "--num-threads", "1"]
    env = run_config(build_parser().parse_args(argv)).env
    assert not env.state_estimation and env.sampling.mode == "adaptive"
    assert env.backend.name == "mujoco" and env.backend.num_threads == 1
    assert "anchor_horizontal" not in env.terminations  # BeyondMimic's three terms by default
    argv = ["train", "--anchor-horizontal-termination", "0.5"]
    env = run_config(build_parser().parse_args(argv)).env
    assert env.terminations["anchor_horizontal"].params == {"threshold": 0.5}
    assert type(env).from_json(env.to_json()) == env  # config.json keeps it for eval and export
    env = run_config(build_parser().parse_args(["train", "--obs-noise", "anchor_pos=0.05"])).env
    assert env.observations["policy"]["anchor_pos"].noise == 0.05
    assert type(env).from_json(env.to_json()) == env
    vel = ["train", "--anchor-velocity-obs", "--obs-noise", "anchor_vel=0.1"]
    env = run_config(build_parser().parse_args(vel)).env
    assert env.anchor_velocity_obs and "anchor_vel" in env.observations["critic"]
    assert env.observations["policy"]["anchor_vel"].noise == 0.1
    assert type(env).from_json(env.to_json()) == env
    with pytest.raises(ValueError, match="anchor_vel: the policy observes that term only with"):
        run_config(build_parser().parse_args(vel[:1] + vel[2:]))
    with pytest.raises(ValueError, match="no term 'anchor_position'"):
        run_config(build_parser().parse_args(["train", "--obs-noise", "anchor_position=0.05"]))
    blind = ["train", "--no-state-estimation", "--obs-noise", "base_lin_vel=0.1", "joint_vel=1"]
    with pytest.raises(ValueError, match="--obs-noise base_lin_vel: --no-state-estimation"):
        run_config(build_parser().parse_args(blind))
    with pytest.raises(SystemExit):  # argparse: "argument --anchor-horizontal-termination"
        build_parser().parse_args(["train", "--anchor-horizontal-termination", "0"])
    with pytest.raises(ValueError, match="horizontal termination distance must be > 0 m"):
        train_env_cfg(anchor_horizontal_termination=float("nan"))
    argv += ["--anchor-horizontal-termination-from", "10000000"]
    config = run_config(build_parser().parse_args(argv))
    assert switches(config) == {"anchor_horizontal": ("steps", 10_000_000)}
    assert RunConfig.from_dict(config.to_dict(), config.env) == config
    with pytest.raises(ValueError, match="-from needs --anchor-horizontal-termination METRES"):
        run_config(build_parser().parse_args(argv[:1] + argv[3:]))
    by_length = argv[:3] + ["--anchor-horizontal-termination-from-episode-s", "2"]
    config = run_config(build_parser().parse_args(by_length))
    assert switches(config) == {"anchor_horizontal": ("seconds", 2.0)}
    assert RunConfig.from_dict(config.to_dict(), config.env) == config
    with pytest.raises(ValueError, match="-from-episode-s needs --anchor-horizontal-termination"):
        run_config(build_parser().parse_args(by_length[:1] + by_length[3:]))
    with pytest.raises(ValueError, match="both switch the term on: give one"):
        run_config(build_parser().parse_args(argv + by_length[3:]))
    with pytest.raises(SystemExit):  # argparse: "... must be a number > 0"
        build_parser().parse_args(by_length[:4] + ["0"])
    for bad in (float("nan"), float("inf"), 10.0):  # 10 s: the episodes' time limit
        with pytest.raises(ValueError, match=r"\['seconds'\] must be > 0 and below the ep"):
            RunConfig(curricula={"h": by_length_term("anchor_height", bad)})
    with pytest.raises(ValueError, match="'anchor_height' is switched on by two curriculum terms"):
        RunConfig(curricula={"a": by_steps_term("anchor_height", 5),
                             "b": by_length_term("anchor_height", 1.0)})  # fmt: skip
    with pytest.raises(ValueError, match="'anchor_horizontal', which is not one of the task's"):
        RunConfig(curricula={"h": by_steps_term("anchor_horizontal", 5)})
    with pytest.raises(ValueError, match=r"\['h'\].params\['steps'\] must be an integer >= 0"):
        RunConfig(curricula={"h": by_steps_term("anchor_height", -1)})
    # config.json of runs before curricula were terms: the same curricula
    old = {**config.to_dict(), "reset_noise_ramp_steps": 0,
           "termination_from_episode_s": {"anchor_horizontal": 2.0}}  # fmt: skip
    del old["curricula"]
    assert RunConfig.from_dict(old, config.env).curricula == {
        "reset_noise": CurriculumTermCfg(reset_noise_ramp, {"steps": 0}),
        "anchor_horizontal": by_length_term("anchor_horizontal", 2.0),
    }
    # Ray samplers: K x N envs in all
    argv = ["train", "--samplers", "2", "--envs-per-sampler", "128", "--ray-address", "auto"]
    config = run_config(build_parser().parse_args(argv))
    assert (config.samplers, config.num_envs, config.ray_address) == (2, 256, "auto")
    with pytest.raises(ValueError, match="--envs-per-sampler needs --samplers"):
        run_config(build_parser().parse_args(["train", "--envs-per-sampler", "8"]))
    with pytest.raises(ValueError, match="must split evenly over 3 samplers"):
        run_config(build_parser().parse_args(["train", "--samplers", "3", "--num-envs", "8"]))


def test_the_clip_recipe_is_its_documented_flags_and_a_flag_replaces_its_value():
    def config(*argv):
        return run_config(build_parser().parse_args(["train", *argv]))

    assert config() == RunConfig()  # no recipe: the default motion's settings
    assert config().env.action_offset == "default"
    clip = config("--recipe", "clip")
    assert clip == config("--action-offset", "reference", "--anchor-horizontal-termination",
                          "0.2", "--anchor-horizontal-termination-from-episode-s", "2",
                          "--total-steps", "26000000")  # fmt: skip
    assert clip.env.terminations["anchor_horizontal"].params == {"threshold": 0.2}
    mine = config("--recipe", "clip", "--total-steps", "16000000",
                  "--anchor-horizontal-termination", "0.3",
                  "--action-offset", "default")  # fmt: skip
    assert (mine.total_steps, mine.env.action_offset, switches(mine)) == (
        16_000_000, "default", {"anchor_horizontal": ("seconds", 2.0)})  # fmt: skip
    assert mine.env.terminations["anchor_horizontal"].params == {"threshold": 0.3}
    # switched on by env steps instead of by episode length (0: from the first step)
    for steps in (12_000_000, 0):
        by_steps = config("--recipe", "clip", "--anchor-horizontal-termination-from", str(steps))
        assert switches(by_steps) == ({"anchor_horizontal": ("steps", steps)} if steps else {})
        assert "anchor_horizontal" in by_steps.env.terminations
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--recipe", "dance"])
    graced = config("--recipe", "clip", "--anchor-horizontal-termination-grace-s", "1")
    assert graced.env.terminations["anchor_horizontal"].params == {"threshold": 0.2,
                                                                   "grace_steps": 50}  # fmt: skip
    assert type(graced.env).from_json(graced.env.to_json()) == graced.env
    with pytest.raises(ValueError, match="-grace-s needs --anchor-horizontal-termination METRES"):
        config("--anchor-horizontal-termination-grace-s", "1")


def test_the_clip_recipe_on_a_gpu_adds_its_gpu_settings(monkeypatch):
    import gym_motion.training.recipes as recipes

    def config(*argv):
        return run_config(build_parser().parse_args(["train", *argv]))

    cpu = config("--recipe", "clip")
    assert (cpu.num_envs, cpu.env.backend.name, cpu.device, cpu.eval_every_steps) == (
        256, "mujoco", "cpu", 500_000)  # fmt: skip
    with (
        pytest.raises(ValueError, match="device 'cuda' is not available here")
        if not (recipes.on_gpu("auto"))
        else contextlib.nullcontext()
    ):
        config("--recipe", "clip", "--device", "cuda")  # a CPU build refuses before any work
    monkeypatch.setattr(recipes, "on_gpu", lambda device: device != "cpu")
    gpu = config("--recipe", "clip", "--device", "cuda")
    assert (gpu.num_envs, gpu.env.backend.name, gpu.device, gpu.eval_every_steps) == (
        1024, "mjwarp", "cuda", 1_000_000)  # fmt: skip
    assert gpu.total_steps == cpu.total_steps
    assert gpu.env.terminations == cpu.env.terminations
    # a flag replaces a GPU setting as it does a recipe's; the settings reach config.json
    mine = config("--recipe", "clip", "--device", "auto", "--num-envs", "4096",
                  "--backend", "mujoco")  # fmt: skip
    assert (mine.num_envs, mine.env.backend.name) == (4096, "mujoco")
    recorded = gpu.to_dict()
    assert (recorded["num_envs"], recorded["eval_every_steps"]) == (1024, 1_000_000)
    assert json.loads(gpu.env.to_json())["backend"]["name"] == "mjwarp"
    assert config("--device", "cuda").num_envs == 256  # no recipe: nothing added


def test_progress_switches_a_termination_on_at_its_env_step():
    """`Progress` keeps a scheduled term off before its step, on from it, and on resume."""
    from types import SimpleNamespace

    from gym_motion.training.progress import Progress

    env_cfg = train_env_cfg(anchor_horizontal_termination=0.3)
    config = RunConfig(env=env_cfg, eval_every_steps=0, checkpoint_minutes=0.0,
                       curricula={"h": by_steps_term("anchor_horizontal", 1000)})  # fmt: skip
    env = SimpleNamespace(reset_noise_scale=None, inactive_terminations=None)
    progress = Progress(config, env, evaluate=None)
    seen = []
    for steps in (0, 999, 1000, 5000):
        progress.after_rollout(steps)
        seen.append(env.inactive_terminations)
    assert seen == [("anchor_horizontal",), ("anchor_horizontal",), (), ()]
    progress.restore({**progress.state(999), "env_steps": 999})
    assert env.inactive_terminations == ("anchor_horizontal",)
    plain = SimpleNamespace(reset_noise_scale=None)  # no curriculum: the attribute is not touched
    Progress(RunConfig(env=env_cfg, eval_every_steps=0), plain, evaluate=None).after_rollout(0)
    assert not hasattr(plain, "inactive_terminations")


def test_progress_switches_a_termination_on_when_training_episodes_last_long_enough():
    """A term of ``termination_from_episode_s`` stays off until the training episodes' mean
    length over the last `Progress.episode_window_steps` reaches its seconds (not before that
    many env steps, nor on rollouts without ended episodes), then stays on, also on resume."""
    from types import SimpleNamespace

    from gym_motion.training.progress import Progress

    env_cfg = train_env_cfg(anchor_horizontal_termination=0.3)
    config = RunConfig(env=env_cfg, eval_every_steps=0, checkpoint_minutes=0.0,
                       curricula={"h": by_length_term("anchor_horizontal", 2.0)})  # fmt: skip
    env = SimpleNamespace(reset_noise_scale=None, inactive_terminations=None)
    progress = Progress(config, env, evaluate=None)
    progress.episode_window_steps = 100
    assert env.inactive_terminations == ("anchor_horizontal",)
    off = ("anchor_horizontal",)
    # (env steps, mean episode length in 50 Hz steps of the rollout's ended episodes or None)
    rollouts = [(50, 150.0), (100, 30.0), (150, None), (200, 150.0), (250, 30.0), (300, 10.0)]
    seen = []
    for steps, length in rollouts:
        progress.after_rollout(steps, None if length is None else {"episode/length": length})
        seen.append(env.inactive_terminations)
    # 50: 3 s, but under the window's 100 env steps; 100: (150 + 30) / 2 x 0.02 s = 1.8 s;
    # 150: 0.6 s (the rollout without ended episodes does not count); 200: within (100, 200]
    # only the row at 200, 3 s (with the row at 100 it would be 1.8 s)
    assert seen == [off, off, off, (), (), ()]
    assert progress.switched_on == {"anchor_horizontal": 200}
    state = progress.state(300)
    resumed = Progress(config, env, evaluate=None)
    assert env.inactive_terminations == off
    resumed.restore(state)  # the term stays on though the last window's episodes are short
    assert env.inactive_terminations == () and resumed.switched_on == {"anchor_horizontal": 200}
    resumed.after_rollout(350, {"episode/length": 10.0})
    assert env.inactive_terminations == ()


def test_a_run_switches_the_horizontal_termination_on_by_episode_length(tmp_path, monkeypatch):
    """`gym-motion train --anchor-horizontal-termination-from-episode-s`: the term ends no
    training episode until the window's episodes last long enough, then ends them (1 mm: at
    once), and summary.json says from which env step."""
    from gym_motion.training.progress import Progress

    monkeypatch.setattr(Progress, "episode_window_steps", 48)  # rollouts of 32 steps
    out = tmp_path / "run"
    argv = ["train", "--num-envs", "4", "--total-steps", "480", "--out", str(out), "--no-video",
            "--eval-every", "0", "--anchor-horizontal-termination", "0.001",
            "--anchor-horizontal-termination-from-episode-s", "0.02"]  # fmt: skip
    assert main(argv + ["--ppo", "n_steps=8"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    on = summary["terminations_switched_on"]["anchor_horizontal"]
    with open(out / "progress.csv") as f:
        rows = [r for r in csv.DictReader(f) if r.get("termination/anchor_horizontal")]
    fired = {int(r["time/total_timesteps"]): float(r["termination/anchor_horizontal"])
             for r in rows}  # fmt: skip
    # the first rollout with ended episodes (past the 48-step window) switches it on: those
    # episodes were not ended by it, every one after is
    assert on == min(f for f in fired if f >= 48) and fired[on] == 0.0, fired
    after = [v for t, v in fired.items() if t > on]
    assert after and all(v == 1.0 for v in after), fired


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "tiny"
    argv = ["train", "--num-envs", "4", "--total-steps", "200", "--seed", "1", "--out", str(out),
            "--eval-every", "100", "--reset-noise-ramp-steps", "100"]  # fmt: skip
    assert main(argv) == 0
    return out


def test_train_writes_the_run_folder(tiny_run):
    for name in RUN_FILES:
        assert (tiny_run / name).is_file(), name
    assert list(tiny_run.glob("events.out.tfevents.*"))
    config = json.loads((tiny_run / "config.json").read_text())
    assert config["train"]["num_envs"] == 4
    assert config["ppo"]["n_steps"] == 24 and config["ppo"]["batch_size"] == 24
    assert config["env"]["rewards"]["anchor_pos"]["weight"] == 0.5
    summary = json.loads((tiny_run / "summary.json").read_text())
    assert set(summary) == SUMMARY_KEYS
    assert summary["env_steps"] >= 200 and summary["stopped_by"] == "total_steps"
    assert summary["reset_noise_scale_final"] == 1.0
    for phase in ("before", "after"):
        mean = summary[phase]["mean"]
        assert 0.0 <= mean["success_rate"] <= 1.0 and mean["episode_length"] > 0
        assert mean["mpkpe_mm"] > 0 and mean["tracking_reward_per_step"] > 0
    header = (tiny_run / "progress.csv").read_text().splitlines()[0].split(",")
    for key in ("reward/body_pos", "rollout/tracking_reward", "time/env_steps_per_s",
                "sampling/entropy", "train/approx_kl", "curriculum/reset_noise_scale"):  # fmt: skip
        assert key in header, key
    with open(tiny_run / "progress.csv") as f:
        rows = list(csv.DictReader(f))
    scales = [float(r["curriculum/reset_noise_scale"]) for r in rows[:-1]]
    # 3 rollouts of 96 steps over a 200-step budget, ramp over its first half
    assert scales == [0.0, 0.96, 1.0]
    with open(tiny_run / "progress.csv") as f:
        rows = list(csv.DictReader(f))
    # a periodic deterministic evaluation at the first rollout end past 100 steps; the one
    # past 200 is the last rollout's, whose update follows: the final evaluation after it,
    # in a last row with that update's train/* values
    evals = [(int(r["time/total_timesteps"]), float(r["eval/episode_length"]))
             for r in rows if r.get("eval/episode_length")]  # fmt: skip
    assert [t for t, _ in evals] == [192, 288]
    assert rows[-1]["eval/episode_length"] and rows[-1]["train/approx_kl"]
    assert not rows[-2]["eval/episode_length"]
    assert all(0 < length <= 400 for _, length in evals)  # the 8 s default clip


def test_train_writes_a_video_of_the_final_evaluation(gl, tiny_run):
    from gym_motion.video import read_mp4

    video = json.loads((tiny_run / "summary.json").read_text())["video"]
    frames, fps = read_mp4(tiny_run / "final_eval.mp4")
    assert frames.shape == (video["frames"], 240, 320, 3) and fps == 25.0
    # 5 s of the default clip, or up to the termination and its held frame (1 s)
    t = video["terminated_step"]
    assert video["steps"] == (250 if t is None else t)
    assert video["frames"] == 1 + video["steps"] // 2 + (0 if t is None else t % 2 + 25)


def test_eval_cli_on_the_run(tiny_run, capsys):
    assert main(["eval", "--model", str(tiny_run), "--max-seconds", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "mpkpe_mm" in out and "default" in out
    result = json.loads((tiny_run / "eval_model.json").read_text())
    (clip,) = result["clips"].values()
    assert clip["max_episode_steps"] == 25
    # other clips: their own file, the run's result stays
    from gym_motion.motion import DEFAULT_MOTION_PATH

    argv = ["eval", "--model", str(tiny_run), "--max-seconds", "0.2", "--motion",
            str(DEFAULT_MOTION_PATH)]  # fmt: skip
    assert main(argv) == 0
    (named,) = tiny_run.glob(f"eval_model_{DEFAULT_MOTION_PATH.stem}_*.json")
    assert len(named.stem.rsplit("_", 1)[1]) == 8  # a digest of the clip's full path
    assert json.loads((tiny_run / "eval_model.json").read_text()) == result
    for key in ("success_rate", "mpkpe_mm", "root_mpkpe_mm", "joint_pos_rad",
                "tracking_reward_per_step", "tracking_reward_per_clip_step",
                "episode_length"):  # fmt: skip
        assert key in clip


def test_eval_refuses_an_env_id_whose_observation_the_run_was_not_trained_on(tiny_run, capsys):
    argv = ["eval", "--model", str(tiny_run), "--env-id", "GymMotion/G1-Tracking-NoStateEst-v0"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "trained on a 160-value policy observation (command, anchor_pos," in err
    assert "has 154 values (command, anchor_ori, base_ang_vel, joint_pos" in err


def test_ctrl_c_saves_a_checkpoint(tmp_path, monkeypatch):
    from stable_baselines3 import PPO

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(PPO, "learn", interrupted)
    summary = train(RunConfig(num_envs=2, total_steps=100, out=str(tmp_path / "run"),
                              eval_max_seconds=0.1))  # fmt: skip
    assert summary["interrupted"] and "after" not in summary
    for name in ("model.zip", "vecnormalize.pkl", "summary.json", "config.json"):
        assert (tmp_path / "run" / name).is_file(), name


def test_ctrl_c_during_the_final_evaluation_still_writes_the_summary(tmp_path, monkeypatch,
                                                                    capsys):  # fmt: skip
    from gym_motion.evaluate import evaluate_policy_on_clips

    calls = []

    def evaluate(*args, **kwargs):  # the before evaluation runs; Ctrl-C in the after one
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return evaluate_policy_on_clips(*args, **kwargs)

    monkeypatch.setattr("gym_motion.training.skeleton.evaluate_policy_on_clips", evaluate)
    config = RunConfig(num_envs=2, total_steps=100, eval_every_steps=0,
                       out=str(tmp_path / "run"), eval_max_seconds=0.1)  # fmt: skip
    summary = train(config)
    assert summary["interrupted"] and "after" not in summary and len(calls) == 2
    saved = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert saved["interrupted"] and saved["env_steps"] >= 100
    assert print_summary(saved) == 130
    err = capsys.readouterr().err
    assert "interrupted after learning; the model is saved, summary.json lacks the " \
        "after-training evaluation" in err  # fmt: skip


def test_ctrl_c_during_the_final_video_says_only_the_video_is_missing(tmp_path, monkeypatch,
                                                                      capsys):  # fmt: skip
    def video(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("gym_motion.training.skeleton._final_video", video)
    config = RunConfig(num_envs=2, total_steps=100, eval_every_steps=0,
                       out=str(tmp_path / "run"), eval_max_seconds=0.1)  # fmt: skip
    summary = train(config)
    assert summary["interrupted"] and "after" in summary and "video" not in summary
    saved = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert saved["after"]["mean"]["episode_length"] > 0
    err = capsys.readouterr().err
    assert "the model is saved, summary.json lacks the video" in err
    assert "lacks the after-training evaluation" not in err


def test_wall_clock_budget_stops_learning_and_the_summary_says_so(tmp_path, capsys):
    summary = train(RunConfig(num_envs=2, total_steps=100_000, max_minutes=1e-4,
                              out=str(tmp_path / "run"), eval_max_seconds=0.1))  # fmt: skip
    assert summary["stopped_by"] == "max_minutes"
    assert summary["env_steps"] < 96  # one rollout of 24 steps x 2 envs (and one step)
    assert "after" in summary
    capsys.readouterr()
    assert print_summary(summary) == 0
    assert "stopped by the --max-minutes budget" in capsys.readouterr().out
    print_summary({**summary, "stopped_by": "total_steps"})
    assert "stopped by" not in capsys.readouterr().out


def test_cli_user_errors_are_one_line_with_exit_code_2(tiny_run, capsys):
    assert main(["train", "--out", str(tiny_run), "--total-steps", "100"]) == 2
    assert "already holds a run" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:  # argparse: the flag's choices
        main(["eval", "--policy", "zero", "--backend", "mjx", "--max-seconds", "0.1"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --backend: invalid choice: 'mjx'" in err and "Traceback" not in err


def test_sac_run_logs_evaluates_and_exports(tmp_path, monkeypatch, capsys):
    import numpy as np

    from gym_motion.training.sb3 import learner as learner_module
    from gym_motion.training.sb3.policy import load_run

    with pytest.raises(ValueError, match="algo 'sac' trains on obs_mode 'policy'"):
        train(RunConfig(algo="sac", out=str(tmp_path / "no")))
    with pytest.raises(ValueError, match=r"unknown SAC settings \['n_steps'\]"):
        train(RunConfig(algo="sac", obs_mode="policy", sac={"n_steps": 8},
                        out=str(tmp_path / "no")))  # fmt: skip
    assert not (tmp_path / "no").exists()  # refused before any work
    assert main(["train", "--library", "rsl_rl", "--algo", "sac"]) == 2
    assert "algo 'sac' is an sb3 algorithm" in capsys.readouterr().err

    monkeypatch.setattr(learner_module, "SAC_LOG_EVERY", 256)
    out = tmp_path / "sac"
    summary = train(RunConfig(
        num_envs=4, total_steps=1200, algo="sac", obs_mode="policy", out=str(out),
        eval_every_steps=600, video_seconds=0.0,
        sac={"learning_starts": 256, "batch_size": 64, "net_arch": [32, 32]},
    ))  # fmt: skip
    assert summary["env_steps"] == 1200 and set(summary["after_vs_before"])
    model, norm, config = load_run(out)
    assert type(model).__name__ == "SAC" and config["train"]["algo"] == "sac"
    assert config["sac"]["action_bound"] == 1.0 and "ppo" not in config
    np.testing.assert_array_equal(model.action_space.high, 1.0)
    with open(out / "progress.csv") as f:
        rows = list(csv.DictReader(f))
    # a row per 256 env steps (64 vector steps of 4 envs), the evaluations in them
    assert len(rows) >= 4 and all(r["train/ent_coef"] for r in rows[1:-1])
    # one periodic evaluation, and the final policy's in the last row
    assert [r["eval/episode_length"] != "" for r in rows].count(True) == 2
    assert rows[-1]["eval/episode_length"] and not rows[-2]["eval/episode_length"]
    assert all(float(r["episode/length"]) > 0 for r in rows if r["episode/length"])
    assert RunFolder(out).evaluate()["mean"] == pytest.approx(summary["after"]["mean"])

    pytest.importorskip("onnxruntime")
    from gym_motion.deploy import OnnxPolicy
    from gym_motion.envs.config import eval_cfg
    from gym_motion.envs.tracking import TrackingVecEnv
    from gym_motion.training.export import export_run

    export_run(out, out / "p.onnx")
    policy = RunFolder(out).policy()
    env = TrackingVecEnv(2, cfg=eval_cfg(), obs_mode="policy", seed=0)
    try:
        onnx_policy = OnnxPolicy(out / "p.onnx").bind(env)
        obs, _ = env.reset(seed=0)
        for _ in range(10):
            want = policy(obs)
            assert np.abs(want).max() <= 1.0
            np.testing.assert_allclose(onnx_policy(obs), want, atol=1e-5, rtol=0)
            obs, *_ = env.step(want)
    finally:
        env.close()


def test_training_sampling_follows_the_config():
    from dataclasses import replace

    from gym_motion.envs.config import TrackingEnvCfg
    from gym_motion.envs.tracking import TrackingVecEnv

    assert RunConfig().env.sampling.mode == "uniform"
    assert train_env_cfg(sampling="adaptive").sampling == TrackingEnvCfg().sampling
    with pytest.raises(ValueError, match="sampling must be one of"):
        train_env_cfg(sampling="start")
    start = TrackingEnvCfg()
    with pytest.raises(ValueError, match="sampling.mode must be one of"):
        RunConfig(env=replace(start, sampling=replace(start.sampling, mode="start")))
    for mode in ("uniform", "adaptive"):
        env = TrackingVecEnv(2, cfg=RunConfig(env=train_env_cfg(sampling=mode)).env)
        assert env.command.sampler.mode == mode
        env.close()


def test_run_motions_are_recorded_as_absolute_paths(tmp_path, monkeypatch):
    """`eval`, `render` and `export` read the clips from the run's config.json, from any
    folder: a path relative to where training started was not found elsewhere."""
    from gym_motion.training.skeleton import train_motions

    monkeypatch.chdir(tmp_path)
    assert train_motions(["clips/jazz.npz", str(tmp_path / "b.npz")]) == [
        str(tmp_path / "clips" / "jazz.npz"), str(tmp_path / "b.npz"),
    ]  # fmt: skip
