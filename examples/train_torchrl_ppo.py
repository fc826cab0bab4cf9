"""Train a G1 tracking policy with TorchRL's PPO pieces (collector, GAE, ClipPPOLoss).

`TorchRLVecEnv` makes the batched env a TorchRL env in DISABLED autoreset mode (TorchRL resets
ended envs itself, through ``reset(options={"reset_mask": ...})``; it refuses NEXT_STEP), with
the env's per-term rewards and ``final/*`` episode results in every collected tensordict;
`tracking_means` turns a batch into the logged values. With ``--backend mjwarp
--device cuda:0`` physics and MDP run on the GPU (``--mdp auto``, the default, puts the MDP
there) and the tensordicts' observations never pass through host memory. The policy is a
TanhNormal, whose outputs TorchRL scales to the declared action bounds: the env declares the
policy's natural range, ``action_bound=1.0`` (one action unit), not the default +/-10. PPO
settings follow BeyondMimic's rsl_rl values where TorchRL has them.

    pip install -e ".[torchrl]"
    python examples/train_torchrl_ppo.py --num-envs 64 --total-steps 200000
    python examples/train_torchrl_ppo.py --num-envs 4096 --backend mjwarp --device cuda:0
    tensorboard --logdir runs/torchrl
"""

from __future__ import annotations

import argparse

import torch
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import nn
from torch.utils.tensorboard import SummaryWriter
from torchrl.collectors import Collector
from torchrl.modules import ProbabilisticActor, TanhNormal, ValueOperator
from torchrl.objectives import ClipPPOLoss
from torchrl.objectives.value import GAE

from gym_motion.adapters.torchrl import TorchRLVecEnv, tracking_means
from gym_motion.envs import TrackingEnvCfg, TrackingVecEnv
from gym_motion.envs.config import BackendCfg


def mlp(inputs: int, outputs: int, hidden: list[int]) -> nn.Sequential:
    layers, width = [], inputs
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ELU()]
        width = h
    return nn.Sequential(*layers, nn.Linear(width, outputs))


def main(argv: list[str] | None = None) -> list[dict[str, float]]:
    """Train; returns the values logged per batch (also in TensorBoard under --out)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--total-steps", type=int, default=200_000, help="env steps, all envs")
    p.add_argument("--hidden", type=int, nargs="+", default=[512, 256, 128])
    p.add_argument("--out", default="runs/torchrl")
    p.add_argument("--device", default="cpu", help="torch device of the env's tensors and PPO")
    p.add_argument("--backend", default="mujoco", choices=["mujoco", "mjwarp", "motrix"])
    mdp_help = "where the MDP runs (device: beside MuJoCo Warp; auto: device on a GPU)"
    p.add_argument("--mdp", default="auto", choices=["auto", "host", "device"], help=mdp_help)
    args = p.parse_args(argv)
    steps_per_env, epochs, minibatches = 24, 5, 4

    torch.manual_seed(0)
    device = torch.device(args.device)
    warp_device = args.device if args.backend == "mjwarp" and device.type == "cuda" else None
    task = TrackingEnvCfg(backend=BackendCfg(args.backend, device=warp_device, mdp=args.mdp))
    env = TrackingVecEnv(args.num_envs, cfg=task, autoreset_mode="disabled", action_bound=1.0,
                         seed=0)  # fmt: skip
    torchrl_env = TorchRLVecEnv(env, device=device)
    obs_dim = env.single_observation_space.shape[0]
    spec = torchrl_env.action_spec
    act_dim = spec.shape[-1]

    actor = ProbabilisticActor(
        TensorDictModule(
            nn.Sequential(mlp(obs_dim, 2 * act_dim, args.hidden), NormalParamExtractor()),
            in_keys=["observation"],
            out_keys=["loc", "scale"],
        ),
        spec=spec,
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
        distribution_kwargs={"low": spec.space.low[0], "high": spec.space.high[0]},
        return_log_prob=True,
    )
    critic = ValueOperator(mlp(obs_dim, 1, args.hidden), in_keys=["observation"])
    actor, critic = actor.to(device), critic.to(device)
    frames = args.num_envs * steps_per_env
    collector = Collector(
        torchrl_env,
        actor,
        frames_per_batch=frames,
        total_frames=args.total_steps,
        auto_register_policy_transforms=True,
    )
    advantage = GAE(gamma=0.99, lmbda=0.95, value_network=critic)
    loss_fn = ClipPPOLoss(actor, critic, clip_epsilon=0.2, entropy_coeff=0.005, critic_coeff=1.0)
    optimizer = torch.optim.Adam(loss_fn.parameters(), lr=1e-3)
    writer = SummaryWriter(args.out)
    history: list[dict[str, float]] = []
    steps = 0
    for data in collector:  # (N, T) tensordicts
        steps += data.numel()
        with torch.no_grad():
            advantage(data)
        flat = data.reshape(-1)
        for _ in range(epochs):
            order = torch.randperm(flat.numel())
            for idx in order.chunk(minibatches):
                losses = loss_fn(flat[idx])
                loss = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(loss_fn.parameters(), 1.0)
                optimizer.step()
        collector.update_policy_weights_()
        log = tracking_means(data, env)
        log["train/reward"] = data["next", "reward"].mean().item()
        log["loss/objective"] = losses["loss_objective"].item()
        log["loss/critic"] = losses["loss_critic"].item()
        for key, value in log.items():
            writer.add_scalar(key, value, steps)
        history.append({"steps": float(steps), **log})
        print(f"{steps} steps: episode length {log.get('episode/length', float('nan')):.1f}")
    writer.close()
    collector.shutdown()
    torchrl_env.close()
    return history


if __name__ == "__main__":
    main()
