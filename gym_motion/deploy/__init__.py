"""Deployable policies: deploy metadata (joint order, gains, default pose, action scale, anchor,
bodies, observation terms) and ONNX policies from any trainer run in a gym_motion env.

- `metadata`: `PolicyMeta` (read), `deploy_metadata` (write), `PolicyMapping` (a policy's
  conventions mapped onto an env's). NumPy only.
- `onnx_policy`: `OnnxPolicy`, an ONNX file run with onnxruntime (the ``[onnx]`` extra) and
  bound to an env for `gym_motion.evaluate`.

- `export`: `export_run`, a trained run of any supported library (`EXPORTERS`) as ONNX with
  that metadata; each library's adapter gives its actor (`gym_motion.adapters.<library>.export`).
"""

from __future__ import annotations

import importlib
from typing import Any

from gym_motion.deploy.metadata import (
    DEPLOY_OBS_NAMES,
    METADATA_KEYS,
    PolicyMapping,
    PolicyMeta,
    deploy_metadata,
    format_numbers,
)

__all__ = [
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
