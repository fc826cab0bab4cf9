"""TrackingVecEnv: Gymnasium contract, step semantics, and the anchors' known failures."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import gym_motion  # noqa: F401  (registers the ids)
from gym_motion.backends.threads import available_cpus
from gym_motion.envs import (
    TrackingEnvCfg,
    TrackingVecEnv,
    eval_cfg,
    no_state_estimation,
    with_anchor_velocity,
    with_obs_noise,
)
from gym_motion.kernels.metrics import TRACKING_ERRORS
from gym_motion.managers import events
from gym_motion.robots import g1

# Backend-agnostic tests run on both backends (MuJoCo Warp on its CPU device without a GPU:
# slow, so only the tests below that pin down semantics are parametrised).
BACKENDS = ("mujoco", "mjwarp")

TRACKING_TERMS = (
    "anchor_pos",
    "anchor_ori",
    "body_pos",
    "body_ori",
    "body_lin_vel",
    "body_ang_vel",
)


def make(n=4, **kw) -> TrackingVecEnv:
    kw.setdefault("seed", 0)
    return TrackingVecEnv(num_envs=n, **kw)


def zeros(env) -> np.ndarray:
    return np.zeros((env.num_envs, g1.NUM_JOINTS), np.float32)


def rotate_inverse(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(N, 3) float64 ``R(q)^T v`` (``q* v q``) of (N, 4) wxyz quaternions and (N, 3) vectors."""
    q, v = np.asarray(q, np.float64), np.asarray(v, np.float64)
    u = -q[:, 1:]
    t = 2.0 * np.cross(u, v)
    return v + q[:, :1] * t + np.cross(u, t)


