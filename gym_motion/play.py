"""Interactive playback of a policy on clips, one control step at a time (``gym-motion play``).

`PlaySession` is what a viewer drives: it plays a clip from a chosen frame in a one-env
`TrackingVecEnv` under `eval_cfg` (no noise, no randomisation, the deterministic policy),
exactly as `gym_motion.evaluate` and `gym_motion.video` play it: the same env, the same step.
Without a policy (``kinematic=True``) it plays the clip alone, frame by frame, with no physics:
a check of a retargeted clip before training. `body_geometry` gives the triangle meshes of a
picture-only scene (`gym_motion.render.build_scene`) per body, for viewers that draw them.

This module imports neither viser nor the RL libraries; `gym_motion.viewer` puts a session in
the browser.

Example:
    >>> from gym_motion.motion import DEFAULT_MOTION_PATH  # doctest: +SKIP
    >>> session = PlaySession([DEFAULT_MOTION_PATH], policy=None)
    >>> result = session.step()  # StepResult(frame=1, rewards={...}, errors={...}, ...)
    >>> robot_qpos, ghost_qpos = session.poses()  # (7 + J,) float64 each
    >>> session.close()
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mujoco
import numpy as np

if TYPE_CHECKING:
    from gym_motion.envs.config import TrackingEnvCfg
    from gym_motion.policy import BindablePolicy, Policy

__all__ = ["BodyMesh", "PlaySession", "StepResult", "body_geometry"]

_CAUSE = "final/termination/"


@dataclass(frozen=True)
class StepResult:
    """What one control step did.

    Attributes:
        frame: the motion frame the reference is on after the step (clip frames, 0-based).
        rewards: this step's weighted reward terms, before dt (``reward/<term>`` of the info);
            empty in kinematic playback.
        errors: the tracking errors of `gym_motion.kernels.metrics.TRACKING_ERRORS` (m, rad);
            empty in kinematic playback.
        ended: None while the episode goes on; else how it ended, e.g. ``"anchor_height at
            step 44"`` or ``"clip end at step 1617"``.
        failed: the episode ended by a termination term (not by reaching the clip's end).
    """

    frame: int
    rewards: dict[str, float] = field(default_factory=dict)
    errors: dict[str, float] = field(default_factory=dict)
    ended: str | None = None
    failed: bool = False


class PlaySession:
    """One robot playing one of several clips, stepped on demand.

    Args:
        clips: clip npz paths (at least one); `select_clip` switches between them.
        policy: obs -> actions (`gym_motion.policy.Policy`), a `BindablePolicy` (bound to each
            env built here), or None: the zero action.
        cfg: the task (default: the default task), played with `gym_motion.envs.eval_cfg`.
        kinematic: play the clip alone (no env, no physics, no policy): the robot is posed on
            the clip's frames and there is no ghost.
        obs_mode: the observation `policy` takes, "policy" or "dict".
        seed: the env's seed.
        playback: "real_time" or "frame_per_step" (`gym_motion.motion.Playback`).

    Attributes:
        clips: the clip paths. clip_index: the clip playing. robot: the `RobotSpec`.
        dt: control step, s. frame: the reference's motion frame. steps: control steps since
        the episode started. ended: how the last episode ended, or None while it runs.

    Raises:
        ValueError: no clips, a bad clip, or a policy that cannot run in the env.
        FileNotFoundError: a clip that does not exist.
    """

    def __init__(
        self,
        clips: Sequence[str | os.PathLike],
        policy: Policy | BindablePolicy | None = None,
        cfg: TrackingEnvCfg | None = None,
        *,
        kinematic: bool = False,
        obs_mode: str = "policy",
        seed: int = 0,
        playback: str = "real_time",
    ) -> None:
        from gym_motion.envs.config import eval_cfg

        self.clips = [Path(c) for c in clips]
        if not self.clips:
            raise ValueError("PlaySession needs at least one clip")
        missing = [str(c) for c in self.clips if not c.exists()]
        if missing:
            raise FileNotFoundError(f"no such clip: {', '.join(missing)}")
        self.cfg = eval_cfg(cfg)
        self.robot = self.cfg.robot
        self.dt = float(self.cfg.sim.control_dt)
        self.kinematic = bool(kinematic)
        self._policy, self._obs_mode, self._seed = policy, obs_mode, seed
        self._playback = playback
        self._env: Any = None
        self._act: Any = None
        self._obs: Any = None
        self._library: Any = None
        self.clip_index = -1
        self.frame = self.steps = 0
        self.ended: str | None = None
        self.select_clip(0)

    # ------------------------------------------------------------------ clips
    @property
    def clip_names(self) -> list[str]:
        """The clips' file names, in `clips` order."""
        return [c.name for c in self.clips]

    @property
    def num_frames(self) -> int:
        """Frames of the clip playing, on the control rate."""
        return int(self._library.lengths[0])

    @property
    def last_start(self) -> int:
        """The last frame an episode can start on (one before the clip's last)."""
        return self.num_frames - 2

    def select_clip(self, index: int) -> None:
        """Play clip `index` (of `clips`) from its first frame; the previous env is closed.

        Raises:
            ValueError: an index outside [0, len(clips)), a bad clip, or a policy that cannot
                run in the env.
        """
        from gymnasium.vector import AutoresetMode

        from gym_motion.envs.tracking import TrackingVecEnv
        from gym_motion.motion.library import MotionLibrary
        from gym_motion.policy import bind_policy

        if not 0 <= int(index) < len(self.clips):
            raise ValueError(f"clip index must be in [0, {len(self.clips)}), got {index}")
        library = MotionLibrary.from_paths(
            self.clips[index], fps=1.0 / self.dt, robot=self.robot, playback=self._playback
        )
        env = None
        if not self.kinematic:
            env = TrackingVecEnv(
                num_envs=1, motion=library, cfg=self.cfg, obs_mode=self._obs_mode,
                autoreset_mode=AutoresetMode.DISABLED, seed=self._seed,
                max_episode_steps=int(library.lengths[0]) - 1,
            )  # fmt: skip
            try:
                act = bind_policy(self._policy, env)
            except BaseException:
                env.close()
                raise
        self._close_env()
        self._env, self._library, self.clip_index = env, library, int(index)
        if env is not None:
            self._act = act
        self.reset(0)

    # ------------------------------------------------------------------ episodes
    def reset(self, frame: int = 0) -> None:
        """Start a new episode on motion frame `frame` of the clip playing (the robot on the
        reference there).

        Raises:
            ValueError: a frame outside [0, `last_start`].
        """
        frame = int(frame)
        if not 0 <= frame <= self.last_start:
            raise ValueError(f"start frame must be in [0, {self.last_start}], got {frame}")
        if self._env is not None:
            self._obs, _ = self._env.reset(seed=self._seed, options={"start": (0, frame)})
            self.frame = int(self._env.command.frames[0])
        else:
            self.frame = frame
        self.steps = 0
        self.ended = None

    def step(self) -> StepResult:
        """One control step (one frame in kinematic playback). After an episode ended, the
        next step first restarts it from the clip's first frame.

        Returns:
            The `StepResult`.
        """
        if self.ended is not None:
            self.reset(0)
        if self._env is None:
            self.steps += 1
            self.frame += 1
            end = self.frame >= self.num_frames - 1
            if end:
                self.ended = f"clip end at step {self.steps}"
            return StepResult(self.frame, ended=self.ended)
        env = self._env
        # a policy or env error leaves the session where it was (the step is not counted)
        self._obs, _, terminated, truncated, info = env.step(self._act(self._obs))
        self.steps += 1
        self.frame = int(env.command.frames[0])
        rewards = {k[len("reward/"):]: float(v[0]) for k, v in info.items()
                   if k.startswith("reward/")}  # fmt: skip
        from gym_motion.kernels.metrics import TRACKING_ERRORS

        errors = dict(zip(TRACKING_ERRORS, env.command.errors[0].astype(float).tolist(),
                          strict=True))  # fmt: skip
        failed = bool(terminated[0])
        if failed:
            causes = [k[len(_CAUSE) :] for k in info if k.startswith(_CAUSE) and info[k][0]]
            self.ended = f"{'+'.join(causes) or 'terminated'} at step {self.steps}"
        elif truncated[0] or bool(info.get("clip_end", np.zeros(1, bool))[0]):
            self.ended = f"clip end at step {self.steps}"
        return StepResult(self.frame, rewards, errors, self.ended, failed)

    def poses(self) -> tuple[np.ndarray, np.ndarray | None]:
        """The robot's pose and the reference's, (7 + J,) float64 each in the
        `gym_motion.render.state_qpos` layout (root position m, root quaternion wxyz, joint
        angles rad; world frame). Kinematic playback: the clip's frame and None."""
        from gym_motion.render import state_qpos

        if self._env is None:
            lib = self._library
            root = lib.body_names.index(self.robot.root_body)
            row = int(lib.starts[0]) + self.frame
            qpos = np.concatenate([lib.body_pos_w[row, root], lib.body_quat_w[row, root],
                                   lib.joint_pos[row]])  # fmt: skip
            return qpos.astype(np.float64), None
        s, ids = self._env.state, np.zeros(1, np.int64)
        return state_qpos(s.robot, s.root, ids)[0], state_qpos(s.ref, s.root, ids)[0]

    def close(self) -> None:
        """Close the env (idempotent)."""
        self._close_env()

    def _close_env(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None

    def __enter__(self) -> PlaySession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass(frozen=True)
class BodyMesh:
    """The triangles of one body's geoms, in the body's frame.

    Attributes:
        body: the body's name. vertices: (V, 3) float32, m, body frame. faces: (F, 3) int32.
        rgba: (4,) float colour in [0, 1] (of the body's first geom).
    """

    body: str
    vertices: np.ndarray
    faces: np.ndarray
    rgba: np.ndarray


def body_geometry(model: mujoco.MjModel, segments: int = 12) -> list[BodyMesh]:
    """Triangle meshes of every body of `model` that has geoms, but the world body.

    Mesh geoms give their own triangles; spheres, capsules, cylinders, ellipsoids and boxes
    are tessellated (`segments` around their axis). Planes and other types are left out.

    Returns:
        One `BodyMesh` per body, in body id order; its vertices in the body frame (the
        geoms' poses in their body applied), so a viewer poses it with the body's
        ``xpos``/``xquat`` alone.
    """
    out = []
    for b in range(1, model.nbody):
        parts, rgba = [], None
        for g in np.flatnonzero(model.geom_bodyid == b):
            tri = _geom_triangles(model, int(g), segments)
            if tri is None:
                continue
            verts, faces = tri
            rot = np.zeros(9)
            mujoco.mju_quat2Mat(rot, model.geom_quat[g])
            parts.append((verts @ rot.reshape(3, 3).T + model.geom_pos[g], faces))
            if rgba is None:
                mat = model.geom_matid[g]
                rgba = model.mat_rgba[mat] if mat >= 0 else model.geom_rgba[g]
        if not parts:
            continue
        offsets = np.cumsum([0] + [len(v) for v, _ in parts[:-1]])
        vertices = np.concatenate([v for v, _ in parts]).astype(np.float32)
        faces = np.concatenate([f + o for (_, f), o in zip(parts, offsets, strict=True)])
        out.append(BodyMesh(model.body(b).name, vertices, faces.astype(np.int32),
                            np.asarray(rgba, np.float64).copy()))  # fmt: skip
    return out


def _geom_triangles(model: mujoco.MjModel, g: int, n: int):
    """(vertices (V, 3) in the geom frame, faces (F, 3)) of geom `g`, or None."""
    t, size = model.geom_type[g], model.geom_size[g]
    G = mujoco.mjtGeom
    if t == G.mjGEOM_MESH:
        m = model.geom_dataid[g]
        v0, nv = model.mesh_vertadr[m], model.mesh_vertnum[m]
        f0, nf = model.mesh_faceadr[m], model.mesh_facenum[m]
        return model.mesh_vert[v0 : v0 + nv].astype(np.float64), model.mesh_face[f0 : f0 + nf]
    if t == G.mjGEOM_BOX:
        corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
        quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4),
                 (1, 5, 7, 3)]  # fmt: skip
        faces = [(a, b, c) for a, b, c, d in quads] + [(a, c, d) for a, b, c, d in quads]
        return corners * size, np.array(faces)
    if t in (G.mjGEOM_SPHERE, G.mjGEOM_ELLIPSOID):
        radii = size if t == G.mjGEOM_ELLIPSOID else np.full(3, size[0])
        verts, faces = _lathe(np.zeros(1), 1.0, n)
        return verts * radii, faces
    if t == G.mjGEOM_CAPSULE:
        verts, faces = _lathe(np.array([-size[1], size[1]]), size[0], n)
        return verts, faces
    if t == G.mjGEOM_CYLINDER:
        ang = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
        ring = np.stack([size[0] * np.cos(ang), size[0] * np.sin(ang)], 1)
        verts = np.concatenate([np.c_[ring, np.full(n, -size[1])], np.c_[ring, np.full(n, size[1])],
                                [[0, 0, -size[1]], [0, 0, size[1]]]])  # fmt: skip
        i = np.arange(n)
        j = (i + 1) % n
        faces = np.concatenate([np.c_[i, j, n + j], np.c_[i, n + j, n + i],
                                np.c_[np.full(n, 2 * n), j, i],
                                np.c_[np.full(n, 2 * n + 1), n + i, n + j]])  # fmt: skip
        return verts, faces
    return None


