"""Recipes: settings measured together, each a function from a `RunConfig` to a `RunConfig`.

``gym-motion train --recipe NAME`` applies ``RECIPES[NAME]`` to the config of the run's device
and library, then the flags and ``--set`` items given on the command line, so any of them
replaces its recipe's value. A new recipe is a function here and a line in `RECIPES`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from gym_motion.curriculum import CurriculumTermCfg, termination_from_episode_s
from gym_motion.training.config import RunConfig, with_anchor_horizontal_termination

__all__ = ["RECIPES", "clip", "on_gpu"]


def on_gpu(device: str) -> bool:
    """Whether `device` (a `RunConfig.device` value) resolves to a CUDA device here (torch is
    imported only for a device other than "cpu").

    Raises:
        ValueError: a device torch does not list (`gym_motion.training.devices`).
    """
    if device == "cpu":
        return False
    from gym_motion.training.devices import resolve_device

    return resolve_device(device).startswith("cuda")


def clip(config: RunConfig) -> RunConfig:
    """A real clip learnt whole from its start (residual actions, a 0.2 m horizontal
    termination switched on at 2 s episodes, 26 M env steps; on a GPU also 1024 envs on MuJoCo
    Warp).

    In full: residual actions, the anchor-horizontal termination at 0.2 m switched on once the
    training episodes last 2 s on average, 26 M env steps (docs/measurements.md, "A tighter
    horizontal termination: 0.2 m", "The clip recipe at a second seed"). On a GPU device also
    1024 envs on MuJoCo Warp and an evaluation every 1 M env steps: PPO's settings per update
    are the CPU's, so an update takes more samples (docs/measurements.md, "The clip recipe on a
    GPU").

    Raises:
        ValueError: a device torch does not list.
    """
    env = with_anchor_horizontal_termination(replace(config.env, action_offset="reference"), 0.2)
    switch = CurriculumTermCfg(
        termination_from_episode_s, {"term": "anchor_horizontal", "seconds": 2.0}
    )
    config = replace(
        config,
        env=env,
        curricula={**config.curricula, "anchor_horizontal": switch},
        total_steps=26_000_000,
    )
    if on_gpu(config.device):
        config = replace(
            config,
            env=replace(env, backend=env.backend.updated("mjwarp")),
            num_envs=1024,
            eval_every_steps=1_000_000,
        )
    return config


RECIPES: dict[str, Callable[[RunConfig], RunConfig]] = {"clip": clip}
