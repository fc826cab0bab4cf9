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

Without a GPU, the CUDA-only decisions (device choice, the graph-capture guard) are tested with
Warp's device queries replaced by fakes; graph capture itself is tested on Warp's CPU device,
which records and replays graphs too.
"""

from __future__ import annotations

import re
import warnings

import mujoco
import mujoco_warp as mjw  # a required dependency: missing, these tests fail, not skip
import numpy as np
import pytest
import warp as wp  # noqa: E402

from gym_motion.backends import make_backend  # noqa: E402
from gym_motion.backends import mjwarp as mjwarp_module  # noqa: E402
from gym_motion.backends.base import BodyState  # noqa: E402
from gym_motion.backends.mjwarp import (  # noqa: E402
    CAPACITY_OVERFLOW,
    OVERFLOW_FIXES,
    CapacityOverflowError,
    MjWarpBackend,
    MjWarpFallbackWarning,
    cuda_unavailable_reason,
    default_device,
    graph_capture_blocker,
    resolve_device,
)
from gym_motion.envs.config import BackendCfg  # noqa: E402
from gym_motion.robots import g1  # noqa: E402

N = 4
BODIES = g1.TRACKED_BODIES
NJ = len(g1.JOINT_NAMES)
DECIMATION = 4
FIELDS = ("pos_w", "quat_w", "lin_vel_w", "ang_vel_w", "joint_pos", "joint_vel")


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
    """4 contacts per world cannot hold two standing feet: with on_overflow="raise" the step
    raises, naming every world (each is over its share) and the cause."""
    targets = np.tile(g1.DEFAULT_JOINT_POS, (N, 1)).astype(np.float32)
    be = MjWarpBackend(model, N, *ids(model), device="cpu", nconmax=4, on_overflow="raise")
    qpos = np.tile(model.key(g1.KEYFRAME).qpos, (N, 1))
    qpos[:, 2] -= 0.03  # feet in the floor from the first substep
    be.write_state(np.arange(N), qpos, np.zeros((N, model.nv)))
    share = r"\(nconmax=4 x N = 16, plus a reserve of 942\): raise nconmax"
    with pytest.raises(CapacityOverflowError, match=r"in envs \[0, 1, 2, 3\] .*" + share):
        be.step(targets)
    be.close()


N6 = 6  # the batch: 6 worlds, a contact pool of 35 x 6 = 210


def diverging_step(model, diverge: bool, **kwargs) -> tuple[MjWarpBackend, BodyState]:
    """6 worlds from the keyframe at the default targets: 3 steps, after which each stands on
    28 foot contacts (168 of the 210), then one more; with `diverge`, world 2's joint
    velocities are set to 2,000 rad/s before it (mujoco_warp #1307): in that step's last
    substep world 2 alone needs 84 contacts (224 in all). Returns the open backend and the
    body state after the last step."""
    be = MjWarpBackend(model, N6, *ids(model), device="cpu", **kwargs)
    targets = np.tile(g1.DEFAULT_JOINT_POS, (N6, 1)).astype(np.float32)
    for _ in range(3):
        be.step(targets)
    if diverge:
        qpos, qvel = be._d.qpos.numpy()[[2]], be._d.qvel.numpy()[[2]]
        qvel[:, 6:] = 2000.0
        be.write_state(np.array([2]), qpos, qvel)
    be.step(targets)
    out = BodyState.zeros(N6, len(BODIES), NJ)
    be.copy_body_state_w(out)
    return be, out


def test_one_world_over_its_contact_share_is_the_only_row_flagged(model):
    """The pool holds 35 x 6 plus the reserve of one world's worst case (942 contacts for the
    G1), so world 2's 84 contacts drop none of world 5's (without the reserve world 5 kept 14 of
    its 28): only world 2 is flagged (over its share; also over njmax), counted, and every other
    world steps to the bits of a batch where world 2 stands still."""
    be, got = diverging_step(model, diverge=True)
    d = be._d
    assert be.contact_reserve == 942 and d.naconmax == 35 * N6 + 942
    assert int(d.nacon.numpy()[0]) > 35 * N6
    per_world = np.bincount(d.contact.worldid.numpy()[: d.nacon.numpy()[0]], minlength=N6)
    np.testing.assert_array_equal(per_world[[0, 1, 3, 4, 5]], 28)
    np.testing.assert_array_equal(be.nonfinite, [False, False, True, False, False, False])
    assert be.overflow_count == 1
    be.close()
    calm, want = diverging_step(model, diverge=False)
    assert not calm.nonfinite.any() and calm.overflow_count == 0
    calm.close()
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(got, f)[[0, 1, 3, 4, 5]],
                                      getattr(want, f)[[0, 1, 3, 4, 5]], err_msg=f)  # fmt: skip


def test_past_the_reserve_every_world_is_flagged(model, monkeypatch):
    """Where the batch overruns the reserve too (here: none, the pool of 35 x 6 alone, as
    before it), MuJoCo Warp drops contacts of worlds that did not overrun (world 5 keeps 14 of
    its 28) and sets the pool's bit in every world: every row is flagged and counted, none is
    left stepping on wrong contacts."""
    monkeypatch.setattr(mjwarp_module, "contact_reserve", lambda mjm, m: 0)
    be, _ = diverging_step(model, diverge=True)
    d = be._d
    assert d.naconmax == 35 * N6 and int(d.nacon.numpy()[0]) > d.naconmax
    per_world = np.bincount(d.contact.worldid.numpy(), minlength=N6)
    assert per_world[5] < 28
    assert be.nonfinite.all() and be.overflow_count == N6
    be.close()


def test_on_overflow_raise_names_only_the_world_over_its_share(model):
    with pytest.raises(CapacityOverflowError) as err:
        diverging_step(model, diverge=True, on_overflow="raise")
    msg = str(err.value)
    assert "in envs [2] during the last step" in msg and "of which these envs' [84]" in msg
    assert "NARROWPHASE: contacts: more than a world's share of the shared contact pool " in msg
    assert "(nconmax=35 x N = 210, plus a reserve of 942): raise nconmax" in msg
    assert "NEFC: constraint rows per world (njmax=250): raise njmax" in msg


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


def run_env_with_one_diverging_world(steps: int, at: int | None) -> tuple[list, int, int]:
    """`steps` control steps of TrackingVecEnv (eval config, 6 envs, mjwarp on Warp's CPU device,
    default settings, zero actions); with `at`, env 2's joint velocities are set to 2,000 rad/s
    on the device before step `at`. Returns every step's (obs, reward, terminated, truncated,
    info) and the env's nonfinite_count and backend overflow_count."""
    from gym_motion.envs import TrackingVecEnv, eval_cfg

    env = TrackingVecEnv(num_envs=N6, cfg=eval_cfg(), seed=0, backend="mjwarp",
                         backend_kwargs={"device": "cpu"})  # fmt: skip
    env.reset(seed=0)
    out = []
    for k in range(steps):
        if k == at:
            d = env.backend._d
            qpos, qvel = d.qpos.numpy()[[2]], d.qvel.numpy()[[2]]
            qvel[:, 6:] = 2000.0
            env.backend.write_state(np.array([2]), qpos, qvel)
        out.append(env.step(np.zeros((N6, NJ), np.float32)))
    counts = env.nonfinite_count, env.backend.overflow_count
    env.close()
    return out, *counts


