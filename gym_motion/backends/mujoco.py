"""Official MuJoCo on CPU threads: `MujocoBackend`, N envs of one model in a `mujoco.batch.Batch`.

One ``Batch.rollout(decimation)`` call per control step: the batch's native threads (GIL
released; state rows hold qpos, qvel, ctrl and the solver warm start, bit-identical to ``mj_step``
on one MjData per env at any thread count) record the ``self_contact`` sensor after every
substep; body poses and velocities are then computed from the fresh qpos/qvel by a Numba
forward-kinematics kernel (MuJoCo's own derived fields lag one substep behind the state after
``mj_step``, and recomputing them in MuJoCo costs ~10 % of the physics). The alternatives
measured against this design are in docs/measurements.md.

Per-env model fields for domain randomisation (`MujocoBackend.set_model_field`) use
``Batch.expand`` (lazily, on a field's first use): e.g. a (N, ngeom, 3) ``geom_friction`` table
or a (N, nbody, 3) ``body_ipos`` table, 8 bytes a value; no per-env MjModel copies.

Requires ``mujoco >= 4.0`` (``mujoco.batch``). The Numba kinematics agree with MuJoCo's
``mj_kinematics`` / ``mj_objectVelocity`` to float64 round-off (tests: 1e-6 after the float32 cast).
The copy kernel costs ~1.9-2.2 ms at N = 1024 (its serial build: one thread below 2048 envs,
`gym_motion.backends.threads`), ~2 % of a step; the post-step kernel ~0.02 ms.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import mujoco
import mujoco.batch
import numba as nb
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
    self_contact_columns,
)
from gym_motion.backends.threads import (
    CallerPin,
    NumbaThreads,
    apply_numba_threads,
    pin_threads,
    resolve_thread_budget,
    thread_ids,
)
from gym_motion.kernels.dispatch import bind_builds, row_kernel
from gym_motion.kernels.quat import quat_mul, quat_rotate

__all__ = ["MujocoBackend", "add_self_contact_sensor", "SELF_CONTACT_SENSOR"]

QVEL_BOUND = 1e4  # |qvel| beyond this (m/s or rad/s) counts as a blow-up
_BAD_WARNINGS = (
    int(mujoco.mjtWarning.mjWARN_BADQPOS),
    int(mujoco.mjtWarning.mjWARN_BADQVEL),
    int(mujoco.mjtWarning.mjWARN_BADQACC),
)
_MISSING_SENSOR_HINT = (
    ": add one with gym_motion.backends.mujoco.add_self_contact_sensor(spec, root_body) before "
    "compiling, or pass self_contact_threshold=None to disable self-contact counting"
)


def add_self_contact_sensor(
    spec: mujoco.MjSpec, root_body: str, name: str = SELF_CONTACT_SENSOR
) -> mujoco.MjsSensor:
    """Add the robot-robot contact sensor the backends read (to an MjSpec, before compile).

    The sensor reports, per substep, the 3D force (contact frame: normal first, N) of the
    strongest contact with both geoms in the subtree of `root_body` (the robot's root body
    name; ``data="force"``, ``reduce="maxforce"``, ``num=1``); zero when there is none.
    """
    sensor = spec.add_sensor(
        name=name,
        type=mujoco.mjtSensor.mjSENS_CONTACT,
        objtype=mujoco.mjtObj.mjOBJ_XBODY,  # subtree1
        objname=root_body,
        reftype=mujoco.mjtObj.mjOBJ_XBODY,  # subtree2
        refname=root_body,
    )
    sensor.intprm[0] = 1 << 1  # data: force
    sensor.intprm[1] = 2  # reduce: maxforce
    sensor.intprm[2] = 1  # num: one slot
    return sensor


# --------------------------------------------------------------------------------------------
# Numba kernels
# --------------------------------------------------------------------------------------------


@row_kernel
def _body_state_kernel(
    qpos,
    qvel,
    parent,
    body_pos,
    body_quat,
    body_jntadr,
    body_jntnum,
    jnt_type,
    jnt_qposadr,
    jnt_dofadr,
    jnt_pos,
    jnt_axis,
    qpos0,
    bodies,
    joint_qadr,
    joint_dadr,
    rows,
    pos_out,
    quat_out,
    lin_out,
    ang_out,
    jpos_out,
    jvel_out,
):
    """Forward kinematics and body-origin velocities of envs `rows`, as mj_kinematics + comVel.

    qpos (N, nq), qvel (N, nv) float64 (any strides); model tables as in MjModel; bodies (B,),
    joint_qadr/joint_dadr (J,) int; rows (M,) int64, the envs to compute. Outputs (float32),
    written at those rows only: pos (N,B,3), quat wxyz (N,B,4), lin vel of body origin (N,B,3)
    and ang vel (N,B,3), world frame; joint pos/vel (N,J).
    """
    n = rows.shape[0]
    nbody = parent.shape[0]
    for r in nb.prange(n):
        e = rows[r]
        xp = np.zeros((nbody, 3))
        xq = np.zeros((nbody, 4))
        w = np.zeros((nbody, 3))
        v = np.zeros((nbody, 3))
        xq[0, 0] = 1.0
        # joint anchors / axes of the body being processed (at most 8 joints per body here)
        anc = np.empty((8, 3))
        axs = np.empty((8, 3))
        for i in range(1, nbody):
            p = parent[i]
            pq0, pq1, pq2, pq3 = xq[p, 0], xq[p, 1], xq[p, 2], xq[p, 3]
            r0, r1, r2 = quat_rotate(
                pq0, pq1, pq2, pq3, body_pos[i, 0], body_pos[i, 1], body_pos[i, 2]
            )
            px, py, pz = xp[p, 0] + r0, xp[p, 1] + r1, xp[p, 2] + r2
            q0, q1, q2, q3 = quat_mul(
                pq0,
                pq1,
                pq2,
                pq3,
                body_quat[i, 0],
                body_quat[i, 1],
                body_quat[i, 2],
                body_quat[i, 3],
            )
            j0 = body_jntadr[i]
            nj = body_jntnum[i]
            for k in range(nj):
                j = j0 + k
                t = jnt_type[j]
                a = jnt_qposadr[j]
                if t == 0:  # free
                    px, py, pz = qpos[e, a], qpos[e, a + 1], qpos[e, a + 2]
                    q0, q1, q2, q3 = qpos[e, a + 3], qpos[e, a + 4], qpos[e, a + 5], qpos[e, a + 6]
                    nrm = np.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
                    if nrm > 1e-15:
                        q0, q1, q2, q3 = q0 / nrm, q1 / nrm, q2 / nrm, q3 / nrm
                    anc[k, 0], anc[k, 1], anc[k, 2] = px, py, pz
                    axs[k, 0], axs[k, 1], axs[k, 2] = 0.0, 0.0, 1.0
                    continue
                # a joint at the body origin (jnt_pos 0, every G1 joint) needs no anchor
                # rotations: the origin stays where it is (equal up to the sign of a 0.0)
                at_origin = jnt_pos[j, 0] == 0.0 and jnt_pos[j, 1] == 0.0 and jnt_pos[j, 2] == 0.0
                a0, a1, a2 = 0.0, 0.0, 0.0
                if not at_origin:
                    a0, a1, a2 = quat_rotate(
                        q0, q1, q2, q3, jnt_pos[j, 0], jnt_pos[j, 1], jnt_pos[j, 2]
                    )
                ax0, ax1, ax2 = quat_rotate(
                    q0, q1, q2, q3, jnt_axis[j, 0], jnt_axis[j, 1], jnt_axis[j, 2]
                )
                anc[k, 0], anc[k, 1], anc[k, 2] = a0 + px, a1 + py, a2 + pz
                axs[k, 0], axs[k, 1], axs[k, 2] = ax0, ax1, ax2
                if t == 2:  # slide
                    d = qpos[e, a] - qpos0[a]
                    px, py, pz = px + ax0 * d, py + ax1 * d, pz + ax2 * d
                    continue
                if t == 1:  # ball
                    l0, l1, l2, l3 = qpos[e, a], qpos[e, a + 1], qpos[e, a + 2], qpos[e, a + 3]
                    nrm = np.sqrt(l0 * l0 + l1 * l1 + l2 * l2 + l3 * l3)
                    if nrm > 1e-15:
                        l0, l1, l2, l3 = l0 / nrm, l1 / nrm, l2 / nrm, l3 / nrm
                else:  # hinge
                    half = 0.5 * (qpos[e, a] - qpos0[a])
                    s = np.sin(half)
                    l0, l1, l2, l3 = (
                        np.cos(half),
                        jnt_axis[j, 0] * s,
                        jnt_axis[j, 1] * s,
                        jnt_axis[j, 2] * s,
                    )
                q0, q1, q2, q3 = quat_mul(q0, q1, q2, q3, l0, l1, l2, l3)
                if not at_origin:
                    b0, b1, b2 = quat_rotate(
                        q0, q1, q2, q3, jnt_pos[j, 0], jnt_pos[j, 1], jnt_pos[j, 2]
                    )
                    px, py, pz = anc[k, 0] - b0, anc[k, 1] - b1, anc[k, 2] - b2
            nrm = np.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
            q0, q1, q2, q3 = q0 / nrm, q1 / nrm, q2 / nrm, q3 / nrm
            xp[i, 0], xp[i, 1], xp[i, 2] = px, py, pz
            xq[i, 0], xq[i, 1], xq[i, 2], xq[i, 3] = q0, q1, q2, q3
            # velocities of the body origin: parent's rigid motion plus each joint's
            wx, wy, wz = w[p, 0], w[p, 1], w[p, 2]
            dx, dy, dz = px - xp[p, 0], py - xp[p, 1], pz - xp[p, 2]
            vx = v[p, 0] + wy * dz - wz * dy
            vy = v[p, 1] + wz * dx - wx * dz
            vz = v[p, 2] + wx * dy - wy * dx
            for k in range(nj):
                j = j0 + k
                t = jnt_type[j]
                dof = jnt_dofadr[j]
                if t == 0:  # free: linear dofs world frame, angular dofs body frame
                    vx += qvel[e, dof]
                    vy += qvel[e, dof + 1]
                    vz += qvel[e, dof + 2]
                    c0, c1, c2 = quat_rotate(
                        q0, q1, q2, q3, qvel[e, dof + 3], qvel[e, dof + 4], qvel[e, dof + 5]
                    )
                    wx, wy, wz = wx + c0, wy + c1, wz + c2
                    continue
                if t == 2:  # slide
                    qd = qvel[e, dof]
                    vx += axs[k, 0] * qd
                    vy += axs[k, 1] * qd
                    vz += axs[k, 2] * qd
                    continue
                if t == 1:  # ball: angular dofs in the body frame
                    c0, c1, c2 = quat_rotate(
                        q0, q1, q2, q3, qvel[e, dof], qvel[e, dof + 1], qvel[e, dof + 2]
                    )
                else:
                    qd = qvel[e, dof]
                    c0, c1, c2 = axs[k, 0] * qd, axs[k, 1] * qd, axs[k, 2] * qd
                rx, ry, rz = px - anc[k, 0], py - anc[k, 1], pz - anc[k, 2]
                vx += c1 * rz - c2 * ry
                vy += c2 * rx - c0 * rz
                vz += c0 * ry - c1 * rx
                wx, wy, wz = wx + c0, wy + c1, wz + c2
            w[i, 0], w[i, 1], w[i, 2] = wx, wy, wz
            v[i, 0], v[i, 1], v[i, 2] = vx, vy, vz
        for b in range(bodies.shape[0]):
            i = bodies[b]
            for c in range(3):
                pos_out[e, b, c] = xp[i, c]
                lin_out[e, b, c] = v[i, c]
                ang_out[e, b, c] = w[i, c]
            for c in range(4):
                quat_out[e, b, c] = xq[i, c]
        for k in range(joint_qadr.shape[0]):
            jpos_out[e, k] = qpos[e, joint_qadr[k]]
            jvel_out[e, k] = qvel[e, joint_dadr[k]]


@row_kernel
def _post_step_kernel(
    qpos, qvel, warning, bad_warnings, failed, sens, cols, use_norm, threshold, vmax,
    nonfinite, counts,
):  # fmt: skip
    """Per env: nonfinite flag and the number of substeps with a self-contact force > threshold;
    then the env's warning counters and `failed` flag are cleared for the next step.

    qpos (N, nq), qvel (N, nv); warning (N, nwarn, 2) int32; failed (N,) bool (MuJoCo errors);
    sens (N, S, nsensordata) per substep; cols (slots, 3) sensordata columns of each slot's force;
    use_norm: compare the force norm (global-frame netforce) instead of its normal component.
    """
    n = qpos.shape[0]
    for e in nb.prange(n):
        bad = failed[e]
        failed[e] = False
        for k in range(bad_warnings.shape[0]):
            if warning[e, bad_warnings[k], 1] != 0:
                bad = True
        for k in range(warning.shape[1]):
            warning[e, k, 0] = 0
            warning[e, k, 1] = 0
        if not bad:
            for k in range(qpos.shape[1]):
                x = qpos[e, k]
                if not (abs(x) < np.inf):
                    bad = True
                    break
        if not bad:
            for k in range(qvel.shape[1]):
                if not (abs(qvel[e, k]) <= vmax):
                    bad = True
                    break
        nonfinite[e] = bad
        c = 0
        for s in range(sens.shape[1]):
            hit = False
            for slot in range(cols.shape[0]):
                f0 = sens[e, s, cols[slot, 0]]
                if use_norm:
                    f1 = sens[e, s, cols[slot, 1]]
                    f2 = sens[e, s, cols[slot, 2]]
                    f = np.sqrt(f0 * f0 + f1 * f1 + f2 * f2)
                else:
                    f = f0
                if f > threshold:
                    hit = True
            if hit:
                c += 1
        counts[e] = c


def _rotate_inverse(quat: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """Rotate vectors (M, 3) by the inverse of quaternions (M, 4) wxyz (normalised here, as
    MuJoCo's kinematics do), float64: world frame -> body frame."""
    q = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    w, r = q[:, :1], -q[:, 1:]  # the conjugate
    t = 2.0 * np.cross(r, vec)
    return vec + w * t + np.cross(r, t)


# --------------------------------------------------------------------------------------------
# Backend
# --------------------------------------------------------------------------------------------


class MujocoBackend:
    """N envs of one MuJoCo model stepped by the official C engine on native threads.

    Args:
        model: the compiled robot model (a robot module's ``load_model()``): one
            joint-transmission position actuator per bound joint (any actuator order), and a
            contact sensor named ``"self_contact"`` (see `add_self_contact_sensor`) unless
            ``self_contact_threshold`` is None. Copied; the caller's model is not modified.
        num_envs: N.
        body_ids: (B,) int body ids whose state `copy_body_state_w` fills, in that order.
        joint_ids: (J,) int hinge/slide joint ids of `BodyState.joint_pos` and of `step`'s
            targets, in that order; J == model.nu, each joint driven by exactly one actuator.
        decimation: physics substeps per `step`.
        num_threads: physics threads (None: every CPU of the block); never more than CPUs.
        cpu_ids: pin physics threads (and size Numba) to these CPUs (Linux; else a warning).
        self_contact_threshold: N; a substep counts as self-contact when the sensor's normal
            force exceeds it. None disables counting (and the sensor requirement).

    Raises:
        TypeError: `model` is not a ``mujoco.MjModel``.
        ValueError: num_envs or decimation < 1; bad ids (see `gym_motion.backends.binding.
            bind_ids`); no ``"self_contact"`` contact sensor while counting is on.

    Attributes (beyond `SimBackend`'s):
        model: the backend's copy of the model (nominal values). num_threads: physics threads
        in use. nq, nv, nu: sizes. thread_budget: the resolved `ThreadBudget`.
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
        self.num_envs = int(num_envs)
        self._all_rows = np.arange(self.num_envs, dtype=np.int64)
        self.decimation = int(decimation)
        self.physics_dt = float(model.opt.timestep)
        self.nq, self.nv, self.nu = model.nq, model.nv, model.nu

        self._bound = bound = bind_ids(model, body_ids, joint_ids)
        self.body_ids = bound.body_ids
        self.joint_ids = bound.joint_ids
        self._joint_qadr = bound.qpos_adr
        self._joint_dadr = bound.dof_adr
        self._act_ids = bound.actuator_ids
        self._act_identity = np.array_equal(bound.actuator_ids, np.arange(model.nu))
        if np.any(model.body_jntnum > 8):
            raise ValueError("bodies with more than 8 joints are not supported")

        # model tables of the kinematics kernel (none of them is a per-env model field)
        m = model
        self._kin = (
            m.body_parentid.astype(np.int64),
            m.body_pos.copy(),
            m.body_quat.copy(),
            m.body_jntadr.astype(np.int64),
            m.body_jntnum.astype(np.int64),
            m.jnt_type.astype(np.int64),
            m.jnt_qposadr.astype(np.int64),
            m.jnt_dofadr.astype(np.int64),
            m.jnt_pos.copy(),
            m.jnt_axis.copy(),
            m.qpos0.copy(),
        )

        # self-contact sensor columns (checked before any pool starts)
        self._contact = self._contact_columns(self_contact_threshold)
        self._self_contact_threshold = self_contact_threshold

        # threads: one budget, then the pool
        self.thread_budget = budget = resolve_thread_budget(num_threads, cpu_ids)
        self.num_threads = budget.physics_threads
        # the caller works in the pool, and threads it starts meanwhile inherit; given back on close
        self._pin = CallerPin(budget.cpus) if budget.pinned else None
        try:
            apply_numba_threads(budget)
            # the kernels' build, picked once for this batch on the pool just sized (as the env)
            self._serial = NumbaThreads.for_rows(self.num_envs).serial
            before = thread_ids()
            # nthread includes the calling thread; 1 means no pool
            self._batch = mujoco.batch.Batch(model, self.num_envs, self.num_threads)
            if budget.pinned:
                pin_threads(thread_ids() - before, budget.cpus)
        except BaseException:
            if self._pin is not None:
                self._pin.release()
            raise

        b = self._batch
        key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "default")
        b.reset(keyframe=key if key >= 0 else -1, stage=mujoco.mjtStage.mjSTAGE_NONE.value)
        self._qpos = b.bind("qpos")  # (N, nq) live views of the state rows
        self._qvel = b.bind("qvel")
        self._ctrl = b.bind("ctrl")
        self._warm = b.bind("qacc_warmstart")
        self._act = b.bind("act") if model.na else None
        self._warning = b.warning  # (N, nwarning, 2) int32, zero before each call
        self._warning[...] = 0
        self._sens = np.zeros((self.num_envs, self.decimation, model.nsensordata))
        self._record = {"sensordata": self._sens}
        self._failed = np.zeros(self.num_envs, bool)
        self._bad_warnings = np.array(_BAD_WARNINGS, np.int64)
        self.nonfinite = np.zeros(self.num_envs, bool)
        self.self_contact_substeps = np.zeros(self.num_envs, np.int32)
        self._fields: dict[str, np.ndarray] = {}  # field -> live (N, ...) per-env table
        self._closed = False
        # the kernels of every step, bound to the batch's views in its build
        self._kinematics = bind_builds(partial(
            _body_state_kernel, self._qpos, self._qvel, *self._kin, self.body_ids,
            self._joint_qadr, self._joint_dadr,
        ))[self._serial]  # fmt: skip
        self._post_step = self._bind_post_step()
        self._checked_out: BodyState | None = None  # the last `out` checked by copy_body_state_w

    # ---------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("MujocoBackend is closed")

    # ---------------------------------------------------------------------------------------
    # SimBackend

    def step(self, joint_pos_target: np.ndarray) -> None:
        """Advance every env `decimation` substeps holding position targets (N, J) rad.

        Afterwards `self_contact_substeps` (N,) int32 and `nonfinite` (N,) bool describe the
        step. A row whose state blew up (NaN/Inf, |qvel| > 1e4, MuJoCo's bad-qpos/qvel/qacc
        warnings, or a MuJoCo error) is flagged and stops stepping; MuJoCo may have reset it to
        the model's qpos0. It is never an exception.
        """
        self._check_open()
        target = np.asarray(joint_pos_target)
        if target.shape != (self.num_envs, self.nu):
            raise ValueError(
                f"joint_pos_target must have shape ({self.num_envs}, {self.nu}), got {target.shape}"
            )
        if self._act_identity:
            self._ctrl[...] = target
        else:
            self._ctrl[:, self._act_ids] = target
        try:  # (the warning counters and `_failed` were cleared by the last post-step kernel)
            self._batch.rollout(self.decimation, record=("sensordata",), out=self._record)
        except mujoco.batch.SimulationError as err:  # those rows kept their pre-step state
            self._failed[err.ids] = True
        self._post_step()

    def copy_body_state_w(self, out: BodyState, env_ids: np.ndarray | None = None) -> None:
        """Fill `out` (float32, world frame) from the current qpos/qvel of every env, or of
        rows `env_ids` (M,) only (other rows of `out` untouched).

        Kinematics are computed from the state itself (as mj_kinematics + mj_comVel would), so
        they are fresh after `step` and after `write_state` alike. lin_vel_w is the velocity of
        each body frame origin (not of its centre of mass).
        """
        self._check_open()
        if out is not self._checked_out:  # once per BodyState: the kernel does not bound-check
            check_body_state(out, self.num_envs, len(self.body_ids), len(self.joint_ids))
            self._checked_out = out
        self._kinematics(
            self._all_rows if env_ids is None else resolve_env_ids(env_ids, self.num_envs),
            out.pos_w,
            out.quat_w,
            out.lin_vel_w,
            out.ang_vel_w,
            out.joint_pos,
            out.joint_vel,
        )

    def write_state(self, env_ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Set qpos (M, nq) and qvel (M, nv) of rows `env_ids` (M,), clear their solver warm
        start and actuator activations, and clear their `nonfinite` flag. Forward kinematics
        is implicit: body state is computed from qpos/qvel whenever it is read."""
        self._check_open()
        ids = resolve_env_ids(env_ids, self.num_envs, unique=True)
        qpos, qvel = check_state_rows(qpos, qvel, ids.size, self.nq, self.nv)
        self._qpos[ids] = qpos
        self._qvel[ids] = qvel
        self._warm[ids] = 0.0
        if self._act is not None:
            self._act[ids] = 0.0
        self.nonfinite[ids] = False

    def add_root_velocity(
        self, env_ids: np.ndarray, lin_vel_w: np.ndarray, ang_vel_w: np.ndarray
    ) -> None:
        """Add world-frame velocity to the free joint of rows `env_ids` (M,) (unique ids):
        linear (M, 3) m/s to qvel[0:3] (world frame), angular (M, 3) rad/s rotated into the
        body frame of the current root orientation (float64, from qpos) and added to qvel[3:6].

        Everything else (qpos, other velocities, warm start, activations, `nonfinite`) is kept.

        Raises:
            ValueError: no or several free joints, ids outside [0, N) or repeated, kicks not
                (M, 3) or not finite.
        """
        self._check_open()
        qadr, dadr = self._bound.require_free_joint()
        ids = resolve_env_ids(env_ids, self.num_envs, unique=True)
        lin, ang = root_velocity_kicks(lin_vel_w, ang_vel_w, ids.size)
        quat = self._qpos[ids, qadr + 3 : qadr + 7]
        self._qvel[ids, dadr : dadr + 3] += lin
        self._qvel[ids, dadr + 3 : dadr + 6] += _rotate_inverse(quat, ang)

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
        (float64, stored as given). The first call for a field gives the batch a per-env table
        of it (``Batch.expand``); MuJoCo's derived constants are not recomputed.

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
            table = self._fields[field] = self._batch.expand(field)  # (N, count, *trailing)
        table[ids[:, None], elem[None, :]] = vals

    def close(self) -> None:
        """Stop the thread pool, free the batch and give back the CPUs a `cpu_ids` pin took
        (`CallerPin.release`) (idempotent)."""
        if not self._closed:
            self._closed = True
            self._batch = None
            self._qpos = self._qvel = self._ctrl = self._warm = self._act = None
            self._fields = {}
            if getattr(self, "_pin", None) is not None:
                self._pin.release()

    def __del__(self) -> None:  # noqa: D105
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    # ---------------------------------------------------------------------------------------
    # extras (not part of SimBackend)

    @property
    def self_contact_threshold(self) -> float | None:
        """The self-contact force threshold, N (None: not counted); settable, from the next
        `step` on (a number needs the ``"self_contact"`` sensor: ValueError otherwise)."""
        return self._self_contact_threshold

    @self_contact_threshold.setter
    def self_contact_threshold(self, threshold: float | None) -> None:
        self._contact = self._contact_columns(threshold)
        self._self_contact_threshold = threshold
        self._post_step = self._bind_post_step()

    def _contact_columns(self, threshold: float | None) -> tuple[np.ndarray, bool]:
        """The self-contact sensor's (slots, 3) columns and whether it reports a norm."""
        if threshold is None:
            return np.zeros((0, 3), np.int64), False
        return self_contact_columns(self.model, _MISSING_SENSOR_HINT)

    def _bind_post_step(self) -> Callable[[], None]:
        """`_post_step_kernel` bound to the batch's views and the threshold, in its build."""
        threshold = self._self_contact_threshold
        cols, use_norm = self._contact
        return bind_builds(partial(
            _post_step_kernel, self._qpos, self._qvel, self._warning, self._bad_warnings,
            self._failed, self._sens, cols, use_norm,
            -np.inf if threshold is None else float(threshold), QVEL_BOUND, self.nonfinite,
            self.self_contact_substeps,
        ))[self._serial]  # fmt: skip

    @property
    def qpos(self) -> np.ndarray:
        """(N, nq) live float64 view of the generalised positions (read-only by convention)."""
        self._check_open()
        return self._qpos

    @property
    def qvel(self) -> np.ndarray:
        """(N, nv) live float64 view of the generalised velocities (read-only by convention)."""
        self._check_open()
        return self._qvel

    def get_data(self, env: int) -> mujoco.MjData:
        """A fresh MjData holding env's state (mj_forward'ed with that env's model), for
        rendering or debugging; not for the hot path."""
        self._check_open()
        data = self._batch.get_data(int(env))
        mujoco.mj_forward(self._batch.get_model(int(env)), data)
        return data
