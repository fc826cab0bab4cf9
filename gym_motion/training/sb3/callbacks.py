"""The SB3 callback of `gym-motion train`'s own loop: `ProgressCallback` drives the run's
`gym_motion.training.progress.Progress` (the reset-noise ramp, the terminations switched on,
evaluations, checkpoints and budgets). The callbacks a user's own SB3 loop takes are
`gym_motion.adapters.sb3.callbacks`'."""

from __future__ import annotations

from stable_baselines3.common.callbacks import BaseCallback

from gym_motion.adapters.sb3.callbacks import TrackingLogCallback
from gym_motion.training.progress import Progress

__all__ = ["ProgressCallback"]


class ProgressCallback(BaseCallback):
    """Drives a `gym-motion train` run's `gym_motion.training.progress.Progress` from SB3's
    loop: after each rollout (before its update), `Progress.after_rollout` with the latest row
    of `log` (a `TrackingLogCallback` listed before this callback) sets the reset-noise scale,
    runs the periodic evaluation (logged as ``eval/*``) and checks the budget; the next step
    stops learning once ``progress.stop`` is set. Logs ``curriculum/reset_noise_scale``.

    Args:
        progress: the run's `Progress`. log: the run's `TrackingLogCallback`.
        dump: write the logger's row after an evaluation (off-policy runs dump on request).
    """

    def __init__(self, progress: Progress, log: TrackingLogCallback, dump: bool = False):
        super().__init__()
        self.progress, self.log, self.dump = progress, log, bool(dump)
        self._seen = 0

    def _new_row(self) -> dict[str, float] | None:
        if len(self.log.history) == self._seen:
            return None
        self._seen = len(self.log.history)
        return {k: v for k, v in self.log.history[-1].items() if k != "timesteps"}

    def _on_rollout_start(self) -> None:
        self.logger.record("curriculum/reset_noise_scale", self.progress.scale)

    def _on_step(self) -> bool:
        return not self.progress.stop

    def _on_rollout_end(self) -> None:
        values = self.progress.after_rollout(self.num_timesteps, self._new_row())
        for key, value in values.items():
            self.logger.record(key, value)
        if values and self.dump:
            self.logger.dump(self.num_timesteps)

    def _on_training_end(self) -> None:
        row = self._new_row()  # an off-policy run's last row, logged at the end
        if row is not None:
            self.progress.history.append({"timesteps": float(self.num_timesteps), **row})
