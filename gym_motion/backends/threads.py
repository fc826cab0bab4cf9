"""One CPU thread budget for physics and Numba, decided before any pool starts.

Physics (the MuJoCo batch pool) and the Numba kernels run in alternating phases of a step, so
each gets the whole block of CPUs the process may use, and neither ever gets more threads than
that block has CPUs (oversubscription cost the seed project 2.5x).

- CPUs: ``os.sched_getaffinity(0)`` where available (Linux), else ``os.cpu_count()``.
- ``cpu_ids=[...]`` narrows the block. On Linux the physics threads are pinned to it with
  ``os.sched_setaffinity`` per thread (the calling thread too, since it works in the physics pool;
  threads it starts later, Numba's and BLAS's, inherit the block). Elsewhere a warning, no-op.
  The pin lasts while the backend is open (`CallerPin`): closing it gives the calling thread,
  and the threads that inherited the block from it, their CPUs back, and while it is open
  `available_cpus` still reports the CPUs the thread had before (another env may take others).
- Numba's pool is sized to the block with ``numba.set_num_threads`` unless the user set
  ``NUMBA_NUM_THREADS`` (their choice wins; so does ``NUMBA_THREADING_LAYER``, untouched here).
  ``numba.set_num_threads`` is per calling thread: the thread that builds the backend should be
  the one that steps the env.
- Numba's pool is sized to the batch for each env call (`NumbaThreads`, around every ``step``
  and ``reset`` of the env): one thread per `MIN_ROWS_PER_NUMBA_THREAD` rows, and below two
  threads' worth no parallel launch at all: the kernels' serial builds run on the calling thread
  (`gym_motion.kernels.dispatch`). A parallel launch wakes the pool's workers: ~2 us when they
  spin, ~70 us when they sleep, and up to whole scheduler time slices when other processes hold
  the CPUs (measured 0.2-0.7 ms a launch on a loaded 2-core machine), and even a pool of one
  thread costs ~1.4 us a launch against ~0.4 us for a serial call, while a step's ~30 kernels
  do ~3-6 us of work per row in all. The serial path needs no particular threading layer.
  Each kernel writes every row on its own and the builds compile the same code, so results
  are bit-identical across pool sizes and builds.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numba

from gym_motion.kernels.dispatch import serial_rows

__all__ = [
    "MIN_ROWS_PER_NUMBA_THREAD",
    "CallerPin",
    "NumbaThreads",
    "ThreadBudget",
    "available_cpus",
    "resolve_thread_budget",
    "apply_numba_threads",
    "numba_threads_for",
    "thread_ids",
    "pin_threads",
]

# Rows each Numba thread must get before the pool grows. A step's kernels do ~3-6 us of work per
# row in all (~0.1-0.2 us per kernel), so 1024 rows give each thread ~90 us or more per kernel,
# well above a sleeping worker's wake-up (~70 us). On a loaded 2-core machine, N = 1024 spent
# 10-21 ms per step outside physics on one thread against 28-60 ms on two (alternating windows
# in one process). From N = 2048 the pool grows by a thread per 1024 rows (N = 4096: up to 4).
MIN_ROWS_PER_NUMBA_THREAD = 1024


@dataclass(frozen=True)
class ThreadBudget:
    """How many threads each pool may use, and on which CPUs.

    Attributes:
        cpus: the CPU ids of the block (sorted).
        pinned: whether `cpus` came from a user `cpu_ids` block that will be enforced with
            affinity (Linux only).
        physics_threads: threads of the physics pool, the calling thread included; in
            [1, len(cpus)].
        numba_threads: size of Numba's pool, or None when the user's NUMBA_NUM_THREADS decides.
    """

    cpus: tuple[int, ...]
    pinned: bool
    physics_threads: int
    numba_threads: int | None


def available_cpus() -> tuple[int, ...]:
    """CPU ids this process may run on: the calling thread's affinity mask as it was before
    any open backend pinned the thread (`CallerPin`); all CPUs where there is no mask."""
    pins = _LIVE_PINS.get(threading.get_native_id())
    if pins:
        return pins[0].previous
    if hasattr(os, "sched_getaffinity"):
        return tuple(sorted(os.sched_getaffinity(0)))
    return tuple(range(os.cpu_count() or 1))


def resolve_thread_budget(
    num_threads: int | None = None, cpu_ids: Sequence[int] | None = None
) -> ThreadBudget:
    """Decide the budget: physics threads <= CPUs of the block, Numba sized to the block.

    Args:
        num_threads: physics threads wanted (None: one per CPU of the block). Clamped, with a
            warning, to the number of CPUs of the block.
        cpu_ids: CPUs to confine physics (and Numba) to; must be a subset of the process
            affinity. Ignored with a warning where affinity cannot be set.

    Raises:
        ValueError: empty `cpu_ids`, CPUs outside the process affinity, or num_threads < 1.
    """
    allowed = available_cpus()
    pinned = False
    cpus = allowed
    if cpu_ids is not None:
        block = tuple(sorted({int(c) for c in cpu_ids}))
        if not block:
            raise ValueError("cpu_ids is empty; pass None to use every CPU of the process")
        if not hasattr(os, "sched_setaffinity") or not sys.platform.startswith("linux"):
            warnings.warn(
                f"cpu_ids={list(block)} ignored: thread affinity is only supported on Linux",
                RuntimeWarning,
                stacklevel=2,
            )
        else:
            outside = sorted(set(block) - set(allowed))
            if outside:
                raise ValueError(
                    f"cpu_ids {outside} are not in this process's CPU affinity {list(allowed)}"
                )
            cpus, pinned = block, True
    if num_threads is None:
        threads = len(cpus)
    else:
        threads = int(num_threads)
        if threads < 1:
            raise ValueError(f"num_threads must be >= 1, got {num_threads}")
        if threads > len(cpus):
            warnings.warn(
                f"num_threads={threads} exceeds the {len(cpus)} CPUs available; using {len(cpus)}",
                RuntimeWarning,
                stacklevel=2,
            )
            threads = len(cpus)
    numba_threads = None if "NUMBA_NUM_THREADS" in os.environ else len(cpus)
    return ThreadBudget(
        cpus=cpus, pinned=pinned, physics_threads=threads, numba_threads=numba_threads
    )


def apply_numba_threads(budget: ThreadBudget) -> None:
    """Size Numba's pool (for the calling thread) to the budget, unless the user set it."""
    if budget.numba_threads is None:
        return
    numba.set_num_threads(max(1, min(budget.numba_threads, numba.config.NUMBA_NUM_THREADS)))


