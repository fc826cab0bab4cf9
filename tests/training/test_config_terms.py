"""A new observation term, curriculum term and recipe, each added as docs/architecture.md says:
no new CLI flag, the term reached through ``--set`` or ``--recipe``."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from gym_motion.cli import build_parser
from gym_motion.cli.train import run_config
from gym_motion.curriculum import CurriculumState, CurriculumTermCfg
from gym_motion.envs import TrackingVecEnv, eval_cfg, with_anchor_velocity
from gym_motion.training import RunConfig
from gym_motion.training import recipes as recipes_module
from gym_motion.training.overrides import with_setting
from gym_motion.training.progress import Progress


def config(*argv: str) -> RunConfig:
    return run_config(build_parser().parse_args(["train", *argv]))


def test_set_reaches_any_field_and_refuses_a_path_that_does_not_exist():
    c = config(
        "--set", "num_envs=64", "env.episode_length_s=5", "env.rewards.action_rate.weight=-0.2",
        "env.observations.policy.joint_vel.scale=0.05", "curricula.reset_noise.params.steps=0",
        "ppo.learning_rate=0.0003", "env.rewards.self_collision=null",
        "env.terminations.anchor_height.params.threshold=0.3",
    )  # fmt: skip
    assert (c.num_envs, c.env.episode_length_s) == (64, 5.0)
    assert c.env.rewards["action_rate"].weight == -0.2 and "self_collision" not in c.env.rewards
    assert c.env.observations["policy"]["joint_vel"].scale == 0.05
    assert c.curricula["reset_noise"].params == {"steps": 0}
    assert c.ppo == {"learning_rate": 0.0003}
    assert c.env.terminations["anchor_height"].params == {"threshold": 0.3}
    assert RunConfig.from_dict(c.to_dict(), c.env) == c  # config.json keeps every setting
    assert type(c.env).from_json(c.env.to_json()) == c.env
    # after the recipe and the flags: --set has the last word
    assert (
        config("--recipe", "clip", "--total-steps", "5", "--set", "total_steps=7").total_steps == 7
    )
    assert config("--set", "total_steps=1e6").total_steps == 1_000_000  # an int, as typed
    with pytest.raises(ValueError, match=r"total_steps"):
        config("--set", "total_steps=1000.5")
    with pytest.raises(ValueError, match=r"env.episode_lenght_s: TrackingEnvCfg has no field "):
        config("--set", "env.episode_lenght_s=5")
    with pytest.raises(ValueError, match=r"env.rewards.action_rat.weight: no key 'action_rat'"):
        config("--set", "env.rewards.action_rat.weight=1")
    with pytest.raises(ValueError, match=r"ObsTermCfg.scale must be a finite number"):
        config("--set", 'env.observations.policy.joint_vel.scale="big"')
    with pytest.raises(ValueError, match=r"expected PATH=VALUE"):
        config("--set", "num_envs")


def test_a_new_observation_term_is_one_set_item():
    """A term function (here the package's own ``anchor_vel_b``, as a user's module would give
    one) added to the policy group by ``--set``: the same observation as the function on the
    config that adds it, bit for bit."""
    term = {"func": "gym_motion.managers.observation:anchor_vel_b", "dim": 6}
    c = config("--set", f"env.observations.policy.anchor_vel={json.dumps(term)}")
    assert list(c.env.observations["policy"])[-1] == "anchor_vel"
    assert "anchor_vel" not in c.env.observations["critic"]
    want = with_anchor_velocity(RunConfig().env).observations["policy"]
    assert c.env.observations["policy"] == want
    # its values: the critic's anchor_vel columns of the task's own term, computed apart
    a = TrackingVecEnv(4, cfg=eval_cfg(c.env))
    b = TrackingVecEnv(4, cfg=eval_cfg(with_anchor_velocity(RunConfig().env)), obs_mode="dict")
    np.testing.assert_array_equal(a.reset(seed=1)[0][:, -6:], b.reset(seed=1)[0]["critic"][:, -6:])
    assert a.single_observation_space.shape == (166,)
    with pytest.raises(ValueError, match="a new term needs its function"):
        config("--set", 'env.observations.policy.twist={"dim": 6}')
    with pytest.raises(ValueError, match="cannot import 'no_such_module'"):
        config("--set", 'env.observations.policy.twist={"func": "no_such_module:f", "dim": 6}')


def hold_reset_noise(state: CurriculumState, steps: int) -> None:
    """A curriculum term: no reset noise before `steps` env steps, the task's from then."""
    state.reset_noise_scale = 0.0 if state.env_steps < steps else 1.0


