"""gym_motion: Gymnasium-native vectorized humanoid motion-tracking environments.

Importing the package registers, for `gymnasium.make` and `gymnasium.make_vec`:

- ``GymMotion/G1-Tracking-v0``: the training task (policy observation 160);
- ``GymMotion/G1-Tracking-NoStateEst-v0``: the same without anchor position and base linear
  velocity (154);
- ``GymMotion/G1-Tracking-Eval-v0``: evaluation (clips from their start, no noise, no
  randomisation).
"""

import os

import gymnasium as gym

# Numba's OpenMP workers spin for a short while after each manager kernel, so the ~35 kernels of
# a step launch back to back (~2 us each instead of ~67 us when the workers sleep at once), then
# sleep before the physics threads need the cores (libgomp's default spin, 300000 iterations,
# lasts long enough to slow the physics under load). Measured at N=1024 on 2 cores: 3.7 % of the
# step in non-physics phases, against 6.4 % with passive waiting. A value set by the user wins.
os.environ.setdefault("GOMP_SPINCOUNT", "10000")

# A MUJOCO_GL whose library is missing would make `import mujoco` fail: switched off, with a
# warning, before any module of the package imports mujoco (gym_motion.gl)
from gym_motion.gl import guard_mujoco_gl  # noqa: E402

guard_mujoco_gl()

__version__ = "0.1.0"

_TRAIN = ("gym_motion.envs.registration:tracking_env", "gym_motion.envs.tracking:TrackingVecEnv")
_EVAL = ("gym_motion.envs.registration:eval_env", "gym_motion.envs.registration:eval_vec_env")
# id -> (entry point, vector entry point, kwargs)
ENV_IDS = {
    "GymMotion/G1-Tracking-v0": (*_TRAIN, {}),
    "GymMotion/G1-Tracking-NoStateEst-v0": (*_TRAIN, {"state_estimation": False}),
    "GymMotion/G1-Tracking-Eval-v0": (*_EVAL, {}),
}

# No registered time limit: the env owns it (cfg.episode_length_s, 500 steps by default, or the
# max_episode_steps given to make / make_vec; see gym_motion.envs.registration).
for _id, (_entry, _vector_entry, _kwargs) in ENV_IDS.items():
    if _id not in gym.registry:
        gym.register(
            id=_id,
            entry_point=_entry,
            vector_entry_point=_vector_entry,
            max_episode_steps=None,
            kwargs=_kwargs,
        )

__all__ = ["ENV_IDS", "__version__"]
