"""The device MDP's Warp kernels on Warp's CPU device: each against the float64 oracle (the
host kernels' tolerance) and against its Numba twin (a few float32 ulps: the same math)."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp
from numpy.testing import assert_allclose, assert_array_equal

from gym_motion.kernels import command as h_command
from gym_motion.kernels import metrics as h_metrics
from gym_motion.kernels import observations as h_obs
from gym_motion.kernels import rewards as h_rewards
from gym_motion.kernels import terminations as h_term
from gym_motion.kernels.device import actions as d_actions
from gym_motion.kernels.device import command as d_command
from gym_motion.kernels.device import episode as d_episode
from gym_motion.kernels.device import metrics as d_metrics
from gym_motion.kernels.device import observations as d_obs
from gym_motion.kernels.device import reset as d_reset
from gym_motion.kernels.device import rewards as d_rewards
from gym_motion.kernels.device import sampling as d_sampling
from gym_motion.kernels.device import terminations as d_term

from . import oracle as o
from .checks import ANCHOR, F32, N_BODIES, ROOT, SIZES, SUBSET, f32, perturb_quat, rng_for
from .test_kernel_command import Lib

# Warp and Numba compile the same float32 operations with different compilers: agreement to
# a few ulps of the values' scale, not bit for bit.
TWIN = {"rtol": 4e-6, "atol": 1e-6}


def launch(kernel, dim: int, *args) -> list:
    """Run `kernel` on Warp's CPU device over `dim` rows with NumPy `args` (integer arrays as
    int32, Warp's ``int``); returns every argument after the launch, arrays as NumPy."""
    wargs = []
    for a in args:
        if isinstance(a, np.ndarray):
            a = a.astype(np.int32) if a.dtype.kind in "iu" else np.ascontiguousarray(a)
            a = wp.array(a, device="cpu")
        wargs.append(a)
    wp.launch(kernel, dim=dim, inputs=wargs, device="cpu")
    return [a.numpy() if isinstance(a, wp.array) else a for a in wargs]


def test_every_device_kernel_module_is_built_without_fused_multiply_adds():
    """Warp fuses a multiply and a following add on CUDA by default (one rounding where the
    host's Numba kernels round twice: a 1-ulp drift in a fifth of the joint targets, then in
    the physics); on Warp's CPU device it never fuses, so only this option holds the twins
    together on a GPU. Every module of `gym_motion.kernels.device` with a kernel sets it."""
    import importlib
    import pkgutil

    import gym_motion.kernels.device as package

    with_kernels = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        if any(isinstance(v, wp.Kernel) for v in vars(module).values()):
            with_kernels.append(info.name)
            assert wp.get_module(module.__name__).options["fuse_fp"] is False, info.name
    assert len(with_kernels) >= 9  # actions, command, episode, metrics, observations, ...


def _bodies(rng, n, noise=0.2):
    ref = f32(rng.uniform(-1.0, 1.0, (n, N_BODIES, 3)) + [0.0, 0.0, 0.8])
    robot = f32(ref + rng.normal(0.0, noise, ref.shape))
    ref_q = o.random_unit_quat(rng, (n, N_BODIES))
    robot_q = perturb_quat(rng, ref_q, 1.0)
    return ref, robot, ref_q, robot_q