def test_a_new_curriculum_term_is_a_function_the_training_loop_steps():
    c = replace(
        RunConfig(), curricula={"hold": CurriculumTermCfg(hold_reset_noise, {"steps": 100})}
    )
    env = SimpleNamespace(reset_noise_scale=None)
    progress = Progress(c, env, evaluate=None)
    seen = []
    for steps in (0, 99, 100, 500):
        progress.after_rollout(steps)
        seen.append(env.reset_noise_scale)
    assert seen == [0.0, 0.0, 1.0, 1.0]
    assert not hasattr(env, "inactive_terminations")  # no termination curriculum: untouched
    # from the command line, and into config.json and back
    term = {"func": f"{hold_reset_noise.__module__}:hold_reset_noise", "params": {"steps": 100}}
    cli = config("--set", "curricula={}", f"curricula.hold={json.dumps(term)}")
    assert cli.curricula == c.curricula
    assert RunConfig.from_dict(cli.to_dict(), cli.env).curricula == c.curricula


def short_clip(config: RunConfig) -> RunConfig:
    """A recipe: the clip recipe with 5 s episodes and a fixed 1 M-step ramp."""
    config = recipes_module.clip(config)
    return with_setting(replace(config, env=replace(config.env, episode_length_s=5.0)),
                        "curricula.reset_noise.params.steps", 1_000_000)  # fmt: skip


def test_a_new_recipe_is_a_function_and_a_line_in_recipes(monkeypatch):
    monkeypatch.setitem(recipes_module.RECIPES, "short_clip", short_clip)
    c = config("--recipe", "short_clip", "--num-envs", "64")
    assert (c.env.episode_length_s, c.num_envs, c.total_steps) == (5.0, 64, 26_000_000)
    assert c.curricula["reset_noise"].params == {"steps": 1_000_000}
    assert c.env.action_offset == "reference" and "anchor_horizontal" in c.curricula


def test_repeated_list_flags_add_up():
    c = config("--set", "num_envs=64", "--set", "seed=5", "--ppo", "learning_rate=0.001",
               "--ppo", "n_steps=16", "--obs-noise", "anchor_pos=0.1", "--obs-noise",
               "joint_pos=0.2")  # fmt: skip
    assert (c.num_envs, c.seed, c.ppo) == (64, 5, {"learning_rate": 0.001, "n_steps": 16})
    policy = c.env.observations["policy"]
    assert (policy["anchor_pos"].noise, policy["joint_pos"].noise) == (0.1, 0.2)


def test_set_mistakes_are_one_line_naming_the_path():
    cases = {
        "curricula.reset_noise.params.step=0": r"has \['step'\], which reset_noise_ramp does not",
        "env.terminations.anchor_height.params.treshold=0.3": r"\['treshold'\], which anchor_h",
        'curricula.hold={"func": "gym_motion.curriculum:reset_noise_ramp"}': r"lacks \['steps'\]",
        'env.rewards.action_rate={"weight": -0.2, "foo": 1}': r"^env.rewards.action_rate: .*foo",
        "env.rewards.action_rate.weight=abc": r"^env.rewards.action_rate.weight: RewardTermCfg.w",
        "env.rewards.foo={'weight': 1}": r"^env.rewards.foo: .* is not valid JSON",
        "motion=nope.npz": r"RunConfig.motion must be a list of clip paths",
        "seed=abc": r"^seed: RunConfig.seed \(--seed\) must be an integer",
        "ppo=null": r"RunConfig.ppo must be a dict",
        "env.backend.name=foo": r"BackendCfg.name must be one of",
        "env.observations.policy.joint_vel.scale=0": r"scale must be a nonzero number",
    }
    for item, message in cases.items():
        with pytest.raises(ValueError, match=message):
            config("--set", item)


