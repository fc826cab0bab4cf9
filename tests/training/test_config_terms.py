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
    a, b = TrackingVecEnv(4, cfg=eval_cfg(c.env)), TrackingVecEnv(4, cfg=eval_cfg(
        replace(c.env, observations={**c.env.observations, "policy": want})))  # fmt: skip
    np.testing.assert_array_equal(a.reset(seed=1)[0], b.reset(seed=1)[0])
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
