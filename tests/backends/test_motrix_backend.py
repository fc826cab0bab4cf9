"""MotrixSim-specific checks of `MotrixBackend` beyond the shared contract suite.

Kinematics must equal MuJoCo's (same model, same qpos); dynamics only approximately: MotrixSim
has its own float32 contact and actuator solver (MuJoCo here: Newton, implicitfast, pyramidal
cones, float64), so trajectories from the same state drift apart and the bounds below were
measured (see each test) and given a margin.
"""

from __future__ import annotations

import importlib
import sys

import mujoco
import numpy as np
import pytest

pytest.importorskip("motrixsim")

from gym_motion.backends import BodyState, make_backend  # noqa: E402
from gym_motion.backends.motrix import mjcf_from_model  # noqa: E402
from gym_motion.robots import g1  # noqa: E402

DEC = 4


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return g1.load_model()


def _joints(model) -> np.ndarray:
    return np.array([model.joint(n).id for n in g1.JOINT_NAMES])


def test_kinematics_equal_mujoco_for_200_random_configurations(model):
    """Every body of 200 random states (tilted roots, joints anywhere in their range): origin
    within 1e-5 m and orientation within 1e-5 rad of MuJoCo's mj_kinematics (measured: 4.4e-7 m,
    5.8e-7 rad: float32 round-off)."""
    n = 200
    bodies = np.arange(1, model.nbody)
    backend = make_backend("motrix", model, n, bodies, _joints(model), num_threads=1)
    rng = np.random.default_rng(0)
    qpos = np.tile(model.qpos0, (n, 1))
    qpos[:, :3] = rng.uniform([-2, -2, 0], [2, 2, 1.5], (n, 3))
    quat = rng.normal(size=(n, 4))
    qpos[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    lo, hi = model.jnt_range[1:].T
    qpos[:, 7:] = rng.uniform(lo, hi, (n, model.nq - 7))
    backend.write_state(np.arange(n), qpos, np.zeros((n, model.nv)))
    out = BodyState.zeros(n, bodies.size, model.nu)
    backend.copy_body_state_w(out)
    d = mujoco.MjData(model)
    pos_err = ang_err = 0.0
    for e in range(n):
        d.qpos[:] = qpos[e]
        mujoco.mj_kinematics(model, d)
        pos_err = max(pos_err, np.abs(out.pos_w[e] - d.xpos[bodies]).max())
        for q, want in zip(out.quat_w[e].astype(np.float64), d.xquat[bodies], strict=True):
            rel = np.zeros(4)  # want* q; its angle 2 atan2(|xyz|, |w|) is sign-invariant
            mujoco.mju_mulQuat(rel, np.r_[want[0], -want[1:]], q / np.linalg.norm(q))
            ang_err = max(ang_err, 2.0 * np.arctan2(np.linalg.norm(rel[1:]), abs(rel[0])))
    backend.close()
    assert pos_err < 1e-5, pos_err
    assert ang_err < 1e-5, ang_err


def test_dynamics_track_mujoco_over_one_second(model):
    """From the default keyframe with default targets, 1 s (50 control steps): the root height
    stays within 2 mm and every joint within 0.1 rad of the MuJoCo backend's. Measured
    (MotrixSim 0.10.1, MuJoCo 4.0): root height 0.42 mm apart at most, joints 0.039 rad (the robot
    sinks slowly on its default gains in both engines; the gap grows as it does)."""
    bodies = np.array([model.body(g1.ROOT_BODY).id])
    joints = _joints(model)
    runs = {}
    for name in ("mujoco", "motrix"):
        backend = make_backend(name, model, 1, bodies, joints, decimation=DEC, num_threads=1)
        out = BodyState.zeros(1, 1, joints.size)
        z, q = [], []
        for _ in range(50):
            backend.step(g1.DEFAULT_JOINT_POS[None])
            backend.copy_body_state_w(out)
            z.append(out.pos_w[0, 0, 2])
            q.append(out.joint_pos[0].copy())
        assert not backend.nonfinite.any()
        backend.close()
        runs[name] = np.array(z), np.array(q)
    dz = np.abs(runs["mujoco"][0] - runs["motrix"][0]).max()
    dq = np.abs(runs["mujoco"][1] - runs["motrix"][1]).max()
    assert dz < 2e-3, dz
    assert dq < 0.1, dq


def test_models_motrixsim_cannot_take_are_refused(model):
    spec = mujoco.MjSpec.from_string(
        "<mujoco><worldbody><body><joint type='ball'/><geom size='0.1'/></body></worldbody>"
        "</mujoco>"
    )
    with pytest.raises(ValueError, match="ball joints"):
        mjcf_from_model(spec.compile())


def test_missing_engine_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "motrixsim", None)
    monkeypatch.delitem(sys.modules, "gym_motion.backends.motrix")
    with pytest.raises(ImportError, match=r"gym-motion\[motrix\]"):
        importlib.import_module("gym_motion.backends.motrix")
