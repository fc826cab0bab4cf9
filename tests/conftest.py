"""Settings of the whole test session that must come before mujoco is first imported, and the
`gl` fixture of the rendering tests."""

import os
import sys

import pytest

# MuJoCo picks its OpenGL platform from MUJOCO_GL when it is first imported (by the first test
# module that builds an env). Without a display, offscreen rendering needs EGL, which also works
# in software without a GPU. A value set by the user wins.
if sys.platform.startswith("linux") and not (
    os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
):
    os.environ.setdefault("MUJOCO_GL", "egl")


# In CI (.ci/run sets GYM_MOTION_CI=1) every extra of ".[dev]" is installed, so a module that
# does not import is a broken install: the test fails with the ImportError instead of skipping.
# The meshes extra is not in ".[dev]" and keeps its skip.
_NOT_IN_DEV = frozenset({"mujoco_menagerie"})
if os.environ.get("GYM_MOTION_CI") == "1":
    import importlib

    _importorskip = pytest.importorskip

    def _import_or_fail(modname: str, *args, **kwargs):
        if modname in _NOT_IN_DEV:
            return _importorskip(modname, *args, **kwargs)
        return importlib.import_module(modname)

    pytest.importorskip = _import_or_fail


@pytest.fixture(scope="session")
def gl() -> None:
    """Skips the test, saying why, when no offscreen OpenGL context can be made here."""
    import mujoco

    model = mujoco.MjModel.from_xml_string("<mujoco/>")
    try:
        renderer = mujoco.Renderer(model, 8, 8)
    except Exception as exc:  # noqa: BLE001 - MuJoCo/PyOpenGL raise several kinds
        pytest.skip(
            f"offscreen rendering unavailable (MUJOCO_GL={os.environ.get('MUJOCO_GL')!r}): {exc}"
        )
    renderer.close()


@pytest.fixture
def same_eval_of_run_and_onnx(tmp_path):
    """``check(run_dir, onnx_path)``: `gym-motion eval --model run_dir` and `eval --onnx
    onnx_path` (1.5 s of the default motion each) end the same way, after the same number of
    steps, with the same MPKPE, joint error and return (rel 1e-4)."""
    import json

    from gym_motion.cli import main

    def check(run_dir, onnx_path) -> None:
        results = {}
        for flag, value in (("--model", run_dir), ("--onnx", onnx_path)):
            out = tmp_path / f"eval_{flag[2:]}.json"
            argv = ["eval", flag, str(value), "--max-seconds", "1.5", "--json", str(out)]
            assert main(argv) == 0
            result = json.loads(out.read_text())
            (clip,) = result["clips"].values()
            results[flag] = result["mean"] | {"ends": clip["terminations"]}
        a, b = results["--model"], results["--onnx"]
        assert a["ends"] == b["ends"] and a["episode_length"] == b["episode_length"]
        for key in ("mpkpe_mm", "joint_pos_rad", "return"):
            assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-6), key

    return check


@pytest.fixture(scope="session")
def reordered_g1_xml(tmp_path_factory):
    """The package's G1 MJCF with only its body order changed: the left arm's subtree moved
    after the right arm's (same names, same geometry), so the model's qpos, qvel, body and
    actuator columns of the arms follow another order than the robot's joint order."""
    import xml.etree.ElementTree as ET

    from gym_motion.robots.g1 import G1

    tree = ET.parse(G1.mjcf_path)
    torso = next(b for b in tree.iter("body") if b.get("name") == "torso_link")
    left = next(b for b in torso.findall("body") if b.get("name") == "left_shoulder_pitch_link")
    torso.remove(left)
    torso.append(left)  # after right_shoulder_pitch_link
    path = tmp_path_factory.mktemp("mjcf") / "g1_left_arm_last.xml"
    tree.write(path)
    return path