def test_a_run_goes_on_when_one_world_diverges_and_only_that_env_ends():
    """mujoco_warp #1307 / #930 through the env: env 2 diverges at step 20 of 100 and needs more
    than its share of the contact pool (and more than njmax rows); with the default on_overflow
    ("terminate") that step ends env 2 alone (counted as a non-finite termination and an
    overflow; reset next step), and every other env's observations, rewards and flags are, for
    all 100 steps, those of the same run without the divergence (bit for bit: none of their
    contacts was dropped). Before: the step raised CapacityOverflowError naming all 6 envs, and
    "terminate" ended all 6."""
    at = 20
    want, want_nonfinite, want_overflow = run_env_with_one_diverging_world(100, at=None)
    got, nonfinite, overflow = run_env_with_one_diverging_world(100, at=at)
    assert (want_nonfinite, want_overflow) == (0, 0)
    assert (nonfinite, overflow) == (1, 1)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        rows = np.arange(N6) if k < at else np.array([0, 1, 3, 4, 5])
        for i, name in enumerate(("obs", "reward", "terminated", "truncated")):
            np.testing.assert_array_equal(g[i][rows], w[i][rows], err_msg=f"step {k}: {name}")
        blew_up = g[4].get("final/termination/nonfinite", np.zeros(N6, bool))
        np.testing.assert_array_equal(blew_up, np.arange(N6) == 2 if k == at else False)
        assert g[2][2] or k != at


