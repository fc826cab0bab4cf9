"""The contract between the tracking env and a physics engine.

The env never touches engine objects: it hands joint position targets to a `SimBackend`, and
reads back one preallocated `BodyState` per step. Every backend (official MuJoCo on CPU threads,
MuJoCo Warp) implements the same protocol and is tested with the same suite.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class BodyState:
    """Kinematic state of N envs, filled in place by `SimBackend.copy_body_state_w` (the
    arrays are written in place, never reassigned: the dataclass is frozen).

    All arrays are float32, world frame, SI units, indexed by env then by bound body (the order
    of `SimBackend.body_ids`) or joint (the order of `SimBackend.joint_ids`).

    Attributes:
        pos_w: (N, B, 3) body frame origins, m.
        quat_w: (N, B, 4) body orientations, wxyz, unit norm; the sign is the engine's (q and
            -q are the same rotation; every env kernel is sign-invariant).
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
    """Batched physics for N copies of one robot model, built from ids, never names.

    A backend is constructed as ``Backend(model, num_envs, body_ids, joint_ids, decimation=4,
    self_contact_threshold=10.0, **backend_specific)`` (see `gym_motion.backends.make_backend`):
    ``model`` a compiled ``mujoco.MjModel`` (copied); ``body_ids`` (B,) int MuJoCo body ids whose
    state `copy_body_state_w` fills, in that order; ``joint_ids`` (J,) int MuJoCo hinge/slide
    joint ids of the joint state and of the position targets, in that order, each driven by
    exactly one joint-transmission actuator (J == model.nu). Bad ids raise ValueError naming them.
    Every env starts at the keyframe named ``"default"`` when the model has one, else at qpos0.

    Generalised coordinates follow MuJoCo: ``write_state`` takes the model's own qpos (nq) and
    qvel (nv) columns, in its kinematic tree's order, which need not be the order of
    ``joint_ids`` (`gym_motion.robots.layout.JointLayout` maps the robot's order onto them). A
    free joint holds ``[root pos (3), root quat wxyz (4)]`` in qpos and ``[root lin vel world
    (3), root ang vel body frame (3)]`` in qvel. Joint state and targets are gathered and
    scattered through ``joint_ids`` (``jnt_qposadr``, ``jnt_dofadr``, the driving actuator),
    never by position.

    Attributes:
        num_envs: N.
        body_ids: (B,) int64, the bound bodies, in the order of `BodyState` body arrays.
        joint_ids: (J,) int64, the bound joints, in the order of `BodyState` joint arrays and of
            `step`'s targets.
        physics_dt: substep, s. decimation: substeps per control step.
        self_contact_substeps: (N,) int32, after `step`: how many of the last step's substeps
            had a self-contact normal force above the threshold given at construction.
        nonfinite: (N,) bool, after `step`: rows whose state became NaN/Inf (or diverged) during
            the step. Such rows hold garbage until the env writes them with `write_state`.
    """

    num_envs: int
    body_ids: np.ndarray
    joint_ids: np.ndarray
    physics_dt: float
    decimation: int
    self_contact_substeps: np.ndarray
    nonfinite: np.ndarray

    def step(self, joint_pos_target: np.ndarray) -> None:
        """Advance every env `decimation` substeps holding position targets (N, J) rad (or m
        for slide joints). Raises ValueError for another shape. Targets must be finite and
        within +-1e10 (MuJoCo's mjMAXVAL; `TrackingVecEnv` refuses actions that break this);
        beyond that each engine does something else (MuJoCo zeroes every control of the
        model, MotrixSim flags the row, MuJoCo Warp clamps to the force range)."""
        ...

    def copy_body_state_w(self, out: BodyState, env_ids: np.ndarray | None = None) -> None:
        """Fill `out` in place with the state after the last substep (or last write); only
        rows `env_ids` (M,) int (or a (N,) bool mask) when given, other rows of `out`
        untouched. Raises ValueError when `out`'s arrays are not (N, B, .) / (N, J) float32."""
        ...

    def write_state(self, env_ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Set qpos (M, nq) and qvel (M, nv) of rows `env_ids` (M,) int (unique ids, or a (N,)
        bool mask), clear their warm-start and actuator history and their `nonfinite` flag, so
        that a following `copy_body_state_w` sees the written state. Other rows are untouched.

        Raises:
            ValueError: ids that are not integers, are outside [0, N) or repeat (which of two
                rows would win differs between devices: a GPU writes them at once), arrays of
                another shape, or values that are not finite (a blow-up comes from physics,
                not from a write).
        """
        ...

    def add_root_velocity(
        self, env_ids: np.ndarray, lin_vel_w: np.ndarray, ang_vel_w: np.ndarray
    ) -> None:
        """Add world-frame velocity to the floating base (the model's one free joint) of rows
        `env_ids` (M,) (unique ids): linear (M, 3) m/s to the velocity of the root body's
        frame origin, angular (M, 3) rad/s to its angular velocity.

        qpos, the other velocities, the solver warm start and actuator state are kept. The free
        joint's angular velocity (qvel[3:6]) is in the body frame, so the angular kick is
        rotated by the inverse of the current root orientation (float64). A following
        `copy_body_state_w` sees the new velocities. Other rows are untouched.

        Raises:
            ValueError: the model has no free joint or several; ids outside [0, N) or
                repeated; kicks not of shape (M, 3) or not finite.
        """
        ...

    def model_field(self, field: str, elem_ids: np.ndarray) -> np.ndarray:
        """Nominal values (those of the model the backend was built with, whatever per-env
        values were set since) of ``model.<field>[elem_ids]``: a float64 copy of shape
        (K, *trailing), e.g. (K, 3) for ``"geom_friction"``, (K,) for ``"body_mass"``.

        Raises:
            ValueError: a field outside `gym_motion.backends.binding.MODEL_FIELDS` (the message
                lists them) or element ids out of range.
        """
        ...

    def set_model_field(
        self, field: str, env_ids: np.ndarray, elem_ids: np.ndarray, values: np.ndarray
    ) -> None:
        """Give rows `env_ids` (M,) their own ``model.<field>[elem_ids]``: `values` of shape
        (M, K, *trailing) (units of the field: friction coefficients, m, kg). Other rows and
        other elements keep their values. Supported fields: ``"geom_friction"``,
        ``"body_ipos"`` (centre of mass, body frame, m), ``"body_mass"`` (kg); constants MuJoCo
        derives from them at compile time (subtree masses, invweight0) stay nominal.

        Raises:
            ValueError: an unsupported field (the message lists the supported ones), element or
                env ids out of range, values of another shape (the message gives the expected
                one) or not finite.
        """
        ...

    def close(self) -> None:
        """Release threads and device memory."""
        ...
