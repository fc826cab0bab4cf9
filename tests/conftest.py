"""Settings of the whole test session that must come before mujoco is first imported, and the
`gl` fixture of the rendering tests."""

import os
import sys

import pytest

# MuJoCo picks its OpenGL platform from MUJOCO_GL when it is first imported (by the first test
# module that builds an env). Without a display, offscreen rendering needs EGL, which also works
# in software without a GPU. A value set by the user wins.
if sys.platform.startswith("linux") and not (
    os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
):
    os.environ.setdefault("MUJOCO_GL", "egl")


@pytest.fixture(scope="session")
def gl() -> None:
    """Skips the test, saying why, when no offscreen OpenGL context can be made here."""
    import mujoco

    model = mujoco.MjModel.from_xml_string("<mujoco/>")
    try:
        renderer = mujoco.Renderer(model, 8, 8)
    except Exception as exc:  # noqa: BLE001 - MuJoCo/PyOpenGL raise several kinds
        pytest.skip(
            f"offscreen rendering unavailable (MUJOCO_GL={os.environ.get('MUJOCO_GL')!r}): {exc}"
        )
    renderer.close()
