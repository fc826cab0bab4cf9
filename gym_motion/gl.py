"""The OpenGL platform MuJoCo renders offscreen with, decided before ``mujoco`` is imported.

MuJoCo reads ``MUJOCO_GL`` once, when it is first imported, and with ``egl`` or ``osmesa`` it
imports PyOpenGL's platform module, which fails with an ``AttributeError`` (not the
``ImportError`` MuJoCo catches) when the system library is missing: then ``import mujoco``
itself fails. So:

- `guard_mujoco_gl` (run by ``import gym_motion``): a ``MUJOCO_GL`` naming a platform whose
  library does not load is replaced by ``disable`` with one warning, so that the package always
  imports; rendering then says what to install.
- `choose_for_rendering` (run by the commands that render): without a display, the first
  headless platform whose library loads (EGL, then OSMesa), or a one-line `GLUnavailable`
  naming the library to install and the ``MUJOCO_GL`` to set.

Commands that do not render leave ``MUJOCO_GL`` alone and never load OpenGL.
"""

from __future__ import annotations

import ctypes
import os
import sys
import warnings

__all__ = ["HEADLESS", "GLUnavailable", "choose_for_rendering", "guard_mujoco_gl", "loads"]

# platform -> (shared libraries PyOpenGL loads, Debian/Ubuntu package that ships them)
HEADLESS: dict[str, tuple[tuple[str, ...], str]] = {
    "egl": (("libEGL.so.1", "libEGL.so"), "libegl1"),
    "osmesa": (("libOSMesa.so.8", "libOSMesa.so.6", "libOSMesa.so"), "libosmesa6"),
}
_GUARDED = "_GYM_MOTION_GL_GUARDED"  # MUJOCO_GL the guard replaced (what the user had asked)


class GLUnavailable(RuntimeError):
    """No OpenGL platform for offscreen rendering loads here (the message says what to do)."""


def loads(platform: str) -> bool:
    """Whether the system library of headless `platform` ("egl" or "osmesa") loads."""
    names, _ = HEADLESS[platform]
    for name in names:
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        return True
    return False


def _has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def install_hint() -> str:
    """What to install and set for offscreen rendering, in one sentence."""
    return "; ".join(
        f"install {names[0].split('.so')[0]} (Debian/Ubuntu: {package}) and set MUJOCO_GL={name}"
        for name, (names, package) in HEADLESS.items()
    )


def guard_mujoco_gl() -> None:
    """If ``MUJOCO_GL`` is egl or osmesa and that library does not load, warn once and set
    ``MUJOCO_GL=disable`` (``import mujoco`` would otherwise fail), before mujoco is imported.
    Does nothing once mujoco is imported or for any other value."""
    wanted = os.environ.get("MUJOCO_GL", "").strip().lower()
    if wanted not in HEADLESS or "mujoco" in sys.modules or loads(wanted):
        return
    os.environ[_GUARDED] = wanted
    os.environ["MUJOCO_GL"] = "disable"
    names, package = HEADLESS[wanted]
    warnings.warn(
        f"MUJOCO_GL={wanted} but {names[0]} does not load: rendering is off (set MUJOCO_GL=disable"
        f" to silence this, or install {package})",
        RuntimeWarning,
        stacklevel=2,
    )


def choose_for_rendering() -> str | None:
    """Set ``MUJOCO_GL`` for offscreen rendering where it is unset and there is no display:
    the first headless platform whose library loads (egl, then osmesa). Returns the platform
    in effect (None: MuJoCo's default, a display's).

    Raises:
        GLUnavailable: no display and no headless platform loads, or ``MUJOCO_GL`` names one
            that does not (one line: the library to install and the ``MUJOCO_GL`` to set).
    """
    current = os.environ.get("MUJOCO_GL", "").strip().lower()
    guarded = os.environ.get(_GUARDED)
    if current == "disable" and guarded:
        names, package = HEADLESS[guarded]
        raise GLUnavailable(f"MUJOCO_GL={guarded} but {names[0]} does not load: install "
                            f"{package}, or {install_hint()}")  # fmt: skip
    if current == "disable":
        raise GLUnavailable("MUJOCO_GL=disable switches rendering off; unset it to render")
    if current:
        return current  # the user's choice
    if _has_display():
        return None
    for platform in HEADLESS:
        if loads(platform):
            os.environ["MUJOCO_GL"] = platform
            return platform
    raise GLUnavailable(f"no OpenGL platform for offscreen rendering loads here: {install_hint()}")
