"""Pictures of tracking envs: the robot and its reference pose as a translucent ghost.

The picture is drawn from a render-only MuJoCo model (`build_scene`): the robot's MJCF, a second
copy of the robot (names prefixed ``"ghost/"``, no collisions, one translucent colour), a
checkered floor, a sky and lights. The env's own physics model is never touched: each frame
writes the robot's and the reference's generalised positions into the scene's own MjData, runs
``mj_kinematics`` and renders offscreen with ``mujoco.Renderer`` from a camera that follows the
robot's anchor body.

Poses come from the env's `MDPState` (`state_qpos`): the robot's root pose and joint angles as
the backend last copied them, and the reference at the current motion frame (in the clip's
world frame, where reference state initialisation puts the robot, so the ghost stands where the
robot should be). Every backend fills that state, so rendering works for "mujoco" and "mjwarp".

Offscreen rendering needs an OpenGL context, chosen by MuJoCo from the ``MUJOCO_GL``
environment variable when ``mujoco`` is first imported: on a machine without a display set
``MUJOCO_GL=egl`` (software EGL works without a GPU), or ``osmesa``. ``gym-motion render`` and
``train`` choose the first that loads when there is no display (`gym_motion.gl`).

Example:
    >>> import gymnasium as gym, gym_motion  # doctest: +SKIP
    >>> env = gym.make("GymMotion/G1-Tracking-Eval-v0", render_mode="rgb_array")
    >>> env.reset(seed=0)
    >>> frame = env.render()  # (240, 320, 3) uint8: the robot (orange) and its ghost (blue)
"""

from __future__ import annotations

import dataclasses
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from gym_motion.backends.base import BodyState
from gym_motion.managers.state import MDPState
from gym_motion.robots.spec import RobotSpec

__all__ = [
    "GHOST_PREFIX",
    "RENDER_MODES",
    "RenderCfg",
    "TrackingRenderer",
    "build_scene",
    "check_render_mode",
    "qpos_columns",
    "dress",
    "mesh_source",
    "state_qpos",
]

RENDER_MODES = ("rgb_array",)
"""The render modes the envs implement: ``"rgb_array"`` returns (H, W, 3) uint8 frames."""

GHOST_PREFIX = "ghost/"
"""Prefix of the names of the reference copy of the robot in the scene model."""


