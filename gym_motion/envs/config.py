"""Typed configuration of the G1 tracking task; defaults equal TASK_SPEC.

Every task number lives here. To change the task, ``dataclasses.replace`` the config, e.g.
drop a reward term or reweight one::

    rewards = dict(TrackingEnvCfg().rewards)
    del rewards["self_collision"]
    rewards["action_rate"] = RewardTermCfg(reward.action_rate, weight=-0.2)
    cfg = dataclasses.replace(TrackingEnvCfg(), rewards=rewards)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gym_motion.managers import observation as obs
from gym_motion.managers import reward, termination
from gym_motion.managers.events import EventCfg
from gym_motion.managers.observation import ObsTermCfg
from gym_motion.managers.reward import RewardTermCfg
from gym_motion.managers.termination import TerminationTermCfg
from gym_motion.robots import g1


@dataclass(frozen=True)
class SimCfg:
    """Physics timing and engine capacities (TASK_SPEC section 1).

    Attributes:
        physics_dt: substep, s. decimation: substeps per control step.
        self_contact_threshold: normal force, N, above which a self-contact counts.
        nconmax, njmax: per-world contact and constraint capacity (MuJoCo Warp only).
    """

    physics_dt: float = 0.005
    decimation: int = 4
    self_contact_threshold: float = 10.0
    nconmax: int = 35
    njmax: int = 250

    @property
    def control_dt(self) -> float:
        """Control step, s."""
        return self.physics_dt * self.decimation


@dataclass(frozen=True)
class ResetCfg:
    """Reference state initialisation noise (TASK_SPEC section 9), (low, high) per axis.

    Attributes:
        pose_range: x, y, z (m), roll, pitch, yaw (rad), world frame.
        velocity_range: x, y, z (m/s), roll, pitch, yaw (rad/s), world frame.
        joint_pos_range: rad, added to the reference joints, then clipped to the soft limits.
    """

    pose_range: tuple[tuple[float, float], ...] = (
        (-0.05, 0.05), (-0.05, 0.05), (-0.01, 0.01), (-0.1, 0.1), (-0.1, 0.1), (-0.2, 0.2),
    )  # fmt: skip
    velocity_range: tuple[tuple[float, float], ...] = (
        (-0.5, 0.5), (-0.5, 0.5), (-0.2, 0.2), (-0.52, 0.52), (-0.52, 0.52), (-0.78, 0.78),
    )  # fmt: skip
    joint_pos_range: tuple[float, float] = (-0.1, 0.1)


NO_RESET_NOISE = ResetCfg(((0.0, 0.0),) * 6, ((0.0, 0.0),) * 6, (0.0, 0.0))


@dataclass(frozen=True)
class SamplingCfg:
    """Where episodes start in the motion (TASK_SPEC section 10).

    Attributes:
        mode: "adaptive" (failure-weighted bins), "uniform" or "start" (frame 0, for eval).
        ema_alpha: per-step EMA weight of the failure rates.
        uniform_weight: added to every bin's failure rate (0.1 / num_bins) before normalising.
        bin_s: bin width, s.
    """

    mode: str = "adaptive"
    ema_alpha: float = 0.001
    uniform_weight: float = 0.1
    bin_s: float = 1.0


def default_rewards() -> dict[str, RewardTermCfg]:
    """The nine BeyondMimic reward terms of TASK_SPEC section 7."""
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


def default_terminations() -> dict[str, TerminationTermCfg]:
    """The three tracking-failure terminations of TASK_SPEC section 8."""
    return {
        "anchor_height": TerminationTermCfg(termination.anchor_height, {"threshold": 0.25}),
        "anchor_gravity": TerminationTermCfg(termination.anchor_gravity, {"threshold": 0.8}),
        "end_effector_height": TerminationTermCfg(
            termination.body_height, {"threshold": 0.25, "bodies": g1.END_EFFECTORS}
        ),
    }


def policy_terms(state_estimation: bool = True) -> dict[str, ObsTermCfg]:
    """Actor observation (160 values; 154 without state estimation), TASK_SPEC section 5."""
    j = g1.NUM_JOINTS
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


def critic_terms() -> dict[str, ObsTermCfg]:
    """Critic observation (286 values, no noise), TASK_SPEC section 5."""
    j, b = g1.NUM_JOINTS, len(g1.TRACKED_BODIES)
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


@dataclass(frozen=True)
class TrackingEnvCfg:
    """The whole task. Defaults are the BeyondMimic G1 task of TASK_SPEC.

    Attributes:
        episode_length_s: time limit (truncation), s.
        obs_noise: add the policy terms' uniform noise (training); off for evaluation.
        state_estimation: False drops anchor position and base linear velocity from the
            policy observation (154 values).
    """

    sim: SimCfg = field(default_factory=SimCfg)
    episode_length_s: float = 10.0
    rewards: dict[str, RewardTermCfg] = field(default_factory=default_rewards)
    terminations: dict[str, TerminationTermCfg] = field(default_factory=default_terminations)
    state_estimation: bool = True
    obs_noise: bool = True
    reset: ResetCfg = field(default_factory=ResetCfg)
    events: EventCfg = field(default_factory=EventCfg)
    sampling: SamplingCfg = field(default_factory=SamplingCfg)

    def observation_groups(self) -> dict[str, dict[str, ObsTermCfg]]:
        """The "policy" and "critic" observation groups."""
        return {"policy": policy_terms(self.state_estimation), "critic": critic_terms()}


def eval_cfg(cfg: TrackingEnvCfg | None = None) -> TrackingEnvCfg:
    """`cfg` for evaluation: clips from their start, no randomisation, no noise."""
    from dataclasses import replace

    from gym_motion.managers.events import NO_EVENTS

    cfg = cfg or TrackingEnvCfg()
    return replace(
        cfg,
        obs_noise=False,
        reset=NO_RESET_NOISE,
        events=NO_EVENTS,
        sampling=replace(cfg.sampling, mode="start"),
    )
