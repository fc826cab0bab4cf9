"""Row kernels compiled twice, parallel and serial, and the switch between them.

A row kernel loops over env rows with ``prange`` and computes each row on its own. Launching
Numba's parallel region costs ~1.4 us a call even with a pool of one thread (and a sleeping
worker's wake-up, ~70 us, or scheduler time slices on a loaded machine, with more), against
~0.4 us for the same kernel compiled serially; a small batch's whole step does a few
microseconds of work per kernel. So each kernel exists as both, and the calling thread picks:
`serial_rows` (entered by `gym_motion.backends.threads.NumbaThreads` for batches too small for
a second thread) makes every `row_kernel` run its serial build. Rows are independent and the
builds compile the same code without fast-math, so their results are bit-identical.

Calling a `RowKernel` costs a Python frame (~0.4 us, as much as a serial kernel call itself).
Code that calls the same kernels every step (the env's managers, the MuJoCo backend) picks the
build of its batch once, when it is built, and keeps that callable: ``bind_builds(call)[serial]``
or ``builds_of(calls)[serial]``, with ``serial`` the `NumbaThreads.serial` of its batch
(`gym_motion.backends.threads`), the same choice `serial_rows` makes inside that batch's calls.
"""

from __future__ import annotations

import functools
import threading
import types
from collections.abc import Callable

from numba import njit

from gym_motion.kernels.cache import CACHE

__all__ = [
    "RowKernel",
    "bind_builds",
    "builds_of",
    "row_kernel",
    "serial_rows",
    "serial_rows_enabled",
]

_local = threading.local()


def serial_rows_enabled() -> bool:
    """Whether row kernels called from this thread run their serial build."""
    return getattr(_local, "serial", False)


class serial_rows:  # noqa: N801 (a context manager, named as one)
    """Context manager: inside it, `row_kernel`s called from this thread run serially
    (``enabled=False``: in parallel); the previous choice is restored on exit. Nestable."""

    __slots__ = ("enabled", "_previous")

    def __init__(self, enabled: bool = True):
        self.enabled = bool(enabled)
        self._previous: list[bool] = []

    def __enter__(self) -> serial_rows:
        self._previous.append(serial_rows_enabled())
        _local.serial = self.enabled
        return self

    def __exit__(self, *exc) -> None:
        _local.serial = self._previous.pop()


class RowKernel:
    """A ``prange``-over-rows function compiled as ``parallel`` (``njit(parallel=True)``) and
    ``serial`` (``njit``, ``prange`` runs as ``range``), both cached on disk where a place is
    writable (`gym_motion.kernels.cache`). Calling it runs the build `serial_rows` selects for
    the calling thread (parallel by default)."""

    def __init__(self, func: Callable):
        self.parallel = njit(parallel=True, cache=CACHE)(func)
        # its own qualified name, so that Numba's on-disk cache (keyed by module, name and
        # signature, not by compile flags) keeps the two builds apart
        twin = types.FunctionType(
            func.__code__, func.__globals__, func.__name__, func.__defaults__, func.__closure__
        )
        twin.__qualname__ = f"{func.__qualname__}__serial"
        twin.__module__ = func.__module__
        self.serial = njit(cache=CACHE)(twin)
        self.builds = (self.parallel, self.serial)  # indexed by `serial` (False, True)
        functools.update_wrapper(self, func)

    def __call__(self, *args):
        if getattr(_local, "serial", False):
            return self.serial(*args)
        return self.parallel(*args)


def row_kernel(func: Callable) -> RowKernel:
    """Decorator: `func` (a ``prange`` loop over rows, each row computed on its own) as a
    `RowKernel`."""
    return RowKernel(func)


def bind_builds(call: Callable) -> tuple[Callable, Callable]:
    """(parallel, serial) forms of `call`, to index with a `serial` bool: a `RowKernel`'s
    two builds, or for a ``functools.partial`` of one, the partial over each build; any other
    callable twice, as it is."""
    if isinstance(call, RowKernel):
        return call.builds
    if isinstance(call, functools.partial) and isinstance(call.func, RowKernel):
        return tuple(functools.partial(b, *call.args, **call.keywords) for b in call.func.builds)
    return call, call


def builds_of(calls: list[Callable]) -> tuple[tuple[Callable, ...], tuple[Callable, ...]]:
    """`bind_builds` of each of `calls`: (all parallel forms, all serial forms), in order."""
    pairs = [bind_builds(c) for c in calls]
    return tuple(p for p, _ in pairs), tuple(s for _, s in pairs)
