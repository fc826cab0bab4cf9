"""Cost of launching a small parallel Numba kernel, as the managers do ~35 times per step.

    python benchmarks/numba_launch.py

Prints microseconds per launch of a trivial prange kernel over 1024 rows, back to back, with
the OpenMP settings of this process (gym_motion sets ``GOMP_SPINCOUNT=10000`` unless the user
set it). Compare ``GOMP_SPINCOUNT=0 python benchmarks/numba_launch.py`` (workers sleep at once).
"""

import os
import time

import numpy as np
from numba import njit, prange

import gym_motion  # noqa: F401  (applies the package's OpenMP defaults)


@njit(parallel=True)
def _scale(x, out):
    for i in prange(x.shape[0]):
        out[i] = 2.0 * x[i]


def main(launches: int = 2000) -> None:
    x = np.ones(1024, np.float32)
    out = np.empty_like(x)
    _scale(x, out)
    t0 = time.perf_counter()
    for _ in range(launches):
        _scale(x, out)
    us = 1e6 * (time.perf_counter() - t0) / launches
    settings = {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    print(f"{us:.1f} us per parallel launch (N=1024) with {settings}")


if __name__ == "__main__":
    main()