@pytest.mark.parametrize("n", SIZES)
def test_observation_kernels_match_the_oracle_and_the_host_kernels(n):
    rng = rng_for(n, 301)
    ref, robot, ref_q, robot_q = _bodies(rng, n)
    lin = f32(rng.standard_normal((n, 3)))
    ang = f32(rng.standard_normal((n, 3)))
    point = f32([0.04525, 0.0, -0.08339])
    width, col = 300, 11
    frame_pos, frame_q = robot[:, ANCHOR], robot_q[:, ANCHOR]
    cases = [
        (d_obs.pos_in_frame, h_obs.pos_in_frame, (frame_pos, frame_q, ref),
         o.pos_in_frame(frame_pos, frame_q, ref)),
        (d_obs.vec_in_frame, h_obs.vec_in_frame, (frame_q, ref),
         o.vec_in_frame(frame_q, ref)),
        (d_obs.twist_in_frame, h_obs.twist_in_frame, (frame_q, lin, ang),
         np.concatenate([o.vec_in_frame(frame_q, lin[:, None]),
                         o.vec_in_frame(frame_q, ang[:, None])], -1)),
        (d_obs.ori_in_frame_6d, h_obs.ori_in_frame_6d, (frame_q, ref_q),
         o.ori_in_frame_6d(frame_q, ref_q)),
        (d_obs.point_vel_in_frame, h_obs.point_vel_in_frame, (frame_q, lin, ang, point),
         o.point_vel_in_frame(frame_q, lin, ang, point)),
    ]  # fmt: skip
    for device_kernel, host_kernel, args, expected in cases:
        buf = f32(rng.standard_normal((n, width)))
        got = launch(device_kernel, n, *args, buf.copy(), col)[-2]
        hi = col + expected.shape[1]
        assert_array_equal(got[:, :col], buf[:, :col])  # only its columns are written
        assert_array_equal(got[:, hi:], buf[:, hi:])
        assert_allclose(got[:, col:hi], expected, rtol=2e-6, atol=2e-7 * 8)
        host = buf.copy()
        host_kernel(*args, host[:, col:hi])
        assert_allclose(got, host, **TWIN)


@pytest.mark.parametrize("n", SIZES)
def test_uniform_noise_is_the_host_kernels_to_float32_rounding(n):
    from gym_motion.managers.observation import NoiseColumns

    rng = rng_for(n, 302)
    obs = f32(rng.standard_normal((n, 40)))
    c = NoiseColumns.of([(slice(2, 5), 0.25), (slice(30, 39), 0.5)], n)
    unit = f32(rng.random(c.size))
    got = launch(d_obs.add_uniform_noise, n, obs.copy(), unit, c.column, c.scale, c.offset,
                 c.width)[0]  # fmt: skip
    host = obs.copy()
    h_obs.add_uniform_noise(host, unit, c.column, c.scale, c.offset, c.width)
    assert_allclose(got, host, **TWIN)  # the host computes (2u - 1) s in float64


@pytest.mark.parametrize("n", SIZES)
def test_column_kernels_are_the_host_terms_numpy_operations(n):
    """The device twins of the host terms that are NumPy operations (copies, the joint offset,
    a term's clip and scale, the self-contact count): bit for bit."""
    rng = rng_for(n, 309)
    j, col, width = 5, 3, 20
    pos, vel = f32(rng.standard_normal((n, j))), f32(rng.standard_normal((n, j)))
    default, bias = f32(rng.standard_normal(j)), f32(rng.normal(0.0, 0.01, (n, j)))
    buf = f32(rng.standard_normal((n, width)))
    got = launch(d_obs.copy_columns, n, vel, buf.copy(), col)[1]
    expected = buf.copy()
    expected[:, col : col + j] = vel
    assert_array_equal(got, expected)
    got = launch(d_obs.reference_joints, n, pos, vel, buf.copy(), col)[2]
    expected[:, col : col + 2 * j] = np.concatenate([pos, vel], 1)
    assert_array_equal(got, expected)
    got = launch(d_obs.joint_offsets, n, pos, default, bias, buf.copy(), col)[3]
    expected = buf.copy()
    np.add(pos - default, bias, out=expected[:, col : col + j])
    assert_array_equal(got, expected)
    buf[0, 4] = np.nan
    for clip, rescale in ((True, True), (True, False), (False, True)):
        got = launch(d_obs.clip_scale, n, buf.copy(), 2, 9, -0.5, 0.75, clip, 1.5, rescale)[0]
        expected = buf.copy()
        view = expected[:, 2:9]
        if clip:
            np.clip(view, np.float32(-0.5), np.float32(0.75), out=view)
        if rescale:
            np.multiply(view, np.float32(1.5), out=view)
        assert_array_equal(got, expected)  # the NaN stays NaN, columns outside untouched
    count = rng.integers(0, 5, n).astype(np.int32)
    got = launch(d_rewards.count_as_value, n, count, np.zeros(n, np.float32))[1]
    assert_array_equal(got, count.astype(np.float32))


