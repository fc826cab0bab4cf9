"""Unitree G1 29-DoF (``g1_29dof_rev_1_0``): names, motor table, gains, and the `G1` spec.

Every number of the robot lives here (docs/task.md section 2); `G1` gathers them into the
`RobotSpec` the env takes, with the project's MJCF beside this file (``g1.xml``). Arrays are in
joint order, which is the MJCF depth-first order and the column order of LAFAN1-style CSVs.

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

from gym_motion.robots.spec import (  # noqa: F401 - model constants, re-exported for users
    FLOOR_GEOM,
    KEYFRAME,
    PHYSICS_DT,
    SELF_CONTACT_COUNT,
    SELF_CONTACT_NORMAL_FORCE,
    SELF_CONTACT_SENSOR,
    RobotSpec,
)

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

# Bodies whose pose the tracking rewards compare (docs/task.md section 4); element 0 is the root.
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


# Motor data from Unitree's actuator sheets as used by BeyondMimic (docs/task.md section 2).
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


MODEL_XML = Path(__file__).resolve().parent / "g1.xml"  # the project's own MJCF (primitives only)
FOOT_BODIES: tuple[str, ...] = ("left_ankle_roll_link", "right_ankle_roll_link")

G1 = RobotSpec(
    name="g1",
    mjcf_path=MODEL_XML,
    joint_names=JOINT_NAMES,
    body_names=BODY_NAMES,
    root_body=ROOT_BODY,
    anchor_body=ANCHOR_BODY,
    tracked_bodies=TRACKED_BODIES,
    end_effector_bodies=END_EFFECTORS,
    foot_bodies=FOOT_BODIES,
    armature=ARMATURE,
    kp=KP,
    kd=KD,
    effort_limit=EFFORT_LIMIT,
    action_scale=ACTION_SCALE,
    default_joint_pos=DEFAULT_JOINT_POS,
    default_root_height=DEFAULT_ROOT_HEIGHT,
    soft_limit_factor=SOFT_JOINT_LIMIT_FACTOR,
    imu_site="imu_in_pelvis",
)


def load_model(floor: bool = True, xml_path: str | os.PathLike | None = None) -> mujoco.MjModel:
    """The task's model of the G1 (`RobotSpec.build_model` of `G1`, or of ``G1.with_mjcf(
    xml_path)`` for another G1 29-DoF MJCF such as MuJoCo Menagerie's; names are checked).

    Raises:
        FileNotFoundError, ValueError: as `RobotSpec.build_model`.
    """
    robot = G1 if xml_path is None else G1.with_mjcf(xml_path)
    return robot.build_model(floor=floor)
