"""Make the G1's shipped visual meshes: Unitree's STL files, decimated, and an MJCF placing them.

    pip install trimesh fast-simplification   # this script's needs only, not the package's
    python scripts/make_g1_meshes.py [--reference ../shared/reference/g1/g1.xml] [--check out.png]

Reads the reference MJCF (mjlab's G1, ``g1_29dof_rev_1_0``, whose bodies have the names of
gym_motion's G1) and the STL files of its visual mesh geoms (Unitree's, BSD-3-Clause, 19 MB),
and writes into ``gym_motion/robots/g1/``:

- ``meshes/<stem>.obj``: each STL with its coincident vertices merged (trimesh), decimated by
  quadric error metrics (fast-simplification, aggressiveness 3: gentler than its default 7,
  which moves some extremes by up to 1 cm) to ``--ratio`` of its triangles, at least
  ``--min-faces``; OBJ with shared vertices at 10 um (``%.5f`` m), about 30 bytes per
  triangle against binary STL's 50;
- ``meshes/sources.json``: per mesh its source file and SHA-256, and the triangle count and
  bounding box (m, mesh frame) of the source and of the shipped mesh;
- ``meshes/LICENSE`` (Unitree's BSD-3-Clause) and ``meshes/README.md``;
- ``g1_visual.xml``: the reference's body tree, bodies with their names, positions and
  orientations and no joints, carrying the visual mesh geoms at the reference's poses and
  materials. Pictures only: `gym_motion.render.dress` takes its geoms body by body.

The output is a function of the inputs and the options (same files on a rerun). ``--check PNG``
then renders the G1 in its default pose with the reference's meshes, the shipped ones and the
collision primitives side by side (needs OpenGL: ``MUJOCO_GL=egl`` without a display) and prints
how much the silhouettes of the first two overlap.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT.parent / "shared" / "reference" / "g1" / "g1.xml"
OUT = ROOT / "gym_motion" / "robots" / "g1"
COMMAND = "python scripts/make_g1_meshes.py"

LICENSE = """\
BSD 3-Clause License

Copyright (c) 2016-2024 HangZhou YuShu TECHNOLOGY CO.,LTD. ("Unitree Robotics")
All rights reserved.

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:

* Redistributions of source code must retain the above copyright notice, this
  list of conditions and the following disclaimer.

* Redistributions in binary form must reproduce the above copyright notice,
  this list of conditions and the following disclaimer in the documentation
  and/or other materials provided with the distribution.

* Neither the name of the copyright holder nor the names of its
  contributors may be used to endorse or promote products derived from
  this software without specific prior written permission.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE
DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE LIABLE
FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL
DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR
SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER
CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY,
OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
"""

README = """\
# The G1's visual meshes (pictures only)

