"""Viewers of a `gym_motion.play.PlaySession`: in the browser (Viser) or MuJoCo's own window.

`serve_browser` starts a Viser server on localhost: the robot and its reference ghost in 3D
(triangle meshes per body from the picture-only scene of `gym_motion.render.build_scene`,
posed each update from the scene's forward kinematics), and a panel: play / pause / single
step, speed, a slider over the clip's frames (moving it starts a new episode there: robot and
reference jump to that frame), reset to the clip start, clip switch, live plots of the
per-step reward terms and tracking errors, and how the last episode ended. The session is
stepped only on the calling thread; the browser's events reach it through a queue.

`open_native` opens MuJoCo's passive viewer (``mujoco.viewer.launch_passive``) on the same
scene; it needs a display.

Needs the ``viewer`` extra (``pip install -e ".[viewer]"``: viser) for the browser; nothing
else in gym_motion imports this module.
"""

from __future__ import annotations

import os
import queue
import signal
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import mujoco
import numpy as np

from gym_motion.play import PlaySession, StepResult, body_geometry
from gym_motion.render import GHOST_PREFIX, RenderCfg, build_scene, qpos_columns

__all__ = [
    "HISTORY",
    "ScenePoser",
    "check_display",
    "check_port",
    "open_native",
    "serve_browser",
]

HISTORY = 250
"""Control steps shown by the live plots (5 s at 50 Hz)."""

MAX_SPEED = 4.0  # x real time
_UPDATE_S = 1.0 / 30.0  # the scene is sent at most this often, s
_CAMERA_OFFSET = np.array([1.2, -1.6, 0.3])  # from the anchor body, m (2 m away, in front)


class ScenePoser:
    """The picture-only scene of a session's robot posed by forward kinematics (no renderer).

    Args:
        session: the `PlaySession` whose robot it draws (a ghost unless kinematic).
        cfg: colours and `RenderCfg.meshes` (size and camera are not used).

    Attributes:
        model, data: the scene's MjModel (`build_scene`) and MjData.
    """

    def __init__(self, session: PlaySession, cfg: RenderCfg | None = None):
        cfg = (cfg or RenderCfg()).updated(ghost=not session.kinematic)
        self.cfg = cfg
        self.model = build_scene(session.robot, cfg)
        self.data = mujoco.MjData(self.model)
        self._robot = qpos_columns(self.model, session.robot, "")
        self._ghost = qpos_columns(self.model, session.robot, GHOST_PREFIX) if cfg.ghost else None
        self._anchor = self.model.body(session.robot.anchor_body).id

    def pose(self, robot_qpos: np.ndarray, ghost_qpos: np.ndarray | None) -> None:
        """Set the poses ((7 + J,) `state_qpos` layout) and run ``mj_kinematics``."""
        self.data.qpos[self._robot] = robot_qpos
        if self._ghost is not None and ghost_qpos is not None:
            self.data.qpos[self._ghost] = ghost_qpos
        mujoco.mj_kinematics(self.model, self.data)

    @property
    def anchor_pos(self) -> np.ndarray:
        """(3,) float64 world position of the robot's anchor body, m."""
        return self.data.xpos[self._anchor].copy()


def check_port(host: str, port: int) -> int:
    """`port` if it can be bound on `host` now (0: a free port the OS picks, returned). A port
    whose last connections are in TIME_WAIT (a viewer stopped with a browser connected) is
    free, as for the server, which binds with ``SO_REUSEADDR`` too; one a process listens on is
    not.

    Raises:
        ValueError: the port is in use (or not allowed), in one line.
    """
    if not 0 <= int(port) <= 65535:
        raise ValueError(f"port must be in [0, 65535], got {port}")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, int(port)))
        except OSError as exc:
            raise ValueError(
                f"port {port} on {host} is not free ({exc.strerror}); pick another with "
                "--port (0: any free port)"
            ) from None
        return int(s.getsockname()[1])


