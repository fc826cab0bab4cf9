"""The device MDP (``BackendCfg(mdp="device")``, Warp kernels on Warp's CPU device) against
the host MDP (Numba): the same rollout with autoresets, term by term, to float32 tolerance
(without observation noise, which each MDP draws on its own device); the device's noise."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from gym_motion.envs import TrackingVecEnv
from gym_motion.envs.config import BackendCfg, TrackingEnvCfg, with_anchor_velocity
from gym_motion.envs.tracking import runs_mdp_on_device
from gym_motion.managers.reward import RewardTermCfg
from gym_motion.training.config import train_env_cfg

# Warp and Numba compile the same float32 math with different compilers, and the rewards
# are summed in another order: agreement to float32 rounding of the values' scale.
TOL = {"rtol": 1e-4, "atol": 2e-5}


def _on_device(cfg: TrackingEnvCfg) -> TrackingEnvCfg:
    return dataclasses.replace(cfg, backend=dataclasses.replace(cfg.backend, mdp="device"))


def _quiet(cfg: TrackingEnvCfg) -> TrackingEnvCfg:
    """`cfg` without observation noise (each MDP draws its own)."""
    return dataclasses.replace(cfg, obs_noise=False)


def _clip_recipe_task() -> TrackingEnvCfg:
    """The clip recipe's task with every option the device must mirror: residual actions,
    adaptive starts, the 0.2 m horizontal term with a grace, the anchor velocity observed."""
    cfg = train_env_cfg(sampling="adaptive", anchor_horizontal_termination=0.2,
                        anchor_horizontal_grace_s=0.1)  # fmt: skip
    return with_anchor_velocity(dataclasses.replace(cfg, action_offset="reference"))


def _compare_obs(env: TrackingVecEnv, host, device, step: int) -> None:
    for group, slices in env.observations.term_slices.items():
        for term, sl in slices.items():
            assert_allclose(device[group][:, sl], host[group][:, sl], **TOL,
                            err_msg=f"step {step}: observation {group}/{term}")  # fmt: skip


def _compare_info(host: dict, device: dict, step: int) -> None:
    """Equal keys, equal masks, and values equal where their mask is True (gymnasium's
    convention: elsewhere a value means nothing; the device MDP copies ended episodes' sums
    only)."""
    assert host.keys() == device.keys(), f"step {step}: {host.keys() ^ device.keys()}"
    for key, h in host.items():
        d = device[key]
        mask = host.get("_" + key) if not key.startswith("_") else None
        if isinstance(h, dict) and mask is not None:  # final_obs of dict observations
            h, d = {k: v[mask] for k, v in h.items()}, {k: v[mask] for k, v in d.items()}
        if isinstance(h, dict):  # SAME_STEP's final_obs / final_info
            _compare_info(h, d, step)
            continue
        if mask is not None:
            h, d = np.asarray(h)[mask], np.asarray(d)[mask]
        if np.asarray(h).dtype == bool:
            assert_array_equal(d, h, err_msg=f"step {step}: info {key}")
        elif np.asarray(h).dtype != object:
            assert_allclose(d, h, **TOL, err_msg=f"step {step}: info {key}")


@pytest.mark.parametrize(
    ("task", "mode"),
    [(_quiet(TrackingEnvCfg()), "next_step"), (_quiet(_clip_recipe_task()), "same_step")],
    ids=["default-next_step", "clip_recipe-same_step"],
)
def test_a_rollout_with_autoresets_is_the_host_mdps_term_by_term(task, mode):
    n, steps = 8, 150
    host = TrackingVecEnv(n, cfg=task, seed=11, obs_mode="dict", autoreset_mode=mode)
    device = TrackingVecEnv(n, cfg=_on_device(task), seed=11, obs_mode="dict",
                            autoreset_mode=mode)  # fmt: skip
    assert device._device_mdp is not None and host._device_mdp is None
    obs_h, _ = host.reset()
    obs_d, _ = device.reset()
    _compare_obs(host, obs_h, obs_d, 0)
    rng = np.random.default_rng(5)
    ended = 0
    for step in range(1, steps + 1):
        if step == 60:  # a curriculum switch-on, mirrored to the device's kernels
            host.inactive_terminations = device.inactive_terminations = ("anchor_gravity",)
        actions = rng.normal(0.0, 1.5, (n, host.single_action_space.shape[0]))
        obs_h, rew_h, term_h, trunc_h, info_h = host.step(actions)
        obs_d, rew_d, term_d, trunc_d, info_d = device.step(actions)
        assert_array_equal(term_d, term_h, err_msg=f"step {step}: terminated")
        assert_array_equal(trunc_d, trunc_h, err_msg=f"step {step}: truncated")
        assert_allclose(rew_d, rew_h, **TOL, err_msg=f"step {step}: reward")
        _compare_obs(host, obs_h, obs_d, step)
        _compare_info(info_h, info_d, step)
        assert_array_equal(device.command.frames, host.command.frames)
        assert_array_equal(device.episode_length, host.episode_length)
        assert_allclose(device.command.errors, host.command.errors, **TOL)
        ended += int(np.count_nonzero(term_h | trunc_h))
    assert ended >= n  # the comparison covered many autoresets, not one episode
    assert_allclose(device.state.ref.pos_w, host.state.ref.pos_w, **TOL)
    assert_allclose(device.state.ref_rel_quat_w, host.state.ref_rel_quat_w, **TOL)


def test_on_mjwarp_the_device_mdp_reads_the_backends_buffer_and_equals_the_host_mdp():
    """MuJoCo Warp on Warp's CPU device (deterministic there): the same physics under both
    MDPs; the device MDP reads the robot state in the backend's own buffer (no upload), and
    the backend copies only each step's flags to the host (N x 3 float32) until `state` is
    read, which then holds the host MDP's robot state."""
    n, steps = 4, 40
    task = dataclasses.replace(
        _quiet(TrackingEnvCfg()), backend=BackendCfg(name="mjwarp", device="cpu")
    )
    host = TrackingVecEnv(n, cfg=task, seed=2, obs_mode="dict")
    device = TrackingVecEnv(n, cfg=_on_device(task), seed=2, obs_mode="dict")
    assert device._device_mdp.reads_robot_in_place
    obs_h, _ = host.reset()
    obs_d, _ = device.reset()
    _compare_obs(host, obs_h, obs_d, 0)
    rng = np.random.default_rng(3)
    ended = 0
    to_host = device.backend.transfer_bytes["to_host"]
    for step in range(1, steps + 1):
        actions = rng.normal(0.0, 3.0, (n, host.single_action_space.shape[0]))
        obs_h, rew_h, term_h, trunc_h, info_h = host.step(actions)
        obs_d, rew_d, term_d, trunc_d, info_d = device.step(actions)
        assert_array_equal(term_d, term_h, err_msg=f"step {step}: terminated")
        assert_allclose(rew_d, rew_h, **TOL, err_msg=f"step {step}: reward")
        _compare_obs(host, obs_h, obs_d, step)
        _compare_info(info_h, info_d, step)
        ended += int(np.count_nonzero(term_h | trunc_h))
    assert ended >= 2  # resets wrote rows the device then read in place
    assert device.backend.transfer_bytes["to_host"] - to_host == steps * n * 3 * 4
    for field in ("pos_w", "quat_w", "lin_vel_w", "joint_pos", "joint_vel"):
        assert_allclose(getattr(device.state.robot, field), getattr(host.state.robot, field),
                        **TOL, err_msg=field)  # fmt: skip


