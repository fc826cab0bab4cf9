"""Typed configuration of the G1 tracking task; defaults equal docs/task.md.

Every task number lives here. To change the task, ``dataclasses.replace`` the config, e.g.
drop a reward term or reweight one::

    rewards = dict(TrackingEnvCfg().rewards)
    del rewards["self_collision"]
    rewards["action_rate"] = RewardTermCfg(reward.action_rate, weight=-0.2)
    cfg = dataclasses.replace(TrackingEnvCfg(), rewards=rewards)
"""

from __future__ import annotations

import math
import os
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
        on_overflow: "raise" or "terminate" on a capacity overflow (mjwarp).
        deterministic: MuJoCo Warp's deterministic mode, for bit-reproducible GPU runs at a cost
            in speed (mjwarp; off by default).
        contact_sensor_maxmatch: contacts a contact sensor may match per world (mjwarp; None:
            the model's, else MuJoCo Warp's 64).
    """

    name: str = "mujoco"
    num_threads: int | None = None
    cpu_ids: tuple[int, ...] | None = None
    device: str | None = None
    nconmax: int = 35
    njmax: int = 250
    on_overflow: str = "raise"
    deterministic: bool = False
    contact_sensor_maxmatch: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise ValueError(f"BackendCfg.name must be a backend name, got {self.name!r}")
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

    def kwargs(self) -> dict[str, Any]:
        """The backend constructor's keyword arguments for these settings.

        Raises:
            ValueError: an unknown backend name, or a non-default setting that this backend
                does not take (the message names the backend that does).
        """
        if self.name not in _BACKEND_SETTINGS:
            raise ValueError(
                f"unknown backend {self.name!r}; valid choices: {sorted(_BACKEND_SETTINGS)}"
            )
        own = _BACKEND_SETTINGS[self.name]
        default = BackendCfg()
        for f in fields(self):
            if f.name == "name" or f.name in own:
                continue
            if getattr(self, f.name) != getattr(default, f.name):
                owner = next(b for b, keys in _BACKEND_SETTINGS.items() if f.name in keys)
                raise ValueError(
                    f"{f.name}={getattr(self, f.name)!r} is a setting of the {owner!r} backend, "
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
        "base_lin_vel": ObsTermCfg(obs.base_lin_vel, 3, 0.5),
        "base_ang_vel": ObsTermCfg(obs.base_ang_vel, 3, 0.2),
        "joint_pos": ObsTermCfg(obs.joint_pos, j, 0.01),
        "joint_vel": ObsTermCfg(obs.joint_vel, j, 0.5),
        "last_action": ObsTermCfg(obs.last_action, j),
    }
    if not state_estimation:
        del terms["anchor_pos"], terms["base_lin_vel"]
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
        "base_lin_vel": ObsTermCfg(obs.base_lin_vel, 3),
        "base_ang_vel": ObsTermCfg(obs.base_ang_vel, 3),
        "joint_pos": ObsTermCfg(obs.joint_pos, j),
        "joint_vel": ObsTermCfg(obs.joint_vel, j),
        "last_action": ObsTermCfg(obs.last_action, j),
    }


ANCHOR_VELOCITY_TERM = {"anchor_vel": ObsTermCfg(obs.anchor_vel_b, 6)}
"""The term `TrackingEnvCfg.anchor_velocity_obs` appends to both observation groups (project
choice, docs/task.md section 5)."""


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
        state_estimation: False drops anchor position and base linear velocity from the
            policy observation (154 values).
        obs_noise: add the policy terms' uniform noise (training); off for evaluation.
        policy_obs_noise: policy term name -> the half-width of its uniform training noise in
            place of the task's (`policy_terms`), in the term's unit (e.g. ``{"anchor_pos":
            0.05}``, m); empty: the task's. Not part of the task (docs/task.md section 5).
        anchor_velocity_obs: append ``anchor_vel`` (`ANCHOR_VELOCITY_TERM`: the reference
            anchor's linear velocity, m/s, then angular velocity, rad/s, in the robot anchor
            frame, 6 values, no noise unless `policy_obs_noise` gives it some) to the policy
            and critic observations (166 and 292 values). Not part of the task (docs/task.md
            section 5).
        action_offset: where a zero action puts the joints: "default" (the default pose:
            target = default pose + scale x action, BeyondMimic's convention, docs/task.md
            section 6) or "reference" (residual actions: target = the reference joint
            positions the policy observed + scale x action, so the zero policy is a PD tracker
            of the clip; exported ONNX graphs fold the reference back into BeyondMimic's
            convention, `gym_motion.training.export`).
        reset: RSI noise. sampling: where episodes start in the motion.

    Raises:
        ValueError: a field of the wrong type, episode_length_s not a finite number of at
            least one control step, or a policy_obs_noise entry that names no policy term or
            whose half-width is not a finite number >= 0 (named); the nested configs check
            their own fields.
    """

    robot: RobotSpec = G1
    sim: SimCfg = field(default_factory=SimCfg)
    backend: BackendCfg = field(default_factory=BackendCfg)
    episode_length_s: float = 10.0
    rewards: dict[str, RewardTermCfg] = field(default_factory=default_rewards)
    terminations: dict[str, TerminationTermCfg] = field(default_factory=default_terminations)
    state_estimation: bool = True
    obs_noise: bool = True
    policy_obs_noise: dict[str, float] = field(default_factory=dict)
    anchor_velocity_obs: bool = False
    action_offset: str = "default"
    reset: ResetCfg = field(default_factory=ResetCfg)
    events: dict[str, EventTermCfg] = field(default_factory=default_events)
    sampling: SamplingCfg = field(default_factory=SamplingCfg)

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
        for name in ("state_estimation", "obs_noise", "anchor_velocity_obs"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(
                    f"TrackingEnvCfg.{name} must be a bool, got {getattr(self, name)!r}"
                )
        self._check_policy_obs_noise()

    def _check_policy_obs_noise(self) -> None:
        where = "TrackingEnvCfg.policy_obs_noise"
        if not isinstance(self.policy_obs_noise, dict):
            raise ValueError(f"{where} must be a dict of term name -> half-width, got "
                             f"{self.policy_obs_noise!r}")  # fmt: skip
        # every term the policy group can hold: a task without state estimation (or without
        # anchor_velocity_obs) keeps the overrides of its left-out terms and applies none of them
        terms = policy_terms(True, self.robot) | ANCHOR_VELOCITY_TERM
        checked = {}
        for name, width in self.policy_obs_noise.items():
            if name not in terms:
                raise ValueError(f"{where}: the policy observation has no term {name!r}; it "
                                 f"has {sorted(terms)}")  # fmt: skip
            checked[name] = cv.real(f"{where}[{name!r}]", width, low=0.0)
        _set(self, "policy_obs_noise", checked)

    @classmethod
    def for_robot(cls, robot: RobotSpec, **overrides: Any) -> TrackingEnvCfg:
        """The default task for `robot`: terms that name bodies take the robot's (end
        effectors, anchor); `overrides` replace fields."""
        return cls(
            robot=robot,
            terminations=default_terminations(robot),
            events=default_events(robot),
            **overrides,
        )

    def updated(
        self,
        state_estimation: bool | None = None,
        model_path: str | os.PathLike | None = None,
        backend: str | None = None,
        backend_kwargs: dict[str, Any] | None = None,
    ) -> TrackingEnvCfg:
        """A copy with the env constructor's overrides applied (None keeps a field): the
        state-estimation flag, the robot's MJCF, the backend name and settings.

        Raises:
            ValueError: an unknown backend setting.
        """
        cfg = self
        if state_estimation is not None:
            cfg = replace(cfg, state_estimation=state_estimation)
        if model_path is not None:
            cfg = replace(cfg, robot=cfg.robot.with_mjcf(model_path))
        if backend is not None or backend_kwargs:
            cfg = replace(cfg, backend=cfg.backend.updated(backend, **(backend_kwargs or {})))
        return cfg

    def observation_groups(self) -> dict[str, dict[str, ObsTermCfg]]:
        """The "policy" and "critic" observation groups: the task's (`policy_terms`,
        `critic_terms`), the policy's noise overridden by `policy_obs_noise`, and with
        `anchor_velocity_obs` the `ANCHOR_VELOCITY_TERM` appended to both."""
        extra = ANCHOR_VELOCITY_TERM if self.anchor_velocity_obs else {}
        policy = policy_terms(self.state_estimation, self.robot) | extra
        return {
            "policy": {
                name: replace(term, noise=self.policy_obs_noise.get(name, term.noise))
                for name, term in policy.items()
            },
            "critic": critic_terms(self.robot) | extra,
        }

    def to_json(self) -> str:
        """This config as JSON (functions by import path, the robot by name and MJCF)."""
        from gym_motion.envs.cfg_json import dumps

        return dumps(self)

    @classmethod
    def from_json(cls, text: str) -> TrackingEnvCfg:
        """The config `to_json` wrote.

        Raises:
            ValueError: not a `TrackingEnvCfg`, an unknown robot name, or a term function that
                cannot be imported (the message names it).
        """
        from gym_motion.envs.cfg_json import loads

        cfg = loads(text)
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
