"""A training run's folder: its config.json and summary.json, and its trained policy.

    folder = RunFolder("runs/dance")
    folder.env_cfg()          # the TrackingEnvCfg it trained on
    folder.policy()           # its deterministic policy, loaded by the library that trained it
    folder.actor_module()     # its exportable actor (torch module, normalisation folded in)

config.json holds ``"library"``, ``"train"`` (`RunConfig.to_dict`, clip paths absolute),
``"env"`` (always `TrackingEnvCfg.to_json` output, so `TrackingEnvCfg.from_json` rebuilds the
env), the library's own sections (SB3: ``"ppo"`` or ``"sac"``; rsl_rl: ``"rsl_rl"``,
``"obs_dims"``, ``"num_actions"``) and ``"versions"``. Folders written by earlier versions of
gym_motion (an ``env`` section of plain values, no ``library``: Stable-Baselines3) are read too.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import platform
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gym_motion.atomic import write_json
from gym_motion.envs.config import TrackingEnvCfg, with_conventions_of
from gym_motion.motion.library import motion_files
from gym_motion.training.config import LEGACY_OBS_MODE
from gym_motion.training.progress import BEST_KEY

if TYPE_CHECKING:
    from gym_motion.policy import BindablePolicy, Policy
    from gym_motion.training.config import RunConfig

__all__ = ["RunFolder"]

# Robot values a legacy config.json records, compared with the robot it names.
_ROBOT_KEYS = (
    "joint_names", "kp", "kd", "default_joint_pos", "action_scale", "anchor_body",
    "tracked_bodies",
)  # fmt: skip


class RunFolder:
    """The folder of one training run (`gym_motion.training.train` writes it).

    Args:
        path: the folder.

    Attributes:
        path: the folder, a `Path`.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._config: dict[str, Any] | None = None

    @classmethod
    def create(cls, out: str | os.PathLike | None, model_file: str | None) -> RunFolder:
        """The folder of a new run: `out` (made later), or a new ``runs/<date>-<time>`` made
        here (``-2``, ``-3``, ... when a run started in the same second holds it: two runs
        never share a folder; `discard_if_empty` removes it if the run stops before writing).

        Raises:
            FileExistsError: `out` already holds a run (its `model_file`; None: not checked).
        """
        if out is None:
            stamp = Path("runs") / time.strftime("%Y%m%d-%H%M%S")
            stamp.parent.mkdir(parents=True, exist_ok=True)
            for k in itertools.count(1):
                path = stamp if k == 1 else stamp.with_name(f"{stamp.name}-{k}")
                try:
                    path.mkdir()  # atomic: the first run to make it owns it
                except FileExistsError:
                    continue
                return cls(path)
        path = Path(out)
        if model_file is not None and (path / model_file).exists():
            raise FileExistsError(
                f"{path} already holds a run ({model_file}); choose another --out"
            )
        return cls(path)

    def discard_if_empty(self) -> None:
        """Remove the folder if it holds nothing (a run that stopped before writing)."""
        try:
            self.path.rmdir()
        except OSError:  # not empty, or gone
            pass

    # -- config.json ---------------------------------------------------------------------------

    @property
    def config_path(self) -> Path:
        """The run's config.json (it may not exist yet)."""
        return self.path / "config.json"

    def config(self) -> dict[str, Any]:
        """config.json as a dict (``{}`` when the folder has none).

        Raises:
            ValueError: config.json is not a JSON object.
        """
        if self._config is None:
            if not self.config_path.is_file():
                return {}
            config = json.loads(self.config_path.read_text())
            if not isinstance(config, dict):
                raise ValueError(f"{self.config_path}: expected a JSON object")
            self._config = config
        return self._config

    def write_config(
        self, run: RunConfig, motions: list[str], entries: dict[str, Any], versions: dict
    ) -> None:
        """Write config.json (atomically): `run` with its resolved clip paths `motions`, its
        task, the library's `entries` and the package `versions`."""
        import gymnasium

        import gym_motion

        self._config = {
            "library": run.library,
            "train": {
                **run.to_dict(),
                "motion": list(motions),
                "motion_sha256": clip_digests(motions),
            },  # fmt: skip
            "env": json.loads(run.env.to_json()),
            **entries,
            "versions": {
                "gym_motion": gym_motion.__version__,
                "gymnasium": gymnasium.__version__,
                **versions,
                "python": platform.python_version(),
            },
        }
        write_json(self.config_path, self._config)

    def library(self) -> str:
        """The library that trained the run (config.json's ``"library"``; none: "sb3")."""
        return str(self.config().get("library", "sb3"))

    def train_settings(self) -> dict[str, Any]:
        """config.json's ``"train"`` section (``{}`` when absent)."""
        return dict(self.config().get("train", {}))

    def obs_mode(self) -> str:
        """The observation mode the run's policy reads ("dict" or "policy"; a config.json
        without it: `LEGACY_OBS_MODE`, as `RunConfig.from_dict` reads it)."""
        return str(self.train_settings().get("obs_mode", LEGACY_OBS_MODE))

    def motions(self) -> list[str]:
        """The run's training clips (absolute paths; ``[]`` when not recorded)."""
        return list(self.train_settings().get("motion") or [])

    def same_clips(self, paths: Sequence[str | os.PathLike]) -> list[str]:
        """`paths` (files or folders) as the run's training clips, if their files are the
        run's, byte for byte and in order (config.json's ``motion_sha256``): the clips moved.

        Raises:
            ValueError: the run records no digests (an older version), or the files differ
                (the first difference named).
        """
        recorded = self.train_settings().get("motion_sha256")
        if not recorded:
            raise ValueError(
                f"{self.config_path}: records no digests of its clips ({_written_by(self.config())}"
                "), so clips at another path cannot be checked against them"
            )
        given = clip_digests(paths)
        files = motion_files(paths)
        if len(given) != len(recorded):
            raise ValueError(f"the run trained on {len(recorded)} clip files, --motion gives "
                             f"{len(given)}")  # fmt: skip
        for k, (ours, theirs) in enumerate(zip(given, recorded, strict=True)):
            if ours != theirs:
                raise ValueError(f"{files[k]} is not the run's clip {k + 1} (another file: its "
                                 "SHA-256 differs from config.json's motion_sha256)")  # fmt: skip
        return [str(Path(p).resolve()) for p in paths]

    def env_cfg(self) -> TrackingEnvCfg:
        """The task (`TrackingEnvCfg`) the run trained on.

        A tagged ``env`` section (`TrackingEnvCfg.to_json`) is rebuilt as is; a plain one
        (earlier versions) gives the default task of the robot it names with the recorded
        state-estimation choice, after checking that the robot values it records (joint
        names, gains, default pose, action scale, anchor and tracked bodies) are that robot's.

        Raises:
            ValueError: no ``env`` section, an unknown robot, or recorded robot values that
                differ (the message names config.json and the key).
        """
        return _env_cfg(self.config(), str(self.config_path))

    def run_config(self) -> RunConfig:
        """The run's `RunConfig` (its ``train`` section and task; an rsl_rl run's PPO settings
        from its recorded runner config, `gym_motion.training.rsl_rl.config.recorded_ppo`).

        Raises:
            ValueError: see `env_cfg`, or a field out of range.
        """
        from gym_motion.training.config import RunConfig

        settings, recorded = self.train_settings(), self.config()
        if settings.get("library") == "rsl_rl" and "rsl_rl" in recorded:
            # the runner config it trained with, not today's defaults with its overrides
            from gym_motion.training.rsl_rl.config import recorded_ppo

            settings["ppo"] = recorded_ppo(
                recorded["rsl_rl"], recorded.get("init_at_random_ep_len", True)
            )
        return RunConfig.from_dict(settings, self.env_cfg())

    def evaluate(
        self,
        clips: Sequence[str | os.PathLike] | None = None,
        *,
        policy: str | Policy | BindablePolicy = "model",
        cfg: TrackingEnvCfg | None = None,
        episodes: int = 1,
        max_seconds: float | None = None,
        seed: int = 0,
        playback: str = "real_time",
        randomization: str = "none",
    ) -> dict[str, Any]:
        """Evaluate a policy on clips (`gym_motion.evaluate.evaluate_policy_on_clips`) in the
        task the run trained on, with its observation mode.

        Args:
            clips: clip npz(s) or folders; default: the run's training clips, else the embedded
                default motion.
            policy: ``"model"``: the run's trained policy (`policy`); ``"zero"``: the zero
                action; any `Policy` callable or `BindablePolicy`.
            cfg: the task (its backend included); default: the run's (`env_cfg`). The run's
                model is played with the run's observation conventions whatever `cfg` says
                (`with_conventions_of`).
            episodes, max_seconds, seed, playback, randomization: see
                `gym_motion.evaluate.evaluate_clip`.

        Returns:
            `evaluate_policy_on_clips`'s result and ``"run"`` (this folder, str); its
            ``"policy"`` is "model", "zero", or the policy's ``policy_name`` attribute.

        Raises:
            ValueError: an unknown policy name, a `cfg` whose state estimation differs from
                the run's, or a policy that cannot run in the env.
            FileNotFoundError: the files of the run's policy are missing.
        """
        from gym_motion.evaluate import evaluate_policy_on_clips

        name = getattr(policy, "policy_name", None)
        act: Policy | BindablePolicy | None
        if isinstance(policy, str):
            if policy not in ("model", "zero"):
                raise ValueError(f"policy must be 'model', 'zero' or a callable, got {policy!r}")
            act = self.policy() if policy == "model" else None
            name = policy
        else:
            act = policy
        has_config = bool(self.config())
        if has_config:
            trained = self.env_cfg()
            if policy == "model" and cfg is not None:
                own, asked = _policy_layout(trained), _policy_layout(cfg)
                if own != asked:
                    raise ValueError(
                        f"the run {self.path} was trained on a {sum(own.values())}-value policy "
                        f"observation ({', '.join(own)}) but the env asked for (e.g. by "
                        f"--env-id) has {sum(asked.values())} values ({', '.join(asked)}); "
                        "leave it out to use the run's"
                    )
                cfg = with_conventions_of(cfg, trained)
            cfg = cfg or trained
        if not clips:
            gone = [m for m in self.motions() if not Path(m).exists()]
            if gone:
                raise FileNotFoundError(
                    f"{gone[0]}: a training clip of {self.path} is not there any more; give "
                    "the clips to play with --motion"
                )
        clips = list(clips or self.motions())
        if not clips:
            from gym_motion.motion import DEFAULT_MOTION_PATH

            clips = [DEFAULT_MOTION_PATH]
        result = evaluate_policy_on_clips(
            clips, act, cfg, policy_name=name, episodes=episodes,
            obs_mode=self.obs_mode() if has_config else "policy", max_seconds=max_seconds,
            seed=seed, playback=playback, randomization=randomization,
        )  # fmt: skip
        result["run"] = str(self.path)
        return result

    # -- progress.json: what --resume continues from ------------------------------------------

    def write_progress(self, state: dict[str, Any]) -> None:
        """Write progress.json (atomically): the skeleton's state at the latest checkpoint
        (env steps, learning time, evaluations, the zero-action evaluation)."""
        write_json(self.path / "progress.json", state)

    def progress(self) -> dict[str, Any]:
        """progress.json as a dict.

        Keys that older versions did not write take their defaults (`_PROGRESS_DEFAULTS`).

        Raises:
            FileNotFoundError: the folder holds no checkpoint of a run to resume.
            ValueError: progress.json lacks a key resuming needs (`_PROGRESS_KEYS`), named
                with the version that wrote the run.
        """
        path = self.path / "progress.json"
        if not path.is_file():
            raise FileNotFoundError(
                f"{path}: no checkpoint of a gym-motion train run to resume in {self.path}"
            )
        state = json.loads(path.read_text())
        if not isinstance(state, dict):
            raise ValueError(f"{path}: expected a JSON object")
        missing = [k for k in _PROGRESS_KEYS if k not in state]
        if missing:
            raise ValueError(f"{path}: no {missing[0]!r}, which resuming needs "
                             f"({_written_by(self.config())})")  # fmt: skip
        return {**_PROGRESS_DEFAULTS, **state}

    # -- summary.json --------------------------------------------------------------------------

    def write_summary(self, summary: dict[str, Any]) -> None:
        """Write summary.json (atomically)."""
        write_json(self.path / "summary.json", summary)

    def summary(self) -> dict[str, Any] | None:
        """summary.json as written by `write_summary`, or None when the run has none yet."""
        path = self.path / "summary.json"
        return json.loads(path.read_text()) if path.is_file() else None

    # -- best/: the policy of the run's best evaluation -------------------------------------------

    @property
    def best_path(self) -> Path:
        """``best/``: the policy of the run's best evaluation from the clip start (highest
        tracking reward per clip step, `gym_motion.training.progress.BEST_KEY`; periodic and
        final evaluations), a run folder of its own (``--model RUN/best``)."""
        return self.path / "best"

    def write_best(
        self,
        env_steps: int,
        learn_s: float,
        evaluation: dict[str, Any],
        save_policy: Callable[[Path], None],
    ) -> None:
        """Replace best/ with the policy `save_policy(folder)` writes, the run's config.json
        and a summary.json: the env steps and seconds of learning at which that policy was
        evaluated and the evaluation (``after``, as in the run's summary.json). best/ is built
        as ``best.tmp/`` and swapped in whole, so an interrupted write leaves the previous one.
        """
        tmp, old = self.path / "best.tmp", self.path / "best.old"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        kept = RunFolder(tmp)
        write_json(kept.config_path, self.config())
        save_policy(tmp)
        kept.write_summary({
            "run": str(self.best_path),
            "best_of": f"the evaluations of {self.path} from the clip start, by {BEST_KEY}",
            "env_steps": int(env_steps),
            "train_wall_s": round(learn_s, 2),
            "after": evaluation,
        })  # fmt: skip
        shutil.rmtree(old, ignore_errors=True)
        if self.best_path.exists():
            self.best_path.rename(old)
        tmp.rename(self.best_path)
        shutil.rmtree(old, ignore_errors=True)

    def best_evaluation(self) -> dict[str, float] | None:
        """``{"timesteps", "score"}`` of the policy in best/ (its `BEST_KEY` score), or None
        when the run has no best/."""
        summary = RunFolder(self.best_path).summary()
        if summary is None:
            return None
        return {
            "timesteps": float(summary["env_steps"]),
            "score": float(summary["after"]["mean"][BEST_KEY]),
        }

    # -- the trained policy --------------------------------------------------------------------

    def _learner(self):
        from gym_motion.training.libraries import learner_class

        try:
            return learner_class(self.library())
        except ValueError as exc:
            raise ValueError(f"{self.config_path}: {exc}") from None

    def policy(self) -> Policy:
        """The run's deterministic policy (on the CPU), loaded by the library that trained it
        (which is imported now): obs (N, D) float32, or dict groups -> actions (N, A) float32.

        Raises:
            ValueError: config.json names a library gym_motion does not know.
            FileNotFoundError: the folder lacks the files the library needs.
        """
        return self._learner().load_policy(self.path)

    def actor_module(self):
        """The run's deterministic actor as a torch module, observation normalisation folded
        in: ``(module, D, J)``, the module from ``obs`` (B, D) float32 (the policy group) to
        ``actions`` (B, J) float32.

        Raises:
            ValueError: an unknown library, or an actor that reads more than the policy group.
            FileNotFoundError: the folder lacks the files the library needs.
        """
        return self._learner().actor_module(self.path)


