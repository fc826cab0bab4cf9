"""Sim-to-sim check: play a tracking policy in mjlab, the reference simulator, before the robot.

Usage (gym_motion's python; mjlab lives in its own venv, see docs/deploy.md):

    python benchmarks/sim2sim_mjlab.py POLICY [--motion CLIP] [--input-fps FPS] [--seeds 0 1 2 3 4]
        [--mjlab-python ~/mjlab-venv/bin/python] [--json out.json] [--no-randomization]
        [--ignore-conventions | --as-stated]

POLICY: an ONNX file with deploy metadata, a shipped policy name (``tracker``, ``jazz``) or a
``gym-motion train`` run folder (exported to a temporary ONNX first). CLIP (default: the
embedded default motion): a G1 CSV (with ``--input-fps``), a gym_motion npz or GMR pickle
(written as a G1 CSV at its own rate), both made into mjlab's motion npz at 50 fps by mjlab's
``csv_to_npz``; or an mjlab motion npz (30 bodies, no names), used as it is.

``sim2sim_mjlab_worker.py`` then runs in the mjlab venv: mjlab's ``Mjlab-Tracking-Flat-
Unitree-G1`` play config, one env on CPU per seed, the policy from the clip's start to its first
termination or the clip's end. This prints a table (seed, steps survived of the clip's, MPKPE,
how it ended) and a summary line, and writes the results as JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

WORKER = Path(__file__).with_name("sim2sim_mjlab_worker.py")
DEFAULT_MJLAB_PYTHON = Path("~/mjlab-venv/bin/python").expanduser()
SETUP_HINT = (
    "set up mjlab's own venv (docs/deploy.md, 'Checking a policy in mjlab'): python3 -m venv "
    "~/mjlab-venv && ~/mjlab-venv/bin/pip install mjlab==1.6.0 onnxruntime"
)
MJLAB_MODULES = ("mjlab", "torch", "onnxruntime")
MJLAB_BODIES = 30  # bodies of mjlab's G1 motion npz (pelvis first, no world body)
WORKER_FLAGS = ("no_randomization", "ignore_conventions", "as_stated")  # passed on as they are
PREFIX = "[sim2sim]"  # the worker's own lines; the rest is mjlab's console output


def resolve_policy(policy: str, tmp: Path) -> Path:
    """The ONNX file of `policy`: an ONNX path, a shipped policy name (`SHIPPED_POLICIES`) or a
    run folder, which is exported to ``tmp/policy.onnx`` with gym_motion's exporter.

    Raises:
        SystemExit: none of these (one line).
    """
    from gym_motion.deploy import SHIPPED_POLICIES

    path = Path(policy)
    if path.is_file():
        return path
    if path.is_dir():
        from gym_motion.training.export import export_run

        out = tmp / "policy.onnx"
        try:
            export_run(path, out)
        except (OSError, ValueError, RuntimeError) as exc:
            raise SystemExit(f"policy: exporting {path}: {exc}") from None
        return out
    if policy in SHIPPED_POLICIES:
        return Path(SHIPPED_POLICIES[policy])
    raise SystemExit(
        f"policy not found: {policy} is no ONNX file, run folder or shipped policy "
        f"({', '.join(SHIPPED_POLICIES)})"
    )


def policy_clips(onnx: Path) -> tuple[str, ...]:
    """The clips the policy's metadata says it tracks (``motion_files``), after checking that
    the metadata is there (`gym_motion.deploy.OnnxPolicy` reads it).

    Raises:
        SystemExit: the ONNX lacks the metadata or cannot be read (one line naming it).
    """
    from gym_motion.deploy import OnnxPolicy

    try:
        policy = OnnxPolicy(onnx)
    except (ValueError, FileNotFoundError) as exc:
        raise SystemExit(f"policy: {exc}") from None
    return policy.meta.motion_files or ()


def write_g1_csv(clip: Any, path: Path) -> None:
    """Write a clip as the G1 CSV mjlab's csv_to_npz reads: one row per frame, root (pelvis)
    position xyz (m, world) | root quaternion xyzw | joint angles (rad) in the robot's joint
    order, no header.

    Args:
        clip: a `gym_motion.motion.MotionClip` of the G1 (joints in the robot's order).
        path: the CSV to write.
    """
    from gym_motion.atomic import atomic_file
    from gym_motion.robots import G1

    if tuple(clip.joint_names) != tuple(G1.joint_names):
        raise ValueError(f"{path}: the clip's joints are not in the G1's joint order")
    root = clip.body_names.index(G1.root_body)
    wxyz = clip.body_quat_w[:, root]
    rows = np.concatenate(
        [clip.body_pos_w[:, root], wxyz[:, [1, 2, 3, 0]], clip.joint_pos], axis=1
    ).astype(np.float64)
    with atomic_file(path, "w") as f:
        np.savetxt(f, rows, delimiter=",", fmt="%.9g")


def prepare_motion(
    motion: str | None, input_fps: float | None, tmp: Path
) -> tuple[Path, float | None]:
    """What the worker gets for the clip: (file, CSV frame rate in Hz, or None for an mjlab
    npz used as it is).

    A G1 CSV goes as it is (its rate is `input_fps`); an mjlab motion npz (no joint or body
    names, `MJLAB_BODIES` bodies) as it is; any other clip gym_motion reads (its npz, a GMR
    pickle, an npz with a world body) is written as a G1 CSV at its own rate in `tmp`.

    Raises:
        SystemExit: a CSV without `input_fps`, `input_fps` for a file that states its rate, a
            clip gym_motion cannot read (one line naming it).
    """
    from gym_motion.motion import DEFAULT_MOTION_PATH, MotionFormatError, load_clip
    from gym_motion.motion.formats import FileKind, sniff

    path = Path(motion) if motion else DEFAULT_MOTION_PATH
    if not path.is_file():
        raise SystemExit(f"motion not found: {path}")
    kind = sniff(path).kind
    if kind is FileKind.CSV:
        if input_fps is None:
            raise SystemExit(f"--input-fps is needed: {path} is a CSV, which states no rate")
        return path, input_fps
    if input_fps is not None:
        raise SystemExit(f"--input-fps is for a CSV; {path} states its own rate")
    try:
        clip = load_clip(path)
    except (MotionFormatError, ValueError) as exc:
        raise SystemExit(f"motion: {exc}") from None
    if kind is FileKind.NPZ:
        with np.load(path) as data:
            named = "joint_names" in data or "body_names" in data
            bodies = data["body_pos_w"].shape[1]
        if not named and bodies == MJLAB_BODIES:
            return path, None
    csv = tmp / f"{path.stem}.csv"
    write_g1_csv(clip, csv)
    return csv, clip.fps


def check_mjlab_python(python: Path) -> None:
    """Refuse a python that is missing or lacks a module the worker needs (one line).

    Raises:
        SystemExit: naming the python and what it lacks.
    """
    probe = (
        "import importlib.util as u; "
        f"print(','.join(m for m in {MJLAB_MODULES!r} if u.find_spec(m) is None))"
    )
    try:
        done = subprocess.run(
            [str(python), "-c", probe], capture_output=True, text=True, env=_clean_env()
        )
    except OSError:
        raise SystemExit(f"mjlab python not found: {python}; {SETUP_HINT}") from None
    missing = done.stdout.strip()
    if done.returncode != 0 or missing:
        what = missing or f"a working interpreter ({done.stderr.strip()[-200:]})"
        raise SystemExit(f"{python} has no {what}; {SETUP_HINT}")


def _clean_env() -> dict[str, str]:
    """The environment for the mjlab python: without this venv's python paths."""
    env = dict(os.environ)
    for key in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):
        env.pop(key, None)
    return env


