"""gym_motion: Gymnasium-native vectorized humanoid motion-tracking environments.

Importing the package registers ``GymMotion/G1-Tracking-v0`` (policy observation 160) and
``GymMotion/G1-Tracking-NoStateEst-v0`` (154) for `gymnasium.make` and `gymnasium.make_vec`.
"""

import gymnasium as gym

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
