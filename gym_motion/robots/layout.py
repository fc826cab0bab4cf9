"""`JointLayout`: where a robot's joints live in one compiled MuJoCo model.

The task speaks in the robot's order: a configuration row is ``(root xyz, root quat wxyz, joints
in RobotSpec.joint_names order)``, (7 + J) values, and a velocity row ``(root linear velocity,
root angular velocity in the root frame, joint velocities)``, (6 + J) values; clips, CSV files,
actions and observations use it. A model's ``qpos``/``qvel`` follow its kinematic tree instead:
an MJCF that lists the right arm before the left one puts the right arm's joints first. Every
path that moves values between the two (RSI, forward kinematics of clips, keyframes) goes
through the one layout of its model, built once by `RobotSpec.layout`; the backends resolve the
same joint ids to the same columns (`gym_motion.backends.binding.bind_ids`).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

__all__ = ["ROOT_QPOS", "ROOT_QVEL", "JointLayout"]

ROOT_QPOS = 7  # root position (3) and quaternion wxyz (4) lead a robot-order configuration
ROOT_QVEL = 6  # root linear (3) and angular (3) velocity lead a robot-order velocity

_FREE = int(mujoco.mjtJoint.mjJNT_FREE)


@dataclass(frozen=True, eq=False)
class JointLayout:
    """The columns of a robot's root and joints in one model's ``qpos``, ``qvel`` and ``ctrl``.

    Attributes:
        joint_names: (J,) the robot's joints, in robot order.
        joint_ids: (J,) int64 model joint id of each.
        qpos_adr: (J,) int64 ``qpos`` column of each (``jnt_qposadr``).
        dof_adr: (J,) int64 ``qvel`` column of each (``jnt_dofadr``).
        actuator_ids: (J,) int64 the one joint-transmission actuator driving each (``ctrl``
            column), -1 for an undriven joint (an MJCF before `RobotSpec.build_model`).
        root_qpos_adr, root_dof_adr: first ``qpos`` / ``qvel`` column of the root's free joint.
        nq, nv: the model's sizes.
        qpos0: (nq,) float64 read-only, the model's ``qpos0``: the values of columns that are
            not the robot's (none in a model built by `RobotSpec.build_model`).
        identity: True when the model's layout is the robot's order (``qpos[7 + j]``,
            ``qvel[6 + j]`` and ``ctrl[j]`` are joint j; the shipped G1), so a copy suffices.
    """

    joint_names: tuple[str, ...]
    joint_ids: np.ndarray
    qpos_adr: np.ndarray
    dof_adr: np.ndarray
    actuator_ids: np.ndarray
    root_qpos_adr: int
    root_dof_adr: int
    nq: int
    nv: int
    qpos0: np.ndarray
    identity: bool

    @classmethod
    def of(cls, model: mujoco.MjModel, joint_names: tuple[str, ...], root_body: str) -> JointLayout:
        """The layout of `joint_names` (hinge or slide joints) and `root_body`'s free joint in
        `model`.

        Raises:
            KeyError: a joint or the root body is not in `model` (the message names it).
            ValueError: `root_body` has no free joint, or a joint is driven by several
                joint-transmission actuators.
        """
        ids = np.empty(len(joint_names), np.int64)
        for k, name in enumerate(joint_names):
            jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
            if jid < 0:
                raise KeyError(f"joint {name!r} is not in the model")
            ids[k] = jid
        root = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, root_body)
        if root < 0:
            raise KeyError(f"body {root_body!r} is not in the model")
        free = np.flatnonzero((model.jnt_bodyid == root) & (model.jnt_type == _FREE))
        if free.size != 1:
            raise ValueError(f"root body {root_body!r} has no free joint in the model")
        by_joint = model.actuator_trntype == mujoco.mjtTrn.mjTRN_JOINT
        acts = np.full(ids.size, -1, np.int64)
        for k, jid in enumerate(ids):
            found = np.flatnonzero(by_joint & (model.actuator_trnid[:, 0] == jid))
            if found.size > 1:
                raise ValueError(
                    f"joint {joint_names[k]!r} is driven by {found.size} actuators, expected 1"
                )
            if found.size:
                acts[k] = found[0]
        qpos_adr = model.jnt_qposadr[ids].astype(np.int64)
        dof_adr = model.jnt_dofadr[ids].astype(np.int64)
        root_q, root_d = int(model.jnt_qposadr[free[0]]), int(model.jnt_dofadr[free[0]])
        j = ids.size
        identity = (
            model.nq == ROOT_QPOS + j
            and model.nv == ROOT_QVEL + j
            and root_q == 0
            and root_d == 0
            and np.array_equal(qpos_adr, ROOT_QPOS + np.arange(j))
            and np.array_equal(dof_adr, ROOT_QVEL + np.arange(j))
            and np.array_equal(acts, np.arange(j))
            and model.nu == j
        )
        qpos0 = model.qpos0.copy()
        for a in (ids, qpos_adr, dof_adr, acts, qpos0):
            a.setflags(write=False)
        return cls(
            joint_names=tuple(joint_names), joint_ids=ids, qpos_adr=qpos_adr, dof_adr=dof_adr,
            actuator_ids=acts, root_qpos_adr=root_q, root_dof_adr=root_d, nq=int(model.nq),
            nv=int(model.nv), qpos0=qpos0, identity=bool(identity),
        )  # fmt: skip

    @property
    def num_joints(self) -> int:
        """J."""
        return len(self.joint_names)

    @property
    def qpos_columns(self) -> np.ndarray:
        """(7 + J,) int64: the ``qpos`` column of each value of a robot-order configuration."""
        root = self.root_qpos_adr + np.arange(ROOT_QPOS)
        return np.concatenate([root, self.qpos_adr]).astype(np.int64)

    @property
    def qvel_columns(self) -> np.ndarray:
        """(6 + J,) int64: the ``qvel`` column of each value of a robot-order velocity."""
        root = self.root_dof_adr + np.arange(ROOT_QVEL)
        return np.concatenate([root, self.dof_adr]).astype(np.int64)

    def model_qpos(self, qpos: np.ndarray) -> np.ndarray:
        """Robot-order configurations (..., 7 + J) -> the model's ``qpos`` (..., nq) float64
        (columns not of the robot at `qpos0`).

        Raises:
            ValueError: the last axis is not 7 + J.
        """
        qpos = self._checked(qpos, ROOT_QPOS, "qpos")
        out = np.broadcast_to(self.qpos0, (*qpos.shape[:-1], self.nq)).copy()
        out[..., self.qpos_columns] = qpos
        return out

    def model_qvel(self, qvel: np.ndarray) -> np.ndarray:
        """Robot-order velocities (..., 6 + J) -> the model's ``qvel`` (..., nv) float64 (other
        columns 0).

        Raises:
            ValueError: the last axis is not 6 + J.
        """
        qvel = self._checked(qvel, ROOT_QVEL, "qvel")
        out = np.zeros((*qvel.shape[:-1], self.nv))
        out[..., self.qvel_columns] = qvel
        return out

    def robot_qpos(self, qpos: np.ndarray) -> np.ndarray:
        """The model's ``qpos`` (..., nq) -> robot-order configurations (..., 7 + J) float64.

        Raises:
            ValueError: the last axis is not nq.
        """
        qpos = np.asarray(qpos, np.float64)
        if qpos.shape[-1:] != (self.nq,):
            raise ValueError(f"qpos must be (..., {self.nq}) model columns, got {qpos.shape}")
        return qpos[..., self.qpos_columns]

    def _checked(self, a: np.ndarray, root: int, name: str) -> np.ndarray:
        a = np.asarray(a, np.float64)
        if a.shape[-1:] != (root + self.num_joints,):
            raise ValueError(
                f"{name} must be (..., {root + self.num_joints}) in robot order ({root} root "
                f"values, then {self.num_joints} joints), got {a.shape}"
            )
        return a