Unitree's G1 meshes (`unitree_ros`, `robots/g1_description`; BSD-3-Clause, `LICENSE` here) as
mjlab's `g1_29dof_rev_1_0` MJCF uses them, decimated from {source_faces:,} to {faces:,} triangles
with trimesh and fast-simplification by `{command}`
({options}).
`sources.json` gives each file's source STL, its SHA-256 and both bounding boxes;
`../g1_visual.xml` puts them on the G1's bodies. The full set: `GYM_MOTION_MESHES=menagerie`
(`gym_motion.robots.meshes`).
"""


def visual_geoms(spec) -> list:
    import mujoco

    return [g for g in spec.geoms if g.type == mujoco.mjtGeom.mjGEOM_MESH]


def decimate(path: Path, ratio: float, min_faces: int, agg: int):
    """(vertices (V, 3) float64 rounded to 10 um, faces (F, 3) int, source faces, source bounds)."""
    import fast_simplification
    import trimesh

    full = trimesh.load(path, file_type="stl", process=True)  # merges the STL's vertex copies
    target = min(len(full.faces), max(min_faces, round(ratio * len(full.faces))))
    verts, faces = np.asarray(full.vertices), np.asarray(full.faces)
    if target < len(faces):
        verts, faces = fast_simplification.simplify(
            verts.astype(np.float64), faces.astype(np.int32), target_count=target, agg=agg
        )
    mesh = trimesh.Trimesh(np.round(verts, 5), faces, process=True)
    return np.asarray(mesh.vertices), np.asarray(mesh.faces), len(full.faces), full.bounds


def write_obj(path: Path, verts: np.ndarray, faces: np.ndarray, header: str) -> None:
    lines = [f"# {header}"]
    lines += [f"v {x:.5f} {y:.5f} {z:.5f}" for x, y, z in verts]
    lines += [f"f {a} {b} {c}" for a, b, c in faces + 1]
    path.write_text("\n".join(lines) + "\n")


def fmt(values, digits: int = 8) -> str:
    return " ".join(f"{float(v):.{digits}g}" for v in values)


def visual_mjcf(reference: Path, files: dict[str, str]) -> ET.Element:
    """The reference's body tree with its visual mesh geoms (MjSpec resolves their classes)."""
    import mujoco

    spec = mujoco.MjSpec.from_file(str(reference))
    root = ET.Element("mujoco", model="g1_visual")
    root.append(ET.Comment(
        f" Generated by {COMMAND} from mjlab's g1_29dof_rev_1_0 (Apache-2.0): the G1's visual "
        "meshes at the reference's poses, on bodies named as gym_motion's G1. Pictures only: "
        "no joints, no collisions, no mass. Meshes: Unitree's, BSD-3-Clause (meshes/LICENSE). "
    ))  # fmt: skip
    ET.SubElement(root, "compiler", angle="radian", meshdir="meshes")
    default = ET.SubElement(ET.SubElement(root, "default"), "default", {"class": "visual"})
    ET.SubElement(default, "geom", group="2", type="mesh", density="0", material="silver",
                  contype="0", conaffinity="0")  # fmt: skip
    asset = ET.SubElement(root, "asset")
    for material in spec.materials:
        ET.SubElement(asset, "material", name=material.name, rgba=fmt(material.rgba, 6))
    used = {g.meshname for g in visual_geoms(spec)}
    for mesh in spec.meshes:
        if mesh.name in used:
            if np.any(np.asarray(mesh.scale) != 1.0):
                raise ValueError(f"mesh {mesh.name} is scaled: not supported")
            ET.SubElement(asset, "mesh", name=mesh.name, file=files[mesh.name])
    world = ET.SubElement(root, "worldbody")

    def add(body, parent: ET.Element) -> None:
        attrs = {"name": body.name}
        if np.any(np.asarray(body.pos) != 0.0):
            attrs["pos"] = fmt(body.pos)
        if np.any(np.asarray(body.quat) != [1.0, 0.0, 0.0, 0.0]):
            attrs["quat"] = fmt(body.quat)
        element = ET.SubElement(parent, "body", attrs)
        for geom in body.geoms:
            if geom.type != mujoco.mjtGeom.mjGEOM_MESH:
                continue
            g = {"class": "visual", "mesh": geom.meshname}
            if geom.material != "silver":
                g["material"] = geom.material
            if np.any(np.asarray(geom.pos) != 0.0):
                g["pos"] = fmt(geom.pos)
            if np.any(np.asarray(geom.quat) != [1.0, 0.0, 0.0, 0.0]):
                g["quat"] = fmt(geom.quat)
            ET.SubElement(element, "geom", g)
        for child in body.bodies:
            add(child, element)

    for body in spec.worldbody.bodies:
        add(body, world)
    ET.indent(root, space="  ")
    return root


