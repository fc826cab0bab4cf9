"""Copies between NumPy and a Warp device for `gym_motion.envs.device_mdp`: whole arrays and
row blocks through pinned host buffers (`Copies`), and arrays laid out in one device buffer so
that one copy moves them all (`Block`). Every copy is counted in bytes, as a GPU would move
them."""

from __future__ import annotations

from typing import Any

import numpy as np
import warp as wp

from gym_motion.backends.device_state import itemsize

__all__ = ["Block", "Copies"]


class Copies:
    """Whole-array copies between NumPy and a Warp device. On a GPU they pass through pinned
    host buffers, made once per device array: uploads are queued on the device's current
    stream, and a batch of downloads waits once for that stream. On Warp's CPU device they
    are plain copies. A pinned buffer is written again only once its last upload is done (the
    stream is waited for then, if no download waited since). ``moved`` counts the bytes copied
    "to_device" and "to_host" (on Warp's CPU device: those a GPU would move)."""

    def __init__(self, device: str):
        self._cuda = wp.get_device(device).is_cuda
        self._pinned: dict[int, tuple[wp.array, np.ndarray]] = {}
        self._in_flight: set[int] = set()  # device arrays whose upload may still read its buffer
        self.moved = {"to_device": 0, "to_host": 0}

    def _stage(self, arr: wp.array) -> tuple[wp.array, np.ndarray]:
        staged = self._pinned.get(id(arr))
        if staged is None:
            host = wp.empty(arr.shape, dtype=arr.dtype, device="cpu", pinned=True)
            staged = self._pinned[id(arr)] = (host, host.numpy())
        return staged

    def _free_stage(self, arr: wp.array) -> tuple[wp.array, np.ndarray]:
        """`arr`'s pinned buffer, once no upload from it is in flight."""
        if id(arr) in self._in_flight:
            self.wait(arr)
        self._in_flight.add(id(arr))
        return self._stage(arr)

    def upload(self, pairs: list[tuple[wp.array, np.ndarray]]) -> None:
        """``device[...] = host`` for each (device array, NumPy array) of equal shapes."""
        for dev, host in pairs:
            self.moved["to_device"] += dev.size * itemsize(dev)
            if not self._cuda:
                dev.assign(host)
                continue
            stage, view = self._free_stage(dev)
            np.copyto(view, host, casting="unsafe")
            wp.copy(dev, stage)

    def upload_rows(self, dev: wp.array, rows: np.ndarray) -> None:
        """``device[:M] = rows`` for an (M, ...) NumPy block into the first rows of `dev`."""
        m = rows.shape[0]
        if not m:  # Warp's copy of count 0 copies the whole array
            return
        self.moved["to_device"] += rows.size * itemsize(dev)
        if not self._cuda:
            dev.numpy()[:m] = rows  # Warp's CPU arrays are NumPy's memory
            return
        stage, view = self._free_stage(dev)
        view[:m] = rows
        wp.copy(dev, stage, count=rows.size)

    def wait(self, arr: wp.array) -> None:
        """Wait for the work queued on the current stream of `arr`'s device (on a GPU; every
        upload is then done, so each pinned buffer is free again)."""
        if self._cuda:
            wp.synchronize_stream(wp.get_stream(arr.device))
            self._in_flight.clear()

    def upload_block(self, block: Block, values: dict[str, Any]) -> None:
        """``block[name][...] = value`` for each of `values` (NumPy arrays of its shapes;
        `block`'s other arrays keep their host values), in one copy of the whole block."""
        if id(block.dev) in self._in_flight:  # its last upload may still read the host bytes
            self.wait(block.dev)
        for name, value in values.items():
            np.copyto(block.host[name], value, casting="unsafe")
        self.moved["to_device"] += block.dev.size
        wp.copy(block.dev, block.host_bytes)
        if self._cuda:
            self._in_flight.add(id(block.dev))

    def download_block(self, block: Block) -> None:
        """Copy `block`'s device buffer to its host buffer (one copy), waiting for it."""
        self.moved["to_host"] += block.dev.size
        wp.copy(block.host_bytes, block.dev)
        self.wait(block.dev)

    def download_rows(self, dev: wp.array, m: int) -> np.ndarray:
        """The first `m` rows of `dev`, copied to the host (a view of its buffer, valid until
        the next copy of `dev`)."""
        row = dev.size // dev.shape[0]
        self.moved["to_host"] += m * row * itemsize(dev)
        if not self._cuda:
            return dev.numpy()[:m]
        if not m:  # Warp's copy of count 0 copies the whole array
            return np.empty((0, *dev.shape[1:]), dtype=wp.dtype_to_numpy(dev.dtype))
        stage, view = self._stage(dev)
        wp.copy(stage, dev, count=m * row)
        self.wait(dev)
        return view[:m]

    def download(self, pairs: list[tuple[wp.array, np.ndarray]]) -> None:
        """``host[...] = device`` for each (device array, NumPy array) of equal shapes."""
        if not pairs:
            return
        self.moved["to_host"] += sum(dev.size * itemsize(dev) for dev, _ in pairs)
        if not self._cuda:
            for dev, host in pairs:
                np.copyto(host, dev.numpy(), casting="unsafe")
            return
        for dev, _ in pairs:
            wp.copy(self._stage(dev)[0], dev)
        self.wait(dev)
        for dev, host in pairs:
            np.copyto(host, self._stage(dev)[1], casting="unsafe")


class Block:
    """Device arrays laid out in one device buffer, with a host buffer of the same layout (pinned
    on a GPU): one copy brings them all to the host, where ``host[name]`` views them.

    Args:
        device: the Warp device.
        specs: (name, shape, Warp dtype) of each array, in layout order.
    """

    _ALIGN = 16

    def __init__(self, device: str, specs: list[tuple[str, tuple[int, ...], Any]]):
        offsets, total = [], 0
        for _, shape, dtype in specs:
            offsets.append(total)
            size = int(np.prod(shape)) * wp.types.type_size_in_bytes(dtype)
            total += -(-size // self._ALIGN) * self._ALIGN
        total = max(total, self._ALIGN)
        self.dev = wp.zeros(total, dtype=wp.uint8, device=device)
        self.host_bytes = wp.zeros(total, dtype=wp.uint8, device="cpu",
                                   pinned=wp.get_device(device).is_cuda)  # fmt: skip
        raw = self.host_bytes.numpy()
        self.arrays: dict[str, wp.array] = {}
        self.host: dict[str, np.ndarray] = {}
        for (name, shape, dtype), off in zip(specs, offsets, strict=True):
            view: wp.array = wp.array(ptr=self.dev.ptr + off, shape=shape, dtype=dtype,
                                      device=device)  # fmt: skip
            view._ref = self.dev  # type: ignore[assignment]  # keeps the block alive (DLPack)
            self.arrays[name] = view
            size = int(np.prod(shape)) * wp.types.type_size_in_bytes(dtype)
            np_dtype = wp.dtype_to_numpy(dtype)
            self.host[name] = raw[off : off + size].view(np_dtype).reshape(shape)
