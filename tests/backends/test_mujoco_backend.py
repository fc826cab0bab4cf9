"""MujocoBackend against single-MjData MuJoCo references (small N, fast)."""

from __future__ import annotations

import os

import mujoco
import numba
import numpy as np
import pytest

from gym_motion.backends import BodyState, SimBackend, make_backend
from gym_motion.backends.mujoco import MujocoBackend
from gym_motion.backends.threads import available_cpus, resolve_thread_budget, thread_ids
from gym_motion.robots import g1

DEC = 4
BODIES = g1.BODY_NAMES


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return g1.load_model()


def _targets(rng: np.random.Generator, n: int, scale: float = 0.3) -> np.ndarray:
    return g1.DEFAULT_JOINT_POS + scale * rng.uniform(-1, 1, (n, g1.NUM_JOINTS))


def _backend(model, n, **kw) -> MujocoBackend:
    return MujocoBackend(model, n, BODIES, g1.JOINT_NAMES, decimation=DEC, **kw)


def _state(backend: MujocoBackend) -> BodyState:
    out = BodyState.zeros(backend.num_envs, len(BODIES), g1.NUM_JOINTS)
    backend.copy_body_state_w(out)
    return out


def _reference_data(model) -> mujoco.MjData:
    d = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, d, model.key("default").id)
    return d


def _expected(model, d: mujoco.MjData):
    """Body state of one MjData from MuJoCo itself (fresh kinematics at its current qpos/qvel)."""
    mujoco.mj_forward(model, d)
    ids = [model.body(b).id for b in BODIES]
    vel = np.zeros((len(ids), 6))
    for k, i in enumerate(ids):
        # XBODY: at the body frame origin (mjOBJ_BODY would give the CoM velocity)
        mujoco.mj_objectVelocity(model, d, mujoco.mjtObj.mjOBJ_XBODY, i, vel[k], 0)
    jq = [model.joint(j).qposadr[0] for j in g1.JOINT_NAMES]
    jd = [model.joint(j).dofadr[0] for j in g1.JOINT_NAMES]
    return d.xpos[ids], d.xquat[ids], vel[:, 3:], vel[:, :3], d.qpos[jq], d.qvel[jd]


def _assert_matches(model, state: BodyState, row: int, d: mujoco.MjData) -> None:
    pos, quat, lin, ang, jp, jv = _expected(model, d)
    np.testing.assert_allclose(state.pos_w[row], pos, atol=1e-6)
    np.testing.assert_allclose(state.quat_w[row], quat, atol=1e-6)
    np.testing.assert_allclose(state.lin_vel_w[row], lin, atol=1e-5, rtol=1e-6)
    np.testing.assert_allclose(state.ang_vel_w[row], ang, atol=1e-5, rtol=1e-6)
    np.testing.assert_allclose(state.joint_pos[row], jp, atol=1e-6)
    np.testing.assert_allclose(state.joint_vel[row], jv, atol=1e-5, rtol=1e-6)


def test_protocol_and_factory(model):
    b = make_backend("mujoco", model, 2, BODIES, g1.JOINT_NAMES, decimation=DEC)
    assert isinstance(b, SimBackend)
    assert b.physics_dt == model.opt.timestep and b.decimation == DEC
    assert b.nonfinite.dtype == bool and b.self_contact_substeps.dtype == np.int32
    b.close()
    b.close()
    with pytest.raises(RuntimeError, match="closed"):
        b.step(np.zeros((2, 29)))
    with pytest.raises(ValueError, match="'mujoco'"):
        make_backend("bullet", model, 2, BODIES, g1.JOINT_NAMES)


def test_bad_arguments(model):
    with pytest.raises(ValueError, match="no body named 'nose'"):
        MujocoBackend(model, 2, ("nose",), g1.JOINT_NAMES)
    b = _backend(model, 2)
    with pytest.raises(ValueError, match=r"\(2, 29\)"):
        b.step(np.zeros((3, 29)))
    with pytest.raises(ValueError, match="write_state expects"):
        b.write_state(np.array([0]), np.zeros((1, 35)), np.zeros((1, 35)))


def test_step_matches_single_mjdata_reference(model):
    """qpos/qvel bitwise equal to mj_step x decimation; body state equals MuJoCo's kinematics
    and mj_objectVelocity (body origin, world frame) at the final state."""
    n, steps = 3, 15
    rng = np.random.default_rng(0)
    b = _backend(model, n)
    refs = [_reference_data(model) for _ in range(n)]
    for _ in range(steps):
        t = _targets(rng, n)
        b.step(t)
        for i, d in enumerate(refs):
            d.ctrl[:] = t[i]
            mujoco.mj_step(model, d, DEC)
    state = _state(b)
    for i, d in enumerate(refs):
        np.testing.assert_array_equal(b.qpos[i], d.qpos)
        np.testing.assert_array_equal(b.qvel[i], d.qvel)
        _assert_matches(model, state, i, d)
    assert not b.nonfinite.any()
    assert np.abs(state.lin_vel_w).max() > 0.05  # the test exercised motion


