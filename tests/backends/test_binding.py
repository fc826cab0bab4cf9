"""Id binding shared by the backends, on small hand-written models (no robot, no engine batch)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from gym_motion.backends.binding import bind_ids, resolve_env_ids, self_contact_columns
from gym_motion.backends.mujoco import MujocoBackend, add_self_contact_sensor

ARM = """
<mujoco>
  <worldbody>
    <body name="base">
      {base_joint}
      <geom size="0.1"/>
      <body name="upper" pos="0 0 -0.3">
        <joint name="shoulder" type="hinge"/>
        <geom size="0.05"/>
        <body name="lower" pos="0 0 -0.3">
          <joint name="elbow" type="slide"/>
          <geom size="0.05"/>
        </body>
      </body>
      <body name="hand" pos="0.3 0 0">
        <joint name="wrist" type="ball"/>
        <geom size="0.05"/>
      </body>
    </body>
    {other_body}
  </worldbody>
  <actuator>
    <position joint="elbow"/>
    <position joint="shoulder"/>
    {extra_actuator}
  </actuator>
</mujoco>
"""


def arm(base_joint="<freejoint/>", other_body="", extra_actuator="") -> mujoco.MjModel:
    xml = ARM.format(base_joint=base_joint, other_body=other_body, extra_actuator=extra_actuator)
    return mujoco.MjModel.from_xml_string(xml)


def test_ids_resolve_to_columns_actuators_and_the_floating_base():
    m = arm()
    shoulder, elbow = m.joint("shoulder").id, m.joint("elbow").id
    bound = bind_ids(m, np.array([m.body("lower").id, 0]), np.array([shoulder, elbow]))
    assert bound.body_ids.dtype == np.int64 and bound.body_ids.tolist() == [3, 0]
    assert bound.root_ids.tolist() == [m.body("base").id, 0]
    assert bound.qpos_adr.tolist() == [m.jnt_qposadr[shoulder], m.jnt_qposadr[elbow]]
    assert bound.dof_adr.tolist() == [m.jnt_dofadr[shoulder], m.jnt_dofadr[elbow]]
    assert bound.actuator_ids.tolist() == [1, 0]  # actuators listed elbow first
    assert bound.require_free_joint() == (0, 0)


@pytest.mark.parametrize(
    ("bodies", "joints", "message"),
    [
        ([0, 99], [1, 2], r"body_ids \[99\] out of range"),
        ([-1], [1, 2], r"body_ids \[-1\] out of range"),
        ([[0]], [1, 2], "1-D array of integer ids"),
        ([0], [1.0, 2.0], "1-D array of integer ids"),
        ([0], [1, 3], r"joint_ids \[3\] are not hinge or slide"),
        ([0], [1, 1], r"joint_ids \[1\] are repeated"),
        ([0], [1], "2 actuators but 1 joint ids"),
    ],
)
def test_bad_ids_are_refused_naming_them(bodies, joints, message):
    with pytest.raises(ValueError, match=message):
        bind_ids(arm(), np.array(bodies), np.array(joints))


def test_joint_without_exactly_one_actuator_is_refused():
    extra = '<position joint="elbow"/>'
    m = arm(extra_actuator=extra)
    with pytest.raises(ValueError, match="3 actuators but 2"):
        bind_ids(m, np.array([0]), np.array([1, 2]))
    # 3 joints for 3 actuators, but the elbow has two of them and the shoulder one
    hinge = '<body name="spare"><joint name="spare" type="hinge"/><geom size="0.05"/></body>'
    m = arm(other_body=hinge, extra_actuator=extra)
    spare = m.joint("spare").id
    with pytest.raises(ValueError, match=rf"joint id {m.joint('elbow').id} has 2 actuators"):
        bind_ids(m, np.array([0]), np.array([1, 2, spare]))


@pytest.mark.parametrize(
    ("base_joint", "other_body", "count"),
    [
        ("", "", 0),
        ("<freejoint/>", '<body name="box"><freejoint/><geom size="0.1"/></body>', 2),
    ],
)
def test_add_root_velocity_needs_exactly_one_free_joint(base_joint, other_body, count):
    m = arm(base_joint=base_joint, other_body=other_body)
    bound = bind_ids(m, np.array([0]), np.array([m.joint("shoulder").id, m.joint("elbow").id]))
    assert bound.free_qpos_adr == bound.free_dof_adr == -1
    with pytest.raises(ValueError, match=f"the model has {count} free joints"):
        bound.require_free_joint()
    backend = MujocoBackend(
        m, 2, bound.body_ids, bound.joint_ids, num_threads=1, self_contact_threshold=None
    )
    with pytest.raises(ValueError, match=f"the model has {count} free joints"):
        backend.add_root_velocity(np.array([0]), np.zeros((1, 3)), np.zeros((1, 3)))
    backend.close()


def test_env_ids_from_ids_or_mask():
    assert resolve_env_ids(np.array([[2], [0]], np.int32), 3).tolist() == [2, 0]
    assert resolve_env_ids(np.array([True, False, True]), 3).tolist() == [0, 2]
    with pytest.raises(ValueError, match=r"\(3,\)"):
        resolve_env_ids(np.array([True, False]), 3)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        resolve_env_ids(np.array([3]), 3)


def test_self_contact_columns_follow_the_sensor_layout():
    spec = mujoco.MjSpec.from_string(ARM.format(base_joint="", other_body="", extra_actuator=""))
    add_self_contact_sensor(spec, "base")
    m = spec.compile()
    cols, use_norm = self_contact_columns(m, "")
    assert cols.tolist() == [[0, 1, 2]] and not use_norm  # force only, contact frame
    spec.sensor("self_contact").intprm[:2] = [0b11, 3]  # found + force, netforce
    spec.sensor("self_contact").intprm[2] = 2  # two slots
    m = spec.compile()
    cols, use_norm = self_contact_columns(m, "")
    assert cols.tolist() == [[1, 2, 3], [5, 6, 7]] and use_norm
    with pytest.raises(ValueError, match="no contact sensor named 'self_contact'; hint"):
        self_contact_columns(arm(), "; hint")
