"""Fixtures of the motion tests: the real clips of ``../shared/motions`` and small clips."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gym_motion.motion import DEFAULT_MOTION_PATH, load_clip

SHARED_MOTIONS = Path(__file__).resolve().parents[2].parent / "shared" / "motions"


@pytest.fixture(scope="session")
def motions_dir() -> Path:
    """``../shared/motions`` (real clips); skips the test when the folder is absent."""
    if not SHARED_MOTIONS.is_dir():
        pytest.skip(f"real motion clips not found at {SHARED_MOTIONS} (../shared/motions)")
    return SHARED_MOTIONS


@pytest.fixture(scope="session")
def default_clip():
    """The embedded default motion (8 s, 50 fps, 30 bodies)."""
    return load_clip(DEFAULT_MOTION_PATH)


@pytest.fixture
def legacy_npz():
    """``legacy_npz(path, clip, body_order=None, joint_order=None, **overrides) -> path``."""
    return write_legacy_npz


def write_legacy_npz(path: Path, clip, body_order=None, joint_order=None, **overrides) -> Path:
    """Write ``clip`` as a legacy npz (no names), optionally permuting bodies or joints."""
    arrays = {
        "fps": np.array([clip.fps]),
        "joint_pos": clip.joint_pos,
        "joint_vel": clip.joint_vel,
        "body_pos_w": clip.body_pos_w,
        "body_quat_w": clip.body_quat_w,
        "body_lin_vel_w": clip.body_lin_vel_w,
        "body_ang_vel_w": clip.body_ang_vel_w,
    }
    if body_order is not None:
        for k in ("body_pos_w", "body_quat_w", "body_lin_vel_w", "body_ang_vel_w"):
            arrays[k] = arrays[k][:, body_order]
    if joint_order is not None:
        for k in ("joint_pos", "joint_vel"):
            arrays[k] = arrays[k][:, joint_order]
    arrays.update(overrides)
    np.savez(path, **arrays)
    return path