def run_worker(command: Sequence[str], out: Path) -> dict[str, Any]:
    """Run the worker; show its ``[sim2sim]`` lines as they come; return its JSON results.

    Raises:
        SystemExit: the worker refused (its one-line error) or failed (the tail of its output).
    """
    lines: list[str] = []
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_clean_env(),
        cwd=out.parent,
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith(PREFIX) and not line.startswith(f"{PREFIX} error: "):
                print(line.rstrip("\n")[len(PREFIX) + 1 :], flush=True)
    if proc.returncode != 0:
        errors = [ln for ln in lines if ln.startswith(f"{PREFIX} error: ")]
        if errors:
            raise SystemExit(f"mjlab: {errors[-1][len(PREFIX) + 8 :]}")
        tail = "\n".join(lines[-15:])
        raise SystemExit(f"{tail}\nthe mjlab worker failed (exit status {proc.returncode})")
    return json.loads(out.read_text())


def format_table(results: dict[str, Any]) -> str:
    """The per-seed table of worker `results`: seed, steps survived of the clip's, MPKPE (mm),
    how the episode ended (clip end, or the termination terms that fired), seconds."""
    ended = [r["ended_by"].replace("clip_end", "clip end") for r in results["seeds"]]
    w = max([len("ended by"), *map(len, ended)])
    head = f"{'seed':>4}  {'steps':>11}  {'MPKPE mm':>8}  {'ended by':<{w}}  {'s':>5}"
    rows = [head, "-" * len(head)]
    for r, end in zip(results["seeds"], ended, strict=True):
        steps = f"{r['steps']}/{r['clip_steps']}"
        mm = r["mpkpe_m"] * 1e3
        rows.append(f"{r['seed']:>4}  {steps:>11}  {mm:>8.1f}  {end:<{w}}  {r['seconds']:>5.0f}")
    return "\n".join(rows)


