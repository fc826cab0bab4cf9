"""The `SimBackend` contract, checked on every registered backend against MuJoCo as the oracle.

Each test runs once per entry of `gym_motion.backends.BACKENDS` (MuJoCo Warp on Warp's CPU
device; skipped when its engine is not installed) with N = 3 envs and a few control steps.
MotrixSim has its own solver, so where a test compares trajectories with MuJoCo's it states
the engine's bound and why (`ENGINE_DIFFERS`); everything else holds for it as written.
Warp compiles MuJoCo Warp's kernels on first use and caches them (``~/.cache/warp``): with a cold
cache the first mjwarp test takes about 40 s more on 2 cores, later runs a few seconds.
"""

from __future__ import annotations

import functools
import importlib

import mujoco
import numpy as np
import pytest

from gym_motion.backends import BACKENDS, BodyState, SimBackend, make_backend
from gym_motion.robots import g1

N = 3
DEC = 4
THRESHOLD = 10.0  # N, self-contact normal force
NJ = len(g1.JOINT_NAMES)
FIELDS = ("pos_w", "quat_w", "lin_vel_w", "ang_vel_w", "joint_pos", "joint_vel")
# backend-specific keywords of the contract runs (small, deterministic, CPU only)
KWARGS = {"mujoco": {"num_threads": 1}, "mjwarp": {"device": "cpu"}, "motrix": {"num_threads": 1}}
# backends whose dynamics are not MuJoCo's (another solver): trajectory comparisons are bounded
ENGINE_DIFFERS = {"motrix"}


def _backend_params() -> list:
    params = []
    for name, target in BACKENDS.items():
        try:
            importlib.import_module(target.split(":")[0])
            marks = ()
        except ImportError as err:
            marks = pytest.mark.skip(reason=f"{name} backend unavailable: {err}")
        params.append(pytest.param(name, marks=marks))
    return params


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return g1.load_model()


@pytest.fixture(scope="module")
def ids(model) -> tuple[np.ndarray, np.ndarray]:
    """(body ids of the tracked bodies, joint ids of the robot joints)."""
    bodies = np.array([model.body(n).id for n in g1.TRACKED_BODIES])
    joints = np.array([model.joint(n).id for n in g1.JOINT_NAMES])
    return bodies, joints


@pytest.fixture(params=_backend_params())
def make(request, model, ids):
    """Factory of fresh backends of the parametrised kind (closed after the test)."""
    made = []

    def build(n: int = N, body_ids=None, joint_ids=None, **kwargs) -> SimBackend:
        bodies = ids[0] if body_ids is None else body_ids
        joints = ids[1] if joint_ids is None else joint_ids
        kw = {"decimation": DEC, **KWARGS.get(request.param, {}), **kwargs}
        backend = make_backend(request.param, model, n, bodies, joints, **kw)
        made.append(backend)
        return backend

    yield build
    for backend in made:
        backend.close()


# ----------------------------------------------------------------------------------- helpers


def engine(request) -> str:
    """The backend name a test runs with (its `make` parameter)."""
    return request.node.callspec.params["make"]


def read(backend: SimBackend) -> BodyState:
    out = BodyState.zeros(backend.num_envs, len(backend.body_ids), len(backend.joint_ids))
    backend.copy_body_state_w(out)
    return out


def default_targets(n: int = N) -> np.ndarray:
    return np.tile(g1.DEFAULT_JOINT_POS, (n, 1))


