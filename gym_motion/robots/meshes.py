"""Where a robot's visual meshes come from: pictures only, never physics.

The shipped G1 MJCF (`robots/g1/g1.xml`) carries collision primitives only. Its visual meshes
(Unitree's STL files, BSD-3-Clause) are not copied into this repository; `visual_mjcf` finds an
MJCF of the robot that carries them, in this order:

1. ``GYM_MOTION_MESHES``: the path of such an MJCF (``off``: none, primitives everywhere);
2. the robot's MuJoCo Menagerie model (`RobotSpec.name` -> `MENAGERIE_MODELS`), through the
   ``mujoco-menagerie`` package (the ``meshes`` extra, Apache-2.0; it fetches the model once
   into its cache, then reads it offline).

None when neither is there (package absent, no network for the first fetch): the pictures
then draw the collision primitives, as before. `gym_motion.render.dress` puts the meshes on a
render-only copy of the robot's model, matched by body name.
"""

from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path

from gym_motion.robots.spec import RobotSpec

__all__ = ["ENV_VAR", "MENAGERIE_MODELS", "visual_mjcf"]

ENV_VAR = "GYM_MOTION_MESHES"
"""Environment variable: an MJCF with the robot's visual meshes, or ``off``."""

MENAGERIE_MODELS: dict[str, tuple[str, str]] = {"g1": ("unitree_g1", "g1_mjlab")}
"""`RobotSpec.name` -> (MuJoCo Menagerie model name, entry point) with the same body names."""


def visual_mjcf(robot: RobotSpec) -> Path | None:
    """An MJCF of `robot` whose bodies carry visual mesh geoms, or None (see the module
    docstring for where it looks). A menagerie model that cannot be had is warned about once
    per process and gives None.

    Raises:
        FileNotFoundError: ``GYM_MOTION_MESHES`` names a file that does not exist.
    """
    value = os.environ.get(ENV_VAR, "")
    if value == "off":
        return None
    if value:
        path = Path(value)
        if not path.is_file():
            raise FileNotFoundError(f"{ENV_VAR}={value}: no such MJCF file")
        return path
    return _menagerie(robot.name)


@functools.cache
def _menagerie(robot_name: str) -> Path | None:
    model = MENAGERIE_MODELS.get(robot_name)
    if model is None:
        return None
    try:
        import mujoco_menagerie
    except ModuleNotFoundError:
        return None
    try:
        return Path(mujoco_menagerie.get(model[0]).xml(model[1]))
    except Exception as exc:  # noqa: BLE001 - download, cache and registry errors alike
        warnings.warn(
            f"the {robot_name} meshes of mujoco-menagerie ({model[0]}) could not be had, "
            f"drawing collision primitives: {exc}",
            stacklevel=3,
        )
        return None
