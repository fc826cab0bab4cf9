"""Deployable policies: deploy metadata (joint order, gains, default pose, action scale, anchor,
bodies, observation terms) and ONNX policies from any trainer run in a gym_motion env.

- `metadata`: `PolicyMeta` (read), `deploy_metadata` (write), `PolicyMapping` (a policy's
  conventions mapped onto an env's). NumPy only.
- `DEFAULT_POLICY_PATH`: the shipped ONNX tracker of the embedded default motion.
- `onnx_policy`: `OnnxPolicy`, an ONNX file run with onnxruntime (the ``[onnx]`` extra) and
  bound to an env for `gym_motion.evaluate`.

- `export`: `export_run`, a trained run of any supported library (`EXPORTERS`) as ONNX with
  that metadata; each library's adapter gives its actor (`gym_motion.adapters.<library>.export`).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from gym_motion.deploy.metadata import (
    DEPLOY_OBS_NAMES,
    METADATA_KEYS,
    PolicyMapping,
    PolicyMeta,
    deploy_metadata,
    format_numbers,
)

# A PPO policy that tracks the embedded default motion to its end (400/400 steps, MPKPE 57.5 mm;
# `gym-motion eval --policy tracker`), exported with its deploy metadata; how it was trained is
# in its "training" metadata and the README.
DEFAULT_POLICY_PATH = (
    Path(__file__).resolve().parents[1] / "assets" / "policies" / "default_tracker.onnx"
)

__all__ = [
    "DEFAULT_POLICY_PATH",
    "DEPLOY_OBS_NAMES",
    "METADATA_KEYS",
    "OnnxPolicy",
    "PolicyMapping",
    "PolicyMeta",
    "deploy_metadata",
    "format_numbers",
]


def __getattr__(name: str) -> Any:
    # OnnxPolicy on first use: importing this package needs no onnxruntime
    if name == "OnnxPolicy":
        value = importlib.import_module("gym_motion.deploy.onnx_policy").OnnxPolicy
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