def random_states(model, rng, n: int = N) -> tuple[np.ndarray, np.ndarray]:
    """(n, nq), (n, nv): tilted and shifted roots, perturbed joints, random velocities."""
    qpos = np.tile(model.key(g1.KEYFRAME).qpos, (n, 1))
    qpos[:, :3] += rng.normal(0.0, 0.2, (n, 3))
    quat = rng.normal(size=(n, 4))
    qpos[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    qpos[:, 7:] += rng.uniform(-0.4, 0.4, (n, model.nq - 7))
    qvel = rng.normal(0.0, 1.0, (n, model.nv))
    return qpos, qvel


def standing_states(model, rng, n: int = N) -> tuple[np.ndarray, np.ndarray]:
    """(n, nq), (n, nv): the default keyframe, feet on the floor, small joint perturbations."""
    qpos = np.tile(model.key(g1.KEYFRAME).qpos, (n, 1))
    qpos[:, 2] -= 0.01
    qpos[:, 7:] += rng.uniform(-0.05, 0.05, (n, model.nq - 7))
    return qpos, np.zeros((n, model.nv))


def oracle(model, qpos: np.ndarray, qvel: np.ndarray, body_ids, joint_ids) -> dict:
    """Body state of one MjData at (qpos, qvel): mj_forward, then mj_objectVelocity at each body
    frame origin (XBODY), world frame."""
    d = mujoco.MjData(model)
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(model, d)
    vel = np.zeros((len(body_ids), 6))
    for k, b in enumerate(body_ids):
        mujoco.mj_objectVelocity(model, d, mujoco.mjtObj.mjOBJ_XBODY, b, vel[k], 0)
    return {
        "pos_w": d.xpos[body_ids],
        "quat_w": d.xquat[body_ids],
        "lin_vel_w": vel[:, 3:],
        "ang_vel_w": vel[:, :3],
        "joint_pos": d.qpos[model.jnt_qposadr[joint_ids]],
        "joint_vel": d.qvel[model.jnt_dofadr[joint_ids]],
    }


def same_sign(quat: np.ndarray, like: np.ndarray) -> np.ndarray:
    """`quat` (..., 4) with each quaternion's sign flipped to agree with `like`: q and -q are
    the same rotation, BodyState does not fix the sign, and every env kernel is sign-invariant
    (rotations, 6D orientations, `quat_angle_between` on |w|). MuJoCo composes body quaternions
    in one order, MotrixSim in another, so their signs may differ body by body."""
    return quat * np.where(np.sum(quat * like, axis=-1, keepdims=True) < 0, -1.0, 1.0)


def assert_rows_equal(a: BodyState, b: BodyState, rows) -> None:
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(a, f)[rows], getattr(b, f)[rows], err_msg=f)


def field_table(backend, field: str) -> np.ndarray:
    """(N, ...) per-env values of a model field as the engine holds them (test-only access)."""
    if hasattr(backend, "_batch"):  # MujocoBackend: one materialised MjModel per env
        return np.stack([getattr(backend._batch.get_model(i), field) for i in range(N)])
    if hasattr(backend, "field_values"):  # MotrixBackend: read back from the engine's overrides
        return backend.field_values(field).astype(np.float32)
    return getattr(backend._m, field).numpy()  # MjWarpBackend: the device table


# ----------------------------------------------------------------------------------- tests


def test_protocol_attributes_and_ids(make, model, ids):
    backend = make()
    assert isinstance(backend, SimBackend)
    assert backend.num_envs == N and backend.decimation == DEC
    assert backend.physics_dt == model.opt.timestep
    for got, given in zip((backend.body_ids, backend.joint_ids), ids, strict=True):
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, given)
    assert backend.nonfinite.shape == (N,) and backend.nonfinite.dtype == bool
    assert backend.self_contact_substeps.shape == (N,)
    assert backend.self_contact_substeps.dtype == np.int32


def test_bad_ids_are_refused_with_their_names(make, model, ids):
    bodies, joints = ids
    with pytest.raises(ValueError, match=r"body_ids \[999\] out of range"):
        make(body_ids=np.array([1, 999]))
    free = int(np.flatnonzero(model.jnt_type == mujoco.mjtJoint.mjJNT_FREE)[0])
    with pytest.raises(ValueError, match=rf"joint_ids \[{free}\] are not hinge or slide"):
        make(joint_ids=np.r_[free, joints[1:]])
    with pytest.raises(ValueError, match="29 actuators but 28 joint ids"):
        make(joint_ids=joints[:-1])
    with pytest.raises(ValueError, match="integer ids"):
        make(body_ids=np.array([1.0, 2.0]))