# ------------------------------------------------------------------------- device and graphs


def fake_cuda(monkeypatch, count: int, toolkit=(13, 4), driver=(13, 0)) -> None:
    """Warp's CUDA queries answer as on a machine with `count` GPUs, a warp-lang built with CUDA
    `toolkit` and a driver for CUDA `driver` ((major, minor), None: absent)."""
    monkeypatch.setattr(wp, "get_cuda_device_count", lambda: count)
    monkeypatch.setattr(wp, "get_cuda_toolkit_version", lambda: toolkit)
    monkeypatch.setattr(wp, "get_cuda_driver_version", lambda: driver)


@pytest.mark.parametrize(
    ("toolkit", "driver", "reason"),
    [
        (None, None, "build has no CUDA support"),
        ((13, 4), None, "no NVIDIA CUDA driver was found; warp-lang .* driver for CUDA 13.0"),
        ((13, 4), (12, 8), "driver supports CUDA 12.8 only, and warp-lang .* CUDA 13.0 or newer"),
        ((13, 4), (13, 0), "the CUDA 13.0 driver lists no GPU"),
    ],
)
def test_without_a_cuda_device_the_default_is_the_cpu_and_says_why(
    monkeypatch, toolkit, driver, reason
):
    fake_cuda(monkeypatch, 0, toolkit, driver)
    monkeypatch.setenv("LOCAL_RANK", "1")  # no GPU to pick from: still the CPU
    assert re.search(reason, cuda_unavailable_reason())
    with pytest.warns(MjWarpFallbackWarning, match="Warp's CPU device \\(slow\\): .*" + reason):
        assert default_device() == "cpu"
    for asked in ("cuda", "cuda:0"):  # an explicit GPU is refused, never replaced by the CPU
        with pytest.raises(ValueError, match="asks for a GPU, but Warp lists no CUDA device: "):
            resolve_device(asked)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_device("cpu") == "cpu"  # chosen explicitly: no warning


def test_default_device_is_the_local_rank_gpu_under_torchrun(monkeypatch):
    fake_cuda(monkeypatch, 4)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert default_device() == "cuda:0"
        monkeypatch.setenv("LOCAL_RANK", "2")
        assert default_device() == "cuda:2"
        assert cuda_unavailable_reason() is None
    for bad in ("4", "-1", "two"):
        monkeypatch.setenv("LOCAL_RANK", bad)
        with pytest.raises(ValueError, match=f"LOCAL_RANK='{bad}' names no CUDA device: Warp"):
            default_device()
    with pytest.raises(ValueError, match="Warp lists 4 CUDA device"):
        resolve_device("cuda:4")


class FakeCudaDevice:
    is_cpu, is_cuda, alias = False, True, "cuda:0"


