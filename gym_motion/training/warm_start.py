"""Warm starts: a new run that begins from another run's networks (``gym-motion train --init
SOURCE``).

SOURCE is a run folder or its ``best/``. The new run takes the source's actor, critic and
observation normaliser, and nothing else: its optimiser, step count, curricula and sampler start
afresh, on its own clips and settings. The two runs must agree on what the networks read and
write (library, algorithm, observation mode, every observation group's terms and widths, the
robot's joints, the actions' convention and the network sizes); the first difference is
refused in one line. The new run's config.json records the source (``train.init``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gym_motion.training.config import RunConfig
from gym_motion.training.run_folder import RunFolder

__all__ = ["init_source", "check_layout"]


def init_source(source: str | Path, model_file: str) -> RunFolder:
    """The run folder `source` names, holding a trained model (`model_file`).

    Raises:
        FileNotFoundError: no such folder, or no model in it (shipped policies are ONNX files,
            an actor only: they cannot start a run).
    """
    from gym_motion.deploy import SHIPPED_POLICIES

    path = Path(source)
    if not path.is_dir():
        if str(source) in SHIPPED_POLICIES:
            raise FileNotFoundError(
                f"--init {source}: the shipped policies are ONNX files (an actor, no critic or "
                "normaliser to start from); give a run folder or its best/"
            )
        raise FileNotFoundError(f"--init {source}: no such run folder")
    folder = RunFolder(path)
    if not (path / model_file).is_file() or not folder.config():
        raise FileNotFoundError(f"--init {source}: no {model_file} and config.json of a trained "
                                "run there")  # fmt: skip
    return folder


def _layout(config: RunConfig, networks: dict[str, Any]) -> dict[str, Any]:
    """What the networks of a run of `config` read and write; `networks`: its config.json
    library entries (``ppo``: ``net_arch`` ...)."""
    env = config.env
    groups = {g: [(name, t.dim) for name, t in terms.items()]
              for g, terms in env.observations.items()}  # fmt: skip
    return {
        "library": config.library,
        "algo": config.algo,
        "obs_mode": config.obs_mode,
        "observation terms": groups,
        "joints": list(env.robot.joint_names),
        "action_offset": env.action_offset,
        "observed_frame": env.observed_frame,
        "network sizes": networks.get(config.algo, {}).get("net_arch"),
    }


def check_layout(source: RunFolder, config: RunConfig, networks: dict[str, Any]) -> None:
    """Refuse a warm start whose networks would not fit: `source` (a run folder) against the
    new run's `config` and its learner's config.json entries `networks`.

    Raises:
        ValueError: the first difference, named, with both values.
    """
    theirs = _layout(source.run_config(), source.config())
    ours = _layout(config, networks)
    for key, want in ours.items():
        if theirs[key] != want:
            raise ValueError(
                f"--init {source.path}: its {key} differ from this run's: "
                f"{_short(theirs[key])} against {_short(want)}"
            )


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 200 else text[:197] + "..."
