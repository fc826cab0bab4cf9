"""Where a robot's visual meshes come from: pictures only, never physics.

The G1's physics MJCF (`robots/g1/g1.xml`) carries collision primitives only. Its visual meshes
are Unitree's (BSD-3-Clause). `visual_mjcf` gives an MJCF of the robot whose bodies carry them,
chosen by ``GYM_MOTION_MESHES``:

- unset (or empty): the shipped set (`SHIPPED`), offline and always there: for the G1
  ``robots/g1/g1_visual.xml`` and ``robots/g1/meshes/``, Unitree's STL files decimated from
  393,270 to 64,088 triangles (1.8 MB of OBJ, with Unitree's LICENSE and the provenance of each
  file; made by ``scripts/make_g1_meshes.py``);
- ``off``: none, the pictures draw the collision primitives;
- ``menagerie``: the full meshes of the robot's MuJoCo Menagerie model (`MENAGERIE_MODELS`),
  through the ``mujoco-menagerie`` package (the ``meshes`` extra, Apache-2.0): read from its
  cache (or ``MENAGERIE_ROOT``) when there, else fetched once into the cache. Before a fetch a
  request of at most `FETCH_TIMEOUT_S` seconds checks that the server answers (menagerie itself
  waits up to 3 x 60 s). A model that cannot be had (package absent, no answer, failed fetch)
  is warned about and the shipped set is drawn instead; the failure is remembered for the
  process, and a failed fetch for `RETRY_AFTER_S` seconds in every process of the user through
  a marker file (`failure_marker`) in ``$XDG_CACHE_HOME/gym_motion`` (``~/.cache``);
- anything else: the path of such an MJCF (FileNotFoundError where there is none).

`gym_motion.render.dress` puts the meshes on a render-only copy of the robot's model, matched by
body name.
"""

from __future__ import annotations

import functools
import os
import threading
import time
import urllib.error
import urllib.request
import warnings
from pathlib import Path

from gym_motion.robots.spec import RobotSpec

__all__ = [
    "ENV_VAR",
    "FETCH_TIMEOUT_S",
    "MENAGERIE",
    "MENAGERIE_MODELS",
    "RETRY_AFTER_S",
    "SHIPPED",
    "failure_marker",
    "menagerie_mjcf",
    "shipped_mjcf",
    "visual_mjcf",
]

ENV_VAR = "GYM_MOTION_MESHES"
"""Environment variable: ``off``, ``menagerie``, or an MJCF with the robot's visual meshes."""

MENAGERIE = "menagerie"
"""``GYM_MOTION_MESHES`` value asking for the full meshes of MuJoCo Menagerie."""

SHIPPED: dict[str, Path] = {"g1": Path(__file__).resolve().parent / "g1" / "g1_visual.xml"}
"""`RobotSpec.name` -> the shipped MJCF with its visual meshes (decimated, offline)."""

MENAGERIE_MODELS: dict[str, tuple[str, str]] = {"g1": ("unitree_g1", "g1_mjlab")}
"""`RobotSpec.name` -> (MuJoCo Menagerie model name, entry point) with the same body names."""

FETCH_TIMEOUT_S = 10.0
"""How long the check before a Menagerie fetch waits for the server's answer, seconds."""

RETRY_AFTER_S = 600.0
"""How long a failed Menagerie fetch keeps every process from trying again, seconds."""


def visual_mjcf(robot: RobotSpec) -> Path | None:
    """An MJCF of `robot` whose bodies carry visual mesh geoms, or None (primitives); see the
    module docstring for the choice. Never touches the network unless ``GYM_MOTION_MESHES`` is
    ``menagerie``.

    Raises:
        FileNotFoundError: ``GYM_MOTION_MESHES`` names a file that does not exist.
    """
    value = os.environ.get(ENV_VAR, "").strip()
    if value == "off":
        return None
    if value == MENAGERIE:
        return menagerie_mjcf(robot)
    if value:
        path = Path(value)
        if not path.is_file():
            raise FileNotFoundError(f"{ENV_VAR}={value}: no such MJCF file")
        return path
    return shipped_mjcf(robot)