def test_graph_capture_needs_conditional_nodes_and_the_memory_pool(monkeypatch):
    assert graph_capture_blocker("cpu") is None  # Warp records CPU graphs
    support = {"conditional": False, "pool": False, "pool_supported": True}
    fake_cuda(monkeypatch, 1, (13, 4), (12, 2))
    monkeypatch.setattr(wp, "get_device", lambda device=None: FakeCudaDevice())
    monkeypatch.setattr(wp, "is_conditional_graph_supported", lambda: support["conditional"])
    monkeypatch.setattr(wp, "is_mempool_enabled", lambda device: support["pool"])
    monkeypatch.setattr(wp, "is_mempool_supported", lambda device: support["pool_supported"])
    reason = graph_capture_blocker("cuda:0")
    assert "conditional graph nodes" in reason and "12.4+" in reason and "(12, 2)" in reason
    support["conditional"] = True
    assert "memory pool is off on cuda:0" in graph_capture_blocker("cuda:0")
    support["pool_supported"] = False
    assert "memory pool is not supported on cuda:0" in graph_capture_blocker("cuda:0")
    support["pool"] = True
    assert graph_capture_blocker("cuda:0") is None


def test_where_graphs_cannot_be_captured_the_backend_warns_and_launches_eagerly(model, monkeypatch):
    monkeypatch.setattr(mjwarp_module, "graph_capture_blocker", lambda device: "no graphs here")
    with pytest.raises(ValueError, match="capture=True, but graphs cannot be captured on cpu"):
        MjWarpBackend(model, N, *ids(model), device="cpu", capture=True)
    with pytest.warns(MjWarpFallbackWarning, match="without graph capture .*: no graphs here"):
        be = MjWarpBackend(model, N, *ids(model), device="cpu")
    targets = np.tile(g1.DEFAULT_JOINT_POS, (N, 1)).astype(np.float32)
    for _ in range(2):  # the second step and refresh would capture
        be.step(targets)
        be.write_state(np.arange(1), *(a[:1] for a in reset_states(model, np.random.default_rng())))
        read(be)
    assert not be.capture and be.capture_s == {} and be._graphs.graphs == {}
    be.close()


def snapshot(be) -> list[np.ndarray]:
    """Everything a step or write leaves behind: body state, flags, device qpos/qvel."""
    s = read(be)
    fields = [getattr(s, f) for f in FIELDS]
    flags = [be.nonfinite.copy(), be.self_contact_substeps.copy()]
    return fields + flags + [be._d.qpos.numpy().copy(), be._d.qvel.numpy().copy()]


def test_captured_graphs_replay_the_eager_bits(model):
    """By default the CPU device captures the step and the refresh after row writes (second
    run of each) and replays them; an eager backend fed the same inputs holds the same bits
    after every step and write, per-world friction set after the capture included."""
    qpos, qvel = reset_states(model, np.random.default_rng(5))
    feet = foot_geoms(model)
    runs = []
    for capture in (None, False):
        be = MjWarpBackend(model, N, *ids(model), decimation=DECIMATION, device="cpu",
                           capture=capture)  # fmt: skip
        rng = np.random.default_rng(6)
        be.write_state(np.arange(N), qpos, qvel)
        states = [snapshot(be)]
        for k in range(4):
            be.step((g1.DEFAULT_JOINT_POS + rng.uniform(-0.3, 0.3, (N, NJ))).astype(np.float32))
            states.append(snapshot(be))
            if k == 2:
                table = np.repeat(be.model_field("geom_friction", feet)[None], N, axis=0)
                table[..., 0] = rng.uniform(0.3, 1.2, (N, 1))
                be.set_model_field("geom_friction", np.arange(N), feet, table)
            be.write_state(np.array([k % N]), qpos[[k % N]], qvel[[k % N]])
            be.add_root_velocity(np.array([(k + 1) % N]), rng.normal(size=(1, 3)),
                                 rng.normal(size=(1, 3)))  # fmt: skip
            states.append(snapshot(be))
        runs.append((be.capture, dict(be.capture_s), states))
        be.close()
    (captured, capture_s, got), (eager, eager_s, want) = runs
    assert captured and set(capture_s) == {"step", "refresh"}
    assert not eager and eager_s == {}
    for g, w in zip(got, want, strict=True):
        for a, b in zip(g, w, strict=True):
            np.testing.assert_array_equal(a, b)


