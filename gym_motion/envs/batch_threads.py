"""Numba's pool sized to an env's batch: the `NumbaThreads` of its N, entered around its calls.

The env sizes one `gym_motion.backends.threads.NumbaThreads` to its N when it is built, right
after the backend, which sets the pool's ceiling (`gym_motion.envs.components`), and keeps it as
``env._numba_threads``; its ``serial`` is the kernel build the env's managers bind then.
`on_batch_threads` enters it around each `reset` and `step`: it sizes the pool of the parallel
builds, and kernels called through a `RowKernel` (resets, sampling) pick their build from it, the
one the managers bound.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

__all__ = ["on_batch_threads"]


def on_batch_threads(method: Callable) -> Callable:
    """Decorator: run an env method with Numba's pool sized to the env's batch
    (``self._numba_threads``, a `NumbaThreads`): one thread below 2048 rows, so small batches
    wake no worker."""

    @functools.wraps(method)
    def sized(self, *args, **kwargs):
        with self._numba_threads:
            return method(self, *args, **kwargs)

    return sized
