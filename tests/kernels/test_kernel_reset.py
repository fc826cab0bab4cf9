"""rsi_state (reference state initialisation, docs/task.md section 9) against the float64 oracle."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from gym_motion.kernels.reset import rsi_state

from . import oracle as o
from .checks import F32, SIZES, call_unmutated, f32, rng_for

NJ = 29
SPEC_POSE = np.array(
    [[-0.05, 0.05], [-0.05, 0.05], [-0.01, 0.01], [-0.1, 0.1], [-0.1, 0.1], [-0.2, 0.2]]
)
SPEC_VEL = np.array(
    [[-0.5, 0.5], [-0.5, 0.5], [-0.2, 0.2], [-0.52, 0.52], [-0.52, 0.52], [-0.78, 0.78]]
)
# Large ranges make any mix-up of axes, order or frame obvious.
WIDE_POSE = np.array([[-1.0, 2.0], [-0.5, 0.5], [0.0, 0.3], [-1.2, 1.0], [-0.8, 1.1], [-3.1, 3.1]])
WIDE_VEL = np.array([[-2.0, 1.0], [-1.0, 1.0], [-0.5, 0.5], [-3.0, 2.0], [-2.0, 3.0], [-1.0, 4.0]])


def _reference(rng, m):
    lower = rng.uniform(-2.5, -0.1, NJ)
    upper = lower + rng.uniform(0.2, 3.0, NJ)
    return {
        "pos": f32(rng.uniform(-3.0, 3.0, (m, 3))),
        "quat": o.random_unit_quat(rng, (m,)),
        "lin": f32(rng.uniform(-2.0, 2.0, (m, 3))),
        "ang": f32(rng.uniform(-4.0, 4.0, (m, 3))),
        # Reference joints partly outside the soft limits, to exercise the clip.
        "jp": f32(rng.uniform(lower - 0.3, upper + 0.3, (m, NJ))),
        "jv": f32(rng.uniform(-5.0, 5.0, (m, NJ))),
        "limits": f32(np.stack([lower, upper], -1)),
        "unit": rng.random((m, 12 + NJ)),
    }


IDENTITY = (0, 0, 7 + np.arange(NJ), 6 + np.arange(NJ), 7 + NJ, 6 + NJ)


def _run(r, pose_range, vel_range, joint_range, layout=IDENTITY):
    """rsi_state with reference m stored at library frame frames[m], root body 1 of 2, written
    in the columns of `layout` = (root qpos column, root qvel column, joint qpos columns (J,),
    joint qvel columns (J,), nq, nv)."""
    root_q, root_d, joint_q, joint_d, nq, nv = layout
    m = r["pos"].shape[0]
    frames = np.random.default_rng(m).permutation(m + 3)[:m]
    lib = {}
    for key in ("pos", "quat", "lin", "ang", "jp", "jv"):
        body = key not in ("jp", "jv")
        table = np.full((m + 3, *((2,) if body else ()), r[key].shape[-1]), 5.0, np.float32)
        (table[:, 1] if body else table)[frames] = r[key]
        lib[key] = table
    qpos = np.full((m, nq), np.nan)
    qvel = np.full((m, nv), np.nan)
    call_unmutated(
        rsi_state, lib["pos"], lib["quat"], lib["lin"], lib["ang"], lib["jp"], lib["jv"], 1,
        frames, r["unit"], pose_range, vel_range, joint_range, r["limits"], root_q, root_d,
        np.asarray(joint_q, np.int64), np.asarray(joint_d, np.int64), qpos, qvel,
        written=(-1, -2),
    )  # fmt: skip
    return qpos, qvel


@pytest.mark.parametrize("m", SIZES)
def test_rsi_state_with_zero_ranges_reproduces_reference(m):
    rng = rng_for(m, 61)
    r = _reference(rng, m)
    zero6 = np.zeros((6, 2))
    qpos, qvel = _run(r, zero6, zero6, np.zeros(2))
    assert_array_equal(qpos[:, :3], r["pos"])
    # The reference quaternion (unit to float32 precision), renormalised in float64.
    assert_allclose(np.linalg.norm(qpos[:, 3:7], axis=-1), 1.0, rtol=0, atol=1e-12)
    assert_allclose(qpos[:, 3:7], r["quat"], rtol=0, atol=2e-7)
    clipped = np.clip(r["jp"], r["limits"][:, 0], r["limits"][:, 1])
    assert np.any(clipped != r["jp"])
    assert_array_equal(qpos[:, 7:], clipped)
    assert_array_equal(qvel[:, :3], r["lin"])
    # MuJoCo's free-joint angular velocity is in the root body frame: R(q)^T w_world.
    assert_allclose(qvel[:, 3:6], o.rotate_inverse(r["quat"], r["ang"]), **F32)
    assert_allclose(np.linalg.norm(qvel[:, 3:6], axis=-1), np.linalg.norm(r["ang"], axis=-1), **F32)
    assert_array_equal(qvel[:, 6:], r["jv"])


@pytest.mark.parametrize("m", SIZES)
@pytest.mark.parametrize("ranges", ["spec", "wide"])
def test_rsi_state_matches_oracle_from_same_unit_random(m, ranges):
    rng = rng_for(m, 62)
    r = _reference(rng, m)
    pose, vel = (SPEC_POSE, SPEC_VEL) if ranges == "spec" else (WIDE_POSE, WIDE_VEL)
    joint = np.array([-0.1, 0.1])
    qpos, qvel = _run(r, pose, vel, joint)
    root_pos, root_r, lin, ang_b, jp, jv = o.rsi_state(
        r["pos"], r["quat"], r["lin"], r["ang"], r["jp"], r["jv"], r["unit"],
        pose, vel, joint, r["limits"],
    )  # fmt: skip
    assert_allclose(qpos[:, :3], root_pos, **F32)
    assert_allclose(np.linalg.norm(qpos[:, 3:7], axis=-1), 1.0, rtol=0, atol=1e-12)
    # Orientation compared as rotation matrices (the quaternion's sign is free).
    assert_allclose(o.quat_to_rotmat(qpos[:, 3:7]), root_r, rtol=0, atol=2e-7 * 2)
    assert_allclose(qpos[:, 7:], jp, **F32)
    assert np.all(qpos[:, 7:] >= r["limits"][:, 0]) and np.all(qpos[:, 7:] <= r["limits"][:, 1])
    assert_allclose(qvel[:, :3], lin, **F32)
    assert_allclose(qvel[:, 3:6], ang_b, rtol=2e-6, atol=2e-7 * 8)
    assert_array_equal(qvel[:, 6:], jv)
    # Noise stays inside the ranges.
    d = qpos[:, :3] - r["pos"]
    assert np.all(d >= pose[:3, 0] - 1e-6) and np.all(d <= pose[:3, 1] + 1e-6)


@pytest.mark.parametrize("m", SIZES)
def test_rsi_state_writes_each_joint_in_its_model_column(m):
    """A model whose tree orders the joints unlike the robot, with its free joint after two
    other columns: every value lands in its own column, the others stay untouched."""
    rng = rng_for(m, 63)
    r = _reference(rng, m)
    perm = np.random.default_rng(5).permutation(NJ)  # robot joint k -> model slot perm[k]
    root_q, root_d = 2, 1
    joint_q = root_q + 7 + perm
    joint_d = root_d + 6 + perm
    layout = (root_q, root_d, joint_q, joint_d, 7 + NJ + 4, 6 + NJ + 3)
    joint = np.array([-0.1, 0.1])
    qpos, qvel = _run(r, WIDE_POSE, WIDE_VEL, joint, layout)
    ref_qpos, ref_qvel = _run(r, WIDE_POSE, WIDE_VEL, joint)
    assert_array_equal(qpos[:, root_q : root_q + 7], ref_qpos[:, :7])
    assert_array_equal(qpos[:, joint_q], ref_qpos[:, 7:])
    assert_array_equal(qvel[:, root_d : root_d + 6], ref_qvel[:, :6])
    assert_array_equal(qvel[:, joint_d], ref_qvel[:, 6:])
    untouched_q = np.setdiff1d(np.arange(qpos.shape[1]), np.r_[root_q : root_q + 7, joint_q])
    untouched_d = np.setdiff1d(np.arange(qvel.shape[1]), np.r_[root_d : root_d + 6, joint_d])
    assert untouched_q.size == 4 and untouched_d.size == 3
    assert np.isnan(qpos[:, untouched_q]).all() and np.isnan(qvel[:, untouched_d]).all()
