"""skrl adapter: the env as skrl's trainers step it, and its statistics where they log them.

- `vec_env`: `SkrlVecEnv`, skrl's torch env wrapper over a `TrackingVecEnv`: tensors on the
  learner's device, taken where the device MDP left them when it runs there (the observations
  never on the host), and the statistics below in ``info["episode"]``. The way to train with
  skrl.
- `info`: `SkrlInfo`, a gymnasium vector wrapper that puts the step's tracking statistics in
  ``info["episode"]`` as 1-element torch tensors (what skrl's trainers write to TensorBoard) and
  forwards ``call`` / ``get_attr`` / ``set_attr`` (skrl renders through ``env.call("render")``).

skrl needs the env in SAME_STEP autoreset mode. Install it with ``pip install -e ".[skrl]"``.
The names below are imported on first use, so importing this package loads neither skrl nor
torch::

    from gym_motion.adapters.skrl import SkrlInfo, SkrlVecEnv
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gym_motion.adapters import lazy_exports

if TYPE_CHECKING:
    from gym_motion.adapters.skrl.info import SkrlInfo
    from gym_motion.adapters.skrl.vec_env import SkrlVecEnv

_SOURCES = {"SkrlInfo": "info", "SkrlVecEnv": "vec_env"}

__all__ = ["SkrlInfo", "SkrlVecEnv"]


__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
