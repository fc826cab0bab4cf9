"""Typed configuration of the G1 tracking task; defaults equal docs/task.md.

Every task number lives here. To change the task, ``dataclasses.replace`` the config, e.g.
drop a reward term or reweight one::

    rewards = dict(TrackingEnvCfg().rewards)
    del rewards["self_collision"]
    rewards["action_rate"] = RewardTermCfg(reward.action_rate, weight=-0.2)
    cfg = dataclasses.replace(TrackingEnvCfg(), rewards=rewards)
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from gym_motion import config_values as cv
from gym_motion.managers import events, reward, termination
from gym_motion.managers import observation as obs
from gym_motion.managers.action import ACTION_OFFSETS
from gym_motion.managers.events import EventTermCfg
from gym_motion.managers.observation import ObsTermCfg
from gym_motion.managers.reward import RewardTermCfg
from gym_motion.managers.termination import TerminationTermCfg
from gym_motion.robots.g1 import G1
from gym_motion.robots.spec import RobotSpec


def _set(cfg: Any, name: str, value: Any) -> None:
    """Store a checked (normalised) value in frozen dataclass `cfg`."""
    object.__setattr__(cfg, name, value)


@dataclass(frozen=True)
class SimCfg:
    """Physics timing (docs/task.md section 1).

    Attributes:
        physics_dt: substep, s (> 0). decimation: substeps per control step (integer >= 1).
        self_contact_threshold: normal force, N, above which a self-contact counts (None: not
            counted).

    Raises:
        ValueError: a value out of its range or of the wrong type (named).
    """

    physics_dt: float = 0.005
    decimation: int = 4
    self_contact_threshold: float | None = 10.0

    def __post_init__(self) -> None:
        _set(self, "physics_dt", cv.real("SimCfg.physics_dt", self.physics_dt, low=0.0,
                                          low_open=True))  # fmt: skip
        _set(self, "decimation", cv.integer("SimCfg.decimation", self.decimation, low=1))
        if self.self_contact_threshold is not None:
            threshold = cv.real("SimCfg.self_contact_threshold", self.self_contact_threshold,
                                low=0.0)  # fmt: skip
            _set(self, "self_contact_threshold", threshold)

    @property
    def control_dt(self) -> float:
        """Control step, s."""
        return self.physics_dt * self.decimation


MAX_EPISODE_STEPS = 2**31  # episode counters are int32

# Settings each backend takes (the others must keep their defaults).
_BACKEND_SETTINGS = {
    "mujoco": ("num_threads", "cpu_ids"),
    "mjwarp": (
        "device", "nconmax", "njmax", "on_overflow", "deterministic", "contact_sensor_maxmatch",
    ),
    "motrix": ("num_threads", "cpu_ids"),
}  # fmt: skip
# Earlier defaults, which every config.json saved then holds, for any backend: still accepted
# beside a backend that does not take the setting (on_overflow was "raise" until it became
# "terminate"; the CPU backends have no capacity to overflow).
_FORMER_DEFAULTS = {"on_overflow": ("raise",)}


@dataclass(frozen=True)
class BackendCfg:
    """Which physics backend steps the envs, and its settings.

    Attributes:
        name: "mujoco" (official MuJoCo, CPU threads), "mjwarp" (MuJoCo Warp) or "motrix"
            (MotrixSim, CPU threads; the ``motrix`` extra).
        num_threads: physics threads (mujoco, motrix; None: every CPU the process may use).
        cpu_ids: CPUs to pin physics and Numba threads to (mujoco, motrix; Linux).
        device: Warp device (mjwarp; None: "cuda:$LOCAL_RANK" under torchrun, else "cuda:0",
            when Warp lists a GPU; else "cpu" with a warning saying why).
        nconmax, njmax: contacts and constraint rows per world (mjwarp).
        on_overflow: what a capacity overflow does (mjwarp): "terminate" (the default) ends
            the envs it affected, counted, and the run goes on; "raise" raises
            `CapacityOverflowError` naming them.
        deterministic: MuJoCo Warp's deterministic mode, for bit-reproducible GPU runs at a cost
            in speed (mjwarp; off by default).
        contact_sensor_maxmatch: contacts a contact sensor may match per world (mjwarp; None:
            the model's, else MuJoCo Warp's 64).
        mdp: where the MDP's per-step math runs: "host" (Numba on the CPU cores), "device"
            (Warp kernels on the mjwarp backend's device, or on Warp's CPU device beside
            another backend; `gym_motion.envs.device_mdp`) or "auto" (the default: "device"
            for mjwarp on a CUDA device, unless the task has a term or event of its own,
            which only the host MDP runs, or the device MDP cannot be built there: both
            warned; else "host"). `TrackingVecEnv.mdp_device` says where it ran.
    """

    name: str = "mujoco"
    num_threads: int | None = None
    cpu_ids: tuple[int, ...] | None = None
    device: str | None = None
    nconmax: int = 35
    njmax: int = 250
    on_overflow: str = "terminate"
    deterministic: bool = False
    contact_sensor_maxmatch: int | None = None
    mdp: str = "auto"

    def __post_init__(self) -> None:
        if self.name not in _BACKEND_SETTINGS:
            raise ValueError(
                f"BackendCfg.name must be one of {sorted(_BACKEND_SETTINGS)}, got {self.name!r}"
            )
        if self.cpu_ids is not None:
            cpus = tuple(cv.integer("BackendCfg.cpu_ids[]", c, low=0) for c in self.cpu_ids)
            _set(self, "cpu_ids", cpus)
        for name in ("num_threads", "contact_sensor_maxmatch"):
            if getattr(self, name) is not None:
                _set(self, name, cv.integer(f"BackendCfg.{name}", getattr(self, name), low=1))
        for name in ("nconmax", "njmax"):
            _set(self, name, cv.integer(f"BackendCfg.{name}", getattr(self, name), low=1))
        if self.on_overflow not in ("raise", "terminate"):
            raise ValueError(
                f"BackendCfg.on_overflow must be 'raise' or 'terminate', got {self.on_overflow!r}"
            )
        if self.device is not None and not isinstance(self.device, str):
            raise ValueError(f"BackendCfg.device must be a device name, got {self.device!r}")
        if not isinstance(self.deterministic, bool):
            raise ValueError(f"BackendCfg.deterministic must be a bool, got {self.deterministic!r}")
        if self.mdp not in ("auto", "host", "device"):
            raise ValueError(f"BackendCfg.mdp must be 'auto', 'host' or 'device', got {self.mdp!r}")

    def kwargs(self) -> dict[str, Any]:
        """The backend constructor's keyword arguments for these settings.

        Raises:
            ValueError: a non-default setting that this backend does not take (the message
                names the backend that does).
        """
        own = _BACKEND_SETTINGS[self.name]
        default = BackendCfg()
        for f in fields(self):
            if f.name in ("name", "mdp") or f.name in own:
                continue
            value = getattr(self, f.name)
            if value != getattr(default, f.name) and value not in _FORMER_DEFAULTS.get(f.name, ()):
                owner = next(b for b, keys in _BACKEND_SETTINGS.items() if f.name in keys)
                raise ValueError(
                    f"{f.name}={value!r} is a setting of the {owner!r} backend, "
                    f"not of {self.name!r}"
                )
        return {k: getattr(self, k) for k in own}

    def updated(self, name: str | None = None, **settings: Any) -> BackendCfg:
        """A copy with another backend `name` and/or settings.

        Raises:
            ValueError: an unknown setting (the message lists the valid ones).
        """
        valid = {f.name for f in fields(self)} - {"name"}
        unknown = sorted(set(settings) - valid)
        if unknown:
            raise ValueError(f"unknown backend settings {unknown}; valid: {sorted(valid)}")
        return replace(self, name=name or self.name, **settings)


@dataclass(frozen=True)
class ResetCfg:
    """Reference state initialisation noise (docs/task.md section 9), (low, high) per axis.

    Attributes:
        pose_range: x, y, z (m), roll, pitch, yaw (rad), world frame.
        velocity_range: x, y, z (m/s), roll, pitch, yaw (rad/s), world frame.
        joint_pos_range: rad, added to the reference joints, then clipped to the soft limits.

    Raises:
        ValueError: not 6 / 6 / 1 (low, high) pairs of finite numbers with low <= high (named).
    """

    pose_range: tuple[tuple[float, float], ...] = (
        (-0.05, 0.05), (-0.05, 0.05), (-0.01, 0.01), (-0.1, 0.1), (-0.1, 0.1), (-0.2, 0.2),
    )  # fmt: skip
    velocity_range: tuple[tuple[float, float], ...] = (
        (-0.5, 0.5), (-0.5, 0.5), (-0.2, 0.2), (-0.52, 0.52), (-0.52, 0.52), (-0.78, 0.78),
    )  # fmt: skip
    joint_pos_range: tuple[float, float] = (-0.1, 0.1)

    def __post_init__(self) -> None:
        _set(self, "pose_range", cv.intervals("ResetCfg.pose_range", self.pose_range, 6))
        velocity = cv.intervals("ResetCfg.velocity_range", self.velocity_range, 6)
        _set(self, "velocity_range", velocity)
        joint = cv.interval("ResetCfg.joint_pos_range", self.joint_pos_range)
        _set(self, "joint_pos_range", joint)


NO_RESET_NOISE = ResetCfg(((0.0, 0.0),) * 6, ((0.0, 0.0),) * 6, (0.0, 0.0))


@dataclass(frozen=True)
class SamplingCfg:
    """Where episodes start in the motion (docs/task.md section 10).

    Attributes:
        mode: "adaptive" (failure-weighted bins), "uniform" or "start" (frame 0, for eval).
        ema_alpha: per-step EMA weight of the failure counts.
        uniform_weight: u, the uniform share of the mixture p = (1 - u) * normalised failure
            EMA + u / num_bins.
        bin_s: bin width, s.

    Raises:
        ValueError: an unknown mode, or ema_alpha outside (0, 1], uniform_weight outside
            [0, 1], bin_s not > 0 (named).
    """

    mode: str = "adaptive"
    ema_alpha: float = 0.001
    uniform_weight: float = 0.1
    bin_s: float = 1.0

    MODES = ("adaptive", "uniform", "start")

    def __post_init__(self) -> None:
        if self.mode not in self.MODES:
            raise ValueError(f"SamplingCfg.mode must be one of {self.MODES}, got {self.mode!r}")
        alpha = cv.real("SamplingCfg.ema_alpha", self.ema_alpha, low=0.0, high=1.0, low_open=True)
        _set(self, "ema_alpha", alpha)
        uniform = cv.real("SamplingCfg.uniform_weight", self.uniform_weight, low=0.0, high=1.0)
        _set(self, "uniform_weight", uniform)
        _set(self, "bin_s", cv.real("SamplingCfg.bin_s", self.bin_s, low=0.0, low_open=True))


def default_rewards() -> dict[str, RewardTermCfg]:
    """The nine BeyondMimic reward terms of docs/task.md section 7."""
    return {
        "anchor_pos": RewardTermCfg(reward.anchor_pos, 0.5, {"std": 0.3}),
        "anchor_ori": RewardTermCfg(reward.anchor_ori, 0.5, {"std": 0.4}),
        "body_pos": RewardTermCfg(reward.body_pos, 1.0, {"std": 0.3, "bodies": None}),
        "body_ori": RewardTermCfg(reward.body_ori, 1.0, {"std": 0.4, "bodies": None}),
        "body_lin_vel": RewardTermCfg(reward.body_lin_vel, 1.0, {"std": 1.0, "bodies": None}),
        "body_ang_vel": RewardTermCfg(reward.body_ang_vel, 1.0, {"std": 3.14, "bodies": None}),
        "action_rate": RewardTermCfg(reward.action_rate, -0.1),
        "joint_limit": RewardTermCfg(reward.joint_limit, -10.0),
        "self_collision": RewardTermCfg(reward.self_collision, -10.0),
    }


def default_terminations(robot: RobotSpec = G1) -> dict[str, TerminationTermCfg]:
    """The three tracking-failure terminations of docs/task.md section 8."""
    return {
        "anchor_height": TerminationTermCfg(termination.anchor_height, {"threshold": 0.25}),
        "anchor_gravity": TerminationTermCfg(termination.anchor_gravity, {"threshold": 0.8}),
        "end_effector_height": TerminationTermCfg(
            termination.body_height, {"threshold": 0.25, "bodies": robot.end_effector_bodies}
        ),
    }


def default_events(robot: RobotSpec = G1) -> dict[str, EventTermCfg]:
    """Domain randomisation and pushes of docs/task.md section 11 (run in this order)."""
    return {
        "torso_com": EventTermCfg(
            events.body_com_offset,
            "startup",
            {
                "body": robot.anchor_body,
                "offset_range": ((-0.025, 0.025), (-0.05, 0.05), (-0.05, 0.05)),
            },
        ),  # fmt: skip
        "foot_friction": EventTermCfg(
            events.foot_friction, "startup", {"friction_range": (0.3, 1.2)}
        ),
        "encoder_bias": EventTermCfg(events.encoder_bias, "reset", {"bias_range": (-0.01, 0.01)}),
        "push": EventTermCfg(
            events.push_root,
            "interval",
            {
                "velocity_range": (
                    (-0.5, 0.5),
                    (-0.5, 0.5),
                    (-0.2, 0.2),
                    (-0.52, 0.52),
                    (-0.52, 0.52),
                    (-0.78, 0.78),
                )
            },
            interval_s=(1.0, 3.0),
        ),  # fmt: skip
    }


def policy_terms(state_estimation: bool = True, robot: RobotSpec = G1) -> dict[str, ObsTermCfg]:
    """Actor observation (160 values; 154 without state estimation), docs/task.md section 5."""
    j = robot.num_joints
    terms = {
        "command": ObsTermCfg(obs.command, 2 * j),
        "anchor_pos": ObsTermCfg(obs.anchor_pos_b, 3, 0.25),
        "anchor_ori": ObsTermCfg(obs.anchor_ori_b, 6, 0.05),
        "base_lin_vel": ObsTermCfg(obs.imu_lin_vel, 3, 0.5),
        "base_ang_vel": ObsTermCfg(obs.base_ang_vel, 3, 0.2),
        "joint_pos": ObsTermCfg(obs.joint_pos, j, 0.01),
        "joint_vel": ObsTermCfg(obs.joint_vel, j, 0.5),
        "last_action": ObsTermCfg(obs.last_action, j),
    }
    if not state_estimation:
        for name in STATE_ESTIMATION_TERMS:
            del terms[name]
    return terms


def critic_terms(robot: RobotSpec = G1) -> dict[str, ObsTermCfg]:
    """Critic observation (286 values, no noise), docs/task.md section 5."""
    j, b = robot.num_joints, len(robot.tracked_bodies)
    return {
        "command": ObsTermCfg(obs.command, 2 * j),
        "anchor_pos": ObsTermCfg(obs.anchor_pos_b, 3),
        "anchor_ori": ObsTermCfg(obs.anchor_ori_b, 6),
        "body_pos": ObsTermCfg(obs.body_pos_b, 3 * b),
        "body_ori": ObsTermCfg(obs.body_ori_b, 6 * b),
        "base_lin_vel": ObsTermCfg(obs.imu_lin_vel, 3),
        "base_ang_vel": ObsTermCfg(obs.base_ang_vel, 3),
        "joint_pos": ObsTermCfg(obs.joint_pos, j),
        "joint_vel": ObsTermCfg(obs.joint_vel, j),
        "last_action": ObsTermCfg(obs.last_action, j),
    }


ANCHOR_VELOCITY_TERM = {"anchor_vel": ObsTermCfg(obs.anchor_vel_b, 6)}
"""The term `with_anchor_velocity` appends to both observation groups (project choice,
docs/task.md section 5)."""

STATE_ESTIMATION_TERMS = ("anchor_pos", "base_lin_vel")
"""The policy terms only a state-estimating robot has; `no_state_estimation` drops them."""

ObsGroups = dict[str, dict[str, ObsTermCfg]]


def default_observations(robot: RobotSpec = G1) -> ObsGroups:
    """The task's observation groups: "policy" (`policy_terms`, 160 values for the G1) and
    "critic" (`critic_terms`, 286)."""
    return {"policy": policy_terms(True, robot), "critic": critic_terms(robot)}


def _state_estimation(groups: ObsGroups, on: bool, robot: RobotSpec) -> ObsGroups:
    """`groups` with the policy group's `STATE_ESTIMATION_TERMS` dropped (`on` False) or the
    missing ones put back in the task's place (`on` True); the other terms keep their order
    and settings, so applying it twice changes nothing."""
    policy = groups["policy"]
    if not on:
        kept = {k: t for k, t in policy.items() if k not in STATE_ESTIMATION_TERMS}
        return {**groups, "policy": kept}
    missing = [k for k in STATE_ESTIMATION_TERMS if k not in policy]
    if not missing:
        return groups
    task = list(policy_terms(True, robot).items())
    out = dict(policy)
    for name in missing:  # after the task's nearest earlier term that the group has
        i = next(i for i, (k, _) in enumerate(task) if k == name)
        before = [k for k, _ in task[:i] if k in out]
        keys = list(out)
        at = keys.index(before[-1]) + 1 if before else 0
        items = list(out.items())
        out = dict(items[:at] + [task[i]] + items[at:])
    return {**groups, "policy": out}


def _anchor_velocity(groups: ObsGroups, on: bool) -> ObsGroups:
    """`groups` with ``anchor_vel`` appended to the policy and critic groups, or dropped from
    every group; nothing changes when the policy group already has it (`on`) or has not."""
    if ("anchor_vel" in groups["policy"]) == on:
        return groups
    out = {}
    for name, terms in groups.items():
        kept = {k: t for k, t in terms.items() if k not in ANCHOR_VELOCITY_TERM}
        if on and name in ("policy", "critic"):
            kept |= ANCHOR_VELOCITY_TERM
        out[name] = kept
    return out


def _noise(groups: ObsGroups, noise: dict[str, float], group: str, where: str) -> ObsGroups:
    """`groups` with the uniform noise half-widths `noise` (term name -> width) in `group`.

    Raises:
        ValueError: a term `group` does not have, or a width that is not a finite number >= 0
            (the message starts with `where`).
    """
    if not isinstance(noise, dict):
        raise ValueError(f"{where} must be a dict of term name -> half-width, got {noise!r}")
    terms = groups.get(group, {})
    out = dict(terms)
    for name, width in noise.items():
        if name not in terms:
            raise ValueError(f"{where}: the {group!r} observation has no term {name!r}; it has "
                             f"{sorted(terms)}")  # fmt: skip
        out[name] = replace(terms[name], noise=cv.real(f"{where}[{name!r}]", width, low=0.0))
    return {**groups, group: out}


OBSERVED_OFFSET = {"next": 1, "current": 0}
"""`TrackingEnvCfg.observed_frame` -> frames between the robot's motion frame and the reference
frame the policy observes (docs/task.md section 5)."""

LEGACY_OBSERVED_FRAME = "current"
"""The observed frame of configs written before `TrackingEnvCfg.observed_frame` existed (run
folders of gym_motion before 2026-12-08): `TrackingEnvCfg.from_json` gives them this value."""


@dataclass(frozen=True)
class TrackingEnvCfg:
    """The whole task, its robot and its backend; a run's ``config.json`` rebuilds it
    (`to_json`, `from_json`). Defaults are the BeyondMimic G1 task of docs/task.md.

    Terms that name bodies name the robot's; for another robot build the task with
    `TrackingEnvCfg.for_robot`.

    Attributes:
        robot: the `RobotSpec` (default `gym_motion.robots.g1.G1`).
        sim: physics timing. backend: physics backend and its settings.
        episode_length_s: time limit (truncation), s.
        rewards, terminations, events: term name -> term config.
        observations: group name -> term name -> `ObsTermCfg` (noise, clip, scale), in
            order; the "policy" group is what a policy reads, "critic" what an asymmetric
            critic reads (default `default_observations`: 160 and 286 values). Functions on a
            config change them as the research variants do: `no_state_estimation` (154),
            `with_anchor_velocity` (166 and 292), `with_obs_noise`.
        obs_noise: add the terms' uniform noise (training); off for evaluation.
        action_offset: where a zero action puts the joints: "default" (the default pose:
            target = default pose + scale x action, BeyondMimic's convention, docs/task.md
            section 6) or "reference" (residual actions: target = the reference joint
            positions the policy observed + scale x action, so the zero policy is a PD tracker
            of the clip; exported ONNX graphs fold the reference back into BeyondMimic's
            convention, `gym_motion.training.export`).
        reset: RSI noise. sampling: where episodes start in the motion.
        observed_frame: which reference frame the policy observes (its reference terms:
            ``command``, ``anchor_pos``, ``anchor_ori``, ``anchor_vel``; and the residual
            action's offset): "next" (the frame its next step is scored on, as mjlab's
            tracking task does after its reset's command update; docs/task.md section 5) or
            "current" (the robot's own frame: gym_motion before 2026-12-08; configs without
            the key read as this, `LEGACY_OBSERVED_FRAME`). The rewards, terminations and
            errors compare the robot with its own frame either way.

    Keywords kept for configs written before observation groups (and old run folders'
    config.json): ``state_estimation`` (False: `no_state_estimation`; True: its terms back),
    ``anchor_velocity_obs`` (True: `with_anchor_velocity`; False: ``anchor_vel`` dropped),
    ``policy_obs_noise`` (`with_obs_noise` on the policy group); None leaves the groups as
    given. `state_estimation` and `anchor_velocity_obs` read the groups.

    Raises:
        ValueError: a field of the wrong type, episode_length_s not a finite number of at
            least one control step, observations without a "policy" group or with an empty
            group, or a policy_obs_noise entry that names no policy term or whose half-width
            is not a finite number >= 0 (named); the nested configs check their own fields.
    """

    robot: RobotSpec = G1
    sim: SimCfg = field(default_factory=SimCfg)
    backend: BackendCfg = field(default_factory=BackendCfg)
    episode_length_s: float = 10.0
    rewards: dict[str, RewardTermCfg] = field(default_factory=default_rewards)
    terminations: dict[str, TerminationTermCfg] = field(default_factory=default_terminations)
    observations: ObsGroups = field(default_factory=default_observations)
    obs_noise: bool = True
    action_offset: str = "default"
    reset: ResetCfg = field(default_factory=ResetCfg)
    events: dict[str, EventTermCfg] = field(default_factory=default_events)
    sampling: SamplingCfg = field(default_factory=SamplingCfg)
    observed_frame: str = "next"

    def __post_init__(self) -> None:
        for name, cls in (("robot", RobotSpec), ("sim", SimCfg), ("backend", BackendCfg),
                          ("reset", ResetCfg), ("sampling", SamplingCfg)):  # fmt: skip
            if not isinstance(getattr(self, name), cls):
                raise ValueError(
                    f"TrackingEnvCfg.{name} must be a {cls.__name__}, got {getattr(self, name)!r}"
                )
        length = cv.real("TrackingEnvCfg.episode_length_s", self.episode_length_s, low=0.0,
                         low_open=True)  # fmt: skip
        steps = length / self.sim.control_dt  # the env's limit is round(steps)
        if not (math.isfinite(steps) and 1 <= round(steps) < MAX_EPISODE_STEPS):
            raise ValueError(
                f"TrackingEnvCfg.episode_length_s must be from one control step "
                f"({self.sim.control_dt:g} s) to {MAX_EPISODE_STEPS - 1:,} of them, got "
                f"{self.episode_length_s!r}"
            )
        _set(self, "episode_length_s", length)
        cv.term_dict("TrackingEnvCfg.rewards", self.rewards, RewardTermCfg)
        cv.term_dict("TrackingEnvCfg.terminations", self.terminations, TerminationTermCfg)
        cv.term_dict("TrackingEnvCfg.events", self.events, EventTermCfg)
        if self.action_offset not in ACTION_OFFSETS:
            raise ValueError(
                f"TrackingEnvCfg.action_offset must be one of {ACTION_OFFSETS}, got "
                f"{self.action_offset!r}"
            )
        if self.observed_frame not in OBSERVED_OFFSET:
            raise ValueError(
                f"TrackingEnvCfg.observed_frame must be one of {tuple(OBSERVED_OFFSET)}, got "
                f"{self.observed_frame!r}"
            )
        if not isinstance(self.obs_noise, bool):
            raise ValueError(f"TrackingEnvCfg.obs_noise must be a bool, got {self.obs_noise!r}")
        groups = self.observations
        if not isinstance(groups, dict) or "policy" not in groups:
            raise ValueError('TrackingEnvCfg.observations must be a dict of groups with a '
                             f'"policy" group, got {groups!r}')  # fmt: skip
        for name, terms in groups.items():
            cv.term_dict(f"TrackingEnvCfg.observations[{name!r}]", terms, ObsTermCfg)
        for name, terms in groups.items():
            if not terms:
                raise ValueError(f"TrackingEnvCfg.observations[{name!r}] has no terms")

    def observes(self, term: str, group: str = "policy") -> bool:
        """Whether observation `group` has the term named `term`."""
        return term in self.observations.get(group, {})

    @property
    def state_estimation(self) -> bool | None:
        """Whether the policy observes the terms only state estimation gives
        (`STATE_ESTIMATION_TERMS`); None when it observes one of them."""
        has = [self.observes(k) for k in STATE_ESTIMATION_TERMS]
        return True if all(has) else False if not any(has) else None

    @property
    def anchor_velocity_obs(self) -> bool:
        """Whether the policy observes ``anchor_vel`` (`with_anchor_velocity`)."""
        return self.observes("anchor_vel")

    @classmethod
    def for_robot(cls, robot: RobotSpec, **overrides: Any) -> TrackingEnvCfg:
        """The default task for `robot`: terms that name bodies take the robot's (end
        effectors, anchor); `overrides` replace fields."""
        return cls(
            robot=robot,
            terminations=default_terminations(robot),
            events=default_events(robot),
            observations=default_observations(robot),
            **overrides,
        )

    def updated(
        self,
        state_estimation: bool | None = None,
        model_path: str | os.PathLike | None = None,
        backend: str | None = None,
        backend_kwargs: dict[str, Any] | None = None,
    ) -> TrackingEnvCfg:
        """A copy with the env constructor's overrides applied (None keeps a field): state
        estimation in the policy observation (False: `no_state_estimation`), the robot's
        MJCF, the backend name and settings.

        Raises:
            ValueError: an unknown backend setting.
        """
        cfg = self
        if state_estimation is not None:
            groups = _state_estimation(cfg.observations, state_estimation, cfg.robot)
            cfg = replace(cfg, observations=groups)
        if model_path is not None:
            cfg = replace(cfg, robot=cfg.robot.with_mjcf(model_path))
        if backend is not None or backend_kwargs:
            cfg = replace(cfg, backend=cfg.backend.updated(backend, **(backend_kwargs or {})))
        return cfg

    def to_json(self) -> str:
        """This config as JSON (functions by import path, the robot by name and MJCF)."""
        from gym_motion.envs.cfg_json import dumps

        return dumps(self)

    @classmethod
    def from_json(cls, text: str) -> TrackingEnvCfg:
        """The config `to_json` wrote; one written before ``observed_frame`` existed gets
        `LEGACY_OBSERVED_FRAME`, the convention it was trained with.

        Raises:
            ValueError: not a `TrackingEnvCfg`, an unknown robot name, or a term function that
                cannot be imported (the message names it).
        """
        from gym_motion.envs.cfg_json import decode

        data = json.loads(text)
        if isinstance(data, dict) and "observed_frame" not in data:
            data = {**data, "observed_frame": LEGACY_OBSERVED_FRAME}
        cfg = decode(data)
        if not isinstance(cfg, cls):
            raise ValueError(f"expected a {cls.__name__} JSON, got {type(cfg).__name__}")
        return cfg


def eval_cfg(cfg: TrackingEnvCfg | None = None) -> TrackingEnvCfg:
    """`cfg` for evaluation: clips from their start, no randomisation, no noise."""
    cfg = cfg or TrackingEnvCfg()
    return replace(
        cfg,
        obs_noise=False,
        reset=NO_RESET_NOISE,
        events={},
        sampling=replace(cfg.sampling, mode="start"),
    )


EVAL_RANDOMIZATIONS = ("none", "play")
"""What an evaluation keeps random (`eval_cfg`, `play_cfg`)."""


def play_cfg(cfg: TrackingEnvCfg | None = None) -> TrackingEnvCfg:
    """`cfg` as mjlab's tracking play config (``play=True``) plays it (docs/task.md section
    13): clips from their start, no observation noise, no pushes, no root pose or velocity
    noise at the start; kept are the joint-position noise at the start (`ResetCfg.
    joint_pos_range`), the events of a run's start (torso centre of mass, foot friction) and
    the encoder bias. Each env draws its own; the env's seed sets them."""
    cfg = cfg or TrackingEnvCfg()
    events = {k: t for k, t in cfg.events.items() if t.mode != "interval"}
    none = ((0.0, 0.0),) * 6
    return replace(
        cfg,
        obs_noise=False,
        reset=replace(cfg.reset, pose_range=none, velocity_range=none),
        events=events,
        sampling=replace(cfg.sampling, mode="start"),
    )


