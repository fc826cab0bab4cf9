"""Deploy metadata of a tracking policy, and its mapping onto an env's robot and observation.

Deployment stacks for BeyondMimic-style policies (mjlab's ONNX exporter writes them) read a
policy's conventions from string metadata stored in the ONNX file (``metadata_props``): the
keys of `METADATA_KEYS`, lists as comma-separated values (numbers in decimal notation). This
module writes them for a task config (`deploy_metadata`, used by the exporters), reads them
back from ONNX properties or a small YAML/JSON file (`PolicyMeta`) and maps a policy's
conventions onto an env (`PolicyMeta.mapping`, a `PolicyMapping`):

- joint order: per-joint observation blocks are permuted into the policy's order and its
  actions back into the env's;
- default pose and action scale: joint positions are re-based on the policy's default pose,
  the last-action block carries the policy's own last output, and the policy's targets
  ``default_p + scale_p * a_p`` become the env's actions ``(target - default_e) / scale_e``;
- observation terms: each name picks the env's term of that name (mjlab's names, as in
  `DEPLOY_OBS_NAMES`, or gym_motion's term names), in the policy's order.

A number written with d >= 3 decimals (``"0.548"``) stands for the env's value when the
env's value rounds to it (mjlab writes 3 decimals): such a joint keeps the env's exact value,
so a policy of the env's own conventions is fed unchanged. Numbers with fewer decimals are
taken as exact. What cannot be mapped (another joint count or
names, another anchor body, an observation term the env does not have) raises a one-line
``ValueError``; stiffness and damping other than the env's give a ``UserWarning`` (the env's
gains cannot be changed from here).

Needs NumPy only (and PyYAML for ``.yaml`` files).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np

from gym_motion.envs.config import TrackingEnvCfg, policy_terms
from gym_motion.managers import observation as obs

__all__ = [
    "DEPLOY_OBS_NAMES",
    "METADATA_KEYS",
    "PolicyMapping",
    "PolicyMeta",
    "deploy_metadata",
    "format_numbers",
]

METADATA_KEYS = (
    "joint_names",
    "joint_stiffness",
    "joint_damping",
    "default_joint_pos",
    "action_scale",
    "anchor_body_name",
    "body_names",
    "observation_names",
    "command_names",
)
"""The metadata keys of a deployable tracking policy (mjlab's exporter writes the same)."""

REQUIRED_KEYS = ("joint_names", "default_joint_pos", "action_scale", "observation_names")
"""Keys without which a policy cannot be mapped onto an env."""

DEPLOY_OBS_NAMES = {
    obs.command: "command",
    obs.anchor_pos_b: "motion_anchor_pos_b",
    obs.anchor_ori_b: "motion_anchor_ori_b",
    obs.base_lin_vel: "base_lin_vel",
    obs.base_ang_vel: "base_ang_vel",
    obs.joint_pos: "joint_pos",
    obs.joint_vel: "joint_vel",
    obs.last_action: "actions",
}
"""Observation term function -> its name in deploy metadata (mjlab's observation term names).
A term without an entry is written under its gym_motion term name."""

# How an observation term's columns depend on the joints (J = joint count): "command" is the
# reference joint positions then velocities (2J), "joint_pos" joint positions minus the default
# pose (J), "joint" any other per-joint block (J), "last_action" the previous action (J). Terms
# not listed do not depend on the joint order or pose and pass through unchanged.
_JOINT_LAYOUT = {
    obs.command: "command",
    obs.joint_pos: "joint_pos",
    obs.joint_vel: "joint",
    obs.last_action: "last_action",
}

# Numbers written with this many decimals or more may be rounded values (mjlab writes 3).
_MIN_DECIMALS = 3

# The term names that only a state-estimating robot can fill (docs/task.md section 5).
_STATE_ESTIMATION_ONLY = ("anchor_pos", "base_lin_vel")


def format_numbers(values: Sequence[float] | np.ndarray) -> str:
    """Numbers as deploy metadata writes them: comma-separated, decimal notation with a
    decimal point, the shortest text that reads back as the same float32 (the precision the
    env computes in), e.g. ``"-0.312,0.0,0.54754645"``."""
    return ",".join(
        np.format_float_positional(np.float32(v), trim="0", unique=True) for v in values
    )


def deploy_metadata(cfg: TrackingEnvCfg) -> dict[str, str]:
    """The deploy metadata (`METADATA_KEYS`) of a policy trained on `cfg`.

    Every value comes from the config: the robot's joint order, gains (kp, kd), default pose,
    action scale, anchor and tracked bodies, and the policy observation group's terms (their
    deploy names, `DEPLOY_OBS_NAMES`). ``command_names`` is ``"motion"``, the task's one
    command.

    Returns:
        key -> value, all strings (numbers by `format_numbers`).
    """
    robot = cfg.robot
    terms = cfg.observation_groups()["policy"]
    return {
        "joint_names": ",".join(robot.joint_names),
        "joint_stiffness": format_numbers(robot.kp),
        "joint_damping": format_numbers(robot.kd),
        "default_joint_pos": format_numbers(robot.default_joint_pos),
        "action_scale": format_numbers(robot.action_scale),
        "anchor_body_name": robot.anchor_body,
        "body_names": ",".join(robot.tracked_bodies),
        "observation_names": ",".join(DEPLOY_OBS_NAMES.get(t.func, k) for k, t in terms.items()),
        "command_names": "motion",
    }


def _names(value: Any, key: str, source: str) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, Sequence) or isinstance(items, str):
        raise ValueError(f"{source}: {key} must be a list of names, got {value!r}")
    names = tuple(str(v).strip() for v in items)
    if not all(names):
        raise ValueError(f"{source}: {key} has an empty name: {value!r}")
    return names


