"""Observation terms (docs/task.md section 5) and the manager that concatenates them.

A term is ``ObsTermCfg(func, dim, noise, clip, scale)``; ``func(state, out)`` writes an (N, dim)
float32 view of the group buffer (the built-in terms are `bound_term`s). Each step a group is
computed term by term, then its noise is added, then each term is clipped and scaled: Isaac
Lab's and mjlab's order (compute, noise, clip, scale; ``ObservationManager.compute_group``).
Frames: "anchor frame" is the robot's anchor body frame, "base frame" the robot's root body
frame.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial, wraps

import gymnasium as gym
import numpy as np

from gym_motion import config_values as cv
from gym_motion.kernels import observations as k
from gym_motion.kernels.dispatch import bind_builds, builds_of
from gym_motion.managers.state import MDPState
from gym_motion.managers.terms import bind_term, bound_term


def _joints(s: MDPState) -> int:
    return s.robot.joint_pos.shape[1]


def _term(width: Callable[[MDPState], int]) -> Callable[..., Callable[..., None]]:
    """`bound_term` whose binder first checks that `out` is `width(state)` columns wide: the
    kernels write by the robot's joint and body counts, so a narrower buffer would be
    overrun."""

    def decorate(binder: Callable[..., Callable[[], None]]) -> Callable[..., None]:
        @wraps(binder)
        def checked(s: MDPState, out: np.ndarray, **params: object) -> Callable[[], None]:
            want = width(s)
            if out.shape[1] != want:
                raise ValueError(
                    f"writes {want} values per env for this robot ({_joints(s)} joints, "
                    f"{s.robot.pos_w.shape[1]} tracked bodies), but its ObsTermCfg.dim is "
                    f"{out.shape[1]}; build the task with TrackingEnvCfg.for_robot(robot)"
                )
            return binder(s, out, **params)

        return bound_term(checked)

    return decorate


@_term(width=lambda s: 2 * s.ref.joint_pos.shape[1])
def command(s: MDPState, out: np.ndarray) -> Callable[[], None]:
    """Observed reference (`MDPState.obs_ref`) joint positions and velocities (2J), rad and
    rad/s."""
    j = s.ref.joint_pos.shape[1]
    pos, vel = out[:, :j], out[:, j:]

    def evaluate() -> None:
        np.copyto(pos, s.obs_ref.joint_pos)
        np.copyto(vel, s.obs_ref.joint_vel)

    return evaluate


@_term(width=lambda s: 3)
def anchor_pos_b(s: MDPState, out: np.ndarray) -> Callable[[], None]:
    """Observed reference anchor position in the robot anchor frame (3), m."""
    a, r = s.anchor, s.robot
    ref = s.obs_ref.pos_w[:, a : a + 1]
    return partial(k.pos_in_frame, r.pos_w[:, a], r.quat_w[:, a], ref, out)


@_term(width=lambda s: 6)
def anchor_ori_b(s: MDPState, out: np.ndarray) -> Callable[[], None]:
    """Observed reference anchor orientation relative to the robot anchor, 6-D (6)."""
    a = s.anchor
    return partial(k.ori_in_frame_6d, s.robot.quat_w[:, a], s.obs_ref.quat_w[:, a : a + 1], out)


@_term(width=lambda s: 6)
def anchor_vel_b(s: MDPState, out: np.ndarray) -> Callable[[], None]:
    """Observed reference anchor linear (m/s) then angular (rad/s) velocity in the robot anchor
    frame (6): the clip's speed and turn rate, which the anchor position error alone does not
    give a memoryless policy. Not a BeyondMimic term (docs/task.md section 5)."""
    a, r, ref = s.anchor, s.robot, s.obs_ref
    return partial(k.twist_in_frame, r.quat_w[:, a], ref.lin_vel_w[:, a], ref.ang_vel_w[:, a],
                   out)  # fmt: skip


@_term(width=lambda s: 3)
def imu_lin_vel(s: MDPState, out: np.ndarray) -> Callable[[], None]:
    """Linear velocity of the IMU site (`MDPState.imu_pos_b`, fixed on the root body) in the
    root frame (3), m/s: what mjlab's ``imu_lin_vel`` velocimeter and a robot's IMU-based
    estimator give. The task's ``base_lin_vel`` term (docs/task.md section 5)."""
    r, b = s.robot, s.root
    return partial(k.point_vel_in_frame, r.quat_w[:, b], r.lin_vel_w[:, b], r.ang_vel_w[:, b],
                   s.imu_pos_b, out)  # fmt: skip