def test_rsi_on_the_device_writes_the_host_mdps_state_into_mujoco_warp_in_place():
    """Resets through the device MDP draw the host's random numbers in its order, and the
    state RSI computes on the device (float64, as on the host) lands in MuJoCo Warp's arrays
    bit for bit as the host's does; only ids, starts and uniforms go up, no qpos or qvel."""
    n = 16
    task = dataclasses.replace(_quiet(_clip_recipe_task()), backend=BackendCfg(
        name="mjwarp", device="cpu"))  # fmt: skip
    host = TrackingVecEnv(n, cfg=task, seed=4)
    device = TrackingVecEnv(n, cfg=_on_device(task), seed=4)
    rng = np.random.default_rng(0)
    fields = ("qpos", "qvel", "qacc_warmstart", "act")
    for options in (None, {"reset_mask": np.arange(n) % 5 == 1, "start": (0, 10)}):
        for env in (host, device):
            env.reset(options=options)
        for f in fields:
            assert_array_equal(getattr(device.backend._d, f).numpy(),
                               getattr(host.backend._d, f).numpy(), err_msg=f)  # fmt: skip
        assert_array_equal(device.command.clip_ids, host.command.clip_ids)
        assert_array_equal(device.command.frames, host.command.frames)
        for _ in range(30):
            actions = rng.normal(0.0, 1.0, (n, host.single_action_space.shape[0]))
            host.step(actions)
            device.step(actions)
    # a masked reset of M rows: the backend gets their ids, no state
    written = np.arange(n) % 4 == 0
    m = int(np.count_nonzero(written))
    before = device.backend.transfer_bytes["to_device"]
    device.reset(options={"reset_mask": written})
    # int32 ids for the write and for the refresh, and the refresh's count
    assert device.backend.transfer_bytes["to_device"] - before == 2 * m * 4 + 4
    host.reset(options={"reset_mask": written})
    assert_array_equal(device.backend._d.qpos.numpy(), host.backend._d.qpos.numpy())


