"""`gym-motion export`: a trained SB3 run as a deployable ONNX policy.

    gym-motion export --model runs/dance -o dance.onnx
    gym-motion eval --onnx dance.onnx --motion dance.npz        # runs it back in the env

The graph is the deterministic actor of the run's PPO model with VecNormalize's observation
normalisation folded in: ``actions = clip(actor(clip((obs - mean) / sqrt(var + eps), -c, c)),
-10, 10)`` (the last clip is SB3's, to the env's action space). Input ``obs`` (B, D) float32,
the env's policy observation (160 values, 154 without state estimation; for a run trained with
the asymmetric actor-critic, the "policy" group the actor reads); output ``actions`` (B, J)
float32 in the robot's joint order; B is dynamic.

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
import io
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["OPSET", "export_run", "register_cli", "run_task_cfg"]

OPSET = 17
CHECK_TOL = 1e-5  # max |ONNX - torch| action difference accepted by the export check

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


def _actor_module(model, norm):
    """torch module: normalised obs -> deterministic, clipped actions; and the obs size."""
    import gymnasium as gym
    import torch

    policy = model.policy
    space = policy.observation_space
    extractor = policy.pi_features_extractor
    group = None
    if isinstance(space, gym.spaces.Dict):
        group = getattr(extractor, "group", None)
        if group is None or group not in space.spaces:
            raise ValueError(
                f"the run's actor ({type(policy).__name__}) reads every observation group "
                f"{list(space.spaces)}; only an actor that reads the 'policy' group alone "
                "deploys (train with --obs-mode dict, the asymmetric actor-critic, or policy)"
            )
        obs_space = space.spaces[group]
    else:
        obs_space = space
    dim = int(np.prod(obs_space.shape))
    mean = np.zeros(dim, np.float64)
    std = np.ones(dim, np.float64)
    clip_obs = None
    if norm is not None and norm.norm_obs:
        rms = norm.obs_rms[group] if isinstance(norm.obs_rms, dict) else norm.obs_rms
        if group is not None and group not in (norm.norm_obs_keys or []):
            rms = None
        if rms is not None:
            mean, std = np.asarray(rms.mean), np.sqrt(np.asarray(rms.var) + norm.epsilon)
            clip_obs = float(norm.clip_obs)
    low = torch.as_tensor(policy.action_space.low, dtype=torch.float32)
    high = torch.as_tensor(policy.action_space.high, dtype=torch.float32)

    class Actor(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.extractor = extractor
            self.mlp = policy.mlp_extractor
            self.action_net = policy.action_net
            self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))
            self.register_buffer("std", torch.as_tensor(std, dtype=torch.float32))
            self.register_buffer("low", low)
            self.register_buffer("high", high)

        def forward(self, obs: torch.Tensor) -> torch.Tensor:
            x = (obs - self.mean) / self.std
            if clip_obs is not None:
                x = torch.clamp(x, -clip_obs, clip_obs)
            features = self.extractor({group: x} if group is not None else x)
            actions = self.action_net(self.mlp.forward_actor(features))
            return torch.maximum(torch.minimum(actions, self.high), self.low)

    return Actor().eval(), dim


def _load_run(run: Path):
    """`load_run`, refusing a run without config.json (the deploy metadata comes from it)."""
    from gym_motion.adapters.sb3.policy import load_run

    config_path = run / "config.json"
    if not config_path.is_file():
        raise FileNotFoundError(
            f"{config_path}: the run's config.json is needed for the deploy metadata"
        )
    return load_run(run)


def export_run(
    run_dir: str | os.PathLike,
    path: str | os.PathLike,
    *,
    opset: int = OPSET,
    check: bool = True,
) -> dict[str, Any]:
    """Export a `gym-motion train` run folder's policy to an ONNX file with deploy metadata.

    Args:
        run_dir: the run folder (model.zip, config.json, and vecnormalize.pkl when it
            normalised observations).
        path: the ONNX file to write (atomically: a temporary file, then ``os.replace``).
        opset: ONNX opset. check: compare onnxruntime's actions with torch's on 64 random
            observations (skipped when onnxruntime is not installed).

    Returns:
        ``{"path", "obs_dim", "num_actions", "metadata" (dict of str), "max_abs_diff" (float,
        or None when not checked)}``.

    Raises:
        FileNotFoundError: no model.zip or config.json in `run_dir`.
        ValueError: an actor that reads more than the policy observation group, an observation
            size other than the run's config gives, or bad config values.
        RuntimeError: the ONNX actions differ from torch's by more than 1e-5.
    """
    import onnx
    import torch

    from gym_motion.deploy.metadata import deploy_metadata

    run = Path(run_dir)
    model, norm, config = _load_run(run)
    cfg = run_task_cfg(config, str(run / "config.json"))
    module, dim = _actor_module(model, norm)
    expected = sum(t.dim for t in cfg.observation_groups()["policy"].values())
    if dim != expected:
        raise ValueError(
            f"{run}: the actor reads {dim} values, the run's config gives a {expected}-value "
            "policy observation"
        )
    num_actions = int(model.policy.action_space.shape[0])
    if num_actions != cfg.robot.num_joints:
        raise ValueError(
            f"{run}: the model has {num_actions} actions, robot {cfg.robot.name!r} "
            f"{cfg.robot.num_joints} joints"
        )
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
    _write_atomic(Path(path), data)
    return {
        "path": str(path),
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
    if not diff <= CHECK_TOL:
        raise RuntimeError(f"ONNX actions differ from torch's by {diff:.3g} (> {CHECK_TOL})")
    return diff


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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
        "observation terms). Needs the [sb3] and [onnx] extras.",
    )
    p.add_argument("--model", required=True, metavar="RUN_DIR", help="a gym-motion train run")
    p.add_argument("-o", "--output", required=True, metavar="POLICY.onnx", help="ONNX file")
    p.add_argument("--opset", type=int, default=OPSET, help="ONNX opset (default %(default)s)")
    p.add_argument(
        "--no-check", action="store_true", help="skip the onnxruntime-vs-torch comparison"
    )
    p.set_defaults(func=_run_cli)


def _run_cli(args: argparse.Namespace) -> int:
    info = export_run(args.model, args.output, opset=args.opset, check=not args.no_check)
    checked = (
        "not checked (no onnxruntime)"
        if info["max_abs_diff"] is None
        else f"onnxruntime matches torch to {info['max_abs_diff']:.1e}"
    )
    print(
        f"wrote {info['path']}: obs ({info['obs_dim']}) -> actions ({info['num_actions']}), "
        f"{checked}"
    )
    print(f"observation terms: {info['metadata']['observation_names']}")
    return 0