def test_after_row_writes_only_the_written_rows_are_refreshed(model, backend):
    """Rows 1 (written) and 2 (kicked) come back with the values a refresh of every row gives;
    rows 0 and 3 are not copied back (a sentinel in the host buffer survives), and a refresh
    of every row leaves them as they were."""
    qpos, qvel = reset_states(model, np.random.default_rng(7))
    backend.write_state(np.arange(N), qpos, qvel)
    backend.step(np.tile(g1.DEFAULT_JOINT_POS, (N, 1)).astype(np.float32))
    read(backend)
    backend.write_state(np.array([1]), qpos[[0]], qvel[[0]])
    backend.add_root_velocity(np.array([2]), np.array([[0.5, 0.0, 0.0]]), np.array([[0, 0, 1.0]]))
    kept = backend._state_np[[0, 3]].copy()
    backend._state_np[[0, 3]] = -7.0
    partial = read(backend)
    assert np.all(partial.pos_w[[0, 3]] == -7.0) and np.all(partial.joint_vel[[0, 3]] == -7.0)
    np.testing.assert_array_equal(partial.joint_pos[1], qpos[0, 7:].astype(np.float32))
    backend._state_np[[0, 3]] = kept
    backend._written[:] = True  # a refresh of every row, as before this change
    full = read(backend)
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(partial, f)[[1, 2]], getattr(full, f)[[1, 2]])
    np.testing.assert_array_equal(backend._state_np[[0, 3]], kept)


def test_the_device_body_state_is_the_host_copy_after_steps_and_row_writes(model, backend):
    """`device_body_state` views the buffer a step gathers into; after row writes the refresh
    scatters the written rows there too, so it holds what `copy_body_state_w` returns."""
    qpos, qvel = reset_states(model, np.random.default_rng(8))
    backend.write_state(np.arange(N), qpos, qvel)
    backend.step(np.tile(g1.DEFAULT_JOINT_POS, (N, 1)).astype(np.float32))
    on_device = backend.device_body_state()
    for write in (False, True):
        if write:  # rows 1 and 3 written, row 2 kicked: the step's values no longer hold there
            backend.write_state(np.array([1, 3]), qpos[[2, 0]], qvel[[2, 0]])
            backend.add_root_velocity(np.array([2]), np.array([[0.3, 0.0, 0.0]]),
                                      np.array([[0.0, 0.0, 0.5]]))  # fmt: skip
        host = read(backend)
        for f in FIELDS:
            np.testing.assert_array_equal(getattr(on_device, f).numpy(), getattr(host, f))


def test_a_step_copies_only_its_flags_to_the_host(model, backend):
    """A step moves the targets up (N x nu float32) and its flags down (N x 3 float32); the
    whole state comes down at the first `copy_body_state_w` after it, written rows' at later
    ones. After a step, `sync_device_state` brings written rows up to date on the device and
    copies nothing down; `copy_body_state_w` then returns what the device holds."""
    qpos, qvel = reset_states(model, np.random.default_rng(9))
    backend.write_state(np.arange(N), qpos, qvel)
    read(backend)
    moved = backend.transfer_bytes
    targets = np.tile(g1.DEFAULT_JOINT_POS, (N, 1)).astype(np.float32)
    before = dict(moved)
    backend.step(targets)
    assert moved["to_device"] - before["to_device"] == targets.nbytes
    assert moved["to_host"] - before["to_host"] == N * 3 * 4
    backend.write_state(np.array([1, 3]), qpos[[2, 0]], qvel[[2, 0]])
    before = dict(moved)
    backend.sync_device_state()
    assert moved["to_host"] == before["to_host"]
    on_device = backend.device_body_state()
    np.testing.assert_array_equal(on_device.joint_pos.numpy()[[1, 3]],
                                  qpos[[2, 0], 7:].astype(np.float32))  # fmt: skip
    host = read(backend)  # after a step: the whole state, once
    assert moved["to_host"] - before["to_host"] == backend._state_np.nbytes
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(on_device, f).numpy(), getattr(host, f))
    before = dict(moved)
    read(backend)  # nothing new
    assert moved == before
    backend.write_state(np.array([0]), qpos[[3]], qvel[[3]])
    read(backend)  # the host copy is current but for row 0: that row comes down
    assert moved["to_host"] - before["to_host"] == backend._state_np[0].nbytes


