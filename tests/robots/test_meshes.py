"""`gym_motion.robots.meshes`: the G1's shipped visual meshes (decimated, offline), the full
Menagerie set only when asked, with its network fetch bounded and a failure remembered."""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
import sys
import time
import types
from pathlib import Path

import mujoco
import numpy as np
import pytest

from gym_motion.render import RenderCfg, TrackingRenderer, build_scene
from gym_motion.robots import meshes
from gym_motion.robots.g1 import G1

REFERENCE_G1 = Path(__file__).resolve().parents[3] / "shared" / "reference" / "g1"
needs_reference = pytest.mark.skipif(
    not (REFERENCE_G1 / "g1.xml").is_file(), reason=f"no G1 model with meshes at {REFERENCE_G1}"
)
SHIPPED = meshes.SHIPPED["g1"]
MESH_DIR = SHIPPED.parent / "meshes"
SOURCES = json.loads((MESH_DIR / "sources.json").read_text())["meshes"]
MESH = mujoco.mjtGeom.mjGEOM_MESH


@pytest.fixture(autouse=True)
def fresh_lookup(monkeypatch, tmp_path):
    """Each test: GYM_MOTION_MESHES unset, no remembered Menagerie lookup, the user cache (and
    its failure marker) in a fresh folder, no proxy between the tests and 127.0.0.1."""
    monkeypatch.delenv(meshes.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, "*")
    meshes._menagerie.cache_clear()
    yield
    meshes._menagerie.cache_clear()


def obj_vertices(path: Path) -> np.ndarray:
    rows = [line.split()[1:] for line in path.read_text().splitlines() if line.startswith("v ")]
    return np.array(rows, np.float64)