def test_set_items_in_any_order_and_device_before_the_recipe(monkeypatch):
    both = ("env.terminations.anchor_horizontal=null", "curricula.anchor_horizontal=null")
    for items in (both, both[::-1]):
        c = config("--recipe", "clip", "--set", *items)
        assert "anchor_horizontal" not in c.env.terminations
        assert "anchor_horizontal" not in c.curricula
    monkeypatch.setattr(recipes_module, "on_gpu", lambda device: device != "cpu")
    assert config("--recipe", "clip", "--set", 'device="cuda"').num_envs == 1024
    assert config("--set", 'algo="sac"').obs_mode == "policy"  # as --algo sac
    with pytest.raises(ValueError, match="records the robot by name and MJCF only"):
        config("--set", 'env.robot.anchor_body="pelvis"')
    with pytest.raises(ValueError, match="both switch the term on: give one"):
        config("--recipe", "clip", "--anchor-horizontal-termination-from", "0",
               "--anchor-horizontal-termination-from-episode-s", "3")  # fmt: skip


def test_resume_refuses_the_flags_it_does_not_apply(tmp_path):
    from gym_motion.cli.train import resume_config

    args = build_parser().parse_args(["train", "--resume", str(tmp_path), "--set", "seed=3",
                                      "--num-envs", "8", "--total-steps", "100"])  # fmt: skip
    zero = build_parser().parse_args(["train", "--resume", str(tmp_path), "--seed", "0"])
    with pytest.raises(ValueError, match=r"not --seed"):
        resume_config(zero)
    with pytest.raises(ValueError, match=r"only --total-steps, .* apply, not --num-envs, --set"):
        resume_config(args)


def test_import_makes_a_users_term_module_loadable(tmp_path, monkeypatch, capsys):
    """A run whose config names a user's term function loads in `eval`, `export` and
    ``--resume`` once ``gym-motion --import MODULE`` imports it; without, one line says so."""
    import sys

    from gym_motion.cli import main
    from gym_motion.training import RunFolder

    (tmp_path / "my_obs_terms.py").write_text(
        "from gym_motion.managers.observation import anchor_vel_b\n\n\n"
        "def twist(state, out):\n    anchor_vel_b(state, out)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_obs_terms", raising=False)
    run = str(tmp_path / "run")
    term = {"func": "my_obs_terms:twist", "dim": 6}
    assert main(["train", "--total-steps", "32", "--num-envs", "2", "--no-video", "--eval-every",
                 "0", "--out", run, "--set", "ppo.n_steps=16", "ppo.net_arch=[32,32]",
                 f"env.observations.policy.twist={json.dumps(term)}"]) == 0  # fmt: skip
    capsys.readouterr()
    del sys.modules["my_obs_terms"]  # a new process
    evaluate = ["eval", "--model", run, "--max-seconds", "0.1"]
    assert main(evaluate) == 2
    assert "gym-motion --import my_obs_terms ..." in capsys.readouterr().err
    assert main(["--import", "no_such_terms", *evaluate]) == 2
    assert "--import no_such_terms: No module named" in capsys.readouterr().err
    assert main(["--import", "my_obs_terms", *evaluate]) == 0
    assert RunFolder(run).env_cfg().observations["policy"]["twist"].dim == 6


@pytest.mark.parametrize("argv", [(), ("--recipe", "clip")])
def test_training_randomises_at_least_what_mjlabs_play_config_keeps(argv):
    """A policy from `gym-motion train` (and its clip recipe) must survive mjlab's play config
    (docs/task.md section 13): every random thing `play_cfg` keeps is in training, with the
    same range, at full strength before the run ends; training adds observation noise and
    pushes on top."""
    from gym_motion.envs.config import play_cfg

    c = config(*argv)
    play = play_cfg(c.env)
    for name, term in play.events.items():
        assert c.env.events[name] == term, name
    assert set(play.events) == {"torso_com", "foot_friction", "encoder_bias"}
    assert c.env.reset.joint_pos_range == play.reset.joint_pos_range == (-0.1, 0.1)
    assert c.env.obs_noise and "push" in c.env.events
    ramp = c.curricula["reset_noise"]
    assert ramp.params["steps"] < c.total_steps  # the reset noise at full scale well before