def _numbers(value: Any, key: str, source: str) -> tuple[np.ndarray, np.ndarray]:
    """(values, rounding of each) as float64: half a unit of the last written decimal for
    values written with `_MIN_DECIMALS` or more decimals, else 0 (taken as exact)."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, Sequence) or isinstance(items, str):
        raise ValueError(f"{source}: {key} must be a list of numbers, got {value!r}")
    vals, tols = [], []
    for item in items:
        text = item.strip() if isinstance(item, str) else repr(item)
        try:
            d = Decimal(text)
        except InvalidOperation:
            raise ValueError(f"{source}: {key} has a non-number {item!r}") from None
        if not d.is_finite() or isinstance(item, bool):
            raise ValueError(f"{source}: {key} has a non-finite or non-number value {item!r}")
        exponent = d.as_tuple().exponent
        vals.append(float(d))
        tols.append(0.5 * 10.0**exponent if exponent <= -_MIN_DECIMALS else 0.0)
    return np.array(vals, np.float64), np.array(tols, np.float64)


@dataclass(frozen=True, eq=False)
class PolicyMeta:
    """The conventions of a tracking policy, as its deploy metadata states them.

    Per-joint arrays are float64 (J,) in the policy's joint order; ``*_tol`` arrays hold the
    rounding each written value may carry (half a unit of its last decimal when written with 3
    or more decimals, else 0).

    Attributes:
        joint_names: (J,) the policy's joint order (of its actions and per-joint observations).
        default_joint_pos: rad. action_scale: rad per unit action (target = default + scale *
            action).
        observation_names: the terms of its observation, in order.
        joint_stiffness, joint_damping: N m/rad and N m s/rad, or None when not stated.
        anchor_body_name: the body its anchor-frame terms use, or None.
        body_names, command_names: as stated (informational), or None.
        source: where the metadata came from (for messages).
    """

    joint_names: tuple[str, ...]
    default_joint_pos: np.ndarray
    default_joint_pos_tol: np.ndarray
    action_scale: np.ndarray
    action_scale_tol: np.ndarray
    observation_names: tuple[str, ...]
    joint_stiffness: np.ndarray | None = None
    joint_stiffness_tol: np.ndarray | None = None
    joint_damping: np.ndarray | None = None
    joint_damping_tol: np.ndarray | None = None
    anchor_body_name: str | None = None
    body_names: tuple[str, ...] | None = None
    command_names: tuple[str, ...] | None = None
    source: str = "policy metadata"

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], source: str) -> PolicyMeta:
        """Parse metadata: each value a comma-separated string (as in ONNX ``metadata_props``)
        or a list; keys outside `METADATA_KEYS` are ignored (e.g. mjlab's ``run_path``).

        Raises:
            ValueError: a required key (`REQUIRED_KEYS`) missing, a non-number, an array whose
                length is not the joint count, or a non-positive action scale (the message
                names `source` and the key).
        """
        missing = [k for k in REQUIRED_KEYS if k not in values]
        if missing:
            raise ValueError(
                f"{source}: no {', '.join(missing)} in the policy metadata; give them in a "
                f"YAML/JSON file (--policy-meta) with keys {', '.join(METADATA_KEYS)}"
            )
        joints = _names(values["joint_names"], "joint_names", source)
        if len(set(joints)) != len(joints):
            dup = sorted({j for j in joints if joints.count(j) > 1})
            raise ValueError(f"{source}: joint_names repeats {dup}")
        arrays: dict[str, Any] = {}
        for key in ("default_joint_pos", "action_scale", "joint_stiffness", "joint_damping"):
            if key not in values:
                continue
            vals, tols = _numbers(values[key], key, source)
            if vals.shape != (len(joints),):
                raise ValueError(
                    f"{source}: {key} has {vals.size} values for {len(joints)} joint_names"
                )
            arrays[key], arrays[key + "_tol"] = vals, tols
        if (arrays["action_scale"] <= 0).any():
            bad = [joints[i] for i in np.flatnonzero(arrays["action_scale"] <= 0)]
            raise ValueError(f"{source}: action_scale must be positive, not for {bad}")
        optional_names = {
            k: _names(values[k], k, source) for k in ("body_names", "command_names") if k in values
        }
        anchor = values.get("anchor_body_name")
        return cls(
            joint_names=joints,
            observation_names=_names(values["observation_names"], "observation_names", source),
            anchor_body_name=None if anchor is None else str(anchor).strip(),
            source=source,
            **arrays,
            **optional_names,
        )

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> PolicyMeta:
        """Read metadata from a YAML (``.yaml``/``.yml``, needs PyYAML) or JSON file: a mapping
        with the keys of `METADATA_KEYS`, values as lists or comma-separated strings.

        Raises:
            FileNotFoundError: no such file.
            ValueError: not a mapping, or bad values (see `from_mapping`).
        """
        return cls.from_mapping(read_meta_file(path), str(path))

    @property
    def num_joints(self) -> int:
        """J."""
        return len(self.joint_names)

    def needs_state_estimation(self, cfg: TrackingEnvCfg | None = None) -> bool:
        """Whether the policy observes a term only a state-estimating robot has (the anchor
        position or the base linear velocity): it then needs the 160-value env, else the
        154-value one serves."""
        cfg = cfg or TrackingEnvCfg()
        terms = policy_terms(True, cfg.robot)
        needed = set()
        for name in self.observation_names:
            key = _term_key(name, terms)
            if key is not None:
                needed.add(key)
        return any(k in needed for k in _STATE_ESTIMATION_ONLY)

    def mapping(self, cfg: TrackingEnvCfg, env_name: str = "the env") -> PolicyMapping:
        """How to feed this policy from an env of `cfg` and apply its actions there.

        Args:
            cfg: the env's task config (robot, state estimation).
            env_name: how messages name the env (e.g. its id).

        Raises:
            ValueError: (one line, naming `source` and the env) another joint count, joint
                names the robot lacks, another anchor body, an observation term that is
                unknown or that the env's policy observation lacks.

        Warns:
            UserWarning: stated joint stiffness or damping other than the robot's.
        """
        return PolicyMapping(self, cfg, env_name)


def read_meta_file(path: str | os.PathLike) -> dict[str, Any]:
    """The mapping stored in a metadata YAML/JSON file (see `PolicyMeta.from_file`)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"policy metadata file not found: {p}")
    text = p.read_text()
    if p.suffix.lower() in (".yaml", ".yml"):
        import yaml  # the [onnx] extra installs PyYAML

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(f"{p}: not valid YAML ({' '.join(str(exc).split())})") from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{p}: not valid JSON ({exc}); use .yaml for YAML") from None
    if not isinstance(data, dict):
        raise ValueError(f"{p}: expected a mapping of metadata keys, got {type(data).__name__}")
    return data