def _lathe(centres: np.ndarray, radius: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A sphere (one centre) or capsule (two centres on z) of `radius`: hemispheres of n/2
    rings around each centre joined by their equators; (vertices, faces)."""
    rings = max(2, n // 2)
    ang = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    lat = np.linspace(-np.pi / 2, np.pi / 2, 2 * rings + 1)[1:-1]  # poles added apart
    z_lo, z_hi = centres.min(), centres.max()
    rows = []
    for phi in lat:
        z = radius * np.sin(phi) + (z_lo if phi < 0 else z_hi if phi > 0 else 0.0)
        r = radius * np.cos(phi)
        if phi == 0.0 and z_hi > z_lo:  # the capsule's two equators
            rows.append(np.c_[r * np.cos(ang), r * np.sin(ang), np.full(n, z_lo)])
            z = z_hi
        rows.append(np.c_[r * np.cos(ang), r * np.sin(ang), np.full(n, z)])
    verts = np.concatenate([*rows, [[0, 0, z_lo - radius], [0, 0, z_hi + radius]]])
    k = len(rows)
    i = np.arange(n)
    j = (i + 1) % n
    faces = []
    for r in range(k - 1):
        a, b = r * n, (r + 1) * n
        faces += [np.c_[a + i, a + j, b + j], np.c_[a + i, b + j, b + i]]
    bottom, top = k * n, k * n + 1
    faces += [np.c_[np.full(n, bottom), j, i], np.c_[np.full(n, top), (k - 1) * n + i,
                                                     (k - 1) * n + j]]  # fmt: skip
    return verts, np.concatenate(faces)