def reference_qpos_qvel(env: TrackingVecEnv, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo qpos/qvel of library frames `rows` (the clip's own root and joint state), in the
    env model's columns."""
    lib = env.library
    root = lib.body_names.index(g1.ROOT_BODY)
    quat = lib.body_quat_w[rows, root].astype(np.float64)
    ang_local = rotate_inverse(quat, lib.body_ang_vel_w[rows, root])
    qpos = np.concatenate([lib.body_pos_w[rows, root], quat, lib.joint_pos[rows]], axis=1)
    qvel = np.concatenate([lib.body_lin_vel_w[rows, root], ang_local, lib.joint_vel[rows]], axis=1)
    return env.layout.model_qpos(qpos), env.layout.model_qvel(qvel)


@pytest.mark.parametrize("backend", BACKENDS)
def test_spaces_shapes_and_dtypes(backend):
    env = make(3, backend=backend, obs_mode="dict")
    obs, info = env.reset()
    assert obs["policy"].shape == (3, 160) and obs["critic"].shape == (3, 286)
    assert env.single_action_space.shape == (29,)
    obs, rew, term, trunc, info = env.step(zeros(env))
    for o in obs.values():
        assert o.dtype == np.float32 and np.isfinite(o).all()
    assert rew.dtype == np.float32 and term.dtype == np.bool_ and trunc.dtype == np.bool_
    env.close()
    env = make(2, backend=backend, state_estimation=False)
    assert env.reset()[0].shape == (2, 154)
    env.close()


def test_make_vec_and_make():
    envs = gym.make_vec(
        "GymMotion/G1-Tracking-v0", num_envs=3, vectorization_mode="vector_entry_point"
    )
    obs, _ = envs.reset(seed=1)
    assert obs.shape == (3, 160)
    assert envs.unwrapped.max_episode_steps == 500
    envs.close()
    env = gym.make("GymMotion/G1-Tracking-NoStateEst-v0")
    obs, _ = env.reset(seed=1)
    assert obs.shape == (154,)
    obs, r, term, trunc, info = env.step(env.action_space.sample() * 0)
    assert isinstance(r, float) and "reward/body_pos" in info
    env.close()


def test_command_observation_is_the_reference_right_after_reset():
    env = make(
        5,
        cfg=eval_cfg(
            replace(TrackingEnvCfg(), sampling=replace(TrackingEnvCfg().sampling, mode="uniform"))
        ),
    )
    obs, _ = env.reset()
    rows = env.command.reference_rows(np.arange(5))
    np.testing.assert_array_equal(obs[:, :29], env.library.joint_pos[rows])
    np.testing.assert_array_equal(obs[:, 29:58], env.library.joint_vel[rows])
    assert np.abs(obs[:, :29]).sum() > 0
    env.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_replaying_the_reference_gives_full_tracking_reward(backend):
    env = make(3, backend=backend, cfg=eval_cfg())
    env.reset()
    step = env.backend.step

    def replay(targets):  # physics, then the clip's own next state
        step(targets)
        nxt = np.minimum(env.command.frames + 1, env.library.lengths[env.command.clip_ids] - 1)
        rows = env.library.starts[env.command.clip_ids] + nxt
        env.backend.write_state(np.arange(3), *reference_qpos_qvel(env, rows))

    env.backend.step = replay
    names = env.rewards.names
    for _ in range(60):
        _, _, term, trunc, info = env.step(zeros(env))
        assert not term.any()
        for t in TRACKING_TERMS:
            w = env.cfg.rewards[t].weight
            np.testing.assert_allclose(info[f"reward/{t}"] / w, 1.0, atol=1e-5, err_msg=t)
        np.testing.assert_allclose(env.command.errors, 0.0, atol=1e-5)
    assert set(TRACKING_TERMS) <= set(names)
    env.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_clip_end_reinitialises_with_post_teleport_kinematics(backend):
    env = make(2, backend=backend, cfg=eval_cfg())
    env.reset()
    last = env.library.lengths[0] - 1
    env.command.frames[:] = last  # next advance runs past the end
    obs, rew, term, trunc, info = env.step(zeros(env))
    assert info["clip_end"].all() and not (term | trunc).any()
    assert (env.command.frames == 0).all()  # "start" sampling re-initialises at frame 0
    s = env.state
    a = s.anchor
    # Re-anchored reference sits at the robot's fresh anchor (x, y) and the reference height.
    np.testing.assert_allclose(s.ref_rel_pos_w[:, a, :2], s.robot.pos_w[:, a, :2], atol=1e-6)
    np.testing.assert_allclose(s.ref_rel_pos_w[:, a, 2], s.ref.pos_w[:, a, 2], atol=1e-6)
    # The robot was written at the reference start pose (no reset noise in eval_cfg).
    np.testing.assert_allclose(s.robot.pos_w, s.ref.pos_w, atol=1e-5)
    env.close()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_reward_logs_and_episode_results_survive_autoreset(mode, backend):
    env = make(4, backend=backend, autoreset_mode=mode, max_episode_steps=5)
    env.reset()
    for _ in range(5):
        obs, rew, term, trunc, info = env.step(zeros(env))
    done = term | trunc
    assert done.all()
    for name in env.rewards.names:
        assert info[f"reward/{name}"].shape == (4,) and info[f"_reward/{name}"].all()
        np.testing.assert_array_equal(info[f"_final/reward/{name}"], done)
    np.testing.assert_array_equal(info["final/length"], 5)
    for e in TRACKING_ERRORS:
        assert np.isfinite(info[f"final/error/{e}"]).all()
    causes = [k for k in info if k.startswith("final/termination/")]
    fired = np.stack([info[k] for k in causes])
    assert (fired.sum(axis=0) >= 1).all()  # every finished episode names its cause
    assert "episode" not in info
    if mode is AutoresetMode.NEXT_STEP:
        obs, rew, term, trunc, info = env.step(zeros(env))
        assert (rew == 0).all() and not (term | trunc).any() and (env.episode_length == 0).all()
        assert not info["_reward/body_pos"].any()  # the autoreset step is no step of theirs
    env.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_same_step_final_obs_is_the_pre_reset_state(backend):
    cfg = replace(eval_cfg(), obs_noise=False)
    env = make(
        3, backend=backend, cfg=cfg, autoreset_mode=AutoresetMode.SAME_STEP, max_episode_steps=4
    )
    probe = make(
        3, backend=backend, cfg=cfg, autoreset_mode=AutoresetMode.DISABLED, max_episode_steps=4
    )
    env.reset(seed=3)
    probe.reset(seed=3)
    for _ in range(4):
        obs, *_, info = env.step(zeros(env))
        pobs, *_ = probe.step(zeros(probe))
    assert info["_final_obs"].all()
    np.testing.assert_array_equal(info["final_obs"], pobs)
    assert not np.array_equal(obs, pobs)  # the returned obs are of the new episodes
    env.close()
    probe.close()


def test_disabled_mode_resets_only_masked_rows_and_leaves_options_alone():
    env = make(4, autoreset_mode="disabled", cfg=eval_cfg())
    env.reset()
    for _ in range(3):
        env.step(zeros(env))
    mask = np.array([True, False, True, False])
    options = {"reset_mask": mask}
    env.reset(options=options)
    assert options == {"reset_mask": mask}
    np.testing.assert_array_equal(env.episode_length, [0, 3, 0, 3])
    env.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_nan_in_one_env_terminates_only_that_env(backend, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo logs the blow-up to ./MUJOCO_LOG.TXT
    env = make(4, backend=backend, autoreset_mode=AutoresetMode.SAME_STEP)
    env.reset()
    env.step(zeros(env))
    qpos, qvel = np.zeros((1, env.model.nq)), np.zeros((1, env.model.nv))
    qpos[0, 3] = 1.0
    qvel[0, 6] = 1e30  # a first-joint velocity of 1e30 rad/s: the state blows up
    env.backend.write_state(np.array([2]), qpos, qvel)
    obs, rew, term, trunc, info = env.step(zeros(env))
    assert term[2] and rew[2] == 0.0 and info["final/termination/nonfinite"][2]
    assert not info["final/termination/nonfinite"][[0, 1, 3]].any()
    assert np.isfinite(obs).all() and np.isfinite(info["final_obs"]).all()
    assert env.nonfinite_count == 1
    for _ in range(3):
        obs, *_ = env.step(zeros(env))
        assert np.isfinite(obs).all()
    env.close()


def test_action_history_resets_per_env():
    env = make(3, autoreset_mode="disabled", cfg=eval_cfg())
    env.reset()
    env.step(np.ones((3, 29), np.float32))
    env.reset(options={"reset_mask": np.array([False, True, False])})
    np.testing.assert_array_equal(env.state.action[1], 0.0)
    np.testing.assert_array_equal(env.state.action[0], 1.0)
    _, _, _, _, info = env.step(np.ones((3, 29), np.float32))
    rate = info["reward/action_rate"]
    assert rate[0] == 0.0 and rate[1] < 0.0  # row 1 moved from a fresh zero action


def test_returned_arrays_belong_to_the_caller():
    env = make(2)
    obs0, _ = env.reset()
    keep = obs0.copy()
    obs1, rew1, term1, trunc1, info1 = env.step(zeros(env))
    keep1 = (obs1.copy(), rew1.copy(), info1["reward/body_pos"].copy())
    env.step(np.random.default_rng(0).normal(size=(2, 29)).astype(np.float32))
    np.testing.assert_array_equal(obs0, keep)
    np.testing.assert_array_equal(obs1, keep1[0])
    np.testing.assert_array_equal(rew1, keep1[1])
    np.testing.assert_array_equal(info1["reward/body_pos"], keep1[2])
    env.close()


def test_bad_actions_are_refused_with_the_offending_rows():
    env = make(3)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(zeros(env))
    env.reset()
    with pytest.raises(ValueError, match=r"shape \(3, 29\)"):
        env.step(np.zeros((3, 28), np.float32))
    a = zeros(env)
    a[1, 4] = np.nan
    with pytest.raises(ValueError, match=r"\[1\]"):
        env.step(a)
    # finite as float64, infinite in the env's float32 action (and observation)
    with pytest.raises(ValueError, match=r"envs \[0, 2\] are not finite \(as float32"):
        env.step(np.where(np.arange(3)[:, None] == 1, 0.0, np.full((3, 29), 1e300)))
    huge = zeros(env)
    huge[2, 0] = 1e20  # finite float32, but a target MuJoCo would replace by zero controls
    with pytest.raises(ValueError, match=r"envs \[2\] give joint targets beyond \+-1e\+10"):
        env.step(huge)
    obs, reward, *_ = env.step(zeros(env))  # nothing of the refused steps was kept
    assert np.isfinite(obs).all() and np.isfinite(reward).all()
    assert (env.state.last_action == 0.0).all()
    env.close()


def test_same_seed_same_actions_bitwise_identical():
    n, steps = 64, 1000
    actions = np.random.default_rng(7).normal(0, 0.5, size=(steps, n, 29)).astype(np.float32)
    runs = []
    for _ in range(2):
        env = make(n, seed=None, max_episode_steps=100)
        obs, _ = env.reset(seed=123)
        h_obs, h_rew = [obs], []
        for t in range(steps):
            obs, rew, *_ = env.step(actions[t])
            h_obs.append(obs)
            h_rew.append(rew)
        runs.append((np.stack(h_obs), np.stack(h_rew)))
        env.close()
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def test_gymnasium_wrappers_work_on_top():
    from gymnasium.wrappers.vector import (
        NormalizeObservation,
        NormalizeReward,
        RecordEpisodeStatistics,
    )

    env = RecordEpisodeStatistics(
        NormalizeReward(NormalizeObservation(make(3, max_episode_steps=6)))
    )
    env.reset(seed=0)
    seen = False
    for _ in range(8):
        obs, rew, term, trunc, info = env.step(np.zeros((3, 29), np.float32))
        assert np.isfinite(obs).all() and np.isfinite(rew).all()
        seen |= "episode" in info
    assert seen
    env.close()


def test_the_push_event_adds_world_frame_root_velocity_and_keeps_the_pose():
    env = make(3, cfg=eval_cfg())
    env.reset()
    env.step(zeros(env))
    r, root = env.state.robot, env.state.root
    # turn row 1 by 90 degrees of yaw and tilt it, so that world and body frames differ
    qpos = np.zeros((1, env.model.nq))
    qpos[0, :3] = r.pos_w[1, root]
    qpos[0, 3:7] = [np.cos(0.7), 0.2, 0.1, np.sin(0.7)]
    qpos[0, 3:7] /= np.linalg.norm(qpos[0, 3:7])
    qpos[0, 7:] = r.joint_pos[1]
    qvel = np.zeros((1, env.model.nv))
    qvel[0, 3:6] = [0.5, -0.3, 0.2]
    env.backend.write_state(np.array([1]), qpos, qvel)
    env.backend.copy_body_state_w(r)
    before = {
        k: getattr(r, k)[:, root].copy() for k in ("pos_w", "quat_w", "lin_vel_w", "ang_vel_w")
    }
    kick = np.array([[0.3, -0.2, 0.1, 0.4, -0.5, 0.6]])
    point = tuple((k, k) for k in kick[0])  # a range of one value: the kick itself
    events.push_root(env.events.ctx, np.array([1]), np.random.default_rng(0), point)
    env.backend.copy_body_state_w(r)
    np.testing.assert_allclose(r.pos_w[1, root], before["pos_w"][1], atol=1e-6)
    np.testing.assert_allclose(r.quat_w[1, root], before["quat_w"][1], atol=1e-6)
    np.testing.assert_allclose(
        r.lin_vel_w[1, root], before["lin_vel_w"][1] + kick[0, :3], atol=1e-5
    )
    np.testing.assert_allclose(
        r.ang_vel_w[1, root], before["ang_vel_w"][1] + kick[0, 3:], atol=1e-5
    )
    np.testing.assert_array_equal(r.lin_vel_w[[0, 2], root], before["lin_vel_w"][[0, 2]])
    env.close()


def test_reset_noise_scale_scales_the_rsi_offsets():
    base = TrackingEnvCfg()
    cfg = replace(eval_cfg(), reset=base.reset, sampling=replace(base.sampling, mode="uniform"))
    env = make(16, cfg=cfg)
    root = env.state.root
    offsets = {}
    for scale in (1.0, 0.5, 0.0):
        env.reset_noise_scale = scale
        env.reset(seed=3)
        rows = env.command.reference_rows(np.arange(16))
        r = env.state.robot
        offsets[scale] = (
            r.pos_w[:, root] - env.library.body_pos_w[rows, root],
            r.lin_vel_w[:, root] - env.library.body_lin_vel_w[rows, root],
        )
    for full, half, none in zip(offsets[1.0], offsets[0.5], offsets[0.0], strict=True):
        assert np.abs(full).max() > 1e-3  # the default ranges move the root
        np.testing.assert_allclose(half, 0.5 * full, atol=2e-6)
        np.testing.assert_allclose(none, 0.0, atol=1e-6)
    assert env.reset_noise_scale == 0.0
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="reset_noise_scale"):
            env.reset_noise_scale = bad
    env.close()


def test_the_horizontal_terms_grace_counts_from_each_perturbation():
    """`anchor_horizontal` with a grace: a 1 mm term (which the reset noise passes at once)
    fires on the grace's step after the episode start, never before; pushes more often than
    the grace keep it from firing; `steps_since_perturbation` counts control steps from each."""
    from gym_motion.training import train_env_cfg

    cfg = replace(train_env_cfg(anchor_horizontal_termination=1e-3,
                                anchor_horizontal_grace_s=0.1), events={})  # fmt: skip
    assert cfg.terminations["anchor_horizontal"].params == {"threshold": 1e-3, "grace_steps": 5}
    env = make(4, cfg=cfg, autoreset_mode="same_step")
    env.reset(seed=3)
    assert (env.state.steps_since_perturbation == 0).all()
    for step in range(1, 6):
        _, _, term, _, info = env.step(zeros(env))
        if step < 5:
            assert not term.any()
            assert (env.state.steps_since_perturbation == step).all()
    assert term.all() and info["final/termination/anchor_horizontal"].all()
    assert (env.state.steps_since_perturbation == 0).all()  # the next episodes' starts
    env.close()
    push = events.EventTermCfg(events.push_root, "interval",
                               {"velocity_range": ((-0.5, 0.5),) * 2 + ((0.0, 0.0),) * 4},
                               interval_s=(0.19, 0.19))  # fmt: skip
    graced = train_env_cfg(anchor_horizontal_termination=1e-3, anchor_horizontal_grace_s=0.3)
    pushed = replace(graced, events={"push": push})
    env = make(4, cfg=pushed, autoreset_mode="same_step")
    env.reset(seed=3)
    counts = []
    for _ in range(30):
        _, _, term, _, info = env.step(zeros(env))
        assert not info.get("final/termination/anchor_horizontal", np.zeros(4, bool)).any()
        counts.append(env.state.steps_since_perturbation.copy())
    assert max(int(c.max()) for c in counts) == 9  # zeroed by the push on every tenth step
    env.close()
    with pytest.raises(ValueError, match="grace_s needs anchor_horizontal_termination"):
        train_env_cfg(anchor_horizontal_grace_s=1.0)
    with pytest.raises(ValueError, match="grace_s must be >= 0 s"):
        train_env_cfg(anchor_horizontal_termination=0.2, anchor_horizontal_grace_s=-1.0)


def test_an_inactive_termination_neither_ends_episodes_nor_logs():
    """A term switched off (the training curriculum's `inactive_terminations`) changes nothing
    but its own firing: a 1 mm anchor-horizontal term ends every episode on its first step when
    on, and off the steps match those of the task without it, bit for bit."""
    from gym_motion.training import train_env_cfg

    base = replace(train_env_cfg(), events={})
    with_term = replace(train_env_cfg(anchor_horizontal_termination=1e-3), events={})
    # episodes truncate every 5 steps, so the steps' infos carry every term's final/ log
    envs = {"without": make(4, cfg=base, max_episode_steps=5),
            "off": make(4, cfg=with_term, max_episode_steps=5)}  # fmt: skip
    envs["off"].inactive_terminations = ["anchor_horizontal"]
    assert envs["off"].inactive_terminations == ("anchor_horizontal",)
    out = {}
    for name, env in envs.items():
        env.reset(seed=5)
        out[name] = [env.step(zeros(env)) for _ in range(20)]
    for a, b in zip(out["without"], out["off"], strict=True):
        for x, y in zip(a[:4], b[:4], strict=True):
            x, y = (x, y) if isinstance(x, dict) else ({"": x}, {"": y})
            assert all(x[k].tobytes() == y[k].tobytes() for k in x)
    logged = [step[4].get("final/termination/anchor_horizontal") for step in out["off"]]
    assert sum(v is not None for v in logged) == 3  # each truncation (autoreset between) logs it...
    assert not any(v is not None and v.any() for v in logged)  # ...as never fired
    env = envs["off"]
    env.inactive_terminations = ()
    env.reset(seed=5)
    _, _, term, _, info = env.step(zeros(env))
    assert term.all() and info["final/termination/anchor_horizontal"].all()
    with pytest.raises(ValueError, match="no termination term named \\['anchor_speed'\\]"):
        env.inactive_terminations = ["anchor_speed"]
    for env in envs.values():
        env.close()


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux affinity")
def test_cpu_ids_give_the_process_its_cpus_back_on_close():
    cpus = available_cpus()
    if len(cpus) < 2:
        pytest.skip("needs 2 CPUs")
    before = os.sched_getaffinity(0)
    try:
        env = make(16, backend_kwargs={"cpu_ids": [cpus[0]]})
        env.reset(seed=0)
        env.step(zeros(env))
        assert os.sched_getaffinity(0) == {cpus[0]}
        env.close()
        assert os.sched_getaffinity(0) == before
        later = make(16)  # every CPU of the process, not the closed env's one
        assert later.backend.num_threads == len(cpus)
        later.close()
        other = make(16, backend_kwargs={"cpu_ids": [cpus[1]]})  # not refused
        assert other.backend.thread_budget.cpus == (cpus[1],)
        other.close()
        assert os.sched_getaffinity(0) == before
    finally:
        os.sched_setaffinity(0, before)


def test_policy_obs_noise_sets_the_half_width_of_a_terms_training_noise():
    """The override is the noise the policy observation gets: anchor_pos within +-0.01 m of
    the noise-free value (the task's 0.25 m otherwise), other terms at the task's widths."""
    groups = TrackingEnvCfg().observations["policy"]
    start = dict(zip(groups, np.cumsum([0] + [t.dim for t in groups.values()])[:-1], strict=True))
    pos = slice(start["anchor_pos"], start["anchor_pos"] + 3)
    vel = slice(start["joint_vel"], start["joint_vel"] + groups["joint_vel"].dim)
    quiet = eval_cfg()  # no noise
    noisy = with_obs_noise(replace(quiet, obs_noise=True), {"anchor_pos": 0.01})
    env, probe, off = make(64, cfg=noisy), make(64, cfg=quiet), make(64, cfg=eval_cfg(noisy))
    obs, _ = env.reset(seed=5)
    clean, _ = probe.reset(seed=5)
    np.testing.assert_array_equal(off.reset(seed=5)[0], clean)  # evaluation adds none of it
    for o, c in ((obs, clean), (env.step(zeros(env))[0], probe.step(zeros(probe))[0])):
        d_pos, d_vel = np.abs(o[:, pos] - c[:, pos]), np.abs(o[:, vel] - c[:, vel])
        assert 0.005 < d_pos.max() <= 0.01 + 1e-6
        assert 0.25 < d_vel.max() <= 0.5 + 1e-5
    for e in (env, probe, off):
        e.close()
    assert sum(t.dim for t in no_state_estimation(noisy).observations["policy"].values()) == 154
    # the keyword of configs written before observation groups gives the same groups
    assert (
        TrackingEnvCfg(policy_obs_noise={"anchor_pos": 0.01}).observations
        == with_obs_noise(TrackingEnvCfg(), {"anchor_pos": 0.01}).observations
    )
    with pytest.raises(ValueError, match=r"no term 'anchor'.*'anchor_pos'"):
        with_obs_noise(TrackingEnvCfg(), {"anchor": 0.05})
    with pytest.raises(ValueError, match=r"with_obs_noise\['anchor_pos'\].*>= 0"):
        with_obs_noise(TrackingEnvCfg(), {"anchor_pos": -0.1})


def test_run_folders_written_before_observation_groups_load_their_observations():
    """A config.json with the old fields (state_estimation, anchor_velocity_obs,
    policy_obs_noise) and no observation groups rebuilds the groups those fields gave."""
    text = json.loads(TrackingEnvCfg().to_json())
    del text["observations"]
    text |= {"state_estimation": False, "anchor_velocity_obs": True,
             "policy_obs_noise": {"anchor_vel": 0.1}}  # fmt: skip
    cfg = TrackingEnvCfg.from_json(json.dumps(text))
    want = with_obs_noise(with_anchor_velocity(no_state_estimation(TrackingEnvCfg())),
                          {"anchor_vel": 0.1})  # fmt: skip
    assert cfg == want
    assert [sum(t.dim for t in g.values()) for g in cfg.observations.values()] == [160, 292]
    assert cfg.state_estimation is False and cfg.anchor_velocity_obs is True
    # an override of a term the legacy flags leave out is kept unapplied, as it was
    old = {**text, "policy_obs_noise": {"anchor_pos": 0.01, "anchor_vel": 0.1}}
    assert TrackingEnvCfg.from_json(json.dumps(old)) == want
    # and back: the groups the old defaults gave, in the task's order
    again = TrackingEnvCfg(state_estimation=True, anchor_velocity_obs=False,
                           observations=cfg.observations)  # fmt: skip
    assert list(again.observations["policy"]) == list(TrackingEnvCfg().observations["policy"])


def test_clip_and_scale_of_an_observation_term_follow_its_noise():
    """A term's clip and scale are applied after its noise, to its columns only: the
    observation equals NumPy's clip then multiply of the unprocessed one, bit for bit."""
    base = TrackingEnvCfg()
    policy = dict(base.observations["policy"])
    policy["joint_vel"] = replace(policy["joint_vel"], clip=(-0.3, 0.2), scale=0.5)
    processed = replace(base, observations={**base.observations, "policy": policy})
    start = np.cumsum([0] + [t.dim for t in policy.values()])
    i = list(policy).index("joint_vel")
    cols = slice(start[i], start[i + 1])
    env, plain = make(16, cfg=processed), make(16, cfg=base)
    for o, p in ((env.reset(seed=2)[0], plain.reset(seed=2)[0]),
                 (env.step(zeros(env))[0], plain.step(zeros(plain))[0])):  # fmt: skip
        want = np.clip(p[:, cols], np.float32(-0.3), np.float32(0.2)) * np.float32(0.5)
        np.testing.assert_array_equal(o[:, cols], want)
        assert np.abs(p[:, cols]).max() > 0.3  # the clip bites
        np.testing.assert_array_equal(np.delete(o, np.r_[cols], 1), np.delete(p, np.r_[cols], 1))
    space = env.single_observation_space  # clipped columns: clip x scale
    np.testing.assert_array_equal(space.low[cols], np.float32(-0.15))
    np.testing.assert_array_equal(space.high[cols], np.float32(0.1))
    assert np.isinf(np.delete(space.low, np.r_[cols])).all()
    assert all(space.contains(row) for row in o)
    env.close()
    plain.close()
    with pytest.raises(ValueError, match=r"ObsTermCfg.clip must have low <= high"):
        replace(policy["joint_vel"], clip=(1.0, -1.0))
    with pytest.raises(ValueError, match=r"ObsTermCfg.scale must be a finite number"):
        replace(policy["joint_vel"], scale=float("nan"))


@pytest.mark.parametrize(("term", "dim"), [("joint_pos", 23), ("command", 29)])
def test_a_built_in_term_of_the_wrong_width_is_refused_by_name(term, dim):
    """A built-in term whose dim is not its width for the robot (another robot's layout, say
    G1's 29 joints on a 23-joint robot) is refused at build, naming the group and term,
    before a kernel can write past its columns."""
    base = TrackingEnvCfg()
    policy = dict(base.observations["policy"])
    policy[term] = replace(policy[term], dim=dim)
    cfg = replace(base, observations={**base.observations, "policy": policy})
    with pytest.raises(
        ValueError,
        match=rf"observation term policy/{term}: writes \d+ values "
        r"per env for this robot \(29 joints.*ObsTermCfg.dim is " + str(dim),
    ):
        make(4, cfg=cfg)


def test_anchor_velocity_obs_appends_the_reference_anchor_twist_to_both_groups():
    """``anchor_velocity_obs``: 6 more values at the end of the policy and critic groups, the
    observed reference anchor's linear and angular velocity rotated into the robot anchor frame; the
    task's 160 and 286 values before them are unchanged."""
    # the task's reset noise: the robot anchor is turned away from the reference's
    quiet = replace(eval_cfg(), reset=TrackingEnvCfg().reset)
    cfg = with_anchor_velocity(quiet)
    env, plain = make(8, cfg=cfg, obs_mode="dict"), make(8, cfg=quiet, obs_mode="dict")
    obs, _ = env.reset(seed=3)
    base, _ = plain.reset(seed=3)
    for step in range(3):
        for group, width in (("policy", 160), ("critic", 286)):
            assert obs[group].shape == (8, width + 6)
            np.testing.assert_array_equal(obs[group][:, :width], base[group])
        s, a = env.state, env.state.anchor
        for cols, v in (
            (slice(-6, -3), s.obs_ref.lin_vel_w),
            (slice(-3, None), s.obs_ref.ang_vel_w),
        ):
            expected = rotate_inverse(s.robot.quat_w[:, a], v[:, a])
            for group in ("policy", "critic"):
                np.testing.assert_allclose(obs[group][:, cols], expected, atol=1e-5)
        if step == 2:  # mid-clip the reference moves: not a zero term
            assert np.abs(obs["policy"][:, -6:-3]).max() > 0.05
            # the robot anchor's frame, not the reference anchor's nor the root's
            for other in (s.obs_ref.quat_w[:, a], s.robot.quat_w[:, s.root]):
                wrong = rotate_inverse(other, s.obs_ref.lin_vel_w[:, a])
                assert np.abs(wrong - obs["policy"][:, -6:-3]).max() > 1e-3
        if step == 1:
            env.command.frames[:] = plain.command.frames[:] = 90  # the squat: 0.17 m/s
        obs, base = env.step(zeros(env))[0], plain.step(zeros(plain))[0]
    env.close()
    plain.close()
    with pytest.raises(ValueError, match="anchor_velocity_obs must be a bool"):
        TrackingEnvCfg(anchor_velocity_obs=1)
    # its training noise can be set like any policy term's
    noisy = with_obs_noise(with_anchor_velocity(TrackingEnvCfg()), {"anchor_vel": 0.1})
    assert noisy.observations["policy"]["anchor_vel"].noise == 0.1
    assert noisy.observations["critic"]["anchor_vel"].noise == 0.0


@pytest.mark.parametrize("seeds", [[1, 2], (1, 2), np.array([1, 2]), np.array(3), 1.5, True])
def test_a_seed_that_is_not_one_int_is_refused(seeds):
    env = TrackingVecEnv(2)
    with pytest.raises(ValueError, match="TrackingVecEnv takes one int seed for all envs, not"):
        env.reset(seed=seeds)
    obs, _ = env.reset(seed=np.int64(3))  # a NumPy integer is one int
    again, _ = TrackingVecEnv(2).reset(seed=3)
    np.testing.assert_array_equal(obs, again)