def test_targets_on_the_device_step_as_their_numpy_copy_without_an_upload(model, backend):
    """Position targets in a float32 Warp array on the backend's device (a device MDP's) are
    read there: the same step as from NumPy, bit for bit, and nothing copied to the device;
    another shape, dtype or device is refused."""
    qpos, qvel = reset_states(model, np.random.default_rng(10))
    targets = np.tile(g1.DEFAULT_JOINT_POS, (N, 1)).astype(np.float32)
    targets += np.random.default_rng(11).uniform(-0.2, 0.2, targets.shape).astype(np.float32)
    results = []
    for on_device in (False, True):
        backend.write_state(np.arange(N), qpos, qvel)
        read(backend)
        before = backend.transfer_bytes["to_device"]
        backend.step(wp.array(targets, dtype=float, device="cpu") if on_device else targets)
        moved = backend.transfer_bytes["to_device"] - before
        assert moved == (0 if on_device else targets.nbytes)
        results.append(read(backend))
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(results[1], f), getattr(results[0], f))
    with pytest.raises(ValueError, match="shape"):
        backend.step(wp.zeros((N, NJ - 1), dtype=float, device="cpu"))
    with pytest.raises(ValueError, match="float32 on cpu"):
        backend.step(wp.zeros((N, NJ), dtype=wp.float64, device="cpu"))


def test_states_on_the_device_are_written_as_their_numpy_copy_with_only_the_ids_uploaded(
    model, backend
):
    """qpos/qvel rows in float64 (a device MDP's RSI) or float32 Warp arrays on the backend's
    device are written as the same NumPy rows are, bit for bit, with only the M ids copied up;
    another device, dtype or a buffer short of M rows is refused, naming it."""
    qpos, qvel = reset_states(model, np.random.default_rng(12))
    rows = np.array([3, 0])
    for dtype in (wp.float64, wp.float32):
        backend.write_state(np.arange(N), qpos, qvel)
        backend.write_state(rows, qpos[[1, 2]], qvel[[1, 2]])
        expected = [backend._d.qpos.numpy().copy(), backend._d.qvel.numpy().copy()]
        backend.write_state(np.arange(N), qpos, qvel)
        before = backend.transfer_bytes["to_device"]
        # the rows first in a buffer of N rows, as the device MDP hands them over
        backend.write_state(rows, wp.array(qpos[[1, 2, 0, 3]], dtype=dtype, device="cpu"),
                            wp.array(qvel[[1, 2, 0, 3]], dtype=dtype, device="cpu"))  # fmt: skip
        assert backend.transfer_bytes["to_device"] - before == rows.size * 4
        got = [backend._d.qpos.numpy(), backend._d.qvel.numpy()]
        for e, g in zip(expected, got, strict=True):  # one rounding to float32 either way
            np.testing.assert_array_equal(g, e)
    good = wp.zeros(2 * model.nv, dtype=wp.float64, device="cpu")
    with pytest.raises(ValueError, match="qpos holds 3 values"):
        backend.write_state(rows, wp.zeros(3, dtype=wp.float64, device="cpu"), good)
    with pytest.raises(ValueError, match="qvel on the device must be contiguous float32"):
        backend.write_state(rows, wp.zeros(2 * model.nq, dtype=wp.float64, device="cpu"),
                            wp.zeros(2 * model.nv, dtype=wp.int32, device="cpu"))  # fmt: skip
    with pytest.raises(ValueError, match="qpos must be a Warp array on cpu"):
        backend.write_state(rows, np.zeros((2, model.nq)), good)


