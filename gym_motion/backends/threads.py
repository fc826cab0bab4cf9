"""One CPU thread budget for physics and Numba, decided before any pool starts.

Physics (the MuJoCo batch pool) and the Numba kernels run in alternating phases of a step, so
each gets the whole block of CPUs the process may use, and neither ever gets more threads than
that block has CPUs (oversubscription cost the seed project 2.5x).

- CPUs: ``os.sched_getaffinity(0)`` where available (Linux), else ``os.cpu_count()``.
- ``cpu_ids=[...]`` narrows the block. On Linux the physics threads are pinned to it with
  ``os.sched_setaffinity`` per thread (the calling thread too, since it works in the physics pool;
  threads it starts later, Numba's and BLAS's, inherit the block). Elsewhere a warning, no-op.
- Numba's pool is sized to the block with ``numba.set_num_threads`` unless the user set
  ``NUMBA_NUM_THREADS`` (their choice wins; so does ``NUMBA_THREADING_LAYER``, untouched here).
  ``numba.set_num_threads`` is per calling thread: the thread that builds the backend should be
  the one that steps the env.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "ThreadBudget",
    "available_cpus",
    "resolve_thread_budget",
    "apply_numba_threads",
    "thread_ids",
    "pin_threads",
]


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
    """CPU ids this process may run on (its affinity mask; all CPUs where there is none)."""
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
    import numba

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
