"""A CleanRL-style PPO loop (one file, plain torch) on the gymnasium 1.x NEXT_STEP vector API.

The env is made by ``gymnasium.make_vec`` in its default NEXT_STEP autoreset mode and wrapped by
gymnasium's own vector wrappers (episode statistics, observation normalisation). NEXT_STEP means:
the step that returns ``terminated`` or ``truncated`` for env i returns the last observation of
that episode; the next step ignores env i's action, resets it and returns the new episode's first
observation with reward 0. So this loop

- masks those reset steps out of the loss (``valid``),
- cuts the advantage recursion after every ended episode, and
- bootstraps a truncated (timed-out) episode from the value of its last observation, which is
  the observation stored for the following (masked) step.

TensorBoard gets CleanRL's ``charts/episodic_return`` and ``charts/episodic_length`` (from
gymnasium's RecordEpisodeStatistics), the env's per-term rewards, episode results, termination
rates and tracking errors (`gym_motion.envs.stats.TrackingStats`) and the losses. PPO settings:
BeyondMimic's rsl_rl values (24 steps per env, 5 epochs of 4 minibatches, lr 1e-3, clip 0.2,
entropy 0.005, value coefficient 1.0, gradient norm 1.0, gamma 0.99, lambda 0.95, MLPs
[512, 256, 128] with ELU, initial std 1).

    python examples/train_cleanrl_ppo.py --num-envs 64 --total-steps 200000
    tensorboard --logdir runs/cleanrl
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.utils.tensorboard import SummaryWriter

import gym_motion  # noqa: F401  (registers the ids)
from gym_motion.envs.stats import TrackingStats, tracking_terms


def mlp(inputs: int, outputs: int, hidden: list[int]) -> nn.Sequential:
    layers, width = [], inputs
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ELU()]
        width = h
    return nn.Sequential(*layers, nn.Linear(width, outputs))


class Agent(nn.Module):
    """Gaussian actor (state-independent log std) and a critic, both MLPs on the observation."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: list[int]):
        super().__init__()
        self.critic = mlp(obs_dim, 1, hidden)
        self.actor_mean = mlp(obs_dim, act_dim, hidden)
        self.actor_logstd = nn.Parameter(torch.zeros(act_dim))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs).squeeze(-1)

    def act(self, obs: torch.Tensor, action: torch.Tensor | None = None):
        """(action, log prob, entropy, value) for obs (B, D); samples when action is None."""
        mean = self.actor_mean(obs)
        dist = torch.distributions.Normal(mean, self.actor_logstd.exp().expand_as(mean))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.value(obs)


