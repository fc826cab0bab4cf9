"""MujocoBackend specifics: bitwise equality with single-MjData MuJoCo, threads and CPU pinning.

The behaviour every backend shares is tested in test_contract.py.
"""

from __future__ import annotations

import os
import threading

import mujoco
import numba
import numpy as np
import pytest

from gym_motion.backends import BodyState
from gym_motion.backends.mujoco import MujocoBackend
from gym_motion.backends.threads import available_cpus, resolve_thread_budget, thread_ids
from gym_motion.robots import g1

DEC = 4
BODIES = g1.BODY_NAMES
NJ = len(g1.JOINT_NAMES)


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return g1.load_model()


def _targets(rng: np.random.Generator, n: int, scale: float = 0.3) -> np.ndarray:
    return g1.DEFAULT_JOINT_POS + scale * rng.uniform(-1, 1, (n, NJ))


def _ids(model, bodies=BODIES, joints=g1.JOINT_NAMES) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.array([model.body(b).id for b in bodies]),
        np.array([model.joint(j).id for j in joints]),
    )


def _backend(model, n, **kw) -> MujocoBackend:
    return MujocoBackend(model, n, *_ids(model), decimation=DEC, **kw)


def _state(backend: MujocoBackend) -> BodyState:
    out = BodyState.zeros(backend.num_envs, len(BODIES), NJ)
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


def test_written_row_steps_like_a_fresh_mjdata(model):
    """write_state clears the warm start: stepping a written row is bitwise mj_step on a fresh
    MjData holding the written state."""
    n = 3
    rng = np.random.default_rng(2)
    b = _backend(model, n)
    for _ in range(5):
        b.step(_targets(rng, n))
    qpos = model.key("default").qpos.copy()
    qpos[0] = 1.0
    qvel = rng.normal(0, 0.5, model.nv)
    b.write_state(np.array([1]), qpos[None], qvel[None])
    t = _targets(rng, n)
    b.step(t)
    d = mujoco.MjData(model)
    d.qpos[:], d.qvel[:], d.ctrl[:] = qpos, qvel, t[1]
    mujoco.mj_step(model, d, DEC)
    np.testing.assert_array_equal(b.qpos[1], d.qpos)
    np.testing.assert_array_equal(b.qvel[1], d.qvel)


def test_add_root_velocity_is_float64_and_keeps_the_warm_start(model):
    """qvel[0:3] += lin and qvel[3:6] += R(q)^T ang in float64 (MuJoCo's own rotation as the
    oracle); qpos, joint velocities and the solver warm start stay bitwise."""
    n = 3
    rng = np.random.default_rng(5)
    b = _backend(model, n)
    for _ in range(3):
        b.step(_targets(rng, n))
    quat = rng.normal(size=4)
    qpos = b.qpos[2].copy()
    qpos[3:7] = quat / np.linalg.norm(quat)
    b.write_state(np.array([2]), qpos[None], b.qvel[2][None].copy())
    b.step(_targets(rng, n))
    qpos0, qvel0, warm0 = b.qpos.copy(), b.qvel.copy(), b._warm.copy()
    lin, ang = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    rows = np.array([0, 2])
    b.add_root_velocity(rows, lin, ang)
    np.testing.assert_array_equal(b.qpos, qpos0)
    np.testing.assert_array_equal(b._warm, warm0)
    np.testing.assert_array_equal(b.qvel[1], qvel0[1])
    np.testing.assert_array_equal(b.qvel[rows, 6:], qvel0[rows, 6:])
    np.testing.assert_array_equal(b.qvel[rows, :3], qvel0[rows, :3] + lin)
    for k, r in enumerate(rows):
        inv = np.zeros(4)
        mujoco.mju_negQuat(inv, qpos0[r, 3:7] / np.linalg.norm(qpos0[r, 3:7]))
        local = np.zeros(3)
        mujoco.mju_rotVecQuat(local, ang[k], inv)
        np.testing.assert_allclose(b.qvel[r, 3:6], qvel0[r, 3:6] + local, rtol=0, atol=1e-14)


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