def test_clear_episode_rows_zeroes_only_those_rows():
    rng = rng_for(9, 310)
    sums, ret = rng.random((9, 4)), rng.random(9)
    errors, length = rng.random((9, 8)), rng.integers(1, 50, 9).astype(np.int32)
    actions = [f32(rng.standard_normal((9, 29))) for _ in range(3)]
    ids = np.array([1, 6, 7])
    values = (sums, ret, errors, length, *actions)
    args = [wp.array(a, device="cpu") for a in (ids.astype(np.int32), *values)]
    wp.launch(d_episode.clear_episode_rows, dim=ids.size, inputs=args, device="cpu")
    keep = np.setdiff1d(np.arange(9), ids)
    for before, after in zip(values, args[1:], strict=True):
        after = after.numpy()
        assert not after[ids].any()
        assert_array_equal(after[keep], before[keep])


def test_gather_rows_is_the_inverse_of_scatter_rows():
    rng = rng_for(9, 312)
    src = f32(rng.standard_normal((9, 5)))
    ids = np.array([4, 0, 8], np.int32)
    out = launch(d_episode.gather_rows, (3, 5), ids, src, np.zeros((9, 5), np.float32))[-1]
    assert_array_equal(out[:3], src[ids])
    back = launch(d_episode.scatter_rows, (3, 5), ids, out, np.zeros((9, 5), np.float32))[-1]
    assert_array_equal(back[ids], src[ids])


def test_gather_episode_rows_packs_the_sums_of_those_rows():
    rng = rng_for(9, 311)
    sums, ret, errors = rng.random((9, 4)), rng.random(9), rng.random((9, 8))
    ids = np.array([7, 1, 6], np.int32)
    out = launch(d_episode.gather_episode_rows, ids.size, ids, sums, ret, errors,
                 np.zeros((9, 13)))[-1]  # fmt: skip
    assert_array_equal(out[:3], np.concatenate([sums[ids], ret[ids, None], errors[ids]], 1))
    assert not out[3:].any()


@pytest.mark.parametrize("n", SIZES)
def test_reward_kernels_match_the_oracle_and_the_host_kernels(n):
    rng = rng_for(n, 303)
    ref, robot, ref_q, robot_q = _bodies(rng, n)
    a = (ref[:, ANCHOR], robot[:, ANCHOR])
    aq = (ref_q[:, ANCHOR], robot_q[:, ANCHOR])
    cases = [
        (d_rewards.anchor_pos_exp, h_rewards.anchor_pos_exp, (*a, 0.3),
         o.gaussian(o.anchor_pos_sq(*a), 0.3)),
        (d_rewards.anchor_ori_exp, h_rewards.anchor_ori_exp, (*aq, 0.4),
         o.gaussian(o.anchor_ori_sq(*aq), 0.4)),
        (d_rewards.body_pos_exp, h_rewards.body_pos_exp, (ref, robot, SUBSET, 0.3),
         o.gaussian(o.body_pos_sq(ref, robot, SUBSET), 0.3)),
        (d_rewards.body_ori_exp, h_rewards.body_ori_exp, (ref_q, robot_q, SUBSET, 0.4),
         o.gaussian(o.body_ori_sq(ref_q, robot_q, SUBSET), 0.4)),
    ]  # fmt: skip
    action, last = f32(rng.standard_normal((n, 29))), f32(rng.standard_normal((n, 29)))
    limits = f32(np.sort(rng.uniform(-1.5, 1.5, (29, 2)), axis=1))
    cases += [
        (d_rewards.action_rate_l2, h_rewards.action_rate_l2, (action, last),
         o.action_rate_l2(action, last)),
        (d_rewards.joint_limit_violation, h_rewards.joint_limit_violation, (action, limits),
         o.joint_limit_violation(action, limits)),
    ]  # fmt: skip
    for device_kernel, host_kernel, args, expected in cases:
        got = launch(device_kernel, n, *args, np.full(n, np.nan, np.float32))[-1]
        assert_allclose(got, expected, **F32)
        host = np.full(n, np.nan, np.float32)
        host_kernel(*args, host)
        assert_allclose(got, host, **TWIN)