def test_a_blown_up_row_ends_as_on_the_host_mdp(tmp_path, monkeypatch):
    """A row whose physics blows up is re-initialised by the host mid-step (new clip frame):
    the device MDP steps it from there, as the host MDP does, and no NaN reaches the
    observations."""
    monkeypatch.chdir(tmp_path)  # MuJoCo logs the blow-up to ./MUJOCO_LOG.TXT
    task = _quiet(TrackingEnvCfg())
    envs = [TrackingVecEnv(4, cfg=cfg, seed=6, autoreset_mode="same_step")
            for cfg in (task, _on_device(task))]  # fmt: skip
    results = []
    for env in envs:
        env.reset()
        env.step(np.zeros((4, 29)))
        qpos, qvel = np.zeros((1, env.model.nq)), np.zeros((1, env.model.nv))
        qpos[0, 3], qvel[0, 6] = 1.0, 1e30
        env.backend.write_state(np.array([2]), qpos, qvel)
        results.append([env.step(np.zeros((4, 29))) for _ in range(4)])
    for step, (host, device) in enumerate(zip(*results, strict=True)):
        assert np.isfinite(device[0]).all()
        assert_array_equal(device[2], host[2], err_msg=f"step {step}: terminated")
        assert_allclose(device[0], host[0], **TOL, err_msg=f"step {step}: observation")
        _compare_info(host[4], device[4], step)
    assert results[1][0][2][2] and results[1][0][4]["final/termination/nonfinite"][2]
    assert envs[1].nonfinite_count == 1