def thread_ids() -> set[int]:
    """Kernel thread ids of this process (Linux; empty set elsewhere)."""
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except OSError:
        return set()


def pin_threads(tids: set[int] | Sequence[int], cpus: Sequence[int]) -> None:
    """Set the CPU affinity of each thread id (0 = the calling thread) to `cpus` (Linux)."""
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cpus)
        except (ProcessLookupError, PermissionError):  # the thread ended meanwhile
            pass


# native thread id -> the open `CallerPin`s of that thread, oldest first
_LIVE_PINS: dict[int, list[CallerPin]] = {}


class CallerPin:
    """The calling thread pinned to `cpus` until `release` (Linux), and given back after.

    While pinned, threads the caller starts (a physics pool, Numba's and BLAS's workers, the
    user's own) inherit `cpus`. `release` (idempotent, from any thread) sets the pinned thread
    back to the block of its newest pin still open, or to the CPUs it had before its first
    pin, and every thread started since this pin whose affinity is still exactly `cpus` (the
    threads that inherited it) to those first CPUs. Pins of one thread close in any order.

    Args:
        cpus: CPU ids (non-empty; a subset of `available_cpus`, as `resolve_thread_budget`
            checks).

    Attributes:
        tid: the pinned thread's native id. cpus: the block (sorted). previous: the thread's
        CPUs before its first open pin (sorted).

    Example:
        >>> pin = CallerPin((0,))  # doctest: +SKIP
        >>> pin.release()  # the thread runs on its former CPUs again
    """

    def __init__(self, cpus: Sequence[int]) -> None:
        self.tid = threading.get_native_id()
        self.cpus = tuple(sorted({int(c) for c in cpus}))
        pins = _LIVE_PINS.setdefault(self.tid, [])
        self.previous = pins[0].previous if pins else tuple(sorted(os.sched_getaffinity(0)))
        self._started_before = thread_ids()
        os.sched_setaffinity(0, self.cpus)
        pins.append(self)

    def release(self) -> None:
        """Give the CPUs back (see the class docstring); a no-op once released."""
        pins = _LIVE_PINS.get(self.tid, [])
        if self not in pins:
            return
        pins.remove(self)
        if not pins:
            del _LIVE_PINS[self.tid]
        pin_threads({self.tid}, pins[-1].cpus if pins else self.previous)
        inherited = set()
        for tid in thread_ids() - self._started_before:
            try:
                if os.sched_getaffinity(tid) == set(self.cpus):
                    inherited.add(tid)
            except OSError:  # the thread ended meanwhile
                pass
        pin_threads(inherited - {self.tid}, self.previous)


