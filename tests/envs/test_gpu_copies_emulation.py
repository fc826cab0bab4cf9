"""The device MDP's and the mjwarp backend's copies and waits as a GPU runs them, on Warp's CPU
device (`tests/gpu_copies_emulation.py`: asynchronous copies, downloads unread until waited
for, new memory filled with garbage): their tests pass under it, with no race."""

from __future__ import annotations

import ast
import os
import re
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
    assert " skipped" not in done.stdout, tail  # every listed test ran under the emulation
    counts = re.search(r"\[gpu copies emulation\] (\{.*?\}); races", done.stdout)
    assert counts, tail
    counts = ast.literal_eval(counts.group(1))  # copies really went through the emulation
    assert min(counts["up"], counts["down"], counts["waits"], counts["empty_filled"]) > 100, counts


GUARDS = """
import numpy as np, warp as wp
import gpu_copies_emulation as emu
from gym_motion.envs import device_copies
from gym_motion.envs.device_copies import Block, Copies

def two_uploads_between_waits():
    copies = Copies("cpu")  # the GPU branch, under the emulation
    dev = wp.zeros(4, dtype=float, device="cpu")
    copies.upload([(dev, np.full(4, 1.0, np.float32))])
    copies.upload([(dev, np.full(4, 2.0, np.float32))])  # its pinned buffer is still read
    block = Block("cpu", [("x", (3,), wp.float32)])
    copies.upload_block(block, {"x": np.full(3, 1.0, np.float32)})
    copies.upload_block(block, {"x": np.full(3, 2.0, np.float32)})
    copies.wait(dev)
    assert (dev.numpy() == 2.0).all()

two_uploads_between_waits()
assert not emu.RACES, emu.RACES
# the same without the waits that guard the pinned buffers: the emulation sees both races
free_stage, upload_block = Copies._free_stage, Copies.upload_block
def unguarded_stage(self, arr):
    self._in_flight.discard(id(arr))
    return free_stage(self, arr)
def unguarded_block(self, block, values):
    self._in_flight.discard(id(block.dev))
    return upload_block(self, block, values)
Copies._free_stage, Copies.upload_block = unguarded_stage, unguarded_block
two_uploads_between_waits()
assert len(emu.RACES) == 2, emu.RACES
# two downloads into one buffer before a wait: stream-ordered, the later wins, no race
emu.RACES.clear()
dev = wp.array(np.full(2, 5.0, np.float32), device="cpu")
out = wp.zeros(2, dtype=float, device="cpu", pinned=True)
wp.copy(out, dev)
dev.assign(np.full(2, 6.0, np.float32))
wp.copy(out, dev)
emu.wait()
assert not emu.RACES and (out.numpy() == 6.0).all(), (emu.RACES, out.numpy())
print("ok")
"""


def test_the_waits_that_guard_pinned_buffers_are_what_keeps_two_uploads_race_free():
    """Two uploads of one array (and of one block) between waits: with `Copies`' waits no race;
    with them taken out (the second upload rewriting the pinned buffer the first still reads)
    the emulation reports both; two downloads into one buffer are not a race."""
    done = _run(["-c", GUARDS])
    assert done.returncode == 0 and "ok" in done.stdout, done.stdout + done.stderr


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
