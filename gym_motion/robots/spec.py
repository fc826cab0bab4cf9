"""`RobotSpec`: everything robot-specific the task needs, as one frozen value.

A robot is data, not code: its MJCF, joint order, motor gains, default pose, action scale and the
bodies the task refers to (root, anchor, tracked bodies, end effectors, feet). The env, the
config, the motion loader and the backends take a `RobotSpec` (backends only the ids it
resolves); `gym_motion.robots.g1.G1` is the one shipped instance. To add a robot, build another
`RobotSpec` and pass it as ``TrackingEnvCfg(robot=...)`` (see docs/architecture.md).

`RobotSpec.build_model` compiles the MJCF into the simulation model of the task: the MJCF gives
kinematics, inertias and collision geometry; solver options, armature, one position actuator
per joint, the floor, the ``"default"`` keyframe and the ``"self_contact"`` sensor come from
the spec and this module (docs/task.md sections 1-2).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from gym_motion.robots.layout import JointLayout

KEYFRAME = "default"  # root at default_root_height, identity orientation, joints at default pose
FLOOR_GEOM = "floor"
SELF_CONTACT_SENSOR = "self_contact"
# Layout of the self-contact sensor's 4 values: the number of robot-robot contacts, then the force
# of the strongest one in its contact frame, N (normal first).
SELF_CONTACT_COUNT = 0
SELF_CONTACT_NORMAL_FORCE = 1

# MuJoCo options of the task (docs/task.md section 1).
PHYSICS_DT = 0.005  # s
INTEGRATOR = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
SOLVER = mujoco.mjtSolver.mjSOL_NEWTON
CONE = mujoco.mjtCone.mjCONE_PYRAMIDAL
SOLVER_ITERATIONS = 10
LINESEARCH_ITERATIONS = 20
_REDUCE_MAXFORCE = 2  # contact sensor reduction codes: 0 none, 1 mindist, 2 maxforce, 3 netforce

_JOINT_ARRAYS = ("armature", "kp", "kd", "effort_limit", "action_scale", "default_joint_pos")


@dataclass(frozen=True, eq=False)
class RobotSpec:
    """A floating-base robot as the tracking task sees it. Frozen; compared by identity.

    Per-joint arrays are float64, read-only, shape (J,), in `joint_names` order, which is the
    order of actions, joint observations and motion-clip joint columns.

    Attributes:
        name: short name (``"g1"``), used in configs and run folders.
        mjcf_path: the MJCF file (kinematics, inertias, collision geometry).
        joint_names: (J,) actuated hinge joints, in the robot's joint order.
        body_names: every body except the world, MJCF depth-first order, root first; the bodies
            a motion clip may carry.
        root_body: the floating base (carries the model's free joint).
        anchor_body: the body the reference is re-anchored on (docs/task.md section 4).
        tracked_bodies: the bodies whose poses the rewards and observations compare; must
            contain `root_body` and `anchor_body`.
        end_effector_bodies: tracked bodies checked by the end-effector height termination.
        foot_bodies: bodies whose collision geoms are the feet (friction randomisation, and the
            foot-on-floor placement of generated motions).
        self_contact_root: the self-contact sensor counts contacts between bodies of this
            body's subtree (default: `root_body`, the whole robot).
        armature: reflected rotor inertia, kg m^2. kp: N m/rad. kd: N m s/rad.
        effort_limit: actuator force limit, N m. action_scale: rad per unit action.
        default_joint_pos: rad, the default pose (action 0 targets it).
        default_root_height: m, root height of the ``"default"`` keyframe.
        soft_limit_factor: soft joint limits are this fraction of each joint range, centred.
        imu_site: the MJCF site on `root_body` whose linear velocity the policy observes
            (``base_lin_vel``, what an IMU-based state estimator gives; `imu_position`); ""
            for the root body's origin.

    Raises:
        ValueError: arrays of the wrong length, or referenced bodies that are not in
            `body_names` / `tracked_bodies` (the message names them).
    """

    name: str
    mjcf_path: Path
    joint_names: tuple[str, ...]
    body_names: tuple[str, ...]
    root_body: str
    anchor_body: str
    tracked_bodies: tuple[str, ...]
    end_effector_bodies: tuple[str, ...]
    foot_bodies: tuple[str, ...]
    armature: np.ndarray
    kp: np.ndarray
    kd: np.ndarray
    effort_limit: np.ndarray
    action_scale: np.ndarray
    default_joint_pos: np.ndarray
    default_root_height: float
    soft_limit_factor: float = 0.9
    self_contact_root: str = field(default="")
    imu_site: str = ""

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "mjcf_path", Path(self.mjcf_path))
        for name in ("joint_names", "body_names", "tracked_bodies", "end_effector_bodies"):
            set_(self, name, tuple(str(x) for x in getattr(self, name)))
        set_(self, "foot_bodies", tuple(str(x) for x in self.foot_bodies))
        if not self.self_contact_root:
            set_(self, "self_contact_root", self.root_body)
        j = len(self.joint_names)
        for name in _JOINT_ARRAYS:
            a = np.array(getattr(self, name), dtype=np.float64)
            if a.shape != (j,):
                raise ValueError(
                    f"robot {self.name!r}: {name} has shape {a.shape}, expected ({j},)"
                )
            a.setflags(write=False)
            set_(self, name, a)
        bodies = set(self.body_names)
        refs = {
            "root_body": (self.root_body,),
            "anchor_body": (self.anchor_body,),
            "tracked_bodies": self.tracked_bodies,
            "foot_bodies": self.foot_bodies,
            "self_contact_root": (self.self_contact_root,),
        }
        for what, names in refs.items():
            unknown = [n for n in names if n not in bodies]
            if unknown:
                raise ValueError(f"robot {self.name!r}: {what} {unknown} are not in body_names")
        for what, names in {
            "root_body": (self.root_body,),
            "anchor_body": (self.anchor_body,),
            "end_effector_bodies": self.end_effector_bodies,
        }.items():
            untracked = [n for n in names if n not in self.tracked_bodies]
            if untracked:
                raise ValueError(f"robot {self.name!r}: {what} {untracked} are not tracked bodies")

    @property
    def num_joints(self) -> int:
        """J, the number of actuated joints."""
        return len(self.joint_names)

    def imu_position(self, model: mujoco.MjModel) -> np.ndarray:
        """Position (3,) float64 of `imu_site` in the `root_body` frame, m (zeros when
        `imu_site` is "").

        Raises:
            ValueError: `model` has no site `imu_site`, or the site is not on `root_body`.
        """
        if not self.imu_site:
            return np.zeros(3)
        site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, self.imu_site)
        if site < 0:
            raise ValueError(f"robot {self.name!r}: its MJCF {self.mjcf_path} has no site "
                             f"{self.imu_site!r} (imu_site)")  # fmt: skip
        body = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, model.site_bodyid[site])
        if body != self.root_body:
            raise ValueError(f"robot {self.name!r}: imu_site {self.imu_site!r} is on body "
                             f"{body!r}, expected the root body {self.root_body!r}")  # fmt: skip
        return np.array(model.site_pos[site], np.float64)

    def with_mjcf(self, path: str | os.PathLike) -> RobotSpec:
        """The same robot on another MJCF (e.g. a mesh-rich one); names are checked when the
        model is built (`build_model`)."""
        return dataclasses.replace(self, mjcf_path=Path(path))

    # ------------------------------------------------------------------ the MuJoCo model
    def build_model(self, floor: bool = True) -> mujoco.MjModel:
        """Compile `mjcf_path` into the simulation model of the task.

        The MJCF's own actuators are replaced; any MJCF with the names of `joint_names` and
        `body_names` and a free joint on `root_body` works.

        Args:
            floor: add a ground plane ``"floor"`` (z = 0, condim 3) and a light.

        Returns:
            The compiled model (nq = 7 + J, nv = 6 + J, nu = J; its qpos and qvel columns follow
            the MJCF's kinematic tree, `layout` maps them to the robot's order). Actuator ``i``
            is a position servo on ``joint_names[i]`` named like it, with ``kp[i]`` (N m/rad),
            ``kd[i]`` (N m s/rad), force range ``+/- effort_limit[i]`` (N m) and unclamped
            control (rad); joint ``i`` has ``armature[i]``. Keyframe ``"default"``: root at
            ``(0, 0, default_root_height)`` with identity orientation, joints and controls at
            `default_joint_pos`. Sensor ``"self_contact"`` (a MuJoCo contact sensor over
            contacts inside the subtree of `self_contact_root`, floor excluded), 4 values:
            the number of self contacts (`SELF_CONTACT_COUNT`), then the force of the strongest
            one in its contact frame (normal at `SELF_CONTACT_NORMAL_FORCE`, then the two
            tangents; N); all 0 without one.

        Raises:
            FileNotFoundError: `mjcf_path` does not exist.
            ValueError: the MJCF lacks joints or bodies of the spec (the message names each
                missing one and the file), or `root_body` has no free joint.
        """
        path = self.mjcf_path
        if not path.is_file():
            raise FileNotFoundError(f"{self.name} MJCF not found: {path}")
        spec = mujoco.MjSpec.from_file(str(path))
        self._check_names(spec)

        spec.option.timestep = PHYSICS_DT
        spec.option.integrator = INTEGRATOR
        spec.option.solver = SOLVER
        spec.option.cone = CONE
        spec.option.iterations = SOLVER_ITERATIONS
        spec.option.ls_iterations = LINESEARCH_ITERATIONS

        for actuator in list(spec.actuators):
            spec.delete(actuator)
        for name, armature, kp, kd, effort in zip(
            self.joint_names, self.armature, self.kp, self.kd, self.effort_limit, strict=True
        ):
            spec.joint(name).armature = armature
            actuator = spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            actuator.set_to_position(kp=kp, kv=kd)
            actuator.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
            actuator.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
            actuator.forcerange = [-effort, effort]

        if floor:
            spec.worldbody.add_geom(
                name=FLOOR_GEOM, type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0.0, 0.0, 0.05], condim=3
            )
            spec.worldbody.add_light(
                pos=[0.0, 0.0, 3.0],
                dir=[0.0, 0.0, -1.0],
                type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL,
            )

        sensor = spec.add_sensor(name=SELF_CONTACT_SENSOR, type=mujoco.mjtSensor.mjSENS_CONTACT)
        # Both sides match the same subtree, so only robot-robot contacts count. MuJoCo's
        # "netforce" reduction sums force vectors in the world frame, where the equal and
        # opposite forces of self contacts cancel; "maxforce" keeps the strongest contact.
        sensor.objtype = sensor.reftype = mujoco.mjtObj.mjOBJ_XBODY
        sensor.objname = sensor.refname = self.self_contact_root
        found_force = (1 << int(mujoco.mjtConDataField.mjCONDATA_FOUND)) | (
            1 << int(mujoco.mjtConDataField.mjCONDATA_FORCE)
        )
        sensor.intprm[:3] = [found_force, _REDUCE_MAXFORCE, 1]

        for key in list(spec.keys):
            if key.name == KEYFRAME:
                spec.delete(key)
        spec.add_key(name=KEYFRAME)

        model = spec.compile()
        layout = self.layout(model)
        key = model.key(KEYFRAME)
        root = [0.0, 0.0, self.default_root_height, 1.0, 0.0, 0.0, 0.0]
        key.qpos[:] = layout.model_qpos(np.concatenate([root, self.default_joint_pos]))
        key.ctrl[layout.actuator_ids] = self.default_joint_pos
        return model

    def _check_names(self, spec: mujoco.MjSpec) -> None:
        joints = {j.name for j in spec.joints}
        bodies = {b.name for b in spec.bodies}
        missing_joints = [n for n in self.joint_names if n not in joints]
        missing_bodies = [n for n in self.body_names if n not in bodies]
        if missing_joints or missing_bodies:
            raise ValueError(
                f"{self.mjcf_path} is not a {self.name} model ({len(self.joint_names)} joints): "
                f"missing joints {missing_joints}, missing bodies {missing_bodies}"
            )
        root = spec.body(self.root_body)
        if not any(j.type == mujoco.mjtJoint.mjJNT_FREE for j in root.joints):
            raise ValueError(f"{self.mjcf_path}: root body {self.root_body!r} has no free joint")

    # ------------------------------------------------------------------ ids in a model
    def layout(self, model: mujoco.MjModel) -> JointLayout:
        """Where `joint_names` and the root's free joint live in `model`'s qpos, qvel and ctrl
        (any kinematic-tree order): the one mapping between the robot's order and the model's.

        Raises:
            KeyError: a joint or `root_body` is missing. ValueError: no free joint on the root.
        """
        return JointLayout.of(model, self.joint_names, self.root_body)

    def free_joint_id(self, model: mujoco.MjModel) -> int:
        """Id of the free joint of `root_body` in `model`."""
        root = model.body(self.root_body).id
        return next(
            j
            for j in range(model.njnt)
            if model.jnt_bodyid[j] == root and model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE
        )

    def joint_ids(self, model: mujoco.MjModel) -> np.ndarray:
        """Joint ids of `joint_names` in `model`: (J,) int64. Raises KeyError for a missing one."""
        return np.array([model.joint(n).id for n in self.joint_names], np.int64)

    def joint_qpos_adr(self, model: mujoco.MjModel) -> np.ndarray:
        """Columns of `joint_names` in ``qpos``: (J,) int64 (`layout`'s ``qpos_adr``)."""
        return self.layout(model).qpos_adr

    def joint_dof_adr(self, model: mujoco.MjModel) -> np.ndarray:
        """Columns of `joint_names` in ``qvel``: (J,) int64 (`layout`'s ``dof_adr``)."""
        return self.layout(model).dof_adr

    def foot_geom_ids(self, model: mujoco.MjModel) -> np.ndarray:
        """The feet: collision geoms (nonzero ``contype`` or ``conaffinity``) of `foot_bodies`,
        (G,) int64, sorted. The one definition of the feet (friction randomisation, foot
        placement of generated motions)."""
        feet = body_ids(model, self.foot_bodies)
        collides = (model.geom_contype != 0) | (model.geom_conaffinity != 0)
        return np.flatnonzero(np.isin(model.geom_bodyid, feet) & collides).astype(np.int64)

    def soft_joint_limits(self, model: mujoco.MjModel) -> np.ndarray:
        """Soft joint limits: (J, 2) float64 rad, columns (lower, upper), `joint_names` order.

        Each range of `model` is shrunk about its centre to `soft_limit_factor` of its width
        (docs/task.md section 7). Raises KeyError for a joint `model` lacks.
        """
        ranges = np.array([model.joint(n).range for n in self.joint_names])
        centre = ranges.mean(axis=1)
        half = 0.5 * self.soft_limit_factor * (ranges[:, 1] - ranges[:, 0])
        return np.stack([centre - half, centre + half], axis=1)


def body_ids(model: mujoco.MjModel, names: tuple[str, ...]) -> np.ndarray:
    """Model ids of the named bodies, in the given order: (len(names),) int64.

    Raises:
        KeyError: a body name is not in ``model``.
    """
    return np.array([model.body(n).id for n in names], np.int64)
