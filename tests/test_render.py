"""Rendering: frames of the robot and its reference ghost, render modes, the env contract."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import mujoco
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import gym_motion  # noqa: F401  (registers the ids)
from gym_motion.envs import TrackingVecEnv, eval_cfg
from gym_motion.render import RenderCfg, TrackingRenderer, state_qpos
from gym_motion.robots.g1 import G1

SMALL = RenderCfg(width=160, height=120)


def robot_mask(frame: np.ndarray) -> np.ndarray:
    """Pixels of the robot's colour (orange, `RenderCfg.robot_rgba`): red well above blue."""
    r, g, b = (frame[..., c].astype(np.int32) for c in range(3))
    return (r > g + 40) & (r > b + 60)


def ghost_mask(frame: np.ndarray) -> np.ndarray:
    """Pixels of the ghost's colour (translucent blue over the floor or sky)."""
    r, g, b = (frame[..., c].astype(np.int32) for c in range(3))
    return (b > r + 60) & (b > g + 20)


def centroid(mask: np.ndarray) -> np.ndarray:
    rows, cols = np.nonzero(mask)
    return np.array([cols.mean(), rows.mean()])


@pytest.mark.parametrize("mode", ["human", "bogus", "rgb_array_list", "RGB_ARRAY", ""])
def test_unknown_render_modes_are_refused(mode):
    with pytest.raises(ValueError, match="render_mode must be one of"):
        TrackingVecEnv(num_envs=1, render_mode=mode)


def test_bogus_render_mode_is_refused_by_gymnasium_make():
    with pytest.raises(ValueError, match="'bogus'"):
        gym.make("GymMotion/G1-Tracking-v0", render_mode="bogus")
    assert TrackingVecEnv.metadata["render_modes"] == ["rgb_array"]


@pytest.mark.parametrize("render_envs", [0, 3])
def test_render_envs_outside_the_envs_are_refused(render_envs):
    with pytest.raises(ValueError, match="render_envs"):
        TrackingVecEnv(num_envs=2, render_mode="rgb_array", render_envs=render_envs)


def test_bad_render_cfg_is_refused():
    with pytest.raises(ValueError, match="width"):
        RenderCfg(width=0)
    with pytest.raises(ValueError, match="ghost_rgba"):
        RenderCfg(ghost_rgba=(0.0, 0.0, 1.0, 2.0))
    with pytest.raises(ValueError, match="unknown RenderCfg fields"):
        SMALL.updated(colour=1)


def test_state_qpos_is_the_backend_qpos():
    env = TrackingVecEnv(num_envs=3, seed=1)
    env.reset()
    for _ in range(5):
        env.step(np.zeros((3, 29), np.float32))
    s = env.state
    qpos = state_qpos(s.robot, s.root, np.arange(3))
    assert qpos.shape == (3, 36) and qpos.dtype == np.float64
    backend_qpos = env.layout.robot_qpos(env.backend.qpos)  # the model's columns, by name
    np.testing.assert_allclose(qpos, backend_qpos, atol=1e-5)  # float32 body state
    env.close()


def test_a_model_in_another_tree_order_renders_the_same_frames(gl, reordered_g1_xml):
    frames = []
    for model_path in (None, reordered_g1_xml):
        env = TrackingVecEnv(1, cfg=eval_cfg(), model_path=model_path, render_mode="rgb_array",
                             render_cfg=SMALL, seed=0)  # fmt: skip
        env.reset(seed=0)
        for _ in range(20):  # robot and ghost apart: each joint drawn where its name says
            env.step(np.zeros((1, 29), np.float32))
        frames.append(np.array(env.render()[0]))
        env.close()
    assert robot_mask(frames[0]).sum() > 100 and ghost_mask(frames[0]).sum() > 100
    np.testing.assert_array_equal(frames[1], frames[0])


