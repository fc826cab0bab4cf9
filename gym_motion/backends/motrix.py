"""MotrixSim on CPU threads: `MotrixBackend`, N envs of one model in a batched ``SceneData``.

The compiled ``mujoco.MjModel`` the env builds is written back to MJCF (`mjcf_from_model`:
bodies, inertials, joints with armature, collision geoms, contact excludes, position actuators
with their gains and force limits) and loaded by MotrixSim, so both engines read the same numbers.
Elements are named by their MuJoCo ids (``b<body>``, ``j<joint>``, ``g<geom>``, ``a<actuator>``),
never by robot names. MotrixSim is float32 (``motrixsim.real_dtype()``); state is exchanged in
the env's MuJoCo conventions (qpos root quaternion wxyz, qvel root angular velocity in the body
frame; the engine stores xyzw).

One control step = `decimation` calls of ``SceneModel.step`` (batched over N on MotrixSim's
Rayon pool). After each substep the backend reads the self-contact sensors and checks every row
for a non-finite or diverged state: MotrixSim aborts the whole batched step (a Rust panic) when
one world holds a NaN, so such a row is flagged `nonfinite` and parked at the model's default
state before the next substep. Body state is computed once after the last substep (``forward_
kinematic``: MotrixSim's link positions otherwise lag one substep) and read in one compiled query.

What MotrixSim 0.10.1 cannot do here, and what the backend does instead:

* Self contact: a contact sensor with one subtree on both sides (MuJoCo's ``self_contact``
  sensor, ``subtree1 == subtree2``) panics on the first step ("OrderedPair cannot have the same
  indices"). The backend adds one ``body1``/``body2`` contact sensor per pair of bodies of that
  subtree that can collide (141 for the G1) and counts a substep when any pair's normal force
  exceeds the threshold.
* Solver: MotrixSim has its own contact and actuator solver (float32; no Newton/implicitfast
  choice), so trajectories agree with MuJoCo's only approximately (tests/backends/test_motrix_
  backend.py says how far).
* Thread pool: process-wide and sized once (``init_thread_pool`` before any model is loaded); a
  second backend with another thread budget shares the first one's pool (a warning says so).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import mujoco
import numpy as np

from gym_motion.backends.base import BodyState
from gym_motion.backends.binding import (
    SELF_CONTACT_SENSOR,
    bind_ids,
    check_backend_args,
    check_body_state,
    check_field_values,
    check_model_field,
    check_state_rows,
    resolve_env_ids,
    root_velocity_kicks,
)
from gym_motion.backends.threads import apply_numba_threads, resolve_thread_budget

try:
    import motrixsim
    from motrixsim import query as mxq
    from motrixsim import write as mxw
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "the 'motrix' backend needs MotrixSim: pip install 'gym-motion[motrix]' "
        f"(motrixsim==0.10.1) ({err})"
    ) from err

__all__ = ["MotrixBackend", "mjcf_from_model", "self_contact_pairs"]

QVEL_BOUND = 1e4  # |qvel| beyond this (m/s or rad/s) counts as a blow-up
_GEOM_TYPES = {0: "plane", 2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box"}
_GEOM_SIZES = {"sphere": 1, "capsule": 2, "cylinder": 2}  # size values MJCF takes per type
_FREE, _HINGE, _SLIDE = 0, 3, 2
_POOL: list[tuple[int, tuple[int, ...] | None]] = []  # the process-wide pool, once started


def _num(values) -> str:
    """Space-separated shortest round-trip float64 text of `values`."""
    return " ".join(repr(float(v)) for v in np.atleast_1d(values))


def _unsupported(model: mujoco.MjModel) -> list[str]:
    """Model features `mjcf_from_model` does not write (it refuses such models)."""
    bad = [f"{n} {k}" for n, k in (
        (model.ntendon, "tendons"), (model.neq, "equality constraints"), (model.npair, "pairs"),
        (model.nflex, "flexes"), (model.nmesh, "meshes"), (model.nhfield, "height fields"),
    ) if n]  # fmt: skip
    types = set(np.unique(model.geom_type).tolist()) - set(_GEOM_TYPES)
    if types:
        bad.append(f"geom types {sorted(types)}")
    if np.any(model.jnt_type == 1):
        bad.append("ball joints")
    kinds = model.actuator_trntype != mujoco.mjtTrn.mjTRN_JOINT
    position = (model.actuator_gaintype == 0) & (model.actuator_biastype == 1)
    if np.any(kinds | ~position) or np.any(model.actuator_dyntype != 0):
        bad.append("actuators other than joint position servos")
    return bad


def self_contact_pairs(model: mujoco.MjModel, root: int) -> list[tuple[int, int]]:
    """Body id pairs (a < b) of the subtree of body `root` whose geoms can touch: some geom pair
    passes the contype/conaffinity test, and the bodies are neither parent and child (MuJoCo's
    parent filter) nor excluded by a ``<contact><exclude>``."""
    sub = np.zeros(model.nbody, bool)
    for b in range(model.nbody):
        p = b
        while p != root and p != 0:
            p = model.body_parentid[p]
        sub[b] = p == root
    sub[0] = root == 0
    excluded = {(int(s) >> 16, int(s) & 0xFFFF) for s in model.exclude_signature}
    geoms = {b: np.flatnonzero(model.geom_bodyid == b) for b in np.flatnonzero(sub)}
    ct, ca = model.geom_contype, model.geom_conaffinity
    pairs = []
    bodies = sorted(b for b, g in geoms.items() if g.size)
    for i, a in enumerate(bodies):
        for b in bodies[i + 1 :]:
            if model.body_parentid[b] == a or model.body_parentid[a] == b:
                continue
            if (a, b) in excluded or (b, a) in excluded:
                continue
            ga, gb = geoms[a][:, None], geoms[b][None, :]
            if np.any((ct[ga] & ca[gb]) | (ct[gb] & ca[ga])):
                pairs.append((int(a), int(b)))
    return pairs


def mjcf_from_model(model: mujoco.MjModel, contact_pairs: Sequence[tuple[int, int]] = ()) -> str:
    """MJCF text of a compiled model, for MotrixSim: the same body tree, inertials, joints,
    collision geoms (visual-only geoms, contype = conaffinity = 0, are left out), contact
    excludes and joint position actuators (model order; kp, kv, force range); timestep and
    gravity. Elements are named by id: body ``b<i>``, joint ``j<i>``, geom ``g<i>``, actuator
    ``a<i>``; a ``found force`` contact sensor ``sc<k>`` per body pair of `contact_pairs`.

    Raises:
        ValueError: the model uses a feature not written here (the message lists them).
    """
    bad = _unsupported(model)
    if bad:
        raise ValueError(f"the motrix backend cannot build this model: it has {', '.join(bad)}")
    m = model
    out = [
        '<mujoco model="gym_motion">',
        '<compiler angle="radian" autolimits="true"/>',
        f'<option timestep="{_num(m.opt.timestep)}" gravity="{_num(m.opt.gravity)}" '
        f'iterations="{int(m.opt.iterations)}"/>',
        "<worldbody>",
    ]
    children: dict[int, list[int]] = {}
    for b in range(1, m.nbody):
        children.setdefault(int(m.body_parentid[b]), []).append(b)

    def geoms(b: int) -> None:
        for g in np.flatnonzero(m.geom_bodyid == b):
            if m.geom_contype[g] == 0 and m.geom_conaffinity[g] == 0:
                continue
            kind = _GEOM_TYPES[int(m.geom_type[g])]
            size = m.geom_size[g][: _GEOM_SIZES.get(kind, 3)]
            out.append(
                f'<geom name="g{g}" type="{kind}" size="{_num(size)}" pos="{_num(m.geom_pos[g])}" '
                f'quat="{_num(m.geom_quat[g])}" contype="{m.geom_contype[g]}" '
                f'conaffinity="{m.geom_conaffinity[g]}" condim="{m.geom_condim[g]}" '
                f'priority="{m.geom_priority[g]}" friction="{_num(m.geom_friction[g])}" '
                f'solref="{_num(m.geom_solref[g])}" solimp="{_num(m.geom_solimp[g])}" '
                f'margin="{_num(m.geom_margin[g])}" gap="{_num(m.geom_gap[g])}"/>'
            )

    def body(b: int) -> None:
        out.append(f'<body name="b{b}" pos="{_num(m.body_pos[b])}" quat="{_num(m.body_quat[b])}">')
        out.append(
            f'<inertial pos="{_num(m.body_ipos[b])}" quat="{_num(m.body_iquat[b])}" '
            f'mass="{_num(m.body_mass[b])}" diaginertia="{_num(m.body_inertia[b])}"/>'
        )
        for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]):
            if m.jnt_type[j] == _FREE:
                out.append(f'<freejoint name="j{j}"/>')
                continue
            d = m.jnt_dofadr[j]
            limits = f' range="{_num(m.jnt_range[j])}"' if m.jnt_limited[j] else ""
            kind = "hinge" if m.jnt_type[j] == _HINGE else "slide"
            out.append(
                f'<joint name="j{j}" type="{kind}" pos="{_num(m.jnt_pos[j])}" '
                f'axis="{_num(m.jnt_axis[j])}"{limits} armature="{_num(m.dof_armature[d])}" '
                f'damping="{_num(m.dof_damping[d])}" '
                f'frictionloss="{_num(m.dof_frictionloss[d])}"/>'
            )
        geoms(b)
        for c in children.get(b, []):
            body(c)
        out.append("</body>")

    geoms(0)
    for c in children.get(0, []):
        body(c)
    out.append("</worldbody>")
    if m.nexclude:
        out.append("<contact>")
        for s in m.exclude_signature:
            out.append(f'<exclude body1="b{int(s) >> 16}" body2="b{int(s) & 0xFFFF}"/>')
        out.append("</contact>")
    out.append("<actuator>")
    for a in range(m.nu):
        limits = ""
        if m.actuator_forcelimited[a]:
            limits = f' forcerange="{_num(m.actuator_forcerange[a])}"'
        kp, kv = _num(m.actuator_gainprm[a, 0]), _num(-m.actuator_biasprm[a, 2])
        out.append(
            f'<position name="a{a}" joint="j{m.actuator_trnid[a, 0]}" kp="{kp}" kv="{kv}"{limits}/>'
        )
    out.append("</actuator>")
    if contact_pairs:
        out.append("<sensor>")
        for k, (a, b) in enumerate(contact_pairs):
            out.append(
                f'<contact name="sc{k}" body1="b{a}" body2="b{b}" data="found force" '
                'reduce="maxforce" num="1"/>'
            )
        out.append("</sensor>")
    out.append("</mujoco>")
    return "\n".join(out) + "\n"


def _start_pool(threads: int, cpus: tuple[int, ...] | None) -> None:
    """Start MotrixSim's process-wide pool once; warn when a later budget differs."""
    if _POOL:
        if _POOL[0] != (threads, cpus):
            warnings.warn(
                f"MotrixSim's thread pool is process-wide and already runs {_POOL[0][0]} "
                f"threads (cpus {_POOL[0][1]}); this backend shares it instead of "
                f"{threads} threads (cpus {cpus})",
                RuntimeWarning,
                stacklevel=3,
            )
        return
    try:
        motrixsim.init_thread_pool(num_threads=threads, core_ids=None if cpus is None else cpus)
    except RuntimeError as err:  # started by other MotrixSim use in this process
        warnings.warn(
            f"MotrixSim's thread pool was already started outside gym_motion ({err}); the "
            f"backend's budget of {threads} threads is not applied",
            RuntimeWarning,
            stacklevel=3,
        )
    _POOL.append((threads, cpus))


