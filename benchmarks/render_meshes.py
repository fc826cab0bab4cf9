"""Cost of one offscreen frame with the G1's visual meshes against its collision primitives.

    MUJOCO_GL=egl python benchmarks/render_meshes.py [MJCF_WITH_MESHES] [--frames 60]

Draws the robot and its ghost (`gym_motion.render.TrackingRenderer`, default `RenderCfg` but
for the size and `meshes`) in a pose per frame taken from the default motion, at 320x240 and
640x480; prints per frame the median and 90th percentile wall time (ms), the process CPU time
(all threads; less sensitive to other load than wall time) and the scene sizes. The mesh
model defaults to the shared reference G1 (``../shared/reference/g1/g1.xml``); without it,
`RenderCfg.meshes="auto"` decides (``GYM_MOTION_MESHES``, mujoco-menagerie).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("MUJOCO_GL", "egl")

from gym_motion.motion import DEFAULT_MOTION_PATH  # noqa: E402
from gym_motion.motion.library import MotionLibrary  # noqa: E402
from gym_motion.render import RenderCfg, TrackingRenderer  # noqa: E402
from gym_motion.robots.g1 import G1  # noqa: E402

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "g1" / "g1.xml"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("meshes", nargs="?", default=str(REFERENCE) if REFERENCE.is_file() else "auto")
    p.add_argument("--frames", type=int, default=60)
    args = p.parse_args()
    lib = MotionLibrary.from_paths(DEFAULT_MOTION_PATH, fps=50.0, robot=G1)
    root = lib.body_names.index(G1.root_body)
    rows = np.linspace(0, lib.num_frames - 1, args.frames).astype(int)
    poses = np.concatenate([lib.body_pos_w[rows, root], lib.body_quat_w[rows, root],
                            lib.joint_pos[rows]], axis=1)  # fmt: skip
    print(f"MUJOCO_GL={os.environ['MUJOCO_GL']}, {args.frames} frames, robot + ghost")
    for width, height in ((320, 240), (640, 480)):
        for meshes in ("off", args.meshes):
            r = TrackingRenderer(G1, RenderCfg(width=width, height=height, meshes=meshes))
            r.render(poses[0], poses[0])  # the first frame uploads the meshes
            times, cpu = [], time.process_time()
            for pose in poses:
                t = time.perf_counter()
                r.render(pose, pose)
                times.append(time.perf_counter() - t)
            cpu_ms = 1000 * (time.process_time() - cpu) / len(poses)
            ms = 1000 * np.array(times)
            kind = "primitives" if meshes == "off" else "meshes"
            print(
                f"{width}x{height} {kind:>10}: median {np.median(ms):6.1f} ms, p90 "
                f"{np.percentile(ms, 90):6.1f} ms, CPU {cpu_ms:6.1f} ms  (ngeom "
                f"{r.model.ngeom}, nmesh {r.model.nmesh}, mesh faces {r.model.nmeshface})"
            )
            r.close()


if __name__ == "__main__":
    main()
