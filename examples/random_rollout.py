"""Random-action rollout of the G1 tracking env: the smallest complete use of the package.

    python examples/random_rollout.py [--num-envs 64] [--steps 200]

Prints the mean per-step reward terms and the finished episodes' results.
"""

import argparse

import gymnasium as gym
import numpy as np

import gym_motion  # noqa: F401  (registers the env ids)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--steps", type=int, default=200)
    args = p.parse_args()

    envs = gym.make_vec(
        "GymMotion/G1-Tracking-v0", num_envs=args.num_envs, vectorization_mode="vector_entry_point"
    )
    rng = np.random.default_rng(0)
    obs, info = envs.reset(seed=0)
    lengths, returns = [], []
    terms: dict[str, list[float]] = {}
    for _ in range(args.steps):
        action = rng.normal(0.0, 0.3, size=envs.action_space.shape).astype(np.float32)
        obs, reward, terminated, truncated, info = envs.step(action)
        for key, value in info.items():
            if key.startswith("reward/"):
                terms.setdefault(key, []).append(float(value[info["_" + key]].mean()))
        if "final/length" in info:
            done = info["_final/length"]
            lengths.extend(info["final/length"][done].tolist())
            returns.extend(info["final/return"][done].tolist())
    envs.close()
    for key, values in terms.items():
        print(f"{key:28s} {np.mean(values):+.4f}")
    if lengths:
        print(
            f"{len(lengths)} episodes: mean length {np.mean(lengths):.1f} steps, "
            f"mean return {np.mean(returns):.3f}"
        )


if __name__ == "__main__":
    main()