@pytest.mark.parametrize("n", SIZES)
def test_weighing_and_episode_sums_are_the_host_kernels(n):
    """Below 8 terms the device's term-order sum is NumPy's pairwise one: bit for bit."""
    rng = rng_for(n, 304)
    for k in (3, 7):
        raw = f32(rng.standard_normal((k, n)))
        weights = f32(rng.uniform(-10.0, 1.0, k))
        dt = np.float32(0.02)
        weighted, reward = np.zeros((n, k), np.float32), np.zeros(n, np.float32)
        got = launch(d_rewards.weigh_terms, n, raw, weights, float(dt), weighted.copy(),
                     reward.copy())  # fmt: skip
        h_rewards.weigh_terms(raw, weights, dt, weighted, reward)
        assert_array_equal(got[3], weighted)
        assert_array_equal(got[4], reward)
        sums = rng.standard_normal((n, k))
        ret = rng.standard_normal(n)
        cols = np.zeros((k, n), np.float32)
        dev = launch(d_rewards.add_episode_sums, n, weighted, float(dt), sums.copy(), ret.copy(),
                     reward, cols.copy())  # fmt: skip
        h_rewards.add_episode_sums(weighted, dt, sums, ret, reward, cols)
        for got_k, want in ((dev[2], sums), (dev[3], ret), (dev[5], cols)):
            assert_array_equal(got_k, want)


@pytest.mark.parametrize("n", SIZES)
def test_termination_kernels_are_the_host_kernels(n):
    rng = rng_for(n, 305)
    ref, robot, ref_q, robot_q = _bodies(rng, n, noise=0.3)
    since = rng.integers(0, 100, n).astype(np.int32)
    cases = [
        (d_term.height_error_exceeds, h_term.height_error_exceeds, (ref, robot, SUBSET, 0.25),
         o.height_error(ref, robot, SUBSET) > 0.25),
        (d_term.horizontal_error_exceeds, h_term.horizontal_error_exceeds,
         (ref, robot, SUBSET, 0.3, since, 50),
         (o.horizontal_error(ref, robot, SUBSET) > 0.3) & (since >= 50)),
        (d_term.gravity_z_error_exceeds, h_term.gravity_z_error_exceeds,
         (ref_q[:, ANCHOR], robot_q[:, ANCHOR], 0.8),
         o.gravity_z_error(ref_q[:, ANCHOR], robot_q[:, ANCHOR]) > 0.8),
    ]  # fmt: skip
    for device_kernel, host_kernel, args, expected in cases:
        got = launch(device_kernel, n, *args, np.zeros(n, bool))[-1]
        host = np.zeros(n, bool)
        host_kernel(*args, host)
        assert_array_equal(got, host)
        assert_array_equal(got, expected)  # no value lies within float32 rounding of it
    fired = rng.random((3, n)) < 0.3
    active = np.array([True, False, True])
    dev = launch(d_term.any_fired, n, fired.copy(), active, np.zeros(n, bool))
    host_fired, host = fired.copy(), np.zeros(n, bool)
    h_term.any_fired(host_fired, active, host)
    assert_array_equal(dev[0], host_fired)
    assert_array_equal(dev[2], host)


