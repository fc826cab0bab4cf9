"""GPU check of training: the clip recipe on a GPU for a fixed wall budget, as a user runs it.

Runs ``gym-motion train --motion <clip> --recipe clip --device <device> --max-minutes <m>
--no-video`` (the recipe's GPU settings apply when the device is a GPU: README, "Training on a
GPU") in-process, then prints and writes (``<out>/gpu_train_check.json``):

- the machine: torch and its CUDA, the device's name, the CPU cores;
- the run's settings as config.json records them (device, backend, envs, PPO);
- throughput: env steps/s overall and in the rollouts, and the per-update profile (seconds per
  rollout, update, evaluation; on a GPU also env step, normaliser and policy per rollout);
- the evaluations from the clip start over time (env steps, minutes of learning, steps
  survived, MPKPE) and the first one that tracks the clip whole (to its last frame, MPKPE
  <= 100 mm).

Usage (repo root; installs nothing; finishes within ``--minutes`` plus start-up (MuJoCo Warp's
kernels compile once, minutes on a fresh machine) and the evaluations before and after, under
10 minutes at the default 6; the run folder checkpoints every minute, so a run stopped early
still leaves ``run/progress.json``)::

    python benchmarks/gpu_train_check.py --out gpu_train              # cuda:0, 6 minutes
    python benchmarks/gpu_train_check.py --out gpu_train_host --mdp host    # the host MDP
    python benchmarks/gpu_train_check.py --device cpu --num-envs 4 --total-steps 400 \\
        --eval-every 200 --eval-max-seconds 0.5 --out /tmp/dry         # checks the script

Nothing here asserts a speed or a result; it reports.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JAZZ = ROOT.parent / "shared" / "motions" / "g1moves_jazzwalk_60fps.npz"
WHOLE_MPKPE_MM = 100.0  # the goal's "whole": every step of the clip, MPKPE <= 100 mm


def machine(device: str) -> dict:
    """torch, its CUDA and the device that the run resolves to."""
    import torch

    from gym_motion.training.devices import resolve_device

    resolved = resolve_device(device)
    info = {
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "device": resolved,
        "cpu_cores": len(os.sched_getaffinity(0)),
    }
    if resolved.startswith("cuda"):
        info["device_name"] = torch.cuda.get_device_name(resolved)
    return info


def _mean(rows: list[dict], key: str) -> float | None:
    vals = [float(r[key]) for r in rows if r.get(key) not in (None, "")]
    return round(sum(vals) / len(vals), 4) if vals else None


def report(run: Path) -> dict:
    """Throughput, per-update profile and evaluations of the run folder `run`."""
    summary = json.loads((run / "summary.json").read_text())
    progress = json.loads((run / "progress.json").read_text())
    config = json.loads((run / "config.json").read_text())
    rows = progress["history"]  # rsl_rl's rows; SB3's logger rows are progress.csv's
    if (run / "progress.csv").is_file():
        with open(run / "progress.csv", newline="") as f:
            rows = list(csv.DictReader(f))
    parts = ("rollout_s", "update_s", "eval_s", "env_s", "normalizer_s", "policy_s")
    profile = {k: _mean(rows, f"time/{k}") for k in parts}
    train = config["train"]
    steps_per_update = train["num_envs"] * config.get("ppo", {}).get("n_steps", 24)
    update_s = profile["update_s"]
    evals = [
        {
            "env_steps": int(e["timesteps"]),
            "minutes": round(e["learn_s"] / 60.0, 2) if "learn_s" in e else None,
            "episode_length": e.get("eval/episode_length"),
            "mpkpe_mm": e.get("eval/mpkpe_mm"),
            "whole": e.get("eval/success_rate") == 1.0
            and (e.get("eval/mpkpe_mm") or 1e9) <= WHOLE_MPKPE_MM,
        }
        for e in progress["evals"]
    ]
    whole = next((e for e in evals if e["whole"]), None)
    return {
        "settings": {
            "device": train["device"],
            "backend": json.loads(json.dumps(config["env"]))["backend"]["name"],
            "num_envs": train["num_envs"],
            "ppo": config.get("ppo"),
        },
        "env_steps": summary["env_steps"],
        "learn_minutes": round(summary["train_wall_s"] / 60.0, 2),
        "env_steps_per_s_overall": summary["env_steps_per_s_overall"],
        "env_steps_per_s_rollout": summary["env_steps_per_s_rollout"],
        "env_steps_per_s_update": round(steps_per_update / update_s, 1) if update_s else None,
        "profile_s_per_update": profile,
        "evaluations": evals,
        "first_whole": whole,
        "after": summary.get("after", {}).get("mean"),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--device", default="cuda", help="torch device (default cuda)")
    p.add_argument("--motion", default=str(JAZZ), help="clip (default: the shared jazz walk)")
    p.add_argument("--minutes", type=float, default=6.0, help="wall budget of learning")
    p.add_argument("--out", default="gpu_train_check",
                   help="folder of the results (its run/ is replaced)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--num-envs", type=int, default=None, help="replace the recipe's")
    p.add_argument("--backend", default=None, help="replace the recipe's")
    p.add_argument("--total-steps", type=int, default=None, help="replace the recipe's")
    p.add_argument("--eval-every", type=int, default=None, help="replace the recipe's")
    p.add_argument("--eval-max-seconds", type=float, default=None, help="cap each evaluation")
    p.add_argument(
        "--mdp", default=None, choices=("auto", "host", "device"),
        help="where the MDP's per-step math runs (BackendCfg.mdp; default auto: device for "
        "mjwarp on a GPU)",
    )  # fmt: skip
    args = p.parse_args(argv)

    from gym_motion.cli import build_parser
    from gym_motion.cli.train import run_config
    from gym_motion.training import train

    try:
        info = machine(args.device)
    except ValueError as exc:  # a device torch does not list: one line, as `gym-motion train`
        print(f"gpu_train_check: error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result: dict = {"machine": info}
    print(json.dumps(result["machine"]), flush=True)
    argv_train = ["train", "--motion", args.motion, "--recipe", "clip", "--device", args.device,
                  "--max-minutes", str(args.minutes), "--no-video", "--seed", str(args.seed),
                  "--out", str(out / "run"), "--checkpoint-minutes", "1"]  # fmt: skip
    for flag, value in (
        ("--num-envs", args.num_envs),
        ("--backend", args.backend),
        ("--total-steps", args.total_steps),
        ("--eval-every", args.eval_every),
    ):
        if value is not None:
            argv_train += [flag, str(value)]
    if args.mdp is not None:
        argv_train += ["--set", f"env.backend.mdp={args.mdp}"]
    result["command"] = "gym-motion " + " ".join(argv_train)
    print(f"$ {result['command']}", flush=True)
    config = run_config(build_parser().parse_args(argv_train))
    if args.eval_max_seconds is not None:
        from dataclasses import replace

        config = replace(config, eval_max_seconds=args.eval_max_seconds)
    run = out / "run"
    if run.exists():
        import shutil

        shutil.rmtree(run)
    t0 = time.perf_counter()
    train(config)
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    result.update(report(run))
    (out / "gpu_train_check.json").write_text(json.dumps(result, indent=1))
    for key in ("settings", "env_steps", "learn_minutes", "env_steps_per_s_overall",
                "env_steps_per_s_rollout", "env_steps_per_s_update", "profile_s_per_update",
                "first_whole"):  # fmt: skip
        print(f"{key}: {json.dumps(result[key])}")
    print("evaluations (env steps, minutes, steps survived, MPKPE mm, whole):")
    for e in result["evaluations"]:
        print(f"  {e['env_steps']:>11,} {e['minutes']!s:>7} {e['episode_length']!s:>6} "
              f"{e['mpkpe_mm']!s:>8} {e['whole']}")  # fmt: skip
    print(f"results in {out}/gpu_train_check.json", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