def test_single_env_frame_shows_robot_and_ghost_moving_apart_under_zero_action(gl):
    env = gym.make("GymMotion/G1-Tracking-Eval-v0", render_mode="rgb_array", render_cfg=SMALL)
    assert env.metadata["render_fps"] == 50
    env.reset(seed=0)
    start = env.render()
    assert start.shape == (120, 160, 3) and start.dtype == np.uint8

    # At the first frame (no reset noise) the ghost stands exactly on the robot and covers it:
    # without the ghost the robot's colour fills its silhouette, with it hardly a pixel.
    vec = env.unwrapped.vec
    alone = TrackingRenderer(G1, SMALL.updated(ghost=False))
    robot_only = alone.render_state(vec.state, 0)
    alone.close()
    silhouette = int(robot_mask(robot_only).sum())
    assert silhouette > 150
    assert robot_mask(start).sum() < 0.05 * silhouette
    assert ghost_mask(start).sum() < 0.05 * silhouette

    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated) and steps < 200:
        _, _, terminated, truncated, _ = env.step(np.zeros(29, np.float32))
        steps += 1
    assert terminated and steps < 100  # the zero action falls within ~1.3 s
    fallen = env.render()
    env.close()
    # At the termination both are in the picture, in their own colours, apart.
    robot, ghost = robot_mask(fallen), ghost_mask(fallen)
    assert robot.sum() > 0.5 * silhouette and ghost.sum() > 0.5 * silhouette
    assert np.linalg.norm(centroid(robot) - centroid(ghost)) > 10.0  # pixels of 160


def test_vector_env_renders_one_frame_per_env_drawn_when_read(gl):
    env = TrackingVecEnv(
        num_envs=3, seed=3, render_mode="rgb_array", render_envs=2, render_cfg=SMALL
    )
    with pytest.raises(RuntimeError, match="reset"):
        env.render()
    env.reset()
    frames = env.render()
    assert len(frames) == 3 and sorted(frames._frames) == [0, 1]  # the first render_envs
    assert all(f.shape == (120, 160, 3) and f.dtype == np.uint8 for f in frames)
    # Reset noise and different start frames: the envs look different.
    assert np.abs(frames[0].astype(int) - frames[1].astype(int)).mean() > 1.0
    assert np.abs(frames[2].astype(int) - frames[1].astype(int)).mean() > 1.0
    again = env.render()
    assert all(np.array_equal(a, b) for a, b in zip(frames, again, strict=True))
    # a frame read later shows the envs as they were at the call, not after a step
    late = env.render()
    env.step(np.full((3, 29), 0.5, np.float32))
    assert np.array_equal(late[2], frames[2]) and np.array_equal(late[-1], late[2])
    with pytest.raises(IndexError):
        late[3]
    unread = env.render()
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        unread[2]
    with pytest.raises(RuntimeError, match="closed"):
        env.render()


def test_gymnasium_vector_record_video_takes_the_frames(gl, tmp_path, monkeypatch):
    """gymnasium's vector RecordVideo checks one frame per env; with record_first_only it
    reads only the first, so the other envs are never drawn."""
    import sys
    import types

    from gymnasium.wrappers.vector import RecordVideo

    for name in (
        "moviepy",
        "moviepy.video",
        "moviepy.video.io",
        "moviepy.video.io.ImageSequenceClip",
    ):  # not installed; never called here
        stub = types.ModuleType(name)
        stub.ImageSequenceClip = None
        monkeypatch.setitem(sys.modules, name, stub)
    env = TrackingVecEnv(num_envs=4, seed=0, render_mode="rgb_array", render_cfg=SMALL)
    drawn, draw = [], TrackingRenderer.render

    def counted(self, *args):
        drawn.append(1)
        return draw(self, *args)

    monkeypatch.setattr(TrackingRenderer, "render", counted)
    wrapped = RecordVideo(env, str(tmp_path), record_first_only=True, video_length=3)
    written = []
    monkeypatch.setattr(
        wrapped, "stop_recording", lambda: written.append(list(wrapped.recorded_frames))
    )  # fmt: skip  (no moviepy needed)
    wrapped.reset(seed=0)
    for _ in range(3):
        wrapped.step(np.zeros((4, 29), np.float32))
    assert written and all(f.shape == (120, 160, 3) for f in written[0])
    assert len(written[0]) == 4  # the reset frame and three steps
    assert drawn == [1] * 4  # one frame drawn per render: env 0's, not all 4 envs'
    wrapped.close()


def test_render_without_a_mode_returns_none():
    env = TrackingVecEnv(num_envs=1)
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert env.render() is None
    env.close()


