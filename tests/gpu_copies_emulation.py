"""pytest plugin: a GPU's asynchronous copies, emulated on Warp's CPU device, so that the CUDA
branch of the device MDP's and the mjwarp backend's copies runs on a machine without a GPU
(`tests/envs/test_gpu_copies_emulation.py` runs tests under it: ``-p gpu_copies_emulation``).

What a GPU does and Warp's CPU device does not, emulated here:

- `Copies` takes its CUDA branch (``_cuda = True``): staging buffers, copies by `wp.copy`.
- A host buffer is a Warp array made with a ``pinned=`` keyword (the staging buffers of
  `Copies`, `Block.host_bytes`, `MjWarpBackend`'s host buffers); every other array is
  "device" memory.
- Host -> device: the copy runs at once (stream order: every launch and copy here is on one
  stream), and the source's bytes are recorded; if the host changes them before the next wait
  on the stream, the GPU may have read the new ones: a race.
- Device -> host: the value is taken at once (stream order), but the destination holds 0xFF
  bytes (NaN, -1, True) until the next wait on the stream: a host read before the wait sees
  them, and a host write into it before the wait is a race.
- Waits: `wp.synchronize_stream`, `MjWarpBackend._sync`, and ``.numpy()`` of a device array
  (which copies on the array's stream and waits for it).
- `wp.empty` called from gym_motion fills its memory with 0xFF bytes (a GPU's new memory is
  garbage; the CPU's is often zero).

What it cannot show: the order of threads within a kernel, and timing against other streams
(torch's), which are checked by reading. ``GPU_COPIES_EMULATION_STRICT=0`` reports races
without failing the session.
"""

from __future__ import annotations

import os
import sys
import traceback

import numpy as np
import warp as wp

wp.config.quiet = True

HOST: dict[int, wp.array] = {}  # id -> a host (pinned) buffer
PENDING_UP: list = []  # (source, byte slice, its bytes at the copy, where it was queued)
PENDING_DOWN: list = []  # (destination, byte slice, the bytes it will hold, where queued)
RACES: list[str] = []
COUNTS = {"up": 0, "down": 0, "waits": 0, "empty_filled": 0}

_empty, _zeros, _copy, _numpy = wp.empty, wp.zeros, wp.copy, wp.array.numpy


def _bytes(arr: wp.array) -> np.ndarray:
    return np.asarray(arr).reshape(-1).view(np.uint8)


def _called_from_gym_motion() -> bool:
    return sys._getframe(2).f_globals.get("__name__", "").startswith("gym_motion")


def _tag_host(arr: wp.array, pinned: object) -> wp.array:
    if pinned is not None:
        HOST[id(arr)] = arr
    return arr


def empty(*args, **kwargs):
    pinned = kwargs.pop("pinned", None)
    arr = _tag_host(_empty(*args, **kwargs), pinned)
    if _called_from_gym_motion() and arr.device.is_cpu and arr.size:
        _bytes(arr)[:] = 0xFF
        COUNTS["empty_filled"] += 1
    return arr


def zeros(*args, **kwargs):
    pinned = kwargs.pop("pinned", None)
    return _tag_host(_zeros(*args, **kwargs), pinned)


def _region(arr: wp.array, offset: int, count: int) -> slice:
    item = wp.types.type_size_in_bytes(arr.dtype)
    return slice(offset * item, (offset + count) * item)


def copy(dest, src, dest_offset=0, src_offset=0, count=0, stream=None):
    to_host, from_host = id(dest) in HOST, id(src) in HOST
    _copy(dest, src, dest_offset, src_offset, count, stream)
    count = count or src.size  # Warp's count 0: the whole array
    where = "".join(traceback.format_stack(limit=6)[:-1])
    if from_host and not to_host:
        region = _region(src, src_offset, count)
        PENDING_UP.append((src, region, _bytes(src)[region].copy(), where))
        COUNTS["up"] += 1
    elif to_host and not from_host:
        region = _region(dest, dest_offset, count)
        held = _bytes(dest)
        PENDING_DOWN.append((dest, region, held[region].copy(), where))
        held[region] = 0xFF
        COUNTS["down"] += 1


def wait() -> None:
    """The host waits for the stream: uploads are done, downloads land."""
    COUNTS["waits"] += 1
    for src, region, sent, where in PENDING_UP:
        if not np.array_equal(_bytes(src)[region], sent):
            RACES.append(f"the host wrote a host buffer before its upload was waited for; "
                         f"the copy was queued at:\n{where}")  # fmt: skip
    # every pending download is checked before any lands: two downloads into one buffer
    # before a wait are stream-ordered (the later one wins), not a race
    for dest, region, _, where in PENDING_DOWN:
        if not np.all(_bytes(dest)[region] == 0xFF):
            RACES.append(f"the host wrote a host buffer while a download into it was pending; "
                         f"the copy was queued at:\n{where}")  # fmt: skip
    for dest, region, value, _ in PENDING_DOWN:
        _bytes(dest)[region] = value
    PENDING_UP.clear()
    PENDING_DOWN.clear()


def numpy(self, *args, **kwargs):
    if id(self) not in HOST and self.device.is_cpu and self.ptr:
        wait()  # a device array's .numpy() copies on its stream and waits for it
    return _numpy(self, *args, **kwargs)


class _Stream:
    device = None
    cuda_stream = 1


def install() -> None:
    """Swap Warp's functions and `Copies`' device test for the emulation's (process-wide)."""
    wp.empty, wp.zeros, wp.copy = empty, zeros, copy
    wp.array.numpy = numpy
    wp.synchronize_stream = lambda *args, **kwargs: wait()
    get_stream = wp.get_stream
    wp.get_stream = lambda d=None: _Stream() if wp.get_device(d).is_cpu else get_stream(d)

    from gym_motion.backends import mjwarp
    from gym_motion.envs import device_copies

    copies_init = device_copies.Copies.__init__

    def init(self, device):
        copies_init(self, device)
        self._cuda = True

    device_copies.Copies.__init__ = init
    backend_sync = mjwarp.MjWarpBackend._sync

    def sync(self):
        wait()
        backend_sync(self)

    mjwarp.MjWarpBackend._sync = sync


install()


def pytest_sessionfinish(session, exitstatus):
    print(f"\n[gpu copies emulation] {COUNTS}; races: {len(RACES)}")
    for race in dict.fromkeys(RACES):
        print("[gpu copies emulation] RACE:", race)
    if RACES and os.environ.get("GPU_COPIES_EMULATION_STRICT", "1") == "1":
        session.exitstatus = 1
