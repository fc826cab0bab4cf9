"""MuJoCo Warp backend: N worlds of one model stepped as one batch on a GPU (or Warp's CPU device).

One control step is a fixed launch sequence on the backend's own stream::

    ctrl upload (host -> device, once)                      # position targets (N, nu)
    clear overflow bits and self-contact counters           # \
    decimation x [mjw.step, count self contact]             #  | one graph, captured once
    kinematics + com_pos + com_vel                          #  | and replayed every step
    one fused gather kernel -> device buffer (N, S)         # /
    one device -> host copy into a (pinned) host buffer (N, S), then wait for the stream

``S = 13 B + 2 J + 3`` floats per world: body positions (B, 3), quaternions wxyz (B, 4), origin
linear velocities (B, 3) and angular velocities (B, 3), all world frame; joint positions (J,) and
velocities (J,); then the number of substeps with self contact above the threshold, a non-finite
flag and the ``OverflowType`` bits of the step. `BodyState` and the per-row flags are views of
that host buffer, so the managers stay on NumPy/Numba.

Device. ``device=None`` resolves with `default_device`: ``cuda:$LOCAL_RANK`` under torchrun (one
process per GPU), else ``cuda:0``; when Warp lists no CUDA device it falls back to Warp's CPU
device with a `MjWarpFallbackWarning` saying why (`cuda_unavailable_reason`). An explicit
``"cuda..."`` device that Warp does not list raises ValueError with the same reason. The
warp-lang 1.19 wheels on PyPI are built with CUDA 13.4 and list CUDA devices only with a driver
for CUDA 13.0 or newer (NVIDIA R580 series or newer; Warp's installation guide) and a Turing
(sm_75) or newer GPU; with an older driver Warp sees no GPU at all (CUDA 12 systems need Warp's
``+cu12`` wheel from its GitHub releases).

Graphs. The first step and the first state refresh run eagerly (they load, or on a cold cache
compile, every kernel); the second of each captures its launch sequence as a graph, replayed
afterwards (`capture_s` holds the capture times). On CUDA this needs conditional graph nodes
(MuJoCo Warp's solver loop is a ``wp.capture_while``; CUDA toolkit and driver 12.4+) and Warp's
memory pool on the device (``mjw.step`` allocates temporaries inside the capture); without them
the backend warns once (`MjWarpFallbackWarning`, reason from `graph_capture_blocker`) and
launches eagerly; so does a capture that fails (warned, with the error). On Warp's CPU device
the graph is Warp's recorded CPU graph, replayed in C++ (measured at N=4 on 2 shared cores,
step + `copy_body_state_w`: 5.6-9 ms per control step against 38-86 ms eager, depending on
the load); replay gives the same bits as eager launches. ``capture=False`` always launches
eagerly.

Streams. Every launch and copy goes to a stream the backend creates on its CUDA device, and the
host waits for that stream only (never `wp.synchronize_device`). Warp creates blocking streams
only, so CUDA orders this one after the work queued before on the device's legacy default
stream (torch's default stream) and that work after it: a torch policy on its default stream
and the physics do not overlap; one on a stream of its own is not waited for.

Row writes. `write_state` and `add_root_velocity` write only their rows on the device and mark
them; the next `copy_body_state_w` refreshes the body state of the marked rows only: forward
kinematics of all worlds (one captured graph; the unwritten worlds get the values they already
had) and a gather of the marked rows, of which only those M rows travel to the host.

Contact and constraint capacity are fixed at construction: ``njmax`` constraint rows and
``nconmax`` contacts per world. Constraint rows are per-world arrays: a world that needs more
loses only its own. Contacts are pooled: MuJoCo Warp writes every world's contacts (and first
its broadphase pairs) into one array through one atomic counter and drops whatever comes past
the end, whichever world it belongs to (``write_contact`` in ``mujoco_warp/_src/
collision_core.py``: ``cid = wp.atomic_add(nacon_out, 0, 1)`` then ``if cid < naconmax_in``;
``_add_geom_pair`` in ``collision_driver.py`` likewise for pairs). On a GPU the dropped
contacts can be any world's; on Warp's CPU device, which runs a launch's threads in order, they
were the last worlds' (measured without the reserve below: N=6 standing worlds of 28 contacts,
a pool of 35 x 6 = 210; world 2, set to 2,000 rad/s joint velocities, needed 84 in a substep,
224 in all, and world 5 kept 14 of its 28). So that one world cannot take the others'
contacts, the pool holds ``nconmax * N`` plus a reserve of the most contacts one world can need
(`contact_reserve`; 942 for the G1; MuJoCo Warp's CCD pool, ``naccdmax``, is as large). After
every substep, when the batch used more than ``nconmax * N`` contacts, each world with more
than ``nconmax`` gets the ``NARROWPHASE`` bit (it needed more than its share; no contact was
dropped). When the batch used more than the whole pool (several worlds over their share at
once), MuJoCo Warp sets the pool's bits (``BROADPHASE``, ``NARROWPHASE``) in every world, since
any may have lost contacts (its ``CCD`` bit, of the convex colliders' shared workspace, marks
each world that did not get a slot).

After every step the overflow bits of MuJoCo Warp (``Data.overflow``, (N,)) are read with the
state; every bit of ``mjw.OverflowType.ALL`` except the solver iteration limits
(`CAPACITY_OVERFLOW`) counts as an overflow: constraint rows, Jacobian non-zeros, broadphase,
narrowphase and CCD contacts, contact-sensor matches (``contact_sensor_maxmatch``), height-field
and tactile pairs, EPA horizon, active DOFs. Each bit marks the worlds whose results it made
wrong (or that needed more than their share). By default (``on_overflow="terminate"``) those
rows end like a non-finite state: their `nonfinite` flag is set and `overflow_count` counts
them; the env ends them with a counted termination and re-initialises them, and the other
worlds step on. ``on_overflow="raise"`` raises `CapacityOverflowError` instead, naming the envs
and, for each bit, what ran out and the fix (`OVERFLOW_FIXES`).

Reproducibility. Contacts and constraint rows are found with atomics, so on a GPU their order,
and float sums over them, can change from run to run: equal seeds need not give equal bits.
``deterministic=True`` turns on MuJoCo Warp's deterministic mode (``DeterminismType.ALL``:
sorted contacts, canonical constraint rows, order-invariant atomic sums), at a cost in speed.
Warp's CPU device runs each launch serially, so CPU runs repeat either way.

Per-world model fields (`MjWarpBackend.set_model_field`: ``geom_friction``, ``body_ipos``,
``body_mass``) are batched on the device from construction (``put_model(batch_sizes=...)``,
float32); a host mirror of a field's (N, ...) table is kept from its first edit, and the whole
table is uploaded after each edit.

Warp's kernel cache (``~/.cache/warp`` or ``WARP_CACHE_PATH``) keeps compiled kernels across
processes: the first process on a machine compiles MuJoCo Warp's kernels (measured on the CPU
device, 2 shared cores: 9 s at construction + 34 s at the first step), later processes load them
in about 1-2 s. CUDA compile and capture times are not measured yet
(``benchmarks/gpu_check.py`` measures them).
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any, Literal

import mujoco
import mujoco_warp as mjw
import numpy as np
import warp as wp

from gym_motion.backends.base import BodyState
from gym_motion.backends.binding import (
    MODEL_FIELDS,
    SELF_CONTACT_SENSOR,  # noqa: F401 - re-exported: gym_motion.backends.mjwarp.SELF_CONTACT_SENSOR
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
from gym_motion.backends.device_state import DeviceBodyState, itemsize
from gym_motion.backends.graphs import GraphLauncher

_SOLVER_LIMITS = mjw.OverflowType.ITERATIONS | mjw.OverflowType.LS_ITERATIONS
# Overflow bits after which the step's results are wrong (contacts, constraint rows or sensor
# matches dropped): every bit MuJoCo Warp reports except the solver iteration limits.
CAPACITY_OVERFLOW = int(mjw.OverflowType.ALL) & ~int(_SOLVER_LIMITS)

# OverflowType bit -> what ran out, and the fix. {njmax}, {nconmax}, {pool} (nconmax x N),
# {reserve}, {naconmax} (pool + reserve), {maxmatch} are filled from the backend.
OVERFLOW_FIXES: dict[mjw.OverflowType, str] = {
    mjw.OverflowType.NEFC: "constraint rows per world (njmax={njmax}): raise njmax",
    mjw.OverflowType.NJMAX_NNZ: (
        "non-zeros of the sparse constraint Jacobian (sized from njmax={njmax}): raise njmax"
    ),
    mjw.OverflowType.BROADPHASE: (
        "broadphase pairs: more than the shared contact pool holds (nconmax={nconmax} x N "
        "= {pool}, plus a reserve of {reserve}): raise nconmax"
    ),
    mjw.OverflowType.NARROWPHASE: (
        "contacts: more than a world's share of the shared contact pool (nconmax={nconmax} x N "
        "= {pool}, plus a reserve of {reserve}): raise nconmax"
    ),
    mjw.OverflowType.CCD: (
        "convex-collision contacts, pooled like contacts (naccdmax = {naconmax}): raise nconmax"
    ),
    mjw.OverflowType.CONTACT_MATCH: (
        "contacts one contact sensor may match per world (contact_sensor_maxmatch={maxmatch}; "
        "not a contact capacity, nconmax does not help): raise contact_sensor_maxmatch"
    ),
    mjw.OverflowType.HFIELD: (
        f"height-field contacts per geom pair (fixed at {mujoco.mjMAXCONPAIR} in MuJoCo Warp): "
        "lower the height field's resolution or shrink the geom that collides with it"
    ),
    mjw.OverflowType.EPA_HORIZON: (
        "the EPA horizon of a convex-convex penetration (fixed size in MuJoCo Warp): give the "
        "colliding geoms convex meshes with fewer vertices, or primitives"
    ),
    mjw.OverflowType.NVMAX: (
        "active DOFs per world (MuJoCo Warp's nvmax, which this backend leaves at nv, so no "
        "setting of it helps): terminate the rows (on_overflow='terminate') and report it"
    ),
    mjw.OverflowType.TACTILE: (
        f"geoms touching one tactile sensor (fixed at {mujoco.mjMAXCONPAIR} in MuJoCo Warp): "
        "let fewer geoms reach the sensor"
    ),
}
QVEL_BOUND = 1e4  # |qvel| beyond this (m/s or rad/s) counts as a blow-up, as in MujocoBackend
_G = mujoco.mjtGeom
# The most contacts one geom pair gives, by (geom type, geom type), lower type first: what MuJoCo
# Warp's primitive colliders write (the write_contact calls of each *_wrapper in
# mujoco_warp/_src/collision_primitive.py). Other pairs (convex, height field, SDF): at most
# mujoco.mjMAXCONPAIR.
PAIR_MAX_CONTACTS: dict[tuple[int, int], int] = {
    (int(a), int(b)): k
    for a, b, k in (
        (_G.mjGEOM_PLANE, _G.mjGEOM_SPHERE, 1),
        (_G.mjGEOM_PLANE, _G.mjGEOM_CAPSULE, 2),
        (_G.mjGEOM_PLANE, _G.mjGEOM_ELLIPSOID, 1),
        (_G.mjGEOM_PLANE, _G.mjGEOM_CYLINDER, 4),
        (_G.mjGEOM_PLANE, _G.mjGEOM_BOX, 8),
        (_G.mjGEOM_PLANE, _G.mjGEOM_MESH, 4),
        (_G.mjGEOM_SPHERE, _G.mjGEOM_SPHERE, 1),
        (_G.mjGEOM_SPHERE, _G.mjGEOM_CAPSULE, 1),
        (_G.mjGEOM_SPHERE, _G.mjGEOM_CYLINDER, 1),
        (_G.mjGEOM_SPHERE, _G.mjGEOM_BOX, 1),
        (_G.mjGEOM_CAPSULE, _G.mjGEOM_CAPSULE, 2),
        (_G.mjGEOM_CAPSULE, _G.mjGEOM_BOX, 2),
        (_G.mjGEOM_BOX, _G.mjGEOM_BOX, 8),
    )
}
_MISSING_SENSOR_HINT = (
    " (see gym_motion.backends.mujoco.add_self_contact_sensor); pass "
    "self_contact_threshold=None to disable self-contact counting"
)


class CapacityOverflowError(RuntimeError):
    """A step needed more contacts, constraint rows or sensor matches than `MjWarpBackend` was
    built with (the message says which, and what to raise)."""


class MjWarpFallbackWarning(UserWarning):
    """MuJoCo Warp runs on a slower path than the default asked for: Warp's CPU device instead
    of a GPU, or eager launches instead of a captured graph. The message says why."""


# ------------------------------------------------------------------------------- device choice


def cuda_unavailable_reason() -> str | None:
    """Why Warp lists no CUDA device on this machine, as a sentence; None when it lists one.

    The causes, in Warp's order of checks: a warp-lang build without CUDA; no NVIDIA driver;
    a driver older than the CUDA major version warp-lang was built with (warp-lang 1.19's PyPI
    wheels: CUDA 13.4, so a driver for CUDA 13.0 or newer, NVIDIA R580+); a driver that lists
    no GPU (e.g. ``CUDA_VISIBLE_DEVICES`` hides them all).
    """
    wp.init()
    if wp.get_cuda_device_count() > 0:
        return None
    toolkit, driver = wp.get_cuda_toolkit_version(), wp.get_cuda_driver_version()
    if toolkit is None:
        return f"this warp-lang {wp.__version__} build has no CUDA support"
    need = (toolkit[0], 0)  # CUDA minor-version compatibility: same major, any minor
    build = (
        f"warp-lang {wp.__version__} is built with CUDA {toolkit[0]}.{toolkit[1]} and needs a "
        f"driver for CUDA {need[0]}.{need[1]} or newer (nvidia-smi shows it as 'CUDA Version')"
    )
    if driver is None:
        return f"no NVIDIA CUDA driver was found; {build}"
    if tuple(driver) < need:
        return (
            f"the NVIDIA driver supports CUDA {driver[0]}.{driver[1]} only, and {build}: update "
            "the driver, or install a warp-lang wheel built for your CUDA version (warp-lang's "
            "GitHub releases have +cu12 wheels)"
        )
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return f"the CUDA {driver[0]}.{driver[1]} driver lists no GPU" + (
        f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
    )


def default_device() -> str:
    """The Warp device of a backend built with ``device=None``.

    ``"cuda:<LOCAL_RANK>"`` when the ``LOCAL_RANK`` environment variable is set (torchrun and
    other launchers: one process per GPU), else ``"cuda:0"``, when Warp lists CUDA devices.
    Otherwise ``"cpu"`` (Warp's CPU device, slow), with a `MjWarpFallbackWarning` that gives
    `cuda_unavailable_reason`.

    Raises:
        ValueError: ``LOCAL_RANK`` is not an integer in [0, number of CUDA devices) (the message
            says to pass the device explicitly, e.g. when ``CUDA_VISIBLE_DEVICES`` leaves each
            process one GPU).
    """
    wp.init()
    count = wp.get_cuda_device_count()
    if count == 0:
        warnings.warn(
            f"MuJoCo Warp runs on Warp's CPU device (slow): {cuda_unavailable_reason()}. "
            "Pass device='cpu' to choose the CPU device without this warning.",
            MjWarpFallbackWarning,
            stacklevel=2,
        )
        return "cpu"
    rank = os.environ.get("LOCAL_RANK")
    if rank is None:
        return "cuda:0"
    try:
        ordinal = int(rank)
    except ValueError:
        ordinal = -1
    if not 0 <= ordinal < count:
        raise ValueError(
            f"LOCAL_RANK={rank!r} names no CUDA device: Warp lists {count} (cuda:0..cuda:"
            f"{count - 1}). Pass the device explicitly (device='cuda:0' when "
            "CUDA_VISIBLE_DEVICES leaves each process one GPU)."
        )
    return f"cuda:{ordinal}"


def resolve_device(device: str | None) -> str:
    """The Warp device name for the `device` a backend was given (None: `default_device`).

    Raises:
        ValueError: a ``"cuda..."`` device while Warp lists no CUDA device (the message gives
            `cuda_unavailable_reason`) or an ordinal beyond the ones it lists; a name Warp does
            not know; ``LOCAL_RANK`` out of range (see `default_device`).
    """
    if device is None:
        return default_device()
    name = str(device)
    wp.init()
    if name.startswith("cuda"):
        count = wp.get_cuda_device_count()
        if count == 0:
            raise ValueError(
                f"device={name!r} asks for a GPU, but Warp lists no CUDA device: "
                f"{cuda_unavailable_reason()}. Pass device='cpu' to run on Warp's CPU device "
                "(slow)."
            )
        ordinal = name.partition(":")[2]
        if ordinal.isdigit() and int(ordinal) >= count:
            raise ValueError(
                f"device={name!r}: Warp lists {count} CUDA device(s), cuda:0..cuda:{count - 1}"
            )
    try:
        return wp.get_device(name).alias
    except (ValueError, RuntimeError) as exc:
        raise ValueError(f"unknown Warp device {name!r}: {exc}") from exc


def graph_capture_blocker(device: str) -> str | None:
    """Why `MjWarpBackend` cannot capture its launch sequence as a graph on `device`, as a
    sentence; None when it can.

    Warp's CPU device always can (Warp records CPU graphs and replays them in C++). A CUDA
    device needs conditional graph nodes (``mjw.step``'s solver loop is a
    ``wp.capture_while``): CUDA toolkit and driver 12.4+; and Warp's memory pool enabled on the
    device (``mjw.step`` allocates temporaries inside the capture).
    """
    dev = wp.get_device(device)
    if dev.is_cpu:
        return None
    if not wp.is_conditional_graph_supported():
        toolkit, driver = wp.get_cuda_toolkit_version(), wp.get_cuda_driver_version()
        return (
            "conditional graph nodes (MuJoCo Warp's solver loop) need CUDA toolkit and driver "
            f"12.4+; warp-lang is built with CUDA {toolkit} and the driver supports {driver}"
        )
    if not wp.is_mempool_enabled(dev):
        state = "off" if wp.is_mempool_supported(dev) else "not supported"
        return (
            f"Warp's memory pool is {state} on {dev.alias}, and mujoco_warp.step allocates "
            "inside the captured graph (wp.set_mempool_enabled(device, True) turns it on where "
            "supported)"
        )
    return None


def contact_reserve(mjm: mujoco.MjModel, m: mjw.Model) -> int:
    """The most contacts one world of `m` (MuJoCo Warp's copy of `mjm`) can write in a
    substep: over the geom pairs its broadphase may report (``m.nxn_geom_pair_filtered``:
    pairs that pass contype/conaffinity, exclusions and the parent filter, explicit pairs and
    contact-sensor pairs), the sum of each pair's most contacts (`PAIR_MAX_CONTACTS`, else
    ``mujoco.mjMAXCONPAIR``). Flex contacts are not counted. It is also at least the pairs one
    world can add to the broadphase pool (one per geom pair).

    `MjWarpBackend` adds it to the contact pool, so that one world far beyond its share cannot
    drop another world's contacts (module docstring).
    """
    pairs = m.nxn_geom_pair_filtered.numpy().reshape(-1, 2)
    types = np.sort(mjm.geom_type[pairs], axis=1)
    top = int(mujoco.mjMAXCONPAIR)
    return int(sum(PAIR_MAX_CONTACTS.get((int(a), int(b)), top) for a, b in types))


# ---------------------------------------------------------------------------------------- kernels


@wp.kernel
def _count_pool_contacts(
    nacon: wp.array(dtype=int),
    naconmax: int,
    pool: int,
    contact_worldid: wp.array(dtype=int),
    count: wp.array(dtype=int),
):
    """count[w] += 1 for each contact of world w in the substep's contact array, only when the
    substep's contacts (nacon[0]) exceed the nominal pool (nconmax x N); thread i: slot i."""
    i = wp.tid()
    used = nacon[0]
    if used <= pool or i >= wp.min(used, naconmax):
        return
    wp.atomic_add(count, contact_worldid[i], 1)


@wp.kernel
def _flag_over_share(
    nconmax: int, bit: int, count: wp.array(dtype=int), overflow: wp.array(dtype=int)
):
    """overflow[w] |= bit when world w had more than nconmax contacts counted by
    `_count_pool_contacts` (its share of a pool the batch overran); count[w] = 0 for the next
    substep."""
    w = wp.tid()
    if count[w] > nconmax:
        overflow[w] = overflow[w] | bit
    count[w] = 0


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
    worlds: wp.array(dtype=int),
    count: wp.array(dtype=int),
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
    """Fill row r of the state buffer with world worlds[r], for r < count[0]; thread (r, k):
    body k, joint k - B, flags. The step gathers every world in order (worlds = 0..N-1); a
    refresh after row writes gathers the written worlds only, into the first rows."""
    r, k = wp.tid()
    if r >= count[0]:
        return
    w = worlds[r]
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
            out[r, 3 * k + i] = p[i]
            out[r, 7 * nb + 3 * k + i] = lin[i]
            out[r, 10 * nb + 3 * k + i] = ang[i]
        for i in range(4):
            out[r, 3 * nb + 4 * k + i] = q[i]
    elif k < nb + nj:
        j = k - nb
        out[r, 13 * nb + j] = qpos[w, qpos_adr[j]]
        out[r, 13 * nb + nj + j] = qvel[w, dof_adr[j]]
    else:
        bad = wp.int32(0)
        for i in range(qpos.shape[1]):
            if not wp.isfinite(qpos[w, i]):
                bad = 1
        for i in range(qvel.shape[1]):
            if not (wp.abs(qvel[w, i]) <= qvel_bound):  # also catches NaN
                bad = 1
        base = 13 * nb + 2 * nj
        out[r, base] = float(self_contact[w])
        out[r, base + 1] = float(bad)
        out[r, base + 2] = float(overflow[w])


@wp.kernel
def _scatter_rows(
    worlds: wp.array(dtype=int),
    count: wp.array(dtype=int),
    rows: wp.array2d(dtype=float),
    state: wp.array2d(dtype=float),
):
    """Row worlds[r] of the step's state buffer = row r of a refresh's, for r < count[0]:
    the device copy stays current after row writes, as the host copy does."""
    r, k = wp.tid()
    if r < count[0]:
        state[worlds[r], k] = rows[r, k]


@wp.kernel
def _set_ctrl(targets: wp.array2d(dtype=float), act_ids: wp.array(dtype=int),
              ctrl: wp.array2d(dtype=float)):  # fmt: skip
    """ctrl[w, act_ids[j]] = targets[w, j]: position targets (N, J) into the actuators."""
    w, j = wp.tid()
    ctrl[w, act_ids[j]] = targets[w, j]


@wp.kernel
def _flag_columns(state: wp.array2d(dtype=float), base: int, flags: wp.array2d(dtype=float)):
    """flags[w] = the last 3 columns of the state buffer from `base` (self-contact substeps,
    blown up, overflow bits): what the host reads after every step."""
    w = wp.tid()
    for i in range(3):
        flags[w, i] = state[w, base + i]


@wp.kernel
def _scatter_state(
    ids: wp.array(dtype=int),
    qpos_in: wp.array(dtype=Any),
    qvel_in: wp.array(dtype=Any),
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    qacc_warmstart: wp.array2d(dtype=float),
    act: wp.array2d(dtype=float),
):
    """Write row i of the flat (M, nq) / (M, nv) inputs (float32, or float64 rounded once) to
    world ids[i]; clear its history."""
    i = wp.tid()
    w = ids[i]
    nq = qpos.shape[1]
    nv = qvel.shape[1]
    for k in range(nq):
        qpos[w, k] = float(qpos_in[i * nq + k])
    for k in range(nv):
        qvel[w, k] = float(qvel_in[i * nv + k])
        qacc_warmstart[w, k] = 0.0
    for k in range(act.shape[1]):
        act[w, k] = 0.0


for _dtype in (wp.float32, wp.float64):  # the rows' dtypes, declared once (no rebuild later)
    wp.overload(_scatter_state, {"qpos_in": wp.array(dtype=_dtype),
                                 "qvel_in": wp.array(dtype=_dtype)})  # fmt: skip


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
        device: Warp device, e.g. ``"cuda:1"`` or ``"cpu"``; None: `default_device`
            (``cuda:$LOCAL_RANK`` under torchrun, else ``cuda:0``, else the CPU with a
            `MjWarpFallbackWarning`).
        nconmax: contacts per world, a world's share of the shared pool, which holds
            ``nconmax * N`` plus `contact_reserve` (module docstring).
        njmax: constraint rows per world.
        on_overflow: ``"terminate"`` (default): the rows a capacity overflow affected (the
            worlds over their share, or whose results it made wrong) are flagged in `nonfinite`
            (the env ends them with a counted termination and re-initialises them; the others
            step on) and counted in `overflow_count`; ``"raise"``: `CapacityOverflowError`
            after the step, naming those rows.
        deterministic: MuJoCo Warp's deterministic mode (``DeterminismType.ALL``): equal inputs
            give equal bits on a GPU too, at a cost in speed. Off by default.
        contact_sensor_maxmatch: contacts one contact sensor may match per world (MuJoCo
            Warp's ``Option.contact_sensor_maxmatch``); None keeps the model's (a
            ``contact_sensor_maxmatch`` numeric in the MJCF, else 64).
        capture: None (default): capture graphs where the device allows it
            (`graph_capture_blocker`), else warn once and launch eagerly; True: capture, and
            raise where the device does not allow it; False: always launch eagerly.

    Raises:
        ValueError: num_envs, decimation, nconmax, njmax or contact_sensor_maxmatch < 1; an
            unknown on_overflow or capture value; an unavailable or unknown device (see
            `resolve_device`); capture=True where graphs cannot be captured; bad ids (see
            `gym_motion.backends.binding.bind_ids`); no ``"self_contact"`` contact sensor while
            counting is on.

    Attributes:
        num_envs, physics_dt (s), decimation: as given / from the model.
        body_ids, joint_ids: (B,), (J,) int64, the bound ids.
        device: the Warp device name, e.g. ``"cuda:0"``.
        capture: whether launch sequences are captured as graphs and replayed.
        capture_s: seconds spent capturing each graph, by name (``"step"``: substeps through
            the gather; ``"refresh"``: forward kinematics and the gather of written rows),
            filled when each is captured.
        deterministic, nconmax, njmax, contact_sensor_maxmatch: the settings in effect.
        contact_reserve: contacts the pool holds beyond ``nconmax * N``: the most one world
            can need (`contact_reserve`).
        self_contact_substeps: (N,) int32, substeps of the last step with self contact.
        nonfinite: (N,) bool, rows whose qpos became NaN/Inf or |qvel| exceeded 1e4 (or NaN)
            during the last step, or that a capacity overflow affected (``on_overflow=
            "terminate"``); such rows hold garbage until `write_state` writes them.
        overflow_count: rows flagged for capacity overflow since construction.
        transfer_bytes: bytes copied "to_device" and "to_host" since construction (on Warp's
            CPU device: those a GPU would move over the bus).
        profile: when True, `step` waits for the backend's stream between phases and adds their
            wall times (s) to `phase_times` (``upload``, ``physics``, ``gather_copy``: the copy
            of the step's flags to the host); off by default.
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
        on_overflow: Literal["terminate", "raise"] = "terminate",
        deterministic: bool = False,
        contact_sensor_maxmatch: int | None = None,
        capture: bool | None = None,
    ):
        check_backend_args(model, num_envs, decimation)
        if nconmax < 1 or njmax < 1:
            raise ValueError(f"nconmax and njmax must be >= 1, got {nconmax}, {njmax}")
        if on_overflow not in ("raise", "terminate"):
            raise ValueError(f"on_overflow must be 'raise' or 'terminate', got {on_overflow!r}")
        if contact_sensor_maxmatch is not None and not (
            isinstance(contact_sensor_maxmatch, (int, np.integer)) and contact_sensor_maxmatch >= 1
        ):
            raise ValueError(
                f"contact_sensor_maxmatch must be an integer >= 1 or None, got "
                f"{contact_sensor_maxmatch!r}"
            )
        if capture not in (None, True, False):
            raise ValueError(f"capture must be None, True or False, got {capture!r}")
        self.device = resolve_device(device)
        dev = wp.get_device(self.device)
        blocker = None if capture is False else graph_capture_blocker(self.device)
        if blocker is not None:
            if capture:
                raise ValueError(f"capture=True, but graphs cannot be captured on {dev}: {blocker}")
            warnings.warn(
                f"MuJoCo Warp on {self.device} launches every kernel eagerly, without graph "
                f"capture (slower): {blocker}",
                MjWarpFallbackWarning,
                stacklevel=2,
            )
        self._stream = wp.Stream(dev) if dev.is_cuda else None
        self._graphs = GraphLauncher(self.device, self._stream, capture is not False and
                                     blocker is None, f"MuJoCo Warp on {self.device}",
                                     MjWarpFallbackWarning)  # fmt: skip
        self._staged = False  # host->device copies from the staging buffers may be in flight
        self._refresh_staged = False  # the same for the refresh's row ids

        self.num_envs = n = int(num_envs)
        self.decimation = int(decimation)
        self.physics_dt = float(model.opt.timestep)
        self.self_contact_threshold = self_contact_threshold
        self.nconmax, self.njmax = int(nconmax), int(njmax)
        self.on_overflow = on_overflow
        self.deterministic = bool(deterministic)
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
        self._stride = s = 13 * b + 2 * j + 3
        with self._scope():
            self._m = mjw.put_model(model, batch_sizes=dict.fromkeys(MODEL_FIELDS, n))
            opt = self._m.opt
            opt.warn_overflow = 0  # reported by this class after every step instead
            opt.deterministic = int(
                mjw.DeterminismType.ALL if deterministic else mjw.DeterminismType.NONE
            )
            if contact_sensor_maxmatch is not None:
                opt.contact_sensor_maxmatch = int(contact_sensor_maxmatch)
            self.contact_sensor_maxmatch = int(opt.contact_sensor_maxmatch)
            self.contact_reserve = contact_reserve(model, self._m)
            self._d = mjw.put_data(model, data, nworld=n, nconmax=nconmax, njmax=njmax,
                                   naconmax=nconmax * n + self.contact_reserve)  # fmt: skip
            self._contact_count = wp.zeros(n, dtype=int)  # per world, in pool overruns
            self._body_ids = wp.array(bound.body_ids, dtype=int)
            self._root_ids = wp.array(bound.root_ids, dtype=int)
            self._qpos_adr = wp.array(bound.qpos_adr, dtype=int)
            self._dof_adr = wp.array(bound.dof_adr, dtype=int)
            self._contact_cols = wp.array(cols, dtype=int)
            self._act_ids_dev = wp.array(bound.actuator_ids, dtype=int)
            self._self_contact = wp.zeros(n, dtype=int)
            self._all_worlds = wp.array(np.arange(n), dtype=int)
            self._num_worlds = wp.array([n], dtype=int)
            self._state_dev = wp.zeros((n, s), dtype=float)  # row w: world w (the step)
            self._flags_dev = wp.zeros((n, 3), dtype=float)  # its flag columns, packed
            self._rows_dev = wp.zeros((n, s), dtype=float)  # row i: written world i (refresh)
            self._written_dev = wp.zeros(n, dtype=int)
            self._written_count_dev = wp.zeros(1, dtype=int)
            self._ids_dev = wp.zeros(n, dtype=int)
            self._qpos_dev = wp.zeros(n * model.nq, dtype=float)
            self._qvel_dev = wp.zeros(n * model.nv, dtype=float)
            self._kick_dev = wp.zeros(n * 6, dtype=wp.float64)
        host = dict(device="cpu", pinned=dev.is_cuda)
        self._state_host = wp.zeros((n, s), dtype=float, **host)
        self._flags_host = wp.zeros((n, 3), dtype=float, **host)
        self._rows_host = wp.zeros((n, s), dtype=float, **host)
        self._written_host = wp.zeros(n, dtype=int, **host)
        self._written_count_host = wp.zeros(1, dtype=int, **host)
        self._ctrl_host = wp.zeros((n, model.nu), dtype=float, **host)
        self._ids_host = wp.zeros(n, dtype=int, **host)
        self._qpos_host = wp.zeros(n * model.nq, dtype=float, **host)
        self._qvel_host = wp.zeros(n * model.nv, dtype=float, **host)
        self._kick_host = wp.zeros(n * 6, dtype=wp.float64, **host)
        self._ctrl_np = self._ctrl_host.numpy()
        self._ctrl_np[:] = data.ctrl
        with self._scope():
            wp.copy(self._d.ctrl, self._ctrl_host)
        self._sync()  # `step` rewrites the pinned buffer this copy reads

        # Per-world model fields: host mirrors (N, ...) float32, made on a field's first edit.
        self._fields: dict[str, np.ndarray] = {}
        self._checked_out: BodyState | None = None  # the last `out` copy_body_state_w checked
        self._ctrl_from: tuple[wp.array, wp.Launch] | None = None  # targets on the device

        # Host views of the state buffer (float32, updated in place by each device->host copy).
        state = self._state_np = self._state_host.numpy()
        self._rows_np = self._rows_host.numpy()
        self._views = BodyState(
            pos_w=state[:, : 3 * b].reshape(n, b, 3),
            quat_w=state[:, 3 * b : 7 * b].reshape(n, b, 4),
            lin_vel_w=state[:, 7 * b : 10 * b].reshape(n, b, 3),
            ang_vel_w=state[:, 10 * b : 13 * b].reshape(n, b, 3),
            joint_pos=state[:, 13 * b : 13 * b + j],
            joint_vel=state[:, 13 * b + j : 13 * b + 2 * j],
        )
        self._flags = self._flags_host.numpy()
        self.self_contact_substeps = np.zeros(n, np.int32)
        self.nonfinite = np.zeros(n, bool)
        self.transfer_bytes = {"to_device": 0, "to_host": 0}
        self._written = np.ones(n, bool)  # rows written since their last gather (all, at first)
        self._host_stale = True  # the host copy of the state lags the device's (until copied)
        self._refresh()

    # ------------------------------------------------------------------ protocol
    def step(self, joint_pos_target: np.ndarray | wp.array) -> None:
        """Advance every world `decimation` substeps holding position targets (N, J) rad: a
        NumPy array, or a float32 Warp array on the backend's device (read there, after the
        work queued on `stream`: a device MDP's targets).

        Raises:
            ValueError: targets of the wrong shape, or a Warp array of another dtype or device.
            CapacityOverflowError: with ``on_overflow="raise"``, a world overflowed a capacity
                (see `CAPACITY_OVERFLOW`); the message names the envs, what ran out and the
                setting to raise.
        """
        self._check_open()
        on_device = isinstance(joint_pos_target, wp.array)
        targets = joint_pos_target if on_device else np.asarray(joint_pos_target)
        if targets.shape != (self.num_envs, self._nj):
            raise ValueError(
                f"joint_pos_target must have shape ({self.num_envs}, {self._nj}), "
                f"got {targets.shape}"
            )
        if on_device and (targets.dtype != wp.float32 or targets.device.alias != self.device):
            got = f"{wp.types.type_repr(targets.dtype)} on {targets.device}"
            raise ValueError(f"joint_pos_target on a device must be float32 on {self.device}, "
                             f"got {got}")  # fmt: skip
        t0 = time.perf_counter()
        if not on_device:
            if self._act_identity:
                np.copyto(self._ctrl_np, targets, casting="same_kind")
            else:
                self._ctrl_np[:, self._act_ids] = targets
        with self._scope():
            if on_device:
                self._set_ctrl(targets).launch()
            else:
                self._to_device(self._d.ctrl, self._ctrl_host)
            t1 = self._mark(t0, "upload")
            self._graphs.run("step", self._step_sequence)
            t2 = self._mark(t1, "physics")
            self._to_host(self._flags_host, self._flags_dev)
            self._sync()
        self._written[:] = False
        self._host_stale = True
        self._mark(t2, "gather_copy")
        self._read_flags()

    @property
    def capture(self) -> bool:
        """Whether launch sequences are captured as graphs and replayed (see the class)."""
        return self._graphs.capture

    @property
    def capture_s(self) -> dict[str, float]:
        """Seconds spent capturing each graph, by name (see the class)."""
        return self._graphs.capture_s

    @property
    def stream(self) -> wp.Stream | None:
        """The CUDA stream every launch and copy of this backend goes to (None on the CPU):
        work queued on it after a step runs after the step's physics and gather."""
        return self._stream

    def device_body_state(self) -> DeviceBodyState:
        """The body state on the device, as views of the buffer every step gathers into
        (`DeviceBodyState`); current after `step` and, for rows written since
        (`write_state`, `add_root_velocity`), after `sync_device_state` or
        `copy_body_state_w`, for work queued on `stream` (another stream, a learner's, waits
        for `stream` first). For a device MDP that reads the state where it is."""
        return DeviceBodyState.of_rows(self._state_dev, self._nb, self._nj)

    def sync_device_state(self) -> None:
        """Bring the device body state (`device_body_state`) of the rows written since the last
        step or refresh up to date (forward kinematics, their gather); nothing to do when no
        row was written. Nothing is copied to the host after a step, until
        `copy_body_state_w` (when the host copy is current, the M rows are, as there, and
        waited for); otherwise the work is queued on `stream` and not waited for: later work on
        that stream (a device MDP's) reads it in order."""
        self._check_open()
        self._refresh()

    def copy_body_state_w(self, out: BodyState, env_ids: np.ndarray | None = None) -> None:
        """Fill `out` in place (float32 arrays as in `BodyState`) with the current state, or
        only its rows `env_ids` (M,) (other rows untouched).

        A step copies only its flags to the host; the first call after it copies the whole
        state (N rows), later ones the rows written since (M rows)."""
        self._check_open()
        if out is not self._checked_out:
            check_body_state(out, self.num_envs, len(self.body_ids), len(self.joint_ids))
            self._checked_out = out
        self._refresh()
        if self._host_stale:
            with self._scope():
                self._to_host(self._state_host, self._state_dev)
                self._sync()
            self._host_stale = False
        v = self._views
        fields = ("pos_w", "quat_w", "lin_vel_w", "ang_vel_w", "joint_pos", "joint_vel")
        if env_ids is None:
            for f in fields:
                np.copyto(getattr(out, f), getattr(v, f))
            return
        rows = resolve_env_ids(env_ids, self.num_envs)
        for f in fields:
            getattr(out, f)[rows] = getattr(v, f)[rows]

    def write_state(
        self, env_ids: np.ndarray, qpos: np.ndarray | wp.array, qvel: np.ndarray | wp.array
    ) -> None:
        """Set qpos (M, nq) and qvel (M, nv) of worlds `env_ids` (M,) and clear their solver
        warm start and activations; other worlds are untouched.

        qpos and qvel are NumPy arrays, or float32 or float64 Warp arrays on this backend's
        device whose first M nq and M nv values are the rows, row-major (a device MDP's RSI
        writes them there: nothing but the ids crosses the bus, and no finiteness check is
        made). Only those M rows are written; the next `copy_body_state_w` or
        `sync_device_state` refreshes their body state (forward kinematics).

        Raises:
            ValueError: mismatched shapes, or ids outside [0, N) or repeated (a (N,) bool mask
                also works); Warp arrays of another device or dtype, or too small.
        """
        self._check_open()
        ids = resolve_env_ids(env_ids, self.num_envs, unique=True)
        m, nq, nv = ids.size, self._mjm.nq, self._mjm.nv
        on_device = isinstance(qpos, wp.array) or isinstance(qvel, wp.array)
        if on_device:
            self._check_device_rows(qpos, m * nq, "qpos")
            self._check_device_rows(qvel, m * nv, "qvel")
        else:
            qpos, qvel = check_state_rows(qpos, qvel, m, nq, nv)
        if m == 0:
            return
        d = self._d
        with self._scope():
            if on_device:
                self._stage(ids)
                rows = (qpos.reshape(-1), qvel.reshape(-1))
            else:
                self._stage(
                    ids,
                    (self._qpos_host, self._qpos_dev, qpos),
                    (self._qvel_host, self._qvel_dev, qvel),
                )
                rows = (self._qpos_dev, self._qvel_dev)
            wp.launch(
                _scatter_state,
                dim=m,
                inputs=[self._ids_dev, *rows],
                outputs=[d.qpos, d.qvel, d.qacc_warmstart, d.act],
            )
        self.nonfinite[ids] = False
        self._written[ids] = True

    def add_root_velocity(
        self, env_ids: np.ndarray, lin_vel_w: np.ndarray, ang_vel_w: np.ndarray
    ) -> None:
        """Add world-frame velocity to the free joint of worlds `env_ids` (M,) (unique ids):
        linear (M, 3) m/s to qvel[0:3] (world frame), angular (M, 3) rad/s rotated into the
        body frame of the current root orientation and added to qvel[3:6] (both in float64 on
        the device, from the world's own qpos; stored as float32).

        Everything else (qpos, other velocities, warm start, activations, `nonfinite`) is kept;
        the body state of these rows is refreshed before the next `copy_body_state_w`, as after
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
        d = self._d
        with self._scope():
            self._stage(ids, (self._kick_host, self._kick_dev, kick))
            wp.launch(
                _add_root_velocity,
                dim=ids.size,
                inputs=[self._ids_dev, self._kick_dev, qadr, dadr],
                outputs=[d.qpos, d.qvel],
            )
        self._written[ids] = True

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
        with self._scope():
            table = self._fields.get(field)
            if table is None:
                self._sync()
                table = self._fields[field] = device_table.numpy()  # (N, count, *trailing)
            table[ids[:, None], elem[None, :]] = vals.astype(np.float32)
            device_table.assign(table)
        self.transfer_bytes["to_device"] += table.nbytes

    def close(self) -> None:
        """Wait for the backend's stream, then drop the device model, data, graphs and stream
        (memory returns to Warp's allocator); idempotent."""
        if self._closed:
            return
        self._sync()
        self._closed = True
        self._graphs.clear()
        self._m = self._d = None
        self._stream = None

    # ------------------------------------------------------------------ internals
    def _check_device_rows(self, arr: Any, size: int, name: str) -> None:
        """`write_state`'s check of a Warp array of rows: this device, float32 or float64,
        contiguous, at least `size` values."""
        if not isinstance(arr, wp.array) or arr.device.alias != self.device:
            where = getattr(arr, "device", type(arr).__name__)
            raise ValueError(f"write_state: {name} must be a Warp array on {self.device} when "
                             f"the other is, got one on {where}")  # fmt: skip
        if arr.dtype not in (wp.float32, wp.float64) or not arr.is_contiguous:
            raise ValueError(f"write_state: {name} on the device must be contiguous float32 or "
                             f"float64, got {wp.types.type_repr(arr.dtype)}")  # fmt: skip
        if arr.size < size:
            raise ValueError(f"write_state: {name} holds {arr.size} values, the rows need {size}")

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("MjWarpBackend is closed")

    def _scope(self) -> wp.ScopedStream | wp.ScopedDevice:
        """Launches and copies inside go to the backend's stream (CUDA) or the CPU device."""
        if self._stream is None:
            return wp.ScopedDevice(self.device)
        return wp.ScopedStream(self._stream, sync_enter=False)

    def _sync(self) -> None:
        """Wait for the work queued on the backend's stream (CPU device: runs synchronously)."""
        if self._stream is not None:
            wp.synchronize_stream(self._stream)
        self._staged = self._refresh_staged = False

    def _stage(self, ids: np.ndarray, *arrays: tuple[wp.array, wp.array, np.ndarray]) -> None:
        """Copy ids (M,) to `_ids_dev` and each (host staging, device, values (M, ...)) to its
        device buffer, through the (pinned) host staging buffers."""
        if self._staged:  # an earlier write's host->device copies may still read the staging
            self._sync()
        m = ids.size
        self._ids_host.numpy()[:m] = ids
        self._to_device(self._ids_dev, self._ids_host, count=m)
        for host, dev, values in arrays:
            flat = values.reshape(-1)
            host.numpy()[: flat.size] = flat
            self._to_device(dev, host, count=flat.size)
        self._staged = True

    def _step_sequence(self) -> None:
        """One control step on the device (captured as the "step" graph): clear flags, the
        substeps with self-contact counting, forward kinematics, the gather of every world."""
        d = self._d
        d.overflow.zero_()
        self._self_contact.zero_()
        for _ in range(self.decimation):
            mjw.step(self._m, d)
            self._flag_contact_share()
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
        self._kinematics()
        self._gather(self._all_worlds, self._num_worlds, self._state_dev)
        wp.launch(_flag_columns, dim=self.num_envs, inputs=[self._state_dev, self._stride - 3],
                  outputs=[self._flags_dev])  # fmt: skip

    def _flag_contact_share(self) -> None:
        """After a substep: when the batch's contacts overran ``nconmax * N`` (into the
        reserve), set the NARROWPHASE bit of each world with more than ``nconmax`` contacts."""
        d = self._d
        wp.launch(_count_pool_contacts, dim=d.naconmax,
                  inputs=[d.nacon, d.naconmax, self.nconmax * self.num_envs, d.contact.worldid],
                  outputs=[self._contact_count])  # fmt: skip
        wp.launch(_flag_over_share, dim=self.num_envs,
                  inputs=[self.nconmax, int(mjw.OverflowType.NARROWPHASE)],
                  outputs=[self._contact_count, d.overflow])  # fmt: skip

    def _refresh_sequence(self) -> None:
        """Body state after row writes (captured as the "refresh" graph): forward kinematics
        of every world, the gather of the written worlds into the first rows, and their
        scatter into the step's buffer (which `device_body_state` views)."""
        self._kinematics()
        self._gather(self._written_dev, self._written_count_dev, self._rows_dev)
        wp.launch(
            _scatter_rows,
            dim=(self.num_envs, self._stride),
            inputs=[self._written_dev, self._written_count_dev, self._rows_dev],
            outputs=[self._state_dev],
        )

    def _kinematics(self) -> None:
        """Body poses and velocities (xpos, xquat, subtree_com, cvel) of the current qpos/qvel."""
        m, d = self._m, self._d
        mjw.kinematics(m, d)
        mjw.com_pos(m, d)
        mjw.com_vel(m, d)

    def _gather(self, worlds: wp.array, count: wp.array, out: wp.array) -> None:
        d = self._d
        wp.launch(
            _gather,
            dim=(self.num_envs, self._nb + self._nj + 1),
            inputs=[
                worlds,
                count,
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
            outputs=[out],
        )

    def _refresh(self) -> None:
        """Bring the state of the written rows up to date: upload their ids, run the "refresh"
        sequence (which scatters them into the device's state buffer) and, when the host copy
        is otherwise current, copy those M rows back into it (the only case that waits for the
        stream). `nonfinite` and `self_contact_substeps` keep the values of the last step."""
        rows = np.flatnonzero(self._written)
        m = rows.size
        if m == 0:
            return
        if self._refresh_staged:  # an earlier refresh's copies may still read its staging
            self._sync()
        self._written_host.numpy()[:m] = rows
        self._written_count_host.numpy()[0] = m
        with self._scope():
            self._to_device(self._written_dev, self._written_host, count=m)
            self._to_device(self._written_count_dev, self._written_count_host)
            self._graphs.run("refresh", self._refresh_sequence)
            self._refresh_staged = True
            if not self._host_stale:
                self._to_host(self._rows_host, self._rows_dev, count=m * self._stride)
                self._sync()  # the host copy: nothing to wait for when only the device reads
        if not self._host_stale:
            self._state_np[rows] = self._rows_np[:m]
        self._written[:] = False

    def _set_ctrl(self, targets: wp.array) -> wp.Launch:
        """The launch that writes `targets` (N, J) into the controls, bound once per targets
        array (a device MDP passes the same one every step)."""
        if self._ctrl_from is None or self._ctrl_from[0] is not targets:
            launch = wp.launch(_set_ctrl, dim=targets.shape, inputs=[targets, self._act_ids_dev],
                               outputs=[self._d.ctrl], record_cmd=True)  # fmt: skip
            self._ctrl_from = (targets, launch)
        return self._ctrl_from[1]

    def _to_device(self, dev: wp.array, host: wp.array, count: int | None = None) -> None:
        """``wp.copy`` host -> device of `count` elements (all when None), counted in
        `transfer_bytes`."""
        count = host.size if count is None else count
        wp.copy(dev, host, count=count)
        self.transfer_bytes["to_device"] += count * itemsize(host)

    def _to_host(self, host: wp.array, dev: wp.array, count: int | None = None) -> None:
        """``wp.copy`` device -> host, counted in `transfer_bytes`."""
        count = dev.size if count is None else count
        wp.copy(host, dev, count=count)
        self.transfer_bytes["to_host"] += count * itemsize(dev)

    def _read_flags(self) -> None:
        f = self._flags
        np.copyto(self.self_contact_substeps, f[:, 0], casting="unsafe")
        np.not_equal(f[:, 1], 0.0, out=self.nonfinite)
        bits = f[:, 2].astype(np.int64) & CAPACITY_OVERFLOW
        over = bits != 0
        if not over.any():
            return
        rows = np.flatnonzero(over)
        if self.on_overflow == "terminate":
            self.nonfinite |= over
            self.overflow_count += int(rows.size)
            return
        raise CapacityOverflowError(self._overflow_message(rows, int(np.bitwise_or.reduce(bits))))

    def _overflow_message(self, rows: np.ndarray, bits: int) -> str:
        """What overflowed (OverflowType `bits`) in envs `rows`, and the fix of each bit."""
        d = self._d
        with self._scope():
            nacon, ncollision = int(d.nacon.numpy()[0]), int(d.ncollision.numpy()[0])
            nefc = int(d.nefc.numpy().max())
            worlds = d.contact.worldid.numpy()[: min(nacon, d.naconmax)]
        per_world = np.bincount(worlds, minlength=self.num_envs)[rows[:10]].tolist()
        values = dict(
            njmax=self.njmax,
            nconmax=self.nconmax,
            pool=self.nconmax * self.num_envs,
            reserve=self.contact_reserve,
            naconmax=d.naconmax,
            maxmatch=self.contact_sensor_maxmatch,
        )
        causes = []
        for flag in mjw.OverflowType:
            if flag.value & bits and not flag.value & (flag.value - 1):  # one bit, set
                fix = OVERFLOW_FIXES.get(flag, f"see mujoco_warp.OverflowType.{flag.name}")
                causes.append(f"{flag.name}: {fix.format(**values)}")
        more = " ..." if rows.size > 10 else ""
        return (
            f"mjwarp capacity overflow in envs {rows[:10].tolist()}{more} during the last step "
            f"(last substep: {nacon} contacts, of which these envs' {per_world}; "
            f"{ncollision} broadphase pairs; up to {nefc} constraint rows per world). "
            f"{'; '.join(causes)}. Pass the larger setting when building the backend "
            "(backend_kwargs or BackendCfg), or on_overflow='terminate' (the default) to end "
            "the affected envs instead."
        )

    def _mark(self, t0: float, phase: str) -> float:
        if not self.profile:
            return t0
        self._sync()
        t1 = time.perf_counter()
        self.phase_times[phase] += t1 - t0
        return t1
