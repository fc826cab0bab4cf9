"""`SB3VecEnv`: a Stable-Baselines3 ``VecEnv`` over one batched `TrackingVecEnv`.

The vector env runs in SAME_STEP autoreset mode (the mode SB3 assumes: the observation
returned for a finished env is already the first of its next episode, and the last one of the
finished episode travels in ``infos[i]["terminal_observation"]``)::

    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecNormalize
    from gym_motion.envs import TrackingVecEnv
    from gym_motion.adapters.sb3 import SB3VecEnv, TrackingLogCallback

    venv = VecNormalize(SB3VecEnv(TrackingVecEnv(64, autoreset_mode="SameStep")),
                        norm_reward=False)
    PPO("MlpPolicy", venv).learn(100_000, callback=TrackingLogCallback())

Per-env info dicts are filled only for the envs that finished on the step: the others get an
empty dict. The env's own batched info dict of the last step (per-env arrays with ``_key``
masks, see `gym_motion.envs.info`) is kept, without a copy, in `SB3VecEnv.last_info`;
`TrackingLogCallback` reads it every step and writes rollout means to SB3's logger.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

from gym_motion.envs.single import ACTION_BOUND
from gym_motion.envs.tracking import TrackingVecEnv

__all__ = ["SB3VecEnv"]


class SB3VecEnv(VecEnv):
    """An SB3 ``VecEnv`` over a batched gymnasium vector env in SAME_STEP autoreset mode.

    Args:
        vec_env: a `gym_motion.envs.TrackingVecEnv` (or a gymnasium vector wrapper around one)
            created with ``autoreset_mode="SameStep"`` (``AutoresetMode.SAME_STEP``).
        action_bound: the action space is ``Box(-action_bound, action_bound)`` when the env's is
            unbounded (SB3 needs finite bounds; its algorithms clip actions to them); default
            `gym_motion.envs.single.ACTION_BOUND`.

    Raises:
        ValueError: the env is in another autoreset mode.

    `step_wait` returns ``(obs, rewards, dones, infos)``; ``dones = terminated | truncated``.
    ``infos[i]`` is empty unless env i finished on this step; then it holds
    ``terminal_observation`` (the env's last observation of the episode),
    ``TimeLimit.truncated`` (True only when the episode hit the time limit without a
    termination) and ``episode`` = ``{"r": return, "l": length, "t": seconds since creation}``
    (the env's own episode sums, ``final/return`` and ``final/length``).

    The dicts of one step are valid until the next ``step_wait``: the adapter reuses empty
    dicts across steps (filling 4096 fresh dicts per step costs more than the physics of a
    small task), so copy one before writing into it, or keeping it past the next step.

    The batched env is one object, not N: `get_attr` returns its attribute once per requested
    index, `env_method` calls the method once and returns its result once per index,
    `set_attr` sets it for all envs (and refuses a strict subset of indices), `seed` stores
    ``seed + i`` per index like SB3 but the env is re-seeded, at the next `reset`, with the
    first one (one seed drives all its random streams), and `set_options` passes the first
    env's options to the next `reset`. Through gymnasium vector wrappers (which forward only
    their spaces and a few properties), `get_attr`, `set_attr` and `env_method` act on the
    first env of the chain that has the name, so ``set_attr("reset_noise_scale", 0.0)``
    reaches the `TrackingVecEnv` beneath, not a copy on the wrapper.
    """

    def __init__(self, vec_env: gym.vector.VectorEnv, action_bound: float = ACTION_BOUND):
        mode = getattr(vec_env, "autoreset_mode", None) or vec_env.metadata.get("autoreset_mode")
        if mode is None or AutoresetMode(mode) is not AutoresetMode.SAME_STEP:
            raise ValueError(
                "SB3VecEnv needs the vector env in SAME_STEP autoreset mode (SB3 expects the "
                "next episode's first observation on the step an episode ends), got "
                f"{mode!r}; create it with autoreset_mode='SameStep' "
                "(gymnasium.vector.AutoresetMode.SAME_STEP)"
            )
        self.venv = vec_env
        n = vec_env.num_envs
        action_space = vec_env.single_action_space
        if isinstance(action_space, gym.spaces.Box) and not (
            np.isfinite(action_space.low).all() and np.isfinite(action_space.high).all()
        ):
            low = np.maximum(action_space.low, -action_bound)
            high = np.minimum(action_space.high, action_bound)
            action_space = gym.spaces.Box(low, high, action_space.shape, action_space.dtype)
        super().__init__(n, vec_env.single_observation_space, action_space)
        self._actions: np.ndarray | None = None
        self._infos: list[dict[str, Any]] = [{} for _ in range(n)]
        self._written: np.ndarray = np.zeros(0, np.int64)
        self.created = time.time()  # the infos' episode times count from here
        self.last_info: dict[str, Any] = {}
        self.total_steps = 0  # env steps summed over envs since creation

    # ------------------------------------------------------------------ core
    def reset(self) -> VecEnvObs:
        seed = self._seeds[0]
        options = self._options[0] or None
        obs, info = self.venv.reset(seed=seed, options=options)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        self.last_info = info
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RuntimeError("step_wait called without step_async")
        obs, reward, terminated, truncated, info = self.step_arrays(self._actions)
        self._actions = None
        dones = terminated | truncated
        infos = self._infos
        for i in self._written:  # only the dicts handed out filled last step
            infos[i] = {}
        done_ids = np.flatnonzero(dones)
        self._written = done_ids
        if done_ids.size:
            final_obs = info["final_obs"]
            ret, length = info["final/return"], info["final/length"]
            t = round(time.time() - self.created, 6)
            time_out = truncated & ~terminated
            for i in done_ids:
                if isinstance(final_obs, dict):
                    term_obs = {k: v[i] for k, v in final_obs.items()}
                else:
                    term_obs = final_obs[i]
                infos[i] = {
                    "terminal_observation": term_obs,
                    "TimeLimit.truncated": bool(time_out[i]),
                    "episode": {"r": float(ret[i]), "l": int(length[i]), "t": t},
                }
        return obs, reward, dones, list(infos)

    def step_arrays(
        self, actions: np.ndarray
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One step of the vector env, as gymnasium returns it (``obs, reward, terminated,
        truncated, info``, no per-env dicts); `last_info` and `total_steps` follow it as in
        `step_wait`. For a learner's own batched rollout loop
        (`gym_motion.training.sb3.ppo.TrackingPPO`)."""
        obs, reward, terminated, truncated, info = self.venv.step(actions)
        self.last_info = info
        self.total_steps += self.num_envs
        return obs, reward, terminated, truncated, info

    def step_on_device(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """`TrackingVecEnv.step_on_device` of the env (unwrapped: the device results are the
        unwrapped env's): actions read on the device MDP's device, the observations left
        there; `last_info` and `total_steps` follow it as in `step_wait`."""
        reward, terminated, truncated, info = self.venv.unwrapped.step_on_device(actions)
        self.last_info = info
        self.total_steps += self.num_envs
        return reward, terminated, truncated, info

    def close(self) -> None:
        self.venv.close()

    # ------------------------------------------------------------------ SB3 surface
    def _owner(self, name: str) -> Any:
        """The first env along the wrapper chain (`venv`, its ``env``, ..., the unwrapped env)
        that has attribute `name`: a gymnasium vector wrapper forwards only its spaces and a
        few properties, so a wrapped env's own attributes are found beneath it.

        Raises:
            AttributeError: no env of the chain has `name` (the chain named).
        """
        chain, env = [], self.venv
        while True:
            chain.append(type(env).__name__)
            if hasattr(env, name):
                return env
            if not isinstance(env, gym.vector.VectorWrapper):
                raise AttributeError(f"no env of {' > '.join(chain)} has an attribute {name!r}")
            env = env.env

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The attribute of the first env of the wrapper chain that has it (`_owner`), once per
        index."""
        value = getattr(self._owner(attr_name), attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set the attribute on the first env of the wrapper chain that has it (`_owner`;
        a `TrackingVecEnv` through its own ``set_attr``, which checks the value), for all
        envs (a strict subset of indices is refused)."""
        self._require_all(indices, "set_attr")
        owner = self._owner(attr_name)
        if isinstance(owner, TrackingVecEnv):
            owner.set_attr(attr_name, value)
        else:
            setattr(owner, attr_name, value)

    def env_method(
        self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs
    ) -> list[Any]:
        """Call the method of the first env of the wrapper chain that has it (`_owner`) once;
        its result once per index."""
        method = getattr(self._owner(method_name), method_name)
        result = method(*method_args, **method_kwargs)
        return [result for _ in self._get_indices(indices)]

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        # Sub-envs of a batched env are not gymnasium.Env objects: none is wrapped.
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        raise NotImplementedError("SB3VecEnv does not render")

    def _require_all(self, indices: VecEnvIndices, what: str) -> None:
        ids = list(self._get_indices(indices))
        if sorted(int(i) for i in ids) != list(range(self.num_envs)):
            raise ValueError(
                f"{what}: the batched env is one object, so it applies to all "
                f"{self.num_envs} envs; got indices {ids[:10]}"
            )

    @property
    def sampling_stats(self) -> dict[str, float]:
        """The env's adaptive-sampling statistics (entropy, top-1 probability), if it has any."""
        try:
            return self._owner("sampling_stats").sampling_stats
        except AttributeError:
            return {}