def test_the_backend_never_waits_for_the_whole_device(model, backend, monkeypatch):
    """Only the backend's own stream is waited for (on the CPU device launches are synchronous
    and nothing is waited for); other work on the device, a policy's, is never waited for."""

    def refuse(*args, **kwargs):
        raise AssertionError("the backend waited for the whole device")

    monkeypatch.setattr(wp, "synchronize_device", refuse)
    monkeypatch.setattr(wp, "synchronize", refuse)
    qpos, qvel = reset_states(model, np.random.default_rng(8))
    feet = foot_geoms(model)
    backend.profile = True
    try:
        backend.write_state(np.arange(N), qpos, qvel)
        backend.step(np.tile(g1.DEFAULT_JOINT_POS, (N, 1)).astype(np.float32))
        backend.add_root_velocity(np.array([0]), np.ones((1, 3)), np.zeros((1, 3)))
        table = backend.model_field("geom_friction", feet)[None].repeat(N, axis=0)
        backend.set_model_field("geom_friction", np.arange(N), feet, table)
        read(backend)
    finally:
        backend.profile = False
    assert backend.phase_times["physics"] > 0.0


def test_a_refresh_read_only_on_the_device_is_not_waited_for(model, backend, monkeypatch):
    """`sync_device_state` after row writes queues the refresh on the stream and returns
    (a device MDP reads it there, in order); the host waits only to copy rows down, and
    before staging buffers an earlier copy may still read are written again."""
    waits = []
    sync = backend._sync
    monkeypatch.setattr(backend, "_sync", lambda: waits.append(1) or sync())
    qpos, qvel = reset_states(model, np.random.default_rng(13))
    backend.step(np.tile(g1.DEFAULT_JOINT_POS, (N, 1)).astype(np.float32))  # host copy stale
    waits.clear()
    backend.write_state(np.array([1]), qpos[[0]], qvel[[0]])
    backend.sync_device_state()
    assert waits == [] and backend._refresh_staged
    backend.write_state(np.array([2]), qpos[[1]], qvel[[1]])  # its staging: waited for first
    assert waits == [1]
    backend.sync_device_state()
    assert waits == [1]
    read(backend)  # the whole state down: waited for
    assert waits == [1, 1]


# --------------------------------------------------------------------- settings and overflows


def test_deterministic_mode_and_sensor_matches_reach_mujoco_warp(model, backend):
    """Through BackendCfg and make_backend, as the env builds it; the deterministic kernels
    (sorted contacts and constraint rows) step the same physics: with about 20 floor contacts
    per world, body positions within 1e-5 m of the default kernels' (measured on Warp's CPU
    device: identical)."""
    with pytest.raises(ValueError, match="'mjwarp' backend, not of 'mujoco'"):
        BackendCfg(name="mujoco", deterministic=True).kwargs()
    cfg = BackendCfg(name="mjwarp", device="cpu", deterministic=True, contact_sensor_maxmatch=16)
    be = make_backend("mjwarp", model, N, *ids(model), decimation=DECIMATION, **cfg.kwargs())
    assert be.deterministic and be._m.opt.deterministic == int(mjw.DeterminismType.ALL)
    assert be.contact_sensor_maxmatch == be._m.opt.contact_sensor_maxmatch == 16
    assert not backend.deterministic and backend._m.opt.deterministic == 0
    assert backend.contact_sensor_maxmatch == 64  # MuJoCo Warp's default
    qpos, qvel = reset_states(model, np.random.default_rng(9))
    targets = np.tile(g1.DEFAULT_JOINT_POS, (N, 1)).astype(np.float32)
    states = []
    for b in (be, backend):
        b.write_state(np.arange(N), qpos, qvel)
        b.step(targets)
        states.append(read(b))
    be.close()
    assert np.abs(states[0].pos_w - states[1].pos_w).max() < 1e-5
    with pytest.raises(ValueError, match="contact_sensor_maxmatch must be an integer >= 1"):
        MjWarpBackend(model, N, *ids(model), device="cpu", contact_sensor_maxmatch=0)


