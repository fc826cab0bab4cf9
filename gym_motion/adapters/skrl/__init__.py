"""skrl adapter: the env's statistics in the form skrl's trainers log.

- `info`: `SkrlInfo`, a gymnasium vector wrapper that puts the step's tracking statistics in
  ``info["episode"]`` as 1-element torch tensors (what skrl's trainers write to TensorBoard) and
  forwards ``call`` / ``get_attr`` / ``set_attr`` (skrl renders through ``env.call("render")``).

skrl needs the env in SAME_STEP autoreset mode. Install it with ``pip install -e ".[skrl]"``.
The names below are imported on first use, so importing this package loads neither skrl nor
torch::

    from gym_motion.adapters.skrl import SkrlInfo
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gym_motion.adapters import lazy_exports

if TYPE_CHECKING:
    from gym_motion.adapters.skrl.info import SkrlInfo

_SOURCES = {"SkrlInfo": "info"}

__all__ = ["SkrlInfo"]


__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
