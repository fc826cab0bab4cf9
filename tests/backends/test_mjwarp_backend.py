"""MuJoCo Warp backend on Warp's CPU device (N=4): parity with official MuJoCo, flags, overflow.

Warp compiles MuJoCo Warp's kernels on first use and caches them (``~/.cache/warp``): with a
cold cache this module takes about 40 s more on 2 cores (see the backend's module docstring).
The module is skipped when ``mujoco_warp`` is not installed.

Measured on Warp's CPU device, N=4 (float32 MuJoCo Warp vs float64 MuJoCo C), 2 shared cores:
- one control step from perturbed reset states with ~12 floor contacts per world, random
  targets and per-world foot friction / torso CoM: body positions differ by at most 6.8e-7 m
  (bound 1e-4 m; the randomisation itself moves them by 7.8e-4 m), quaternions 1.8e-6, origin
  linear velocities 1.5e-5 m/s, angular velocities 8.5e-5 rad/s, joint positions 2.7e-6 rad,
  joint velocities 7.2e-5 rad/s;
- self-contact substep counts are equal over 6 control steps that enter self contact;
- 25 control steps of TrackingVecEnv(eval_cfg()) with random actions: per-step rewards of the
  "mjwarp" and "mujoco" backends differ by at most 1e-5 relative (2e-7 absolute; bound 2 %).
Cold Warp cache: 66 s for this module (43 s of it compiling); warm: about 20 s.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

pytest.importorskip("mujoco_warp")

from gym_motion.backends.base import BodyState, SimBackend  # noqa: E402
from gym_motion.backends.mjwarp import (  # noqa: E402
    CapacityOverflowError,
    MjWarpBackend,
    default_device,
)
from gym_motion.robots import g1  # noqa: E402

N = 4
BODIES = g1.TRACKED_BODIES
DECIMATION = 4


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return g1.load_model()


@pytest.fixture(scope="module")
def backend(model) -> MjWarpBackend:
    be = MjWarpBackend(model, N, BODIES, g1.JOINT_NAMES, decimation=DECIMATION, device="cpu")
    yield be
    be.close()


def reset_states(model, rng) -> tuple[np.ndarray, np.ndarray]:
    """(N, nq), (N, nv): the default keyframe, feet near the floor, joints and velocities
    perturbed per row."""
    key = model.key(g1.KEYFRAME)
    qpos = np.tile(key.qpos, (N, 1))
    qvel = np.zeros((N, model.nv))
    qpos[:, 2] -= rng.uniform(0.0, 0.02, N)
    qpos[:, 7:] += rng.uniform(-0.1, 0.1, (N, model.nq - 7))
    qvel[:, :3] = rng.uniform(-0.3, 0.3, (N, 3))
    qvel[:, 3:] = rng.uniform(-0.3, 0.3, (N, model.nv - 3))
    return qpos, qvel


def oracle_step(model, qpos, qvel, targets, steps=1, friction=None, com_offset=None):
    """Official MuJoCo, one MjData per row: `steps` control steps, then forward kinematics.

    Returns the BodyState of BODIES and the (steps, N) self-contact substep counts."""
    out = BodyState.zeros(N, len(BODIES), g1.NUM_JOINTS)
    counts = np.zeros((steps, N), np.int32)
    ids = g1.body_ids(model, BODIES)
    torso = model.body(g1.ANCHOR_BODY).id
    for w in range(N):
        m = model.__copy__()
        if friction is not None:
            m.geom_friction[g1.foot_geom_ids(m), 0] = friction[w]
        if com_offset is not None:
            m.body_ipos[torso] += com_offset[w]
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = qpos[w], qvel[w]
        mujoco.mj_forward(m, d)
        for s in range(steps):
            d.ctrl[:] = targets[s, w]
            for _ in range(DECIMATION):
                mujoco.mj_step(m, d)
                counts[s, w] += d.sensordata[g1.SELF_CONTACT_NORMAL_FORCE] > 10.0
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_comVel(m, d)
        v = np.zeros(6)
        for k, b in enumerate(ids):
            mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_XBODY, b, v, 0)
            out.ang_vel_w[w, k], out.lin_vel_w[w, k] = v[:3], v[3:]
        out.pos_w[w], out.quat_w[w] = d.xpos[ids], d.xquat[ids]
        out.joint_pos[w], out.joint_vel[w] = d.qpos[7:], d.qvel[6:]
    return out, counts


def read(be) -> BodyState:
    out = BodyState.zeros(N, len(BODIES), g1.NUM_JOINTS)
    be.copy_body_state_w(out)
    return out


def test_protocol_and_device(backend):
    assert isinstance(backend, SimBackend)
    assert default_device() in ("cpu", "cuda:0")
    assert backend.physics_dt == g1.PHYSICS_DT and backend.decimation == DECIMATION
    assert backend.self_contact_substeps.shape == (N,) and backend.nonfinite.shape == (N,)


def test_one_step_matches_mujoco_with_per_world_randomisation(model, backend):
    rng = np.random.default_rng(0)
    qpos, qvel = reset_states(model, rng)
    friction = np.array([0.6, 0.3, 1.2, 0.8])
    com = rng.uniform(-0.05, 0.05, (N, 3))
    targets = g1.DEFAULT_JOINT_POS + rng.uniform(-0.3, 0.3, (1, N, g1.NUM_JOINTS))
    ids = np.arange(N)
    backend.set_foot_friction(ids, friction)
    backend.set_body_com_offset(ids, g1.ANCHOR_BODY, com)
    try:
        backend.write_state(ids, qpos, qvel)
        before = read(backend)
        assert np.abs(before.joint_pos - qpos[:, 7:]).max() < 1e-6  # FK after the write
        backend.step(targets[0].astype(np.float32))
        got = read(backend)
    finally:
        backend.set_foot_friction(ids, np.full(N, 0.6))
        backend.set_body_com_offset(ids, g1.ANCHOR_BODY, np.zeros((N, 3)))
    ref, _ = oracle_step(model, qpos, qvel, targets, friction=friction, com_offset=com)
    nominal, _ = oracle_step(model, qpos, qvel, targets)
    assert np.abs(nominal.pos_w - ref.pos_w).max() > 1e-4  # the randomisation is visible
    assert not backend.nonfinite.any()
    assert np.abs(got.pos_w - ref.pos_w).max() < 1e-4
    assert np.abs(np.abs((got.quat_w * ref.quat_w).sum(-1)) - 1.0).max() < 1e-6
    assert np.abs(got.lin_vel_w - ref.lin_vel_w).max() < 1e-3
    assert np.abs(got.ang_vel_w - ref.ang_vel_w).max() < 1e-3
    assert np.abs(got.joint_pos - ref.joint_pos).max() < 1e-4
    assert np.abs(got.joint_vel - ref.joint_vel).max() < 1e-2


def test_self_contact_substeps_match_mujoco(model, backend):
    """Arms pressed into the torso: self contact appears after a few steps, in every substep."""
    qpos = np.tile(model.key(g1.KEYFRAME).qpos, (N, 1))
    qvel = np.zeros((N, model.nv))
    steps = 6
    targets = np.tile(g1.DEFAULT_JOINT_POS, (steps, N, 1))
    left = g1.JOINT_NAMES.index("left_shoulder_roll_joint")
    right = g1.JOINT_NAMES.index("right_shoulder_roll_joint")
    targets[:, 1:, left], targets[:, 1:, right] = -1.5, 1.5  # row 0 keeps its arms out
    backend.write_state(np.arange(N), qpos, qvel)
    counts = np.zeros((steps, N), np.int32)
    for s in range(steps):
        backend.step(targets[s].astype(np.float32))
        counts[s] = backend.self_contact_substeps
    _, ref = oracle_step(model, qpos, qvel, targets, steps=steps)
    np.testing.assert_array_equal(counts, ref)
    assert counts[-1, 1:].min() == DECIMATION and counts[:, 0].max() == 0


def test_write_state_is_row_scoped_and_nonfinite_rows_are_flagged(model, backend):
    rng = np.random.default_rng(1)
    qpos, qvel = reset_states(model, rng)
    backend.write_state(np.arange(N), qpos, qvel)
    targets = np.tile(g1.DEFAULT_JOINT_POS, (N, 1)).astype(np.float32)
    backend.step(targets)
    before = read(backend)
    bad_qvel = qvel[2:3].copy()
    bad_qvel[0, 8] = np.nan
    backend.write_state(np.array([2]), qpos[2:3], bad_qvel)
    after = read(backend)
    others = [0, 1, 3]
    np.testing.assert_array_equal(after.pos_w[others], before.pos_w[others])
    np.testing.assert_array_equal(after.joint_vel[others], before.joint_vel[others])
    assert np.abs(after.pos_w[2] - before.pos_w[2]).max() > 1e-4  # row 2 went back
    backend.step(targets)
    np.testing.assert_array_equal(backend.nonfinite, [False, False, True, False])
    backend.write_state(np.array([2]), qpos[2:3], qvel[2:3])  # the env re-initialises it
    backend.step(targets)
    assert not backend.nonfinite.any() and np.isfinite(read(backend).pos_w).all()


def test_contact_overflow_is_reported(model):
    """4 contacts per world cannot hold two standing feet: the step raises, naming the cause."""
    targets = np.tile(g1.DEFAULT_JOINT_POS, (N, 1)).astype(np.float32)
    be = MjWarpBackend(model, N, BODIES, g1.JOINT_NAMES, device="cpu", nconmax=4)
    qpos = np.tile(model.key(g1.KEYFRAME).qpos, (N, 1))
    qpos[:, 2] -= 0.03  # feet in the floor from the first substep
    be.write_state(np.arange(N), qpos, np.zeros((N, model.nv)))
    with pytest.raises(CapacityOverflowError, match="nconmax=4"):
        be.step(targets)
    be.close()


def test_constraint_overflow_terminates_rows_when_asked(model):
    targets = np.tile(g1.DEFAULT_JOINT_POS, (N, 1)).astype(np.float32)
    be = MjWarpBackend(
        model, N, BODIES, g1.JOINT_NAMES, device="cpu", njmax=20, on_overflow="terminate"
    )
    qpos = np.tile(model.key(g1.KEYFRAME).qpos, (N, 1))
    qpos[1:, 2] -= 0.03  # rows 1-3 on the floor (> 20 constraint rows), row 0 in the air
    qpos[0, 2] += 0.2
    be.write_state(np.arange(N), qpos, np.zeros((N, model.nv)))
    be.step(targets)
    np.testing.assert_array_equal(be.nonfinite, [False, True, True, True])
    assert be.overflow_count == 3
    be.close()


def test_bad_input(model, backend):
    with pytest.raises(ValueError, match="shape"):
        backend.step(np.zeros((N, 3), np.float32))
    with pytest.raises(ValueError, match="qpos"):
        backend.write_state(np.array([0]), np.zeros((1, 3)), np.zeros((1, model.nv)))
    with pytest.raises(ValueError, match="no_such_body"):
        MjWarpBackend(model, 1, ("no_such_body",), g1.JOINT_NAMES, device="cpu")


def run_env(backend: str, steps: int, kwargs: dict):
    from gym_motion.envs import TrackingVecEnv, eval_cfg

    env = TrackingVecEnv(num_envs=N, cfg=eval_cfg(), seed=0, backend=backend, backend_kwargs=kwargs)
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    out = []
    for _ in range(steps):
        obs, rew, term, trunc, info = env.step(rng.normal(0.0, 0.5, (N, g1.NUM_JOINTS)))
        out.append((obs, rew, term, trunc, info))
    env.close()
    return out


def test_env_rewards_match_mujoco_backend():
    """25 control steps of TrackingVecEnv (eval config, random actions, same seed) on both
    backends. Measured on Warp's CPU device: per-step rewards differ by at most 1e-5 relative
    (2e-7 absolute; bound 2 %), observations by at most 5e-4 (joint velocities); terminations,
    truncations and info keys/dtypes are identical."""
    ref = run_env("mujoco", 25, {"num_threads": 1})
    got = run_env("mjwarp", 25, {"device": "cpu"})
    for (o1, r1, te1, tr1, i1), (o2, r2, te2, tr2, i2) in zip(ref, got, strict=True):
        assert np.all(np.abs(r2 - r1) <= 0.02 * np.abs(r1) + 1e-6)
        np.testing.assert_array_equal(te2, te1)
        np.testing.assert_array_equal(tr2, tr1)
        assert np.abs(o2 - o1).max() < 1e-2
        assert set(i2) == set(i1)
        for k in i1:
            if isinstance(i1[k], np.ndarray):
                assert i2[k].dtype == i1[k].dtype and i2[k].shape == i1[k].shape, k