def test_step_fills_body_state_of_declared_shapes_and_dtypes(make, ids):
    backend = make()
    rng = np.random.default_rng(0)
    for _ in range(2):
        backend.step(default_targets() + rng.uniform(-0.2, 0.2, (N, NJ)))
    state = read(backend)
    b, j = len(ids[0]), len(ids[1])
    shapes = {"pos_w": (N, b, 3), "quat_w": (N, b, 4), "lin_vel_w": (N, b, 3)}
    shapes |= {"ang_vel_w": (N, b, 3), "joint_pos": (N, j), "joint_vel": (N, j)}
    for f, shape in shapes.items():
        arr = getattr(state, f)
        assert arr.shape == shape and arr.dtype == np.float32, f
        assert np.isfinite(arr).all(), f
    np.testing.assert_allclose(np.linalg.norm(state.quat_w, axis=-1), 1.0, atol=1e-6)
    assert np.abs(state.lin_vel_w).max() > 1e-3  # the robot moved
    assert not backend.nonfinite.any()
    with pytest.raises(ValueError, match=rf"\({N}, {NJ}\)"):
        backend.step(np.zeros((N + 1, NJ)))


def test_write_state_round_trip_matches_mujoco_kinematics(make, model, ids):
    """Random tilted, spinning states: poses equal mj_kinematics, origin velocities equal
    mj_objectVelocity (world frame), joint state equals the written columns."""
    backend = make()
    qpos, qvel = random_states(model, np.random.default_rng(1))
    with pytest.raises(ValueError, match="must not repeat"):
        backend.write_state(np.zeros(N, int), qpos, qvel)
    backend.write_state(np.arange(N), qpos, qvel)
    state = read(backend)
    for row in range(N):
        want = oracle(model, qpos[row], qvel[row], *ids)
        want["quat_w"] = same_sign(want["quat_w"], state.quat_w[row])
        for f in ("pos_w", "quat_w", "joint_pos"):
            np.testing.assert_allclose(getattr(state, f)[row], want[f], atol=1e-5, err_msg=f)
        for f in ("lin_vel_w", "ang_vel_w", "joint_vel"):
            np.testing.assert_allclose(
                getattr(state, f)[row], want[f], atol=1e-4, rtol=1e-5, err_msg=f
            )
    assert np.abs(state.ang_vel_w).max() > 0.5  # the test exercised rotation


def test_writes_and_reads_are_row_scoped(make, model):
    backend = make()
    rng = np.random.default_rng(2)
    for _ in range(3):
        backend.step(default_targets() + rng.uniform(-0.3, 0.3, (N, NJ)))
    before = read(backend)
    qpos, qvel = random_states(model, rng, 1)
    backend.write_state(np.array([1]), qpos, qvel)
    after = read(backend)
    assert_rows_equal(after, before, [0, 2])
    assert np.abs(after.pos_w[1] - before.pos_w[1]).max() > 1e-3

    # a row-scoped read fills those rows only, by ids or by mask
    out = BodyState.zeros(N, len(backend.body_ids), len(backend.joint_ids))
    for f in FIELDS:
        getattr(out, f)[...] = 7.0
    backend.copy_body_state_w(out, np.array([1]))
    assert_rows_equal(out, after, [1])
    assert all((getattr(out, f)[[0, 2]] == 7.0).all() for f in FIELDS)
    backend.copy_body_state_w(out, np.array([True, False, True]))
    assert_rows_equal(out, after, [0, 1, 2])
    with pytest.raises(ValueError, match="write_state expects"):
        backend.write_state(np.array([0]), qpos[:, :-1], qvel)
    with pytest.raises(ValueError, match=rf"\[0, {N}\)"):
        backend.write_state(np.array([N]), qpos, qvel)


