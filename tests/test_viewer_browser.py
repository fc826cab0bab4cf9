"""`gym-motion play` driven by a real headless browser: Chromium (Debian's, at /usr/bin/chromium
or on PATH) through Playwright, against the Viser server on a free localhost port.

Skipped, saying why, without viser (the ``viewer`` extra), Playwright or Chromium; `.ci/run`
installs all three.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("viser", reason="viser is not installed (the viewer extra)")
pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (the onnx extra)")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

CHROMIUM = (
    os.environ.get("GYM_MOTION_CHROMIUM")
    or shutil.which("chromium")
    or ("/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else None)
)
# headless, as root in CI, no GPU (WebGL in SwiftShader), no connections but localhost
FLAGS = [
    "--headless=new", "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-first-run", "--disable-quic",
]  # fmt: skip
VIEW = {"x": 320, "y": 160, "width": 620, "height": 620}  # the 3D view, left of the panel
FRAME_JS = r"""Array.from(document.querySelectorAll('input')).map(i => i.value)
    .find(v => /^\d+ \/ \d+$/.test(v)) ?? null"""

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium (apt-get install chromium; .ci/run installs it)",
)


@pytest.fixture(scope="module")
def play_url():
    """`gym-motion play --policy tracker --port 0`: yields its URL; stopped with SIGINT (as
    Ctrl-C) afterwards, which must end it cleanly."""
    cmd = [sys.executable, "-c", "import sys; from gym_motion.cli import main; sys.exit(main())",
           "play", "--policy", "tracker", "--port", "0", "--meshes", "off"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = None
    deadline = time.monotonic() + 120
    while url is None and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        found = re.search(r"serving (http://127\.0\.0\.1:\d+)", line)
        url = found and found.group(1)
    if url is None:
        proc.kill()
        pytest.fail(f"gym-motion play did not start: {proc.stderr.read()[-2000:]}")
    yield url, proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise


def _frame(page) -> int:
    text = page.evaluate(FRAME_JS)
    assert text is not None, "no frame counter on the page"
    return int(text.split(" / ")[0])


def _settled(page, seconds: float = 1.0) -> int | None:
    """The frame shown if it stays the same for `seconds`, else None."""
    before = _frame(page)
    time.sleep(seconds)
    return before if _frame(page) == before else None


def _still_view(page) -> np.ndarray | None:
    """The view if it stays the same (but for < 50 pixels) for half a second, else None."""
    before = _view(page)
    time.sleep(0.5)
    after = _view(page)
    return after if np.count_nonzero(np.any(after != before, axis=2)) < 50 else None


def _view(page) -> np.ndarray:
    from PIL import Image

    png = page.screenshot(clip=VIEW)
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(np.int32)


def _robot_pixels(view: np.ndarray) -> int:
    """Coloured pixels: the robot and its ghost; the floor, grid, sky and shadow are grey."""
    return int(np.count_nonzero(view.max(axis=2) - view.min(axis=2) > 20))


def _wait(predicate, timeout: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value is not None and value is not False:  # frame 0 counts
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def test_browser_plays_pauses_and_seeks_then_ctrl_c_stops_cleanly(play_url):
    url, proc = play_url
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(url)
            # the page loads: the panel with its counter, the 3D canvas with the robot in it
            page.get_by_role("button", name="Pause").wait_for(timeout=30_000)
            assert page.locator("canvas").count() >= 1
            _wait(lambda: _robot_pixels(_view(page)) > 500 or None, what="robot pixels")

            # playing: the frame counter advances
            first = _frame(page)
            _wait(lambda: _frame(page) != first or None, what="the frame counter to advance")

            # pause: the counter stops (once the browser has drawn the updates already sent:
            # a software-rendering browser on a busy machine lags the server by seconds, and
            # once stalled 1.5 s with 8 frames still to draw, so "stopped" means 3 s unchanged)
            page.get_by_role("button", name="Pause").click()
            paused = _wait(lambda: _settled(page, 3.0), timeout=45, what="the counter to stop")
            still = _wait(lambda: _still_view(page), what="the view to stop changing")
            time.sleep(1.5)
            assert _frame(page) == paused
            assert np.count_nonzero(np.any(_view(page) != still, axis=2)) < 50

            # the start-frame slider (0 .. 399): End moves it to the last start frame; the
            # robot and its reference start a new episode there
            slider = page.locator('[role="slider"][aria-valuemax="399"]')
            slider.focus()
            target = 399 if paused != 399 else 0
            slider.press("End" if target == 399 else "Home")
            _wait(lambda: _frame(page) == target or None, what=f"frame {target} (slider)")
            _wait(lambda: _settled(page) == target or None, what="the page to settle")
            moved = _view(page)
            changed = np.count_nonzero(np.any(moved != still, axis=2))
            assert changed > 500, f"only {changed} pixels changed when the reference moved"
            assert _robot_pixels(moved) > 500
            assert _frame(page) == target  # still paused

            # a single step advances one frame
            page.get_by_role("button", name="Step").click()
            _wait(lambda: _frame(page) == target + 1 or None, what="one step")
        finally:
            browser.close()

    proc.send_signal(signal.SIGINT)  # Ctrl-C
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, err[-2000:]
    assert "gym-motion play: stopped" in err and "Traceback" not in err


def test_a_policy_error_pauses_the_viewer_which_shows_it_and_stays_up(tmp_path):
    """A policy that outputs NaN on one frame: the step is refused (ValueError), the loop
    pauses and the panel says why; reset and play go on, and the server stops cleanly."""
    import threading

    from gym_motion.motion import DEFAULT_MOTION_PATH
    from gym_motion.play import PlaySession
    from gym_motion.render import RenderCfg
    from gym_motion.viewer import serve_browser

    calls = {"n": 0}

    def nan_once(obs):
        calls["n"] += 1
        actions = np.zeros((len(obs), 29), np.float32)
        if calls["n"] == 30:
            actions[0, 3] = np.nan
        return actions

    session = PlaySession([DEFAULT_MOTION_PATH], policy=nan_once)
    ready, stop, errors = threading.Event(), threading.Event(), []
    urls: list[str] = []

    def serve():
        try:
            serve_browser(session, port=0, render_cfg=RenderCfg(meshes="off"), stop=stop,
                          on_ready=lambda url: (urls.append(url), ready.set()))  # fmt: skip
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
            ready.set()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(60) and not errors, errors
    episode_js = r"""Array.from(document.querySelectorAll('input')).map(i => i.value)
        .find(v => v.startsWith('error') || v === 'running' || v.startsWith('ended')) ?? null"""
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(urls[0])
                page.get_by_role("button", name="Pause").wait_for(timeout=30_000)

                def error_shown():
                    text = page.evaluate(episode_js) or ""
                    return text if text.startswith("error") else None

                shown = _wait(error_shown, timeout=60, what="the error")
                assert shown.startswith("error (paused): ValueError:") and "not finite" in shown
                stopped = _wait(lambda: _settled(page, 2.0), timeout=30, what="a paused counter")
                assert stopped == 29  # the 30th step was refused: the robot stays at frame 29
                assert thread.is_alive()
                page.get_by_role("button", name="Reset to clip start").click()
                _wait(lambda: page.evaluate(episode_js) == "running" or None, what="reset")
                page.get_by_role("button", name="Play").click()
                _wait(lambda: _frame(page) > 5 or None, what="playing again")
            finally:
                browser.close()
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive() and not errors