def numba_threads_for(num_rows: int, pool: int, min_rows: int | None = None) -> int:
    """Numba threads worth using for kernels over `num_rows` rows with a pool of `pool`:
    ``clamp(num_rows // min_rows, 1, pool)``, i.e. 1 below ``2 * min_rows`` rows; `min_rows`
    defaults to the module's `MIN_ROWS_PER_NUMBA_THREAD` when called (set it before building
    an env to tune the split for an idle machine)."""
    rows = MIN_ROWS_PER_NUMBA_THREAD if min_rows is None else int(min_rows)
    return max(1, min(int(pool), int(num_rows) // rows))


class NumbaThreads:
    """Context manager: Numba kernels of the calling thread use `threads` threads inside it.

    ``NumbaThreads.for_rows(n)`` sizes it to a batch of `n` rows with the calling thread's
    current pool (`numba.get_num_threads`, i.e. the `ThreadBudget` or the user's
    ``NUMBA_NUM_THREADS``) as the ceiling. With one thread the row kernels run their serial
    builds (`gym_motion.kernels.dispatch.serial_rows`: no parallel launch at all, and Numba's
    pool is left as it is); with more, the parallel builds run on a pool of that size (set only
    when it differs). Exiting restores the previous choice, also on an exception; nesting is
    allowed.

    Example:
        >>> with NumbaThreads(1):  # doctest: +SKIP
        ...     kernel(rows, out)  # the serial build, on the calling thread
    """

    __slots__ = ("threads", "_serial", "_previous")

    def __init__(self, threads: int):
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self.threads = int(threads)
        self._serial = serial_rows(self.serial)
        self._previous: list[int | None] = []

    @property
    def serial(self) -> bool:
        """Whether row kernels run their serial build inside it (one thread): the build that
        code binding its kernels once for this batch binds (`gym_motion.kernels.dispatch`)."""
        return self.threads == 1

    @classmethod
    def for_rows(cls, num_rows: int) -> NumbaThreads:
        """Sized by `numba_threads_for` from the calling thread's current Numba pool."""
        return cls(numba_threads_for(num_rows, numba.get_num_threads()))

    def __enter__(self) -> NumbaThreads:
        self._serial.__enter__()
        previous = None
        if self.threads > 1:
            previous = numba.get_num_threads()
            threads = min(self.threads, numba.config.NUMBA_NUM_THREADS)
            if threads != previous:
                numba.set_num_threads(threads)
        self._previous.append(previous)
        return self

    def __exit__(self, *exc) -> None:
        previous = self._previous.pop()
        if previous is not None and previous != numba.get_num_threads():
            numba.set_num_threads(previous)
        self._serial.__exit__(*exc)
