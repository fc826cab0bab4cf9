"""The action manager: policy actions -> joint position targets (docs/task.md section 6).

``target = offset + action_scale * action - encoder_bias`` per env and joint, rad; the offset
is the default joint pose (BeyondMimic's convention, ``action_offset="default"``) or the
reference joint positions of the motion frame the policy observed (``"reference"``: residual
actions, the zero action a PD tracker of the clip); the encoder bias is subtracted because the
robot believes its joints sit at the biased reading. The policy observes its last action in
BeyondMimic's convention either way (`MDPState.action_obs`), so a residual policy exported with
the reference folded in sees, fed back, exactly what it saw in training.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from gym_motion.kernels.actions import MAX_TARGET, joint_targets
from gym_motion.kernels.dispatch import bind_builds
from gym_motion.managers.state import MDPState

# where a zero action puts the joints: the default pose, or the reference of the motion frame
ACTION_OFFSETS = ("default", "reference")


class ActionManager:
    """Checks actions, keeps the action history in the MDP state, computes position targets.

    Args:
        state: the shared MDP state (`action`, `last_action`, `action_obs`, `encoder_bias`
            are used).
        action_scale: (J,) rad per unit action.
        offset: "default" (the default joint pose) or "reference" (the reference joint
            positions the policy observed, ``state.obs_ref.joint_pos``).
        serial: whether its kernels run their serial builds (the env's `NumbaThreads.serial`).

    Attributes:
        scale: (J,) float32, rad per unit action.
        targets: (N, J) float32, joint position targets of the last `process`, rad.
    """

    def __init__(
        self, state: MDPState, action_scale: np.ndarray, offset: str = "default", *, serial: bool
    ):
        if offset not in ACTION_OFFSETS:
            raise ValueError(f"action offset must be one of {ACTION_OFFSETS}, got {offset!r}")
        self._state = s = state
        self.scale = np.asarray(action_scale, np.float32)
        self.targets = np.zeros(state.action.shape, np.float32)
        self._none_held = np.zeros(state.num_envs, bool)
        if offset == "reference":
            self._offset = s.obs_ref.joint_pos  # the live buffer: what the policy last observed
        else:
            self._offset = np.tile(s.default_joint_pos, (state.num_envs, 1))
        self._targets = bind_builds(partial(
            joint_targets, self.scale, self._offset, s.default_joint_pos, s.encoder_bias,
            s.action, s.last_action, s.action_obs, self.targets,
        ))[serial]  # fmt: skip

    def process(self, actions: np.ndarray, held: np.ndarray | None = None) -> np.ndarray:
        """Take (N, J) actions: last_action <- action <- actions, rows `held` (N,) bool get zero
        action and history (their step is not their own); returns `targets` (owned buffer).

        Raises:
            ValueError: wrong shape, values that are not finite as float32, or that give joint
                targets beyond +-1e10 rad (`MAX_TARGET`; the offending rows are named).
        """
        s = self._state
        actions = self.as_array(actions)
        if np.may_share_memory(actions, s.action) or np.may_share_memory(actions, s.last_action):
            actions = actions.copy()  # a view of the history (the kernel writes it as it reads)
        held = self._none_held if held is None else held
        if self._targets(actions, held):
            raise ValueError(self.refusal(actions))
        return self.targets

    def as_array(self, actions: Any) -> np.ndarray:
        """`actions` as an (N, J) NumPy array of float32 or float64 (other numbers cast to
        float32, as NumPy's "same_kind" casting allows).

        Raises:
            ValueError: another shape.
            TypeError: values that do not cast to float32 (complex, objects).
        """
        if actions is None:
            raise ValueError(f"actions must be an array of shape {self._state.action.shape}, "
                             "got None")  # fmt: skip
        actions = np.asarray(actions)
        if actions.shape != self._state.action.shape:
            raise ValueError(
                f"actions must have shape {self._state.action.shape}, got {actions.shape}"
            )
        if actions.dtype != np.float32 and actions.dtype != np.float64:
            actions = actions.astype(np.float32, casting="same_kind")
        return actions

    def refusal(self, actions: np.ndarray) -> str:
        """Why (N, J) `actions` are refused, naming the rows (as the kernel checks them); empty
        when they are not."""
        with np.errstate(over="ignore", invalid="ignore"):
            a = actions.astype(np.float32)
            target = a * self.scale + self._offset - self._state.encoder_bias
        nonfinite = ~np.isfinite(a).all(axis=1)
        beyond = ~nonfinite & (np.abs(target) > MAX_TARGET).any(axis=1)
        parts = []
        if nonfinite.any():
            parts.append(
                f"actions of envs {np.flatnonzero(nonfinite)[:10].tolist()} are not finite (as "
                "float32, the env's action dtype)"
            )
        if beyond.any():
            parts.append(
                f"actions of envs {np.flatnonzero(beyond)[:10].tolist()} give joint targets "
                f"beyond +-{MAX_TARGET:g} rad (MuJoCo's mjMAXVAL; MuJoCo would zero every "
                "control)"
            )
        return "; ".join(parts)
