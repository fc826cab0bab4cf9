"""The RL libraries `gym-motion train` can learn with: name -> `Learner` class.

Adding a library is writing its learner module (`gym_motion.training.<library>`, see
`gym_motion.training.skeleton.Learner`) and adding its line here. Importing this module loads
no RL library: each learner imports its library when it is used.
"""

from __future__ import annotations

from gym_motion.training.rsl_rl import RslRlLearner
from gym_motion.training.sb3 import SB3Learner
from gym_motion.training.sb3.sampled import SB3SampledLearner

__all__ = ["LIBRARIES", "SAMPLED", "learner_class"]

LIBRARIES = {
    "sb3": SB3Learner,
    "rsl_rl": RslRlLearner,
}

# Learners of runs whose rollouts Ray samplers collect (``--samplers``; the learner's
# ``collector(config)`` is what each sampler runs, `gym_motion.training.samplers`)
SAMPLED = {
    "sb3": SB3SampledLearner,
}


def learner_class(name: str, sampled: bool = False):
    """The `Learner` class of library `name` (`sampled`: of a run with Ray samplers).

    Raises:
        ValueError: a library gym_motion cannot train with or load, or that has no sampled
            learner.
    """
    if name not in LIBRARIES:
        raise ValueError(f"a run of library {name!r}, which gym_motion cannot train or load; "
                         f"known: {sorted(LIBRARIES)}")  # fmt: skip
    if not sampled:
        return LIBRARIES[name]
    if name not in SAMPLED:
        raise ValueError(f"--samplers trains with library {', '.join(SAMPLED)}, not {name!r}")
    return SAMPLED[name]
