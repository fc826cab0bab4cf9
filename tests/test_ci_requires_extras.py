"""In CI (`.ci/run` sets GYM_MOTION_CI=1) a module a test needs and ``.[dev]`` installs must
import: tests/conftest.py turns `pytest.importorskip` into a plain import there, so a broken
install fails instead of passing as a skip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).with_name("conftest.py")

PROBE = f"""
import importlib.util, pytest
spec = importlib.util.spec_from_file_location("conftest", {str(CONFTEST)!r})
spec.loader.exec_module(importlib.util.module_from_spec(spec))
try:
    pytest.importorskip("gym_motion_no_such_module")
except pytest.skip.Exception:
    print("skipped")
except ModuleNotFoundError:
    print("failed")
"""


def probe(ci: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != "GYM_MOTION_CI"}
    if ci:
        env["GYM_MOTION_CI"] = "1"
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip
    return done.stdout.strip()


def test_a_missing_module_fails_in_ci_and_skips_elsewhere():
    assert probe(ci=True) == "failed"
    assert probe(ci=False) == "skipped"


def test_ci_sets_the_flag_and_reports_a_skipped_browser_test():
    script = (Path(__file__).parents[1] / ".ci" / "run").read_text()
    assert "export GYM_MOTION_CI=1" in script
    assert "tests/test_viewer_browser.py was SKIPPED" in script
