"""A trained SB3 model as a plain policy callable, for `gym_motion.evaluate`.

Example::

    from gym_motion.training.sb3.policy import load_run_policy
    from gym_motion.evaluate import evaluate_policy_on_clips

    policy, config = load_run_policy("runs/dance")  # a `gym-motion train` run folder
    result = evaluate_policy_on_clips(["dance.npz"], policy)
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecNormalize

from gym_motion.policy import Obs, Policy

__all__ = ["load_run", "load_run_policy", "model_policy"]


def model_policy(model: BaseAlgorithm, vecnormalize: VecNormalize | None = None) -> Policy:
    """The deterministic policy of an SB3 model: obs (N, D) float32 (or a dict of such for
    ``MultiInputPolicy``) -> actions (N, A) float32, normalising obs with `vecnormalize`'s
    statistics first when given (its ``training`` flag decides whether they still update)."""

    def act(obs: Obs) -> np.ndarray:
        if vecnormalize is not None:
            obs = vecnormalize.normalize_obs(obs)
        action, _ = model.predict(obs, deterministic=True)
        return action

    return act


def load_run(
    run_dir: str | os.PathLike,
) -> tuple[PPO | SAC, VecNormalize | None, dict[str, Any]]:
    """The pieces of a `gym-motion train` run folder: the model (``model.zip``, on the CPU; PPO,
    or SAC when config.json's ``train.algo`` says so), the frozen observation statistics
    (``vecnormalize.pkl``: a `VecNormalize` without its venv, ``training`` False; None when
    absent from a folder that is not a `gym-motion train` run, i.e. whose config.json is
    missing or has no "train") and config.json (``{}`` when absent).

    Trusted input only: SB3's ``load`` and ``vecnormalize.pkl`` unpickle Python objects, which
    can run code while they are read (unlike rsl_rl's ``model.pt``, read ``weights_only``); load
    run folders you made or trust, as with their config.json.

    Raises:
        FileNotFoundError: the folder has no model.zip, or a `gym-motion train` run folder
            (config.json with "train") has no vecnormalize.pkl.
    """
    run = Path(run_dir)
    model_path = run / "model.zip"
    if not model_path.is_file():
        raise FileNotFoundError(f"{model_path}: no model.zip in the run folder {run}")
    config = {}
    if (run / "config.json").is_file():
        config = json.loads((run / "config.json").read_text())
    algo = {"ppo": PPO, "sac": SAC}[config.get("train", {}).get("algo", "ppo")]
    model = algo.load(
        model_path,
        device="cpu",
        custom_objects={"learning_rate": 0.0, "lr_schedule": lambda _: 0.0},
    )
    norm = None
    if (run / "vecnormalize.pkl").is_file():
        with open(run / "vecnormalize.pkl", "rb") as f:
            norm = pickle.load(f)
        norm.training = False
    elif "train" in config:  # gym-motion train always normalises: without them, wrong actions
        raise FileNotFoundError(
            f"{run / 'vecnormalize.pkl'}: the run's observation statistics are missing; its "
            "policy was trained on normalised observations and acts wrongly without them"
        )
    return model, norm, config


def load_run_policy(run_dir: str | os.PathLike) -> tuple[Policy, dict[str, Any]]:
    """The deterministic policy of a `gym-motion train` run folder (`load_run`), and its
    config.json.

    Raises:
        FileNotFoundError: the folder has no model.zip.
    """
    model, norm, config = load_run(run_dir)
    return model_policy(model, norm), config