def serve_browser(
    session: PlaySession,
    *,
    port: int = 8080,
    host: str = "127.0.0.1",
    render_cfg: RenderCfg | None = None,
    on_ready: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
    paused: bool = False,
) -> None:
    """Serve `session` in the browser until `stop` is set or Ctrl-C; the server is stopped
    and the session left open (its owner closes it).

    Args:
        session: what to play; stepped on this thread only.
        port: TCP port (0: a free one). host: address to bind (localhost by default).
        render_cfg: colours and meshes of the robot (`RenderCfg`).
        on_ready: called with the URL once the server listens.
        stop: set it (from another thread) to return.
        paused: start paused.

    Raises:
        ValueError: the port is not free.
        ModuleNotFoundError: viser is not installed (the ``viewer`` extra).
    """
    import viser

    port = check_port(host, port)  # viser would silently take the next free port instead
    server = viser.ViserServer(host=host, port=port, label="gym-motion play", verbose=False)
    stop = stop or threading.Event()
    # Ctrl-C sets `stop`, so the loop ends between two updates: a KeyboardInterrupt raised in
    # the middle of one could leave a lock of the server held, and its stop() then hangs
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        ui = _BrowserUI(server, session, render_cfg, paused)
        url = f"http://{host}:{server.get_port()}"
        if on_ready is not None:
            on_ready(url)
        ui.run(stop)
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        # bounded: a browser connection that does not close must not keep Ctrl-C waiting
        stopper = threading.Thread(target=server.stop, daemon=True)
        stopper.start()
        stopper.join(timeout=10.0)


