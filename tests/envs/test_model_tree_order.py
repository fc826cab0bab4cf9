"""A user MJCF whose kinematic tree lists bodies in another order runs the same task.

The model's qpos/qvel/ctrl columns follow its tree; the task speaks the robot's joint order.
The fixture `reordered_g1_xml` (tests/conftest.py) is the package's G1 with the left arm's
subtree moved after the right arm's: same names, same geometry, other columns.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from gym_motion.deploy.metadata import deploy_metadata
from gym_motion.envs import TrackingEnvCfg, TrackingVecEnv, eval_cfg
from gym_motion.robots.g1 import G1

N, STEPS = 4, 24
# Absolute tolerances: observations (float32) and rewards; joint positions, rad; joint
# velocities, rad/s. MuJoCo (float64) repeats the default model's rollout to rounding (1e-14
# rad measured); MotrixSim and MuJoCo Warp step in float32, where another body order changes
# the rounding of sums: 3e-5 rad and 3e-3 rad/s measured over 24 steps, against errors of
# 0.1-1 rad when a joint gets another joint's values.
TOLERANCE = {
    "mujoco": {"obs": 1e-6, "pos": 1e-9, "vel": 1e-7},
    "motrix": {"obs": 1e-2, "pos": 2e-4, "vel": 1e-2},
    "mjwarp": {"obs": 1e-2, "pos": 2e-4, "vel": 1e-2},
}


def _backend(name: str) -> str:
    if name == "motrix":
        pytest.importorskip("motrixsim")
    return name  # mujoco_warp is a required dependency: no skip


def _named_joints(env: TrackingVecEnv) -> np.ndarray:
    """(N, 2, J): each robot joint's position and velocity, read from the engine's own
    generalised coordinates at the joint's named columns (backends that expose them), else
    from the env's joint state."""
    backend = env.backend
    if not hasattr(backend, "qpos"):
        return np.stack([env.state.robot.joint_pos, env.state.robot.joint_vel], 1)
    qpos, qvel = backend.qpos, backend.qvel
    qadr = [env.model.joint(name).qposadr[0] for name in G1.joint_names]
    dadr = [env.model.joint(name).dofadr[0] for name in G1.joint_names]
    return np.stack([qpos[:, qadr], qvel[:, dadr]], 1)


def _rollout(backend: str, model_path, steps: int) -> dict[str, np.ndarray]:
    actions = np.random.default_rng(7).normal(0.0, 0.5, (steps, N, 29)).astype(np.float32)
    # a short time limit: rows truncate and restart on a motion frame (RSI) mid-rollout
    env = TrackingVecEnv(N, backend=backend, model_path=model_path, max_episode_steps=10, seed=0)
    try:
        obs, _ = env.reset(seed=1)
        out = {"obs": [obs], "reward": [], "done": [], "joint": [_named_joints(env)]}
        for t in range(steps):
            obs, reward, terminated, truncated, _ = env.step(actions[t])
            out["obs"].append(obs)
            out["reward"].append(reward)
            out["done"].append(terminated | truncated)
            out["joint"].append(_named_joints(env))
        assert not env.layout.identity or model_path is None
    finally:
        env.close()
    return {k: np.stack(v) for k, v in out.items()}


@pytest.mark.parametrize("backend", ["mujoco", "motrix", "mjwarp"])
def test_reordered_mjcf_runs_the_default_models_rollout_joint_by_joint(backend, reordered_g1_xml):
    backend = _backend(backend)
    default = _rollout(backend, None, STEPS)
    reordered = _rollout(backend, reordered_g1_xml, STEPS)
    tol = TOLERANCE[backend]
    assert default["done"].any()  # the rollout re-initialised rows on the way
    assert_array_equal(reordered["done"], default["done"])
    assert_allclose(reordered["obs"], default["obs"], rtol=0, atol=tol["obs"])
    assert_allclose(reordered["reward"], default["reward"], rtol=1e-5, atol=tol["obs"])
    for k, name in enumerate(G1.joint_names):
        for i, what in enumerate(("pos", "vel")):
            assert_allclose(
                reordered["joint"][:, :, i, k], default["joint"][:, :, i, k], rtol=0,
                atol=tol[what], err_msg=f"{name} {what}",
            )  # fmt: skip


@pytest.mark.parametrize("backend", ["mujoco", "motrix"])
def test_rsi_puts_each_named_joint_at_its_reference(backend, reordered_g1_xml):
    env = TrackingVecEnv(3, backend=_backend(backend), cfg=eval_cfg(), model_path=reordered_g1_xml)
    try:
        env.reset(seed=0)
        rows = env.command.reference_rows(np.arange(3))
        lib, limits = env.library, env.state.soft_joint_limits
        qpos, qvel = env.backend.qpos, env.backend.qvel
        atol = 0.0 if backend == "mujoco" else 1e-6  # MotrixSim stores float32
        for k, name in enumerate(G1.joint_names):
            joint = env.model.joint(name)
            want = np.clip(lib.joint_pos[rows, k], limits[k, 0], limits[k, 1])
            assert_allclose(qpos[:, joint.qposadr[0]], want, rtol=0, atol=atol, err_msg=name)
            assert_allclose(qvel[:, joint.dofadr[0]], lib.joint_vel[rows, k], rtol=0,
                            atol=atol * 10, err_msg=name)  # fmt: skip
        # the case of the report: the two shoulders' references differ in sign
        left = G1.joint_names.index("left_shoulder_roll_joint")
        right = G1.joint_names.index("right_shoulder_roll_joint")
        assert np.all(np.sign(lib.joint_pos[rows, left]) != np.sign(lib.joint_pos[rows, right]))
        assert_allclose(env.state.robot.joint_pos, np.clip(lib.joint_pos[rows], *limits.T),
                        rtol=0, atol=max(atol, 1e-7))  # fmt: skip
    finally:
        env.close()


def test_deploy_metadata_does_not_depend_on_the_models_tree_order(reordered_g1_xml):
    cfg = TrackingEnvCfg()
    assert deploy_metadata(cfg.updated(model_path=reordered_g1_xml)) == deploy_metadata(cfg)
