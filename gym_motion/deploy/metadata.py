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
  `DEPLOY_OBS_NAMES`, or gym_motion's term names), in the policy's order;
- observation processing (`OBSERVATION_TERM_KEYS`, mjlab's newer exports): each term clipped,
  then scaled (mjlab's order), as stated per term; a history of more than one frame is refused.

Any other key whose name says it shapes the observation or the action (`_SHAPING_WORDS`:
``obs``, ``action``, ``history``, ``scale``, ``clip``, ...) is refused in one line naming it
rather than silently ignored; informational keys (``run_path``, ``command_names``, ...) and
unrelated ones pass. A ``--policy-meta`` file may set a key to null to drop it.

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

from gym_motion.envs.config import (
    ANCHOR_VELOCITY_TERM,
    OBSERVED_OFFSET,
    TrackingEnvCfg,
    policy_terms,
)
from gym_motion.managers import observation as obs

__all__ = [
    "DEPLOY_OBS_NAMES",
    "METADATA_KEYS",
    "OBSERVATION_TERM_KEYS",
    "OBSERVED_FRAME_KEY",
    "PolicyMapping",
    "PolicyMeta",
    "ROOT_ORIGIN_VELOCITY",
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
    "observation_terms_scale",
    "observation_terms_flatten_history_dim",
    "observation_terms_history_length",
    "observation_terms_clip",
)
"""The metadata keys of a deployable tracking policy (mjlab's exporter writes the same)."""

OBSERVED_FRAME_KEY = "observed_frame"
"""gym_motion's own key: the reference frame the policy observes, "next" (mjlab's convention,
assumed when the key is absent) or "current" (gym_motion's before 2026-12-08);
`TrackingEnvCfg.observed_frame`."""

OBSERVATION_TERM_KEYS = METADATA_KEYS[-4:]
"""Per observation term, in `observation_names` order, as mjlab's newer exporter writes them:
scale (a number, or ``[v, ...]`` one per column), whether a history is flattened (0/1),
history length in frames (0 or 1: the current frame only), clip (``[lo, hi]``; ``lo;hi``
is read too)."""

# Words in a key's name that say it shapes what the policy observes or does: such a key that
# this module does not apply is refused, not ignored.
_SHAPING_WORDS = ("obs", "action", "history", "scale", "clip", "normali", "delay", "input")

REQUIRED_KEYS = ("joint_names", "default_joint_pos", "action_scale", "observation_names")
"""Keys without which a policy cannot be mapped onto an env."""

DEPLOY_OBS_NAMES = {
    obs.command: "command",
    obs.anchor_pos_b: "motion_anchor_pos_b",
    obs.anchor_ori_b: "motion_anchor_ori_b",
    obs.imu_lin_vel: "base_lin_vel",
    obs.base_lin_vel: "base_origin_lin_vel",
    obs.base_ang_vel: "base_ang_vel",
    obs.joint_pos: "joint_pos",
    obs.joint_vel: "joint_vel",
    obs.last_action: "actions",
}
"""Observation term function -> its name in deploy metadata (mjlab's observation term names).
A term without an entry is written under its gym_motion term name. The root origin's velocity
of older run folders (`obs.base_lin_vel`) is not mjlab's ``base_lin_vel`` (the IMU site's,
`obs.imu_lin_vel`), so it has a name of its own that a deploy stack refuses, not misreads."""

_DEPLOY_NAMES = frozenset(DEPLOY_OBS_NAMES.values())

ROOT_ORIGIN_VELOCITY = DEPLOY_OBS_NAMES[obs.base_lin_vel]
"""The deploy name of the root origin's velocity (gym_motion's ``base_lin_vel`` before
2026-12-08; `gym_motion.envs.config.with_root_origin_velocity`)."""

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
    command. The per-term keys (`OBSERVATION_TERM_KEYS`) say the env's own processing: each
    term's scale (1 when it has none) and clip (``[-inf, inf]`` when none, as mjlab writes
    it), history of 1 frame (flattened).

    Returns:
        key -> value, all strings (numbers by `format_numbers`).
    """
    robot = cfg.robot
    terms = cfg.observations["policy"]
    n = len(terms)
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
        "observation_terms_scale": format_numbers(
            [1.0 if t.scale is None else t.scale for t in terms.values()]
        ),
        "observation_terms_flatten_history_dim": format_numbers([1.0] * n),
        "observation_terms_history_length": format_numbers([1.0] * n),
        "observation_terms_clip": ",".join(
            "[-inf, inf]" if t.clip is None else f"[{format_numbers(t.clip).replace(',', ', ')}]"
            for t in terms.values()
        ),
        OBSERVED_FRAME_KEY: cfg.observed_frame,
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


def _split_top_level(text: str) -> list[str]:
    """Split at commas outside brackets: ``"1.0,[0.5, 2.0]"`` -> ``["1.0", "[0.5, 2.0]"]``."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [item.strip() for item in items]


def _term_numbers(item: Any, key: str, source: str) -> tuple[float, ...]:
    """One term's entry: a number, ``[a, b, ...]``, ``a;b``, or a list -> floats (inf allowed)."""
    if isinstance(item, str):
        text = item.strip()
        if text.startswith("[") and text.endswith("]"):
            parts = [t.strip() for t in text[1:-1].split(",")]
        else:
            parts = [t.strip() for t in text.split(";")]
    elif isinstance(item, Sequence):
        parts = list(item)
    else:
        parts = [item]
    values = []
    for part in parts:
        try:
            if isinstance(part, bool):
                raise ValueError
            value = float(part)
        except (TypeError, ValueError):
            raise ValueError(f"{source}: {key} has a non-number {item!r}") from None
        if np.isnan(value):
            raise ValueError(f"{source}: {key} has NaN in {item!r}")
        values.append(value)
    return tuple(values)


def _per_term(
    value: Any, key: str, source: str, names: tuple[str, ...]
) -> tuple[tuple[float, ...], ...]:
    """A per-term key's entries, one per observation term (see `OBSERVATION_TERM_KEYS`)."""
    items = _split_top_level(value) if isinstance(value, str) else value
    if not isinstance(items, Sequence) or isinstance(items, str):
        raise ValueError(f"{source}: {key} must be a list with one entry per term, got {value!r}")
    if len(items) != len(names):
        raise ValueError(
            f"{source}: {key} has {len(items)} entries for {len(names)} observation_names"
        )
    return tuple(_term_numbers(item, key, source) for item in items)


def _observation_processing(
    values: Mapping[str, Any], source: str, names: tuple[str, ...]
) -> dict[str, Any]:
    """`PolicyMeta`'s observation_scale and observation_clip from the per-term keys.

    Raises:
        ValueError: malformed entries, a clip that is not ``lo <= hi``, a history length other
            than 0 or 1 (the key and terms named).
    """
    out: dict[str, Any] = {}
    if "observation_terms_history_length" in values:
        key = "observation_terms_history_length"
        lengths = _per_term(values[key], key, source, names)
        long = {n: h[0] for n, h in zip(names, lengths, strict=True) if h != (0.0,) and h != (1.0,)}
        if long:
            raise ValueError(
                f"{source}: {key} asks for {long} frames; gym_motion feeds each term's current "
                "frame only (0 or 1), observation history is not supported"
            )
    if "observation_terms_flatten_history_dim" in values:  # no history: nothing to flatten
        key = "observation_terms_flatten_history_dim"
        _per_term(values[key], key, source, names)
    if "observation_terms_scale" in values:
        key = "observation_terms_scale"
        scales = _per_term(values[key], key, source, names)
        if any(not np.isfinite(v) for s in scales for v in s):
            raise ValueError(f"{source}: {key} must be finite, got {values[key]!r}")
        out["observation_scale"] = tuple(np.array(s, np.float32) for s in scales)
    if "observation_terms_clip" in values:
        key = "observation_terms_clip"
        clips = _per_term(values[key], key, source, names)
        bad = [n for n, c in zip(names, clips, strict=True) if len(c) != 2 or c[0] > c[1]]
        if bad:
            raise ValueError(f"{source}: {key} must be [lo, hi] with lo <= hi, not for {bad}")
        out["observation_clip"] = tuple((c[0], c[1]) for c in clips)
    return out


def _refuse_unapplied_keys(values: Mapping[str, Any], source: str) -> None:
    """Refuse keys this module does not apply whose name says they shape the observation or
    the action (`_SHAPING_WORDS`)."""
    for key in values:
        if key in METADATA_KEYS or key == OBSERVED_FRAME_KEY:
            continue
        if any(word in key.lower() for word in _SHAPING_WORDS):
            text = " ".join(str(values[key]).split())
            raise ValueError(
                f"{source}: metadata key {key!r} ({text[:60]!r}) would change what the policy "
                "observes or does and gym_motion does not apply it; set it to null in a "
                "--policy-meta file if it does not matter"
            )


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
        motion_files: the file names of the clips the policy was trained on (``gym-motion
            export`` writes them; informational), or None.
        observed_frame: the reference frame it observes (`OBSERVED_FRAME_KEY`): "next"
            (mjlab's; the default) or "current".
        observation_scale: per term, float32 (1,) or (D_term,), multiplying the term after
            its clip; None when not stated (1).
        observation_clip: per term (lo, hi), applied before the scale (+-inf: none); None
            when not stated.
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
    motion_files: tuple[str, ...] | None = None
    observation_scale: tuple[np.ndarray, ...] | None = None
    observation_clip: tuple[tuple[float, float], ...] | None = None
    observed_frame: str = "next"
    source: str = "policy metadata"

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], source: str) -> PolicyMeta:
        """Parse metadata: each value a comma-separated string (as in ONNX ``metadata_props``)
        or a list; a key whose value is None is dropped. Keys outside `METADATA_KEYS` are
        ignored (e.g. mjlab's ``run_path``) unless their name says they shape the observation
        or the action (`_SHAPING_WORDS`): those are refused.

        Raises:
            ValueError: a required key (`REQUIRED_KEYS`) missing, an `OBSERVED_FRAME_KEY` other
                than "next" or "current", a non-number, an array whose
                length is not the joint count, a non-positive action scale, per-term keys
                (`OBSERVATION_TERM_KEYS`) without one entry per term, an observation history,
                or a key that would shape the observation or action and is not applied (the
                message names `source` and the key).
        """
        values = {k: v for k, v in values.items() if v is not None}
        _refuse_unapplied_keys(values, source)
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
            k: _names(values[k], k, source)
            for k in ("body_names", "command_names", "motion_files")
            if k in values
        }
        anchor = values.get("anchor_body_name")
        terms = _names(values["observation_names"], "observation_names", source)
        frame = str(values.get(OBSERVED_FRAME_KEY, "next")).strip()
        if frame not in OBSERVED_OFFSET:
            raise ValueError(f"{source}: {OBSERVED_FRAME_KEY} must be one of "
                             f"{tuple(OBSERVED_OFFSET)}, got {frame!r}")  # fmt: skip
        return cls(
            observed_frame=frame,
            joint_names=joints,
            observation_names=terms,
            anchor_body_name=None if anchor is None else str(anchor).strip(),
            source=source,
            **arrays,
            **optional_names,
            **_observation_processing(values, source, terms),
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
        154-value one serves (each 6 values more with `needs_anchor_velocity`)."""
        cfg = cfg or TrackingEnvCfg()
        terms = policy_terms(True, cfg.robot)
        needed = {"base_lin_vel"} if ROOT_ORIGIN_VELOCITY in self.observation_names else set()
        for name in self.observation_names:
            key = _term_key(name, terms)
            if key is not None:
                needed.add(key)
        return any(k in needed for k in _STATE_ESTIMATION_ONLY)

    def needs_anchor_velocity(self) -> bool:
        """Whether the policy observes the reference anchor's velocity (``anchor_vel``), which
        only an env with `TrackingEnvCfg.anchor_velocity_obs` provides."""
        return any(_term_key(n, ANCHOR_VELOCITY_TERM) for n in self.observation_names)

    def mapping(self, cfg: TrackingEnvCfg, env_name: str = "the env") -> PolicyMapping:
        """How to feed this policy from an env of `cfg` and apply its actions there.

        Args:
            cfg: the env's task config (robot, state estimation).
            env_name: how messages name the env (e.g. its id).

        Raises:
            ValueError: (one line, naming `source` and the env) another joint count, joint
                names the robot lacks, another anchor body, an observation term that is
                unknown or that the env's policy observation lacks, another observed reference
                frame (`OBSERVED_FRAME_KEY`), an env that clips or
                scales its policy terms.

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
    """The key of the term of `terms` that a policy's observation name `name` means: the term
    whose deploy name (`DEPLOY_OBS_NAMES`) it is, or whose key it is unless that key is
    another function's deploy name (an env whose ``base_lin_vel`` reads the root origin does
    not serve a policy that observes mjlab's ``base_lin_vel``)."""
    for key, term in terms.items():
        deploy = DEPLOY_OBS_NAMES.get(term.func)
        if name == deploy or (name == key and (deploy is None or key not in _DEPLOY_NAMES)):
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
        obs_clip: float32 (2, D), each column's (lo, hi) bounds; obs_scale: float32 (D,), each
            column's scale (from `PolicyMeta.observation_clip` / ``observation_scale``).
        scaled, clipped, processed: whether any column is scaled / clipped / either.
    """

    def __init__(self, meta: PolicyMeta, cfg: TrackingEnvCfg, env_name: str = "the env"):
        robot = cfg.robot
        src = meta.source
        j = robot.num_joints
        if meta.observed_frame != cfg.observed_frame:
            raise ValueError(
                f"{src}: the policy observes the {meta.observed_frame} reference frame "
                f"({OBSERVED_FRAME_KEY}), {env_name} shows the {cfg.observed_frame} one; build "
                f"the env with TrackingEnvCfg(observed_frame={meta.observed_frame!r}) "
                "(OnnxPolicy.env_cfg() does)"
            )
        if meta.num_joints != j:
            raise ValueError(
                f"{src}: the policy has {meta.num_joints} joints, robot {robot.name!r} of "
                f"{env_name} has {j}; a policy of another robot cannot be mapped"
            )
        index = {n: i for i, n in enumerate(robot.joint_names)}
        unknown = [n for n in meta.joint_names if n not in index]
        if unknown:
            raise ValueError(f"{src}: joint_names {unknown} are not joints of robot {robot.name!r}")
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

        env_terms = cfg.observations["policy"]
        processed = [k for k, t in env_terms.items() if t.clip is not None or t.scale is not None]
        if processed:
            raise ValueError(
                f"{env_name} clips or scales the policy terms {processed}; a mapped policy reads "
                "the env's terms as they are computed and applies its own clip and scale: "
                "build the env without them"
            )
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
                if name in env_terms:  # that key is another quantity there
                    other = DEPLOY_OBS_NAMES.get(env_terms[name].func, name)
                    raise ValueError(
                        f"{src}: the policy observes {name!r}, but {env_name}'s {name!r} term is "
                        f"{other!r} (another quantity; docs/task.md section 13)"
                    )
                if _term_key(name, ANCHOR_VELOCITY_TERM) is not None:
                    raise ValueError(
                        f"{src}: the policy observes {name!r}, which {env_name} does not "
                        "provide (it needs with_anchor_velocity(cfg))"
                    )
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
        self._set_processing(meta)
        self._identity_obs = (
            not self.permuted
            and not self.rebased
            and not self.processed
            and [b[1] for b in self.blocks] == list(env_terms)
        )

    def _set_processing(self, meta: PolicyMeta) -> None:
        """Per-column clip bounds and scale (float32 (obs_dim,)) from the per-term metadata."""
        src = meta.source
        self.obs_scale = np.ones(self.obs_dim, np.float32)
        self.obs_clip = np.full((2, self.obs_dim), [[-np.inf], [np.inf]], np.float32)
        for k, (name, _, _, ps) in enumerate(self.blocks):
            if meta.observation_scale is not None:
                scale = meta.observation_scale[k]
                width = ps.stop - ps.start
                if scale.size not in (1, width):
                    raise ValueError(
                        f"{src}: observation_terms_scale gives {scale.size} values for term "
                        f"{name!r} of {width} columns"
                    )
                self.obs_scale[ps] = scale
            if meta.observation_clip is not None:
                self.obs_clip[:, ps] = np.array(meta.observation_clip[k], np.float32)[:, None]
        self.scaled = bool((self.obs_scale != 1.0).any())
        self.clipped = bool(np.isfinite(self.obs_clip).any())
        self.processed = self.scaled or self.clipped

    def describe(self) -> str:
        """One line: what the mapping does."""
        parts = ["joint order permuted" if self.permuted else "joint order as the env's"]
        for key, names in self.differs.items():
            parts.append(f"{key} differs for {len(names)} joints" if names else f"{key} as env's")
        parts.append(f"observation {self.obs_dim} of the env's {self.env_obs_dim} values")
        clipped = np.isfinite(self.obs_clip).any(axis=0)
        for what, cols in (("clipped", clipped), ("scaled", self.obs_scale != 1.0)):
            terms = [name for name, _, _, ps in self.blocks if cols[ps].any()]
            if terms:
                parts.append(f"{what}: {','.join(terms)}")
        return "; ".join(parts)

    def observation(self, env_obs: np.ndarray) -> np.ndarray:
        """The policy's observation from the env's.

        Args:
            env_obs: (N, env_obs_dim) float32, the env's policy observation.

        Returns:
            (N, obs_dim) float32: the policy's terms in its order; per-joint blocks in its
            joint order; joint positions relative to its default pose; the last-action block
            as the policy's own last output (0 after a reset, when the env's is all 0); then
            each column clipped to `obs_clip` and multiplied by `obs_scale` (mjlab's order).

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
        out = self._terms(env_obs)
        if self.clipped:
            np.clip(out, self.obs_clip[0], self.obs_clip[1], out=out)
        if self.scaled:
            out *= self.obs_scale
        return out

    def _terms(self, env_obs: np.ndarray) -> np.ndarray:
        """The policy's terms before clip and scale (a new array)."""
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
