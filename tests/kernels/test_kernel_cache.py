"""A read-only install: the package imports and runs its kernels whether or not Numba can cache
them on disk (gym_motion/kernels/cache.py)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import gym_motion

PACKAGE = Path(gym_motion.__file__).parent

# the child imports the copy, warns as it would for a user, and runs one tiny kernel
CHILD = """
import warnings
warnings.simplefilter("always")
import gym_motion, gym_motion.envs
from gym_motion.kernels import cache, quat
print(gym_motion.__file__)
print(cache.CACHE)
print(quat.quat_mul(0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0))
"""

# root writes through any mode bits: drop the capabilities that let it (Linux), then exec
AS_UNPRIVILEGED = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
    if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
        sys.exit(77)
os.execv(sys.executable, [sys.executable, "-c", sys.argv[1]])
"""


def _set_writable(root: Path, writable: bool) -> None:
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode
        bits = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
        path.chmod(mode | stat.S_IWUSR if writable else mode & ~bits)


@pytest.fixture()
def read_only_install(tmp_path):
    """A copy of the package and a HOME, neither writable; yields (site dir, HOME)."""
    site, home = tmp_path / "site", tmp_path / "home"
    shutil.copytree(PACKAGE, site / "gym_motion", ignore=shutil.ignore_patterns("__pycache__"))
    home.mkdir()
    _set_writable(site, False)
    _set_writable(home, False)
    yield site, home
    _set_writable(site, True)
    _set_writable(home, True)


def _run(site: Path, home: Path, **env_vars: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.pop("XDG_CACHE_HOME", None)
    env.update(PYTHONPATH=str(site), HOME=str(home), PYTHONDONTWRITEBYTECODE="1", **env_vars)
    if os.geteuid() == 0:
        cmd = [sys.executable, "-c", AS_UNPRIVILEGED, CHILD]
    else:
        cmd = [sys.executable, "-c", CHILD]
    result = subprocess.run(cmd, env=env, cwd=site, capture_output=True, text=True, timeout=600)
    if result.returncode == 77:
        pytest.skip("running as root without the right to drop CAP_DAC_OVERRIDE")
    assert result.returncode == 0, result.stderr
    return result


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mode bits and prctl: Linux")
def test_a_read_only_install_imports_and_compiles_in_memory_with_one_warning(read_only_install):
    site, home = read_only_install
    result = _run(site, home)
    path, cache, product = result.stdout.split("\n")[:3]
    assert Path(path).is_relative_to(site)  # the read-only copy, not the checkout
    assert cache == "False"
    assert product == "(0.0, 0.0, 0.0, 1.0)"  # i * j = k: the kernel compiled and ran
    assert result.stderr.count("NUMBA_CACHE_DIR") == 1, result.stderr
    assert "RuntimeWarning" in result.stderr
    assert not list(site.rglob("*.nbi"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mode bits and prctl: Linux")
def test_a_read_only_install_caches_in_numba_cache_dir_without_warning(read_only_install, tmp_path):
    site, home = read_only_install
    cache_dir = tmp_path / "numba-cache"
    result = _run(site, home, NUMBA_CACHE_DIR=str(cache_dir))
    assert result.stdout.split("\n")[1] == "True"
    assert "NUMBA_CACHE_DIR" not in result.stderr, result.stderr
    assert [p.name for p in cache_dir.rglob("quat.quat_mul-*.nbi")]  # the kernel's index
