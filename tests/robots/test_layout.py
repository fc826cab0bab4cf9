"""JointLayout: the robot's order <-> a model's qpos/qvel/ctrl columns, in any tree order."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from numpy.testing import assert_array_equal

from gym_motion.robots.g1 import G1


@pytest.fixture(scope="module")
def reordered(reordered_g1_xml) -> mujoco.MjModel:
    return G1.with_mjcf(reordered_g1_xml).build_model()


def test_the_shipped_model_is_in_robot_order():
    layout = G1.layout(G1.build_model())
    assert layout.identity
    assert_array_equal(layout.qpos_columns, np.arange(7 + 29))
    assert_array_equal(layout.qvel_columns, np.arange(6 + 29))
    assert_array_equal(layout.actuator_ids, np.arange(29))


def test_reordered_model_columns_are_found_by_name(reordered):
    layout = G1.layout(reordered)
    assert not layout.identity
    # The fixture really moved the arms: the right shoulder now precedes the left one.
    left = reordered.joint("left_shoulder_roll_joint").qposadr[0]
    right = reordered.joint("right_shoulder_roll_joint").qposadr[0]
    assert right < left and left != 7 + G1.joint_names.index("left_shoulder_roll_joint")
    for k, name in enumerate(G1.joint_names):
        joint = reordered.joint(name)
        assert layout.qpos_adr[k] == joint.qposadr[0], name
        assert layout.dof_adr[k] == joint.dofadr[0], name
        act = layout.actuator_ids[k]
        assert reordered.actuator_trnid[act, 0] == joint.id, name
    assert sorted(layout.qpos_adr.tolist()) == list(range(7, 36))


def test_model_qpos_puts_each_named_joint_in_its_column_and_back(reordered):
    layout = G1.layout(reordered)
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(5, 7 + 29))
    qpos = layout.model_qpos(rows)
    assert qpos.shape == (5, reordered.nq)
    for k, name in enumerate(G1.joint_names):
        assert_array_equal(qpos[:, reordered.joint(name).qposadr[0]], rows[:, 7 + k])
    assert_array_equal(qpos[:, :7], rows[:, :7])
    assert_array_equal(layout.robot_qpos(qpos), rows)
    vel = rng.normal(size=(6 + 29,))
    qvel = layout.model_qvel(vel)
    for k, name in enumerate(G1.joint_names):
        assert qvel[reordered.joint(name).dofadr[0]] == vel[6 + k]
    with pytest.raises(ValueError, match=r"\(\.\.\., 36\) in robot order"):
        layout.model_qpos(rows[:, :-1])
    with pytest.raises(ValueError, match=r"\(\.\.\., 35\) in robot order"):
        layout.model_qvel(rows)


def test_reordered_keyframe_and_controls_put_each_joint_at_its_default(reordered):
    key = reordered.key("default")
    for k, name in enumerate(G1.joint_names):
        assert key.qpos[reordered.joint(name).qposadr[0]] == G1.default_joint_pos[k], name
        assert key.ctrl[reordered.actuator(name).id] == G1.default_joint_pos[k], name
        assert reordered.actuator(name).trnid[0] == reordered.joint(name).id, name


def test_layout_refuses_a_missing_joint_or_a_root_without_free_joint(reordered):
    from gym_motion.robots.layout import JointLayout

    with pytest.raises(KeyError, match="'elbow'"):
        JointLayout.of(reordered, ("elbow",), G1.root_body)
    with pytest.raises(ValueError, match="'torso_link' has no free joint"):
        JointLayout.of(reordered, G1.joint_names, "torso_link")


def test_backends_bind_the_same_columns_as_the_layout(reordered):
    from gym_motion.backends.binding import bind_ids

    layout = G1.layout(reordered)
    bound = bind_ids(reordered, np.array([1]), layout.joint_ids)
    assert_array_equal(bound.qpos_adr, layout.qpos_adr)
    assert_array_equal(bound.dof_adr, layout.dof_adr)
    assert_array_equal(bound.actuator_ids, layout.actuator_ids)
    assert (bound.free_qpos_adr, bound.free_dof_adr) == (layout.root_qpos_adr, layout.root_dof_adr)