def test_the_device_draws_uniform_noise_of_each_terms_half_width_per_row_and_step():
    """256 envs reset on the same states with and without noise: the difference is each noisy
    column's uniform draw in [-s, s] (mean 0, variance s^2 / 3), other columns untouched; the
    same seed draws the same noise, the next draw other noise."""
    n = 256
    task = _on_device(TrackingEnvCfg())
    noisy = TrackingVecEnv(n, cfg=task, seed=4)
    clean = TrackingVecEnv(n, cfg=_quiet(task), seed=4)
    obs, _ = noisy.reset()
    ref, _ = clean.reset()  # the same RSI draws: noise is drawn after them
    delta = obs - ref
    half = np.zeros(delta.shape[1], np.float32)
    for name, sl in noisy.observations.term_slices["policy"].items():
        half[sl] = task.observations["policy"][name].noise
    assert (half > 0).any() and (half == 0).any()
    quiet = half == 0
    assert_array_equal(delta[:, quiet], 0.0)
    d, s = delta[:, ~quiet], half[~quiet]
    assert np.all(np.abs(d) <= s * (1 + 1e-5) + 1e-6)
    unit = d / s  # uniform on [-1, 1]: mean 0, variance 1/3, over 256 rows per column
    assert abs(unit.mean()) < 0.02 and abs(unit.var() - 1 / 3) < 0.02
    assert np.abs(np.corrcoef(unit[:-1].ravel(), unit[1:].ravel())[0, 1]) < 0.02  # rows differ
    again, _ = noisy.reset(seed=4)
    assert_array_equal(again, obs)
    redrawn = noisy._observation()  # the same state, the stream's next seed
    assert np.all((redrawn != again)[:, ~quiet].mean(0) > 0.99)


def test_a_term_without_a_device_kernel_is_refused_by_name():
    def my_term(state, out):
        out[:] = 1.0

    cfg = TrackingEnvCfg()
    cfg = dataclasses.replace(cfg, rewards={**cfg.rewards, "alive": RewardTermCfg(my_term, 1.0)})
    with pytest.raises(ValueError, match=r"reward term 'alive' .*my_term.* no device kernel"):
        TrackingVecEnv(2, cfg=_on_device(cfg))
    TrackingVecEnv(2, cfg=cfg).close()  # the host MDP takes it


def test_mdp_must_be_auto_host_or_device():
    with pytest.raises(ValueError, match=r"mdp must be 'auto', 'host' or 'device', got 'gpu'"):
        BackendCfg(mdp="gpu")
    assert BackendCfg().mdp == "auto"
    assert BackendCfg(name="mjwarp", mdp="device").kwargs().keys() >= {"device"}
    assert "mdp" not in BackendCfg(mdp="device").kwargs()


@pytest.mark.parametrize("backend", ["mujoco", "mjwarp"])
def test_the_device_refuses_the_actions_the_host_refuses_and_writes_nothing(backend):
    """Actions with a value not finite as float32, or targets beyond MuJoCo's mjMAXVAL, are
    refused by the device MDP with the host's message (the rows named), before anything is
    written: the action history and the next step are as if the call never came."""
    task = _quiet(TrackingEnvCfg())
    task = dataclasses.replace(task, backend=BackendCfg(name=backend, device="cpu")
                               if backend == "mjwarp" else task.backend)  # fmt: skip
    host = TrackingVecEnv(4, cfg=task, seed=1)
    device = TrackingVecEnv(4, cfg=_on_device(task), seed=1)
    bad = np.zeros((4, 29))
    bad[1, 2] = 1e300  # inf as float32
    bad[3, 0] = 1e11  # a target beyond 1e10 rad
    good = np.random.default_rng(0).normal(0.0, 1.0, (4, 29))
    messages = []
    for env in (host, device):
        env.reset()
        env.step(good)
        with pytest.raises(ValueError) as refused:
            env.step(bad)
        messages.append(str(refused.value))
    assert "envs [1]" in messages[0] and "envs [3]" in messages[0]
    assert messages[1] == messages[0]
    assert_array_equal(device.state.action, host.state.action)
    assert_array_equal(device.state.last_action, host.state.last_action)
    obs_h = host.step(good)[0]
    obs_d = device.step(good)[0]
    assert_allclose(obs_d, obs_h, **TOL)


