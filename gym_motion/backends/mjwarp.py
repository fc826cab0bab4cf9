"""MuJoCo Warp backend: N worlds of one model stepped as one batch on a GPU (or Warp's CPU device).

One control step is a fixed launch sequence on the device::

    ctrl upload (host -> device, once)                      # position targets (N, nu)
    clear overflow bits and self-contact counters
    decimation x [mjw.step, count self contact]             # captured once as a CUDA graph
    kinematics + com_pos + com_vel                          # body state of the final qpos/qvel
    one fused gather kernel -> device buffer (N, S)         # bodies, joints, flags
    one device -> host copy into a (pinned) host buffer (N, S)

``S = 13 B + 2 J + 3`` floats per world: body positions (B, 3), quaternions wxyz (B, 4), origin
linear velocities (B, 3) and angular velocities (B, 3), all world frame; joint positions (J,) and
velocities (J,); then the number of substeps with self contact above the threshold, a non-finite
flag and the ``OverflowType`` bits of the step. `BodyState` and the per-row flags are views of
that host buffer, so the managers stay on NumPy/Numba.

On CUDA the substep loop through the gather is captured as a CUDA graph on the second `step`
(the first runs eagerly and compiles every kernel) and replayed afterwards. On the CPU device the
same sequence runs eagerly. Warp's kernel cache (``~/.cache/warp`` or ``WARP_CACHE_PATH``) keeps
compiled kernels across processes: the first process on a machine compiles MuJoCo Warp's kernels
(measured on the CPU device, 2 shared cores: 9 s at construction + 34 s at the first step),
later processes load them in about 1-2 s. CUDA compile times are not measured yet.

Contact and constraint capacity are fixed at construction (``nconmax`` contacts and ``njmax``
constraint rows per world; the contact pool of ``nconmax * N`` is shared by all worlds). After
every step the capacity overflow bits of MuJoCo Warp (``Data.overflow``: constraint rows, contact
broadphase/narrowphase, CCD, sparse Jacobian, contact-sensor matches) are read with the state:
an overflow raises `CapacityOverflowError` (``on_overflow="raise"``, the default) or terminates
the affected rows like a non-finite state (``on_overflow="terminate"``: their `nonfinite` flag is
set, and `overflow_count` counts them). A contact pool overflow flags every world, since the pool
is shared. Solver iteration limits (also reported in those bits) are not an overflow.

Per-world model fields (`MjWarpBackend.set_model_field`: ``geom_friction``, ``body_ipos``,
``body_mass``) are batched on the device from construction (``put_model(batch_sizes=...)``,
float32); a host mirror of a field's (N, ...) table is kept from its first edit, and the whole
table is uploaded after each edit.
"""

from __future__ import annotations

import time
from typing import Literal

import mujoco
import mujoco_warp as mjw
import numpy as np
import warp as wp

from gym_motion.backends.base import BodyState
from gym_motion.backends.binding import (
    MODEL_FIELDS,
    SELF_CONTACT_SENSOR,  # noqa: F401 - re-exported: gym_motion.backends.mjwarp.SELF_CONTACT_SENSOR
    bind_ids,
    check_field_values,
    check_model_field,
    resolve_env_ids,
    root_velocity_kicks,
    self_contact_columns,
)

# Overflow bits that mean "the capacity given at construction was too small": results of that
# step are wrong (contacts or constraint rows dropped).
CAPACITY_OVERFLOW = int(
    mjw.OverflowType.NEFC
    | mjw.OverflowType.NJMAX_NNZ
    | mjw.OverflowType.BROADPHASE
    | mjw.OverflowType.NARROWPHASE
    | mjw.OverflowType.CCD
    | mjw.OverflowType.CONTACT_MATCH
)
QVEL_BOUND = 1e4  # |qvel| beyond this (m/s or rad/s) counts as a blow-up, as in MujocoBackend
_MISSING_SENSOR_HINT = (
    " (see gym_motion.backends.mujoco.add_self_contact_sensor); pass "
    "self_contact_threshold=None to disable self-contact counting"
)


