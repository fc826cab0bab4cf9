"""The RL libraries `gym-motion train` can learn with: name -> `Learner` class.

Adding a library is writing its learner module (`gym_motion.training.<library>`, see
`gym_motion.training.skeleton.Learner`) and adding its line here. Importing this module loads
no RL library: each learner imports its library when it is used.
"""

from __future__ import annotations

from gym_motion.training.rsl_rl import RslRlLearner
from gym_motion.training.sb3 import SB3Learner

__all__ = ["LIBRARIES", "learner_class"]

LIBRARIES = {
    "sb3": SB3Learner,
    "rsl_rl": RslRlLearner,
}


def learner_class(name: str):
    """The `Learner` class of library `name`.

    Raises:
        ValueError: a library gym_motion cannot train with or load.
    """
    if name not in LIBRARIES:
        raise ValueError(f"a run of library {name!r}, which gym_motion cannot train or load; "
                         f"known: {sorted(LIBRARIES)}")  # fmt: skip
    return LIBRARIES[name]