class _BrowserUI:
    """The scene handles, the panel and the loop of `serve_browser`."""

    def __init__(self, server: Any, session: PlaySession, render_cfg: RenderCfg | None,
                 paused: bool):  # fmt: skip
        self.server, self.session = server, session
        self.poser = ScenePoser(session, render_cfg)
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.playing = not paused
        self.speed = 1.0
        self._steps: deque[int] = deque(maxlen=HISTORY)
        self._rewards: dict[str, deque[float]] = {}
        self._errors: dict[str, deque[float]] = {}
        scene = server.scene
        scene.set_up_direction("+z")
        self.floor = scene.add_grid("/floor", width=40.0, height=40.0, cell_size=1.0,
                                    section_size=1.0)  # fmt: skip
        self._bodies = []
        for mesh in body_geometry(self.poser.model):
            ghost = mesh.body.startswith(GHOST_PREFIX)
            name = ("/ghost/" + mesh.body[len(GHOST_PREFIX) :]) if ghost else "/robot/" + mesh.body
            handle = scene.add_mesh_simple(
                name, mesh.vertices, mesh.faces,
                color=tuple(int(255 * c) for c in mesh.rgba[:3]),
                opacity=float(mesh.rgba[3]) if mesh.rgba[3] < 1.0 else None,
            )  # fmt: skip
            self._bodies.append((self.poser.model.body(mesh.body).id, handle))

        gui = server.gui
        gui.add_markdown("**gym-motion play**: the robot (solid) and its reference (ghost)")
        self.frame_text = gui.add_text("Frame", initial_value="", disabled=True)
        self.episode_text = gui.add_text("Episode", initial_value="running", disabled=True)
        buttons = gui.add_button_group("Playback", options=("Play", "Pause", "Step"))
        buttons.on_click(lambda e: self.events.put(("button", e.target.value)))
        speed = gui.add_slider("Speed", min=0.1, max=MAX_SPEED, step=0.1, initial_value=1.0)
        speed.on_update(lambda e: self.events.put(("speed", e.target.value)))
        self.seek = gui.add_slider("Start frame", min=0, max=max(1, session.last_start), step=1,
                                   initial_value=0)  # fmt: skip
        self.seek.on_update(self._on_seek)
        reset = gui.add_button("Reset to clip start")
        reset.on_click(lambda _: self.events.put(("reset", 0)))
        clip = gui.add_dropdown("Clip", options=tuple(session.clip_names),
                                initial_value=session.clip_names[0])  # fmt: skip
        clip.on_update(
            lambda e: self.events.put(("clip", session.clip_names.index(e.target.value)))
        )
        self.follow = gui.add_checkbox("Follow the robot", initial_value=True)
        self.follow.on_update(lambda _: self.events.put(("follow", None)))
        self.reward_plot = self.error_plot = None
        if not session.kinematic:
            self.reward_plot = gui.add_uplot(
                data=(np.zeros(1), np.zeros(1)), series=({"label": "step"}, {"label": "-"}),
                title="reward terms (per step, before dt)", aspect=1.4,
                scales={"x": {"time": False}},
            )  # fmt: skip
            self.error_plot = gui.add_uplot(
                data=(np.zeros(1), np.zeros(1)), series=({"label": "step"}, {"label": "-"}),
                title="tracking errors (m, rad)", aspect=1.4, scales={"x": {"time": False}},
            )  # fmt: skip
        self._update_scene()
        self._show_frame()
        camera = server.initial_camera  # new clients and "Reset View" start here
        anchor = self._view_anchor()
        camera.position = anchor + _CAMERA_OFFSET
        camera.look_at = anchor
        server.on_client_connect(self._on_connect)

    # ------------------------------------------------------------------ events (viser threads)
    def _on_seek(self, event: Any) -> None:
        if event.client is not None:  # the user moved it (the loop's own updates have none)
            self.events.put(("seek", int(event.target.value)))

    def _on_connect(self, client: Any) -> None:
        anchor = self._view_anchor()
        # position first: viser moves look_at along with it
        client.camera.position = anchor + _CAMERA_OFFSET
        client.camera.look_at = anchor

    # ------------------------------------------------------------------ the loop (this thread)
    def run(self, stop: threading.Event) -> None:
        s = self.session
        next_step = time.perf_counter()
        last_update, dirty = 0.0, False  # dirty: a change not yet sent to the browsers
        while not stop.is_set():
            changed = self._handle_events()
            now = time.perf_counter()
            if self.playing and now >= next_step:
                # behind by more than 10 steps (a slow machine): drop them, don't race
                next_step = max(next_step, now - 10 * s.dt / self.speed)
                while self.playing and next_step <= now:
                    self._guarded(self._step)
                    next_step += s.dt / self.speed
                changed = True
            elif not self.playing:
                next_step = now
            dirty = dirty or changed
            if dirty and now - last_update >= _UPDATE_S:
                self._update_scene()
                self._show_frame()
                last_update, dirty = now, False
            time.sleep(min(_UPDATE_S / 2, max(0.0, next_step - time.perf_counter())))

    def _step(self) -> None:
        self._record(self.session.step())

    def _guarded(self, action: Callable[[], None]) -> None:
        """Run `action` (a step, a reset, a clip switch); an exception from the policy or the
        env pauses playback and shows its message where terminations are shown, and the
        viewer stays up: the user can scrub, switch clips or reset."""
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - any policy or env error; the loop goes on
            self.playing = False
            message = " ".join(f"{type(exc).__name__}: {exc}".split())
            self.episode_text.value = f"error (paused): {message}"[:500]
            print(f"gym-motion play: paused by an error: {message}", file=sys.stderr, flush=True)

    def _handle_events(self) -> bool:
        changed = False
        while True:
            try:
                event = self.events.get_nowait()
            except queue.Empty:
                return changed
            changed = True
            self._guarded(lambda e=event: self._handle(*e))

    def _handle(self, kind: str, value: Any) -> None:
        """Apply one event from the panel (run through `_guarded`)."""
        s = self.session
        if kind == "button":
            if value == "Play":
                self.playing = True
            elif value == "Pause":
                self.playing = False
            else:  # Step
                self.playing = False
                self._step()
        elif kind == "speed":
            self.speed = float(value)
        elif kind == "seek":
            s.reset(min(int(value), s.last_start))
            self._clear_plots()
        elif kind == "reset":
            s.reset(0)
            self._clear_plots()
        elif kind == "clip" and value != s.clip_index:
            s.select_clip(value)
            self.seek.max = max(1, s.last_start)
            self._clear_plots()

    def _record(self, result: StepResult) -> None:
        if result.ended is not None:
            self.episode_text.value = "ended: " + result.ended
            if result.failed:
                self.playing = False  # hold the failure in view; Play restarts the clip
        elif self.session.steps == 1:  # a new episode: the plots start over
            self._clear_plots()
        if not result.rewards:
            return
        self._steps.append(self.session.steps)
        for store, values in ((self._rewards, result.rewards), (self._errors, result.errors)):
            for k, v in values.items():
                store.setdefault(k, deque(maxlen=HISTORY)).append(v)

    def _clear_plots(self) -> None:
        self._steps.clear()
        self._rewards.clear()
        self._errors.clear()
        self.episode_text.value = "running"

    def _show_frame(self) -> None:
        s = self.session
        self.frame_text.value = f"{s.frame} / {s.num_frames - 1}"
        self.seek.value = min(s.frame, s.last_start)
        if self.reward_plot is None or len(self._steps) < 2:
            return
        x = np.asarray(self._steps, np.float64)
        for plot, store in ((self.reward_plot, self._rewards), (self.error_plot, self._errors)):
            names = sorted(store)
            data = tuple(np.asarray(store[k], np.float64) for k in names)
            if len(plot.series) != len(names) + 1:
                plot.series = ({"label": "step"},) + tuple(
                    {"label": k, "stroke": _COLOURS[i % len(_COLOURS)]} for i, k in enumerate(names)
                )
            plot.data = (x, *data)

    def _view_anchor(self) -> np.ndarray:
        """Where the anchor body is drawn: (3,) m, over the origin when following."""
        anchor = self.poser.anchor_pos
        if self.follow.value:
            anchor[:2] = 0.0
        return anchor

    def _update_scene(self) -> None:
        robot, ghost = self.session.poses()
        self.poser.pose(robot, ghost)
        d = self.poser.data
        # following the robot moves the world under it, not the users' cameras
        shift = np.zeros(3)
        if self.follow.value:
            shift[:2] = self.poser.anchor_pos[:2]
        with self.server.atomic():
            for body, handle in self._bodies:
                handle.position = d.xpos[body] - shift
                handle.wxyz = d.xquat[body]
            self.floor.position = -shift