def main(argv: list[str] | None = None) -> list[dict[str, float]]:
    """Train; returns the values logged per iteration (also in TensorBoard under --out)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--total-steps", type=int, default=200_000, help="env steps, all envs")
    p.add_argument("--num-steps", type=int, default=24, help="steps per env per iteration")
    p.add_argument("--hidden", type=int, nargs="+", default=[512, 256, 128])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/cleanrl")
    args = p.parse_args(argv)
    lr, epochs, minibatches, gamma, lam = 1e-3, 5, 4, 0.99, 0.95
    clip, ent_coef, vf_coef, max_grad_norm = 0.2, 0.005, 1.0, 1.0

    torch.manual_seed(args.seed)
    envs = gym.make_vec("GymMotion/G1-Tracking-v0", num_envs=args.num_envs,
                        vectorization_mode="vector_entry_point")  # fmt: skip
    assert envs.metadata["autoreset_mode"] is gym.vector.AutoresetMode.NEXT_STEP
    envs = gym.wrappers.vector.RecordEpisodeStatistics(envs)
    envs = gym.wrappers.vector.NormalizeObservation(envs)
    stats = TrackingStats(tracking_terms(envs))
    writer = SummaryWriter(args.out)
    n, t_steps = args.num_envs, args.num_steps
    obs_dim = envs.single_observation_space.shape[0]
    act_dim = envs.single_action_space.shape[0]
    agent = Agent(obs_dim, act_dim, args.hidden)
    optimizer = torch.optim.Adam(agent.parameters(), lr=lr)

    obs_buf = torch.zeros(t_steps, n, obs_dim)
    act_buf = torch.zeros(t_steps, n, act_dim)
    logp_buf, rew_buf, val_buf = (torch.zeros(t_steps, n) for _ in range(3))
    term_buf, done_buf, valid_buf = (torch.zeros(t_steps, n, dtype=torch.bool) for _ in range(3))

    obs_np, _ = envs.reset(seed=args.seed)
    next_obs = torch.as_tensor(obs_np, dtype=torch.float32)
    autoreset = np.zeros(n, bool)  # envs whose next step is NEXT_STEP's reset step
    history: list[dict[str, float]] = []
    steps, t0 = 0, time.perf_counter()
    for iteration in range(max(1, args.total_steps // (n * t_steps))):
        stats.reset()
        log: dict[str, float] = {}
        returns, lengths = [], []
        for t in range(t_steps):
            obs_buf[t] = next_obs
            valid_buf[t] = torch.from_numpy(~autoreset)
            with torch.no_grad():
                action, logp, _, value = agent.act(next_obs)
            act_buf[t], logp_buf[t], val_buf[t] = action, logp, value
            obs_np, reward, terminated, truncated, info = envs.step(action.numpy())
            steps += n
            stats.add(info)
            if "episode" in info:  # RecordEpisodeStatistics, on the steps episodes end
                ended = info["_episode"]
                returns += info["episode"]["r"][ended].tolist()
                lengths += info["episode"]["l"][ended].tolist()
            rew_buf[t] = torch.as_tensor(reward, dtype=torch.float32)
            term_buf[t] = torch.from_numpy(terminated)
            done_buf[t] = torch.from_numpy(terminated | truncated)
            autoreset = terminated | truncated
            next_obs = torch.as_tensor(obs_np, dtype=torch.float32)

        with torch.no_grad():  # advantages: cut after ended episodes, bootstrap time-outs
            next_value = agent.value(next_obs)
            adv = torch.zeros(t_steps, n)
            last = torch.zeros(n)
            for t in reversed(range(t_steps)):
                v_next = next_value if t == t_steps - 1 else val_buf[t + 1]
                delta = rew_buf[t] + gamma * (~term_buf[t]) * v_next - val_buf[t]
                last = delta + gamma * lam * (~done_buf[t]) * last
                adv[t] = last
            ret = adv + val_buf

        valid = valid_buf.flatten()
        b_obs, b_act = obs_buf.flatten(0, 1)[valid], act_buf.flatten(0, 1)[valid]
        b_logp, b_adv = logp_buf.flatten()[valid], adv.flatten()[valid]
        b_ret, b_val = ret.flatten()[valid], val_buf.flatten()[valid]
        size = b_obs.shape[0]
        mb = max(1, size // minibatches)
        for _ in range(epochs):
            order = torch.randperm(size)
            for start in range(0, size, mb):
                i = order[start : start + mb]
                _, logp, entropy, value = agent.act(b_obs[i], b_act[i])
                ratio = (logp - b_logp[i]).exp()
                a = b_adv[i]
                a = (a - a.mean()) / (a.std() + 1e-8) if a.numel() > 1 else a
                pg_loss = torch.max(-a * ratio, -a * ratio.clamp(1 - clip, 1 + clip)).mean()
                v_clipped = b_val[i] + (value - b_val[i]).clamp(-clip, clip)
                v_loss = torch.max((value - b_ret[i]) ** 2, (v_clipped - b_ret[i]) ** 2).mean()
                loss = pg_loss + vf_coef * v_loss - ent_coef * entropy.mean()
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
                optimizer.step()

        log.update(stats.means())
        if returns:
            log["charts/episodic_return"] = float(np.mean(returns))
            log["charts/episodic_length"] = float(np.mean(lengths))
        log["losses/policy_loss"] = pg_loss.item()
        log["losses/value_loss"] = v_loss.item()
        log["losses/entropy"] = entropy.mean().item()
        log["charts/SPS"] = steps / (time.perf_counter() - t0)
        for key, value in log.items():
            writer.add_scalar(key, value, steps)
        history.append({"steps": float(steps), **log})
        length = log.get("episode/length", float("nan"))
        tracking = log.get("rollout/tracking_reward", float("nan"))
        print(f"iteration {iteration}: {steps} steps, episode length {length:.1f}, "
              f"tracking reward {tracking:.2f}")  # fmt: skip
    writer.close()
    envs.close()
    return history


if __name__ == "__main__":
    main()
