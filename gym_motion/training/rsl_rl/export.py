"""The deterministic actor of an rsl_rl run, for `gym-motion export` (`gym_motion.training.export`).

The module is rsl_rl's own export form of the actor (``MLPModel.as_onnx``): its empirical
observation normaliser, the MLP, and the mean of the action distribution. Only an actor that
reads the "policy" observation group alone deploys (the default, `runner_cfg`'s
``obs_groups["actor"] == ["policy"]``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["actor_module"]


def actor_module(run_dir: str | os.PathLike):
    """The run's actor as a torch module ``obs (B, D) float32 -> actions (B, J) float32``, with
    D and J: ``(module, D, J)``.

    Raises:
        FileNotFoundError: no model.pt or config.json in `run_dir` (`load_actor`).
        ValueError: an actor that reads other groups than "policy", or not an rsl_rl run.
    """
    from gym_motion.training.rsl_rl.policy import load_actor

    config_path = Path(run_dir) / "config.json"
    if config_path.is_file():  # else load_actor names the missing file
        groups = json.loads(config_path.read_text()).get("rsl_rl", {}).get("obs_groups", {})
        if groups.get("actor", ["policy"]) != ["policy"]:
            raise ValueError(
                f"{config_path}: the run's actor reads the observation groups "
                f"{groups['actor']}; only an actor that reads the 'policy' group alone deploys"
            )
    actor, config = load_actor(run_dir)
    return actor.as_onnx(verbose=False), int(actor.obs_dim), int(config["num_actions"])
