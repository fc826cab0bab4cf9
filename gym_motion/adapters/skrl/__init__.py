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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gym_motion.adapters.skrl.info import SkrlInfo

_SOURCES = {"SkrlInfo": "info"}

__all__ = ["SkrlInfo"]


def __getattr__(name: str) -> Any:
    if name not in _SOURCES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_SOURCES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SOURCES))