@dataclass(frozen=True)
class RenderCfg:
    """How frames look: size, camera, colours.

    Attributes:
        width, height: frame size, pixels.
        distance: camera to the robot's anchor body, m. azimuth, elevation: camera direction,
            degrees (MuJoCo's free camera: azimuth 90 looks along +y, elevation < 0 from above).
        robot_rgba: colour of every robot geom (RGBA in [0, 1]); None keeps the MJCF's colours.
        ghost_rgba: colour of the reference ghost; alpha < 1 makes it translucent.
        ghost: draw the reference ghost.
        ghost_offset: added to the ghost's root position, m, world frame; (0, 0, 0) draws the
            ghost where the reference is (over the robot), e.g. (0, 1, 0) beside it.
        shadows: cast shadows (about 2.5x the cost of a frame in software rendering).
        multisamples: anti-aliasing samples per pixel (0: none; 4 about doubles the cost).
        meshes: how the robot is drawn: "auto" (its visual meshes where
            `gym_motion.robots.meshes.visual_mjcf` finds them: the shipped set by default, else
            its collision primitives), "off" (primitives), "menagerie" (the full MuJoCo
            Menagerie set, `gym_motion.robots.meshes.menagerie_mjcf`), or the path of an MJCF
            of the robot whose bodies carry visual mesh geoms (same body names). The physics
            model is never changed.
    """

    width: int = 320
    height: int = 240
    distance: float = 3.0
    azimuth: float = 135.0
    elevation: float = -15.0
    robot_rgba: tuple[float, float, float, float] | None = (0.9, 0.5, 0.2, 1.0)
    ghost_rgba: tuple[float, float, float, float] = (0.25, 0.6, 1.0, 0.35)
    ghost: bool = True
    ghost_offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    shadows: bool = False
    multisamples: int = 0
    meshes: str = "auto"

    def __post_init__(self) -> None:
        for name in ("width", "height"):
            value = getattr(self, name)
            if not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"RenderCfg.{name} must be a positive int, got {value!r}")
        if not (math.isfinite(self.distance) and self.distance > 0.0):
            raise ValueError(f"RenderCfg.distance must be a finite number > 0, got {self.distance}")
        for name in ("robot_rgba", "ghost_rgba"):
            rgba = getattr(self, name)
            if rgba is None and name == "robot_rgba":
                continue
            rgba = np.asarray(rgba, np.float64)
            if rgba.shape != (4,) or not np.all((rgba >= 0.0) & (rgba <= 1.0)):
                raise ValueError(f"RenderCfg.{name} must be 4 values in [0, 1], got {rgba}")
        if np.asarray(self.ghost_offset).shape != (3,):
            raise ValueError(f"RenderCfg.ghost_offset must be 3 values, got {self.ghost_offset}")
        if self.multisamples < 0:
            raise ValueError(f"RenderCfg.multisamples must be >= 0, got {self.multisamples}")
        if not isinstance(self.meshes, str | os.PathLike) or not str(self.meshes):
            raise ValueError(
                'RenderCfg.meshes must be "auto", "off", "menagerie" or an MJCF path, got '
                f"{self.meshes!r}"
            )

    def updated(self, **changes) -> RenderCfg:
        """A copy with `changes` (field names of this class; ValueError for others)."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ValueError(f"unknown RenderCfg fields {sorted(unknown)}")
        return dataclasses.replace(self, **changes)


def check_render_mode(render_mode: str | None) -> str | None:
    """`render_mode` if the envs implement it (`RENDER_MODES`) or None.

    Raises:
        ValueError: any other value, naming the supported modes.
    """
    if render_mode is not None and render_mode not in RENDER_MODES:
        raise ValueError(
            f"render_mode must be one of {list(RENDER_MODES)} or None, got {render_mode!r}"
        )
    return render_mode


def state_qpos(body_state: BodyState, root: int, env_ids: np.ndarray) -> np.ndarray:
    """Generalised positions of a floating-base robot from its body state.

    Args:
        body_state: robot or reference state of N envs (`MDPState.robot` or `.ref`).
        root: index of the root body (the one with the free joint) among the state's bodies.
        env_ids: (M,) int rows.

    Returns:
        (M, 7 + J) float64: root position (m, world frame), root quaternion (wxyz), joint
        angles (rad, robot joint order); the renderer places each value in its scene's qpos
        column by name, whatever the MJCF's tree order.
    """
    ids = np.asarray(env_ids, np.int64)
    return np.concatenate(
        [
            body_state.pos_w[ids, root],
            body_state.quat_w[ids, root],
            body_state.joint_pos[ids],
        ],
        axis=1,
    ).astype(np.float64)


def build_scene(robot: RobotSpec, cfg: RenderCfg) -> mujoco.MjModel:
    """Compile the render-only model: the robot, its ghost copy, floor, sky and lights.

    The robot is drawn with its visual meshes where ``cfg.meshes`` finds them (`mesh_source`,
    `dress`), else with its own geoms (the G1's collision primitives).

    The robot keeps its MJCF names; the ghost's names are prefixed with `GHOST_PREFIX`, its
    geoms collide with nothing and have colour ``cfg.ghost_rgba`` (materials removed). The model
    has no keyframes and its offscreen buffer is ``cfg.width`` x ``cfg.height``. It is for
    drawing only: positions are set directly and never stepped.

    Raises:
        FileNotFoundError: the robot's MJCF, or the MJCF ``cfg.meshes`` names, does not exist.
        ValueError: that MJCF has no mesh geom on the robot's bodies.
    """
    path = robot.mjcf_path
    if not path.is_file():
        raise FileNotFoundError(f"{robot.name} MJCF not found: {path}")
    visual = mesh_source(robot, cfg.meshes)
    spec = mujoco.MjSpec.from_file(str(path))
    for key in list(spec.keys):
        spec.delete(key)
    if visual is not None:
        try:
            dress(spec, visual)
        except ValueError as exc:  # raised before `spec` is changed
            if str(cfg.meshes) != "auto":
                raise
            warnings.warn(f"drawing {robot.name}'s collision primitives: {exc}", stacklevel=2)
            visual = None
    if cfg.robot_rgba is not None:
        _paint(spec.geoms, cfg.robot_rgba)
    if cfg.ghost:
        ghost = mujoco.MjSpec.from_file(str(path))
        if visual is not None:
            dress(ghost, visual)
        _paint(ghost.geoms, cfg.ghost_rgba)
        for geom in ghost.geoms:
            geom.contype = geom.conaffinity = 0
        spec.worldbody.add_frame().attach_body(ghost.body(robot.root_body), GHOST_PREFIX, "")

    vis = spec.visual
    vis.global_.offwidth = int(cfg.width)
    vis.global_.offheight = int(cfg.height)
    vis.quality.offsamples = int(cfg.multisamples)
    vis.headlight.ambient = [0.35, 0.35, 0.35]
    vis.headlight.diffuse = [0.55, 0.55, 0.55]
    vis.headlight.specular = [0.1, 0.1, 0.1]
    spec.add_texture(
        name="render_sky", type=mujoco.mjtTexture.mjTEXTURE_SKYBOX,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
        rgb1=[0.62, 0.65, 0.68], rgb2=[0.12, 0.13, 0.14], width=64, height=64,
    )  # fmt: skip
    spec.add_texture(
        name="render_floor", type=mujoco.mjtTexture.mjTEXTURE_2D,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
        rgb1=[0.42, 0.44, 0.46], rgb2=[0.32, 0.34, 0.36], width=64, height=64,
    )  # fmt: skip
    # 1 m checker squares: distances on the floor can be read off the picture
    spec.add_material(
        name="render_floor", textures=["", "render_floor"], texrepeat=[0.5, 0.5], texuniform=True
    )
    spec.worldbody.add_geom(
        name="render_floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0.0, 0.0, 0.05],
        material="render_floor", contype=0, conaffinity=0,
    )  # fmt: skip
    spec.worldbody.add_light(
        name="render_sun", pos=[0.0, 0.0, 4.0], dir=[0.0, 0.0, -1.0], diffuse=[0.5, 0.5, 0.5],
        type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL, castshadow=bool(cfg.shadows),
    )  # fmt: skip
    return spec.compile()


def mesh_source(robot: RobotSpec, meshes: str | os.PathLike) -> Path | None:
    """The MJCF whose visual meshes dress `robot` for `RenderCfg.meshes`, or None
    (primitives).

    Raises:
        FileNotFoundError: `meshes` names an MJCF file that does not exist.
    """
    from gym_motion.robots.meshes import MENAGERIE, menagerie_mjcf, visual_mjcf

    if str(meshes) == "off":
        return None
    if str(meshes) == "auto":
        return visual_mjcf(robot)
    if str(meshes) == MENAGERIE:
        return menagerie_mjcf(robot)
    path = Path(meshes)
    if not path.is_file():
        raise FileNotFoundError(f"RenderCfg.meshes: no MJCF at {path}")
    return path


def dress(spec: mujoco.MjSpec, visual_mjcf: str | os.PathLike) -> int:
    """Replace the geoms of `spec`'s bodies by the visual mesh geoms of the same bodies in
    `visual_mjcf` (an MJCF of the same robot; its mesh files are read from its meshdir; bodies
    it has no mesh for keep their geoms). For
    picture-only models: the new geoms collide with nothing, have no mass, and keep the
    source's pose in their body and its material's colour.

    Returns:
        The number of mesh geoms added.

    Raises:
        ValueError: `visual_mjcf` has no mesh geom on any body of `spec`.
    """
    source = mujoco.MjSpec.from_file(str(visual_mjcf))
    meshdir = Path(source.modelfiledir or Path(visual_mjcf).parent) / (source.meshdir or "")
    bodies = {b.name: b for b in spec.bodies if b.name}
    colours = {m.name: list(m.rgba) for m in source.materials}
    geoms = [g for g in source.geoms if g.type == mujoco.mjtGeom.mjGEOM_MESH
             and g.parent.name in bodies]  # fmt: skip
    if not geoms:
        raise ValueError(f"{visual_mjcf} has no mesh geom on the robot's bodies")
    dressed = {g.parent.name for g in geoms} - {"world"}
    for geom in list(spec.geoms):  # bodies without a mesh in the source keep their geoms
        if geom.parent.name in dressed:
            spec.delete(geom)
    added: dict[str, str] = {}
    for mesh in source.meshes:
        if mesh.name in {g.meshname for g in geoms} and mesh.name not in added:
            name = f"visual/{mesh.name}"
            spec.add_mesh(name=name, file=str(meshdir / mesh.file), scale=list(mesh.scale))
            added[mesh.name] = name
    for g in geoms:
        bodies[g.parent.name].add_geom(
            type=mujoco.mjtGeom.mjGEOM_MESH, meshname=added[g.meshname], pos=list(g.pos),
            quat=list(g.quat), rgba=colours.get(g.material, list(g.rgba)), contype=0,
            conaffinity=0, group=2, density=0.0,
        )  # fmt: skip
    return len(geoms)


def _paint(geoms, rgba) -> None:
    for geom in geoms:
        geom.material = ""
        geom.rgba = list(rgba)


class TrackingRenderer:
    """Offscreen frames of one robot and its reference ghost, from a camera on the anchor body.

    Args:
        robot: the robot (its MJCF, joint names, root and anchor bodies).
        cfg: size, camera and colours (`RenderCfg`).

    Attributes:
        model: the render-only scene (`build_scene`). data: its MjData.
        camera: the ``mujoco.MjvCamera`` (free camera; `render` points it at the anchor).

    Raises:
        FileNotFoundError: the robot's MJCF does not exist.
        RuntimeError: no OpenGL context could be made (the message says how to choose one).

    Example:
        >>> from gym_motion.robots.g1 import G1  # doctest: +SKIP
        >>> r = TrackingRenderer(G1, RenderCfg(width=160, height=120))
        >>> pose = np.r_[0, 0, 0.8, 1, 0, 0, 0, G1.default_joint_pos]
        >>> r.render(pose, pose).shape
        (120, 160, 3)
    """

    def __init__(self, robot: RobotSpec, cfg: RenderCfg | None = None):
        self.robot = robot
        self.cfg = cfg = cfg or RenderCfg()
        self.model = m = build_scene(robot, cfg)
        self.data = mujoco.MjData(m)
        self._robot_adr = qpos_columns(m, robot, "")
        self._ghost_adr = qpos_columns(m, robot, GHOST_PREFIX) if cfg.ghost else None
        self._ghost_offset = np.asarray(cfg.ghost_offset, np.float64)
        self._anchor = m.body(robot.anchor_body).id
        self.camera = cam = mujoco.MjvCamera()
        cam.type = mujoco.mjtCamera.mjCAMERA_FREE
        cam.distance, cam.azimuth, cam.elevation = cfg.distance, cfg.azimuth, cfg.elevation
        self._option = mujoco.MjvOption()
        self._option.geomgroup[:] = 1  # every geom group: the G1's capsules are in group 3
        try:
            self._renderer = mujoco.Renderer(m, cfg.height, cfg.width)
        except Exception as exc:  # noqa: BLE001 - MuJoCo/PyOpenGL raise several kinds
            from gym_motion.gl import install_hint

            raise RuntimeError(
                "offscreen rendering needs an OpenGL context and none could be made "
                f"(MUJOCO_GL={os.environ.get('MUJOCO_GL')!r}): without a display, "
                f"{install_hint()}, before mujoco is first imported. Cause: {exc}"
            ) from exc
        self._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = bool(cfg.shadows)

    def render(self, robot_qpos: np.ndarray, ghost_qpos: np.ndarray | None = None) -> np.ndarray:
        """One frame of the robot at `robot_qpos` and the ghost at `ghost_qpos`.

        Args:
            robot_qpos, ghost_qpos: (7 + J,) floats, `state_qpos` layout (root position m,
                root quaternion wxyz, joint angles rad in robot joint order). `ghost_qpos` is
                required when the scene has a ghost (``cfg.ghost``) and ignored otherwise.

        Returns:
            (H, W, 3) uint8 RGB frame, a new array.

        Raises:
            ValueError: a pose of the wrong shape, or no `ghost_qpos` for a scene with a ghost.
            RuntimeError: the renderer was closed.
        """
        if self._renderer is None:
            raise RuntimeError("TrackingRenderer is closed")
        d = self.data
        d.qpos[self._robot_adr] = self._checked(robot_qpos, "robot_qpos")
        if self._ghost_adr is not None:
            if ghost_qpos is None:
                raise ValueError("this scene draws the reference ghost: pass ghost_qpos")
            ghost = self._checked(ghost_qpos, "ghost_qpos").copy()
            ghost[:3] += self._ghost_offset
            d.qpos[self._ghost_adr] = ghost
        mujoco.mj_kinematics(self.model, d)
        self.camera.lookat[:] = d.xpos[self._anchor]
        self._renderer.update_scene(d, self.camera, self._option)
        return self._renderer.render()

    def render_state(self, state: MDPState, env_id: int) -> np.ndarray:
        """`render` of env `env_id`: the robot and the reference at the current motion frame,
        read from the env's `MDPState` (as `state_qpos` writes them); (H, W, 3) uint8."""
        ids = np.array([env_id])
        robot = state_qpos(state.robot, state.root, ids)[0]
        ghost = state_qpos(state.ref, state.root, ids)[0] if self.cfg.ghost else None
        return self.render(robot, ghost)

    def _checked(self, qpos: np.ndarray, name: str) -> np.ndarray:
        qpos = np.asarray(qpos, np.float64)
        if qpos.shape != self._robot_adr.shape:
            raise ValueError(f"{name} must have shape {self._robot_adr.shape}, got {qpos.shape}")
        return qpos

    @property
    def closed(self) -> bool:
        """Whether `close` freed the OpenGL context (nothing can be drawn then)."""
        return getattr(self, "_renderer", None) is None

    def close(self) -> None:
        """Free the OpenGL context (idempotent)."""
        if not self.closed:
            self._renderer.close()
            self._renderer = None


class EnvFrames(Sequence):
    """The frames of N envs posed as they were at one moment: a sequence of N (H, W, 3) uint8
    arrays, each drawn on first read (then kept), as `TrackingVecEnv.render` returns them.

    gymnasium's vector wrappers take one frame per env (``RecordVideo`` checks the length and,
    with ``record_first_only``, reads only the first), so N envs cost only the frames read.

    Args:
        renderer: the `TrackingRenderer` that draws them (the env's; closing the env frees it,
            after which unread frames raise RuntimeError).
        robot_qpos, ghost_qpos: (N, 7 + J) float64 poses (`state_qpos`); ghost None without
            a ghost.
    """

    def __init__(self, renderer: TrackingRenderer, robot_qpos: np.ndarray,
                 ghost_qpos: np.ndarray | None):  # fmt: skip
        self._renderer, self._robot, self._ghost = renderer, robot_qpos, ghost_qpos
        self._frames: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self._robot)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = range(len(self))[index]  # IndexError out of range; negative indices count back
        if i not in self._frames:
            if self._renderer.closed:
                raise RuntimeError("the env that rendered these frames is closed")
            ghost = None if self._ghost is None else self._ghost[i]
            self._frames[i] = self._renderer.render(self._robot[i], ghost)
        return self._frames[i]


def qpos_columns(model: mujoco.MjModel, robot: RobotSpec, prefix: str) -> np.ndarray:
    """Columns of the scene's qpos for the robot copy named with `prefix`: (7 + J,) int64,
    the root's free joint then `robot.joint_names`."""
    root = model.body(prefix + robot.root_body)
    free = model.jnt_qposadr[root.jntadr[0]]
    joints = [model.joint(prefix + name).qposadr[0] for name in robot.joint_names]
    return np.concatenate([np.arange(free, free + 7), joints]).astype(np.int64)
