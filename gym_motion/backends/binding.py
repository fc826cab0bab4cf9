"""Engine-independent model binding shared by the backends (`MujocoBackend`, `MjWarpBackend`).

Everything here reads a compiled ``mujoco.MjModel`` (or plain ids) and returns NumPy index
arrays; nothing depends on how a backend steps its envs:

* `resolve_env_ids`: env ids or a boolean env mask -> row indices (M,) int64.
* `name_to_id`: one body/joint/... name -> its id, with the backends' error message.
* `bind_names`: the bodies and joints a backend reports (and the actuators that drive the
  joints) -> `BoundIds`.
* `foot_geom_ids`: the foot collision geoms whose friction is randomised.
* `self_contact_columns`: sensordata columns of the ``"self_contact"`` contact sensor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import mujoco
import numpy as np

__all__ = [
    "SELF_CONTACT_SENSOR",
    "BoundIds",
    "bind_names",
    "foot_geom_ids",
    "name_to_id",
    "resolve_env_ids",
    "self_contact_columns",
]

SELF_CONTACT_SENSOR = "self_contact"
# mjtConDataType bits of a contact sensor, in output order, with their sizes
_CONDATA_SIZES = (1, 3, 3, 1, 3, 3, 3)  # found, force, torque, dist, pos, normal, tangent
_REDUCE_NETFORCE = 3
_HINGE, _SLIDE = int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)


def resolve_env_ids(env_ids: np.ndarray, num_envs: int) -> np.ndarray:
    """Row indices (M,) int64 from env ids (any int dtype and shape, flattened) or a (N,) bool
    mask, N = `num_envs`.

    Raises:
        ValueError: a bool mask of another shape, or ids outside [0, N).
    """
    ids = np.asarray(env_ids)
    if ids.dtype == bool:
        if ids.shape != (num_envs,):
            raise ValueError(f"a boolean env mask must have shape ({num_envs},)")
        return np.flatnonzero(ids)
    ids = ids.astype(np.int64, copy=False).reshape(-1)
    if ids.size and (ids.min() < 0 or ids.max() >= num_envs):
        raise ValueError(f"env_ids must be in [0, {num_envs})")
    return ids


def name_to_id(model: mujoco.MjModel, objtype: mujoco.mjtObj, name: str) -> int:
    """The id (int >= 0) of the object `name` of type `objtype` in `model`.

    Raises:
        ValueError: ``no <kind> named '<name>' in the model`` (kind e.g. "body", "joint").
    """
    i = mujoco.mj_name2id(model, objtype, name)
    if i < 0:
        kind = objtype.name.removeprefix("mjOBJ_").lower()
        raise ValueError(f"no {kind} named {name!r} in the model")
    return i


@dataclass(frozen=True)
class BoundIds:
    """Model indices of the B bodies and J joints a backend reports, in the given order.

    Attributes:
        body_ids: (B,) int64 body ids.
        root_ids: (B,) int64 id of each body's tree root (``body_rootid``).
        joint_ids: (J,) int64 joint ids (hinge or slide joints only).
        qpos_adr: (J,) int64 column of each joint in qpos (``jnt_qposadr``).
        dof_adr: (J,) int64 column of each joint in qvel (``jnt_dofadr``).
        actuator_ids: (J,) int64 id of the one actuator driving each joint, or None when
            `bind_names` was not asked to resolve actuators.
        foot_geom_ids: (G,) int64 foot collision geoms, as `foot_geom_ids`.
    """

    body_ids: np.ndarray
    root_ids: np.ndarray
    joint_ids: np.ndarray
    qpos_adr: np.ndarray
    dof_adr: np.ndarray
    actuator_ids: np.ndarray | None
    foot_geom_ids: np.ndarray


def bind_names(
    model: mujoco.MjModel,
    body_names: Sequence[str],
    joint_names: Sequence[str],
    *,
    resolve_actuators: bool = False,
) -> BoundIds:
    """Resolve body and joint names of `model` to a `BoundIds`.

    Bodies are resolved first, then joints; then, joint by joint, the joint must be a hinge or
    slide joint and (with `resolve_actuators`) be the target of exactly one joint-transmission
    actuator.

    Raises:
        ValueError: an unknown name (``no body named ...``), a joint that is neither hinge nor
            slide, or (with `resolve_actuators`) a joint driven by zero or several actuators.
    """
    bodies = np.array(
        [name_to_id(model, mujoco.mjtObj.mjOBJ_BODY, nm) for nm in body_names], np.int64
    )
    joints = np.array(
        [name_to_id(model, mujoco.mjtObj.mjOBJ_JOINT, nm) for nm in joint_names], np.int64
    )
    act_ids = []
    for jid, nm in zip(joints, joint_names, strict=True):
        if int(model.jnt_type[jid]) not in (_HINGE, _SLIDE):
            raise ValueError(f"joint {nm!r} is not a hinge or slide joint")
        if resolve_actuators:
            acts = np.flatnonzero(
                (model.actuator_trntype == mujoco.mjtTrn.mjTRN_JOINT)
                & (model.actuator_trnid[:, 0] == jid)
            )
            if acts.size != 1:
                raise ValueError(f"joint {nm!r} has {acts.size} actuators, expected 1")
            act_ids.append(int(acts[0]))
    return BoundIds(
        body_ids=bodies,
        root_ids=model.body_rootid[bodies].astype(np.int64),
        joint_ids=joints,
        qpos_adr=model.jnt_qposadr[joints].astype(np.int64),
        dof_adr=model.jnt_dofadr[joints].astype(np.int64),
        actuator_ids=np.array(act_ids, np.int64) if resolve_actuators else None,
        foot_geom_ids=foot_geom_ids(model),
    )


def foot_geom_ids(model: mujoco.MjModel) -> np.ndarray:
    """Foot collision geoms (G,) int64: condim-3 geoms that collide (contype or conaffinity
    nonzero) on bodies whose name ends in ``ankle_roll_link``; empty when there are none."""
    names = ((i, model.body(i).name or "") for i in range(model.nbody))
    ankle = [i for i, name in names if name.endswith("ankle_roll_link")]
    return np.flatnonzero(
        np.isin(model.geom_bodyid, ankle)
        & (model.geom_condim == 3)
        & ((model.geom_contype != 0) | (model.geom_conaffinity != 0))
    )


def self_contact_columns(model: mujoco.MjModel, missing_hint: str) -> tuple[np.ndarray, bool]:
    """Sensordata columns of the forces of the ``"self_contact"`` contact sensor.

    Returns:
        cols: (slots, 3) int64, the sensordata columns of each slot's 3D force.
        use_norm: True when the sensor reduces to a world-frame net force (compare the force
            norm), False for contact-frame forces (compare the normal component, column 0).

    Raises:
        ValueError: no contact sensor of that name (message: ``the model has no contact sensor
            named 'self_contact'`` followed by `missing_hint`), or one without force data.
    """
    sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, SELF_CONTACT_SENSOR)
    if sid < 0 or int(model.sensor_type[sid]) != int(mujoco.mjtSensor.mjSENS_CONTACT):
        raise ValueError(
            f"the model has no contact sensor named {SELF_CONTACT_SENSOR!r}{missing_hint}"
        )
    dataspec, reduce = int(model.sensor_intprm[sid, 0]), int(model.sensor_intprm[sid, 1])
    if not dataspec & 0b10:
        raise ValueError(f"sensor {SELF_CONTACT_SENSOR!r} must report data='force'")
    slot = sum(size for bit, size in enumerate(_CONDATA_SIZES) if dataspec >> bit & 1)
    force_off = _CONDATA_SIZES[0] if dataspec & 1 else 0
    adr, dim = int(model.sensor_adr[sid]), int(model.sensor_dim[sid])
    starts = adr + force_off + slot * np.arange(dim // slot)
    cols = starts[:, None] + np.arange(3)[None, :]
    return cols.astype(np.int64), reduce == _REDUCE_NETFORCE