def test_every_overflow_bit_but_the_solver_limits_is_an_overflow_with_a_fix():
    bits = {t for t in mjw.OverflowType if t.value and not t.value & (t.value - 1)}
    solver = {mjw.OverflowType.ITERATIONS, mjw.OverflowType.LS_ITERATIONS}
    assert {t for t in bits if t.value & CAPACITY_OVERFLOW} == bits - solver
    assert set(OVERFLOW_FIXES) == bits - solver


def self_contact_pose(model) -> np.ndarray:
    """qpos (nq,): the keyframe 0.3 m higher, joints drawn in their ranges (seeded) until
    MuJoCo counts at least 4 self contacts."""
    data = mujoco.MjData(model)
    rng = np.random.default_rng(0)
    lo, hi = model.jnt_range[1:, 0], model.jnt_range[1:, 1]
    while True:
        data.qpos[:] = model.key(g1.KEYFRAME).qpos
        data.qpos[2] += 0.3
        data.qpos[7:] = rng.uniform(lo, hi)
        mujoco.mj_forward(model, data)
        if data.sensor("self_contact").data[0] >= 4:
            return data.qpos.copy()


def test_contact_sensor_match_overflow_names_contact_sensor_maxmatch(model):
    """4+ self contacts with room for 2 matches: the message blames contact_sensor_maxmatch,
    not the contact pool; the default 64 holds them."""
    qpos = np.tile(self_contact_pose(model), (N, 1))
    targets = qpos[:, 7:].astype(np.float32)
    for maxmatch in (2, None):
        be = MjWarpBackend(model, N, *ids(model), device="cpu", contact_sensor_maxmatch=maxmatch,
                           on_overflow="raise")  # fmt: skip
        be.write_state(np.arange(N), qpos, np.zeros((N, model.nv)))
        if maxmatch is None:
            be.step(targets)  # no overflow
        else:
            with pytest.raises(CapacityOverflowError) as err:
                be.step(targets)
            msg = str(err.value)
            assert "in envs [0, 1, 2, 3]" in msg
            assert "CONTACT_MATCH: contacts one contact sensor may match per world " in msg
            assert "(contact_sensor_maxmatch=2; not a contact capacity" in msg
            assert "raise contact_sensor_maxmatch" in msg and "raise nconmax" not in msg
        be.close()


@pytest.mark.parametrize("library", ["sb3", "rsl_rl"])
def test_train_cli_refuses_num_threads_with_mjwarp_before_building(tmp_path, capsys, library):
    from gym_motion.cli import main

    out = tmp_path / "run"
    argv = ["train", "--backend", "mjwarp", "--num-threads", "2", "--out", str(out)]
    assert main([*argv, "--library", library]) == 2
    err = capsys.readouterr().err
    assert "--num-threads sets the physics threads of --backend mujoco" in err
    assert "drop --num-threads" in err
    assert not out.exists()


def test_a_failed_capture_warns_and_the_step_runs_eagerly(model, monkeypatch):
    """A capture that raises (as a CUDA driver may for an unsupported operation) changes
    nothing on the device: the step runs eagerly, with the eager bits, and capture stays off."""

    class FailingCapture:
        def __init__(self, **kwargs):
            pass

        def __enter__(self):
            raise RuntimeError("operation not permitted when stream is capturing")

        def __exit__(self, *exc):
            return False

    targets = np.tile(g1.DEFAULT_JOINT_POS, (N, 1)).astype(np.float32)
    eager = MjWarpBackend(model, N, *ids(model), device="cpu", capture=False)
    be = MjWarpBackend(model, N, *ids(model), device="cpu")
    monkeypatch.setattr(wp, "ScopedCapture", FailingCapture)
    be.step(targets)  # eager: the first step loads the kernels
    with pytest.warns(MjWarpFallbackWarning, match="capturing the 'step' launches failed"):
        be.step(targets)
    be.step(targets)
    for _ in range(3):
        eager.step(targets)
    assert not be.capture and be.capture_s == {}
    np.testing.assert_array_equal(be._state_np, eager._state_np)
    be.close()
    eager.close()
