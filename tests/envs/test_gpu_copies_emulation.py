"""The device MDP's and the mjwarp backend's copies and waits as a GPU runs them, on Warp's CPU
device (`tests/gpu_copies_emulation.py`: asynchronous copies, downloads unread until waited
for, new memory filled with garbage): their tests pass under it, with no race."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
# every test that steps the device MDP or MuJoCo Warp and its learners' adapters
UNDER_EMULATION = (
    "envs/test_device_mdp.py",
    "backends/test_mjwarp_backend.py",
    "adapters/rsl_rl/test_rsl_rl_vec_env.py",
    "adapters/skrl/test_skrl_vec_env.py",
    "adapters/torchrl/test_torchrl_env.py",
    "training/test_sb3_device.py",
)


def _run(args: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get(
        "PYTHONPATH", "")])}  # fmt: skip
    return subprocess.run([sys.executable, *args], cwd=TESTS.parent, env=env,
                          capture_output=True, text=True, timeout=1800)  # fmt: skip


def test_the_emulation_reports_a_host_buffer_written_before_its_upload_is_waited_for():
    script = """
import numpy as np, warp as wp
import gpu_copies_emulation as emu
host = wp.zeros(4, dtype=float, device="cpu", pinned=True)
dev = wp.zeros(4, dtype=float, device="cpu")
host.numpy()[:] = 1.0
wp.copy(dev, host)
host.numpy()[:] = 2.0  # before the wait: the GPU may read 2
emu.wait()
assert len(emu.RACES) == 1, emu.RACES
out = wp.zeros(4, dtype=float, device="cpu", pinned=True)
wp.copy(out, dev)
assert np.isnan(out.numpy()).all()  # not there until the wait
emu.wait()
assert (out.numpy() == 1.0).all()
print("ok")
"""
    done = _run(["-c", script])
    assert done.returncode == 0 and "ok" in done.stdout, done.stdout + done.stderr


def test_the_device_paths_pass_their_tests_with_a_gpus_asynchronous_copies():
    done = _run(["-m", "pytest", "-q", "-p", "gpu_copies_emulation", "-p", "no:cacheprovider",
                 *(str(TESTS / t) for t in UNDER_EMULATION)])  # fmt: skip
    tail = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, tail
    assert "races: 0" in done.stdout, tail
    assert " passed" in done.stdout and "failed" not in done.stdout, tail


def test_zero_rows_copy_nothing_on_a_gpu():
    """Warp's copy of count 0 copies the whole array: zero rows must not reach it."""
    script = """
import numpy as np, warp as wp
import gpu_copies_emulation as emu
from gym_motion.envs.device_copies import Copies
copies = Copies("cpu")  # the GPU branch, under the emulation
dev = wp.array(np.arange(6, dtype=np.float32).reshape(3, 2), device="cpu")
copies.upload_rows(dev, np.zeros((1, 2), np.float32))
copies.upload_rows(dev, np.zeros((0, 2), np.float32))
copies.wait(dev)
assert (dev.numpy() == [[0, 0], [2, 3], [4, 5]]).all(), dev.numpy()
assert copies.download_rows(dev, 0).shape == (0, 2)
assert not emu.RACES
print("ok")
"""
    done = _run(["-c", script])
    assert done.returncode == 0 and "ok" in done.stdout, done.stdout + done.stderr
