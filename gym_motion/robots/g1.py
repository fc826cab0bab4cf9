"""Unitree G1 29-DoF (``g1_29dof_rev_1_0``): names, motor table, gains and the model loader.

Every number of the robot lives here (TASK_SPEC section 2). Arrays are in joint order, which is
the MJCF depth-first order and the column order of LAFAN1-style motion CSVs.

Actuator gains follow the BeyondMimic convention: each joint is a critically over-damped
second-order system around its position target, with natural frequency 10 Hz and damping ratio
2 on the reflected rotor inertia (armature) of its motor.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

JOINT_NAMES: tuple[str, ...] = (
    "left_hip_pitch_joint",
    "left_hip_roll_joint",
    "left_hip_yaw_joint",
    "left_knee_joint",
    "left_ankle_pitch_joint",
    "left_ankle_roll_joint",
    "right_hip_pitch_joint",
    "right_hip_roll_joint",
    "right_hip_yaw_joint",
    "right_knee_joint",
    "right_ankle_pitch_joint",
    "right_ankle_roll_joint",
    "waist_yaw_joint",
    "waist_roll_joint",
    "waist_pitch_joint",
    "left_shoulder_pitch_joint",
    "left_shoulder_roll_joint",
    "left_shoulder_yaw_joint",
    "left_elbow_joint",
    "left_wrist_roll_joint",
    "left_wrist_pitch_joint",
    "left_wrist_yaw_joint",
    "right_shoulder_pitch_joint",
    "right_shoulder_roll_joint",
    "right_shoulder_yaw_joint",
    "right_elbow_joint",
    "right_wrist_roll_joint",
    "right_wrist_pitch_joint",
    "right_wrist_yaw_joint",
)
NUM_JOINTS = len(JOINT_NAMES)

# All 30 bodies except the world, MJCF depth-first order, pelvis (the floating base) first.
BODY_NAMES: tuple[str, ...] = (
    "pelvis",
    "left_hip_pitch_link",
    "left_hip_roll_link",
    "left_hip_yaw_link",
    "left_knee_link",
    "left_ankle_pitch_link",
    "left_ankle_roll_link",
    "right_hip_pitch_link",
    "right_hip_roll_link",
    "right_hip_yaw_link",
    "right_knee_link",
    "right_ankle_pitch_link",
    "right_ankle_roll_link",
    "waist_yaw_link",
    "waist_roll_link",
    "torso_link",
    "left_shoulder_pitch_link",
    "left_shoulder_roll_link",
    "left_shoulder_yaw_link",
    "left_elbow_link",
    "left_wrist_roll_link",
    "left_wrist_pitch_link",
    "left_wrist_yaw_link",
    "right_shoulder_pitch_link",
    "right_shoulder_roll_link",
    "right_shoulder_yaw_link",
    "right_elbow_link",
    "right_wrist_roll_link",
    "right_wrist_pitch_link",
    "right_wrist_yaw_link",
)
ROOT_BODY = "pelvis"
ANCHOR_BODY = "torso_link"

# Bodies whose pose the tracking rewards compare (TASK_SPEC section 4); element 0 is the root.
TRACKED_BODIES: tuple[str, ...] = (
    "pelvis",
    "left_hip_roll_link",
    "left_knee_link",
    "left_ankle_roll_link",
    "right_hip_roll_link",
    "right_knee_link",
    "right_ankle_roll_link",
    "torso_link",
    "left_shoulder_roll_link",
    "left_elbow_link",
    "left_wrist_yaw_link",
    "right_shoulder_roll_link",
    "right_elbow_link",
    "right_wrist_yaw_link",
)
END_EFFECTORS: tuple[str, ...] = (
    "left_ankle_roll_link",
    "right_ankle_roll_link",
    "left_wrist_yaw_link",
    "right_wrist_yaw_link",
)
SITE_NAMES: tuple[str, ...] = (
    "imu_in_pelvis",
    "imu_in_torso",
    "left_foot",
    "right_foot",
    "left_palm",
    "right_palm",
)


@dataclass(frozen=True)
class Motor:
    """A G1 joint motor: a two-stage planetary gearbox behind a rotor.

    Attributes:
        rotor_inertia: (r1, r2, r3) rotor, first and second planet-stage inertias, kg m^2.
        gears: (g1, g2, g3) gear ratios of the three stages (g1 is the rotor, always 1).
        effort_limit: peak output torque, N m.
        count: how many such motors drive the joint through a linkage (their armatures add).
    """

    rotor_inertia: tuple[float, float, float]
    gears: tuple[float, float, float]
    effort_limit: float
    count: int = 1

    @property
    def armature(self) -> float:
        """Reflected inertia at the joint, kg m^2: ``count * (r1 (g2 g3)^2 + r2 g3^2 + r3)``."""
        r1, r2, r3 = self.rotor_inertia
        _, g2, g3 = self.gears
        return self.count * (r1 * (g2 * g3) ** 2 + r2 * g3**2 + r3)


# Motor data from Unitree's actuator sheets as used by BeyondMimic (TASK_SPEC section 2).
MOTOR_5020 = Motor(
    (0.139e-4, 0.017e-4, 0.169e-4), (1.0, 1.0 + 46.0 / 18.0, 1.0 + 56.0 / 16.0), 25.0
)
MOTOR_7520_14 = Motor((0.489e-4, 0.098e-4, 0.533e-4), (1.0, 4.5, 1.0 + 48.0 / 22.0), 88.0)
MOTOR_7520_22 = Motor((0.489e-4, 0.109e-4, 0.738e-4), (1.0, 4.5, 5.0), 139.0)
MOTOR_4010 = Motor((0.068e-4, 0.0, 0.0), (1.0, 5.0, 5.0), 5.0)
# Waist roll/pitch and ankle pitch/roll are driven by two 5020 motors through a linkage.
MOTOR_2X5020 = Motor(MOTOR_5020.rotor_inertia, MOTOR_5020.gears, 50.0, count=2)

NATURAL_FREQUENCY = 10.0 * 2.0 * np.pi  # rad/s
DAMPING_RATIO = 2.0
ACTION_SCALE_FRACTION = 0.25  # action scale = 0.25 * effort_limit / kp


def _motor_of(joint: str) -> Motor:
    part = joint.removeprefix("left_").removeprefix("right_").removesuffix("_joint")
    table = {
        "hip_pitch": MOTOR_7520_14,
        "hip_yaw": MOTOR_7520_14,
        "waist_yaw": MOTOR_7520_14,
        "hip_roll": MOTOR_7520_22,
        "knee": MOTOR_7520_22,
        "ankle_pitch": MOTOR_2X5020,
        "ankle_roll": MOTOR_2X5020,
        "waist_roll": MOTOR_2X5020,
        "waist_pitch": MOTOR_2X5020,
        "shoulder_pitch": MOTOR_5020,
        "shoulder_roll": MOTOR_5020,
        "shoulder_yaw": MOTOR_5020,
        "elbow": MOTOR_5020,
        "wrist_roll": MOTOR_5020,
        "wrist_pitch": MOTOR_4010,
        "wrist_yaw": MOTOR_4010,
    }
    return table[part]


MOTORS: tuple[Motor, ...] = tuple(_motor_of(j) for j in JOINT_NAMES)
ARMATURE = np.array([m.armature for m in MOTORS])  # (29,) kg m^2
KP = ARMATURE * NATURAL_FREQUENCY**2  # (29,) N m / rad
KD = 2.0 * DAMPING_RATIO * ARMATURE * NATURAL_FREQUENCY  # (29,) N m s / rad
EFFORT_LIMIT = np.array([m.effort_limit for m in MOTORS])  # (29,) N m
ACTION_SCALE = ACTION_SCALE_FRACTION * EFFORT_LIMIT / KP  # (29,) rad per unit action

_DEFAULT_POSE = {
    "left_hip_pitch_joint": -0.312,
    "right_hip_pitch_joint": -0.312,
    "left_knee_joint": 0.669,
    "right_knee_joint": 0.669,
    "left_ankle_pitch_joint": -0.363,
    "right_ankle_pitch_joint": -0.363,
    "left_elbow_joint": 0.6,
    "right_elbow_joint": 0.6,
    "left_shoulder_pitch_joint": 0.2,
    "right_shoulder_pitch_joint": 0.2,
    "left_shoulder_roll_joint": 0.2,
    "right_shoulder_roll_joint": -0.2,
}
DEFAULT_JOINT_POS = np.array([_DEFAULT_POSE.get(j, 0.0) for j in JOINT_NAMES])  # (29,) rad
DEFAULT_ROOT_HEIGHT = 0.76  # m
SOFT_JOINT_LIMIT_FACTOR = 0.9  # soft limits: 90 % of each joint range, centred

TOTAL_MASS = 33.34  # kg, for tests


# --- The MuJoCo model ---------------------------------------------------------------------------

MODEL_XML = Path(__file__).resolve().parents[1] / "assets" / "g1.xml"  # the project's own MJCF
ROOT_JOINT = "floating_base_joint"
KEYFRAME = "default"  # root at DEFAULT_ROOT_HEIGHT, joints at DEFAULT_JOINT_POS
FLOOR_GEOM = "floor"
FOOT_BODIES: tuple[str, ...] = ("left_ankle_roll_link", "right_ankle_roll_link")
SELF_CONTACT_SENSOR = "self_contact"
# Layout of the self-contact sensor's 4 values: the number of robot-robot contacts, then the force
# of the strongest one in its contact frame, N (normal first).
SELF_CONTACT_COUNT = 0
SELF_CONTACT_NORMAL_FORCE = 1

# MuJoCo options (TASK_SPEC section 1).
PHYSICS_DT = 0.005  # s
INTEGRATOR = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
SOLVER = mujoco.mjtSolver.mjSOL_NEWTON
CONE = mujoco.mjtCone.mjCONE_PYRAMIDAL
SOLVER_ITERATIONS = 10
LINESEARCH_ITERATIONS = 20


def load_model(floor: bool = True, xml_path: str | os.PathLike | None = None) -> mujoco.MjModel:
    """Compile a G1 MJCF into the simulation model of the task (TASK_SPEC sections 1-2).

    The MJCF supplies kinematics, inertias and collision geometry only; everything else comes from
    this module: solver options, joint armature, one position actuator per joint, the floor, the
    ``"default"`` keyframe and the ``"self_contact"`` sensor. Any G1 29-DoF MJCF with the names of
    :data:`JOINT_NAMES` and :data:`BODY_NAMES` works (e.g. a mesh-rich MuJoCo Menagerie G1); its
    own actuators are replaced.

    Args:
        floor: add a ground plane ``"floor"`` (z = 0, condim 3) and a light.
        xml_path: MJCF file; default :data:`MODEL_XML`, the project's primitive-only G1.

    Returns:
        The compiled model (nq 36, nv 35, nu 29 for a 29-DoF G1). Actuator ``i`` is a
        position servo on ``JOINT_NAMES[i]`` named like it, with ``kp = KP[i]`` (N m/rad),
        ``kv = KD[i]`` (N m s/rad), force range ``+/- EFFORT_LIMIT[i]`` (N m) and unclamped
        control (rad).
        Keyframe ``"default"``: root at ``(0, 0, DEFAULT_ROOT_HEIGHT)`` with identity
        orientation, joints and controls at :data:`DEFAULT_JOINT_POS`.
        Sensor ``"self_contact"`` (MuJoCo ``contact`` sensor over robot-robot contacts only,
        floor contacts excluded), 4 values: number of self contacts
        (:data:`SELF_CONTACT_COUNT`), then the force of the strongest one in its contact frame
        (normal at :data:`SELF_CONTACT_NORMAL_FORCE`, tangent 1, tangent 2; N); all 0 without
        one. The task's "any self-contact force > 10 N" reads the normal force.

    Raises:
        FileNotFoundError: ``xml_path`` does not exist.
        ValueError: the MJCF lacks joints or bodies of the G1 (the message names each missing one
            and the file), or its root body ``pelvis`` has no free joint.
    """
    path = Path(MODEL_XML if xml_path is None else xml_path)
    if not path.is_file():
        raise FileNotFoundError(f"G1 MJCF not found: {path}")
    spec = mujoco.MjSpec.from_file(str(path))
    _check_names(spec, path)

    spec.option.timestep = PHYSICS_DT
    spec.option.integrator = INTEGRATOR
    spec.option.solver = SOLVER
    spec.option.cone = CONE
    spec.option.iterations = SOLVER_ITERATIONS
    spec.option.ls_iterations = LINESEARCH_ITERATIONS

    for actuator in list(spec.actuators):
        spec.delete(actuator)
    for name, armature, kp, kd, effort in zip(
        JOINT_NAMES, ARMATURE, KP, KD, EFFORT_LIMIT, strict=True
    ):
        spec.joint(name).armature = armature
        actuator = spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        actuator.set_to_position(kp=kp, kv=kd)
        actuator.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
        actuator.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        actuator.forcerange = [-effort, effort]

    if floor:
        spec.worldbody.add_geom(
            name=FLOOR_GEOM, type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0.0, 0.0, 0.05], condim=3
        )
        spec.worldbody.add_light(
            pos=[0.0, 0.0, 3.0], dir=[0.0, 0.0, -1.0], type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
        )

    sensor = spec.add_sensor(name=SELF_CONTACT_SENSOR, type=mujoco.mjtSensor.mjSENS_CONTACT)
    # Both sides match the subtree of the root, so only robot-robot contacts count. MuJoCo's
    # "netforce" reduction sums force vectors in the world frame, where the equal and opposite
    # forces of self contacts cancel; "maxforce" keeps the strongest contact instead.
    sensor.objtype = sensor.reftype = mujoco.mjtObj.mjOBJ_XBODY
    sensor.objname = sensor.refname = ROOT_BODY
    found_force = (1 << int(mujoco.mjtConDataField.mjCONDATA_FOUND)) | (
        1 << int(mujoco.mjtConDataField.mjCONDATA_FORCE)
    )
    sensor.intprm[:3] = [found_force, _REDUCE_MAXFORCE, 1]

    for key in list(spec.keys):
        if key.name == KEYFRAME:
            spec.delete(key)
    spec.add_key(name=KEYFRAME)

    model = spec.compile()
    key = model.key(KEYFRAME)
    root = model.jnt_qposadr[_free_joint(model)]
    key.qpos[:] = model.qpos0
    key.qpos[root : root + 7] = [0.0, 0.0, DEFAULT_ROOT_HEIGHT, 1.0, 0.0, 0.0, 0.0]
    key.qpos[joint_qpos_adr(model)] = DEFAULT_JOINT_POS
    key.ctrl[:] = DEFAULT_JOINT_POS
    return model


_REDUCE_MAXFORCE = 2  # contact sensor reduction codes: 0 none, 1 mindist, 2 maxforce, 3 netforce


def _check_names(spec: mujoco.MjSpec, path: Path) -> None:
    joints = {j.name for j in spec.joints}
    bodies = {b.name for b in spec.bodies}
    missing_joints = [n for n in JOINT_NAMES if n not in joints]
    missing_bodies = [n for n in BODY_NAMES if n not in bodies]
    if missing_joints or missing_bodies:
        raise ValueError(
            f"{path} is not a G1 29-DoF model: missing joints {missing_joints}, "
            f"missing bodies {missing_bodies}"
        )
    root = spec.body(ROOT_BODY)
    if not any(j.type == mujoco.mjtJoint.mjJNT_FREE for j in root.joints):
        raise ValueError(f"{path}: root body {ROOT_BODY!r} has no free joint")


def _free_joint(model: mujoco.MjModel) -> int:
    root = model.body(ROOT_BODY).id
    return next(
        j
        for j in range(model.njnt)
        if model.jnt_bodyid[j] == root and model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE
    )


def joint_qpos_adr(model: mujoco.MjModel) -> np.ndarray:
    """Indices of the 29 joints of :data:`JOINT_NAMES` in ``qpos``: (29,) int.

    Raises:
        KeyError: a joint name is not in ``model``.
    """
    return np.array([model.joint(n).qposadr[0] for n in JOINT_NAMES])


def joint_dof_adr(model: mujoco.MjModel) -> np.ndarray:
    """Indices of the 29 joints of :data:`JOINT_NAMES` in ``qvel``: (29,) int.

    Raises:
        KeyError: a joint name is not in ``model``.
    """
    return np.array([model.joint(n).dofadr[0] for n in JOINT_NAMES])


def body_ids(model: mujoco.MjModel, names: tuple[str, ...] = BODY_NAMES) -> np.ndarray:
    """Model ids of the named bodies, in the given order: (len(names),) int.

    Raises:
        KeyError: a body name is not in ``model``.
    """
    return np.array([model.body(n).id for n in names])


def foot_geom_ids(model: mujoco.MjModel) -> np.ndarray:
    """Collision geoms of both feet (the bodies of :data:`FOOT_BODIES`): (n,) int, sorted.

    A collision geom is one with nonzero ``contype`` or ``conaffinity``. In the project's model
    these are the 7 + 7 foot capsules; the ids suit per-env friction randomisation.
    """
    feet = body_ids(model, FOOT_BODIES)
    collides = (model.geom_contype != 0) | (model.geom_conaffinity != 0)
    return np.flatnonzero(np.isin(model.geom_bodyid, feet) & collides)


def soft_joint_limits(model: mujoco.MjModel) -> np.ndarray:
    """Soft joint limits: (29, 2) rad, columns (lower, upper), rows in :data:`JOINT_NAMES` order.

    Each range is shrunk about its centre to :data:`SOFT_JOINT_LIMIT_FACTOR` (90 %) of its width
    (TASK_SPEC section 7).

    Raises:
        KeyError: a joint name is not in ``model``.
    """
    ranges = np.array([model.joint(n).range for n in JOINT_NAMES])
    centre = ranges.mean(axis=1)
    half = 0.5 * SOFT_JOINT_LIMIT_FACTOR * (ranges[:, 1] - ranges[:, 0])
    return np.stack([centre - half, centre + half], axis=1)