@pytest.mark.parametrize("n", SIZES)
def test_tracking_errors_match_the_oracle_and_the_host_kernel(n):
    rng = rng_for(n, 306)
    ref, robot, ref_q, robot_q = _bodies(rng, n, noise=0.1)
    rel, rel_q = f32(ref + 0.05), perturb_quat(rng, ref_q, 0.3)
    jp, jv = f32(rng.standard_normal((n, 29))), f32(rng.standard_normal((n, 29)))
    rjp, rjv = f32(jp + rng.normal(0, 0.1, jp.shape)), f32(jv + rng.normal(0, 1.0, jv.shape))
    args = (ref, ref_q, rel, rel_q, robot, robot_q, ANCHOR, ROOT, rjp, rjv, jp, jv)
    sums = rng.standard_normal((n, 8))
    dev = launch(d_metrics.tracking_errors, n, *args, np.zeros((n, 8), np.float32), sums.copy())
    expected = o.tracking_errors(*args)
    assert_allclose(dev[-2], expected, **F32)
    out, host_sums = np.zeros((n, 8), np.float32), sums.copy()
    h_metrics.tracking_errors(*args, out, host_sums)
    assert_allclose(dev[-2], out, **TWIN)
    assert_allclose(dev[-1], host_sums, rtol=1e-12, atol=2e-6)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("advance", [False, True])
