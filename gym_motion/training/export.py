"""A trained run (any library's) as a deployable ONNX policy (``gym-motion export``).

    gym-motion export --model runs/dance -o dance.onnx
    gym-motion eval --onnx dance.onnx --motion dance.npz        # runs it back in the env

The library that trained the run gives the graph (`gym_motion.training.RunFolder.actor_module`):
the deterministic actor with the observation normalisation folded in, a torch module from the
policy observation ``obs`` (B, D) float32 (160 values, 154 without state estimation, 6
more with ``anchor_velocity_obs``; the "policy" group an asymmetric actor reads) to
``actions`` (B, J) float32 in the robot's joint order, in BeyondMimic's convention (target =
default pose + action scale x actions): a run with residual actions
(``action_offset="reference"``) has the reference joint positions of its observation folded
into the graph. B is dynamic.

The ONNX ``metadata_props`` hold the deploy metadata that deployment stacks for BeyondMimic
policies read (`gym_motion.deploy.deploy_metadata`: joint names, stiffness, damping,
default pose, action scale, anchor body, tracked bodies, observation terms, command), all taken
from the run's ``config.json``, plus ``run_path`` (the run folder's name), ``motion_files`` (the
file names of the clips it trained on; eval and render ask for them) and ``training`` (one line
from summary.json: steps, minutes, how far it tracked; `training_note`). The graph is written by
torch's TorchScript-based exporter (``dynamo=False``: torch 2.13's default exporter needs the
onnxscript package, this one only ``onnx``), checked with ``onnx.checker`` and, when
onnxruntime is installed, against the torch module on random observations.
"""

from __future__ import annotations

import io
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from gym_motion.atomic import write_bytes

__all__ = ["MIN_OPSET", "OPSET", "export_run", "training_note"]

OPSET = 17
CHECK_TOL = 1e-5  # max |ONNX - torch| action difference accepted, relative to max(1, |action|)
MIN_OPSET = 9  # the SB3 actor's graph needs opset 9 (opset 7's Min needs equal input shapes)


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

    import gym_motion
    from gym_motion.deploy.metadata import deploy_metadata
    from gym_motion.motion import DEFAULT_MOTION_PATH
    from gym_motion.training.run_folder import RunFolder

    run = Path(run_dir)
    folder = RunFolder(run)
    if not folder.config_path.is_file():
        raise FileNotFoundError(
            f"{folder.config_path}: the run's config.json is needed for the deploy metadata"
        )
    library = folder.library()
    cfg = folder.env_cfg()
    module, dim, num_actions = folder.actor_module()
    expected = sum(t.dim for t in cfg.observations["policy"].values())
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
    if cfg.action_offset == "reference":
        module = _fold_reference(module, cfg)
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
    # the run folder's name only: an absolute path would publish the trainer's file system
    metadata = {**deploy_metadata(cfg), "run_path": Path(run).resolve().name}
    clips = [Path(m) for m in folder.motions()]
    if clips and clips != [DEFAULT_MOTION_PATH]:  # so that eval/render can ask for them
        metadata["motion_files"] = ",".join(m.name for m in clips)
    note = training_note(run)
    if note:
        metadata["training"] = note
    del proto.metadata_props[:]
    for key, value in metadata.items():
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, value
    proto.producer_name = "gym_motion"
    proto.producer_version = gym_motion.__version__  # not the torch exporter's version
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


def training_note(run_dir: str | os.PathLike) -> str | None:
    """One line on how a run was trained and how far its policy tracked, from its config.json
    and summary.json (the ONNX ``training`` metadata); None without a summary.

    Example: ``"gym_motion 0.1.0, sb3 ppo, 256 envs, seed 0, residual actions, uniform starts:
    12.0 M env steps, 2797 s of learning; from the clip start 173 of 529 steps, MPKPE 130.5 mm"``;
    a run with the anchor-horizontal termination says so after the actions (``"residual
    actions, anchor-horizontal termination 0.3 m from 12.0 M steps, uniform starts: ..."``, or
    ``"... 0.3 m from 2 s training episodes (on at 11.3 M steps), ..."``).
    """
    from importlib.metadata import version

    from gym_motion.training.run_folder import RunFolder

    folder = RunFolder(run_dir)
    summary = folder.summary()
    if summary is None:
        return None
    train = folder.train_settings()
    cfg = folder.env_cfg()
    offset = "residual actions" if cfg.action_offset == "reference" else "default-pose actions"
    term = cfg.terminations.get("anchor_horizontal")
    if term is not None:
        from gym_motion import curriculum as cur

        switches = {c.func: c.params for c in folder.run_config().curricula.values()
                    if c.params.get("term") == "anchor_horizontal"}  # fmt: skip
        start = switches.get(cur.termination_from_steps, {}).get("steps", 0)
        after = f" from {start / 1e6:g} M steps" if start else ""
        seconds = switches.get(cur.termination_from_episode_s, {}).get("seconds")
        if seconds is not None:
            after = f" from {seconds:g} s training episodes"
            switched = summary.get("terminations_switched_on")  # best/'s summary lacks it
            if switched is not None:
                on = switched.get("anchor_horizontal")
                after += " (never on)" if on is None else f" (on at {on / 1e6:.1f} M steps)"
        offset += f", anchor-horizontal termination {term.params['threshold']:g} m{after}"
    note = (
        f"gym_motion {version('gym_motion')}, {folder.library()} {train.get('algo', 'ppo')}, "
        f"{train.get('num_envs')} envs, seed {train.get('seed')}, {offset}, "
        f"{cfg.sampling.mode} starts: {summary['env_steps'] / 1e6:.1f} M env steps, "
        f"{summary['train_wall_s']:.0f} s of learning"
    )
    if "best_of" in summary:
        note += " (best/: the policy of the run's best evaluation)"
    clips = (summary.get("after") or {}).get("clips") or {}
    for result in clips.values():
        note += (
            f"; from the clip start {result['episode_length']:.0f} of "
            f"{result['max_episode_steps']} steps, MPKPE {result['mpkpe_mm']:.1f} mm"
        )
    return note


def _fold_reference(module, cfg):
    """A residual-action actor (target = reference joint positions + scale x action) as a
    BeyondMimic-convention one (target = default pose + scale x output): output = action +
    (reference joint positions - default pose) / scale, the reference read from the command
    term of the observation (its first J values). Deploy stacks then see the usual convention.

    Raises:
        ValueError: the policy observation has no command term, or clips or scales it.
    """
    import torch

    from gym_motion.managers.observation import command

    start = 0
    for term in cfg.observations["policy"].values():
        if term.func is command:
            break
        start += term.dim
    else:
        raise ValueError(
            "a run with action_offset 'reference' exports its actor with the reference joint "
            "positions folded in, read from the command observation term; its policy "
            "observation has none"
        )
    if term.clip is not None or term.scale is not None:
        raise ValueError(
            "a run with action_offset 'reference' exports its actor with the reference joint "
            "positions folded in, read from the command observation term as it is computed; "
            "this run clips or scales it"
        )
    robot = cfg.robot
    joints = robot.num_joints
    default = torch.tensor(np.array(robot.default_joint_pos), dtype=torch.float32)
    scale = torch.tensor(np.array(robot.action_scale), dtype=torch.float32)

    class ReferenceFold(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.actor = module
            self.register_buffer("default", default)
            self.register_buffer("scale", scale)

        def forward(self, obs: torch.Tensor) -> torch.Tensor:
            reference = obs[:, start : start + joints]
            return self.actor(obs) + (reference - self.default) / self.scale

    return ReferenceFold().eval()


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
