"""A training run as one typed value: `RunConfig`, whose ``env`` is the task it trains on."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from typing import Any

from gym_motion import config_values as cv
from gym_motion.curriculum import (
    CurriculumTermCfg,
    check_curricula,
    reset_noise_ramp,
    termination_from_episode_s,
    termination_from_steps,
)
from gym_motion.envs.config import TrackingEnvCfg
from gym_motion.envs.vector_api import OBS_MODES
from gym_motion.managers.termination import TerminationTermCfg, anchor_horizontal

__all__ = [
    "OBS_MODES",
    "TRAIN_SAMPLING",
    "RunConfig",
    "default_curricula",
    "train_env_cfg",
    "with_anchor_horizontal_termination",
]

LEGACY_OBS_MODE = "policy"
"""The observation mode of run folders whose config.json has no ``train.obs_mode`` (written
before the asymmetric critic: the actor and the critic read the policy group)."""

MAX_SEED = 2**32 - 2**16
"""Seeds are below this: NumPy's legacy global seed (which SB3 sets) takes 0 to 2**32 - 1,
and each rank of a distributed run adds its rank."""

# Where training episodes start: `gym-motion train` defaults to uniform (measured: docs/
# measurements.md, "Learning at equal steps"); "adaptive" is docs/task.md section 10's mixture.
TRAIN_SAMPLING = ("uniform", "adaptive")


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
        cfg = with_anchor_horizontal_termination(
            cfg, anchor_horizontal_termination, anchor_horizontal_grace_s
        )
    elif anchor_horizontal_grace_s:
        raise ValueError("anchor_horizontal_grace_s needs anchor_horizontal_termination (the term "
                         "it delays)")  # fmt: skip
    return replace(cfg, sampling=replace(cfg.sampling, mode=sampling))


def with_anchor_horizontal_termination(
    cfg: TrackingEnvCfg, threshold: float, grace_s: float = 0.0
) -> TrackingEnvCfg:
    """`cfg` with the termination term ``anchor_horizontal``
    (`gym_motion.managers.termination.anchor_horizontal`): the anchor's horizontal distance
    from the reference's above `threshold` (m) ends the episode, except within `grace_s`
    seconds (rounded to control steps) of the last time the env perturbed the robot (an
    episode start with its reset noise, a push). Not part of BeyondMimic's task.

    Raises:
        ValueError: a threshold that is not > 0 m or a grace that is not >= 0 s.
    """
    if not threshold > 0.0:
        raise ValueError(
            f"the anchor's horizontal termination distance must be > 0 m, got {threshold!r}"
        )
    if not grace_s >= 0.0:
        raise ValueError(f"anchor_horizontal_grace_s must be >= 0 s, got {grace_s!r}")
    params: dict[str, Any] = {"threshold": threshold}
    if grace_s:
        params["grace_steps"] = round(grace_s / cfg.sim.control_dt)
    term = TerminationTermCfg(anchor_horizontal, params)
    return replace(cfg, terminations={**cfg.terminations, "anchor_horizontal": term})


def default_curricula() -> dict[str, CurriculumTermCfg]:
    """The training curriculum: the reset noise ramped from none to full over the first 1.5 M
    env steps (`gym_motion.curriculum.reset_noise_ramp`)."""
    return {"reset_noise": CurriculumTermCfg(reset_noise_ramp, {"steps": 1_500_000})}


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
        curricula: name -> `CurriculumTermCfg`, stepped after every rollout by the training
            loop (`gym_motion.curriculum`; default `default_curricula`: the reset noise ramped
            over 1.5 M env steps). E.g. ``termination_from_episode_s`` with ``{"term":
            "anchor_horizontal", "seconds": 2.0}`` switches a termination on once the training
            episodes last 2 s on average.
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
        init: a run folder (or its ``best/``) whose networks this run starts from (a warm
            start, `gym_motion.training.warm_start`); None: random weights.
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
    curricula: dict[str, CurriculumTermCfg] = field(default_factory=default_curricula)
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
    init: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.env, TrackingEnvCfg):
            raise ValueError(f"RunConfig.env must be a TrackingEnvCfg, got {self.env!r}")
        check_curricula(self.curricula, self.env.terminations, self.env.episode_length_s)
        cv.integer("RunConfig.num_envs", self.num_envs, low=1)
        cv.integer("RunConfig.total_steps", self.total_steps, low=1)
        seed = cv.integer("RunConfig.seed (--seed)", self.seed, low=0)
        if seed >= MAX_SEED:  # NumPy's and torch's global seeds (SB3 sets both)
            raise ValueError(f"RunConfig.seed (--seed) must be below 2**32 - 2**16 (each rank "
                             f"adds its own), got {seed}")  # fmt: skip
        cv.integer("RunConfig.eval_every_steps", self.eval_every_steps, low=0)
        cv.integer("RunConfig.eval_episodes", self.eval_episodes, low=1)
        if self.max_minutes is not None:
            cv.real("RunConfig.max_minutes", self.max_minutes, low=0.0, low_open=True)
        cv.real("RunConfig.video_seconds", self.video_seconds, low=0.0)
        if not (isinstance(self.motion, list) and all(isinstance(m, str) for m in self.motion)):
            raise ValueError(f"RunConfig.motion must be a list of clip paths, got {self.motion!r}")
        for name in ("ppo", "sac"):
            if not isinstance(getattr(self, name), dict):
                raise ValueError(f"RunConfig.{name} must be a dict of settings, got "
                                 f"{getattr(self, name)!r}")  # fmt: skip
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
        """The fields but ``env`` as JSON values (config.json's ``"train"``; the curricula's
        functions by import path, as `TrackingEnvCfg.to_json` writes term functions)."""
        from gym_motion.envs.cfg_json import encode

        out = {}
        for f in dataclasses.fields(self):
            if f.name == "curricula":
                out[f.name] = encode(self.curricula)
            elif f.name != "env":
                out[f.name] = _plain(getattr(self, f.name))
        return out

    @classmethod
    def from_dict(cls, train: dict[str, Any], env: TrackingEnvCfg) -> RunConfig:
        """The config `to_dict` wrote, with its task `env`; keys this version does not know
        are left out, a missing ``obs_mode`` is `LEGACY_OBS_MODE`, and the curriculum fields of
        earlier versions (``reset_noise_ramp_steps``, ``termination_from_steps``,
        ``termination_from_episode_s``) read as curriculum terms.

        Raises:
            ValueError: a field out of range, or a curriculum function that cannot be imported.
        """
        from gym_motion.envs.cfg_json import decode

        names = {f.name for f in dataclasses.fields(cls)} - {"env"}
        kwargs = {k: v for k, v in train.items() if k in names}
        kwargs.setdefault("obs_mode", LEGACY_OBS_MODE)
        if "curricula" in kwargs:
            kwargs["curricula"] = dict(decode(kwargs["curricula"]))
        else:
            kwargs["curricula"] = legacy_curricula(train)
        return cls(env=env, **kwargs)


def legacy_curricula(train: dict[str, Any]) -> dict[str, CurriculumTermCfg]:
    """The curriculum terms of a config.json ``"train"`` section written before curricula
    were terms."""
    ramp = train.get("reset_noise_ramp_steps", 1_500_000)
    out = {"reset_noise": CurriculumTermCfg(reset_noise_ramp, {"steps": ramp})}
    for term, steps in train.get("termination_from_steps", {}).items():
        out[term] = CurriculumTermCfg(termination_from_steps, {"term": term, "steps": steps})
    for term, seconds in train.get("termination_from_episode_s", {}).items():
        params = {"term": term, "seconds": seconds}
        out[term] = CurriculumTermCfg(termination_from_episode_s, params)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
