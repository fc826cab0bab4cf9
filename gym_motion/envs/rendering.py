"""Rendering of a `TrackingVecEnv`: its render settings, and `render` delegated to
`gym_motion.render` (a `TrackingRenderer` made on first use, frames as `EnvFrames`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import gymnasium as gym
import numpy as np

from gym_motion.render import (
    EnvFrames,
    RenderCfg,
    TrackingRenderer,
    check_render_mode,
    state_qpos,
)

if TYPE_CHECKING:
    from gym_motion.envs.config import TrackingEnvCfg
    from gym_motion.managers.state import MDPState

__all__ = ["RenderMixin"]


class RenderMixin:
    """`render` for a `TrackingVecEnv`, set up by `_init_render`.

    Reads of the env: ``num_envs``, ``cfg`` (the robot), ``state`` (robot and reference poses)
    and ``_check_usable`` (`VectorApiMixin`). Writes only its own attributes below.

    Attributes:
        render_mode: None or "rgb_array". render_envs: frames drawn at once by `render`.
        render_cfg: the `RenderCfg`.
    """

    # read
    num_envs: int
    cfg: TrackingEnvCfg
    _check_usable: Callable[[str], None]

    @property
    def state(self) -> MDPState:  # read: the env's (`TrackingVecEnv.state`)
        raise NotImplementedError

    # written
    render_mode: str | None
    render_envs: int
    render_cfg: RenderCfg
    _renderer: TrackingRenderer | None

    def _init_render(
        self, render_mode: str | None, render_envs: int, render_cfg: RenderCfg | None
    ) -> None:
        """Check and keep the render settings (the renderer is made by the first `render`).

        Raises:
            ValueError: an unsupported render_mode, or render_envs outside [1, num_envs].
        """
        self.render_mode = check_render_mode(render_mode)
        if not 1 <= render_envs <= self.num_envs:
            raise ValueError(
                f"render_envs must be in [1, num_envs={self.num_envs}], got {render_envs}"
            )
        self.render_envs = int(render_envs)
        self.render_cfg = render_cfg or RenderCfg()
        self._renderer = None

    def render(self) -> EnvFrames | None:
        """One frame per env with ``render_mode="rgb_array"`` (as gymnasium's `SyncVectorEnv`,
        whose vector wrappers such as ``RecordVideo`` need one per env): an `EnvFrames`
        sequence of N (H, W, 3) uint8 arrays of the envs as they are now. The first
        `render_envs` are drawn at once, the others when first read (a frame costs ~20 ms of
        CPU at 320x240 with collision primitives, ~1.4x that with the shipped meshes, ~5x with
        the full ones, `RenderCfg.meshes`). None (with
        gymnasium's warning) without a render mode. The first call makes the OpenGL context
        (`TrackingRenderer`).

        Raises:
            RuntimeError: `reset` was not called first, the env is closed, or no OpenGL
                context could be made.
        """
        if self.render_mode is None:
            gym.logger.warn("TrackingVecEnv.render() without a render_mode returns None")
            return None
        self._check_usable("render")
        if self._renderer is None:
            self._renderer = TrackingRenderer(self.cfg.robot, self.render_cfg)
        s, ids = self.state, np.arange(self.num_envs)
        ghost = state_qpos(s.ref, s.root, ids) if self.render_cfg.ghost else None
        frames = EnvFrames(self._renderer, state_qpos(s.robot, s.root, ids), ghost)
        for i in range(self.render_envs):
            frames[i]  # noqa: B018 (drawn now; the others when first read)
        return frames

    def _close_renderer(self) -> None:
        """Release the renderer's OpenGL context, if one was made (idempotent)."""
        renderer = getattr(self, "_renderer", None)
        if renderer is not None:
            renderer.close()
            self._renderer = None