def menagerie_mjcf(robot: RobotSpec) -> Path | None:
    """The full MuJoCo Menagerie meshes of `robot` (fetched once, bounded; see the module
    docstring), else the shipped set (`shipped_mjcf`), warned about once."""
    return _menagerie(robot.name) or shipped_mjcf(robot)


def shipped_mjcf(robot: RobotSpec) -> Path | None:
    """The MJCF of `robot`'s shipped visual meshes (`SHIPPED`), or None for a robot without."""
    path = SHIPPED.get(robot.name)
    return path if path is not None and path.is_file() else None


def failure_marker() -> Path:
    """The file whose age (under `RETRY_AFTER_S`) says a Menagerie fetch failed lately; it
    holds the address that failed. Deleting it allows a new try at once."""
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "gym_motion" / "menagerie-fetch-failed"


@functools.cache
def _menagerie(robot_name: str) -> Path | None:
    """The Menagerie MJCF of `robot_name`, or None, warned about once per process."""
    model = MENAGERIE_MODELS.get(robot_name)
    if model is None:
        _warn(f"{robot_name} has no MuJoCo Menagerie model")
        return None
    try:
        import mujoco_menagerie
    except ImportError:
        _warn("the mujoco-menagerie package is not installed (pip install 'gym_motion[meshes]')")
        return None
    url = None
    try:
        entry = mujoco_menagerie.get(model[0])
        cache = mujoco_menagerie.Cache()
        if cache.root is None and not cache.is_cached(entry):  # else no network
            url = f"{cache.base_url}/{entry.asset}"
            _check_recent_failure(url)
            _probe(url, FETCH_TIMEOUT_S)
        return Path(entry.xml(model[1], cache))
    except Exception as exc:  # noqa: BLE001 - network, cache and registry errors alike
        if url is not None and not isinstance(exc, _RecentFailure):
            _remember_failure(url, exc)
        _warn(f"the {robot_name} model of mujoco-menagerie ({model[0]}) could not be had: {exc}")
        return None


class _RecentFailure(RuntimeError):
    pass


def _check_recent_failure(url: str) -> None:
    marker = failure_marker()
    try:
        age = time.time() - marker.stat().st_mtime
        failed = marker.read_text().splitlines()[0]
    except (OSError, IndexError):
        return
    if failed == url and 0.0 <= age < RETRY_AFTER_S:
        raise _RecentFailure(
            f"fetching {url} failed {age:.0f} s ago; not tried again for {RETRY_AFTER_S:.0f} s "
            f"(delete {marker} to try now)"
        )


def _remember_failure(url: str, exc: BaseException) -> None:
    marker = failure_marker()
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(f"{url}\n{type(exc).__name__}: {exc}\n")
    except OSError:  # a read-only home: remembered for this process only
        pass


def _probe(url: str, timeout: float) -> None:
    """Return once the server of `url` answers a HEAD request (any HTTP status), within
    `timeout` seconds all told (name lookup, proxy and redirects included).

    Raises:
        TimeoutError: no answer in time. OSError: no connection (urllib's URLError).
    """
    outcome: list[BaseException | None] = []

    def ask() -> None:
        request = urllib.request.Request(url, method="HEAD", headers={"User-Agent": "gym_motion"})
        try:
            with urllib.request.urlopen(request, timeout=timeout):
                pass
            outcome.append(None)
        except urllib.error.HTTPError:  # an answer: the network works
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            outcome.append(exc)

    thread = threading.Thread(target=ask, name="gym_motion-menagerie-probe", daemon=True)
    thread.start()
    thread.join(timeout)
    error = outcome[0] if outcome else None
    if (
        not outcome
        or isinstance(error, TimeoutError)
        or isinstance(getattr(error, "reason", None), TimeoutError)
    ):  # the join's deadline or the socket's, whichever came first
        raise TimeoutError(f"{url}: no answer in {timeout:g} s") from error
    if error is not None:
        raise error


def _warn(reason: str) -> None:
    warnings.warn(f"{ENV_VAR}={MENAGERIE}: {reason}; drawing the shipped meshes", stacklevel=4)
