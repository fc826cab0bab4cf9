"""gym_motion: Gymnasium-native vectorized humanoid motion-tracking environments.

Importing the package registers ``GymMotion/G1-Tracking-v0`` (policy observation 160) and
``GymMotion/G1-Tracking-NoStateEst-v0`` (154) for `gymnasium.make` and `gymnasium.make_vec`.
"""

import os

import gymnasium as gym

# Numba's OpenMP workers spin for a short while after each manager kernel, so the ~35 kernels of
# a step launch back to back (~2 us each instead of ~67 us when the workers sleep at once), then
# sleep before the physics threads need the cores (libgomp's default spin, 300000 iterations,
# lasts long enough to slow the physics under load). Measured at N=1024 on 2 cores: 3.7 % of the
# step in non-physics phases, against 6.4 % with passive waiting. A value set by the user wins.
os.environ.setdefault("GOMP_SPINCOUNT", "10000")

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
