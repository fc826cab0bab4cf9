"""The per-step data every MDP term reads: robot state, reference state, actions."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gym_motion.backends.base import BodyState


@dataclass
class MDPState:
    """Buffers shared by the managers, allocated once for N envs and B tracked bodies.

    The managers bind views of these buffers once (`gym_motion.managers.terms`), so they are
    written in place (``state.action[...] = ...``) and never reassigned: assigning an attribute
    after construction raises AttributeError (`robot` and `ref` are frozen `BodyState`s).

    Body arrays are indexed in the order of `body_names`; joints in robot joint order.

    Attributes:
        body_names: the B tracked bodies. anchor, root: their indices of the anchor and root.
        robot: robot state after the last substep (world frame).
        ref: reference state at the current motion frame (world frame of the clip): what the
            rewards, terminations and errors compare the robot with.
        obs_ref: the reference the policy observes (`gym_motion.kernels.command.
            observed_reference`): the frame after the current one with
            ``TrackingEnvCfg.observed_frame = "next"`` (mjlab's), the current one with
            "current"; same layout as `ref`.
        ref_rel_pos_w: (N, B, 3) float32, reference bodies re-anchored onto the robot, m.
        ref_rel_quat_w: (N, B, 4) float32, wxyz.
        action, last_action: (N, J) float32, policy actions of this and the previous step.
        action_obs: (N, J) float32, `action` in BeyondMimic's convention, (target +
            encoder bias - default pose) / action scale: what the policy observes as its last
            action and what a deploy stack feeds back; equal to `action` with the default
            action offset, `action` + (reference - default pose) / scale with residual actions
            (so the exported graph, reference folded in, sees what it saw in training).
        encoder_bias: (N, J) float32, rad, added to observed joint positions.
        self_contact_substeps: (N,) int32, substeps of the last step with self-contact.
        steps_since_perturbation: (N,) int32, control steps since the env last wrote the row's
            robot state from outside its dynamics: an episode start or re-initialisation (RSI,
            with its reset noise) or an interval event such as a push; 1 on the first step
            after it.
        default_joint_pos: (J,) float32, rad. soft_joint_limits: (J, 2) float32, rad.
        imu_pos_b: (3,) float32, m, the IMU site's position in the root body frame
            (`RobotSpec.imu_position`; zeros: the root body's origin).
    """

    body_names: tuple[str, ...]
    anchor: int
    root: int
    robot: BodyState
    ref: BodyState
    default_joint_pos: np.ndarray
    soft_joint_limits: np.ndarray
    imu_pos_b: np.ndarray = field(default_factory=lambda: np.zeros(3, np.float32))
    obs_ref: BodyState = field(init=False)
    ref_rel_pos_w: np.ndarray = field(init=False)
    ref_rel_quat_w: np.ndarray = field(init=False)
    action: np.ndarray = field(init=False)
    last_action: np.ndarray = field(init=False)
    action_obs: np.ndarray = field(init=False)
    encoder_bias: np.ndarray = field(init=False)
    self_contact_substeps: np.ndarray = field(init=False)
    steps_since_perturbation: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        n, b = self.robot.pos_w.shape[:2]
        j = self.robot.joint_pos.shape[1]
        self.obs_ref = BodyState.zeros(n, b, j)
        self.imu_pos_b = np.asarray(self.imu_pos_b, np.float32).reshape(3)
        self.ref_rel_pos_w = np.zeros((n, b, 3), np.float32)
        self.ref_rel_quat_w = np.zeros((n, b, 4), np.float32)
        self.ref_rel_quat_w[..., 0] = 1.0
        self.action = np.zeros((n, j), np.float32)
        self.last_action = np.zeros((n, j), np.float32)
        self.action_obs = np.zeros((n, j), np.float32)
        self.encoder_bias = np.zeros((n, j), np.float32)
        self.self_contact_substeps = np.zeros(n, np.int32)
        self.steps_since_perturbation = np.zeros(n, np.int32)
        object.__setattr__(self, "_sealed", True)

    def __setattr__(self, name: str, value) -> None:
        if getattr(self, "_sealed", False):
            raise AttributeError(
                f"MDPState.{name} cannot be reassigned: the managers read the buffer they were "
                f"bound to; write into it in place (state.{name}[...] = value)"
            )
        object.__setattr__(self, name, value)

    @classmethod
    def for_robot(cls, robot, model, num_envs: int) -> MDPState:
        """Zeroed state of `num_envs` envs of `robot` (a `RobotSpec`) on its compiled `model`
        (soft joint limits come from the model's joint ranges)."""
        bodies, j = robot.tracked_bodies, robot.num_joints
        return cls(
            body_names=bodies,
            anchor=bodies.index(robot.anchor_body),
            root=bodies.index(robot.root_body),
            robot=BodyState.zeros(num_envs, len(bodies), j),
            ref=BodyState.zeros(num_envs, len(bodies), j),
            default_joint_pos=robot.default_joint_pos.astype(np.float32),
            soft_joint_limits=robot.soft_joint_limits(model).astype(np.float32),
            imu_pos_b=robot.imu_position(model).astype(np.float32),
        )

    @property
    def num_envs(self) -> int:
        return self.robot.pos_w.shape[0]

    def resolve_term_params(self, params: dict) -> dict:
        """A term's keyword arguments with ``bodies`` (names, or None for all) replaced by
        ``body_ids`` (K,) int64, as term functions take them."""
        params = dict(params)
        if "bodies" in params:
            params["body_ids"] = self.body_ids(params.pop("bodies"))
        return params

    def body_ids(self, names: tuple[str, ...] | None) -> np.ndarray:
        """Indices (K,) int64 of `names` among the tracked bodies (all of them for None).

        Raises:
            ValueError: a name is not a tracked body.
        """
        if names is None:
            return np.arange(len(self.body_names), dtype=np.int64)
        missing = [n for n in names if n not in self.body_names]
        if missing:
            raise ValueError(
                f"bodies {missing} are not tracked bodies; expected some of {self.body_names}"
            )
        return np.array([self.body_names.index(n) for n in names], dtype=np.int64)
