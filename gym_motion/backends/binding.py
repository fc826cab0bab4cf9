"""Engine-independent model binding shared by the backends (`MujocoBackend`, `MjWarpBackend`).

Everything here reads a compiled ``mujoco.MjModel`` and plain ids and returns NumPy index arrays;
nothing depends on how a backend steps its envs, and nothing knows a robot by name:

* `resolve_env_ids`: env ids or a boolean env mask -> row indices (M,) int64.
* `bind_ids`: the bodies and joints a backend reports (their qpos/qvel columns, the actuators
  that drive the joints, the floating base) -> `BoundIds`.
* `check_model_field`, `check_field_values`: arguments of the per-env model-field API
  (`SimBackend.model_field`, `SimBackend.set_model_field`) and its `MODEL_FIELDS`.
* `root_velocity_kicks`: arguments of `SimBackend.add_root_velocity`.
* `self_contact_columns`: sensordata columns of the ``"self_contact"`` contact sensor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

__all__ = [
    "MODEL_FIELDS",
    "SELF_CONTACT_SENSOR",
    "BoundIds",
    "bind_ids",
    "check_backend_args",
    "check_field_values",
    "check_model_field",
    "resolve_env_ids",
    "root_velocity_kicks",
    "self_contact_columns",
]

SELF_CONTACT_SENSOR = "self_contact"

# Model fields with per-env values (`SimBackend.set_model_field`) -> the MjModel size that
# bounds their element ids. Each is read by the dynamics only: forward kinematics does not
# depend on it, and no derived constant (body_subtreemass, invweight0, ...) is recomputed.
MODEL_FIELDS: dict[str, str] = {
    "geom_friction": "ngeom",  # (ngeom, 3) sliding, torsional, rolling friction
    "body_ipos": "nbody",  # (nbody, 3) centre of mass in the body frame, m
    "body_mass": "nbody",  # (nbody,) kg
}

# mjtConDataType bits of a contact sensor, in output order, with their sizes
_CONDATA_SIZES = (1, 3, 3, 1, 3, 3, 3)  # found, force, torque, dist, pos, normal, tangent
_REDUCE_NETFORCE = 3
_FREE = int(mujoco.mjtJoint.mjJNT_FREE)
_HINGE, _SLIDE = int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)


def check_backend_args(model: mujoco.MjModel, num_envs: int, decimation: int) -> None:
    """The constructor arguments every backend shares.

    Raises:
        TypeError: `model` is not a ``mujoco.MjModel``.
        ValueError: `num_envs` or `decimation` (substeps per control step) below 1.
    """
    if not isinstance(model, mujoco.MjModel):
        raise TypeError(f"model must be a mujoco.MjModel, got {type(model).__name__}")
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    if decimation < 1:
        raise ValueError(f"decimation must be >= 1, got {decimation}")


def resolve_env_ids(env_ids: np.ndarray, num_envs: int, unique: bool = False) -> np.ndarray:
    """Row indices (M,) int64 from env ids (any int dtype and shape, flattened) or a (N,) bool
    mask, N = `num_envs`.

    Raises:
        ValueError: a bool mask of another shape, ids that are not integers (0.9 was env 0),
            ids outside [0, N), or (with `unique`) an id given twice.
    """
    ids = np.asarray(env_ids)
    if ids.dtype == bool:
        if ids.shape != (num_envs,):
            raise ValueError(f"a boolean env mask must have shape ({num_envs},)")
        return np.flatnonzero(ids)
    if ids.size and not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"env_ids must be integers or a bool mask, got dtype {ids.dtype}")
    ids = ids.astype(np.int64, copy=False).reshape(-1)
    if ids.size and (ids.min() < 0 or ids.max() >= num_envs):
        raise ValueError(f"env_ids must be in [0, {num_envs})")
    if unique and np.unique(ids).size != ids.size:
        raise ValueError(f"env_ids must not repeat, got {ids.tolist()}")
    return ids


def check_state_rows(
    qpos: np.ndarray, qvel: np.ndarray, num_rows: int, nq: int, nv: int
) -> tuple[np.ndarray, np.ndarray]:
    """`write_state`'s qpos (M, nq) and qvel (M, nv), M = `num_rows`, as float64 arrays.

    Raises:
        ValueError: other shapes, or values that are not finite as float32 (rows named): a
            state is written finite; NaN/Inf are what a blow-up produces, and the backends
            flag those.
    """
    qpos, qvel = np.asarray(qpos, np.float64), np.asarray(qvel, np.float64)
    if qpos.shape != (num_rows, nq) or qvel.shape != (num_rows, nv):
        raise ValueError(
            f"write_state expects qpos ({num_rows}, {nq}) and qvel ({num_rows}, {nv}) for "
            f"{num_rows} env ids, got {qpos.shape} and {qvel.shape}"
        )
    big = float(np.finfo(np.float32).max)  # the state's values reach float32 arrays
    bad = ~((np.abs(qpos) <= big).all(axis=1) & (np.abs(qvel) <= big).all(axis=1))  # NaN: False
    if bad.any():
        raise ValueError(
            f"write_state: qpos/qvel rows {np.flatnonzero(bad)[:10].tolist()} are not finite "
            "as float32"
        )
    return qpos, qvel


def check_body_state(out: Any, num_envs: int, num_bodies: int, num_joints: int) -> None:
    """Check that `out` (a `BodyState`) has the shapes `copy_body_state_w` writes, float32.

    Raises:
        ValueError: a field of another shape or dtype (named, with the expected one).
    """
    expected = {
        "pos_w": (num_envs, num_bodies, 3), "quat_w": (num_envs, num_bodies, 4),
        "lin_vel_w": (num_envs, num_bodies, 3), "ang_vel_w": (num_envs, num_bodies, 3),
        "joint_pos": (num_envs, num_joints), "joint_vel": (num_envs, num_joints),
    }  # fmt: skip
    for name, shape in expected.items():
        a = getattr(out, name)
        if not isinstance(a, np.ndarray) or a.shape != shape or a.dtype != np.float32:
            got = f"{a.shape} {a.dtype}" if isinstance(a, np.ndarray) else type(a).__name__
            raise ValueError(f"BodyState.{name} must be {shape} float32, got {got}")


def _id_array(ids: np.ndarray, count: int, what: str) -> np.ndarray:
    """(K,) int64 copy of integer ids in [0, count); ValueError naming `what` otherwise."""
    arr = np.asarray(ids)
    if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{what} must be a 1-D array of integer ids, got {arr.dtype} {arr.shape}")
    arr = arr.astype(np.int64)
    bad = arr[(arr < 0) | (arr >= count)]
    if bad.size:
        raise ValueError(f"{what} {bad.tolist()} out of range: the model has {count} (ids 0..)")
    return arr


@dataclass(frozen=True)
class BoundIds:
    """Model indices of the B bodies and J joints a backend reports, in the given order.

    Attributes:
        body_ids: (B,) int64 body ids.
        root_ids: (B,) int64 id of each body's tree root (``body_rootid``).
        joint_ids: (J,) int64 joint ids (hinge or slide joints only, no repeats).
        qpos_adr: (J,) int64 column of each joint in qpos (``jnt_qposadr``).
        dof_adr: (J,) int64 column of each joint in qvel (``jnt_dofadr``).
        actuator_ids: (J,) int64 id of the one joint-transmission actuator driving each joint.
        free_qpos_adr, free_dof_adr: first qpos and qvel column of the model's single free joint
            (the floating base), or -1 when the model has none or several (`free_joint_error`
            says which).
        free_joint_error: why the free joint columns are -1 ("" when they are not).
    """

    body_ids: np.ndarray
    root_ids: np.ndarray
    joint_ids: np.ndarray
    qpos_adr: np.ndarray
    dof_adr: np.ndarray
    actuator_ids: np.ndarray
    free_qpos_adr: int
    free_dof_adr: int
    free_joint_error: str

    def require_free_joint(self) -> tuple[int, int]:
        """(`free_qpos_adr`, `free_dof_adr`) of the floating base.

        Raises:
            ValueError: the model has no free joint, or more than one.
        """
        if self.free_joint_error:
            raise ValueError(self.free_joint_error)
        return self.free_qpos_adr, self.free_dof_adr


def bind_ids(model: mujoco.MjModel, body_ids: np.ndarray, joint_ids: np.ndarray) -> BoundIds:
    """Check body and joint ids of `model` and resolve their columns and actuators.

    Args:
        model: the compiled model.
        body_ids: (B,) int body ids, each in [0, nbody).
        joint_ids: (J,) int joint ids, each in [0, njnt), hinge or slide, no repeats, each the
            target of exactly one joint-transmission actuator; J == nu.

    Raises:
        ValueError: ids that are not 1-D integers or out of range, a joint that is neither hinge
            nor slide, a repeated joint, a joint driven by zero or several actuators, or
            ``nu != J`` (every message names the offending ids).
    """
    bodies = _id_array(body_ids, model.nbody, "body_ids")
    joints = _id_array(joint_ids, model.njnt, "joint_ids")
    kinds = model.jnt_type[joints]
    wrong = joints[(kinds != _HINGE) & (kinds != _SLIDE)]
    if wrong.size:
        raise ValueError(f"joint_ids {wrong.tolist()} are not hinge or slide joints")
    uniq, counts = np.unique(joints, return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"joint_ids {uniq[counts > 1].tolist()} are repeated")
    if model.nu != joints.size:
        raise ValueError(
            f"the model has {model.nu} actuators but {joints.size} joint ids were given; "
            "expected one position actuator per joint"
        )
    by_joint = model.actuator_trntype == mujoco.mjtTrn.mjTRN_JOINT
    act_ids = np.empty(joints.size, np.int64)
    for k, jid in enumerate(joints):
        acts = np.flatnonzero(by_joint & (model.actuator_trnid[:, 0] == jid))
        if acts.size != 1:
            raise ValueError(f"joint id {int(jid)} has {acts.size} actuators, expected 1")
        act_ids[k] = acts[0]

    free = np.flatnonzero(model.jnt_type == _FREE)
    one = free.size == 1
    return BoundIds(
        body_ids=bodies,
        root_ids=model.body_rootid[bodies].astype(np.int64),
        joint_ids=joints,
        qpos_adr=model.jnt_qposadr[joints].astype(np.int64),
        dof_adr=model.jnt_dofadr[joints].astype(np.int64),
        actuator_ids=act_ids,
        free_qpos_adr=int(model.jnt_qposadr[free[0]]) if one else -1,
        free_dof_adr=int(model.jnt_dofadr[free[0]]) if one else -1,
        free_joint_error=""
        if one
        else (
            f"the model has {free.size} free joints; add_root_velocity needs exactly one "
            "(the floating base)"
        ),
    )


def check_model_field(
    model: mujoco.MjModel, field: str, elem_ids: np.ndarray
) -> tuple[np.ndarray, tuple[int, ...]]:
    """Validate a per-env model field and its element ids.

    Returns:
        elem: (K,) int64 element ids.
        trailing: the field's shape per element (``(3,)`` for geom_friction, ``()`` for
            body_mass).

    Raises:
        ValueError: a field not in `MODEL_FIELDS` (the message lists them), or element ids
            that are not 1-D integers in [0, model.<size>).
    """
    if field not in MODEL_FIELDS:
        raise ValueError(
            f"unsupported model field {field!r}; supported: {', '.join(map(repr, MODEL_FIELDS))}"
        )
    count = getattr(model, MODEL_FIELDS[field])
    elem = _id_array(elem_ids, count, f"{field} element ids")
    return elem, tuple(getattr(model, field).shape[1:])


def check_field_values(
    field: str, values: np.ndarray, num_rows: int, elem: np.ndarray, trailing: tuple[int, ...]
) -> np.ndarray:
    """`values` as float64 of shape (M, K, *trailing) (M = `num_rows`, K = elem.size).

    Raises:
        ValueError: another shape (the message gives the expected one) or a non-finite value.
    """
    vals = np.asarray(values, dtype=np.float64)
    expected = (num_rows, elem.size, *trailing)
    if vals.shape != expected:
        raise ValueError(
            f"values for {field!r} must have shape {expected} (env ids, element ids"
            f"{', per-element' if trailing else ''}), got {vals.shape}"
        )
    if not np.isfinite(vals).all():
        raise ValueError(f"values for {field!r} must be finite")
    return vals


def root_velocity_kicks(
    lin_vel_w: np.ndarray, ang_vel_w: np.ndarray, num_rows: int
) -> tuple[np.ndarray, np.ndarray]:
    """The two (M, 3) float64 kicks of `SimBackend.add_root_velocity`, M = `num_rows`.

    Raises:
        ValueError: another shape or a non-finite value.
    """
    lin = np.asarray(lin_vel_w, dtype=np.float64)
    ang = np.asarray(ang_vel_w, dtype=np.float64)
    if lin.shape != (num_rows, 3) or ang.shape != (num_rows, 3):
        raise ValueError(
            f"add_root_velocity expects lin_vel_w and ang_vel_w of shape ({num_rows}, 3), "
            f"got {lin.shape} and {ang.shape}"
        )
    if not (np.isfinite(lin).all() and np.isfinite(ang).all()):
        raise ValueError("add_root_velocity expects finite velocities")
    return lin, ang


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