class CapacityOverflowError(RuntimeError):
    """A step needed more contacts or constraint rows than `MjWarpBackend` was built with."""


def default_device() -> str:
    """``"cuda:0"`` when Warp sees a CUDA device, else ``"cpu"``."""
    wp.init()
    return "cuda:0" if wp.get_cuda_device_count() > 0 else "cpu"


# ---------------------------------------------------------------------------------------- kernels


@wp.kernel
def _count_self_contact(
    sensordata: wp.array2d(dtype=float),
    cols: wp.array2d(dtype=int),
    use_norm: int,
    threshold: float,
    count: wp.array(dtype=int),
):
    """count[w] += 1 when any slot of the self-contact sensor has a force above threshold (N):
    the normal component (contact frame), or the norm for a world-frame "netforce" sensor.
    cols (slots, 3): sensordata columns of each slot's force."""
    w = wp.tid()
    hit = wp.int32(0)
    for k in range(cols.shape[0]):
        f = sensordata[w, cols[k, 0]]
        if use_norm != 0:
            f1 = sensordata[w, cols[k, 1]]
            f2 = sensordata[w, cols[k, 2]]
            f = wp.sqrt(f * f + f1 * f1 + f2 * f2)
        if f > threshold:
            hit = 1
    count[w] = count[w] + hit


@wp.kernel
def _gather(
    xpos: wp.array2d(dtype=wp.vec3),
    xquat: wp.array2d(dtype=wp.quat),
    cvel: wp.array2d(dtype=wp.spatial_vector),
    subtree_com: wp.array2d(dtype=wp.vec3),
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    self_contact: wp.array(dtype=int),
    overflow: wp.array(dtype=int),
    body_ids: wp.array(dtype=int),
    root_ids: wp.array(dtype=int),
    qpos_adr: wp.array(dtype=int),
    dof_adr: wp.array(dtype=int),
    qvel_bound: float,
    out: wp.array2d(dtype=float),
):
    """Fill one row per world of the state buffer; thread (w, k): body k, joint k - B, flags."""
    w, k = wp.tid()
    nb = body_ids.shape[0]
    nj = qpos_adr.shape[0]
    if k < nb:
        b = body_ids[k]
        p = xpos[w, b]
        q = xquat[w, b]  # MuJoCo order w, x, y, z in the 4 slots
        v = cvel[w, b]  # (angular, linear at subtree_com of the tree root), world frame
        ang = wp.spatial_top(v)
        lin = wp.spatial_bottom(v) + wp.cross(ang, p - subtree_com[w, root_ids[k]])
        for i in range(3):
            out[w, 3 * k + i] = p[i]
            out[w, 7 * nb + 3 * k + i] = lin[i]
            out[w, 10 * nb + 3 * k + i] = ang[i]
        for i in range(4):
            out[w, 3 * nb + 4 * k + i] = q[i]
    elif k < nb + nj:
        j = k - nb
        out[w, 13 * nb + j] = qpos[w, qpos_adr[j]]
        out[w, 13 * nb + nj + j] = qvel[w, dof_adr[j]]
    else:
        bad = wp.int32(0)
        for i in range(qpos.shape[1]):
            if not wp.isfinite(qpos[w, i]):
                bad = 1
        for i in range(qvel.shape[1]):
            if not (wp.abs(qvel[w, i]) <= qvel_bound):  # also catches NaN
                bad = 1
        base = 13 * nb + 2 * nj
        out[w, base] = float(self_contact[w])
        out[w, base + 1] = float(bad)
        out[w, base + 2] = float(overflow[w])


@wp.kernel
def _scatter_state(
    ids: wp.array(dtype=int),
    qpos_in: wp.array(dtype=float),
    qvel_in: wp.array(dtype=float),
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    qacc_warmstart: wp.array2d(dtype=float),
    act: wp.array2d(dtype=float),
):
    """Write row i of the flat (M, nq) / (M, nv) inputs to world ids[i]; clear its history."""
    i = wp.tid()
    w = ids[i]
    nq = qpos.shape[1]
    nv = qvel.shape[1]
    for k in range(nq):
        qpos[w, k] = qpos_in[i * nq + k]
    for k in range(nv):
        qvel[w, k] = qvel_in[i * nv + k]
        qacc_warmstart[w, k] = 0.0
    for k in range(act.shape[1]):
        act[w, k] = 0.0


