"""TorchRL adapter: the env as a TorchRL ``EnvBase``, and its info keys for TorchRL's gym wrapper.

- `env`: `TorchRLVecEnv`, a TorchRL env over a `TrackingVecEnv`: tensordicts on the learner's
  device, taken where the device MDP left them when it runs there (the observations never on
  the host), with every info key below. The way to train with TorchRL.
- `info`: `tracking_info_reader` (an info-dict reader with specs for the per-step reward terms
  and every ``final/*`` episode result, present in each step's tensordict, zeros where no
  episode ended) and `tracking_means` (`TrackingStats` means of a collected batch).

Create the env in DISABLED autoreset mode (TorchRL resets ended envs itself, through
``reset(options={"reset_mask": ...})``): `TorchRLVecEnv` needs it; TorchRL's ``GymWrapper``
takes SAME_STEP too and refuses NEXT_STEP. Install with
``pip install -e ".[torchrl]"``. The names below are imported on first use::

    from gym_motion.adapters.torchrl import TorchRLVecEnv, tracking_info_reader, tracking_means
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gym_motion.adapters import lazy_exports

if TYPE_CHECKING:
    from gym_motion.adapters.torchrl.env import TorchRLVecEnv
    from gym_motion.adapters.torchrl.info import tracking_info_reader, tracking_means

_SOURCES = {"TorchRLVecEnv": "env", "tracking_info_reader": "info", "tracking_means": "info"}

__all__ = ["TorchRLVecEnv", "tracking_info_reader", "tracking_means"]


__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