@_term(width=lambda s: 3)
def base_lin_vel(s: MDPState, out: np.ndarray) -> Callable[[], None]:
    """Root body origin's linear velocity in the root frame (3), m/s: the ``base_lin_vel`` of
    run folders written before `imu_lin_vel` (kept so that they evaluate as trained)."""
    r, b = s.robot, s.root
    return partial(k.vec_in_frame, r.quat_w[:, b], r.lin_vel_w[:, b : b + 1], out)


@_term(width=lambda s: 3)
def base_ang_vel(s: MDPState, out: np.ndarray) -> Callable[[], None]:
    """Root angular velocity in the root frame (3), rad/s."""
    r, b = s.robot, s.root
    return partial(k.vec_in_frame, r.quat_w[:, b], r.ang_vel_w[:, b : b + 1], out)


@_term(width=_joints)
def joint_pos(s: MDPState, out: np.ndarray) -> Callable[[], None]:
    """Measured joint positions minus the default pose (J), rad, with encoder bias."""

    def evaluate() -> None:
        np.subtract(s.robot.joint_pos, s.default_joint_pos, out=out)
        np.add(out, s.encoder_bias, out=out)

    return evaluate


@_term(width=_joints)
def joint_vel(s: MDPState, out: np.ndarray) -> Callable[[], None]:
    """Joint velocities (J), rad/s."""
    return partial(np.copyto, out, s.robot.joint_vel)


@_term(width=_joints)
def last_action(s: MDPState, out: np.ndarray) -> Callable[[], None]:
    """The action of the last step (J), in BeyondMimic's convention (`MDPState.action_obs`:
    the policy's own action unless actions are residual)."""
    return partial(np.copyto, out, s.action_obs)


@_term(width=lambda s: 3 * s.robot.pos_w.shape[1])
def body_pos_b(s: MDPState, out: np.ndarray) -> Callable[[], None]:
    """Robot tracked-body positions in the robot anchor frame (3B), m."""
    r, a = s.robot, s.anchor
    return partial(k.pos_in_frame, r.pos_w[:, a], r.quat_w[:, a], r.pos_w, out)


@_term(width=lambda s: 6 * s.robot.quat_w.shape[1])
def body_ori_b(s: MDPState, out: np.ndarray) -> Callable[[], None]:
    """Robot tracked-body orientations in the robot anchor frame, 6-D each (6B)."""
    r, a = s.robot, s.anchor
    return partial(k.ori_in_frame_6d, r.quat_w[:, a], r.quat_w, out)


@dataclass(frozen=True)
class ObsTermCfg:
    """One observation term: its function, width, uniform noise half-width, clip and scale.

    Attributes:
        func: ``func(state, out)`` writes the term into `out`, (N, dim) float32.
        dim: the term's width (values per env).
        noise: half-width of the uniform noise added in training (the term's unit; 0: none).
        clip: (low, high): the noisy value is clipped to it (None: not clipped).
        scale: the clipped value is multiplied by it (None: not scaled).

    Raises:
        ValueError: func not callable, dim not an integer >= 1, noise not a finite number
            >= 0, clip not a (low, high) pair of finite numbers with low <= high, scale not a
            finite number other than 0 (named).
    """

    func: Callable[[MDPState, np.ndarray], None]
    dim: int
    noise: float = 0.0
    clip: tuple[float, float] | None = None
    scale: float | None = None

    def __post_init__(self) -> None:
        cv.callable_("ObsTermCfg.func", self.func)
        object.__setattr__(self, "dim", cv.integer("ObsTermCfg.dim", self.dim, low=1))
        object.__setattr__(self, "noise", cv.real("ObsTermCfg.noise", self.noise, low=0.0))
        if self.clip is not None:
            object.__setattr__(self, "clip", cv.interval("ObsTermCfg.clip", self.clip))
        if self.scale is not None:
            scale = cv.real("ObsTermCfg.scale", self.scale)
            if scale == 0.0:
                raise ValueError("ObsTermCfg.scale must be a nonzero number (0 erases the term), "
                                 "got 0")  # fmt: skip
            object.__setattr__(self, "scale", scale)


@dataclass(frozen=True)
class NoiseColumns:
    """Where each noisy column of a group draws its noise (`k.add_uniform_noise`).

    Attributes:
        column: (C,) int64 column in the group buffer. scale: (C,) float32 half-width.
        offset: (C,) int64 index of its row-0 value in the flat uniform buffer (its term's
            block start plus its column within the term). width: (C,) int64 its term's width
            (the stride between rows in the block).
        size: length of the flat uniform buffer, N x C.
    """

    column: np.ndarray
    scale: np.ndarray
    offset: np.ndarray
    width: np.ndarray
    size: int

    @classmethod
    def of(cls, terms: list[tuple[slice, float]], num_envs: int) -> NoiseColumns:
        """The columns of noisy `terms` ((column slice, half-width) in order) for N envs."""
        column, scale, offset, width = [], [], [], []
        block = 0
        for sl, half_width in terms:
            d = sl.stop - sl.start
            column += range(sl.start, sl.stop)
            scale += [half_width] * d
            offset += range(block, block + d)
            width += [d] * d
            block += num_envs * d
        return cls(
            np.array(column, np.int64), np.array(scale, np.float32),
            np.array(offset, np.int64), np.array(width, np.int64), block,
        )  # fmt: skip