def test_actions_already_on_the_device_step_as_their_numpy_copy():
    """A float32 Warp array on the MDP's device, or a torch tensor read through DLPack, is
    taken where it is and steps as the same NumPy actions; other dtypes go through NumPy as
    the host MDP takes them (float64 tensors, bools); a device array of another shape is
    refused in one line."""
    import warp as wp

    torch = pytest.importorskip("torch")
    task = _on_device(_quiet(TrackingEnvCfg()))
    envs = [TrackingVecEnv(4, cfg=task, seed=4) for _ in range(4)]
    host = TrackingVecEnv(4, cfg=_quiet(TrackingEnvCfg()), seed=4)
    rng = np.random.default_rng(5)
    for env in (*envs, host):
        env.reset()
    for _ in range(3):
        actions = rng.normal(0.0, 1.0, (4, 29)).astype(np.float32)
        results = [
            envs[0].step(actions),
            envs[1].step(wp.array(actions, dtype=float, device="cpu")),
            envs[2].step(torch.from_numpy(actions.copy())),
            envs[3].step(torch.from_numpy(actions.astype(np.float64))),
        ]
        host.step(actions)
        for got in results[1:]:
            assert_array_equal(got[0], results[0][0])
            assert_array_equal(got[1], results[0][1])
    flags = np.zeros((4, 29), bool)
    flags[:, 3] = True
    assert_allclose(envs[0].step(flags)[0], host.step(flags)[0], **TOL)
    for env, wrong in ((envs[1], wp.zeros((4, 28), dtype=float, device="cpu")),
                       (envs[0], np.zeros((4, 28))), (host, np.zeros((4, 28)))):  # fmt: skip
        with pytest.raises(ValueError, match=r"^actions must have shape \(4, 29\), got \(4, 28\)$"):
            env.step(wrong)  # in the same words, wherever the actions are


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_step_on_device_leaves_the_observations_there_and_is_step(mode):
    """`step_on_device` is `step` with the observations left on the device: the same
    `device_arrays` and info, step by step through autoresets, and less copied to the host
    (the observation groups' bytes, on every step no env ended)."""
    task = _on_device(_clip_recipe_task())
    envs = [TrackingVecEnv(8, cfg=task, seed=7, obs_mode="dict", autoreset_mode=mode)
            for _ in range(2)]  # fmt: skip
    for env in envs:
        env.reset()
    rng = np.random.default_rng(8)
    obs_bytes = sum(b.size * 4 for b in envs[0].observations.buffers.values())
    quiet_steps = ended_steps = 0
    for step in range(60):
        actions = rng.normal(0.0, 2.0, (8, 29)).astype(np.float32)
        before = [dict(env.transfer_bytes) for env in envs]
        obs, reward, terminated, truncated, info = envs[0].step(actions)
        reward_d, terminated_d, truncated_d, info_d = envs[1].step_on_device(actions)
        assert_array_equal(reward_d, reward)
        assert_array_equal(terminated_d, terminated)
        assert_array_equal(truncated_d, truncated)
        _compare_info(info, info_d, step)
        arrays = envs[1].device_arrays()
        for group, values in obs.items():
            assert_array_equal(arrays[group].numpy(), values, err_msg=f"step {step}: {group}")
        assert_array_equal(arrays["reward"].numpy(), reward)
        assert_array_equal(arrays["terminated"].numpy(), terminated)
        assert_array_equal(arrays["truncated"].numpy(), truncated)
        moved = [env.transfer_bytes["to_host"] - b["to_host"]
                 for env, b in zip(envs, before, strict=True)]  # fmt: skip
        if not (terminated | truncated).any():
            quiet_steps += 1
            assert moved[0] - moved[1] == obs_bytes
        else:  # SAME_STEP's final observation: the ended rows only
            assert moved[1] < moved[0]
            ended_steps += 1
    assert quiet_steps > 0 and ended_steps > 0
    with pytest.raises(RuntimeError, match="device MDP"):
        TrackingVecEnv(2, cfg=_quiet(TrackingEnvCfg())).step_on_device(np.zeros((2, 29)))


