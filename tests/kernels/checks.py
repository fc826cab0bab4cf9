"""Shared helpers for the kernel tests: tolerances, random states, unmutated-input calls."""

from __future__ import annotations

import numpy as np

from . import oracle as o

# Agreement expected between a float32 kernel and the float64 oracle: a few float32 ulps.
F32 = {"rtol": 2e-6, "atol": 2e-7}
SIZES = (1, 7, 257)
N_BODIES = 14  # docs/task.md section 4: 14 tracked bodies
ANCHOR = 7  # torso_link
ROOT = 0  # pelvis
SUBSET = np.array([1, 3, 4, 9, 13], np.int64)  # proper, non-contiguous body subset


def rng_for(n: int, salt: int = 0) -> np.random.Generator:
    return np.random.default_rng(1000 * n + salt)


def f32(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


def call_unmutated(kernel, *args, written: tuple[int, ...] = (-1,)):
    """Call ``kernel(*args)`` and assert every array argument not in ``written`` (positions,
    negative allowed) is bitwise unchanged afterwards."""
    n = len(args)
    out_pos = {w % n for w in written}
    before = {
        k: (a.copy(), a.tobytes())
        for k, a in enumerate(args)
        if isinstance(a, np.ndarray) and k not in out_pos
    }
    kernel(*args)
    for k, (copy, raw) in before.items():
        a = args[k]
        assert a.shape == copy.shape and a.dtype == copy.dtype, f"argument {k} changed type"
        assert a.tobytes() == raw, f"{kernel.__name__} mutated input argument {k}"


def perturb_quat(rng: np.random.Generator, q: np.ndarray, max_angle: float) -> np.ndarray:
    """q rotated by a random axis-angle of at most ``max_angle`` rad (float32, wxyz)."""
    axis = rng.standard_normal((*q.shape[:-1], 3))
    axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
    ang = rng.uniform(0.0, max_angle, q.shape[:-1])[..., None]
    d = np.concatenate([np.cos(0.5 * ang), np.sin(0.5 * ang) * axis], -1)
    return f32(o.normalize(o.quat_mul(d, q)))
