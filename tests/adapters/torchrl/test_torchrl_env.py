"""`TorchRLVecEnv`: TorchRL's ``EnvBase`` over the env, from NumPy results or from the device
MDP's arrays."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")

from torchrl.envs import GymWrapper  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

from gym_motion.adapters.torchrl import TorchRLVecEnv, tracking_info_reader  # noqa: E402
from gym_motion.adapters.torchrl.info import info_keys  # noqa: E402
from gym_motion.envs import TrackingEnvCfg, TrackingVecEnv  # noqa: E402

N, STEPS = 8, 40


def _env(mdp: str = "host", **kwargs) -> TrackingVecEnv:
    """N envs in DISABLED mode on `mdp`; without observation noise (each MDP draws its own)."""
    cfg = TrackingEnvCfg()
    cfg = dataclasses.replace(cfg, backend=dataclasses.replace(cfg.backend, mdp=mdp),
                              obs_noise=False)  # fmt: skip
    return TrackingVecEnv(N, cfg=cfg, autoreset_mode="disabled", action_bound=1.0, seed=0,
                          **kwargs)  # fmt: skip


def _rollout(env, start=None) -> dict:
    """`STEPS` steps of fixed actions (large: episodes end, and TorchRL resets those rows),
    from a reset or from the tensordict `start`."""
    actions = iter(torch.as_tensor(np.random.default_rng(0).uniform(-1, 1, (STEPS, N, 29)),
                                   dtype=torch.float32))  # fmt: skip
    return env.rollout(STEPS, policy=lambda td: td.set("action", next(actions)),
                       break_when_any_done=False, auto_reset=start is None,
                       tensordict=start)  # fmt: skip


def test_the_host_path_gives_gym_wrappers_tensordicts():
    """Through partial resets, every entry of the rollout equals `GymWrapper`'s with
    `tracking_info_reader`'s, bit for bit, and the specs hold."""
    ours = TorchRLVecEnv(_env())
    check_env_specs(ours)
    ours = TorchRLVecEnv(_env())
    theirs = GymWrapper(_env())
    theirs.set_info_dict_reader(tracking_info_reader(theirs._env))
    a, b = _rollout(ours), _rollout(theirs)
    assert a["next", "done"].sum() > 0  # episodes ended and were reset
    keys = set(b.keys(True, True))
    assert keys <= set(a.keys(True, True))
    for key in keys:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0, msg=str(key))
    for key, dtype in info_keys(ours._env).items():
        assert a["next", key].dtype == dtype


def test_when_every_env_ends_at_once_the_reset_is_masked_as_gym_wrappers():
    """All episodes time out on one step (as they do when they all start together): TorchRL's
    reset mask, all set, is a masked reset as under `GymWrapper`, not a full one."""
    ours = TorchRLVecEnv(_env())
    theirs = GymWrapper(_env())
    theirs.set_info_dict_reader(tracking_info_reader(theirs._env))
    runs = []
    for env in (ours, theirs):
        start = env.reset()
        env._env.unwrapped.time_limit_offset[:] = 497  # every env times out on its 3rd step
        runs.append(_rollout(env, start))
    a, b = runs
    assert a["next", "truncated"][:, 2].all() and not a["next", "done"][:, 3].any()
    for key in b.keys(True, True):
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0, msg=str(key))


def test_with_the_device_mdp_entries_come_from_its_arrays():
    """Warp's CPU device stands in for a GPU: the env steps with `step_on_device`, the
    observations, reward and flags are the device arrays' values (as clones), and the rollout
    agrees with the host MDP's within float32 rounding, flags and episode lengths exactly."""
    import warp as wp

    device = TorchRLVecEnv(_env("device", obs_mode="dict"))
    host = TorchRLVecEnv(_env(obs_mode="dict"))
    assert device._on_device and not host._on_device
    check_env_specs(device)
    base = device._base
    stepped, real = [], base.step_on_device
    base.step_on_device = lambda a: stepped.append(a) or real(a)
    td = device.reset()
    td["action"] = torch.zeros(N, 29)
    nxt = device.step(td)["next"]
    arrays = base.device_arrays()
    for key in ("policy", "critic"):
        np.testing.assert_array_equal(nxt[key].numpy(), arrays[key].numpy())
        assert nxt[key].data_ptr() != wp.to_torch(arrays[key]).data_ptr()
    np.testing.assert_array_equal(nxt["reward"].numpy()[:, 0], arrays["reward"].numpy())
    device.set_seed(0), host.set_seed(0)
    a, b = _rollout(device), _rollout(host)
    assert len(stepped) == STEPS + 1 and isinstance(stepped[-1], torch.Tensor)
    assert a["next", "done"].sum() > 0
    for key in b.keys(True, True):
        x, y = a[key], b[key]
        nested = isinstance(key, tuple)
        if (key[-1] if nested else key).startswith("final/"):  # an episode result: where one ended
            ended = b["next", "done"] if nested else b["done"]
            x, y = x[ended[..., 0]], y[ended[..., 0]]
        exact = x.dtype != torch.float32
        tol = {"rtol": 0, "atol": 0} if exact else {"rtol": 1e-4, "atol": 1e-5}
        torch.testing.assert_close(x, y, **tol, msg=str(key))


def test_an_infinite_action_space_is_unbounded():
    """Under gymnasium's ClipAction the action space is (-inf, inf): an unbounded spec, whose
    random actions (a rollout without a policy) are finite."""
    import gymnasium as gym

    env = TorchRLVecEnv(gym.wrappers.vector.ClipAction(_env()))
    from torchrl.data import Unbounded

    assert isinstance(env.action_spec, Unbounded)
    assert env.rollout(3)["next", "reward"].isfinite().all()


def test_close_closes_the_env_once_and_a_step_needs_an_action():
    env = TorchRLVecEnv(_env())
    td = env.reset()
    with pytest.raises(KeyError, match="no 'action' entry"):
        env.step(td)
    env.close()
    assert env._env.closed and env.is_closed
    import gc

    base = _env()
    check_env_specs(TorchRLVecEnv(base))
    gc.collect()
    assert not base.closed  # the caller's env outlives an adapter it lent itself to
    env.close(raise_if_closed=False)  # a second close leaves the env as it is
    with pytest.raises(RuntimeError, match="TrackingVecEnv is closed"):
        env.reset()


def test_a_seed_repeats_the_rollout_and_bad_envs_are_refused():
    env = TorchRLVecEnv(_env())
    env.set_seed(3)
    first = _rollout(env)
    env.set_seed(3)
    torch.testing.assert_close(_rollout(env), first, rtol=0, atol=0)
    with pytest.raises(ValueError, match="DISABLED"):
        TorchRLVecEnv(TrackingVecEnv(2, autoreset_mode="same_step"))
    with pytest.raises(ValueError, match="needs a vector env .*got TrackingEnv"):
        from gym_motion.envs.single import TrackingEnv

        TorchRLVecEnv(TrackingEnv())
    with pytest.raises(ValueError, match="TorchRLVecEnv needs a TrackingVecEnv, got SyncVectorEnv"):
        import gymnasium as gym

        TorchRLVecEnv(gym.make_vec("Pendulum-v1", 2, vectorization_mode="sync",
                                   vector_kwargs={"autoreset_mode": "Disabled"}))  # fmt: skip
