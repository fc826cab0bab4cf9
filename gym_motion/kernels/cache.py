"""Whether the Numba kernels can be cached on disk, decided once at import.

Numba caches a compiled kernel (``cache=True``) in the first writable place of: the directory
``NUMBA_CACHE_DIR`` names, the ``__pycache__`` beside the kernel's source file, and Numba's
user-wide cache (``$XDG_CACHE_HOME/numba`` or ``~/.cache/numba``). Where none is writable (a
package on a read-only path and a HOME that cannot be written: containers under another user,
Nix, HOME unset), ``njit(cache=True)`` raises at decoration, i.e. at import. Every kernel of
the package lives in this directory, so one probe here answers for all of them: where it finds
no place, the kernels are compiled in memory at each start (a few seconds per kernel build, on
first use) and one warning names ``NUMBA_CACHE_DIR``.
"""

from __future__ import annotations

import warnings

from numba import njit

__all__ = ["CACHE"]


def _probe() -> int:  # never compiled: decorating it is enough to find a cache place
    return 0


def _can_cache() -> bool:
    try:
        njit(cache=True)(_probe)
    except RuntimeError as err:  # Numba: "cannot cache function ...: no locator available"
        if "no locator" not in str(err):
            raise
        warnings.warn(
            f"gym_motion: no writable place to cache its compiled Numba kernels ({__file__}'s "
            "__pycache__ and Numba's user cache are read-only): they are compiled in memory at "
            "each start. Set NUMBA_CACHE_DIR to a writable directory to cache them.",
            RuntimeWarning,
            stacklevel=2,
        )
        return False
    return True


CACHE: bool = _can_cache()
"""True where compiled kernels are cached on disk; the ``cache=`` of every kernel's ``njit``."""