def _legacy_init(init: Callable[..., None]) -> Callable[..., None]:
    """`TrackingEnvCfg.__init__` that also takes the keywords of configs written before
    observation groups (and of old run folders' config.json), applied to the groups."""

    @functools.wraps(init)
    def wrapped(
        self: TrackingEnvCfg,
        *args: Any,
        state_estimation: bool | None = None,
        anchor_velocity_obs: bool | None = None,
        policy_obs_noise: dict[str, float] | None = None,
        **kwargs: Any,
    ) -> None:
        init(self, *args, **kwargs)
        groups = self.observations
        for name, flag in (("state_estimation", state_estimation),
                           ("anchor_velocity_obs", anchor_velocity_obs)):  # fmt: skip
            if flag is not None and not isinstance(flag, bool):
                raise ValueError(f"TrackingEnvCfg.{name} must be a bool, got {flag!r}")
        if state_estimation is not None:
            groups = _state_estimation(groups, state_estimation, self.robot)
        if anchor_velocity_obs is not None:
            groups = _anchor_velocity(groups, anchor_velocity_obs)
        if policy_obs_noise:
            # as before groups: an override of a term the task may hold is checked, and
            # applied only if the policy group holds it (state estimation, anchor_vel)
            where = "TrackingEnvCfg.policy_obs_noise"
            possible = policy_terms(True, self.robot) | ANCHOR_VELOCITY_TERM
            unknown = sorted(set(policy_obs_noise) - set(possible))
            if unknown:
                raise ValueError(f"{where}: the policy observation has no term {unknown[0]!r}; "
                                 f"it has {sorted(possible)}")  # fmt: skip
            held = {k: w for k, w in policy_obs_noise.items() if k in groups["policy"]}
            groups = _noise(groups, held, "policy", where)
        _set(self, "observations", groups)

    return wrapped