class ObservationManager:
    """Concatenates the terms of each group into one (N, D) float32 buffer per group.

    Args:
        groups: {group name: {term name: ObsTermCfg}}, e.g. "policy" and "critic".
        state: the shared MDP state.
        noise: whether to add each term's uniform noise (training) or not (evaluation).
        serial: whether its kernels run their serial builds (the env's `NumbaThreads.serial`).
    """

    def __init__(
        self,
        groups: dict[str, dict[str, ObsTermCfg]],
        state: MDPState,
        noise: bool,
        *,
        serial: bool,
    ):
        n = state.num_envs
        self.buffers: dict[str, np.ndarray] = {}
        # per group: its bound terms, in the build of this batch
        self._terms: dict[str, tuple[Callable[[], None], ...]] = {}
        # per group: (flat uniform buffer, the noise kernel on it) or None
        self._noise: dict[str, tuple[np.ndarray, Callable[[], None]] | None] = {}
        # per group: the clip and scale of its terms that have them, in order
        self._post: dict[str, tuple[Callable[[], object], ...]] = {}
        self.term_slices: dict[str, dict[str, slice]] = {}
        # per group: (low, high) (D,) float32 bounds of each column: its term's clip x scale
        self._bounds: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for group, terms in groups.items():
            dim = sum(t.dim for t in terms.values())
            self.buffers[group] = np.zeros((n, dim), np.float32)
            start = 0
            bound = []
            self.term_slices[group] = {}
            noisy = []
            post: list[Callable[[], object]] = []
            for name, t in terms.items():
                sl = slice(start, start + t.dim)
                view = self.buffers[group][:, sl]
                try:
                    bound.append(bind_term(t.func, state, view, {}))
                except ValueError as e:
                    raise ValueError(f"observation term {group}/{name}: {e}") from None
                self.term_slices[group][name] = sl
                if noise and t.noise:
                    noisy.append((sl, t.noise))
                if t.clip is not None:
                    post.append(partial(np.clip, view, np.float32(t.clip[0]),
                                        np.float32(t.clip[1]), out=view))  # fmt: skip
                if t.scale is not None:
                    post.append(partial(np.multiply, view, np.float32(t.scale), out=view))
                start += t.dim
            self._post[group] = tuple(post)
            low, high = np.full(dim, -np.inf, np.float32), np.full(dim, np.inf, np.float32)
            for name, t in terms.items():
                if t.clip is not None:
                    sl = self.term_slices[group][name]
                    ends = np.float32(t.clip) * np.float32(1.0 if t.scale is None else t.scale)
                    low[sl], high[sl] = ends.min(), ends.max()
            self._bounds[group] = (low, high)
            self._terms[group] = builds_of(bound)[serial]
            self._noise[group] = None
            if noisy:
                c = NoiseColumns.of(noisy, n)
                unit = np.zeros(c.size, np.float32)
                add = partial(k.add_uniform_noise, self.buffers[group], unit, c.column, c.scale,
                              c.offset, c.width)  # fmt: skip
                self._noise[group] = (unit, bind_builds(add)[serial])

    def compute(
        self, rng: np.random.Generator, groups: tuple[str, ...] | None = None
    ) -> dict[str, np.ndarray]:
        """Fill the buffers of `groups` (all when None); returns all buffers (owned: copy
        before handing out).

        Noise: one draw of N x (noisy columns) uniform float32 values per group, used term by
        term in configuration order, each term's (N, D_term) block row-major (the stream of
        one draw per term). Then each term's clip and scale, in place.
        """
        for group in groups or tuple(self.buffers):
            for evaluate in self._terms[group]:
                evaluate()
            noise = self._noise[group]
            if noise is not None:
                unit, add = noise
                rng.random(dtype=np.float32, out=unit)
                add()
            for process in self._post[group]:
                process()
        return self.buffers

    def space(self, obs_mode: str) -> gym.spaces.Space:
        """The single-env observation space: ``Box(D_policy,)`` float32 for "policy", a Dict of
        every group's Box for "dict"; unbounded but for the columns of clipped terms (their
        clip times their scale)."""

        def box(group: str) -> gym.spaces.Box:
            low, high = self._bounds[group]
            return gym.spaces.Box(low.copy(), high.copy(), dtype=np.float32)

        if obs_mode == "dict":
            return gym.spaces.Dict({g: box(g) for g in self.buffers})
        return box("policy")
