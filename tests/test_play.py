"""`gym_motion.play`: the session a viewer drives, the geometry it draws, and the env's
``start`` reset option under it; `gym-motion play`'s refusals (busy port, no display)."""

from __future__ import annotations

import socket

import mujoco
import numpy as np
import pytest

from gym_motion.cli import main
from gym_motion.envs import TrackingVecEnv, eval_cfg
from gym_motion.motion import DEFAULT_MOTION_PATH
from gym_motion.motion.library import MotionLibrary
from gym_motion.play import PlaySession, body_geometry
from gym_motion.render import RenderCfg, build_scene, state_qpos
from gym_motion.robots.g1 import G1


@pytest.fixture(scope="module")
def library() -> MotionLibrary:
    return MotionLibrary.from_paths(DEFAULT_MOTION_PATH, fps=50.0, robot=G1)


def clip_qpos(library: MotionLibrary, frame: int) -> np.ndarray:
    root = library.body_names.index(G1.root_body)
    row = int(library.starts[0]) + frame
    return np.concatenate(
        [library.body_pos_w[row, root], library.body_quat_w[row, root], library.joint_pos[row]]
    )


def test_env_reset_start_puts_robot_and_reference_on_that_frame(library):
    env = TrackingVecEnv(num_envs=2, motion=library, cfg=eval_cfg(), seed=0)
    env.reset(options={"start": (0, 123)})
    assert env.command.frames.tolist() == [123, 123]
    s, ids = env.state, np.arange(2)
    want = clip_qpos(library, 123)
    np.testing.assert_allclose(state_qpos(s.ref, s.root, ids), [want, want], atol=1e-5)
    # eval_cfg: no reset noise, so the robot starts on the reference
    np.testing.assert_allclose(state_qpos(s.robot, s.root, ids), [want, want], atol=1e-4)
    env.close()


@pytest.mark.parametrize("start", [(0, -1), (0, 400), (1, 0), ("a", 0), (0,)])
def test_env_reset_start_outside_the_library_is_refused(library, start):
    env = TrackingVecEnv(num_envs=1, motion=library, cfg=eval_cfg())
    with pytest.raises(ValueError, match="start"):
        env.reset(options={"start": start})
    env.close()


def test_session_steps_the_eval_env_and_reports_terms_errors_and_frame():
    with PlaySession([DEFAULT_MOTION_PATH], policy=None) as session:
        assert (session.frame, session.num_frames) == (0, 401)
        result = session.step()
        assert result.frame == 1 and result.ended is None and not result.failed
        assert {"anchor_pos", "body_pos", "action_rate"} <= set(result.rewards)
        assert {"mpkpe", "joint_pos", "anchor_pos"} <= set(result.errors)
        assert all(np.isfinite(v) for v in (*result.rewards.values(), *result.errors.values()))
        robot, ghost = session.poses()
        assert robot.shape == ghost.shape == (7 + G1.num_joints,)


def test_zero_action_falls_and_session_names_the_termination_then_restarts():
    with PlaySession([DEFAULT_MOTION_PATH], policy=None) as session:
        for _ in range(400):
            result = session.step()
            if result.ended:
                break
        assert result.failed
        cause, step = result.ended.rsplit(" at step ", 1)
        assert cause and "clip end" not in cause and int(step) == session.steps < 400
        restarted = session.step()  # the next step starts the clip over
        assert restarted.frame == 1 and restarted.ended is None and session.steps == 1


def test_session_reset_on_a_frame_and_switching_clips(library):
    clips = [DEFAULT_MOTION_PATH, DEFAULT_MOTION_PATH]
    with PlaySession(clips, policy=None) as session:
        session.reset(250)
        assert session.frame == 250
        np.testing.assert_allclose(session.poses()[1], clip_qpos(library, 250), atol=1e-5)
        session.step()
        session.select_clip(1)
        assert (session.clip_index, session.frame, session.steps) == (1, 0, 0)
        with pytest.raises(ValueError, match=r"start frame must be in \[0, 399\]"):
            session.reset(400)
        with pytest.raises(ValueError, match="clip index"):
            session.select_clip(2)