def test_rendering_leaves_the_physics_unchanged(gl):
    def rollout(render_mode):
        env = TrackingVecEnv(
            num_envs=2, cfg=eval_cfg(), seed=0, render_mode=render_mode, render_cfg=SMALL,
            autoreset_mode=AutoresetMode.DISABLED,
        )  # fmt: skip
        obs, _ = env.reset()
        rng = np.random.default_rng(0)
        for _ in range(10):
            if render_mode:
                env.render()
            obs, *_ = env.step(rng.normal(0.0, 0.5, (2, 29)).astype(np.float32))
        qpos = env.backend.qpos.copy()
        env.close()
        return obs, qpos

    obs, qpos = rollout("rgb_array")
    obs_plain, qpos_plain = rollout(None)
    np.testing.assert_array_equal(obs, obs_plain)
    np.testing.assert_array_equal(qpos, qpos_plain)


def test_ghost_offset_moves_only_the_ghost(gl):
    pose = np.r_[0.0, 0.0, 0.8, 1.0, 0.0, 0.0, 0.0, G1.default_joint_pos]
    renderer = TrackingRenderer(G1, SMALL.updated(ghost_offset=(0.0, 1.0, 0.0), azimuth=180.0))
    frame = renderer.render(pose, pose)
    with pytest.raises(ValueError, match="ghost_qpos"):
        renderer.render(pose)
    with pytest.raises(ValueError, match="shape"):
        renderer.render(pose[:-1], pose)
    renderer.close()
    with pytest.raises(RuntimeError, match="closed"):
        renderer.render(pose, pose)
    # Camera in front of the robot (looking along -x): the ghost 1 m to the robot's left is
    # drawn beside it, and the robot stays in the middle of the frame.
    robot, ghost = robot_mask(frame), ghost_mask(frame)
    assert robot.sum() > 150 and ghost.sum() > 100
    assert abs(centroid(robot)[0] - 80) < 10
    assert np.linalg.norm(centroid(robot) - centroid(ghost)) > 25.0


def test_mjwarp_backend_renders_the_same_first_frame(gl):
    # Frames are posed from the env's state, which every backend fills: at the noise-free
    # first frame of the clip both backends hold the same state and draw the same picture.
    frames = []
    for backend in ("mujoco", "mjwarp"):
        env = TrackingVecEnv(num_envs=1, cfg=eval_cfg(), backend=backend, seed=0,
                             render_mode="rgb_array", render_cfg=SMALL)  # fmt: skip
        env.reset()
        frames.append(env.render()[0].astype(int))
        env.close()
    assert np.abs(frames[0] - frames[1]).max() <= 2
    assert frames[0].std() > 10.0  # a picture, not a blank


REFERENCE_G1 = Path(__file__).resolve().parents[2] / "shared" / "reference" / "g1" / "g1.xml"
needs_reference_meshes = pytest.mark.skipif(
    not REFERENCE_G1.is_file(), reason=f"no G1 model with visual meshes at {REFERENCE_G1}"
)


def _mesh_geoms(model) -> int:
    return int(np.count_nonzero(model.geom_type == mujoco.mjtGeom.mjGEOM_MESH))


@needs_reference_meshes
def test_meshes_dress_robot_and_ghost_and_nothing_collides():
    from gym_motion.render import build_scene

    plain = build_scene(G1, RenderCfg(meshes="off"))
    dressed = build_scene(G1, RenderCfg(meshes=str(REFERENCE_G1)))
    assert _mesh_geoms(plain) == 0
    source = mujoco.MjModel.from_xml_path(str(REFERENCE_G1))
    assert _mesh_geoms(dressed) == 2 * _mesh_geoms(source)  # the robot's and the ghost's
    robot_geoms = dressed.geom_bodyid > 0
    assert np.all(dressed.geom_type[robot_geoms] == mujoco.mjtGeom.mjGEOM_MESH)
    assert not np.any(dressed.geom_contype[robot_geoms] | dressed.geom_conaffinity[robot_geoms])
    # bodies and joints are the robot's: poses are written the same way
    assert (dressed.nbody, dressed.nq) == (plain.nbody, plain.nq)