def test_nonfinite_row_is_flagged_others_step_on(make, model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo appends its warnings to ./MUJOCO_LOG.TXT
    backend = make()
    qpos, qvel = standing_states(model, np.random.default_rng(3))
    # a hip velocity of 1e30 rad/s (the engines' arithmetic overflows within a substep); a
    # huge but finite upward root velocity (it flies off, no contacts: a blown-up world with
    # many contacts may overflow MuJoCo Warp's shared contact pool)
    for column, bad in ((8, 1e30), (2, 1e6)):
        backend.write_state(np.arange(N), qpos, qvel)
        broken = qvel[1:2].copy()
        broken[0, column] = bad
        backend.write_state(np.array([1]), qpos[1:2], broken)
        backend.step(default_targets())  # no exception
        np.testing.assert_array_equal(backend.nonfinite, [False, True, False])
        state = read(backend)
        assert all(np.isfinite(getattr(state, f)[[0, 2]]).all() for f in FIELDS)
    backend.write_state(np.array([1]), qpos[1:2], qvel[1:2])  # re-initialised: flag cleared
    assert not backend.nonfinite.any()
    backend.step(default_targets())
    assert not backend.nonfinite.any()
    # NaN is what a blow-up produces, never what is written: refused, nothing written
    nan = qpos[1:2].copy()
    nan[0, 4] = np.nan  # the root quaternion (MuJoCo Warp renormalised it away silently)
    with pytest.raises(ValueError, match=r"rows \[0\] are not finite as float32"):
        backend.write_state(np.array([1]), nan, qvel[1:2])
    with pytest.raises(ValueError, match=r"rows \[0\] are not finite as float32"):
        backend.write_state(np.array([1]), qpos[1:2], np.full_like(qvel[1:2], 1e39))
    with pytest.raises(ValueError, match="env_ids must be integers"):
        backend.write_state(np.array([0.9]), qpos[1:2], qvel[1:2])
    with pytest.raises(ValueError, match=r"BodyState.pos_w must be \(3, "):
        backend.copy_body_state_w(BodyState.zeros(1, len(backend.body_ids), model.nu))


def test_self_contact_is_counted_per_substep(make, model, request):
    """Arms pressed into the torso (rows 1, 2) against the default pose (row 0): per-step
    counts equal those of one MjData stepped substep by substep (sensor normal force > 10 N).

    Another engine (`ENGINE_DIFFERS`) moves the arms on its own solver: its counts may differ
    from MuJoCo's by one substep per step (the arm reaches the torso a substep earlier or later)
    but must show the same contacts: none in row 0, every substep of the last step in rows 1, 2.
    """
    backend = make(self_contact_threshold=THRESHOLD)
    steps = 6
    targets = np.tile(default_targets(), (steps, 1, 1))
    left = g1.JOINT_NAMES.index("left_shoulder_roll_joint")
    right = g1.JOINT_NAMES.index("right_shoulder_roll_joint")
    targets[:, 1:, left], targets[:, 1:, right] = -1.5, 1.5
    qpos = np.tile(model.key(g1.KEYFRAME).qpos, (N, 1))
    qvel = np.zeros((N, model.nv))
    backend.write_state(np.arange(N), qpos, qvel)
    counts = np.zeros((steps, N), np.int64)
    for s in range(steps):
        backend.step(targets[s])
        counts[s] = backend.self_contact_substeps
    want = np.zeros((steps, N), np.int64)
    normal = model.sensor_adr[model.sensor("self_contact").id] + 1  # [found, normal, t1, t2]
    for row in range(N):
        d = mujoco.MjData(model)
        d.qpos[:], d.qvel[:] = qpos[row], qvel[row]
        for s in range(steps):
            d.ctrl[:] = targets[s, row]
            for _ in range(DEC):
                mujoco.mj_step(model, d)
                want[s, row] += d.sensordata[normal] > THRESHOLD
    if engine(request) in ENGINE_DIFFERS:
        assert np.abs(counts - want).max() <= 1, (counts, want)
    else:
        np.testing.assert_array_equal(counts, want)
    assert counts[:, 0].max() == 0 and counts[-1, 1:].min() == DEC


def test_equal_inputs_give_bitwise_equal_states(make, model):
    a, b = make(), make()
    rng = np.random.default_rng(4)
    qpos, qvel = standing_states(model, rng)
    for backend in (a, b):
        backend.write_state(np.arange(N), qpos, qvel)
    for _ in range(4):
        t = default_targets() + rng.uniform(-0.5, 0.5, (N, NJ))
        a.step(t)
        b.step(t)
        assert_rows_equal(read(a), read(b), slice(None))
        np.testing.assert_array_equal(a.self_contact_substeps, b.self_contact_substeps)
        np.testing.assert_array_equal(a.nonfinite, b.nonfinite)


def test_joint_ids_in_any_order_drive_their_own_joints(make, ids):
    """Joint ids reversed (so actuators no longer in joint order), targets reversed: the same
    physics bitwise, joint state reversed."""
    a, b = make(), make(joint_ids=ids[1][::-1])
    rng = np.random.default_rng(8)
    for _ in range(3):
        t = default_targets() + rng.uniform(-0.4, 0.4, (N, NJ))
        a.step(t)
        b.step(t[:, ::-1])
    sa, sb = read(a), read(b)
    for f in ("pos_w", "quat_w", "lin_vel_w", "ang_vel_w"):
        np.testing.assert_array_equal(getattr(sa, f), getattr(sb, f), err_msg=f)
    np.testing.assert_array_equal(sa.joint_pos, sb.joint_pos[:, ::-1])
    np.testing.assert_array_equal(sa.joint_vel, sb.joint_vel[:, ::-1])


def test_model_fields_are_set_per_row_and_nominal_stays(make, model, request):
    """Friction, CoM and mass of row 1 only: its table rows hold the values, other rows and
    elements the nominal ones, `model_field` stays nominal; the other rows simulate exactly
    like an unrandomised backend, row 1 differently."""
    backend, plain = make(), make()
    feet = np.flatnonzero(np.isin(model.geom_bodyid, [model.body(n).id for n in g1.FOOT_BODIES]))
    torso = np.array([model.body(g1.ANCHOR_BODY).id])
    rows = np.array([1])
    nominal = {
        "geom_friction": backend.model_field("geom_friction", feet),
        "body_ipos": backend.model_field("body_ipos", torso),
        "body_mass": backend.model_field("body_mass", torso),
    }
    np.testing.assert_array_equal(nominal["geom_friction"], model.geom_friction[feet])
    assert nominal["geom_friction"].dtype == np.float64
    assert nominal["body_mass"].shape == (1,)
    friction = nominal["geom_friction"][None].copy()
    friction[..., 0] = 0.05
    values = {
        "geom_friction": friction,
        "body_ipos": nominal["body_ipos"][None] + [[[0.04, -0.03, 0.05]]],
        "body_mass": nominal["body_mass"][None] + 4.0,
    }
    elems = {"geom_friction": feet, "body_ipos": torso, "body_mass": torso}
    for field, vals in values.items():
        backend.set_model_field(field, rows, elems[field], vals)
        table = field_table(backend, field)
        dtype = table.dtype
        # MotrixSim re-derives the centre of mass in float32 from the MJCF it was given: 1 ulp
        tol = {"atol": 1e-7, "rtol": 0} if engine(request) == "motrix" else {"atol": 0, "rtol": 0}
        same = functools.partial(np.testing.assert_allclose, **tol, err_msg=field)
        same(table[1, elems[field]], vals[0].astype(dtype))
        same(table[[0, 2]], np.stack([getattr(model, field)] * 2, 0).astype(dtype))
        others = np.setdiff1d(np.arange(table.shape[1]), elems[field])
        same(table[1, others], getattr(model, field)[others].astype(dtype))
        np.testing.assert_array_equal(backend.model_field(field, elems[field]), nominal[field])

    qpos, qvel = standing_states(model, np.random.default_rng(5))
    rng = np.random.default_rng(6)
    for b in (backend, plain):
        b.write_state(np.arange(N), qpos, qvel)
    for _ in range(4):
        t = default_targets() + rng.uniform(-0.3, 0.3, (N, NJ))
        backend.step(t)
        plain.step(t)
    got, ref = read(backend), read(plain)
    assert_rows_equal(got, ref, [0, 2])
    assert np.abs(got.pos_w[1] - ref.pos_w[1]).max() > 1e-5


def test_model_field_errors_name_what_was_expected(make, model):
    backend = make()
    with pytest.raises(ValueError, match="'geom_friction', 'body_ipos', 'body_mass'"):
        backend.model_field("geom_rgba", np.array([0]))
    with pytest.raises(ValueError, match="supported"):
        backend.set_model_field("body_pos", np.array([0]), np.array([1]), np.zeros((1, 1, 3)))
    with pytest.raises(ValueError, match=r"\(2, 1, 3\)"):
        backend.set_model_field("geom_friction", np.array([0, 2]), np.array([5]), np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"\(1, 2\)"):
        backend.set_model_field("body_mass", np.array([0]), np.array([1, 2]), np.ones((1, 2, 1)))
    with pytest.raises(ValueError, match="out of range"):
        backend.model_field("body_mass", np.array([model.nbody]))
    with pytest.raises(ValueError, match="finite"):
        backend.set_model_field("body_mass", np.array([0]), np.array([1]), [[np.nan]])


def test_add_root_velocity_kicks_the_root_in_the_world_frame(make, model, ids):
    """Rows 0 and 2 (tilted roots): the root body's velocity becomes before + kick (world frame),
    every body moves rigidly with it, poses and joint state stay, row 1 is untouched."""
    backend = make()
    rng = np.random.default_rng(7)
    qpos, qvel = random_states(model, rng)
    backend.write_state(np.arange(N), qpos, qvel)
    before = read(backend)
    rows = np.array([0, 2])
    lin, ang = rng.uniform(-1.0, 1.0, (2, 3)), rng.uniform(-1.0, 1.0, (2, 3))
    backend.add_root_velocity(rows, lin, ang)
    after = read(backend)

    assert_rows_equal(after, before, [1])
    for f in ("pos_w", "quat_w", "joint_pos", "joint_vel"):
        np.testing.assert_array_equal(getattr(after, f), getattr(before, f), err_msg=f)
    free = int(np.flatnonzero(model.jnt_type == mujoco.mjtJoint.mjJNT_FREE)[0])
    root = list(ids[0]).index(model.jnt_bodyid[free])
    pos = before.pos_w[rows].astype(np.float64)
    arm = pos - pos[:, root : root + 1]  # (2, B, 3) from the root body's origin
    want_lin = before.lin_vel_w[rows] + lin[:, None] + np.cross(ang[:, None], arm)
    want_ang = before.ang_vel_w[rows] + ang[:, None]
    np.testing.assert_allclose(
        after.lin_vel_w[rows, root], before.lin_vel_w[rows, root] + lin, atol=1e-5
    )
    np.testing.assert_allclose(after.ang_vel_w[rows], want_ang, atol=1e-5)
    np.testing.assert_allclose(after.lin_vel_w[rows], want_lin, atol=1e-4)

    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        backend.add_root_velocity(rows, lin[:1], ang)
    with pytest.raises(ValueError, match="must not repeat"):
        backend.add_root_velocity(np.array([0, 0]), lin, ang)
    backend.step(default_targets())  # still steps
    assert not backend.nonfinite.any()


def test_close_is_idempotent_and_final(make):
    backend = make()
    backend.close()
    backend.close()
    with pytest.raises(RuntimeError, match="closed"):
        backend.step(default_targets())


def test_unknown_backend_name_lists_the_valid_ones(model, ids):
    with pytest.raises(ValueError, match="'mujoco', 'mjwarp'"):
        make_backend("bullet", model, 1, *ids)