def test_a_masked_reset_after_step_on_device_keeps_the_last_steps_observations():
    """DISABLED mode: after `step_on_device` (observations left on the device) a masked reset
    returns, for the envs not reset, the rows the last step left, on the host and in
    `device_arrays`, as the host MDP's masked reset after `step` does."""
    task = _quiet(TrackingEnvCfg())
    host = TrackingVecEnv(4, cfg=task, seed=3, autoreset_mode="disabled")
    device = TrackingVecEnv(4, cfg=_on_device(task), seed=3, autoreset_mode="disabled")
    rng = np.random.default_rng(4)
    host.reset()
    device.reset()
    for _ in range(5):
        actions = rng.normal(0.0, 0.5, (4, 29)).astype(np.float32)
        last = host.step(actions)[0]
        device.step_on_device(actions)
    mask = np.array([True, False, False, False])
    obs_h, _ = host.reset(options={"reset_mask": mask})
    obs_d, _ = device.reset(options={"reset_mask": mask})
    assert_array_equal(obs_h[1:], last[1:])
    assert_allclose(obs_d[1:], last[1:], **TOL)
    assert_array_equal(device.device_arrays()["policy"].numpy(), obs_d)


def test_the_device_mdp_refuses_events_of_a_tasks_own():
    """Built-in events read nothing the device owns; an event of a task's own could read a
    stale host copy, so the device MDP refuses it when the env is built, naming it."""
    from gym_motion.managers.events import EventMode, EventTermCfg

    def probe(ctx, env_ids, rng):
        pass

    task = dataclasses.replace(TrackingEnvCfg(), events={
        **TrackingEnvCfg().events, "probe": EventTermCfg(probe, EventMode.RESET)})  # fmt: skip
    TrackingVecEnv(2, cfg=task)  # the host MDP takes it
    with pytest.raises(ValueError, match="event term 'probe'.*mdp='host'"):
        TrackingVecEnv(2, cfg=_on_device(task))


def _own_terms() -> dict[str, TrackingEnvCfg]:
    """The default task with a reward term of its own, and with an event of its own."""
    from gym_motion.managers.events import EventMode, EventTermCfg

    def my_reward(state, out):
        out[:] = 1.0

    def my_event(ctx, env_ids, rng):
        pass

    base = TrackingEnvCfg()
    return {
        "reward term 'alive'": dataclasses.replace(
            base, rewards={**base.rewards, "alive": RewardTermCfg(my_reward, 1.0)}),
        "event term 'probe'": dataclasses.replace(
            base, events={**base.events, "probe": EventTermCfg(my_event, EventMode.RESET)}),
    }  # fmt: skip


@pytest.mark.parametrize(
    ("mdp", "backend", "device", "on_device"),
    [("auto", "mjwarp", "cuda:0", True), ("auto", "mjwarp", "cuda:3", True),
     ("auto", "mjwarp", "cpu", False), ("auto", "mujoco", "cpu", False),
     ("auto", "motrix", "cpu", False), ("host", "mjwarp", "cuda:0", False),
     ("device", "mujoco", "cpu", True), ("device", "mjwarp", "cpu", True)],
)  # fmt: skip
def test_auto_puts_the_mdp_on_the_device_for_mjwarp_on_a_gpu(mdp, backend, device, on_device):
    cfg = TrackingEnvCfg(backend=BackendCfg(name=backend, mdp=mdp))
    assert runs_mdp_on_device(cfg, device) is on_device


@pytest.mark.parametrize("term", list(_own_terms()))
def test_auto_leaves_a_task_with_terms_of_its_own_on_the_host_and_says_why(term):
    cfg = dataclasses.replace(_own_terms()[term], backend=BackendCfg(name="mjwarp"))
    with pytest.warns(UserWarning, match=rf"MDP runs on the host.*cuda:0.*{term}"):
        assert runs_mdp_on_device(cfg, "cuda:0") is False
    cfg = dataclasses.replace(cfg, backend=BackendCfg(mdp="device"))
    with pytest.raises(ValueError, match=term):  # asked for by name: refused, naming it
        TrackingVecEnv(2, cfg=cfg)