@needs_reference_meshes
def test_mesh_frames_draw_the_robot_where_primitives_do(gl):
    pose = np.r_[0.0, 0.0, 0.8, 1.0, 0.0, 0.0, 0.0, G1.default_joint_pos]
    frames = {}
    for meshes in ("off", str(REFERENCE_G1)):
        r = TrackingRenderer(G1, SMALL.updated(ghost=False, meshes=meshes))
        frames[meshes] = r.render(pose)
        r.close()
    plain, dressed = robot_mask(frames["off"]), robot_mask(frames[str(REFERENCE_G1)])
    assert plain.sum() > 200 and dressed.sum() > 200
    assert np.abs(centroid(plain) - centroid(dressed)).max() < 6  # same place, pixels
    assert np.count_nonzero(plain != dressed) > 50  # another shape


@needs_reference_meshes
def test_env_rgb_array_with_meshes_leaves_the_physics_model_alone(gl):
    cfg = SMALL.updated(ghost=False, meshes=str(REFERENCE_G1))
    env = TrackingVecEnv(num_envs=1, cfg=eval_cfg(), render_mode="rgb_array", render_cfg=cfg)
    env.reset(seed=0)
    before = (env.model.ngeom, env.model.nmesh)
    assert robot_mask(env.render()[0]).sum() > 200
    assert (env.model.ngeom, env.model.nmesh) == before and env.model.nmesh == 0
    assert _mesh_geoms(env._renderer.model) > 0
    env.close()


def test_meshes_auto_follows_the_environment_variable(monkeypatch, tmp_path):
    from gym_motion.render import mesh_source

    monkeypatch.setenv("GYM_MOTION_MESHES", "off")
    assert mesh_source(G1, "auto") is None
    model = tmp_path / "g1.xml"
    model.write_text("<mujoco/>")
    monkeypatch.setenv("GYM_MOTION_MESHES", str(model))
    assert mesh_source(G1, "auto") == model
    assert mesh_source(G1, "off") is None
    monkeypatch.setenv("GYM_MOTION_MESHES", str(tmp_path / "none.xml"))
    with pytest.raises(FileNotFoundError, match="GYM_MOTION_MESHES"):
        mesh_source(G1, "auto")
    with pytest.raises(FileNotFoundError, match="RenderCfg.meshes"):
        mesh_source(G1, tmp_path / "none.xml")


def test_an_mjcf_without_meshes_on_the_robot_is_refused(tmp_path):
    from gym_motion.render import build_scene

    other = tmp_path / "other.xml"
    other.write_text("<mujoco><worldbody><body name='x'><geom size='0.1'/></body></worldbody>"
                     "</mujoco>")  # fmt: skip
    with pytest.raises(ValueError, match="no mesh geom on the robot's bodies"):
        build_scene(G1, RenderCfg(meshes=str(other)))


def test_auto_meshes_from_an_mjcf_of_another_robot_fall_back_to_primitives(monkeypatch, tmp_path):
    from gym_motion.render import build_scene

    other = tmp_path / "other.xml"
    other.write_text("<mujoco><worldbody><body name='x'><geom size='0.1'/></body></worldbody>"
                     "</mujoco>")  # fmt: skip
    monkeypatch.setenv("GYM_MOTION_MESHES", str(other))
    with pytest.warns(UserWarning, match="drawing g1's collision primitives"):
        scene = build_scene(G1, RenderCfg(meshes="auto"))
    assert scene.nmesh == 0 and scene.ngeom == build_scene(G1, RenderCfg(meshes="off")).ngeom


@needs_reference_meshes
def test_bodies_without_a_mesh_in_the_source_keep_their_geoms(tmp_path):
    from gym_motion.render import build_scene

    source = mujoco.MjSpec.from_file(str(REFERENCE_G1))
    for geom in list(source.geoms):  # the source loses the pelvis meshes
        if geom.parent.name == "pelvis" and geom.type == mujoco.mjtGeom.mjGEOM_MESH:
            source.delete(geom)
    source.meshdir = str(REFERENCE_G1.parent / "assets")
    partial = tmp_path / "g1_partial.xml"
    partial.write_text(source.to_xml())
    scene = build_scene(G1, RenderCfg(meshes=str(partial), ghost=False))
    pelvis = scene.geom_bodyid == scene.body("pelvis").id
    assert pelvis.any() and not np.any(scene.geom_type[pelvis] == mujoco.mjtGeom.mjGEOM_MESH)
    knee = scene.geom_bodyid == scene.body("left_knee_link").id
    assert np.all(scene.geom_type[knee] == mujoco.mjtGeom.mjGEOM_MESH)
