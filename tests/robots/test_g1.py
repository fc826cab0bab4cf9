"""The project's G1 model equals the reference G1 (docs/task.md section 2) and carries the task's
actuators, options, keyframe and self-contact sensor."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest

from gym_motion.robots import g1
from gym_motion.robots.spec import body_ids

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
REFERENCE_XML = SHARED / "reference" / "g1" / "g1.xml"
REFERENCE_COLLISION_GROUP = 3


@pytest.fixture(scope="module")
def reference_xml() -> Path:
    if not REFERENCE_XML.is_file():
        pytest.skip(f"reference G1 model not found at {REFERENCE_XML.resolve()} (needs ../shared)")
    return REFERENCE_XML


@pytest.fixture(scope="module")
def reference(reference_xml: Path) -> mujoco.MjModel:
    """The reference MJCF compiled as it is (meshes included, no actuators)."""
    return mujoco.MjModel.from_xml_path(str(reference_xml))


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return g1.load_model()


@pytest.fixture(scope="module")
def model_no_floor() -> mujoco.MjModel:
    return g1.load_model(floor=False)


def quat_angle(q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """Rotation angle between unit quaternions (..., 4) -> (...,) rad; q and -q are equal."""
    sign = np.where(np.sum(q1 * q2, axis=-1, keepdims=True) < 0.0, -1.0, 1.0)
    chord = np.linalg.norm(q1 - sign * q2, axis=-1)
    return 4.0 * np.arcsin(np.clip(chord / 2.0, 0.0, 1.0))


def collision_geoms(model: mujoco.MjModel, body: int) -> np.ndarray:
    collides = (model.geom_contype != 0) | (model.geom_conaffinity != 0)
    return np.flatnonzero((model.geom_bodyid == body) & collides)


# --- kinematics and inertia -----------------------------------------------------------------------


def test_names_and_sizes(model: mujoco.MjModel):
    assert (model.nq, model.nv, model.nu, model.nbody) == (36, 35, 29, 31)
    assert [model.body(i).name for i in range(1, model.nbody)] == list(g1.BODY_NAMES)
    assert [model.joint(i).name for i in range(1, model.njnt)] == list(g1.JOINT_NAMES)
    assert model.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
    for name in g1.SITE_NAMES:
        model.site(name)


def test_forward_kinematics_equal_reference(model_no_floor: mujoco.MjModel, reference):
    model = model_no_floor
    rng = np.random.default_rng(7)
    data, ref_data = mujoco.MjData(model), mujoco.MjData(reference)
    ref_bodies = body_ids(reference, g1.BODY_NAMES)
    ref_sites = [reference.site(n).id for n in g1.SITE_NAMES]
    sites = [model.site(n).id for n in g1.SITE_NAMES]
    low, high = model.jnt_range[1:].T
    for _ in range(200):
        quat = rng.normal(size=4)
        qpos = np.concatenate(
            [rng.uniform(-2.0, 2.0, 3), quat / np.linalg.norm(quat), rng.uniform(low, high)]
        )
        data.qpos[:] = qpos
        ref_data.qpos[:] = qpos
        mujoco.mj_kinematics(model, data)
        mujoco.mj_kinematics(reference, ref_data)
        bodies = body_ids(model, g1.BODY_NAMES)
        np.testing.assert_allclose(data.xpos[bodies], ref_data.xpos[ref_bodies], rtol=0, atol=1e-6)
        assert quat_angle(data.xquat[bodies], ref_data.xquat[ref_bodies]).max() < 1e-6
        np.testing.assert_allclose(data.site_xpos[sites], ref_data.site_xpos[ref_sites], atol=1e-6)


def test_inertias_and_joint_ranges_equal_reference(model: mujoco.MjModel, reference):
    bodies, ref_bodies = body_ids(model, g1.BODY_NAMES), body_ids(reference, g1.BODY_NAMES)
    np.testing.assert_allclose(model.body_mass[bodies], reference.body_mass[ref_bodies], rtol=1e-6)
    np.testing.assert_allclose(
        model.body_inertia[bodies], reference.body_inertia[ref_bodies], rtol=1e-6
    )
    np.testing.assert_allclose(model.body_ipos[bodies], reference.body_ipos[ref_bodies], atol=1e-9)
    angle = quat_angle(model.body_iquat[bodies], reference.body_iquat[ref_bodies])
    assert angle.max() < 1e-6
    joints = [model.joint(n).id for n in g1.JOINT_NAMES]
    ref_joints = [reference.joint(n).id for n in g1.JOINT_NAMES]
    np.testing.assert_allclose(model.jnt_range[joints], reference.jnt_range[ref_joints], rtol=1e-6)
    np.testing.assert_array_equal(model.jnt_axis[joints], reference.jnt_axis[ref_joints])
    assert model.body_mass.sum() == pytest.approx(g1.TOTAL_MASS, abs=0.01)


# --- collision geometry ---------------------------------------------------------------------------


def test_collision_geoms_equal_reference(model_no_floor: mujoco.MjModel, reference):
    model = model_no_floor
    ref_collision = reference.geom_group == REFERENCE_COLLISION_GROUP
    assert len(collision_geoms(model, -1)) == 0
    total = 0
    for name in g1.BODY_NAMES:
        ours = collision_geoms(model, model.body(name).id)
        theirs = np.flatnonzero(ref_collision & (reference.geom_bodyid == reference.body(name).id))
        assert len(ours) == len(theirs), name
        total += len(ours)
        np.testing.assert_array_equal(model.geom_type[ours], reference.geom_type[theirs])
        np.testing.assert_allclose(model.geom_size[ours], reference.geom_size[theirs], atol=1e-9)
        np.testing.assert_allclose(model.geom_pos[ours], reference.geom_pos[theirs], atol=1e-9)
        assert np.all(quat_angle(model.geom_quat[ours], reference.geom_quat[theirs]) < 1e-6)
    assert total == np.count_nonzero(ref_collision)
    assert total == 33  # 14 foot capsules, 17 other capsules, 2 spheres
    n_geom_types = np.bincount(model.geom_type[model.geom_contype != 0], minlength=8)
    assert n_geom_types[mujoco.mjtGeom.mjGEOM_SPHERE] == 2


def test_contact_parameters(model_no_floor: mujoco.MjModel):
    model = model_no_floor
    feet = g1.G1.foot_geom_ids(model)
    assert len(feet) == 14
    assert all(
        model.geom(i).name.endswith("_collision") and "foot" in model.geom(i).name for i in feet
    )
    np.testing.assert_array_equal(model.geom_condim[feet], 3)
    np.testing.assert_array_equal(model.geom_priority[feet], 1)
    np.testing.assert_allclose(model.geom_friction[feet, 0], 0.6)
    others = np.setdiff1d(np.flatnonzero(model.geom_contype != 0), feet)
    assert len(others) == 19
    np.testing.assert_array_equal(model.geom_condim[others], 1)
    visual = np.flatnonzero(model.geom_contype == 0)
    np.testing.assert_array_equal(model.geom_conaffinity[visual], 0)
    np.testing.assert_array_equal(model.geom_group[visual], 2)


def test_contact_excludes_equal_reference(model: mujoco.MjModel, reference):
    def pairs(m: mujoco.MjModel) -> set[frozenset[str]]:
        return {
            frozenset((m.body(s >> 16).name, m.body(s & 0xFFFF).name)) for s in m.exclude_signature
        }

    assert pairs(model) == pairs(reference)
    assert frozenset(("pelvis", "left_hip_roll_link")) in pairs(model)
    assert len(pairs(model)) == 4


def test_sites_equal_reference(model: mujoco.MjModel, reference):
    for name in g1.SITE_NAMES:
        ours, theirs = model.site(name), reference.site(name)
        assert model.body(ours.bodyid[0]).name == reference.body(theirs.bodyid[0]).name
        np.testing.assert_allclose(ours.pos, theirs.pos, atol=1e-9)


# --- actuators, options, keyframe ---------------------------------------------------------------

# docs/task.md section 2 table: group -> (armature, kp, kd, effort, scale).
SPEC_TABLE = {
    "5020": (0.003610, 14.251, 0.9072, 25.0, 0.43858),
    "7520-14": (0.010178, 40.179, 2.5579, 88.0, 0.54755),
    "7520-22": (0.025102, 99.098, 6.3088, 139.0, 0.35066),
    "4010": (0.004250, 16.778, 1.0681, 5.0, 0.07450),
    "2x5020": (0.007219, 28.501, 1.8144, 50.0, 0.43858),
}
SPEC_GROUP = {
    "shoulder_pitch": "5020",
    "shoulder_roll": "5020",
    "shoulder_yaw": "5020",
    "elbow": "5020",
    "wrist_roll": "5020",
    "hip_pitch": "7520-14",
    "hip_yaw": "7520-14",
    "waist_yaw": "7520-14",
    "hip_roll": "7520-22",
    "knee": "7520-22",
    "wrist_pitch": "4010",
    "wrist_yaw": "4010",
    "waist_roll": "2x5020",
    "waist_pitch": "2x5020",
    "ankle_pitch": "2x5020",
    "ankle_roll": "2x5020",
}


def spec_column(column: int) -> np.ndarray:
    parts = [
        n.removeprefix("left_").removeprefix("right_").removesuffix("_joint")
        for n in g1.JOINT_NAMES
    ]
    return np.array([SPEC_TABLE[SPEC_GROUP[p]][column] for p in parts])


def test_motor_constants_match_the_task_table():
    np.testing.assert_allclose(g1.ARMATURE, spec_column(0), rtol=1e-3)
    np.testing.assert_allclose(g1.KP, spec_column(1), rtol=1e-3)
    np.testing.assert_allclose(g1.KD, spec_column(2), rtol=1e-3)
    np.testing.assert_allclose(g1.EFFORT_LIMIT, spec_column(3), rtol=1e-3)
    np.testing.assert_allclose(g1.ACTION_SCALE, spec_column(4), rtol=1e-3)


def test_model_carries_actuators_in_joint_order(model: mujoco.MjModel):
    joints = np.array([model.joint(n).id for n in g1.JOINT_NAMES])
    assert [model.actuator(i).name for i in range(model.nu)] == list(g1.JOINT_NAMES)
    np.testing.assert_array_equal(model.actuator_trntype, mujoco.mjtTrn.mjTRN_JOINT)
    np.testing.assert_array_equal(model.actuator_trnid[:, 0], joints)
    np.testing.assert_allclose(model.actuator_gainprm[:, 0], spec_column(1), rtol=1e-3)
    np.testing.assert_allclose(model.actuator_biasprm[:, 1], -spec_column(1), rtol=1e-3)
    np.testing.assert_allclose(model.actuator_biasprm[:, 2], -spec_column(2), rtol=1e-3)
    np.testing.assert_allclose(
        model.dof_armature[g1.G1.joint_dof_adr(model)], spec_column(0), rtol=1e-3
    )
    np.testing.assert_allclose(model.actuator_forcerange[:, 1], spec_column(3), rtol=1e-3)
    np.testing.assert_allclose(model.actuator_forcerange[:, 0], -spec_column(3), rtol=1e-3)
    np.testing.assert_array_equal(model.actuator_forcelimited, 1)
    np.testing.assert_array_equal(model.actuator_ctrllimited, 0)
    np.testing.assert_array_equal(model.dof_armature[:6], 0.0)


def test_options_match_the_task(model: mujoco.MjModel):
    assert model.opt.timestep == 0.005
    assert model.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert model.opt.solver == mujoco.mjtSolver.mjSOL_NEWTON
    assert model.opt.cone == mujoco.mjtCone.mjCONE_PYRAMIDAL
    assert (model.opt.iterations, model.opt.ls_iterations) == (10, 20)


def test_default_keyframe(model: mujoco.MjModel):
    key = model.key(g1.KEYFRAME)
    np.testing.assert_array_equal(key.qpos[:7], [0, 0, 0.76, 1, 0, 0, 0])
    np.testing.assert_array_equal(key.qpos[g1.G1.joint_qpos_adr(model)], g1.DEFAULT_JOINT_POS)
    np.testing.assert_array_equal(key.ctrl, g1.DEFAULT_JOINT_POS)


def test_floor_is_optional(model: mujoco.MjModel, model_no_floor: mujoco.MjModel):
    floor = model.geom(g1.FLOOR_GEOM)
    assert floor.type[0] == mujoco.mjtGeom.mjGEOM_PLANE and floor.condim[0] == 3
    assert mujoco.mj_name2id(model_no_floor, mujoco.mjtObj.mjOBJ_GEOM, g1.FLOOR_GEOM) == -1


def test_soft_joint_limits_are_ninety_percent_centred(model: mujoco.MjModel):
    soft = g1.G1.soft_joint_limits(model)
    hard = model.jnt_range[1:]
    assert soft.shape == (29, 2)
    np.testing.assert_allclose(soft.mean(axis=1), hard.mean(axis=1))
    np.testing.assert_allclose(soft[:, 1] - soft[:, 0], 0.9 * (hard[:, 1] - hard[:, 0]))


# --- dynamics -------------------------------------------------------------------------------------


def test_dynamics_equal_reference_with_same_actuators(model: mujoco.MjModel, reference_xml: Path):
    reference = g1.load_model(xml_path=reference_xml)
    # The reference MJCF leaves contact parameters to code; give it the project's.
    for i in np.flatnonzero(model.geom_contype != 0):
        name = model.geom(i).name
        j = reference.geom(name).id
        reference.geom_condim[j] = model.geom_condim[i]
        reference.geom_priority[j] = model.geom_priority[i]
        reference.geom_friction[j] = model.geom_friction[i]
    data, ref_data = mujoco.MjData(model), mujoco.MjData(reference)
    mujoco.mj_resetDataKeyframe(model, data, model.key(g1.KEYFRAME).id)
    mujoco.mj_resetDataKeyframe(reference, ref_data, reference.key(g1.KEYFRAME).id)
    np.testing.assert_array_equal(data.qpos, ref_data.qpos)
    pelvis, ref_pelvis = model.body("pelvis").id, reference.body("pelvis").id
    for _ in range(200):  # 1 s
        mujoco.mj_step(model, data)
        mujoco.mj_step(reference, ref_data)
        np.testing.assert_allclose(data.xpos[pelvis], ref_data.xpos[ref_pelvis], atol=1e-3)
    assert data.qpos[2] > 0.6  # still standing after 1 s


# --- user models ----------------------------------------------------------------------------------


def test_user_model_missing_names_is_refused(tmp_path: Path):
    xml = g1.MODEL_XML.read_text()
    xml = xml.replace('name="left_knee_joint"', 'name="knee_l"')
    xml = xml.replace('name="torso_link"', 'name="torso"')
    path = tmp_path / "not_g1.xml"
    path.write_text(xml)
    with pytest.raises(ValueError) as error:
        g1.load_model(xml_path=path)
    message = str(error.value)
    assert "left_knee_joint" in message and "torso_link" in message and str(path) in message
    assert "right_knee_joint" not in message and "pelvis" not in message.split("bodies")[-1]


def test_missing_file_is_refused(tmp_path: Path):
    with pytest.raises(FileNotFoundError):
        g1.load_model(xml_path=tmp_path / "absent.xml")


def test_project_model_is_package_data():
    assert g1.MODEL_XML.is_file()
    assert g1.MODEL_XML.parent.name == "g1" and g1.MODEL_XML.parents[1].name == "robots"


# --- self-contact sensor --------------------------------------------------------------------------


def robot_contacts(model: mujoco.MjModel, data: mujoco.MjData) -> tuple[list[float], int]:
    """Normal forces (N) of robot-robot contacts and the number of robot-floor contacts."""
    self_forces, floor_contacts = [], 0
    force = np.zeros(6)
    for i in range(data.ncon):
        contact = data.contact[i]
        if model.geom_bodyid[contact.geom1] == 0 or model.geom_bodyid[contact.geom2] == 0:
            floor_contacts += 1
            continue
        mujoco.mj_contactForce(model, data, i, force)
        self_forces.append(force[0])
    return self_forces, floor_contacts


def test_self_contact_is_zero_when_only_feet_touch_the_floor(model: mujoco.MjModel):
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key(g1.KEYFRAME).id)
    for _ in range(100):
        mujoco.mj_step(model, data)
    self_forces, floor_contacts = robot_contacts(model, data)
    assert floor_contacts > 0 and not self_forces
    sensor = data.sensor(g1.SELF_CONTACT_SENSOR).data
    assert sensor.shape == (4,)
    np.testing.assert_array_equal(sensor, 0.0)


def test_self_contact_reports_forced_leg_contact(model: mujoco.MjModel):
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key(g1.KEYFRAME).id)
    data.qpos[2] = 0.70  # feet pressed into the floor as well
    data.qpos[7 + g1.JOINT_NAMES.index("left_hip_roll_joint")] = -0.5  # thighs crossed
    data.qpos[7 + g1.JOINT_NAMES.index("right_hip_roll_joint")] = 0.5
    mujoco.mj_forward(model, data)
    self_forces, floor_contacts = robot_contacts(model, data)
    assert floor_contacts > 0 and len(self_forces) > 0
    sensor = data.sensor(g1.SELF_CONTACT_SENSOR).data
    count, normal = sensor[g1.SELF_CONTACT_COUNT], sensor[g1.SELF_CONTACT_NORMAL_FORCE]
    assert count == len(self_forces)  # floor contacts not counted
    assert normal > 10.0
    assert normal == pytest.approx(max(self_forces), rel=1e-9)