def _quat_rotate(quat: np.ndarray, vec: np.ndarray, inverse: bool = False) -> np.ndarray:
    """Rotate vectors (M, 3) by quaternions (M, 4) wxyz (normalised here), or by their inverse;
    float64."""
    q = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    w, r = q[:, :1], (-q[:, 1:] if inverse else q[:, 1:])
    t = 2.0 * np.cross(r, vec)
    return vec + w * t + np.cross(r, t)


class MotrixBackend:
    """N envs of one model stepped by MotrixSim (float32) on its CPU thread pool.

    Args:
        model: the compiled robot model (a robot module's ``load_model()``): hinge/slide joints
            under at most one free joint, primitive geoms, one joint position actuator per bound
            joint, and (unless ``self_contact_threshold`` is None) a contact sensor named
            ``"self_contact"`` whose first subtree (``objid``) scopes self contacts. Copied.
        num_envs: N.
        body_ids: (B,) int body ids whose state `copy_body_state_w` fills, in that order.
        joint_ids: (J,) int hinge/slide joint ids of `BodyState.joint_pos` and of `step`'s
            targets, in that order; J == model.nu.
        decimation: physics substeps per `step`.
        num_threads: MotrixSim pool threads (None: every CPU of the block); the pool is
            process-wide and sized by the first backend built in a process.
        cpu_ids: pin the pool's workers to these CPUs (``init_thread_pool(core_ids=...)``).
        self_contact_threshold: N; a substep counts as self-contact when some body pair's
            contact normal force exceeds it. None disables counting.

    Raises:
        TypeError: `model` is not a ``mujoco.MjModel``.
        ValueError: num_envs or decimation < 1; bad ids (see `gym_motion.backends.binding.
            bind_ids`); a model feature MotrixSim is not given (see `mjcf_from_model`); no
            ``"self_contact"`` contact sensor while counting is on.

    Attributes (beyond `SimBackend`'s):
        model: the backend's copy of the model (nominal values). scene: the ``motrixsim.
        SceneModel``; data: its batched ``SceneData`` (N,). contact_pairs: body id pairs of
        the self-contact sensors. num_threads, thread_budget: the requested pool.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        num_envs: int,
        body_ids: np.ndarray,
        joint_ids: np.ndarray,
        decimation: int = 4,
        num_threads: int | None = None,
        cpu_ids: Sequence[int] | None = None,
        self_contact_threshold: float | None = 10.0,
    ) -> None:
        check_backend_args(model, num_envs, decimation)
        self.model = model = model.__copy__()
        self.num_envs = n = int(num_envs)
        self.decimation = int(decimation)
        self.physics_dt = float(model.opt.timestep)
        self.nq, self.nv, self.nu = model.nq, model.nv, model.nu
        self._bound = bound = bind_ids(model, body_ids, joint_ids)
        self.body_ids, self.joint_ids = bound.body_ids, bound.joint_ids

        self.self_contact_threshold = self_contact_threshold
        self.contact_pairs: list[tuple[int, int]] = []
        if self_contact_threshold is not None:
            sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, SELF_CONTACT_SENSOR)
            if sid < 0 or model.sensor_type[sid] != mujoco.mjtSensor.mjSENS_CONTACT:
                raise ValueError(
                    f"the model has no contact sensor named {SELF_CONTACT_SENSOR!r} (its first "
                    "subtree scopes self contacts); pass self_contact_threshold=None to disable "
                    "self-contact counting"
                )
            self.contact_pairs = self_contact_pairs(model, int(model.sensor_objid[sid]))

        self.thread_budget = budget = resolve_thread_budget(num_threads, cpu_ids)
        self.num_threads = budget.physics_threads
        apply_numba_threads(budget)
        _start_pool(budget.physics_threads, budget.cpus if budget.pinned else None)

        self.scene = sm = motrixsim.load_mjcf_str(mjcf_from_model(model, self.contact_pairs))
        self.data = motrixsim.SceneData(sm, batch=[n])
        self._dtype = np.dtype(motrixsim.real_dtype())
        if sm.num_dof_pos != model.nq or sm.num_dof_vel != model.nv:
            raise ValueError(
                f"MotrixSim built {sm.num_dof_pos} positions / {sm.num_dof_vel} velocities from "
                f"a model with nq={model.nq}, nv={model.nv}"
            )
        hinges = np.flatnonzero(model.jnt_type != _FREE)
        got = [sm.joint_dof_pos_indices[sm.get_joint_index(f"j{j}")] for j in hinges]
        if not np.array_equal(got, model.jnt_qposadr[hinges]):  # same layout as MuJoCo's qpos
            raise ValueError("MotrixSim ordered the joints' positions unlike MuJoCo")
        free = np.flatnonzero(model.jnt_type == _FREE)
        self._quat_col = int(model.jnt_qposadr[free[0]]) + 3 if free.size == 1 else -1
        self._act_ids = bound.actuator_ids  # ctrl column of each bound joint
        self._sensor_names = [f"sc{k}" for k in range(len(self.contact_pairs))]

        # compiled reads and writes (MotrixSim names by id: see mjcf_from_model)
        links = [f"b{b}" for b in self.body_ids]
        joints = [f"j{j}" for j in self.joint_ids]
        if np.any(self.body_ids == 0):
            raise ValueError("body_ids must not include the world body (id 0)")
        self._query = sm.compile_query({
            "pos": mxq.LinkPosition(links), "quat": mxq.LinkRotation(links),
            "lin": mxq.LinkLinearVelocity(links), "ang": mxq.LinkAngularVelocity(links),
            "jpos": mxq.JointPosition(joints), "jvel": mxq.JointVelocity(joints),
        }).allocate(self.data)  # fmt: skip
        self._root = f"b{int(model.jnt_bodyid[free[0]])}" if free.size == 1 else None
        all_joints = [f"j{j}" for j in hinges]
        sources = {"jpos": mxw.BodyJointPosition(all_joints)}
        sources["jvel"] = mxw.BodyJointVelocity(all_joints)
        if self._root is not None:
            sources |= {
                "pos": mxw.BodyPosition([self._root]), "quat": mxw.BodyRotation([self._root]),
                "lin": mxw.BodyLinearVelocity([self._root]),
                "ang": mxw.BodyAngularVelocity([self._root]),
            }  # fmt: skip
            kick = {"lin": mxw.BodyLinearVelocity([self._root])}
            kick["ang"] = mxw.BodyAngularVelocity([self._root])
            self._kick = sm.compile_write(kick, forward_kinematic=True).allocate(self.data)
        # reset each written world (warm start, actuator state), keep per-env model fields
        self._write = sm.compile_write(
            sources, reset=True, reset_overrides=False, forward_kinematic=True
        ).allocate(self.data)
        self._hinge_qadr = model.jnt_qposadr[hinges]
        self._hinge_dadr = model.jnt_dofadr[hinges]
        self._field_writers: dict[tuple, object] = {}
        self._fields: dict[str, np.ndarray] = {}  # field -> (N, count, ...) per-env values
        self._checked_out: BodyState | None = None  # the last `out` copy_body_state_w checked

        key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "default")
        self._qpos0 = (model.key_qpos[key] if key >= 0 else model.qpos0).copy()
        ctrl0 = model.key_ctrl[key] if key >= 0 else np.zeros(model.nu)
        self._ctrl = np.tile(ctrl0, (n, 1)).astype(self._dtype)
        self.data.actuator_ctrls = self._ctrl
        self.nonfinite = np.zeros(n, bool)
        self.self_contact_substeps = np.zeros(n, np.int32)
        self._closed = False
        self._fresh = False
        self._write_rows(np.arange(n), np.tile(self._qpos0, (n, 1)), np.zeros((n, self.nv)))

    # ---------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("MotrixBackend is closed")

    def _write_rows(self, ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Reset worlds `ids` to qpos (M, nq) / qvel (M, nv) (MuJoCo conventions), FK included."""
        w = self._write
        w["jpos"][ids] = qpos[:, self._hinge_qadr]
        w["jvel"][ids] = qvel[:, self._hinge_dadr]
        if self._root is not None:
            c = self._quat_col
            w["pos"][ids] = qpos[:, c - 3 : c][:, None]
            w["quat"][ids] = qpos[:, [c + 1, c + 2, c + 3, c]][:, None]  # xyzw
            d = self._bound.free_dof_adr
            w["lin"][ids] = qvel[:, d : d + 3][:, None]
            w["ang"][ids] = _quat_rotate(qpos[:, c : c + 4], qvel[:, d + 3 : d + 6])[:, None]
        w.execute(self.data, ids)
        self._fresh = True

    def _guard(self) -> None:
        """Flag rows whose state is non-finite or beyond `QVEL_BOUND` and park them at the
        default state (MotrixSim would abort the whole batch on a NaN)."""
        qpos, qvel = self.data.dof_pos, self.data.dof_vel
        bad = ~(np.isfinite(qpos).all(1) & (np.abs(qvel) <= QVEL_BOUND).all(1))
        if bad.any():
            ids = np.flatnonzero(bad)
            self.nonfinite[ids] = True
            rest = np.tile(self._qpos0, (ids.size, 1))
            self._write_rows(ids, rest, np.zeros((ids.size, self.nv)))

    # ---------------------------------------------------------------------------------------
    # SimBackend

    def step(self, joint_pos_target: np.ndarray) -> None:
        """Advance every env `decimation` substeps holding position targets (N, J) rad.

        Afterwards `self_contact_substeps` (N,) int32 and `nonfinite` (N,) bool describe the
        step. A row whose state became NaN/Inf or |qvel| > 1e4 (or whose targets are not
        finite) is flagged and parked at the default state; it is never an exception.
        """
        self._check_open()
        target = np.asarray(joint_pos_target)
        if target.shape != (self.num_envs, self.nu):
            raise ValueError(
                f"joint_pos_target must have shape ({self.num_envs}, {self.nu}), got {target.shape}"
            )
        self.nonfinite[:] = False
        self.self_contact_substeps[:] = 0
        self._ctrl[:, self._act_ids] = target
        bad = ~np.isfinite(self._ctrl).all(1)
        if bad.any():
            self.nonfinite |= bad
            self._ctrl[bad] = 0.0
        self.data.actuator_ctrls = self._ctrl
        self._guard()
        sm, data = self.scene, self.data
        for _ in range(self.decimation):
            sm.step(data)
            if self._sensor_names:
                force = sm.get_sensor_values(self._sensor_names, data)[:, 1::4]  # normal, N
                self.self_contact_substeps += (force > self.self_contact_threshold).any(1)
            self._guard()
        self._fresh = False

    def copy_body_state_w(self, out: BodyState, env_ids: np.ndarray | None = None) -> None:
        """Fill `out` (float32, world frame, wxyz, body frame origins) with the state after the
        last substep (or write), for every env or rows `env_ids` only: one compiled MotrixSim
        query, after a forward-kinematics pass when the last call was `step`."""
        self._check_open()
        if out is not self._checked_out:
            check_body_state(out, self.num_envs, len(self.body_ids), len(self.joint_ids))
            self._checked_out = out
        if not self._fresh:
            self.scene.forward_kinematic(self.data)
            self._fresh = True
        q = self._query
        if env_ids is None:
            q.execute(self.data)
            rows = slice(None)
        else:
            rows = resolve_env_ids(env_ids, self.num_envs)
            q.execute(self.data, rows)
        out.pos_w[rows] = q["pos"][rows]
        out.quat_w[rows] = q["quat"][rows][..., [3, 0, 1, 2]]
        out.lin_vel_w[rows] = q["lin"][rows]
        out.ang_vel_w[rows] = q["ang"][rows]
        out.joint_pos[rows] = q["jpos"][rows]
        out.joint_vel[rows] = q["jvel"][rows]

    def write_state(self, env_ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Set qpos (M, nq) and qvel (M, nv) of rows `env_ids` (M,) (MuJoCo conventions; stored
        as float32), reset their solver and actuator state (per-env model fields are kept) and
        clear their `nonfinite` flag."""
        self._check_open()
        ids = resolve_env_ids(env_ids, self.num_envs, unique=True)
        qpos, qvel = check_state_rows(qpos, qvel, ids.size, self.nq, self.nv)
        if ids.size:
            self._write_rows(ids, qpos, qvel)
        self.nonfinite[ids] = False

    def add_root_velocity(
        self, env_ids: np.ndarray, lin_vel_w: np.ndarray, ang_vel_w: np.ndarray
    ) -> None:
        """Add world-frame linear (M, 3) m/s and angular (M, 3) rad/s velocity to the floating
        base of rows `env_ids` (unique ids); positions, joints and solver state are kept.

        Raises:
            ValueError: no or several free joints, ids outside [0, N) or repeated, kicks not
                (M, 3) or not finite.
        """
        self._check_open()
        qadr, dadr = self._bound.require_free_joint()
        ids = resolve_env_ids(env_ids, self.num_envs, unique=True)
        lin, ang = root_velocity_kicks(lin_vel_w, ang_vel_w, ids.size)
        qpos = self.data.dof_pos[ids].astype(np.float64)
        qvel = self.data.dof_vel[ids].astype(np.float64)
        quat = qpos[:, [qadr + 6, qadr + 3, qadr + 4, qadr + 5]]  # xyzw -> wxyz
        self._kick["lin"][ids] = (qvel[:, dadr : dadr + 3] + lin)[:, None]
        world = _quat_rotate(quat, qvel[:, dadr + 3 : dadr + 6]) + ang
        self._kick["ang"][ids] = world[:, None]
        self._kick.execute(self.data, ids)
        self._fresh = True

    def model_field(self, field: str, elem_ids: np.ndarray) -> np.ndarray:
        """Nominal ``model.<field>[elem_ids]``: float64 copy, (K, *trailing).

        Raises:
            ValueError: an unsupported field or element ids out of range.
        """
        elem, _ = check_model_field(self.model, field, elem_ids)
        return np.array(getattr(self.model, field)[elem], dtype=np.float64)

    def set_model_field(
        self, field: str, env_ids: np.ndarray, elem_ids: np.ndarray, values: np.ndarray
    ) -> None:
        """Set ``model.<field>[elem_ids]`` of rows `env_ids` (M,) to `values` (M, K, *trailing)
        through MotrixSim's per-world overrides (float32): ``geom_friction`` -> geom friction
        override, ``body_ipos`` -> link centre-of-mass override, ``body_mass`` -> link mass
        override (inertia not rescaled, as in MuJoCo). Elements MotrixSim does not hold (the
        world body, visual-only geoms) keep only the value in `field_values`: they do not
        take part in the dynamics.

        Raises:
            ValueError: an unsupported field, ids out of range, values of another shape or not
                finite.
        """
        self._check_open()
        elem, trailing = check_model_field(self.model, field, elem_ids)
        ids = resolve_env_ids(env_ids, self.num_envs)
        vals = check_field_values(field, values, ids.size, elem, trailing)
        table = self._fields.get(field)
        if table is None:
            nominal = np.asarray(getattr(self.model, field), np.float64)
            table = self._fields[field] = np.repeat(nominal[None], self.num_envs, 0)
        table[ids[:, None], elem[None, :]] = vals
        names, cols = self._engine_elements(field, elem)
        if not names:
            return
        key = (field, tuple(names))
        writer = self._field_writers.get(key)
        if writer is None:
            source = {
                "geom_friction": mxw.GeomFrictionOverride,
                "body_ipos": mxw.LinkCenterOfMassOverride,
                "body_mass": mxw.LinkMassOverride,
            }[field](names)
            plan = self.scene.compile_write({"v": source})
            writer = self._field_writers[key] = plan.allocate(self.data)
        writer["v"][ids] = vals[:, cols].reshape(writer["v"][ids].shape)
        writer.execute(self.data, ids)

    def _engine_elements(self, field: str, elem: np.ndarray) -> tuple[list[str], np.ndarray]:
        """MotrixSim names of the elements `elem` it holds, and their columns in `elem`."""
        if field == "geom_friction":
            names = [f"g{g}" for g in elem]
            keep = [self.scene.get_geom_index(nm) is not None for nm in names]
        else:
            names = [f"b{b}" for b in elem]
            keep = [b != 0 for b in elem]
        cols = np.flatnonzero(keep)
        return [names[c] for c in cols], cols

    def field_values(self, field: str) -> np.ndarray:
        """(N, count, *trailing) float64: per-env values of a model field as MotrixSim holds
        them (read back from its overrides; elements it lacks: the values last set)."""
        self._check_open()
        nominal = np.asarray(getattr(self.model, field), np.float64)
        elem, _ = check_model_field(self.model, field, np.arange(len(nominal)))
        table = np.repeat(nominal[None], self.num_envs, 0)
        if field in self._fields:
            table[...] = self._fields[field]
        names, cols = self._engine_elements(field, elem)
        sm, data = self.scene, self.data
        for name, col in zip(names, cols, strict=True):
            if field == "geom_friction":
                table[:, col] = sm.get_geom(name).get_friction_override(data)
            elif field == "body_mass":
                table[:, col] = sm.get_link(name).get_mass_override(data)
            else:
                table[:, col] = sm.get_link(name).get_center_of_mass_override(data)
        return table

    def close(self) -> None:
        """Free the scene data (idempotent); the process-wide pool stays."""
        if not self._closed:
            self._closed = True
            self.data = self._query = self._write = None
            self._field_writers = {}

    # ---------------------------------------------------------------------------------------
    # extras (not part of SimBackend)

    @property
    def qpos(self) -> np.ndarray:
        """(N, nq) float64 copy of the generalised positions, MuJoCo layout (root wxyz)."""
        self._check_open()
        q = self.data.dof_pos.astype(np.float64)
        if self._quat_col >= 0:
            c = self._quat_col
            q[:, c : c + 4] = q[:, [c + 3, c, c + 1, c + 2]]
        return q

    @property
    def qvel(self) -> np.ndarray:
        """(N, nv) float64 copy of the generalised velocities, MuJoCo layout."""
        self._check_open()
        return self.data.dof_vel.astype(np.float64)
