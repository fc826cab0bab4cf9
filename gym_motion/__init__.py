"""gym_motion: Gymnasium-native vectorized humanoid motion-tracking environments.

Importing the package registers ``GymMotion/G1-Tracking-v0`` (policy observation 160) and
``GymMotion/G1-Tracking-NoStateEst-v0`` (154) for `gymnasium.make` and `gymnasium.make_vec`.
"""

import os

import gymnasium as gym

# Numba's OpenMP workers would spin-wait after each manager kernel and steal the cores the
# physics threads need right after (measured at N=1024 on 2 cores: 42 % of the step went to
# non-physics phases with spinning workers, 4 % without). A value set by the user wins.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

__version__ = "0.1.0"

_ENV_IDS = {
    "GymMotion/G1-Tracking-v0": {},
    "GymMotion/G1-Tracking-NoStateEst-v0": {"state_estimation": False},
}

for _id, _kwargs in _ENV_IDS.items():
    if _id not in gym.registry:
        gym.register(
            id=_id,
            entry_point="gym_motion.envs.single:TrackingEnv",
            vector_entry_point="gym_motion.envs.tracking:TrackingVecEnv",
            max_episode_steps=500,
            kwargs=_kwargs,
        )

__all__ = ["__version__"]
