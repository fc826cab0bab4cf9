"""Adapters to RL libraries: one package per library, named for it.

- `gym_motion.adapters.sb3`: Stable-Baselines3 (``VecEnv``, callbacks, ``gym-motion train``).
- `gym_motion.adapters.rsl_rl`: rsl_rl (``VecEnv``, BeyondMimic's PPO settings adapted to a CPU,
  ``gym-motion train --library rsl_rl``).
- `gym_motion.adapters.skrl`: skrl (the statistics in ``info["episode"]``).
- `gym_motion.adapters.torchrl`: TorchRL (an info-dict reader for every ``final/*`` key).

Nothing here imports an adapter: each package pulls in its own library (install it with the
matching extra, e.g. ``pip install -e ".[sb3]"``), and the env, its statistics
(`gym_motion.envs.stats`) and evaluation (`gym_motion.evaluate`) need none of them.
"""


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