def test_kinematic_session_plays_the_clip_frames_and_loops_at_its_end(library):
    with PlaySession([DEFAULT_MOTION_PATH], kinematic=True) as session:
        session.reset(397)
        assert session.step().ended is None
        robot, ghost = session.poses()
        assert ghost is None
        np.testing.assert_allclose(robot, clip_qpos(library, 398), atol=1e-6)
        assert session.step().ended is None  # frame 399
        result = session.step()  # frame 400, the clip's last
        assert result.frame == 400
        assert result.ended == "clip end at step 3" and not result.failed
        assert result.rewards == {} and result.errors == {}
        assert session.step().frame == 1


def test_missing_clip_is_refused_before_any_env_is_built(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such clip"):
        PlaySession([tmp_path / "none.npz"])


def _segment_distance(points, a, b):
    t = np.clip((points - a) @ (b - a) / ((b - a) @ (b - a)), 0.0, 1.0)
    return np.linalg.norm(points - (a + t[:, None] * (b - a)), axis=1)


def test_body_geometry_tessellates_primitives_on_their_surfaces():
    spec = mujoco.MjSpec()
    body = spec.worldbody.add_body(name="b", pos=[1, 2, 3])
    body.add_geom(type=mujoco.mjtGeom.mjGEOM_CAPSULE, size=[0.05, 0.2, 0], pos=[0.1, 0, 0],
                  quat=[np.cos(0.4), np.sin(0.4), 0, 0])  # fmt: skip
    other = spec.worldbody.add_body(name="c")
    other.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.3, 0, 0])
    other.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.1, 0.2, 0.3], pos=[0, 0, 1])
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[1, 1, 1])
    meshes = {m.body: m for m in body_geometry(spec.compile(), segments=16)}
    assert set(meshes) == {"b", "c"}  # the world's plane is left out
    cap = meshes["b"]
    axis = np.array([0, -np.sin(0.8), np.cos(0.8)]) * 0.2  # the capsule's z, rotated about x
    centre = np.array([0.1, 0, 0])
    dist = _segment_distance(cap.vertices.astype(np.float64), centre - axis, centre + axis)
    np.testing.assert_allclose(dist, 0.05, atol=1e-6)  # body frame: no body offset applied
    assert cap.faces.max() < len(cap.vertices) and cap.faces.dtype == np.int32
    c = meshes["c"]
    sphere = np.linalg.norm(c.vertices.astype(np.float64), axis=1) <= 0.3 + 1e-6
    box = c.vertices[~sphere]
    assert len(box) == 8 and np.allclose(np.abs(box - [0, 0, 1]), [0.1, 0.2, 0.3])


def test_body_geometry_of_the_scene_has_every_robot_and_ghost_body_with_geoms():
    model = build_scene(G1, RenderCfg(meshes="off"))
    names = {m.body for m in body_geometry(model)}
    robot = {model.body(int(model.geom_bodyid[g])).name for g in range(model.ngeom)} - {"world"}
    assert names == robot and any(n.startswith("ghost/") for n in names)


def test_busy_port_is_a_one_line_error(capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = main(["play", "--policy", "none", "--port", str(port)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert f"port {port} on 127.0.0.1 is not free" in err


def test_a_port_left_in_time_wait_is_free_again_at_once():
    """A viewer stopped while a browser was connected leaves its port's connection in
    TIME_WAIT for 60 s; `check_port` binds it as the server does (SO_REUSEADDR)."""
    from gym_motion.viewer import check_port

    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    conn, _ = server.accept()
    conn.close()  # the server side closes first: its end goes to TIME_WAIT
    client.recv(1)
    client.close()
    server.close()
    with socket.socket() as plain:  # without SO_REUSEADDR the port is refused
        with pytest.raises(OSError):
            plain.bind(("127.0.0.1", port))
    assert check_port("127.0.0.1", port) == port


def test_native_viewer_without_a_display_is_a_one_line_error(capsys, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    code = main(["play", "--policy", "none", "--viewer", "native"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "--viewer native needs a display" in err


def test_policy_none_with_a_model_is_refused():
    with pytest.raises(SystemExit, match="--policy none plays the clip alone"):
        main(["play", "--policy", "none", "--onnx", "x.onnx"])
