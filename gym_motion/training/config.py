"""A training run as one typed value: `RunConfig`, whose ``env`` is the task it trains on."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from typing import Any

from gym_motion.envs.config import TrackingEnvCfg
from gym_motion.envs.vector_api import OBS_MODES
from gym_motion.managers.termination import TerminationTermCfg, anchor_horizontal

__all__ = ["GPU_RECIPES", "OBS_MODES", "RECIPES", "TRAIN_SAMPLING", "RunConfig", "train_env_cfg"]

# Where training episodes start: `gym-motion train` defaults to uniform (measured: docs/
# measurements.md, "Learning at equal steps"); "adaptive" is docs/task.md section 10's mixture.
TRAIN_SAMPLING = ("uniform", "adaptive")

# `gym-motion train --recipe NAME`: settings measured together, keyed by the train command's
# argument names; a flag given on the command line replaces its recipe's value. "clip": a real
# clip learnt from its start (docs/measurements.md, "A tighter horizontal termination: 0.2 m",
# "The clip recipe at a second seed").
RECIPES: dict[str, dict[str, Any]] = {
    "clip": {
        "action_offset": "reference",
        "anchor_horizontal_termination": 0.2,
        "anchor_horizontal_termination_from_episode_s": 2.0,
        "total_steps": 26_000_000,
    },
}
# What a recipe sets besides when the run's device is a GPU (``--device cuda``/``auto`` on a
# machine with one): more envs, so that an update on the GPU takes more samples, on MuJoCo
# Warp; PPO's settings per update are the CPU's, so the learning side is studied on a CPU at
# the same env count (docs/measurements.md, "The clip recipe on a GPU").
GPU_RECIPES: dict[str, dict[str, Any]] = {
    "clip": {
        "num_envs": 1024,
        "backend": "mjwarp",
        "eval_every": 1_000_000,
    },
}


def train_env_cfg(
    state_estimation: bool = True,
    sampling: str = "uniform",
    anchor_horizontal_termination: float | None = None,
    anchor_horizontal_grace_s: float = 0.0,
) -> TrackingEnvCfg:
    """The training task: the default task with `state_estimation` and its episode starts
    sampled by `sampling` ("uniform", the default, or "adaptive").
    `anchor_horizontal_termination` (m; None: off, BeyondMimic's task) adds the termination
    term ``anchor_horizontal`` (`gym_motion.managers.termination.anchor_horizontal`): the
    anchor's horizontal distance from the reference's above it ends the episode, except within
    `anchor_horizontal_grace_s` seconds (rounded to control steps) of the last time the env
    perturbed the robot (an episode start with its reset noise, a push).

    Raises:
        ValueError: another sampling mode, a termination distance that is not > 0, or a grace
            that is not >= 0 s or given without the term.
    """
    if sampling not in TRAIN_SAMPLING:
        raise ValueError(f"sampling must be one of {TRAIN_SAMPLING}, got {sampling!r}")
    cfg = TrackingEnvCfg().updated(state_estimation=state_estimation)
    if anchor_horizontal_termination is not None:
        if not anchor_horizontal_termination > 0.0:
            raise ValueError(
                "the anchor's horizontal termination distance must be > 0 m, got "
                f"{anchor_horizontal_termination!r}"
            )
        params = {"threshold": anchor_horizontal_termination}
        if not anchor_horizontal_grace_s >= 0.0:
            raise ValueError(
                f"anchor_horizontal_grace_s must be >= 0 s, got {anchor_horizontal_grace_s!r}"
            )
        if anchor_horizontal_grace_s:
            params["grace_steps"] = round(anchor_horizontal_grace_s / cfg.sim.control_dt)
        term = TerminationTermCfg(anchor_horizontal, params)
        cfg = replace(cfg, terminations={**cfg.terminations, "anchor_horizontal": term})
    elif anchor_horizontal_grace_s:
        raise ValueError("anchor_horizontal_grace_s needs anchor_horizontal_termination (the term "
                         "it delays)")  # fmt: skip
    return replace(cfg, sampling=replace(cfg.sampling, mode=sampling))


@dataclass
class RunConfig:
    """Everything a training run needs; `gym-motion train` fills it from the command line and
    the run folder's config.json records it (`gym_motion.training.run_folder`).

    Attributes:
        library: the RL library that learns ("sb3" or "rsl_rl"; `gym_motion.training.
            libraries.LIBRARIES`).
        env: the task, robot and physics backend (`TrackingEnvCfg`; default `train_env_cfg()`:
            the default task, episodes starting uniformly along the clips).
        motion: clip paths (npz) or folders; empty: the embedded default motion.
        num_envs: N parallel envs (with samplers: all samplers' together). total_steps: env
            steps summed over envs (and ranks); learning stops at the first whole rollout that
            reaches it (default 2.1 M: the default motion tracked whole, docs/measurements.md).
        max_minutes: wall-clock budget of learning; learning stops after the rollout that
            passes it (None: no budget). The summary says which limit ended it.
        seed: seeds the learner, torch and the env (each rank adds its rank).
        out: run folder; default ``runs/<date>-<time>``.
        obs_mode: "dict": the actor reads the policy group (160 values), the critic the
            privileged critic group (286); "policy": every network reads the policy group.
        eval_episodes: episodes per clip in each evaluation (deterministic: one is enough).
        eval_max_seconds: cap on an evaluation episode, s (None: the whole clip).
        reset_noise_ramp_steps: env steps over which the reset noise (docs/task.md section 9)
            ramps linearly from none to full (`gym_motion.curriculum`; default 1.5 M, whatever
            `total_steps`, so a longer or resumed run keeps the curriculum); 0: full from the
            first step.
        termination_from_steps: termination terms of ``env`` that end episodes only from this
            many env steps on (a curriculum: ``{"anchor_horizontal": 10_000_000}`` lets the
            policy first learn to survive); before that they are switched off
            (`TrackingVecEnv.inactive_terminations`). Default {}: every term from the start.
        termination_from_episode_s: termination terms of ``env`` switched on once the training
            episodes last this many seconds on average (``episode/length`` over the rollouts of
            the last `Progress.episode_window_steps` env steps, times the control step), and on
            from then (a curriculum that needs no per-clip step count: ``{"anchor_horizontal":
            2.0}``); `Progress.switched_on` records the env step. Default {}.
        eval_every_steps: a deterministic evaluation from the clip start every this many env
            steps and at the end, logged as ``eval/*`` and drawn in the curves PNG; 0: off.
        video_seconds: length of ``final_eval.mp4``, s; 0: no video.
        checkpoint_minutes: save the model files into the run folder (atomically) at the
            first rollout end after every this many minutes of learning; 0: only at the end.
        algo: the library's algorithm ("ppo"; SB3 also "sac").
        ppo, sac: hyperparameters of the library's defaults that this run changes.
        device: torch device of the networks, the rollout buffer and the update ("cpu",
            "cuda", "cuda:N" or "auto": cuda:0 when torch lists a GPU, else the CPU;
            `gym_motion.training.devices.resolve_device`); `train` records the device it
            resolved to.
        distributed: one rank of a ``torchrun`` run (`gym_motion.training.distributed`).
        samplers: 0 (default): the envs step in this process; K > 0: K Ray sampler actors
            collect the rollouts, each with ``num_envs / K`` envs on its own CPU block, for
            this process's learner (`gym_motion.training.samplers`, docs/scaling.md).
        ray_address: the Ray cluster the samplers run on (``ray.init(address=...)``, e.g.
            "auto" or "HEAD:6379"); None: a local Ray instance started for the run.

    Raises:
        ValueError: a field out of range (named); the library checks its own settings when
            the run starts (`gym_motion.training.train`).
    """

    library: str = "sb3"
    env: TrackingEnvCfg = field(default_factory=train_env_cfg)
    motion: list[str] = field(default_factory=list)
    num_envs: int = 256
    total_steps: int = 2_100_000
    max_minutes: float | None = None
    seed: int = 0
    out: str | None = None
    obs_mode: str = "dict"
    eval_episodes: int = 1
    eval_max_seconds: float | None = None
    reset_noise_ramp_steps: int = 1_500_000
    termination_from_steps: dict[str, int] = field(default_factory=dict)
    termination_from_episode_s: dict[str, float] = field(default_factory=dict)
    eval_every_steps: int = 500_000
    video_seconds: float = 5.0
    checkpoint_minutes: float = 5.0
    algo: str = "ppo"
    ppo: dict[str, Any] = field(default_factory=dict)
    sac: dict[str, Any] = field(default_factory=dict)
    device: str = "cpu"
    distributed: bool = False
    samplers: int = 0
    ray_address: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.env, TrackingEnvCfg):
            raise ValueError(f"RunConfig.env must be a TrackingEnvCfg, got {self.env!r}")
        if not (isinstance(self.reset_noise_ramp_steps, int) and self.reset_noise_ramp_steps >= 0):
            raise ValueError(
                "reset_noise_ramp_steps must be an integer >= 0 (env steps), got "
                f"{self.reset_noise_ramp_steps!r}"
            )
        for name, steps in self.termination_from_steps.items():
            if name not in self.env.terminations:
                raise ValueError(
                    f"termination_from_steps names {name!r}, which is not one of the task's "
                    f"termination terms {tuple(self.env.terminations)}"
                )
            if not (isinstance(steps, int) and steps >= 0):
                raise ValueError(
                    f"termination_from_steps[{name!r}] must be an integer >= 0 (env steps), "
                    f"got {steps!r}"
                )
        for name, seconds in self.termination_from_episode_s.items():
            if name not in self.env.terminations:
                raise ValueError(
                    f"termination_from_episode_s names {name!r}, which is not one of the task's "
                    f"termination terms {tuple(self.env.terminations)}"
                )
            if name in self.termination_from_steps:
                raise ValueError(
                    f"termination {name!r} is switched on both by env steps "
                    "(termination_from_steps) and by episode length (termination_from_episode_s): "
                    "give one"
                )
            longest = self.env.episode_length_s
            if not (isinstance(seconds, int | float) and 0.0 < seconds < longest):
                raise ValueError(
                    f"termination_from_episode_s[{name!r}] must be > 0 and below the episodes' "
                    f"time limit ({longest:g} s, which no mean length reaches), got {seconds!r}"
                )
        if not self.checkpoint_minutes >= 0.0:
            raise ValueError(f"checkpoint_minutes must be >= 0, got {self.checkpoint_minutes}")
        if self.obs_mode not in OBS_MODES:
            raise ValueError(f"obs_mode must be one of {OBS_MODES}, got {self.obs_mode!r}")
        if not (isinstance(self.samplers, int) and self.samplers >= 0):
            raise ValueError(f"samplers must be an integer >= 0, got {self.samplers!r}")
        if self.samplers and self.num_envs % self.samplers:
            raise ValueError(
                f"num_envs ({self.num_envs}) must split evenly over {self.samplers} samplers"
            )
        if self.ray_address is not None and not self.samplers:
            raise ValueError("ray_address is where the samplers run: give samplers >= 1 too")
        if self.env.sampling.mode not in TRAIN_SAMPLING:
            raise ValueError(
                f"RunConfig.env.sampling.mode must be one of {TRAIN_SAMPLING} for training, got "
                f"{self.env.sampling.mode!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        """The fields but ``env`` as JSON values (config.json's ``"train"``)."""
        return {
            f.name: _plain(getattr(self, f.name))
            for f in dataclasses.fields(self)
            if f.name != "env"
        }

    @classmethod
    def from_dict(cls, train: dict[str, Any], env: TrackingEnvCfg) -> RunConfig:
        """The config `to_dict` wrote, with its task `env`; keys this version does not know
        are left out.

        Raises:
            ValueError: a field out of range.
        """
        names = {f.name for f in dataclasses.fields(cls)} - {"env"}
        return cls(env=env, **{k: v for k, v in train.items() if k in names})


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