@wp.kernel
def _add_root_velocity(
    ids: wp.array(dtype=int),
    kick: wp.array(dtype=wp.float64),
    qpos_adr: int,
    dof_adr: int,
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
):
    """World ids[i] += kick row i (flat (M, 6): linear m/s, angular rad/s, world frame) on the
    free joint at qpos_adr/dof_adr; the angular part is rotated into the body frame of the
    current root orientation. Float64 arithmetic, float32 result."""
    i = wp.tid()
    w = ids[i]
    a = qpos_adr
    # MuJoCo stores wxyz, Warp quaternions are xyzw
    q = wp.quatd(
        wp.float64(qpos[w, a + 4]),
        wp.float64(qpos[w, a + 5]),
        wp.float64(qpos[w, a + 6]),
        wp.float64(qpos[w, a + 3]),
    )
    ang_w = wp.vec3d(kick[6 * i + 3], kick[6 * i + 4], kick[6 * i + 5])
    ang_b = wp.quat_rotate_inv(wp.normalize(q), ang_w)
    for k in range(3):
        qvel[w, dof_adr + k] = wp.float32(wp.float64(qvel[w, dof_adr + k]) + kick[6 * i + k])
        qvel[w, dof_adr + 3 + k] = wp.float32(wp.float64(qvel[w, dof_adr + 3 + k]) + ang_b[k])


# ---------------------------------------------------------------------------------------- backend