def stl_vertices(path: Path) -> np.ndarray:
    data = path.read_bytes()
    count = int(np.frombuffer(data, np.uint32, 1, 80)[0])
    record = np.dtype([("normal", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")])
    return np.frombuffer(data, record, count, 84)["v"].reshape(-1, 3).astype(np.float64)


def visual_geoms(spec) -> dict[str, list]:
    """Body name -> its mesh geoms as (mesh name, pos, quat, material), in MJCF order."""
    out: dict[str, list] = {}
    for g in spec.geoms:
        if g.type == MESH:
            out.setdefault(g.parent.name, []).append((g.meshname, list(g.pos),
                                                      list(g.quat), g.material))  # fmt: skip
    return out


# ---------------------------------------------------------------- the shipped set


def test_shipped_meshes_are_the_default_with_no_network(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco_menagerie", None)  # unimportable

    def no_network(*args, **kwargs):
        raise AssertionError("the network was used")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    found = meshes.visual_mjcf(G1)
    assert found == SHIPPED and found.is_file()
    assert Path(meshes.__file__).parent in found.parents  # inside the package
    scene = build_scene(G1, RenderCfg(meshes="auto"))
    assert scene.nmesh == 2 * len(SOURCES)  # the robot's and the ghost's


def test_shipped_mjcf_compiles_and_dresses_every_body_of_the_robot():
    model = mujoco.MjModel.from_xml_path(str(SHIPPED))
    assert model.nmesh == len(SOURCES) == 35 and model.nmeshface == sum(
        s["faces"] for s in SOURCES.values()
    )
    assert np.all(model.geom_type == MESH)
    assert not np.any(model.geom_contype | model.geom_conaffinity)
    assert model.njnt == 0  # pictures only
    dressed = set(visual_geoms(mujoco.MjSpec.from_file(str(SHIPPED))))
    assert dressed == set(G1.body_names)  # every body of the G1 has its meshes here
    scene = build_scene(G1, RenderCfg(meshes=str(SHIPPED), ghost=False))
    robot = scene.geom_bodyid > 0
    assert np.all(scene.geom_type[robot] == MESH)


@needs_reference
def test_shipped_geoms_sit_where_the_reference_puts_them():
    ours = visual_geoms(mujoco.MjSpec.from_file(str(SHIPPED)))
    theirs = visual_geoms(mujoco.MjSpec.from_file(str(REFERENCE_G1 / "g1.xml")))
    assert ours.keys() == theirs.keys()  # each body with a mesh in the reference has one here
    for body, geoms in theirs.items():
        assert [g[0] for g in ours[body]] == [g[0] for g in geoms], body
        for a, b in zip(ours[body], geoms, strict=True):
            np.testing.assert_allclose(a[1], b[1], atol=1e-9, err_msg=body)  # pos
            np.testing.assert_allclose(a[2], b[2], atol=1e-7, err_msg=body)  # quat
            assert a[3] == b[3], body  # material
    bodies = {b.name: b for b in mujoco.MjSpec.from_file(str(SHIPPED)).bodies}
    for body in mujoco.MjSpec.from_file(str(REFERENCE_G1 / "g1.xml")).bodies:
        np.testing.assert_allclose(bodies[body.name].pos, body.pos, atol=1e-9)
        np.testing.assert_allclose(bodies[body.name].quat, body.quat, atol=1e-7)


def test_decimated_meshes_keep_the_full_meshes_bounding_boxes():
    files = {p.name for p in MESH_DIR.iterdir()}
    assert {"LICENSE", "README.md"} <= files
    assert "YuShu" in (MESH_DIR / "LICENSE").read_text()
    assert files - {"LICENSE", "README.md", "sources.json"} == {s["file"] for s in SOURCES.values()}
    assert sum(p.stat().st_size for p in MESH_DIR.iterdir()) < 2.2e6  # about 2 MB
    for name, s in SOURCES.items():
        verts = obj_vertices(MESH_DIR / s["file"])
        bounds = np.array([verts.min(0), verts.max(0)])
        np.testing.assert_allclose(bounds, s["bounds"], atol=1e-6, err_msg=name)
        # within 1.5 mm of the full mesh on every side (measured: 1.1 mm at most, the torso)
        np.testing.assert_allclose(bounds, s["source_bounds"], atol=1.5e-3, err_msg=name)
        assert s["faces"] < s["source_faces"] or s["faces"] <= 500


@needs_reference
def test_recorded_sources_are_the_reference_stl_files():
    for name, s in SOURCES.items():
        stl = REFERENCE_G1 / "assets" / s["source"]
        assert hashlib.sha256(stl.read_bytes()).hexdigest() == s["source_sha256"], name
        verts = stl_vertices(stl)
        np.testing.assert_allclose([verts.min(0), verts.max(0)], s["source_bounds"], atol=1e-6)


def robot_mask(frame: np.ndarray) -> np.ndarray:
    r, g, b = (frame[..., c].astype(np.int32) for c in range(3))
    return (r > g + 40) & (r > b + 60)  # the robot's orange (RenderCfg.robot_rgba)


def frame(meshes_: str) -> np.ndarray:
    pose = np.r_[0.0, 0.0, 0.8, 1.0, 0.0, 0.0, 0.0, G1.default_joint_pos]
    r = TrackingRenderer(G1, RenderCfg(width=120, height=160, distance=2.2, ghost=False,
                                       meshes=meshes_))  # fmt: skip
    try:
        return r.render(pose)
    finally:
        r.close()


def test_a_frame_with_the_shipped_meshes_is_not_one_with_primitives(gl):
    dressed, plain = robot_mask(frame("auto")), robot_mask(frame("off"))
    assert dressed.sum() > 500 and plain.sum() > 500
    rows, cols = np.nonzero(dressed)
    rows_p, cols_p = np.nonzero(plain)
    assert abs(rows.mean() - rows_p.mean()) < 6 and abs(cols.mean() - cols_p.mean()) < 6
    assert np.count_nonzero(dressed ^ plain) > 0.1 * plain.sum()  # another shape


@needs_reference
def test_the_shipped_silhouette_is_the_full_meshes(gl):
    ours, full = robot_mask(frame(str(SHIPPED))), robot_mask(frame(str(REFERENCE_G1 / "g1.xml")))
    assert (ours & full).sum() / (ours | full).sum() > 0.95  # measured 0.99 at 480x640


# ---------------------------------------------------------------- Menagerie, when asked


def fake_menagerie(base_url: str, cached: bool = False, root=None, xml=None):
    """A stand-in for the mujoco_menagerie package (its public names that meshes.py uses);
    `calls` counts the fetches (`Robot.xml` of a model not cached)."""
    calls = []

    class Cache:
        def __init__(self):
            self.root, self.base_url = root, base_url

        def is_cached(self, robot):
            return cached

    class Robot:
        asset = "unitree_g1.tar.xz"

        def xml(self, entry, cache=None):
            calls.append(entry)
            if xml is None:
                raise AssertionError("fetched")
            return xml

    module = types.ModuleType("mujoco_menagerie")
    module.Cache, module.get, module.calls = Cache, lambda name: Robot(), calls
    return module


@pytest.fixture
def silent_server():
    """An address on 127.0.0.1 that accepts connections (the kernel's backlog) and never
    answers, like a proxy that hangs."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield f"http://127.0.0.1:{server.getsockname()[1]}/assets"
    server.close()


def test_menagerie_is_not_asked_unless_chosen(monkeypatch):
    fake = fake_menagerie("http://127.0.0.1:9/none")
    monkeypatch.setitem(sys.modules, "mujoco_menagerie", fake)
    assert meshes.visual_mjcf(G1) == SHIPPED
    monkeypatch.setenv(meshes.ENV_VAR, "off")
    assert meshes.visual_mjcf(G1) is None
    assert fake.calls == []


def test_a_cached_menagerie_model_is_read_without_the_network(monkeypatch, tmp_path):
    xml = tmp_path / "g1_mjlab.xml"
    fake = fake_menagerie("http://127.0.0.1:9/none", cached=True, xml=xml)
    monkeypatch.setitem(sys.modules, "mujoco_menagerie", fake)
    monkeypatch.setattr(meshes, "_probe", lambda *a: pytest.fail("probed the network"))
    monkeypatch.setenv(meshes.ENV_VAR, meshes.MENAGERIE)
    assert meshes.visual_mjcf(G1) == xml
    assert fake.calls == [meshes.MENAGERIE_MODELS["g1"][1]]


def test_a_server_that_never_answers_costs_the_timeout_once(monkeypatch, silent_server):
    fake = fake_menagerie(silent_server)
    monkeypatch.setitem(sys.modules, "mujoco_menagerie", fake)
    monkeypatch.setattr(meshes, "FETCH_TIMEOUT_S", 0.5)
    probes = []
    probe = meshes._probe
    monkeypatch.setattr(meshes, "_probe", lambda *a: probes.append(a) or probe(*a))
    monkeypatch.setenv(meshes.ENV_VAR, meshes.MENAGERIE)
    start = time.perf_counter()
    with pytest.warns(UserWarning, match="no answer in 0.5 s; drawing the shipped meshes"):
        assert meshes.visual_mjcf(G1) == SHIPPED
    assert time.perf_counter() - start < 3.0
    assert fake.calls == [] and len(probes) == 1
    assert meshes.visual_mjcf(G1) == SHIPPED  # remembered in the process: no warning, no probe
    marker = meshes.failure_marker()
    assert marker.read_text().splitlines()[0] == f"{silent_server}/unitree_g1.tar.xz"
    meshes._menagerie.cache_clear()  # another process, within RETRY_AFTER_S: no probe
    with pytest.warns(UserWarning, match=r"failed \d+ s ago"):
        assert meshes.visual_mjcf(G1) == SHIPPED
    assert len(probes) == 1
    meshes._menagerie.cache_clear()  # after RETRY_AFTER_S: tried again
    monkeypatch.setattr(meshes, "RETRY_AFTER_S", 0.0)
    with pytest.warns(UserWarning, match="no answer"):
        meshes.visual_mjcf(G1)
    assert len(probes) == 2


def test_a_failed_fetch_is_remembered_and_a_refused_connection_is_quick(monkeypatch):
    with socket.socket() as s:  # a port nobody listens on: refused at once
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/assets"
    monkeypatch.setitem(sys.modules, "mujoco_menagerie", fake_menagerie(url))
    monkeypatch.setenv(meshes.ENV_VAR, meshes.MENAGERIE)
    start = time.perf_counter()
    with pytest.warns(UserWarning, match="could not be had"):
        assert meshes.visual_mjcf(G1) == SHIPPED
    assert time.perf_counter() - start < 3.0
    assert meshes.failure_marker().is_file()


def test_menagerie_without_the_package_warns_and_draws_the_shipped_meshes(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco_menagerie", None)
    monkeypatch.setenv(meshes.ENV_VAR, meshes.MENAGERIE)
    with pytest.warns(UserWarning, match=r"gym_motion\[meshes\]"):
        assert meshes.visual_mjcf(G1) == SHIPPED
    assert not meshes.failure_marker().exists()  # nothing to do with the network


def test_robots_without_a_menagerie_model_have_no_meshes():
    with pytest.warns(UserWarning, match="no MuJoCo Menagerie model"):
        assert meshes._menagerie("no_such_robot") is None


# ------------------------------------------------- the real package, where installed


@pytest.fixture
def menagerie(monkeypatch):
    """mujoco_menagerie asked for (GYM_MOTION_MESHES=menagerie), reading MENAGERIE_ROOT."""
    mm = pytest.importorskip("mujoco_menagerie", reason="mujoco-menagerie (the meshes extra)")
    monkeypatch.setenv(meshes.ENV_VAR, meshes.MENAGERIE)
    return mm


@needs_reference
def test_menagerie_model_dresses_the_render_scene(menagerie, monkeypatch, tmp_path):
    model, entry = meshes.MENAGERIE_MODELS["g1"]
    folder = tmp_path / model  # a menagerie checkout's layout: <root>/<model>/<entry file>
    shutil.copytree(REFERENCE_G1, folder)
    (folder / "g1.xml").rename(folder / menagerie.get(model).entry(entry).file)
    monkeypatch.setenv("MENAGERIE_ROOT", str(tmp_path))
    found = meshes.visual_mjcf(G1)
    assert found is not None and found.parent == folder
    scene = build_scene(G1, RenderCfg(meshes="auto", ghost=False))
    assert scene.nmeshface > 300_000  # the full set, not the shipped one


def test_menagerie_that_cannot_give_the_model_warns_and_gives_the_shipped_meshes(
    menagerie, monkeypatch, tmp_path
):
    monkeypatch.setenv("MENAGERIE_ROOT", str(tmp_path))  # a checkout without the G1
    with pytest.warns(UserWarning, match="drawing the shipped meshes"):
        assert meshes.visual_mjcf(G1) == SHIPPED
    assert meshes.visual_mjcf(G1) == SHIPPED  # asked once per process


def test_render_cfg_takes_menagerie_as_the_env_var_does(monkeypatch):
    """``RenderCfg(meshes="menagerie")`` / ``render --meshes menagerie`` asks for the full set as
    ``GYM_MOTION_MESHES=menagerie`` does (here without the package: the shipped set)."""
    import sys

    from gym_motion.render import mesh_source
    from gym_motion.robots import meshes
    from gym_motion.robots.g1 import G1

    monkeypatch.setitem(sys.modules, "mujoco_menagerie", None)  # not installed
    meshes._menagerie.cache_clear()
    assert mesh_source(G1, "menagerie") == meshes.shipped_mjcf(G1)
    assert mesh_source(G1, "off") is None