# progress.json: what resuming cannot do without, and what older versions did not write
_PROGRESS_KEYS = ("env_steps", "history", "evals", "learn_s")
_PROGRESS_DEFAULTS: dict[str, Any] = {"checkpoints": 0, "next_eval": None,
                                      "terminations_switched_on": {}}  # fmt: skip


def clip_digests(paths: Sequence[str | os.PathLike]) -> list[str]:
    """SHA-256 (hex) of each clip file `paths` name (folders: their files, in library order,
    `gym_motion.motion.library.motion_files`); a run folder records them to know its clips
    at another path."""
    out = []
    for f in motion_files(paths):
        digest = hashlib.sha256()
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        out.append(digest.hexdigest())
    return out


def _written_by(config: dict[str, Any]) -> str:
    """Which gym_motion wrote a run's config.json, and which reads it (for messages)."""
    import gym_motion

    versions = config.get("versions")
    wrote = versions.get("gym_motion") if isinstance(versions, dict) else None
    return (
        f"written by gym_motion {wrote or 'of unknown version'}, read by {gym_motion.__version__}"
    )


def _env_cfg(config: dict[str, Any], source: str) -> TrackingEnvCfg:
    from gym_motion.robots import ROBOTS

    env = config.get("env")
    if not isinstance(env, dict):
        raise ValueError(f"{source}: no 'env' section (the task config of the run)")
    if "__type__" in env:
        try:
            return TrackingEnvCfg.from_json(json.dumps(env))
        except ValueError as exc:
            raise ValueError(f"{source}: env: {exc} ({_written_by(config)})") from None
    recorded = env.get("robot")
    name = recorded.get("name") if isinstance(recorded, dict) else None
    if name not in ROBOTS:
        raise ValueError(f"{source}: env.robot.name is {name!r}; known robots: {sorted(ROBOTS)}")
    robot = ROBOTS[name]
    for key in _ROBOT_KEYS:
        if key not in recorded:
            continue
        ours = getattr(robot, key)
        theirs = recorded[key]
        same = (
            tuple(theirs) == tuple(ours)
            if isinstance(ours, tuple)
            else theirs == ours
            if isinstance(ours, str)
            else np.allclose(np.asarray(theirs, np.float64), ours, rtol=1e-9, atol=0.0)
        )
        if not same:
            raise ValueError(
                f"{source}: env.robot.{key} differs from robot {name!r} of this gym_motion; "
                "the run was trained with another robot definition"
            )
    return TrackingEnvCfg.for_robot(robot, state_estimation=bool(env.get("state_estimation", True)))


def _policy_layout(cfg: TrackingEnvCfg) -> dict[str, int]:
    """The policy group's term names and widths, in order."""
    return {name: t.dim for name, t in cfg.observations["policy"].items()}
