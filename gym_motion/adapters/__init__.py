"""Adapters to RL libraries: one package per library, named for it.

- `gym_motion.adapters.sb3`: Stable-Baselines3 (``VecEnv``, callbacks, ``gym-motion train``).
- `gym_motion.adapters.rsl_rl`: rsl_rl (``VecEnv``, BeyondMimic's PPO settings adapted to a CPU,
  ``gym-motion train --library rsl_rl``).
- `gym_motion.adapters.skrl`: skrl (its torch env interface, the statistics in
  ``info["episode"]``).
- `gym_motion.adapters.torchrl`: TorchRL (an ``EnvBase``, an info-dict reader for every
  ``final/*`` key).

Nothing here imports an adapter: each package pulls in its own library (install it with the
matching extra, e.g. ``pip install -e ".[sb3]"``), and the env, its statistics
(`gym_motion.envs.stats`) and evaluation (`gym_motion.evaluate`) need none of them.
"""

from __future__ import annotations

from typing import Any


def tracking_vec_env(env: Any, mode: str, who: str, why: str) -> Any:
    """The `TrackingVecEnv` under `env` (itself or under gymnasium vector wrappers), once `env`
    is checked to be a vector env in autoreset `mode` ("same_step" or "disabled").

    Raises:
        ValueError: naming `who`: `env` is not a vector env; its autoreset mode is not `mode`
            (`why` says why the library needs it); or no `TrackingVecEnv` is under it.
    """
    import gymnasium as gym

    from gym_motion.envs import TrackingVecEnv

    if not isinstance(env, gym.vector.VectorEnv):
        raise ValueError(f"{who} needs a vector env (a TrackingVecEnv, or one from "
                         f"gymnasium.make_vec), got {type(env).__name__}")  # fmt: skip
    got = getattr(env, "autoreset_mode", None) or env.metadata.get("autoreset_mode")
    wanted = gym.vector.AutoresetMode[mode.upper()]
    if got is None or gym.vector.AutoresetMode(got) is not wanted:
        raise ValueError(f"{who} needs the env in {wanted.name} autoreset mode ({why}), got "
                         f"{got!r}; create it with autoreset_mode={mode!r}")  # fmt: skip
    if not isinstance(env.unwrapped, TrackingVecEnv):
        raise ValueError(f"{who} needs a TrackingVecEnv, got {type(env.unwrapped).__name__}")
    return env.unwrapped


def lazy_exports(package: str, sources: dict[str, str]):
    """Module-level ``__getattr__`` and ``__dir__`` for an adapter package that names what it
    exports but imports a submodule (and so its RL library) only when a name is first used.

    Args:
        package: the package's ``__name__``.
        sources: exported name -> submodule (relative to `package`) that defines it.

    Returns:
        (``__getattr__``, ``__dir__``): assign them in the package's ``__init__``. A name not in
        `sources` raises AttributeError.
    """
    import importlib
    import sys

    def __getattr__(name: str):
        if name not in sources:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{sources[name]}"), name)
        setattr(sys.modules[package], name, value)  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(sources))

    return __getattr__, __dir__
