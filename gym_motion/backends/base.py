"""The contract between the tracking env and a physics engine.

The env never touches engine objects: it hands joint position targets to a `SimBackend`, and
reads back one preallocated `BodyState` per step. Every backend (official MuJoCo on CPU threads,
MuJoCo Warp) implements the same protocol and is tested with the same suite.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass
class BodyState:
    """Kinematic state of N envs, filled in place by `SimBackend.copy_body_state_w`.

    All arrays are float32, world frame, SI units, indexed by env then by bound body (the order
    of `SimBackend.body_names`) or joint (robot joint order).

    Attributes:
        pos_w: (N, B, 3) body frame origins, m.
        quat_w: (N, B, 4) body orientations, wxyz, unit norm.
        lin_vel_w: (N, B, 3) linear velocity of each body frame origin, m/s.
        ang_vel_w: (N, B, 3) angular velocity, rad/s.
        joint_pos: (N, J) hinge positions, rad.
        joint_vel: (N, J) hinge velocities, rad/s.
    """

    pos_w: np.ndarray
    quat_w: np.ndarray
    lin_vel_w: np.ndarray
    ang_vel_w: np.ndarray
    joint_pos: np.ndarray
    joint_vel: np.ndarray

    @classmethod
    def zeros(cls, num_envs: int, num_bodies: int, num_joints: int) -> BodyState:
        """Allocate a zeroed state (quaternions set to identity)."""
        f = np.float32
        quat = np.zeros((num_envs, num_bodies, 4), f)
        quat[..., 0] = 1.0
        return cls(
            pos_w=np.zeros((num_envs, num_bodies, 3), f),
            quat_w=quat,
            lin_vel_w=np.zeros((num_envs, num_bodies, 3), f),
            ang_vel_w=np.zeros((num_envs, num_bodies, 3), f),
            joint_pos=np.zeros((num_envs, num_joints), f),
            joint_vel=np.zeros((num_envs, num_joints), f),
        )


@runtime_checkable
class SimBackend(Protocol):
    """Batched physics for N copies of one robot model.

    Generalised coordinates follow MuJoCo: ``qpos = [root pos (3), root quat wxyz (4), joints]``
    (nq = 7 + J), ``qvel = [root lin vel world (3), root ang vel local (3), joints]`` (nv = 6 + J).

    Attributes:
        num_envs: N.
        body_names: the B bound bodies, in the order of `BodyState` arrays.
        physics_dt: substep, s. decimation: substeps per control step.
        self_contact_substeps: (N,) int32, after `step`: how many of the last step's substeps
            had a self-contact normal force above the threshold given at construction.
        nonfinite: (N,) bool, after `step`: rows whose state became NaN/Inf (or diverged) during
            the step. Such rows hold garbage until the env writes them with `write_state`.
    """

    num_envs: int
    body_names: tuple[str, ...]
    physics_dt: float
    decimation: int
    self_contact_substeps: np.ndarray
    nonfinite: np.ndarray

    def step(self, joint_pos_target: np.ndarray) -> None:
        """Advance every env `decimation` substeps holding position targets (N, J) rad."""
        ...

    def copy_body_state_w(self, out: BodyState, env_ids: np.ndarray | None = None) -> None:
        """Fill `out` in place with the state after the last substep (or last write); only
        rows `env_ids` (M,) int when given, other rows of `out` untouched."""
        ...

    def write_state(self, env_ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Set qpos (M, nq) and qvel (M, nv) of rows `env_ids` (M,) int, clear their warm-start
        and actuator history, and run forward kinematics on them so that a following
        `copy_body_state_w` sees the written state. Other rows are untouched."""
        ...

    def set_foot_friction(self, env_ids: np.ndarray, friction: np.ndarray) -> None:
        """Set the sliding friction coefficient (M,) of the foot collision geoms of rows."""
        ...

    def set_body_com_offset(self, env_ids: np.ndarray, body: str, offset: np.ndarray) -> None:
        """Shift the centre of mass of `body` by offset (M, 3) m (body frame) from its nominal
        position, for rows `env_ids`."""
        ...

    def close(self) -> None:
        """Release threads and device memory."""
        ...
