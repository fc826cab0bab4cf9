"""A machine without libEGL (PyOpenGL installed, as mujoco requires): nothing but rendering
needs OpenGL, and rendering says in one line what to install (`gym_motion.gl`)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

# loaded by Python at start-up from PYTHONPATH: every load of a library named *EGL* fails, as
# on a slim container or a GPU server without libEGL
NO_EGL = textwrap.dedent(
    """
    import ctypes, ctypes.util
    _init = ctypes.CDLL.__init__
    def _no_egl(self, name, *args, **kwargs):
        if name and "EGL" in str(name):
            raise OSError(f"{name}: cannot open shared object file (test: no libEGL)")
        _init(self, name, *args, **kwargs)
    ctypes.CDLL.__init__ = _no_egl
    _find = ctypes.util.find_library
    ctypes.util.find_library = lambda name: None if "EGL" in name else _find(name)
    """
)


@pytest.fixture
def no_egl(tmp_path):
    """``run(args, mujoco_gl=None, osmesa=False)``: a Python subprocess on a machine without
    libEGL (and without libOSMesa unless `osmesa`), no display, MUJOCO_GL as given."""

    def run(args: list[str], mujoco_gl: str | None = None, osmesa: bool = False):
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("MUJOCO_GL", "DISPLAY", "WAYLAND_DISPLAY", "PYOPENGL_PLATFORM")
        }
        code = (
            NO_EGL
            if osmesa
            else NO_EGL.replace(
                '"EGL" in str(name)', '("EGL" in str(name) or "OSMesa" in str(name))'
            )
        )
        (tmp_path / "sitecustomize.py").write_text(code)
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
        if mujoco_gl is not None:
            env["MUJOCO_GL"] = mujoco_gl
        return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                              timeout=300)  # fmt: skip

    return run


def _cli(*argv: str) -> list[str]:
    return ["-c", "import sys; from gym_motion.cli import main; sys.exit(main(sys.argv[1:]))",
            *argv]  # fmt: skip


def test_the_simulation_breaks_mujoco_as_reported(no_egl):
    proc = no_egl(["-c", "import mujoco"], mujoco_gl="egl")
    assert proc.returncode != 0 and "eglQueryString" in proc.stderr


def test_the_package_imports_with_a_mujoco_gl_whose_library_is_missing(no_egl):
    code = "import gym_motion, mujoco, os; from gym_motion.envs import TrackingVecEnv; " \
        "TrackingVecEnv(2).reset(seed=0); print(os.environ['MUJOCO_GL'])"  # fmt: skip
    proc = no_egl(["-c", code], mujoco_gl="egl")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-1] == "disable"
    assert proc.stderr.count("MUJOCO_GL=egl but libEGL.so.1 does not load") == 1


def test_commands_that_do_not_render_never_touch_opengl(no_egl, tmp_path):
    for argv in (["bench", "--num-envs", "1", "--steps", "2"],
                 ["eval", "--policy", "tracker", "--max-seconds", "0.1"]):  # fmt: skip
        proc = no_egl(_cli(*argv))
        assert proc.returncode == 0, (argv, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr


def test_rendering_says_in_one_line_what_to_install(no_egl, tmp_path):
    out = tmp_path / "x.mp4"
    proc = no_egl(_cli("render", "--policy", "tracker", "--seconds", "0.1", "-o", str(out)))
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("gym-motion render: error: no OpenGL platform for offscreen")
    assert "libegl1" in line and "MUJOCO_GL=egl" in line and "MUJOCO_GL=osmesa" in line
    assert not out.exists()
    # the user's own MUJOCO_GL=egl: the same one line, naming what they asked for
    proc = no_egl(_cli("render", "--policy", "tracker", "-o", str(out)), mujoco_gl="egl")
    assert proc.returncode == 2
    assert "gym-motion render: error: MUJOCO_GL=egl but libEGL.so.1 does not load" in proc.stderr


def test_rendering_falls_back_to_osmesa_where_it_loads(no_egl):
    from gym_motion.gl import loads

    if not loads("osmesa"):
        pytest.skip("libOSMesa is not installed here")
    code = "from gym_motion.gl import choose_for_rendering; print(choose_for_rendering())"
    proc = no_egl(["-c", code], osmesa=True)
    assert proc.returncode == 0 and proc.stdout.split()[-1] == "osmesa"
