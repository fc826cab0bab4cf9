"""Train a G1 tracking policy with skrl's PPO and its default SequentialTrainer.

The batched env runs in SAME_STEP autoreset mode (skrl steps on with the observation an env
returns, which must be the next episode's first for an env that ended); `SkrlVecEnv` gives skrl
torch tensors on its device and puts the per-term rewards, episode results, termination rates and
tracking errors where skrl's trainer logs them (``info["episode"]``). With ``--backend mjwarp
--device cuda:0`` physics and MDP run on the GPU (``--mdp auto``, the default, puts the MDP
there) and the observations never pass through host memory (`TrackingVecEnv.device_arrays`). PPO
settings follow BeyondMimic's rsl_rl values (`gym_motion.training.rsl_rl.config`'s defaults
with `BEYONDMIMIC_PPO`) in skrl's names; the actor and critic both read the 160-value policy
observation.

    pip install -e ".[skrl]"
    python examples/train_skrl_ppo.py --num-envs 64 --timesteps 2000
    python examples/train_skrl_ppo.py --num-envs 4096 --backend mjwarp --device cuda:0
    tensorboard --logdir runs/skrl
"""

from __future__ import annotations

import argparse

import torch
from skrl.agents.torch.ppo import PPO, PPO_CFG
from skrl.memories.torch import RandomMemory
from skrl.models.torch import DeterministicMixin, GaussianMixin, Model
from skrl.resources.preprocessors.torch import RunningStandardScaler
from skrl.resources.schedulers.torch import KLAdaptiveLR
from skrl.trainers.torch import SequentialTrainer

from gym_motion.adapters.skrl import SkrlVecEnv
from gym_motion.envs import TrackingEnvCfg, TrackingVecEnv
from gym_motion.envs.config import BackendCfg


def mlp(inputs: int, outputs: int, hidden=(512, 256, 128)) -> torch.nn.Sequential:
    layers, width = [], inputs
    for h in hidden:
        layers += [torch.nn.Linear(width, h), torch.nn.ELU()]
        width = h
    return torch.nn.Sequential(*layers, torch.nn.Linear(width, outputs))


class Policy(GaussianMixin, Model):
    """Gaussian policy: an MLP for the mean, a learned state-independent log std."""

    def __init__(self, observation_space, action_space, device, hidden):
        Model.__init__(
            self, observation_space=observation_space, action_space=action_space, device=device
        )
        GaussianMixin.__init__(self)
        self.net = mlp(self.num_observations, self.num_actions, hidden)
        self.log_std = torch.nn.Parameter(torch.zeros(self.num_actions))  # std 1, as BeyondMimic's

    def compute(self, inputs, role=""):
        return self.net(inputs["observations"]), {"log_std": self.log_std}


class Value(DeterministicMixin, Model):
    """State-value function: an MLP."""

    def __init__(self, observation_space, action_space, device, hidden):
        Model.__init__(
            self, observation_space=observation_space, action_space=action_space, device=device
        )
        DeterministicMixin.__init__(self)
        self.net = mlp(self.num_observations, 1, hidden)

    def compute(self, inputs, role=""):
        return self.net(inputs["observations"]), {}


def main(argv: list[str] | None = None) -> PPO:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--motion", nargs="*", default=None, help="clip npz(s); default motion")
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--timesteps", type=int, default=2000, help="vector steps (x num-envs)")
    parser.add_argument("--hidden", type=int, nargs="+", default=[512, 256, 128])
    parser.add_argument("--out", default="runs/skrl")
    parser.add_argument("--device", default="cpu", help="skrl's torch device")
    parser.add_argument("--backend", default="mujoco", choices=["mujoco", "mjwarp", "motrix"])
    mdp_help = "where the MDP runs (device: beside MuJoCo Warp; auto: device on a GPU)"
    parser.add_argument("--mdp", default="auto", choices=["auto", "host", "device"], help=mdp_help)
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    warp_device = args.device if args.backend == "mjwarp" and device.type == "cuda" else None
    task = TrackingEnvCfg(backend=BackendCfg(args.backend, device=warp_device, mdp=args.mdp))
    batched = TrackingVecEnv(
        args.num_envs, cfg=task, motion=args.motion or None, autoreset_mode="same_step", seed=0
    )
    env = SkrlVecEnv(batched, device=device)
    spaces = (env.observation_space, env.action_space, device, tuple(args.hidden))
    models = {"policy": Policy(*spaces), "value": Value(*spaces)}
    rollouts = 24
    cfg = PPO_CFG(
        rollouts=rollouts,
        learning_epochs=5,
        mini_batches=4,
        discount_factor=0.99,
        gae_lambda=0.95,
        learning_rate=1e-3,
        learning_rate_scheduler=KLAdaptiveLR,
        learning_rate_scheduler_kwargs={"kl_threshold": 0.01},
        observation_preprocessor=RunningStandardScaler,
        observation_preprocessor_kwargs={"size": env.observation_space, "device": device},
        grad_norm_clip=1.0,
        ratio_clip=0.2,
        value_clip=0.2,
        entropy_loss_scale=0.005,
        value_loss_scale=1.0,
        time_limit_bootstrap=True,
    )
    cfg.experiment.directory = args.out
    cfg.experiment.experiment_name = "ppo"
    cfg.experiment.write_interval = rollouts
    cfg.experiment.checkpoint_interval = 0
    memory = RandomMemory(memory_size=rollouts, num_envs=env.num_envs, device=device)
    agent = PPO(
        models=models,
        memory=memory,
        observation_space=env.observation_space,
        action_space=env.action_space,
        device=device,
        cfg=cfg,
    )
    # The env is closed here, not by skrl's exit hook (which logs to a stream that may be closed
    # by then)
    trainer = SequentialTrainer(
        env=env, agents=agent,
        cfg={"timesteps": args.timesteps, "headless": True, "close_environment_at_exit": False},
    )  # fmt: skip
    try:
        trainer.train()
    finally:
        env.close()
    return agent


if __name__ == "__main__":
    main()