def test_auto_leaves_the_mdp_on_the_host_where_the_device_mdp_cannot_be_built(monkeypatch):
    """A device MDP that fails to build (a kernel its device's compiler refuses, memory)
    leaves "auto" on the host MDP, warning with the error; "device" raises it."""
    from gym_motion.envs import device_mdp, tracking

    def fails(self, *args, **kwargs):
        raise RuntimeError("NVRTC: kernel refused")

    monkeypatch.setattr(tracking, "runs_mdp_on_device", lambda cfg, device: True)
    monkeypatch.setattr(device_mdp.DeviceMDP, "__init__", fails)
    with pytest.warns(UserWarning, match=r"MDP runs on the host.*RuntimeError: NVRTC"):
        env = TrackingVecEnv(2, cfg=TrackingEnvCfg())
    assert env.mdp_device is None
    env.reset(seed=0)
    env.step(np.zeros((2, *env.action_space.shape[1:]), np.float32))
    env.close()
    with pytest.raises(RuntimeError, match="NVRTC"):
        TrackingVecEnv(2, cfg=_on_device(TrackingEnvCfg()))


@pytest.mark.parametrize("backend", ["mujoco", "mjwarp"])
def test_auto_on_the_cpu_is_the_host_mdp_bit_for_bit(backend):
    """The default (``mdp="auto"``) without a GPU is the host MDP: no device MDP, and the
    same observations and rewards as ``mdp="host"`` bit for bit."""
    cfg = TrackingEnvCfg(backend=BackendCfg(name=backend, device="cpu" if backend == "mjwarp"
                                            else None))  # fmt: skip
    envs = [TrackingVecEnv(3, cfg=c, seed=4) for c in (cfg, dataclasses.replace(
        cfg, backend=dataclasses.replace(cfg.backend, mdp="host")))]  # fmt: skip
    assert [e.mdp_device for e in envs] == [None, None]
    outs = [e.reset(seed=4)[0] for e in envs]
    actions = np.random.default_rng(0).uniform(-1, 1, (10, *envs[0].action_space.shape))
    for a in actions:
        steps = [e.step(a.astype(np.float32)) for e in envs]
        outs = [s[0] for s in steps]
        assert_array_equal(outs[0], outs[1])
        assert_array_equal(steps[0][1], steps[1][1])
    for e in envs:
        e.close()


def test_the_state_after_close_is_the_last_steps():
    """`env.state` still reads the last step after `close()` (the device MDP's host copies are
    brought up to date before the device memory goes), as on the host MDP."""
    task = dataclasses.replace(
        _quiet(TrackingEnvCfg()), backend=BackendCfg(name="mjwarp", device="cpu")
    )
    envs = [TrackingVecEnv(2, cfg=cfg, seed=5) for cfg in (task, _on_device(task))]
    for env in envs:
        env.reset()
        env.step(np.full((2, 29), 0.3, np.float32))
        env.close()
    host, device = (env.state for env in envs)
    assert_allclose(device.robot.pos_w, host.robot.pos_w, **TOL)
    assert_array_equal(device.action, host.action)