def _term_key(name: str, terms: Mapping[str, Any]) -> str | None:
    """The key of the term of `terms` that `name` names (its key or its deploy name)."""
    for key, term in terms.items():
        if name == key or name == DEPLOY_OBS_NAMES.get(term.func):
            return key
    return None


def _same(policy: np.ndarray, tol: np.ndarray, env: np.ndarray) -> np.ndarray:
    """(J,) bool: the policy's written value is the env's value, as float32 (the precision the
    env computes in) or at the written precision (`tol`, with a hair of float64 slack)."""
    as_f32 = policy.astype(np.float32) == env.astype(np.float32)
    return as_f32 | (np.abs(policy - env) <= tol * (1.0 + 1e-9) + 1e-12)


class PolicyMapping:
    """A policy's conventions mapped onto an env's: observations in, actions out.

    Built by `PolicyMeta.mapping`. ``perm[i]`` is the env's index of the policy's joint i.
    Attributes ``default_joint_pos`` and ``action_scale`` are the values used, float64 (J,) in
    the policy's order (the env's own where the metadata states them at its precision).

    Attributes:
        obs_dim: D, the policy's observation size; env_obs_dim: the env's.
        permuted, rebased: whether the joint order / default pose or action scale differ.
        blocks: (policy term name, env term key, env column slice, policy column slice).
    """

    def __init__(self, meta: PolicyMeta, cfg: TrackingEnvCfg, env_name: str = "the env"):
        robot = cfg.robot
        src = meta.source
        j = robot.num_joints
        if meta.num_joints != j:
            raise ValueError(
                f"{src}: the policy has {meta.num_joints} joints, robot {robot.name!r} of "
                f"{env_name} has {j}; a policy of another robot cannot be mapped"
            )
        index = {n: i for i, n in enumerate(robot.joint_names)}
        unknown = [n for n in meta.joint_names if n not in index]
        if unknown:
            raise ValueError(
                f"{src}: joint_names {unknown} are not joints of robot {robot.name!r}"
            )
        if meta.anchor_body_name is not None and meta.anchor_body_name != robot.anchor_body:
            raise ValueError(
                f"{src}: the policy's anchor body is {meta.anchor_body_name!r}, {env_name}'s "
                f"is {robot.anchor_body!r}; anchor-frame observations cannot be re-based"
            )
        self.perm = perm = np.array([index[n] for n in meta.joint_names], np.int64)
        self.permuted = bool((perm != np.arange(j)).any())
        env_def = robot.default_joint_pos[perm]
        env_scale = robot.action_scale[perm]
        same_def = _same(meta.default_joint_pos, meta.default_joint_pos_tol, env_def)
        same_scale = _same(meta.action_scale, meta.action_scale_tol, env_scale)
        self.default_joint_pos = np.where(same_def, env_def, meta.default_joint_pos)
        self.action_scale = np.where(same_scale, env_scale, meta.action_scale)
        self.rebased = not (same_def.all() and same_scale.all())
        self.differs = {
            "default_joint_pos": [meta.joint_names[i] for i in np.flatnonzero(~same_def)],
            "action_scale": [meta.joint_names[i] for i in np.flatnonzero(~same_scale)],
        }
        for key, env_vals in (("joint_stiffness", robot.kp), ("joint_damping", robot.kd)):
            vals = getattr(meta, key)
            if vals is None:
                continue
            off = ~_same(vals, getattr(meta, key + "_tol"), env_vals[perm])
            if off.any():
                names = [meta.joint_names[i] for i in np.flatnonzero(off)]
                warnings.warn(
                    f"{src}: {key} differs from robot {robot.name!r}'s for {names}; "
                    f"{env_name} keeps its own gains",
                    UserWarning,
                    stacklevel=3,
                )
        # float32 copies for the per-step math, in the policy's joint order
        self._env_def = env_def.astype(np.float32)
        self._env_scale = env_scale.astype(np.float32)
        self._pol_def = self.default_joint_pos.astype(np.float32)
        self._pol_scale = self.action_scale.astype(np.float32)

        env_terms = cfg.observation_groups()["policy"]
        all_terms = policy_terms(True, robot)
        env_slices, start = {}, 0
        for key, term in env_terms.items():
            env_slices[key] = slice(start, start + term.dim)
            start += term.dim
        self.env_obs_dim = start
        self.blocks: list[tuple[str, str, slice, slice]] = []
        self._layouts: list[str] = []
        pos = 0
        for name in meta.observation_names:
            key = _term_key(name, env_terms)
            if key is None:
                if _term_key(name, all_terms) is not None:
                    raise ValueError(
                        f"{src}: the policy observes {name!r}, which {env_name} does not "
                        "provide (it needs state estimation: the 160-value observation)"
                    )
                known = [DEPLOY_OBS_NAMES.get(t.func, k) for k, t in env_terms.items()]
                raise ValueError(
                    f"{src}: unknown observation term {name!r}; {env_name} provides {known}"
                )
            dim = env_terms[key].dim
            self.blocks.append((name, key, env_slices[key], slice(pos, pos + dim)))
            self._layouts.append(_JOINT_LAYOUT.get(env_terms[key].func, "plain"))
            pos += dim
        self.obs_dim = pos
        self._identity_obs = (
            not self.permuted
            and not self.rebased
            and [b[1] for b in self.blocks] == list(env_terms)
        )

    def describe(self) -> str:
        """One line: what the mapping does."""
        parts = ["joint order permuted" if self.permuted else "joint order as the env's"]
        for key, names in self.differs.items():
            parts.append(f"{key} differs for {len(names)} joints" if names else f"{key} as env's")
        parts.append(f"observation {self.obs_dim} of the env's {self.env_obs_dim} values")
        return "; ".join(parts)

    def observation(self, env_obs: np.ndarray) -> np.ndarray:
        """The policy's observation from the env's.

        Args:
            env_obs: (N, env_obs_dim) float32, the env's policy observation.

        Returns:
            (N, obs_dim) float32: the policy's terms in its order; per-joint blocks in its
            joint order; joint positions relative to its default pose; the last-action block
            as the policy's own last output (0 after a reset, when the env's is all 0).

        Raises:
            ValueError: `env_obs` of the wrong shape.
        """
        env_obs = np.asarray(env_obs, np.float32)
        if env_obs.ndim != 2 or env_obs.shape[1] != self.env_obs_dim:
            raise ValueError(
                f"expected the env's policy observation (N, {self.env_obs_dim}), got "
                f"{env_obs.shape}"
            )
        if self._identity_obs:
            return env_obs
        out = np.empty((env_obs.shape[0], self.obs_dim), np.float32)
        j = len(self.perm)
        for (_, _, es, ps), layout in zip(self.blocks, self._layouts, strict=True):
            block = env_obs[:, es]
            if layout == "plain":
                out[:, ps] = block
            elif layout == "command":
                out[:, ps] = np.concatenate(
                    [block[:, :j][:, self.perm], block[:, j:][:, self.perm]], axis=1
                )
            elif layout == "joint":
                out[:, ps] = block[:, self.perm]
            elif layout == "joint_pos":  # q - default_env  ->  q - default_policy
                out[:, ps] = block[:, self.perm] + (self._env_def - self._pol_def)
            else:  # last_action: the env's last action -> the policy output that produced it
                last = block[:, self.perm]
                if self.rebased:
                    target = self._env_def + self._env_scale * last
                    raw = (target - self._pol_def) / self._pol_scale
                    out[:, ps] = np.where((block == 0.0).all(axis=1, keepdims=True), 0.0, raw)
                else:
                    out[:, ps] = last
        return out

    def actions(self, policy_actions: np.ndarray) -> np.ndarray:
        """The env's actions for the policy's outputs.

        Args:
            policy_actions: (N, J) in the policy's joint order and units.

        Returns:
            (N, J) float32 env actions, the same joint position targets
            ``default_p + scale_p * a_p`` in the env's joint order and action units.
        """
        a = np.asarray(policy_actions, np.float32)
        if self.rebased:
            target = self._pol_def + self._pol_scale * a
            a = (target - self._env_def) / self._env_scale
        out = np.empty_like(a, dtype=np.float32)
        out[:, self.perm] = a
        return out