def make(args: argparse.Namespace) -> dict:
    import mujoco

    reference = Path(args.reference).resolve()
    spec = mujoco.MjSpec.from_file(str(reference))
    meshdir = Path(spec.modelfiledir or reference.parent) / (spec.meshdir or "")
    out = Path(args.out)
    folder = out / "meshes"
    folder.mkdir(parents=True, exist_ok=True)
    used = {g.meshname for g in visual_geoms(spec)}
    files, sources = {}, {}
    for mesh in spec.meshes:
        if mesh.name not in used:
            continue
        source = meshdir / mesh.file
        name = Path(mesh.file).stem + ".obj"
        verts, faces, source_faces, source_bounds = decimate(
            source, args.ratio, args.min_faces, args.aggressiveness
        )
        write_obj(folder / name, verts, faces,
                  f"{mesh.name}: Unitree's {source.name} (BSD-3-Clause, see LICENSE), decimated "
                  f"from {source_faces} to {len(faces)} triangles by {COMMAND}")  # fmt: skip
        files[mesh.name] = name
        bounds = np.array([verts.min(0), verts.max(0)])
        sources[mesh.name] = {
            "file": name,
            "source": source.name,
            "source_sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
            "source_faces": source_faces,
            "source_bounds": (np.round(source_bounds, 6) + 0.0).tolist(),  # no -0.0
            "faces": int(len(faces)),
            "bounds": (np.round(bounds, 6) + 0.0).tolist(),
        }
        error = 1000 * np.abs(bounds - source_bounds).max()
        print(f"{name:32s} {source_faces:6d} -> {len(faces):5d} triangles, "
              f"bounding box within {error:.2f} mm")  # fmt: skip
    for stale in set(folder.glob("*.obj")) - {folder / f for f in files.values()}:
        stale.unlink()
    options = (f"--ratio {args.ratio} --min-faces {args.min_faces} "
               f"--aggressiveness {args.aggressiveness}")  # fmt: skip
    lines = [f"  {json.dumps(name)}: {json.dumps(entry)}" for name, entry in sources.items()]
    (folder / "sources.json").write_text(
        f'{{"reference": "mjlab\'s g1_29dof_rev_1_0 MJCF and its assets/*.STL",\n'
        f' "options": {json.dumps(options)},\n "meshes": {{\n' + ",\n".join(lines) + "\n}}\n"
    )
    (folder / "LICENSE").write_text(LICENSE)
    total = sum(s["faces"] for s in sources.values())
    (folder / "README.md").write_text(README.format(
        source_faces=sum(s["source_faces"] for s in sources.values()), faces=total,
        command=COMMAND, options=options))  # fmt: skip
    xml = ET.tostring(visual_mjcf(reference, files), encoding="unicode")
    (out / "g1_visual.xml").write_text(xml + "\n")
    size = sum(p.stat().st_size for p in folder.iterdir())
    print(f"{len(files)} meshes, {total} triangles, {size / 1e6:.2f} MB in {folder}")
    mujoco.MjModel.from_xml_path(str(out / "g1_visual.xml"))  # it compiles
    return sources


def check(reference: Path, shipped: Path, png: Path) -> None:
    """Side-by-side frames (reference meshes, shipped meshes, primitives); silhouette overlap."""
    from PIL import Image

    from gym_motion.render import RenderCfg, TrackingRenderer
    from gym_motion.robots.g1 import G1

    pose = np.r_[0.0, 0.0, 0.8, 1.0, 0.0, 0.0, 0.0, G1.default_joint_pos]
    frames, masks = [], []
    for meshes in (reference, shipped, "off"):
        for azimuth in (135.0, 90.0):
            cfg = RenderCfg(width=480, height=640, distance=2.2, azimuth=azimuth, ghost=False,
                            meshes=str(meshes))  # fmt: skip
            r = TrackingRenderer(G1, cfg)
            frame = r.render(pose)
            r.close()
            frames.append(frame)
            red, green, blue = (frame[..., c].astype(int) for c in range(3))
            masks.append((red > green + 40) & (red > blue + 60))
    for view in range(2):
        full, small = masks[view], masks[2 + view]
        iou = (full & small).sum() / (full | small).sum()
        print(f"view {view}: silhouettes overlap (IoU) {iou:.3f}, "
              f"{(full ^ small).sum()} of {full.sum()} pixels differ")  # fmt: skip
    rows = [np.concatenate(frames[i::2], axis=1) for i in range(2)]
    Image.fromarray(np.concatenate(rows, axis=0)).save(png)
    print(f"wrote {png}: reference meshes | shipped meshes | primitives")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reference", default=str(REFERENCE), help="MJCF with the full meshes")
    p.add_argument("--out", default=str(OUT), help="folder of g1_visual.xml and meshes/")
    p.add_argument("--ratio", type=float, default=0.15, help="triangles kept per mesh")
    p.add_argument("--min-faces", type=int, default=500, help="fewest triangles per mesh")
    p.add_argument("--aggressiveness", type=int, default=3, help="fast-simplification agg")
    p.add_argument("--check", metavar="PNG", help="render and compare the silhouettes")
    args = p.parse_args(argv)
    if not Path(args.reference).is_file():
        print(f"no reference MJCF at {args.reference}", file=sys.stderr)
        return 1
    if args.check:  # MUJOCO_GL, before mujoco is imported
        from gym_motion.gl import choose_for_rendering

        choose_for_rendering()
    make(args)
    if args.check:
        check(Path(args.reference), Path(args.out) / "g1_visual.xml", Path(args.check))
    return 0


if __name__ == "__main__":
    sys.exit(main())