class MjWarpBackend:
    """`SimBackend` on MuJoCo Warp: N worlds, one launch sequence per control step.

    Args:
        model: the compiled MjModel (a robot module's ``load_model()``), copied; its
            options (timestep, integrator, solver, cone, iterations) are used as they are.
            Every world starts at keyframe ``"default"`` when the model has it, else at
            ``qpos0``.
        num_envs: N worlds.
        body_ids: (B,) int body ids whose state `copy_body_state_w` returns, in that order.
        joint_ids: (J,) int hinge/slide joint ids of the joint state and of the position
            targets, in that order; J == model.nu and each joint is driven by exactly one
            joint-transmission actuator.
        decimation: substeps per control step.
        self_contact_threshold: N; a substep counts as self contact when the normal force of the
            contact sensor ``"self_contact"`` (computed by MuJoCo Warp in every substep) exceeds
            it. None disables counting and the sensor requirement.
        device: Warp device; default ``"cuda:0"`` when a GPU exists, else ``"cpu"``.
        nconmax: contacts per world (the shared pool holds ``nconmax * N``).
        njmax: constraint rows per world.
        on_overflow: ``"raise"`` (default): a capacity overflow raises `CapacityOverflowError`
            after the step; ``"terminate"``: the affected rows are flagged in `nonfinite` (the
            env terminates and re-initialises them) and counted in `overflow_count`.

    Raises:
        ValueError: num_envs, decimation, nconmax or njmax < 1; an unknown on_overflow; bad ids
            (see `gym_motion.backends.binding.bind_ids`); no ``"self_contact"`` contact sensor
            while counting is on.

    Attributes:
        num_envs, physics_dt (s), decimation: as given / from the model.
        body_ids, joint_ids: (B,), (J,) int64, the bound ids.
        device: the Warp device name.
        self_contact_substeps: (N,) int32, substeps of the last step with self contact.
        nonfinite: (N,) bool, rows whose qpos became NaN/Inf or |qvel| exceeded 1e4 (or NaN)
            during the last step (or that overflowed, with ``on_overflow="terminate"``); such
            rows hold garbage until `write_state` writes them.
        overflow_count: rows terminated for capacity overflow since construction.
        profile: when True, `step` synchronises between phases and adds their wall times (s) to
            `phase_times` (``upload``, ``physics``, ``gather_copy``); off by default.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        num_envs: int,
        body_ids: np.ndarray,
        joint_ids: np.ndarray,
        decimation: int = 4,
        self_contact_threshold: float | None = 10.0,
        device: str | None = None,
        nconmax: int = 35,
        njmax: int = 250,
        on_overflow: Literal["raise", "terminate"] = "raise",
    ):
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if decimation < 1:
            raise ValueError(f"decimation must be >= 1, got {decimation}")
        if nconmax < 1 or njmax < 1:
            raise ValueError(f"nconmax and njmax must be >= 1, got {nconmax}, {njmax}")
        if on_overflow not in ("raise", "terminate"):
            raise ValueError(f"on_overflow must be 'raise' or 'terminate', got {on_overflow!r}")
        wp.init()
        self.device = device or default_device()
        self.num_envs = n = int(num_envs)
        self.decimation = int(decimation)
        self.physics_dt = float(model.opt.timestep)
        self.self_contact_threshold = self_contact_threshold
        self.nconmax, self.njmax = int(nconmax), int(njmax)
        self.on_overflow = on_overflow
        self.overflow_count = 0
        self.profile = False
        self.phase_times = {"upload": 0.0, "physics": 0.0, "gather_copy": 0.0}
        self._mjm = model = model.__copy__()  # nominal values of `model_field`

        self._bound = bound = bind_ids(model, body_ids, joint_ids)
        self.body_ids = bound.body_ids
        self.joint_ids = bound.joint_ids
        self._act_ids = bound.actuator_ids
        self._act_identity = np.array_equal(bound.actuator_ids, np.arange(model.nu))
        cols, self._contact_norm = np.zeros((0, 3), np.int32), False
        if self_contact_threshold is not None:
            cols, self._contact_norm = self_contact_columns(model, _MISSING_SENSOR_HINT)
        self._closed = False

        data = mujoco.MjData(model)
        key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "default")
        if key >= 0:
            mujoco.mj_resetDataKeyframe(model, data, key)
        mujoco.mj_forward(model, data)

        b, j = bound.body_ids.size, bound.joint_ids.size
        self._nb, self._nj = b, j
        self._stride = 13 * b + 2 * j + 3
        pinned = wp.get_device(self.device).is_cuda
        with wp.ScopedDevice(self.device):
            self._m = mjw.put_model(model, batch_sizes=dict.fromkeys(MODEL_FIELDS, n))
            self._m.opt.warn_overflow = 0  # reported by this class after every step instead
            self._d = mjw.put_data(model, data, nworld=n, nconmax=nconmax, njmax=njmax)
            self._body_ids = wp.array(bound.body_ids, dtype=int)
            self._root_ids = wp.array(bound.root_ids, dtype=int)
            self._qpos_adr = wp.array(bound.qpos_adr, dtype=int)
            self._dof_adr = wp.array(bound.dof_adr, dtype=int)
            self._contact_cols = wp.array(cols, dtype=int)
            self._self_contact = wp.zeros(n, dtype=int)
            self._state_dev = wp.zeros((n, self._stride), dtype=float)
            self._ids_dev = wp.zeros(n, dtype=int)
            self._qpos_dev = wp.zeros(n * model.nq, dtype=float)
            self._qvel_dev = wp.zeros(n * model.nv, dtype=float)
            self._kick_dev = wp.zeros(n * 6, dtype=wp.float64)
        host = dict(device="cpu", pinned=pinned)
        self._state_host = wp.zeros((n, self._stride), dtype=float, **host)
        self._ctrl_host = wp.zeros((n, model.nu), dtype=float, **host)
        self._ids_host = wp.zeros(n, dtype=int, **host)
        self._qpos_host = wp.zeros(n * model.nq, dtype=float, **host)
        self._qvel_host = wp.zeros(n * model.nv, dtype=float, **host)
        self._kick_host = wp.zeros(n * 6, dtype=wp.float64, **host)
        self._ctrl_np = self._ctrl_host.numpy()
        self._ctrl_np[:] = data.ctrl
        wp.copy(self._d.ctrl, self._ctrl_host)

        # Per-world model fields: host mirrors (N, ...) float32, made on a field's first edit.
        self._fields: dict[str, np.ndarray] = {}

        # Host views of the state buffer (float32, updated in place by each device->host copy).
        s = self._state_host.numpy()
        self._state_np = s
        self._views = BodyState(
            pos_w=s[:, : 3 * b].reshape(n, b, 3),
            quat_w=s[:, 3 * b : 7 * b].reshape(n, b, 4),
            lin_vel_w=s[:, 7 * b : 10 * b].reshape(n, b, 3),
            ang_vel_w=s[:, 10 * b : 13 * b].reshape(n, b, 3),
            joint_pos=s[:, 13 * b : 13 * b + j],
            joint_vel=s[:, 13 * b + j : 13 * b + 2 * j],
        )
        self._flags = s[:, 13 * b + 2 * j :]
        self.self_contact_substeps = np.zeros(n, np.int32)
        self.nonfinite = np.zeros(n, bool)
        self._graph = None
        self._steps = 0
        self._refresh()

    # ------------------------------------------------------------------ protocol
    def step(self, joint_pos_target: np.ndarray) -> None:
        """Advance every world `decimation` substeps holding position targets (N, J) rad.

        Raises:
            ValueError: targets of the wrong shape.
            CapacityOverflowError: with ``on_overflow="raise"``, a world needed more contacts or
                constraint rows than ``nconmax`` / ``njmax``; the message names the envs.
        """
        self._check_open()
        targets = np.asarray(joint_pos_target)
        if targets.shape != (self.num_envs, self._nj):
            raise ValueError(
                f"joint_pos_target must have shape ({self.num_envs}, {self._nj}), "
                f"got {targets.shape}"
            )
        t0 = time.perf_counter()
        if self._act_identity:
            np.copyto(self._ctrl_np, targets, casting="same_kind")
        else:
            self._ctrl_np[:, self._act_ids] = targets
        wp.copy(self._d.ctrl, self._ctrl_host)
        t1 = self._mark(t0, "upload")

        with wp.ScopedDevice(self.device):
            if self._graph is not None:
                wp.capture_launch(self._graph)
            elif wp.get_device(self.device).is_cuda and self._steps > 0:
                # The first step ran eagerly and loaded every module; capture the rest once.
                with wp.ScopedCapture() as capture:
                    self._physics()
                    self._gather_device()
                self._graph = capture.graph
                wp.capture_launch(self._graph)
            else:
                self._physics()
                self._gather_device()
        self._steps += 1
        t2 = self._mark(t1, "physics")
        self._download()
        self._mark(t2, "gather_copy")
        self._read_flags()

    def copy_body_state_w(self, out: BodyState, env_ids: np.ndarray | None = None) -> None:
        """Fill `out` in place (float32 arrays as in `BodyState`) with the current state, or
        only its rows `env_ids` (M,) (other rows untouched)."""
        self._check_open()
        if self._dirty:
            self._refresh()
        v = self._views
        fields = ("pos_w", "quat_w", "lin_vel_w", "ang_vel_w", "joint_pos", "joint_vel")
        if env_ids is None:
            for f in fields:
                np.copyto(getattr(out, f), getattr(v, f))
            return
        rows = resolve_env_ids(env_ids, self.num_envs)
        for f in fields:
            getattr(out, f)[rows] = getattr(v, f)[rows]

    def write_state(self, env_ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Set qpos (M, nq) and qvel (M, nv) of worlds `env_ids` (M,) and clear their solver
        warm start and activations; other worlds are untouched.

        Only the M rows travel to the device and only those worlds are written. Forward
        kinematics (kinematics, com_pos, com_vel) then runs on all worlds before the next
        `copy_body_state_w`: it recomputes the untouched worlds' derived quantities from their
        unchanged qpos/qvel (identical values); three small launches, cheap next to a physics
        step, and simpler than masking MuJoCo Warp's kernels.

        Raises:
            ValueError: mismatched shapes, or ids outside [0, N) (a (N,) bool mask also works).
        """
        self._check_open()
        ids = resolve_env_ids(env_ids, self.num_envs)
        m, nq, nv = ids.size, self._mjm.nq, self._mjm.nv
        qpos, qvel = np.asarray(qpos), np.asarray(qvel)
        if qpos.shape != (m, nq) or qvel.shape != (m, nv):
            raise ValueError(
                f"write_state expects qpos ({m}, {nq}) and qvel ({m}, {nv}) for {m} env ids, "
                f"got {qpos.shape} and {qvel.shape}"
            )
        if m == 0:
            return
        self._stage(
            ids, (self._qpos_host, self._qpos_dev, qpos), (self._qvel_host, self._qvel_dev, qvel)
        )
        d = self._d
        wp.launch(
            _scatter_state,
            dim=m,
            inputs=[self._ids_dev, self._qpos_dev, self._qvel_dev],
            outputs=[d.qpos, d.qvel, d.qacc_warmstart, d.act],
            device=self.device,
        )
        self.nonfinite[ids] = False
        self._dirty = True

    def add_root_velocity(
        self, env_ids: np.ndarray, lin_vel_w: np.ndarray, ang_vel_w: np.ndarray
    ) -> None:
        """Add world-frame velocity to the free joint of worlds `env_ids` (M,) (unique ids):
        linear (M, 3) m/s to qvel[0:3] (world frame), angular (M, 3) rad/s rotated into the
        body frame of the current root orientation and added to qvel[3:6] (both in float64 on
        the device, from the world's own qpos; stored as float32).

        Everything else (qpos, other velocities, warm start, activations, `nonfinite`) is kept;
        derived quantities are refreshed before the next `copy_body_state_w`, as after
        `write_state`.

        Raises:
            ValueError: no or several free joints, ids outside [0, N) or repeated, kicks not
                (M, 3) or not finite.
        """
        self._check_open()
        qadr, dadr = self._bound.require_free_joint()
        ids = resolve_env_ids(env_ids, self.num_envs, unique=True)
        lin, ang = root_velocity_kicks(lin_vel_w, ang_vel_w, ids.size)
        if ids.size == 0:
            return
        kick = np.concatenate([lin, ang], axis=1)
        self._stage(ids, (self._kick_host, self._kick_dev, kick))
        d = self._d
        wp.launch(
            _add_root_velocity,
            dim=ids.size,
            inputs=[self._ids_dev, self._kick_dev, qadr, dadr],
            outputs=[d.qpos, d.qvel],
            device=self.device,
        )
        self._dirty = True

    def model_field(self, field: str, elem_ids: np.ndarray) -> np.ndarray:
        """Nominal ``model.<field>[elem_ids]`` of the MjModel given at construction: float64
        copy, (K, *trailing).

        Raises:
            ValueError: an unsupported field or element ids out of range.
        """
        elem, _ = check_model_field(self._mjm, field, elem_ids)
        return np.array(getattr(self._mjm, field)[elem], dtype=np.float64)

    def set_model_field(
        self, field: str, env_ids: np.ndarray, elem_ids: np.ndarray, values: np.ndarray
    ) -> None:
        """Set ``model.<field>[elem_ids]`` of worlds `env_ids` (M,) to `values`
        (M, K, *trailing), stored as float32 (rounded to nearest); the field's whole (N, ...)
        table is then uploaded. MuJoCo Warp's derived constants are not recomputed.

        Raises:
            ValueError: an unsupported field, ids out of range, values of another shape or not
                finite.
        """
        self._check_open()
        elem, trailing = check_model_field(self._mjm, field, elem_ids)
        ids = resolve_env_ids(env_ids, self.num_envs)
        vals = check_field_values(field, values, ids.size, elem, trailing)
        device_table = getattr(self._m, field)
        table = self._fields.get(field)
        if table is None:
            table = self._fields[field] = device_table.numpy()  # (N, count, *trailing)
        table[ids[:, None], elem[None, :]] = vals.astype(np.float32)
        device_table.assign(table)

    def close(self) -> None:
        """Drop the device model, data and graph (memory returns to Warp's allocator);
        idempotent."""
        self._closed = True
        self._graph = None
        self._m = self._d = None

    # ------------------------------------------------------------------ internals
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("MjWarpBackend is closed")

    def _stage(self, ids: np.ndarray, *arrays: tuple[wp.array, wp.array, np.ndarray]) -> None:
        """Copy ids (M,) to `_ids_dev` and each (host staging, device, values (M, ...)) to its
        device buffer, through the (pinned) host staging buffers."""
        if self._dirty:  # an earlier write's host->device copies may still read the staging
            wp.synchronize_device(self.device)
        m = ids.size
        self._ids_host.numpy()[:m] = ids
        wp.copy(self._ids_dev, self._ids_host, count=m)
        for host, dev, values in arrays:
            flat = values.reshape(-1)
            host.numpy()[: flat.size] = flat
            wp.copy(dev, host, count=flat.size)

    def _physics(self) -> None:
        """The substep loop (captured on CUDA): clear flags, step, count self contact."""
        d = self._d
        d.overflow.zero_()
        self._self_contact.zero_()
        for _ in range(self.decimation):
            mjw.step(self._m, d)
            if self.self_contact_threshold is not None:
                wp.launch(
                    _count_self_contact,
                    dim=self.num_envs,
                    inputs=[
                        d.sensordata,
                        self._contact_cols,
                        int(self._contact_norm),
                        float(self.self_contact_threshold),
                    ],
                    outputs=[self._self_contact],
                )

    def _gather_device(self) -> None:
        """Forward kinematics of the current qpos/qvel, then the fused gather."""
        m, d = self._m, self._d
        mjw.kinematics(m, d)
        mjw.com_pos(m, d)
        mjw.com_vel(m, d)
        wp.launch(
            _gather,
            dim=(self.num_envs, self._nb + self._nj + 1),
            inputs=[
                d.xpos,
                d.xquat,
                d.cvel,
                d.subtree_com,
                d.qpos,
                d.qvel,
                self._self_contact,
                d.overflow,
                self._body_ids,
                self._root_ids,
                self._qpos_adr,
                self._dof_adr,
                QVEL_BOUND,
            ],
            outputs=[self._state_dev],
        )

    def _download(self) -> None:
        wp.copy(self._state_host, self._state_dev)
        wp.synchronize_device(self.device)
        self._dirty = False

    def _refresh(self) -> None:
        """Kinematics + gather + copy after a state write. `nonfinite` and
        `self_contact_substeps` keep the values of the last step."""
        with wp.ScopedDevice(self.device):
            self._gather_device()
        self._download()

    def _read_flags(self) -> None:
        f = self._flags
        np.copyto(self.self_contact_substeps, f[:, 0], casting="unsafe")
        np.not_equal(f[:, 1], 0.0, out=self.nonfinite)
        bits = f[:, 2].astype(np.int64) & CAPACITY_OVERFLOW
        over = bits != 0
        if over.any():
            rows = np.flatnonzero(over)
            if self.on_overflow == "terminate":
                self.nonfinite |= over
                self.overflow_count += int(rows.size)
            else:
                names = [
                    t.name for t in mjw.OverflowType if t.value & int(np.bitwise_or.reduce(bits))
                ]
                names = [nm for nm in names if nm not in ("NONE", "ALL")]
                d = self._d
                raise CapacityOverflowError(
                    f"mjwarp capacity overflow ({', '.join(names)}) in envs "
                    f"{rows[:10].tolist()}{' ...' if rows.size > 10 else ''} during the last "
                    f"step: nconmax={self.nconmax} contacts per world (shared pool "
                    f"{d.naconmax}, last substep: {int(d.nacon.numpy()[0])} contacts, "
                    f"{int(d.ncollision.numpy()[0])} broadphase pairs), njmax={self.njmax} "
                    f"constraint rows per world (last substep: up to {int(d.nefc.numpy().max())})."
                    " Build the backend with larger nconmax/njmax (backend_kwargs), or with "
                    "on_overflow='terminate'."
                )

    def _mark(self, t0: float, phase: str) -> float:
        if not self.profile:
            return t0
        wp.synchronize_device(self.device)
        t1 = time.perf_counter()
        self.phase_times[phase] += t1 - t0
        return t1