def test_captured_graphs_of_the_device_mdp_replay_its_eager_bits():
    """The step's launches and the observation groups' (noise included: its seed read from
    device memory) captured as graphs on their second run give, replayed, the bits of the
    same launches run eagerly (capturing switched off before the first step, physics and
    MDP): observations, rewards, flags."""
    runs = []
    for capture in (True, False):
        task = dataclasses.replace(TrackingEnvCfg(), backend=BackendCfg(
            name="mjwarp", device="cpu", mdp="device"))  # fmt: skip
        env = TrackingVecEnv(4, cfg=task, seed=9)
        env.backend._graphs.capture = env._device_mdp.graphs.capture = capture
        rng = np.random.default_rng(10)
        steps = [env.reset()[0]]
        for _ in range(40):
            obs, reward, terminated, truncated, _ = env.step(rng.normal(0.0, 1.0, (4, 29)))
            steps += [obs, reward, terminated, truncated]
        runs.append((dict(env._device_mdp.graphs.capture_s), steps))
        env.close()
    (captured, got), (eager, want) = runs
    assert {"step", "observations:policy"} <= set(captured) and eager == {}
    for k, (a, b) in enumerate(zip(got, want, strict=True)):
        assert_array_equal(a, b, err_msg=f"result {k}")


def test_device_arrays_keep_their_memory_past_the_env():
    """The device results are views of one block; each keeps the block's memory alive, so a
    tensor or array taken from them stays valid after the env is gone."""
    import gc
    import weakref

    env = TrackingVecEnv(2, cfg=_on_device(_quiet(TrackingEnvCfg())), seed=1)
    env.reset()
    env.step(np.full((2, 29), 0.2))
    reward = env.device_arrays()["reward"]
    want = reward.numpy().copy()
    block = weakref.ref(env._device_mdp._out.dev)
    env.close()
    del env
    gc.collect()
    assert block() is not None
    assert_array_equal(reward.numpy(), want)


def test_a_time_limit_changed_mid_run_reaches_the_replayed_step():
    """`max_episode_steps` is read from device memory by the step's replayed graph: lowered and
    raised mid-run, it truncates the same episodes at the same steps as on the host MDP."""
    task = _quiet(TrackingEnvCfg())
    envs = [TrackingVecEnv(4, cfg=cfg, seed=2) for cfg in (task, _on_device(task))]
    rng = np.random.default_rng(3)
    for env in envs:
        env.reset()
    truncated_any = False
    for step in range(40):
        if step in (5, 25):
            for env in envs:
                env.max_episode_steps = 12 if step == 5 else 1000
        actions = rng.normal(0.0, 0.3, (4, 29)).astype(np.float32)
        (_, rew_h, term_h, trunc_h, _), (_, rew_d, term_d, trunc_d, _) = (
            env.step(actions) for env in envs)  # fmt: skip
        assert_array_equal(trunc_d, trunc_h, err_msg=f"step {step}")
        assert_array_equal(term_d, term_h, err_msg=f"step {step}")
        truncated_any |= bool(trunc_h.any())
    assert truncated_any
    assert "step" in envs[1]._device_mdp.graphs.capture_s  # the step ran as a graph


def test_a_steps_ended_rows_are_staged_on_the_device_once():
    """SAME_STEP without events: the rows that end are the rows whose sums come down, whose
    episodes restart, which RSI writes and whose reference is refreshed; their ids go up once
    (each further staging would wait for the copy before it)."""
    task = dataclasses.replace(_quiet(TrackingEnvCfg()), events={})
    env = TrackingVecEnv(6, cfg=_on_device(task), seed=1, autoreset_mode="same_step")
    env.reset()
    env.max_episode_steps = 3  # every row ends at its third step
    mdp = env._device_mdp
    mdp._staged_ids = np.zeros(0, np.int32)  # forget the reset's rows (all six, as these)
    staged = []
    upload_rows = mdp._copies.upload_rows
    mdp._copies.upload_rows = lambda dev, rows: (
        staged.append(rows.copy()) if dev is mdp._rows else None,
        upload_rows(dev, rows),
    )
    actions = np.zeros((6, 29), np.float32)
    for step in range(3):
        *_, truncated, _ = env.step(actions)
        assert truncated.all() == (step == 2)
    assert len(staged) == 1
    assert_array_equal(staged[0], np.arange(6))
