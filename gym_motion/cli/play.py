"""``gym-motion play``: watch a policy (or a clip alone) live, in the browser or a MuJoCo window
(`gym_motion.play.PlaySession`, `gym_motion.viewer`).

    gym-motion play --policy tracker                       # http://127.0.0.1:8080
    gym-motion play --model runs/NAME --motion a.npz b.npz --port 0
    gym-motion play --policy none --motion retargeted.npz  # the clip alone, no physics
    gym-motion play --onnx policy.onnx --motion clip.npz --viewer native

The env steps exactly as in ``gym-motion eval`` (one env, `eval_cfg`); the policy options are
those of ``eval`` and ``render``. Ctrl-C stops the server and closes the env.
"""

from __future__ import annotations

import argparse
import sys

from gym_motion.cli.evaluate import add_policy_args, policy_source
from gym_motion.cli.numbers import cli_number

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds ``gym-motion play`` to the CLI's subparsers."""
    p = subparsers.add_parser(
        "play",
        help="watch a policy track clips live in the browser (Viser) or a MuJoCo window",
        description="Play clips with a policy in one env (as eval plays them) and show the "
        "robot and its reference ghost live: play/pause/step, speed, a frame slider, reset, "
        "clip switch, plots of the reward terms and tracking errors, and how episodes end.",
    )
    add_policy_args(p)
    # --policy none: the clip alone (add_policy_args knows model, zero and tracker)
    for action in p._actions:
        if action.dest == "policy":
            action.choices = (*action.choices, "none")
            action.help += "; none: the clip alone, played kinematically (no physics)"
    p.add_argument(
        "--motion", nargs="+", default=None, metavar="CLIP",
        help="clip npz(s) to switch between (default: the run's training clips, else the "
        "embedded default)",
    )  # fmt: skip
    p.add_argument("--viewer", choices=("browser", "native"), default="browser",
                   help="browser: a Viser server (default); native: MuJoCo's window (needs a "
                   "display)")  # fmt: skip
    p.add_argument(
        "--port",
        type=cli_number(int, 0),
        default=8080,
        help="browser viewer's port on --host (0: any free port; default 8080)",
    )
    p.add_argument("--host", default="127.0.0.1",
                   help="address the browser viewer binds (default 127.0.0.1: this machine "
                   "only)")  # fmt: skip
    p.add_argument("--paused", action="store_true", help="start paused")
    p.add_argument("--meshes", default="auto", metavar="auto|off|MJCF",
                   help="draw the robot's visual meshes (auto: where found, see "
                   "gym_motion.robots.meshes), its collision primitives (off), or the meshes "
                   "of this MJCF")  # fmt: skip
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        return _play(args)
    except KeyboardInterrupt:  # Ctrl-C before the server was up: nothing is left running
        print("gym-motion play: stopped", file=sys.stderr)
        return 0


def _play(args: argparse.Namespace) -> int:
    from gym_motion import viewer
    from gym_motion.play import PlaySession
    from gym_motion.render import RenderCfg

    if args.viewer == "native":
        viewer.check_display()
    else:  # before anything is built; serve_browser checks it again when it binds
        viewer.check_port(args.host, args.port)
    kinematic = args.policy == "none"
    if kinematic:
        if args.model is not None or args.onnx is not None:
            raise SystemExit("gym-motion play: --policy none plays the clip alone; drop "
                             "--model/--onnx")  # fmt: skip
        args.policy = "zero"
    source = policy_source(args, "play")
    folder, policy, cfg, obs_mode = source.folder, source.policy, source.cfg, "policy"
    if folder is not None:
        if folder.config():
            cfg = cfg or folder.env_cfg()
            obs_mode = folder.obs_mode()
        policy = folder.policy() if policy == "model" and not kinematic else None
    elif policy == "zero":
        policy = None
    clips = args.motion or list(folder.motions() if folder else [])
    if not clips:
        from gym_motion.motion import DEFAULT_MOTION_PATH

        clips = [DEFAULT_MOTION_PATH]
    render_cfg = RenderCfg(meshes=args.meshes)
    session = PlaySession(
        clips, policy, cfg, kinematic=kinematic, obs_mode=obs_mode, seed=args.seed,
        playback="frame_per_step" if args.frame_per_step else "real_time",
    )  # fmt: skip
    with session:
        if args.viewer == "native":
            viewer.open_native(session, render_cfg)
            return 0

        def ready(url: str) -> None:
            print(f"gym-motion play: serving {url} (Ctrl-C stops)", flush=True)

        viewer.serve_browser(session, port=args.port, host=args.host, render_cfg=render_cfg,
                             on_ready=ready, paused=args.paused)  # fmt: skip
    print("gym-motion play: stopped", file=sys.stderr)
    return 0