TrackingEnvCfg.__init__ = _legacy_init(TrackingEnvCfg.__init__)  # type: ignore[method-assign]


def no_state_estimation(cfg: TrackingEnvCfg) -> TrackingEnvCfg:
    """`cfg` whose policy observes no term that only state estimation gives (the anchor
    position and the base linear velocity: 154 values for the G1), BeyondMimic's
    "without state estimation" variant (docs/task.md section 5)."""
    return replace(cfg, observations=_state_estimation(cfg.observations, False, cfg.robot))


def with_anchor_velocity(cfg: TrackingEnvCfg) -> TrackingEnvCfg:
    """`cfg` whose policy and critic also observe ``anchor_vel`` (`ANCHOR_VELOCITY_TERM`: the
    reference anchor's linear velocity, m/s, then angular velocity, rad/s, in the robot anchor
    frame; 6 values, no noise). Not part of the task (docs/task.md section 5)."""
    return replace(cfg, observations=_anchor_velocity(cfg.observations, True))


def with_root_origin_velocity(cfg: TrackingEnvCfg) -> TrackingEnvCfg:
    """`cfg` whose ``base_lin_vel`` terms (every group) read the root body origin's velocity
    (`obs.base_lin_vel`, gym_motion's term before 2026-12-08) instead of the IMU site's
    (`obs.imu_lin_vel`, mjlab's); noise, clip and scale kept. For policies trained on the old
    term (deploy name ``base_origin_lin_vel``)."""
    groups = {
        name: {k: replace(t, func=obs.base_lin_vel) if t.func is obs.imu_lin_vel else t
               for k, t in terms.items()}
        for name, terms in cfg.observations.items()
    }  # fmt: skip
    return replace(cfg, observations=groups)


def with_conventions_of(cfg: TrackingEnvCfg, trained: TrackingEnvCfg) -> TrackingEnvCfg:
    """`cfg` observed as `trained` observes: its ``observed_frame`` and, if `trained`'s policy
    reads the root origin's velocity, `with_root_origin_velocity` (a run's model played in a
    task the user picked)."""
    cfg = replace(cfg, observed_frame=trained.observed_frame)
    base = trained.observations["policy"].get("base_lin_vel")
    return with_root_origin_velocity(cfg) if base and base.func is obs.base_lin_vel else cfg


def with_obs_noise(
    cfg: TrackingEnvCfg, noise: dict[str, float], group: str = "policy"
) -> TrackingEnvCfg:
    """`cfg` whose `group` terms take the uniform training noise `noise` (term name -> the
    half-width in the term's unit, e.g. ``{"anchor_pos": 0.05}``, m) in place of the task's.

    Raises:
        ValueError: a term the group does not have, or a width that is not a finite number
            >= 0 (named).
    """
    return replace(cfg, observations=_noise(cfg.observations, noise, group, "with_obs_noise"))