def test_randomised_row_simulates_its_own_model(model):
    """Friction, CoM and mass set for row 1: stored exactly (float64), and that row steps
    bitwise like an MjData on the MjModel the batch materialises for it."""
    n = 3
    b = _backend(model, n)
    feet = np.flatnonzero(np.isin(model.geom_bodyid, _ids(model, g1.FOOT_BODIES, ())[0]))
    torso = np.array([model.body(g1.ANCHOR_BODY).id])
    friction = b.model_field("geom_friction", feet)[None]
    friction[..., 0] = 0.3
    ipos = b.model_field("body_ipos", torso)[None] + np.array([0.025, -0.05, 0.05])
    b.set_model_field("geom_friction", [1], feet, friction)
    b.set_model_field("body_ipos", [1], torso, ipos)
    b.set_model_field("body_ipos", [1], torso, ipos)  # values, not offsets: not cumulative
    b.set_model_field("body_mass", [1], torso, [[20.0]])
    m1 = b._batch.get_model(1)
    np.testing.assert_array_equal(m1.geom_friction[feet], friction[0])
    np.testing.assert_array_equal(m1.body_ipos[torso], ipos[0])
    assert m1.body_mass[torso[0]] == 20.0
    np.testing.assert_array_equal(b.model.body_mass, model.body_mass)  # nominal kept

    t = np.tile(g1.DEFAULT_JOINT_POS, (n, 1))
    ref = mujoco.MjData(m1)
    mujoco.mj_resetDataKeyframe(m1, ref, m1.key("default").id)
    for _ in range(5):
        b.step(t)
        ref.ctrl[:] = t[1]
        mujoco.mj_step(m1, ref, DEC)
    np.testing.assert_array_equal(b.qpos[1], ref.qpos)
    assert np.abs(b.qpos[1] - b.qpos[0]).max() > 1e-6


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
        assert os.sched_getaffinity(0) == main_affinity
    finally:
        os.sched_setaffinity(0, main_affinity)
        numba.set_num_threads(numba_threads)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux affinity")
def test_cpu_ids_pins_are_given_back_on_close_in_any_order(model, monkeypatch):
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    cpus = available_cpus()
    if len(cpus) < 2:
        pytest.skip("needs 2 CPUs")
    main_affinity, numba_threads = os.sched_getaffinity(0), numba.get_num_threads()
    done = threading.Event()
    try:
        first = _backend(model, 4, cpu_ids=[cpus[0]])
        assert os.sched_getaffinity(0) == {cpus[0]}
        worker = threading.Thread(target=done.wait)  # a thread the pinned caller starts
        worker.start()
        assert os.sched_getaffinity(worker.native_id) == {cpus[0]}
        assert available_cpus() == cpus  # the process's CPUs, not the pin
        second = _backend(model, 4, cpu_ids=[cpus[1]])  # another CPU of the process: accepted
        assert os.sched_getaffinity(0) == {cpus[1]}
        first.close()  # the newest open pin holds the caller
        assert os.sched_getaffinity(0) == {cpus[1]}
        assert os.sched_getaffinity(worker.native_id) == main_affinity  # as before any pin
        second.close()
        assert os.sched_getaffinity(0) == main_affinity
        assert os.sched_getaffinity(worker.native_id) == main_affinity
        free = _backend(model, 4)  # a later env sees every CPU of the process again
        assert free.num_threads == len(cpus) and not free.thread_budget.pinned
        free.close()
        second.close()  # idempotent: gives nothing back twice
        assert os.sched_getaffinity(0) == main_affinity
    finally:
        done.set()
        os.sched_setaffinity(0, main_affinity)
        numba.set_num_threads(numba_threads)


def test_self_contact_threshold_set_after_construction_counts_from_the_next_step(model):
    backend = _backend(model, 2, num_threads=1)
    targets = _targets(np.random.default_rng(0), 2, 0.0)
    backend.step(targets)
    assert (backend.self_contact_substeps == 0).all()  # standing: no self-contact above 10 N
    backend.self_contact_threshold = -1.0  # every substep's force (0 included) exceeds it
    backend.step(targets)
    np.testing.assert_array_equal(backend.self_contact_substeps, [DEC, DEC])
    backend.self_contact_threshold = None  # counting off
    backend.step(targets)
    assert backend.self_contact_threshold is None and (backend.self_contact_substeps == 0).all()
    backend.close()