_COLOURS = ("#e6550d", "#3182bd", "#31a354", "#756bb1", "#636363", "#d6616b", "#8c6d31",
            "#17becf", "#bcbd22", "#e377c2")  # fmt: skip


def check_display() -> None:
    """Nothing where a window can be opened.

    Raises:
        ValueError: Linux without DISPLAY or WAYLAND_DISPLAY (one line, naming the browser
            viewer, which needs no display).
    """
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        raise ValueError(
            "--viewer native needs a display (DISPLAY or WAYLAND_DISPLAY is not set); "
            "use --viewer browser"
        )


def open_native(session: PlaySession, render_cfg: RenderCfg | None = None,
                stop: threading.Event | None = None) -> None:  # fmt: skip
    """Play `session` in MuJoCo's passive viewer window until it is closed (or Ctrl-C):
    the robot and its ghost stepped in real time, looping over the clip.

    Raises:
        ValueError: no display to open a window on (the browser viewer works without one).
    """
    check_display()
    import mujoco.viewer

    poser = ScenePoser(session, render_cfg)
    poser.pose(*session.poses())
    stop = stop or threading.Event()
    try:
        with mujoco.viewer.launch_passive(poser.model, poser.data) as window:
            while window.is_running() and not stop.is_set():
                t = time.perf_counter()
                session.step()
                poser.pose(*session.poses())
                window.sync()
                time.sleep(max(0.0, session.dt - (time.perf_counter() - t)))
    except KeyboardInterrupt:
        pass
