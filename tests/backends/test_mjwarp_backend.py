"""MuJoCo Warp backend on Warp's CPU device (N=4): parity with official MuJoCo, overflow.

The behaviour every backend shares is tested in test_contract.py.

Warp compiles MuJoCo Warp's kernels on first use and caches them (``~/.cache/warp``): with a
cold cache this module takes about 40 s more on 2 cores (see the backend's module docstring).
The module is skipped when ``mujoco_warp`` is not installed.

Measured on Warp's CPU device, N=4 (float32 MuJoCo Warp vs float64 MuJoCo C), 2 shared cores:
- one control step from perturbed reset states with ~12 floor contacts per world, random
  targets and per-world foot friction / torso CoM: body positions differ by at most 6.8e-7 m
  (bound 1e-4 m; the randomisation itself moves them by 7.8e-4 m), quaternions 1.8e-6, origin
  linear velocities 1.5e-5 m/s, angular velocities 8.5e-5 rad/s, joint positions 2.7e-6 rad,
  joint velocities 7.2e-5 rad/s;
- 25 control steps of TrackingVecEnv(eval_cfg()) with random actions: per-step rewards of the
  "mjwarp" and "mujoco" backends differ by at most 1e-5 relative (2e-7 absolute; bound 2 %).
Cold Warp cache: 66 s for this module (43 s of it compiling); warm: about 20 s.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

pytest.importorskip("mujoco_warp")

from gym_motion.backends.base import BodyState  # noqa: E402
from gym_motion.backends.mjwarp import (  # noqa: E402
    CapacityOverflowError,
    MjWarpBackend,
    default_device,
)
from gym_motion.robots import g1  # noqa: E402

N = 4
BODIES = g1.TRACKED_BODIES
NJ = len(g1.JOINT_NAMES)
DECIMATION = 4


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return g1.load_model()


def ids(model) -> tuple[np.ndarray, np.ndarray]:
    """(body ids of BODIES, joint ids of the robot joints)."""
    return (
        np.array([model.body(b).id for b in BODIES]),
        np.array([model.joint(j).id for j in g1.JOINT_NAMES]),
    )


def foot_geoms(model) -> np.ndarray:
    return np.flatnonzero(np.isin(model.geom_bodyid, [model.body(b).id for b in g1.FOOT_BODIES]))


@pytest.fixture(scope="module")
def backend(model) -> MjWarpBackend:
    be = MjWarpBackend(model, N, *ids(model), decimation=DECIMATION, device="cpu")
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


def oracle_step(model, qpos, qvel, targets, friction=None, com_offset=None):
    """Official MuJoCo, one MjData per row: one control step, then forward kinematics.

    Returns the BodyState of BODIES."""
    out = BodyState.zeros(N, len(BODIES), NJ)
    bodies = ids(model)[0]
    torso = model.body(g1.ANCHOR_BODY).id
    for w in range(N):
        m = model.__copy__()
        if friction is not None:
            m.geom_friction[foot_geoms(m), 0] = friction[w]
        if com_offset is not None:
            m.body_ipos[torso] += com_offset[w]
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = qpos[w], qvel[w]
        mujoco.mj_forward(m, d)
        d.ctrl[:] = targets[w]
        mujoco.mj_step(m, d, DECIMATION)
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_comVel(m, d)
        v = np.zeros(6)
        for k, b in enumerate(bodies):
            mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_XBODY, b, v, 0)
            out.ang_vel_w[w, k], out.lin_vel_w[w, k] = v[:3], v[3:]
        out.pos_w[w], out.quat_w[w] = d.xpos[bodies], d.xquat[bodies]
        out.joint_pos[w], out.joint_vel[w] = d.qpos[7:], d.qvel[6:]
    return out


def read(be) -> BodyState:
    out = BodyState.zeros(N, len(BODIES), NJ)
    be.copy_body_state_w(out)
    return out


def test_default_device():
    assert default_device() in ("cpu", "cuda:0")


def test_one_step_matches_mujoco_with_per_world_randomisation(model):
    """Per-world foot friction and torso CoM through set_model_field (float32 on the device),
    against one MjModel per row with those values."""
    be = MjWarpBackend(model, N, *ids(model), decimation=DECIMATION, device="cpu")
    rng = np.random.default_rng(0)
    qpos, qvel = reset_states(model, rng)
    friction = np.array([0.6, 0.3, 1.2, 0.8])
    com = rng.uniform(-0.05, 0.05, (N, 3))
    targets = g1.DEFAULT_JOINT_POS + rng.uniform(-0.3, 0.3, (N, NJ))
    world = np.arange(N)
    feet, torso = foot_geoms(model), np.array([model.body(g1.ANCHOR_BODY).id])
    table = np.repeat(be.model_field("geom_friction", feet)[None], N, axis=0)
    table[..., 0] = friction[:, None]
    be.set_model_field("geom_friction", world, feet, table)
    be.set_model_field("body_ipos", world, torso, be.model_field("body_ipos", torso) + com[:, None])
    be.write_state(world, qpos, qvel)
    before = read(be)
    assert np.abs(before.joint_pos - qpos[:, 7:]).max() < 1e-6  # FK after the write
    be.step(targets.astype(np.float32))
    got = read(be)
    be.close()
    ref = oracle_step(model, qpos, qvel, targets, friction=friction, com_offset=com)
    nominal = oracle_step(model, qpos, qvel, targets)
    assert np.abs(nominal.pos_w - ref.pos_w).max() > 1e-4  # the randomisation is visible
    assert not be.nonfinite.any()
    assert np.abs(got.pos_w - ref.pos_w).max() < 1e-4
    assert np.abs(np.abs((got.quat_w * ref.quat_w).sum(-1)) - 1.0).max() < 1e-6
    assert np.abs(got.lin_vel_w - ref.lin_vel_w).max() < 1e-3
    assert np.abs(got.ang_vel_w - ref.ang_vel_w).max() < 1e-3
    assert np.abs(got.joint_pos - ref.joint_pos).max() < 1e-4
    assert np.abs(got.joint_vel - ref.joint_vel).max() < 1e-2


def test_add_root_velocity_rotates_in_float64_on_the_device(model, backend):
    """qvel[0:3] += lin, qvel[3:6] += R(q)^T ang (MuJoCo's rotation of the world's own float32
    qpos, as the oracle), rounded once to float32; other worlds and columns unchanged."""
    rng = np.random.default_rng(3)
    qpos, qvel = reset_states(model, rng)
    quat = rng.normal(size=(N, 4))
    qpos[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    backend.write_state(np.arange(N), qpos, qvel)
    q0, v0 = backend._d.qpos.numpy().copy(), backend._d.qvel.numpy().copy()
    rows = np.array([1, 3])
    lin, ang = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    backend.add_root_velocity(rows, lin, ang)
    q1, v1 = backend._d.qpos.numpy(), backend._d.qvel.numpy()
    np.testing.assert_array_equal(q1, q0)
    np.testing.assert_array_equal(v1[[0, 2]], v0[[0, 2]])
    np.testing.assert_array_equal(v1[rows, 6:], v0[rows, 6:])
    for k, r in enumerate(rows):
        q = q0[r, 3:7].astype(np.float64)
        inv = np.zeros(4)
        mujoco.mju_negQuat(inv, q / np.linalg.norm(q))
        local = np.zeros(3)
        mujoco.mju_rotVecQuat(local, ang[k], inv)
        want = np.r_[v0[r, :3] + lin[k], v0[r, 3:6] + local]
        np.testing.assert_array_equal(v1[r, :6], want.astype(np.float32))


def test_contact_overflow_is_reported(model):
    """4 contacts per world cannot hold two standing feet: the step raises, naming the cause."""
    targets = np.tile(g1.DEFAULT_JOINT_POS, (N, 1)).astype(np.float32)
    be = MjWarpBackend(model, N, *ids(model), device="cpu", nconmax=4)
    qpos = np.tile(model.key(g1.KEYFRAME).qpos, (N, 1))
    qpos[:, 2] -= 0.03  # feet in the floor from the first substep
    be.write_state(np.arange(N), qpos, np.zeros((N, model.nv)))
    with pytest.raises(CapacityOverflowError, match="nconmax=4"):
        be.step(targets)
    be.close()


def test_constraint_overflow_terminates_rows_when_asked(model):
    targets = np.tile(g1.DEFAULT_JOINT_POS, (N, 1)).astype(np.float32)
    be = MjWarpBackend(model, N, *ids(model), device="cpu", njmax=20, on_overflow="terminate")
    qpos = np.tile(model.key(g1.KEYFRAME).qpos, (N, 1))
    qpos[1:, 2] -= 0.03  # rows 1-3 on the floor (> 20 constraint rows), row 0 in the air
    qpos[0, 2] += 0.2
    be.write_state(np.arange(N), qpos, np.zeros((N, model.nv)))
    be.step(targets)
    np.testing.assert_array_equal(be.nonfinite, [False, True, True, True])
    assert be.overflow_count == 3
    be.close()


def run_env(backend: str, steps: int, kwargs: dict):
    from gym_motion.envs import TrackingVecEnv, eval_cfg

    env = TrackingVecEnv(num_envs=N, cfg=eval_cfg(), seed=0, backend=backend, backend_kwargs=kwargs)
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    out = []
    for _ in range(steps):
        obs, rew, term, trunc, info = env.step(rng.normal(0.0, 0.5, (N, NJ)))
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