def summarize(results: dict[str, Any]) -> dict[str, Any]:
    """Over the seeds: how many tracked the whole clip, steps and MPKPE (mm) mean, min, max."""
    seeds = results["seeds"]
    steps = np.array([r["steps"] for r in seeds], np.float64)
    mpkpe = np.array([r["mpkpe_m"] for r in seeds], np.float64) * 1e3
    return {
        "seeds": len(seeds),
        "whole_clip": sum(r["ended_by"] == "clip_end" for r in seeds),
        "clip_steps": seeds[0]["clip_steps"] if seeds else 0,
        "steps_mean": float(steps.mean()),
        "steps_min": int(steps.min()),
        "mpkpe_mm_mean": float(mpkpe.mean()),
        "mpkpe_mm_min": float(mpkpe.min()),
        "mpkpe_mm_max": float(mpkpe.max()),
        "steps_per_s": float(steps.sum() / max(sum(r["seconds"] for r in seeds), 1e-9)),
    }


def summary_line(name: str, results: dict[str, Any], summary: dict[str, Any]) -> str:
    """One line: the policy, mjlab version and config, seeds through the whole clip, MPKPE."""
    randomised = "randomised" if results["randomization"]["events"] else "no randomisation"
    return (
        f"{name} in mjlab {results['mjlab_version']} ({results['task']}, play config, "
        f"{randomised}): whole clip at {summary['whole_clip']} of {summary['seeds']} seeds, "
        f"steps {summary['steps_mean']:.0f} of {summary['clip_steps']} on average (min "
        f"{summary['steps_min']}), MPKPE {summary['mpkpe_mm_mean']:.1f} mm "
        f"({summary['mpkpe_mm_min']:.1f}-{summary['mpkpe_mm_max']:.1f}), "
        f"{summary['steps_per_s']:.1f} steps/s"
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Setup, what it measures and what stays randomised: docs/deploy.md.",
    )
    p.add_argument("policy", help="ONNX file, shipped policy name (tracker, jazz) or run folder")
    p.add_argument("--motion", help="G1 CSV, gym_motion or mjlab npz (default: default motion)")
    p.add_argument("--input-fps", type=float, help="frame rate of a CSV clip, Hz")
    p.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=[0, 1, 2, 3, 4],
        help="one env each (default %(default)s)",
    )
    p.add_argument(
        "--mjlab-python",
        type=Path,
        default=Path(os.environ.get("MJLAB_PYTHON", DEFAULT_MJLAB_PYTHON)),
        help="python of the venv with mjlab (default: $MJLAB_PYTHON, else %(default)s)",
    )
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument(
        "--ignore-conventions",
        action="store_true",
        help="play a policy whose metadata states other observation conventions than mjlab's "
        "(base_origin_lin_vel, observed_frame current) on mjlab's observation anyway",
    )
    p.add_argument(
        "--as-stated",
        action="store_true",
        help="feed such a policy the observation its metadata states (the pelvis origin's "
        "velocity, the current reference frame), computed from mjlab's state, as a deploy "
        "stack that reads gym_motion's metadata would",
    )
    p.add_argument(
        "--no-randomization",
        action="store_true",
        help="also switch off what mjlab's play config randomises (foot friction, torso CoM, "
        "encoder bias, start joint noise)",
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.json is not None:
        from gym_motion.atomic import check_output_path

        try:
            check_output_path(args.json)
        except ValueError as exc:
            raise SystemExit(str(exc)) from None
    check_mjlab_python(args.mjlab_python)
    with tempfile.TemporaryDirectory(prefix="sim2sim_") as tmp_dir:
        tmp = Path(tmp_dir)
        onnx = resolve_policy(args.policy, tmp)
        clips = policy_clips(onnx)
        if clips and args.motion is None:
            raise SystemExit(
                f"{args.policy} tracks {', '.join(clips)} (its metadata's motion_files), not the "
                "default motion; pass --motion with that clip"
            )
        motion, fps = prepare_motion(args.motion, args.input_fps, tmp)
        out = tmp / "results.json"
        command = [str(args.mjlab_python), str(WORKER), "--policy", str(onnx.resolve())]
        command += ["--motion", str(motion.resolve()), "--out", str(out), "--seeds"]
        command += [str(s) for s in args.seeds]
        if fps is not None:
            command += ["--input-fps", repr(float(fps))]
        command += [f"--{flag.replace('_', '-')}" for flag in WORKER_FLAGS if getattr(args, flag)]
        results = run_worker(command, out)
    summary = summarize(results)
    differences = results.get("convention_differences")
    if differences:
        print(f"played on mjlab's observation; the policy states: {'; '.join(differences)}")
    print(format_table(results))
    print(summary_line(Path(args.policy).name, results, summary))
    if args.json is not None:
        from gym_motion.atomic import write_json

        write_json(
            args.json,
            {
                "policy": args.policy,
                "motion": args.motion or "default motion",
                "summary": summary,
                "mjlab": results,
            },
        )
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
