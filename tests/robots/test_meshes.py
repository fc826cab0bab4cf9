"""`gym_motion.robots.meshes`: where the G1's visual meshes come from, and the fallback to the
collision primitives when they cannot be had."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gym_motion.robots import meshes
from gym_motion.robots.g1 import G1

REFERENCE_G1 = Path(__file__).resolve().parents[3] / "shared" / "reference" / "g1"


@pytest.fixture
def menagerie(monkeypatch):
    """mujoco_menagerie with a fresh lookup, reading MENAGERIE_ROOT (no download)."""
    mm = pytest.importorskip("mujoco_menagerie", reason="mujoco-menagerie (the meshes extra)")
    monkeypatch.delenv(meshes.ENV_VAR, raising=False)
    meshes._menagerie.cache_clear()
    yield mm
    meshes._menagerie.cache_clear()


@pytest.mark.skipif(not REFERENCE_G1.is_dir(), reason=f"no G1 model with meshes at {REFERENCE_G1}")
def test_menagerie_model_dresses_the_render_scene(menagerie, monkeypatch, tmp_path):
    from gym_motion.render import RenderCfg, build_scene

    model, entry = meshes.MENAGERIE_MODELS["g1"]
    folder = tmp_path / model  # a menagerie checkout's layout: <root>/<model>/<entry file>
    shutil.copytree(REFERENCE_G1, folder)
    (folder / "g1.xml").rename(folder / menagerie.get(model).entry(entry).file)
    monkeypatch.setenv("MENAGERIE_ROOT", str(tmp_path))
    found = meshes.visual_mjcf(G1)
    assert found is not None and found.parent == folder
    scene = build_scene(G1, RenderCfg(meshes="auto"))
    assert scene.nmesh > 0


def test_menagerie_that_cannot_give_the_model_warns_and_gives_primitives(
    menagerie, monkeypatch, tmp_path
):
    monkeypatch.setenv("MENAGERIE_ROOT", str(tmp_path))  # a checkout without the G1
    with pytest.warns(UserWarning, match="drawing collision primitives"):
        assert meshes.visual_mjcf(G1) is None
    assert meshes.visual_mjcf(G1) is None  # asked once per process


def test_robots_without_a_menagerie_model_have_no_meshes(monkeypatch):
    monkeypatch.delenv(meshes.ENV_VAR, raising=False)
    assert meshes._menagerie("no_such_robot") is None
