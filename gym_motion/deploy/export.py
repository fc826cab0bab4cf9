"""`gym-motion export`: a trained run (any library's) as a deployable ONNX policy.

    gym-motion export --model runs/dance -o dance.onnx
    gym-motion eval --onnx dance.onnx --motion dance.npz        # runs it back in the env

The library that trained the run (config.json's ``"library"``; none: Stable-Baselines3) gives
the graph: its adapter's ``export`` module has ``actor_module(run_dir)`` returning the
deterministic actor with the observation normalisation folded in, a torch module from the
policy observation ``obs`` (B, D) float32 (160 values, 154 without state estimation; the
"policy" group an asymmetric actor reads) to ``actions`` (B, J) float32 in the robot's joint
order (`EXPORTERS`). B is dynamic.

The ONNX ``metadata_props`` hold the deploy metadata that deployment stacks for BeyondMimic
policies read (`gym_motion.deploy.metadata.deploy_metadata`: joint names, stiffness, damping,
default pose, action scale, anchor body, tracked bodies, observation terms, command), all taken
from the run's ``config.json``, plus ``run_path`` (the run folder). The graph is written by
torch's TorchScript-based exporter (``dynamo=False``: torch 2.13's default exporter needs the
onnxscript package, this one only ``onnx``), checked with ``onnx.checker`` and, when
onnxruntime is installed, against the torch module on random observations.
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from gym_motion import config_values as cv
from gym_motion.atomic import check_output_path, write_bytes

__all__ = ["EXPORTERS", "OPSET", "export_run", "register_cli", "run_task_cfg"]

OPSET = 17
CHECK_TOL = 1e-5  # max |ONNX - torch| action difference accepted, relative to max(1, |action|)
MIN_OPSET = 9  # the SB3 actor's graph needs opset 9 (opset 7's Min needs equal input shapes)

# config.json's "library" -> the adapter module with actor_module(run_dir)
EXPORTERS = {
    "sb3": "gym_motion.adapters.sb3.export",
    "rsl_rl": "gym_motion.adapters.rsl_rl.export",
}

# Robot values a run's config.json records, compared with the robot it names.
_ROBOT_KEYS = (
    "joint_names", "kp", "kd", "default_joint_pos", "action_scale", "anchor_body",
    "tracked_bodies",
)  # fmt: skip


def run_task_cfg(config: dict[str, Any], source: str = "config.json"):
    """The task config (`TrackingEnvCfg`) a run trained on, from its config.json.

    Reads the ``env`` section: a tagged config (`TrackingEnvCfg.to_json`) is rebuilt as is;
    a plain one (``gym-motion train``'s record of the config) gives the default task of the
    robot it names with the recorded state-estimation choice, after checking that the robot
    values it records (joint names, gains, default pose, action scale, anchor and tracked
    bodies) are those of that robot in this gym_motion.

    Raises:
        ValueError: no ``env`` section, an unknown robot, or recorded robot values that differ
            (the message names `source` and the key).
    """
    from gym_motion.envs.config import TrackingEnvCfg
    from gym_motion.robots import ROBOTS

    env = config.get("env")
    if not isinstance(env, dict):
        raise ValueError(f"{source}: no 'env' section (the task config of the run)")
    if "__type__" in env:
        return TrackingEnvCfg.from_json(json.dumps(env))
    recorded = env.get("robot")
    name = recorded.get("name") if isinstance(recorded, dict) else None
    if name not in ROBOTS:
        raise ValueError(f"{source}: env.robot.name is {name!r}; known robots: {sorted(ROBOTS)}")
    robot = ROBOTS[name]
    for key in _ROBOT_KEYS:
        if key not in recorded:
            continue
        ours = getattr(robot, key)
        theirs = recorded[key]
        same = (
            tuple(theirs) == tuple(ours)
            if isinstance(ours, tuple)
            else theirs == ours
            if isinstance(ours, str)
            else np.allclose(np.asarray(theirs, np.float64), ours, rtol=1e-9, atol=0.0)
        )
        if not same:
            raise ValueError(
                f"{source}: env.robot.{key} differs from robot {name!r} of this gym_motion; "
                "the run was trained with another robot definition"
            )
    return TrackingEnvCfg.for_robot(robot, state_estimation=bool(env.get("state_estimation", True)))


def export_run(
    run_dir: str | os.PathLike,
    path: str | os.PathLike,
    *,
    opset: int = OPSET,
    check: bool = True,
) -> dict[str, Any]:
    """Export a `gym-motion train` run folder's policy to an ONNX file with deploy metadata.

    Args:
        run_dir: the run folder: config.json and the files its library's loader reads
            (SB3: model.zip and vecnormalize.pkl; rsl_rl: model.pt).
        path: the ONNX file to write (atomically: a temporary file, then ``os.replace``).
        opset: ONNX opset. check: compare onnxruntime's actions with torch's on 64 random
            observations (skipped when onnxruntime is not installed).

    Returns:
        ``{"path", "library", "obs_dim", "num_actions", "metadata" (dict of str),
        "max_abs_diff" (float, or None when not checked)}``.

    Raises:
        FileNotFoundError: no config.json, or no model file of the run's library.
        ValueError: a library without an exporter, an actor that reads more than the policy
            observation group, an observation or action size other than the run's config
            gives, or bad config values.
        RuntimeError: the ONNX actions differ from torch's by more than 1e-5 x max(1, the
            largest action).
    """
    import onnx
    import torch

    from gym_motion.deploy.metadata import deploy_metadata

    run = Path(run_dir)
    config_path = run / "config.json"
    if not config_path.is_file():
        raise FileNotFoundError(
            f"{config_path}: the run's config.json is needed for the deploy metadata"
        )
    config = json.loads(config_path.read_text())
    library = config.get("library", "sb3")
    if library not in EXPORTERS:
        raise ValueError(
            f"{config_path}: a run of library {library!r}, which gym_motion cannot export; "
            f"known: {sorted(EXPORTERS)}"
        )
    cfg = run_task_cfg(config, str(config_path))
    module, dim, num_actions = importlib.import_module(EXPORTERS[library]).actor_module(run)
    expected = sum(t.dim for t in cfg.observation_groups()["policy"].values())
    if dim != expected:
        raise ValueError(
            f"{run}: the actor reads {dim} values, the run's config gives a {expected}-value "
            "policy observation"
        )
    if num_actions != cfg.robot.num_joints:
        raise ValueError(
            f"{run}: the model has {num_actions} actions, robot {cfg.robot.name!r} "
            f"{cfg.robot.num_joints} joints"
        )
    module = module.to("cpu").eval()
    buf = io.BytesIO()
    with warnings.catch_warnings():
        # the TorchScript exporter announces its deprecation; its output is what we check
        warnings.simplefilter("ignore", (DeprecationWarning, FutureWarning, UserWarning))
        torch.onnx.export(
            module,
            (torch.zeros(1, dim),),
            buf,
            dynamo=False,
            input_names=["obs"],
            output_names=["actions"],
            dynamic_axes={"obs": {0: "batch"}, "actions": {0: "batch"}},
            opset_version=opset,
        )
    proto = onnx.load_from_string(buf.getvalue())
    metadata = {**deploy_metadata(cfg), "run_path": str(run)}
    del proto.metadata_props[:]
    for key, value in metadata.items():
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, value
    proto.producer_name = "gym_motion"
    onnx.checker.check_model(proto)
    data = proto.SerializeToString()

    diff = None
    if check:
        diff = _check(module, data, dim)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_bytes(path, data)
    return {
        "path": str(path),
        "library": library,
        "obs_dim": dim,
        "num_actions": num_actions,
        "metadata": metadata,
        "max_abs_diff": diff,
    }


def _check(module, data: bytes, dim: int) -> float | None:
    """max |onnxruntime - torch| over random observations; None without onnxruntime."""
    try:
        import onnxruntime as ort
    except ModuleNotFoundError:
        return None
    import torch

    obs = np.random.default_rng(0).normal(0.0, 2.0, (64, dim)).astype(np.float32)
    with torch.no_grad():
        want = module(torch.as_tensor(obs)).numpy()
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    (got,) = session.run(["actions"], {"obs": obs})
    diff = float(np.abs(got - want).max())
    # random N(0, 2) observations through the folded normaliser can give actions of ~50:
    # float32 round-off scales with them
    scale = max(1.0, float(np.abs(want).max()))
    if not diff <= CHECK_TOL * scale:
        raise RuntimeError(
            f"ONNX actions differ from torch's by {diff:.3g} (> {CHECK_TOL} x {scale:.3g}, the "
            "largest action) on random observations"
        )
    return diff


# ---------------------------------------------------------------------------------------------
# CLI


def register_cli(subparsers: argparse._SubParsersAction) -> None:
    """Adds ``gym-motion export`` to the CLI's subparsers."""
    p = subparsers.add_parser(
        "export",
        help="export a trained run's policy as ONNX with deploy metadata",
        description="The deterministic actor of a gym-motion train run, observation "
        "normalisation folded in, as ONNX (input obs, output actions) with the deploy metadata "
        "of the run's config (joint names, gains, default pose, action scale, anchor, bodies, "
        "observation terms). Needs the [onnx] extra and the run's library's.",
    )
    p.add_argument(
        "--model", required=True, metavar="RUN_DIR", help="a gym-motion train run (sb3, rsl_rl)"
    )
    p.add_argument("-o", "--output", required=True, metavar="POLICY.onnx", help="ONNX file")
    p.add_argument("--opset", type=cv.cli_number(int, MIN_OPSET), default=OPSET,
                   help="ONNX opset (default %(default)s)")  # fmt: skip
    p.add_argument(
        "--no-check", action="store_true", help="skip the onnxruntime-vs-torch comparison"
    )
    p.set_defaults(func=_run_cli)


def _run_cli(args: argparse.Namespace) -> int:
    check_output_path(args.output, inputs=(Path(args.model) / "config.json",), make_parents=True)
    try:
        info = export_run(args.model, args.output, opset=args.opset, check=not args.no_check)
    except RuntimeError as exc:  # the ONNX check, or torch refusing the opset: the CLI's
        raise ValueError(str(exc)) from exc  # one-line user error (traceback with DEBUG)
    if info["max_abs_diff"] is not None:
        checked = f"onnxruntime matches torch to {info['max_abs_diff']:.1e}"
    else:
        checked = "not checked (--no-check)" if args.no_check else "not checked (no onnxruntime)"
    print(
        f"wrote {info['path']} ({info['library']} run): obs ({info['obs_dim']}) -> actions "
        f"({info['num_actions']}), {checked}"
    )
    print(f"observation terms: {info['metadata']['observation_names']}")
    return 0
