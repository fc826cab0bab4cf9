"""Fork safety: gymnasium's async vector env picks a start method under which its workers live.

Numba runs gym_motion's kernels on its OpenMP threading layer, which on Linux is GNU OpenMP. A
process that has started that pool (building or stepping an env does; so does compiling a
kernel) cannot ``fork()`` a child that runs Numba's parallel kernels: Numba terminates such a
child at its first kernel ("fork() called from a process already using GNU OpenMP, this is
unsafe"). Children started by ``spawn`` or ``forkserver`` are fresh processes and start their own
pool.

``gymnasium.make_vec(id, vectorization_mode="async")`` builds one env in the parent (to read its
spaces) and then starts its workers with multiprocessing's default start method, ``fork`` on
Linux before Python 3.14. `choose_async_start_method`, called at the end of every env's
construction, recognises that dummy env and, when the AsyncVectorEnv was given no context
(``vector_kwargs={"context": ...}`` wins), multiprocessing's start method is ``fork`` and this
process runs GNU OpenMP, sets multiprocessing's start method to ``forkserver`` (Python 3.14's
default on Linux) with a warning. (Numba itself fixes the start method at ``fork`` when it starts
its pool, so a user's ``set_start_method("fork")`` cannot be told from the default; either way
the workers would die.) Scripts then need the usual ``if __name__ == "__main__":`` guard, as
with any start method but fork.
"""

from __future__ import annotations

import multiprocessing
import sys
import warnings
from types import FrameType

__all__ = ["SAFE_START_METHOD", "choose_async_start_method", "gnu_openmp_started"]

SAFE_START_METHOD = "forkserver"


def gnu_openmp_started() -> bool:
    """Whether this process has started Numba's thread pool on the GNU OpenMP layer."""
    import numba

    try:
        layer = numba.threading_layer()
    except ValueError:  # the pool has not started
        return False
    if layer != "omp":
        return False
    # a module Numba builds when its OpenMP layer loads
    from numba.np.ufunc import omppool  # type: ignore[attr-defined]

    return getattr(omppool, "openmp_vendor", "GNU") == "GNU"


def _async_init_frame(frame: FrameType | None, max_depth: int) -> FrameType | None:
    """The frame of gymnasium's ``AsyncVectorEnv.__init__`` among `frame` and its callers."""
    from gymnasium.vector import AsyncVectorEnv

    code = AsyncVectorEnv.__init__.__code__
    for _ in range(max_depth):
        if frame is None:
            return None
        if frame.f_code is code:
            return frame
        frame = frame.f_back
    return None


def choose_async_start_method(max_depth: int = 12) -> str | None:
    """Make an AsyncVectorEnv that is being built start its workers safely (module docstring).

    Call it at the end of an env's construction. It acts only when the caller is the dummy env
    of ``AsyncVectorEnv.__init__`` (within `max_depth` frames), that call has ``context=None``,
    multiprocessing's start method is (or defaults to) ``fork``, and this process runs GNU
    OpenMP (`gnu_openmp_started`).

    Returns:
        The start method it set (`SAFE_START_METHOD`), or None when it left things alone.
    """
    frame = _async_init_frame(sys._getframe(1), max_depth)
    if frame is None or frame.f_locals.get("context") is not None:
        return None
    method = multiprocessing.get_start_method(allow_none=True)
    if method is None:
        method = multiprocessing.get_all_start_methods()[0]  # the platform default
    if method != "fork" or not gnu_openmp_started():
        return None
    multiprocessing.set_start_method(SAFE_START_METHOD, force=True)
    warnings.warn(
        "gym_motion: gymnasium's AsyncVectorEnv would fork its workers from a process that runs "
        "GNU OpenMP (Numba), which kills them; multiprocessing's start method is now "
        f"{SAFE_START_METHOD!r} (Python 3.14's default on Linux). Choose one yourself with "
        "multiprocessing.set_start_method or vector_kwargs={'context': ...}.",
        RuntimeWarning,
        stacklevel=2,
    )
    return SAFE_START_METHOD
