"""Deployable policies: deploy metadata (joint order, gains, default pose, action scale, anchor,
bodies, observation terms) and ONNX policies from any trainer run in a gym_motion env.

- `metadata`: `PolicyMeta` (read), `deploy_metadata` (write), `PolicyMapping` (a policy's
  conventions mapped onto an env's). NumPy only.
- `DEFAULT_POLICY_PATH`: the shipped ONNX tracker of the embedded default motion;
  `SHIPPED_POLICIES`: every shipped ONNX policy by its ``--policy`` name.
- `onnx_policy`: `OnnxPolicy`, an ONNX file run with onnxruntime (the ``[onnx]`` extra) and
  bound to an env for `gym_motion.evaluate` (onnxruntime is imported when one is built).

A trained run is exported with this metadata by `gym_motion.training.export.export_run`.
"""

from __future__ import annotations

from pathlib import Path

from gym_motion.deploy.metadata import (
    DEPLOY_OBS_NAMES,
    METADATA_KEYS,
    OBSERVATION_TERM_KEYS,
    OBSERVED_FRAME_KEY,
    PolicyMapping,
    PolicyMeta,
    deploy_metadata,
    format_numbers,
)
from gym_motion.deploy.onnx_policy import OnnxPolicy

# A PPO policy that tracks the embedded default motion to its end (400/400 steps, MPKPE 55.9 mm;
# `gym-motion eval --policy tracker`), exported with its deploy metadata; how it was trained is
# in its "training" metadata and the README.
_POLICIES = Path(__file__).resolve().parents[1] / "assets" / "policies"
DEFAULT_POLICY_PATH = _POLICIES / "default_tracker.onnx"

# The ONNX policies shipped with the package, by their ``gym-motion eval/render --policy`` name.
# "jazz": a residual-action PPO policy of the G1 Moves jazz walk (CC-BY-4.0, github.com/
# experientialtech/g1-moves; the clip is not shipped: its deploy metadata's motion_files names
# it and eval asks for it); how far it tracks is in its "training" metadata and the README. It
# was trained before gym_motion took mjlab's observation conventions: its metadata says so
# (observed_frame current, base_origin_lin_vel), so it plays as trained here and a deploy stack
# refuses it.
SHIPPED_POLICIES = {
    "tracker": DEFAULT_POLICY_PATH,
    "jazz": _POLICIES / "jazz_walk_tracker.onnx",
}

__all__ = [
    "DEFAULT_POLICY_PATH",
    "DEPLOY_OBS_NAMES",
    "METADATA_KEYS",
    "OBSERVATION_TERM_KEYS",
    "OBSERVED_FRAME_KEY",
    "OnnxPolicy",
    "SHIPPED_POLICIES",
    "PolicyMapping",
    "PolicyMeta",
    "deploy_metadata",
    "format_numbers",
]
