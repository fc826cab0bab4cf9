"""`--samplers` beside a real Ray cluster from ``ray start --head`` (token authentication on, as
Ray 2.59+ makes it where ``~/.ray/auth_token`` exists): without ``--ray-address`` the run starts
its own local Ray; with it, a driver without ``RAY_AUTH_MODE=token`` is refused in one line
naming that variable. The cluster runs in a temporary HOME and temp dir and is ended by its
PIDs; no Ray process is left behind."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytest.importorskip("stable_baselines3")

RAY = Path(sys.executable).with_name("ray")


def _descendants(roots: set[int]) -> set[int]:
    """`roots` and every process below them (from /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(parents.get(pid, []))
    return found


def _cluster_pids(temp_dir: str) -> set[int]:
    """The processes of the cluster whose temp dir is `temp_dir`, and their children (workers
    and agents rename themselves ``ray::...``)."""
    out = subprocess.run(["pgrep", "-f", temp_dir], capture_output=True, text=True).stdout
    return _descendants({int(p) for p in out.split()} - {os.getpid()})


@pytest.fixture(scope="module")
def ray_head():
    """A head node (1 CPU) started by ``ray start --head`` after a local ``ray.init()`` wrote
    the auth token; yields ``(address, env)``, env a copy of the environment with that HOME."""
    if shutil.which("pgrep") is None or not RAY.is_file():
        pytest.skip("needs pgrep and Ray's `ray` command")
    home = tempfile.mkdtemp(prefix="rayhome")
    temp_dir = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's socket paths
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["HOME"] = home
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = "import ray; ray.init(num_cpus=1, include_dashboard=False); ray.shutdown()"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                   timeout=180)  # fmt: skip
    assert (Path(home) / ".ray" / "auth_token").is_file()
    started = subprocess.run(
        [str(RAY), "start", "--head", f"--port={port}", "--num-cpus=1", f"--temp-dir={temp_dir}",
         "--include-dashboard=false", "--disable-usage-stats"],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    try:
        assert started.returncode == 0, started.stderr[-2000:]
        yield f"127.0.0.1:{port}", env
    finally:
        pids = _cluster_pids(temp_dir)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 20
        while _cluster_pids(temp_dir) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = _cluster_pids(temp_dir)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(temp_dir, ignore_errors=True)
        assert not left, f"Ray processes left behind: {sorted(left)}"


def _train(env: dict[str, str], out: Path, *flags: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", "import sys; from gym_motion.cli import main; sys.exit(main())",
           "train", "--samplers", "1", "--envs-per-sampler", "2", "--num-threads", "1",
           "--total-steps", "48", "--eval-every", "0", "--no-video", "--out", str(out),
           *flags]  # fmt: skip
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)


def test_without_ray_address_a_run_starts_its_own_ray_beside_a_visible_cluster(ray_head, tmp_path):
    address, env = ray_head
    env = {**env, "RAY_ADDRESS": address}  # a cluster the driver would otherwise join
    proc = _train(env, tmp_path / "run")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Started a local Ray instance" in proc.stderr
    assert (tmp_path / "run" / "summary.json").is_file()


def test_a_token_cluster_refuses_a_driver_without_ray_auth_mode_in_one_line(ray_head, tmp_path):
    address, env = ray_head
    proc = _train(env, tmp_path / "run", "--ray-address", address)
    assert proc.returncode == 2, proc.stderr[-3000:]
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith(f"gym-motion train: error: cannot connect to the Ray cluster at "
                           f"{address}")  # fmt: skip
    assert "RAY_AUTH_MODE=token" in line and "Traceback" not in proc.stderr
    # with the variable the same driver connects (the cluster's one CPU listed)
    code = ("import ray; from gym_motion.training.samplers import init_ray; "
            f"init_ray({address!r}, 1, 0); print(ray.cluster_resources()['CPU']); "
            "ray.shutdown()")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], env={**env, "RAY_AUTH_MODE": "token"},
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "1.0"