def test_reference_step_is_the_host_kernel(n, advance):
    """Gathering and advancing are exact copies and integer steps; the re-anchored reference
    agrees with the host kernel to float32 ulps and with the oracle."""
    rng = rng_for(n, 307)
    lib = Lib(rng, [5, 1, 9], n_bodies=20)
    body_ids = np.array([0, 3, 4, 7, 8, 10, 11, 12, 13, 15, 16, 17, 18, 19], np.int64)
    clip_ids = rng.integers(0, 3, n).astype(np.int32)
    frames = (rng.random(n) * lib.lengths[clip_ids]).astype(np.int32)
    robot_pos = f32(rng.uniform(-2.0, 2.0, (n, 3)))
    robot_quat = o.random_unit_quat(rng, (n,))
    env_ids = np.flatnonzero(rng.random(n) < 0.7) if n > 1 else np.array([0])
    nb, nj = body_ids.shape[0], lib.joint_pos.shape[1]
    shapes = ((n, nb, 3), (n, nb, 4), (n, nb, 3), (n, nb, 3), (n, nj), (n, nj), (n, nb, 3),
              (n, nb, 4))  # fmt: skip
    outs = [np.zeros(s, np.float32) for s in shapes]
    head = (lib.starts, lib.lengths)
    lib_arrays = (lib.pos, lib.quat, lib.lin_vel, lib.ang_vel, lib.joint_pos, lib.joint_vel)
    dev = launch(d_command.reference_step, env_ids.shape[0], *head, clip_ids.copy(),
                 frames.copy(), advance, np.zeros(n, bool), *lib_arrays, body_ids, ANCHOR,
                 robot_pos, robot_quat, env_ids, *[x.copy() for x in outs])  # fmt: skip
    h_frames, h_end, h_outs = frames.copy(), np.zeros(n, bool), [x.copy() for x in outs]
    h_command.reference_step(*head, clip_ids, h_frames, advance, h_end, *lib_arrays, body_ids,
                             ANCHOR, robot_pos, robot_quat, env_ids, *h_outs)  # fmt: skip
    assert_array_equal(dev[3], h_frames)
    assert_array_equal(dev[5], h_end)
    for got, want in zip(dev[-8:-2], h_outs[:-2], strict=True):
        assert_array_equal(got, want)
    assert_allclose(dev[-2], h_outs[-2], **TWIN)
    assert_allclose(dev[-1], h_outs[-1], **TWIN)
    rows = env_ids
    pos, quat, _ = o.reanchor_bodies(dev[-8][rows], dev[-7][rows], ANCHOR, robot_pos[rows],
                                     robot_quat[rows])  # fmt: skip
    assert_allclose(dev[-2][rows], pos, rtol=2e-6, atol=2e-6)
    assert_allclose(dev[-1][rows], quat, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("offset", [0, 1])
def test_observed_reference_is_the_host_kernel(n, offset):
    """The observed reference is a gather: the device's equals the host's bit for bit."""
    rng = rng_for(n, 311 + offset)
    lib = Lib(rng, [5, 1, 9], n_bodies=20)
    body_ids = np.array([0, 3, 4, 7, 8, 10, 11, 12, 13, 15, 16, 17, 18, 19], np.int64)
    clip_ids = rng.integers(0, 3, n).astype(np.int32)
    frames = (rng.random(n) * lib.lengths[clip_ids]).astype(np.int32)
    frames[0] = lib.lengths[clip_ids[0]] - 1
    env_ids = np.flatnonzero(rng.random(n) < 0.7) if n > 1 else np.array([0])
    nb, nj = body_ids.shape[0], lib.joint_pos.shape[1]
    shapes = ((n, nb, 3), (n, nb, 4), (n, nb, 3), (n, nb, 3), (n, nj), (n, nj))
    outs = [np.zeros(s, np.float32) for s in shapes]
    lib_arrays = (lib.pos, lib.quat, lib.lin_vel, lib.ang_vel, lib.joint_pos, lib.joint_vel)
    head = (lib.starts, lib.lengths, clip_ids, frames, offset, *lib_arrays, body_ids, env_ids)
    dev = launch(d_command.observed_reference, env_ids.shape[0], *head,
                 *[x.copy() for x in outs])  # fmt: skip
    h_command.observed_reference(*head, *outs)
    for got, want in zip(dev[-6:], outs, strict=True):
        assert_array_equal(got, want)
    assert (outs[4][env_ids] != 0).all()  # written


@pytest.mark.parametrize("n", SIZES)
def test_joint_targets_are_the_host_kernels(n):
    from gym_motion.kernels import actions as h_actions

    rng = rng_for(n, 308)
    scale = f32(rng.uniform(0.07, 0.6, 29))
    offset = f32(rng.uniform(-1.0, 1.0, (n, 29)))
    default = f32(rng.uniform(-0.4, 0.7, 29))
    bias = f32(rng.uniform(-0.01, 0.01, (n, 29)))
    action, last = f32(rng.standard_normal((n, 29))), f32(rng.standard_normal((n, 29)))
    actions = f32(rng.standard_normal((n, 29)))
    held = rng.random(n) < 0.3
    outs = [action, last, np.zeros((n, 29), np.float32), np.zeros((n, 29), np.float32)]
    dev = launch(d_actions.joint_targets, n, scale, offset, default, bias,
                 *[x.copy() for x in outs], actions, held)  # fmt: skip
    host = [x.copy() for x in outs]
    assert h_actions.joint_targets(scale, offset, default, bias, *host, actions, held) == 0
    for got, want in zip(dev[4:8], host, strict=True):
        assert_allclose(got, want, **TWIN)  # a x + b: Warp may fuse the multiply-add
    assert_array_equal(dev[4], host[0])  # the actions themselves are copies
    assert_array_equal(dev[5], host[1])
    bad = actions.copy()
    bad[n // 2, 3] = np.nan
    count = launch(d_actions.count_bad_actions, n, scale, offset, bias, bad,
                   np.zeros(1, np.int32))[-1]  # fmt: skip
    host_bad = h_actions.joint_targets(scale, offset, default, bias, *[x.copy() for x in outs],
                                       bad, held)  # fmt: skip
    assert count[0] == 1 == host_bad


@pytest.mark.parametrize("n", SIZES)
def test_end_step_and_count_down_are_the_host_kernels(n):
    from gym_motion.kernels import episode as h_episode

    rng = rng_for(n, 309)
    flags = [rng.random(n) < p for p in (0.2, 0.05)]
    term_reward = f32(rng.standard_normal(n))
    past_end, held = rng.random(n) < 0.2, rng.random(n) < 0.1
    length = rng.integers(0, 500, n).astype(np.int32)
    offset = rng.integers(0, 5, n).astype(np.int32)
    outs = [np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, np.float32)] + [
        np.zeros(n, bool) for _ in range(3)
    ]
    dev = launch(d_episode.end_step, n, *flags, term_reward, past_end, held, length.copy(),
                 offset, np.array([500], np.int32), *[x.copy() for x in outs],
                 np.zeros(2, np.int32))  # fmt: skip
    host_length, host = length.copy(), [x.copy() for x in outs]
    counts = h_episode.end_step(*flags, term_reward, past_end, held, host_length, offset, 500,
                                *host)  # fmt: skip
    assert_array_equal(dev[5], host_length)
    for got, want in zip(dev[8:14], host, strict=True):
        assert_array_equal(got, want)
    assert tuple(dev[14]) == tuple(counts)
    timer = rng.uniform(-0.1, 0.2, n)
    dev = launch(d_episode.count_down, n, timer.copy(), 0.02, np.zeros(1, np.int32))
    due = h_episode.count_down(timer, 0.02)
    assert_array_equal(dev[0], timer)
    assert dev[2][0] == due


@pytest.mark.parametrize("m", SIZES)
def test_rsi_state_matches_the_oracle_and_the_host_kernel(m):
    from gym_motion.kernels import reset as h_reset

    from .test_kernel_reset import IDENTITY, NJ, WIDE_POSE, WIDE_VEL, _reference

    rng = rng_for(m, 310)
    r = _reference(rng, m)
    frames = np.arange(m)
    lib = [f32(r[k][:, None]) for k in ("pos", "quat", "lin", "ang")] + [f32(r["jp"]),
                                                                          f32(r["jv"])]  # fmt: skip
    joint = np.array([-0.1, 0.1])
    root_q, root_d, joint_q, joint_d, nq, nv = IDENTITY
    args = (*lib, 0, frames, r["unit"], WIDE_POSE, WIDE_VEL, joint, r["limits"], root_q, root_d,
            np.asarray(joint_q, np.int64), np.asarray(joint_d, np.int64))  # fmt: skip
    dev = launch(d_reset.rsi_state, m, *args, np.full((m, nq), np.nan), np.full((m, nv), np.nan))
    qpos, qvel = np.full((m, nq), np.nan), np.full((m, nv), np.nan)
    h_reset.rsi_state(*args, qpos, qvel)
    root_pos, root_r, lin, ang_b, jp, jv = o.rsi_state(
        r["pos"], r["quat"], r["lin"], r["ang"], r["jp"], r["jv"], r["unit"], WIDE_POSE,
        WIDE_VEL, joint, r["limits"],
    )  # fmt: skip
    got_q, got_v = dev[-2], dev[-1]
    assert got_q.dtype == got_v.dtype == np.float64
    # the oracle reads the float64 reference the library's float32 arrays round
    assert_allclose(got_q[:, :3], root_pos, rtol=2e-6, atol=1e-6)
    assert_allclose(o.quat_to_rotmat(got_q[:, 3:7]), root_r, rtol=0, atol=1e-6)
    assert_allclose(got_q[:, 7:], jp, rtol=2e-6, atol=1e-6)
    assert_allclose(got_v[:, :3], lin, rtol=2e-6, atol=1e-6)
    assert_allclose(got_v[:, 3:6], ang_b, rtol=2e-6, atol=4e-6)
    assert_allclose(got_v[:, 6:], jv, rtol=2e-6, atol=1e-6)
    # the host kernel's float64 operations: equal to a few float64 ulps (sin, cos, sqrt)
    assert_allclose(got_q, qpos, rtol=1e-14, atol=1e-14)
    assert_allclose(got_v, qvel, rtol=1e-14, atol=1e-14)
    assert got_q.shape == (m, 7 + NJ)


def test_point_rows_points_reset_rows_at_their_starts():
    starts = np.array([0, 120, 160], np.int64)  # three clips of 120, 40, 301 frames
    rows = np.array([4, 0, 2])
    start = np.array([[2, 300], [0, 5], [1, 0]], np.int32)
    clip_ids, frames = np.full(6, -1, np.int32), np.full(6, -1, np.int32)
    *_, got_clips, got_frames, clip_end, lib_frames = launch(
        d_reset.point_rows, 3, rows, start, starts, clip_ids, frames, np.ones(6, bool),
        np.zeros(3, np.int64),
    )  # fmt: skip
    assert_array_equal(got_clips, [0, -1, 1, -1, 2, -1])
    assert_array_equal(got_frames, [5, -1, 0, -1, 300, -1])
    assert_array_equal(clip_end, [False, True, False, True, False, True])
    assert_array_equal(lib_frames, [460, 5, 120])


def test_the_adaptive_sampler_kernels_are_the_host_kernels():
    """The failure EMA bit for bit; the mixture's draws the host's for the same uniforms."""
    from gym_motion.kernels import sampling as h_sampling

    rng = np.random.default_rng(311)
    lengths = np.array([120, 40, 301], np.int64)
    bin_counts = np.array([3, 1, 7], np.int64)
    bin_starts = np.concatenate([[0], np.cumsum(bin_counts)[:-1]]).astype(np.int64)
    nbins = int(bin_counts.sum())
    bin_clip = np.repeat(np.arange(3), bin_counts).astype(np.int64)
    bin_local = np.concatenate([np.arange(c) for c in bin_counts]).astype(np.int64)
    ema = rng.random(nbins) * 0.01
    for _ in range(3):  # steps of the EMA
        k = 257
        clip_ids = rng.integers(0, 3, k).astype(np.int32)
        frames = (rng.random(k) * (lengths[clip_ids] - 1)).astype(np.int32)
        failed = rng.random(k) < 0.2
        *_, counts, first_bad = launch(d_sampling.count_failures, k, clip_ids, frames, failed,
                                       bin_starts, bin_counts, lengths, np.zeros(nbins),
                                       np.array([k], np.int32))  # fmt: skip
        assert first_bad[0] == k  # no clip id out of range
        dev_ema = launch(d_sampling.fold_counts, nbins, ema.copy(), 1e-3, counts)[0]
        assert h_sampling.fold_failures(ema, 1e-3, clip_ids, frames, failed, bin_starts,
                                        bin_counts, lengths, np.zeros(nbins)) == -1  # fmt: skip
        assert_array_equal(dev_ema, ema)
    bad = clip_ids.copy()
    bad[[40, 7]] = (3, -1)  # out of [0, C): skipped, the first position reported
    failed[:] = True
    *_, counts, first_bad = launch(
        d_sampling.count_failures,
        k,
        bad,
        frames,
        failed,
        bin_starts,
        bin_counts,
        lengths,
        np.zeros(nbins),
        np.array([k], np.int32),
    )
    assert first_bad[0] == 7 and counts.sum() == k - 2
    cdf = launch(d_sampling.mixture_cdf, 1, ema, 0.1, np.zeros(nbins))[-1]
    u_bin, u_frame = rng.random(500), rng.random(500)
    dev = launch(d_sampling.draw_from_cdf, 500, cdf, u_bin, u_frame, bin_clip, bin_local,
                 bin_counts, lengths, np.zeros(500, np.int32), np.zeros(500, np.int32))  # fmt: skip
    clip_out, frame_out = np.zeros(500, np.int32), np.zeros(500, np.int32)
    h_sampling.draw_adaptive(ema, float(np.sum(ema)), 0.1, u_bin, u_frame, bin_clip, bin_local,
                             bin_counts, lengths, np.zeros(nbins), clip_out, frame_out)  # fmt: skip
    assert_array_equal(dev[-2], clip_out)
    assert_array_equal(dev[-1], frame_out)
    host_p = np.zeros(nbins)
    h_sampling.bin_probabilities(ema, float(np.sum(ema)), 0.1, host_p)
    assert_allclose(np.diff(cdf, prepend=0.0), host_p / host_p.sum(), rtol=1e-12, atol=1e-15)