def test_kinematics_from_random_states(model):
    """Random qpos/qvel (tilted, spinning root): FK and origin velocities equal MuJoCo's."""
    n = 5
    rng = np.random.default_rng(1)
    b = _backend(model, n)
    qpos = np.tile(model.key("default").qpos, (n, 1))
    qpos[:, :3] += rng.normal(0, 0.3, (n, 3))
    quat = rng.normal(size=(n, 4))
    qpos[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    qpos[:, 7:] += rng.uniform(-0.5, 0.5, (n, 29))
    qvel = rng.normal(0, 2.0, (n, model.nv))
    b.write_state(np.arange(n), qpos, qvel)
    state = _state(b)
    for i in range(n):
        d = mujoco.MjData(model)
        d.qpos[:], d.qvel[:] = qpos[i], qvel[i]
        _assert_matches(model, state, i, d)


def test_write_state_touches_only_given_rows(model):
    n = 4
    rng = np.random.default_rng(2)
    b = _backend(model, n)
    for _ in range(5):
        b.step(_targets(rng, n))
    before = _state(b)
    qpos0, qvel0 = b.qpos.copy(), b.qvel.copy()
    rows = np.array([1, 3])
    qpos = np.tile(model.key("default").qpos, (2, 1))
    qpos[:, 0] = [1.0, -2.0]
    qvel = rng.normal(0, 0.5, (2, model.nv))
    b.write_state(rows, qpos, qvel)
    after = _state(b)
    for r in (0, 2):
        np.testing.assert_array_equal(b.qpos[r], qpos0[r])
        np.testing.assert_array_equal(b.qvel[r], qvel0[r])
        np.testing.assert_array_equal(after.pos_w[r], before.pos_w[r])
    for k, r in enumerate(rows):
        np.testing.assert_array_equal(b.qpos[r], qpos[k])
        d = mujoco.MjData(model)
        d.qpos[:], d.qvel[:] = qpos[k], qvel[k]
        _assert_matches(model, after, r, d)  # FK fresh right after the write
    # stepping a written row equals stepping a fresh MjData from that state (warm start cleared)
    t = _targets(rng, n)
    b.step(t)
    d = mujoco.MjData(model)
    d.qpos[:], d.qvel[:], d.ctrl[:] = qpos[0], qvel[0], t[1]
    mujoco.mj_step(model, d, DEC)
    np.testing.assert_array_equal(b.qpos[1], d.qpos)


def test_nan_row_flagged_others_unaffected(model, capfd, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo appends its warnings to ./MUJOCO_LOG.TXT
    n = 3
    rng = np.random.default_rng(3)
    a, b = _backend(model, n), _backend(model, n)
    targets = [_targets(rng, n) for _ in range(3)]
    a.step(targets[0])
    b.step(targets[0])
    bad = a.qpos[1].copy()
    bad[10] = np.nan
    a.write_state(np.array([1]), bad[None], a.qvel[1][None].copy())
    a.step(targets[1])  # no exception
    b.step(targets[1])
    assert a.nonfinite.tolist() == [False, True, False]
    for r in (0, 2):
        np.testing.assert_array_equal(a.qpos[r], b.qpos[r])
    state = _state(a)
    assert np.isfinite(state.pos_w[[0, 2]]).all()
    # a huge velocity is a blow-up too; the env rewrites the row, which clears the flag
    a.write_state(np.array([1]), b.qpos[1][None].copy(), np.full((1, model.nv), 1e6))
    a.step(targets[2])
    assert a.nonfinite[1] and not a.nonfinite[[0, 2]].any()
    a.write_state(np.array([1]), b.qpos[1][None].copy(), b.qvel[1][None].copy())
    assert not a.nonfinite.any()
    capfd.readouterr()  # MuJoCo's instability warnings


def test_self_contact_counting(model):
    """Arms driven into the torso: contact substeps counted per row; default pose: none."""
    n = 2
    b = _backend(model, n)
    t = np.tile(g1.DEFAULT_JOINT_POS, (n, 1))
    j = list(g1.JOINT_NAMES)
    t[1, j.index("left_shoulder_roll_joint")] = -1.5
    t[1, j.index("right_shoulder_roll_joint")] = 1.5
    t[1, j.index("left_elbow_joint")] = 0.0
    t[1, j.index("right_elbow_joint")] = 0.0
    total = np.zeros(n, int)
    for _ in range(10):
        b.step(t)
        assert b.self_contact_substeps.dtype == np.int32
        assert ((0 <= b.self_contact_substeps) & (b.self_contact_substeps <= DEC)).all()
        total += b.self_contact_substeps
    assert total[0] == 0
    assert total[1] > 0
    hi = _backend(model, n, self_contact_threshold=1e9)
    for _ in range(10):
        hi.step(t)
        assert not hi.self_contact_substeps.any()


@pytest.mark.parametrize("threads", [1, 2])
def test_determinism_across_thread_counts(model, threads):
    n = 6
    rng = np.random.default_rng(4)
    targets = [_targets(rng, n, 0.5) for _ in range(8)]
    ref = _backend(model, n, num_threads=1)
    b = _backend(model, n, num_threads=min(threads, len(available_cpus())))
    for t in targets:
        ref.step(t)
        b.step(t)
        np.testing.assert_array_equal(b.self_contact_substeps, ref.self_contact_substeps)
    s1, s2 = _state(ref), _state(b)
    for f in ("pos_w", "quat_w", "lin_vel_w", "ang_vel_w", "joint_pos", "joint_vel"):
        np.testing.assert_array_equal(getattr(s1, f), getattr(s2, f))


def test_domain_randomisation_fields_per_row(model):
    n = 3
    b = _backend(model, n)
    feet = b._foot_geoms
    assert len(feet) == 14
    assert all(model.body(model.geom_bodyid[g]).name.endswith("ankle_roll_link") for g in feet)
    b.set_foot_friction(np.array([0, 2]), np.array([0.3, 1.2]))
    m0, m1, m2 = (b._batch.get_model(i) for i in range(n))
    np.testing.assert_array_equal(m0.geom_friction[feet, 0], 0.3)
    np.testing.assert_array_equal(m1.geom_friction, model.geom_friction)
    np.testing.assert_array_equal(m2.geom_friction[feet, 0], 1.2)
    np.testing.assert_array_equal(m2.geom_friction[feet, 1:], model.geom_friction[feet, 1:])

    torso = model.body("torso_link").id
    off = np.array([[0.025, -0.05, 0.05]])
    b.set_body_com_offset(np.array([1]), "torso_link", off)
    b.set_body_com_offset(np.array([1]), "torso_link", off)  # offsets from nominal, not cumulative
    m1 = b._batch.get_model(1)
    np.testing.assert_allclose(m1.body_ipos[torso], model.body_ipos[torso] + off[0])
    np.testing.assert_array_equal(b._batch.get_model(0).body_ipos, model.body_ipos)

    # the per-row model is what that row simulates
    t = np.tile(g1.DEFAULT_JOINT_POS, (n, 1))
    ref = mujoco.MjData(m1)
    mujoco.mj_resetDataKeyframe(m1, ref, m1.key("default").id)
    for _ in range(5):
        b.step(t)
        ref.ctrl[:] = t[1]
        mujoco.mj_step(m1, ref, DEC)
    np.testing.assert_array_equal(b.qpos[1], ref.qpos)
    with pytest.raises(ValueError, match=r"\(1,\)"):
        b.set_foot_friction(np.array([0]), np.array([0.3, 0.4]))


def test_thread_budget_logic(monkeypatch):
    cpus = available_cpus()
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    full = resolve_thread_budget()
    assert full.physics_threads == len(cpus) and full.numba_threads == len(cpus)
    assert not full.pinned
    with pytest.warns(RuntimeWarning, match="exceeds"):
        assert resolve_thread_budget(num_threads=len(cpus) + 5).physics_threads == len(cpus)
    one = resolve_thread_budget(cpu_ids=[cpus[-1]])
    assert one.cpus == (cpus[-1],) and one.physics_threads == 1 and one.numba_threads == 1
    assert one.pinned
    with pytest.raises(ValueError, match="not in this process's CPU affinity"):
        resolve_thread_budget(cpu_ids=[max(cpus) + 1000])
    with pytest.raises(ValueError, match="empty"):
        resolve_thread_budget(cpu_ids=[])
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    assert resolve_thread_budget().numba_threads is None  # the user's setting wins


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux affinity")
def test_cpu_ids_pin_physics_threads(model, monkeypatch):
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    cpus = available_cpus()
    if len(cpus) < 2:
        pytest.skip("needs 2 CPUs")
    main_affinity, numba_threads = os.sched_getaffinity(0), numba.get_num_threads()
    block = cpus[:2]
    try:
        before = thread_ids()
        b = _backend(model, 4, cpu_ids=block)
        new = thread_ids() - before
        assert b.num_threads == 2 and numba.get_num_threads() == 2
        assert os.sched_getaffinity(0) == set(block)
        for tid in new:
            assert os.sched_getaffinity(tid) == set(block)
        b.step(np.tile(g1.DEFAULT_JOINT_POS, (4, 1)))
        b.close()
    finally:
        os.sched_setaffinity(0, main_affinity)
        numba.set_num_threads(numba_threads)
