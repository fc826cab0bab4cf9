"""What happens between a learner's rollouts in a training run: `Progress`."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gym_motion.curriculum import CurriculumState

if TYPE_CHECKING:
    from gym_motion.training.config import RunConfig

__all__ = ["BEST_KEY", "EVAL_KEYS", "Progress", "RunAborted"]

# the keys of an evaluation's "mean" that are logged as eval/<key> and drawn in the curves
EVAL_KEYS = ("episode_length", "success_rate", "mpkpe_mm", "tracking_reward_per_clip_step")
# what "best" means among a run's evaluations: survival and tracking on one scale (a fallen
# robot earns nothing for the rest of the clip); the first of equal scores is kept
BEST_KEY = "tracking_reward_per_clip_step"


class RunAborted(RuntimeError):
    """A learner cannot go on (e.g. a sampler that keeps dying): `gym_motion.training.train`
    saves the model and the checkpoint, writes summary.json with ``stopped_by`` "error" and
    the message, and skips the evaluations after learning."""


class Progress:
    """What happens between a learner's rollouts: the curves' history, the curricula (the run's
    `RunConfig.curricula` terms, `gym_motion.curriculum`), periodic evaluations and the
    wall-clock budget.

    Args:
        config: the run's config (``total_steps``, ``curricula``, ``eval_every_steps``,
            ``max_minutes``).
            env: the training `TrackingVecEnv` (its ``reset_noise_scale`` and
            ``inactive_terminations`` are set here). evaluate:
            current policy -> `evaluate_policy_on_clips` result, or None (no periodic
            evaluations, e.g. ranks other than 0). world_size, device: ranks of a
            distributed run agree on the budget (the slowest decides) over torch.distributed.
        checkpoint: saves the run at the env steps it is given (None: no checkpoints, e.g.
            ranks other than 0), called at the first rollout end after every
            ``config.checkpoint_minutes``.
        keep_best: called with the env steps and the evaluation's result whenever an
            evaluation scores higher on `BEST_KEY` than every earlier one of the run (resumed
            sessions included); None: not kept.

    Attributes:
        scale: the reset-noise scale in use. stop: learning should stop (the budget).
        history: per logged rollout, ``timesteps`` and the learner's values (curves).
        evals: per evaluation, ``timesteps`` and ``eval/<key>`` for `EVAL_KEYS`.
        best: ``{"timesteps", "score"}`` of the best evaluation so far, or None (a resumed
            run sets it from its best/ folder, which records it).
        switched_on: the terminations a curriculum term switched on for good so far
            (`gym_motion.curriculum.termination_from_episode_s`), each with the env step of the
            rollout after which it was (kept across resumes).
        episode_window_steps: the env steps of rollouts whose mean ``episode/length`` is the
            curricula's `CurriculumState.mean_episode_s` (500 k: about 80 rollouts of 256 envs,
            so one lucky rollout does not switch a term on); the mean is None before that many
            steps.
    """

    episode_window_steps: int = 500_000

    def __init__(
        self,
        config: RunConfig,
        env: Any,
        evaluate: Callable[[], dict[str, Any]] | None,
        world_size: int = 1,
        device: str = "cpu",
        checkpoint: Callable[[int], None] | None = None,
        keep_best: Callable[[int, dict[str, Any]], None] | None = None,
    ):
        self.config, self.env, self._evaluate = config, env, evaluate
        self.world_size, self.device = world_size, device
        self.seconds = None if config.max_minutes is None else 60.0 * config.max_minutes
        self.history: list[dict[str, float]] = []
        self.evals: list[dict[str, float]] = []
        self.stop = False
        self._next_eval = config.eval_every_steps or math.inf
        self._checkpoint = checkpoint if config.checkpoint_minutes > 0 else None
        self.checkpoints = 0
        self._keep_best = keep_best
        self.best: dict[str, float] | None = None
        self.switched_on: dict[str, int] = {}
        self._switches_terminations = False
        self._learn_s0 = 0.0
        self._t0 = self._saved = time.perf_counter()
        self._set_curricula(0)

    def state(self, steps: int) -> dict[str, Any]:
        """What `restore` continues from, as JSON values, at `steps` env steps."""
        return {
            "env_steps": int(steps),
            "learn_s": round(self.learn_s, 2),
            "history": self.history,
            "evals": self.evals,
            "next_eval": None if math.isinf(self._next_eval) else self._next_eval,
            "checkpoints": self.checkpoints,
            "terminations_switched_on": dict(self.switched_on),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from a `state`: its history, evaluations and their schedule, and the
        reset-noise scale and inactive terminations of its env steps."""
        self.history, self.evals = list(state["history"]), list(state["evals"])
        self.switched_on = dict(state.get("terminations_switched_on", {}))
        self.checkpoints = int(state["checkpoints"])
        self._learn_s0 = float(state["learn_s"])
        if state["next_eval"] is not None and self.config.eval_every_steps:
            self._next_eval = state["next_eval"]
        self._set_curricula(int(state["env_steps"]))

    @property
    def learn_s(self) -> float:
        """Seconds of learning, earlier sessions of a resumed run included."""
        return self._learn_s0 + time.perf_counter() - self._t0

    def start(self) -> None:
        """Start the budget's clock (learning begins)."""
        self._t0 = self._saved = time.perf_counter()

    def _set_curricula(self, steps: int, new_row: bool = False) -> None:
        """Step the curriculum terms at `steps` env steps and apply them to the env; the mean
        training-episode length is given to them only after a newly logged rollout
        (`new_row`), computed once and only if a term asks for it."""
        mean: list[float | None] = []

        def mean_episode_s() -> float | None:
            if not mean:
                mean.append(self._mean_episode_s(steps) if new_row else None)
            return mean[0]

        state = CurriculumState(steps, self.switched_on, mean_episode_s)
        for term in self.config.curricula.values():
            term.func(state, **term.params)
        self.scale = state.reset_noise_scale
        self.env.reset_noise_scale = self.scale
        # an env no curriculum switched a termination of is left as it is
        if state.inactive_terminations or self._switches_terminations:
            self.env.inactive_terminations = tuple(state.inactive_terminations)
            self._switches_terminations = True

    def _mean_episode_s(self, steps: int) -> float | None:
        """The training episodes' mean length, s, over the rollouts of the last
        `episode_window_steps` env steps (on every rank: all ranks' episodes), or None before
        that many steps or without a logged episode length."""
        since = steps - self.episode_window_steps
        window = []
        for row in reversed(self.history):
            if row["timesteps"] <= since:
                break
            if "episode/length" in row:
                window.append(row["episode/length"])
        total, count = float(sum(window)), float(len(window))
        if self.world_size > 1:  # the mean over every rank's episodes, the same on each rank
            import torch

            both = torch.tensor([total, count], dtype=torch.float64, device=self.device)
            torch.distributed.all_reduce(both)
            total, count = both.tolist()
        if steps < self.episode_window_steps or count == 0:
            return None
        return self.config.env.sim.control_dt * total / count

    def after_rollout(self, steps: int, values: dict[str, float] | None = None) -> dict:
        """After a rollout (and, for on-policy libraries, its update or just before it) at
        `steps` env steps: keep `values` (None: nothing logged this rollout) for the curves,
        step the curricula (the reset-noise scale and inactive terminations of the next
        rollout), run the periodic evaluation when due
        (not at the last rollout: the run's final evaluation follows), save a checkpoint when
        due, and set `stop` past the budget.

        Returns:
            The evaluation's ``eval/*`` values and its seconds (``time/eval_s``) for the
            learner to log (``{}`` when none ran).
        """
        if values is not None:
            self.history.append({"timesteps": float(steps), **values})
        # a new row (every rank calls it: the mean is reduced over ranks)
        self._set_curricula(steps, new_row=values is not None or self.world_size > 1)
        out: dict[str, float] = {}
        if self._evaluate is not None and self._next_eval <= steps < self.config.total_steps:
            t0 = time.perf_counter()
            out = self.evaluate_now(steps)
            out["time/eval_s"] = time.perf_counter() - t0
            while self._next_eval <= steps:
                self._next_eval += self.config.eval_every_steps
        due = time.perf_counter() - self._saved >= 60.0 * self.config.checkpoint_minutes
        if self._checkpoint is not None and due:
            self._checkpoint(steps)
            self.checkpoints += 1
            self._saved = time.perf_counter()
        if self._over_budget():
            self.stop = True
        return out

    def evaluate_now(self, steps: int) -> dict[str, float]:
        """Evaluate the current policy; keep its ``eval/*`` values in `evals` (with the env
        steps and the seconds of learning so far, ``learn_s``) and return them, and keep the
        policy (`keep_best`) if it is the run's best so far."""
        result = self._evaluate()
        mean = result["mean"]
        values = {f"eval/{k}": float(mean[k]) for k in EVAL_KEYS if mean.get(k) is not None}
        self.evals.append({"timesteps": float(steps), "learn_s": round(self.learn_s, 2), **values})
        self.offer_best(steps, result)
        return values

    def offer_best(self, steps: int, result: dict[str, Any]) -> None:
        """Keep the policy evaluated in `result` (`keep_best`) if it scores higher on
        `BEST_KEY` than the best so far; `best` changes only once it is kept."""
        score = result["mean"].get(BEST_KEY)
        if self._keep_best is None or score is None:
            return
        if self.best is None or score > self.best["score"]:
            self._keep_best(steps, result)
            self.best = {"timesteps": float(steps), "score": float(score)}

    def _over_budget(self) -> bool:
        over = self.seconds is not None and time.perf_counter() - self._t0 > self.seconds
        if self.world_size > 1:  # every rank stops after the same rollout
            import torch

            flag = torch.tensor([float(over)], device=self.device)
            torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
            over = bool(flag.item() > 0)
        return over
