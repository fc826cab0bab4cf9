"""Motion checks to run before training: what in a reference even a perfect tracker pays for.

`check_motion` poses the robot's simulation model (floor included) in every frame of a clip
and reports, per joint, body or body pair, in how many frames and how badly the reference

- leaves the joint ranges of the model (hard limits; the robot cannot get there),
- leaves the soft joint limits, `RobotSpec.soft_joint_limits` (90 % of each range; the
  ``joint_limit`` penalty, docs/task.md section 7, charges every such step),
- interpenetrates robot collision geoms (MuJoCo ``mj_collision`` on the reference pose, with
  the model's contact filters and excluded pairs; the ``self_collision`` penalty),
- puts collision geoms below the floor (z = 0),
- lifts both feet off the floor (airborne, or a retarget that hovers: a tracker standing on the
  floor is that much lower than the reference),
- slides the stance foot (the foot geom nearest the floor, while it stays nearest and neither
  lifts nor lands): a tracker whose feet grip the floor cannot follow the reference's route
  without slipping,
- jumps a joint by more than ``MAX_JOINT_JUMP`` rad from one frame to the next.

``gym-motion inspect`` prints `MotionReport.lines`; conversion (`gym_motion.motion.convert`)
issues `MotionReport.warning_messages` as `MotionCheckWarning` warnings.

Example:
    >>> from gym_motion.motion import DEFAULT_MOTION_PATH, load_clip
    >>> from gym_motion.motion.checks import check_motion
    >>> report = check_motion(load_clip(DEFAULT_MOTION_PATH))
    >>> report.soft_limits.frames  # frames with some joint beyond its soft limits
    0
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import mujoco
import numpy as np

from gym_motion.motion import _kinematics
from gym_motion.motion.arrays import MotionClip
from gym_motion.motion.validation import MAX_JOINT_JUMP, first_frame_jump_hint
from gym_motion.robots.spec import FLOOR_GEOM, RobotSpec

__all__ = [
    "HOVER_TOL",
    "LIMIT_TOL",
    "PENETRATION_TOL",
    "SLIDE_SPEED",
    "STANCE_HEIGHT",
    "CheckResult",
    "Finding",
    "MotionCheckWarning",
    "MotionReport",
    "check_motion",
    "warn_motion_checks",
]

LIMIT_TOL = 1e-4  # rad beyond a limit before a frame counts (float32 round-off of clipped clips)
PENETRATION_TOL = 1e-3  # m of penetration before a contact counts
HOVER_TOL = 5e-3  # m between the floor and the feet's lowest point before a frame counts
STANCE_HEIGHT = 0.03  # m: the foot geom nearest the floor stands on it when within this
SLIDE_SPEED = 0.05  # m/s of horizontal stance-geom speed before a frame step counts
TOP_JUMPS = 5  # largest joint jumps listed by MotionReport


class MotionCheckWarning(UserWarning):
    """A reference motion that a perfect tracker cannot follow or is penalised for."""


@dataclass(frozen=True)
class Finding:
    """One joint, body or body pair that fails a check in some frames.

    Attributes:
        name: joint, body, or ``"body_a <-> body_b"``.
        frames: number of frames that fail (for jumps: frame steps t -> t + 1).
        first_frame: first failing frame (for jumps: t of the first step).
        worst: largest excess: rad beyond a limit, m of penetration, m above the floor, m/s of
            a sliding stance foot, or rad of a jump.
        worst_frame: the frame of ``worst`` (for jumps: t of the step).
    """

    name: str
    frames: int
    first_frame: int
    worst: float
    worst_frame: int


@dataclass(frozen=True)
class CheckResult:
    """The findings of one check, most frequent first.

    Attributes:
        findings: one `Finding` per failing joint, body or body pair.
        frames: frames in which anything fails (frame steps for jumps).
        total: frames checked (frame steps for jumps).
    """

    findings: tuple[Finding, ...]
    frames: int
    total: int

    def __bool__(self) -> bool:
        return bool(self.findings)

    def share(self) -> str:
        """``"<frames> of <total> frames (<percent> %)"``."""
        return f"{self.frames} of {self.total} frames ({100.0 * self.frames / self.total:.1f} %)"


@dataclass(frozen=True)
class MotionReport:
    """What `check_motion` found in one clip; ``lines()`` is the ``gym-motion inspect`` text.

    Attributes:
        num_frames, fps, source_fps, duration: the clip's (duration in s).
        num_bodies, first_body: the clip's body arrays.
        root_height: (min, max) height of the root body origin, m.
        soft_limit_factor: fraction of each joint range inside the soft limits.
        hard_limits, soft_limits: per joint, rad beyond the range / the soft limits.
        self_penetration: per body pair, m of penetration of their collision geoms.
        floor_penetration: per body, m of its collision geoms below the floor.
        feet_off_floor: one finding ``"feet"``: m between the floor and the feet's lowest
            point, in frames where it exceeds ``HOVER_TOL``.
        stance_slide: per foot body, steps t -> t + 1 whose stance geom (the foot geom nearest
            the floor, within ``STANCE_HEIGHT``, at t and t + 1, neither lifting nor landing:
            vertical speed at most ``SLIDE_SPEED``) moves horizontally faster than
            ``SLIDE_SPEED`` (m/s, the geom centre's).
        stance_speed_median: median of that speed over all stance steps, m/s (0 without any).
        joint_jumps: per joint, steps with a change above ``MAX_JOINT_JUMP`` rad.
        largest_jumps: the largest single-joint steps, (joint, rad, frame t), largest first.
    """

    num_frames: int
    fps: float
    source_fps: float
    duration: float
    num_bodies: int
    first_body: str
    root_height: tuple[float, float]
    soft_limit_factor: float
    hard_limits: CheckResult
    soft_limits: CheckResult
    self_penetration: CheckResult
    floor_penetration: CheckResult
    feet_off_floor: CheckResult
    stance_slide: CheckResult
    stance_speed_median: float
    joint_jumps: CheckResult
    largest_jumps: tuple[tuple[str, float, int], ...]

    def lines(self) -> list[str]:
        """The report as text lines (no trailing newlines), as ``gym-motion inspect`` prints."""
        pct = f"{100.0 * self.soft_limit_factor:g} %"
        out = [
            f"frames:      {self.num_frames}",
            f"duration:    {self.duration:.3f} s",
            f"fps:         {self.fps:g} (source {self.source_fps:g})",
            f"bodies:      {self.num_bodies} ({self.first_body} first)",
            f"root height: {self.root_height[0]:.3f} .. {self.root_height[1]:.3f} m",
        ]
        sections = (
            ("hard joint limits (the model's ranges)", "joint(s)", self.hard_limits, "rad"),
            (f"soft joint limits ({pct} of each range)", "joint(s)", self.soft_limits, "rad"),
            (
                f"self-penetration (depth > {PENETRATION_TOL * 1e3:g} mm)",
                "body pair(s)",
                self.self_penetration,
                "mm",
            ),
            (
                f"floor penetration (depth > {PENETRATION_TOL * 1e3:g} mm)",
                "body(ies)",
                self.floor_penetration,
                "mm",
            ),
        )
        for title, what, result, unit in sections:
            if not result:
                out.append(f"{title}: none")
                continue
            out.append(f"{title}: {len(result.findings)} {what}, in {result.share()}")
            width = max(len(f.name) for f in result.findings)
            for f in result.findings:
                worst = f"{f.worst * 1e3:.1f} mm" if unit == "mm" else f"{f.worst:.4f} rad"
                share = 100.0 * f.frames / result.total
                out.append(
                    f"  {f.name:{width}s} {f.frames:6d} frames ({share:5.1f} %), first "
                    f"{f.first_frame}, worst {worst} at frame {self._at(f.worst_frame)}"
                )
        title = (
            f"feet above the floor (lowest point > {HOVER_TOL * 1e3:g} mm up; airborne or hovering)"
        )
        if not self.feet_off_floor:
            out.append(f"{title}: none")
        else:
            (f,) = self.feet_off_floor.findings
            out.append(
                f"{title}: in {self.feet_off_floor.share()}, first {f.first_frame}, highest "
                f"{f.worst * 1e3:.1f} mm at frame {self._at(f.worst_frame)}"
            )
        slide = self.stance_slide
        out.append(
            f"stance foot sliding (> {SLIDE_SPEED:g} m/s horizontally; median stance speed "
            f"{self.stance_speed_median:.3f} m/s): "
            + (f"{len(slide.findings)} foot body(ies), at {slide.frames} of {slide.total} frame "
               "steps" if slide else "none")
        )  # fmt: skip
        width = max((len(f.name) for f in slide.findings), default=0)
        for f in slide.findings:
            out.append(
                f"  {f.name:{width}s} {f.frames:6d} steps, first {f.first_frame} -> "
                f"{f.first_frame + 1}, fastest {f.worst:.3f} m/s at {self._at(f.worst_frame)} -> "
                f"{f.worst_frame + 1}"
            )
        jumps = self.joint_jumps
        title = f"joint jumps (> {MAX_JOINT_JUMP:g} rad from one frame to the next)"
        if not jumps:
            out.append(f"{title}: none")
        else:
            out.append(
                f"{title}: {len(jumps.findings)} joint(s), at {jumps.frames} of {jumps.total} "
                "frame steps"
            )
            width = max(len(f.name) for f in jumps.findings)
            for f in jumps.findings:
                out.append(
                    f"  {f.name:{width}s} {f.frames:6d} steps, first {f.first_frame} -> "
                    f"{f.first_frame + 1}, largest {f.worst:.4f} rad at "
                    f"{self._at(f.worst_frame)} -> {f.worst_frame + 1}"
                )
        top = len(self.largest_jumps)
        out.append(f"largest joint jumps between consecutive frames (top {top}):")
        for name, size, t in self.largest_jumps:
            out.append(f"  {name:28s} {size:.4f} rad, frame {t} -> {t + 1}")
        return out

    def _at(self, frame: int) -> str:
        """``"<frame> (<time> s)"``: frames count at the clip's rate, which conversion sets."""
        return f"{frame} ({frame / self.fps:.2f} s)"

    def warning_messages(self, source: str) -> list[str]:
        """One message per failing check, each naming ``source``, the share of frames and the
        worst joint/body with its frame; empty when every check passes."""
        messages = []
        pct = f"{100.0 * self.soft_limit_factor:g} %"
        for result, what in (
            (self.hard_limits, "beyond the model's joint ranges"),
            (self.soft_limits, f"beyond the soft joint limits ({pct} of the range; penalised)"),
        ):
            if result:
                w = max(result.findings, key=lambda f: f.worst)
                messages.append(
                    f"{source}: {len(result.findings)} joint(s) {what} in {result.share()}; "
                    f"worst {w.name!r} {w.worst:.3f} rad beyond at frame {self._at(w.worst_frame)}"
                )
        for result, what in (
            (self.self_penetration, "self-penetration of the reference pose (penalised)"),
            (self.floor_penetration, "bodies below the floor"),
        ):
            if result:
                w = max(result.findings, key=lambda f: f.worst)
                messages.append(
                    f"{source}: {what} in {result.share()}, {len(result.findings)} "
                    f"{'body pair(s)' if result is self.self_penetration else 'body(ies)'}; "
                    f"deepest {w.name} {w.worst * 1e3:.1f} mm at frame {self._at(w.worst_frame)}"
                )
        if self.feet_off_floor:
            (w,) = self.feet_off_floor.findings
            messages.append(
                f"{source}: both feet above the floor (airborne or hovering) in "
                f"{self.feet_off_floor.share()}; highest {w.worst * 1e3:.1f} mm at frame "
                f"{self._at(w.worst_frame)}"
            )
        if self.stance_slide:
            w = max(self.stance_slide.findings, key=lambda f: f.worst)
            messages.append(
                f"{source}: the stance foot slides faster than {SLIDE_SPEED:g} m/s at "
                f"{self.stance_slide.frames} of {self.stance_slide.total} frame steps (median "
                f"stance speed {self.stance_speed_median:.3f} m/s); fastest {w.name} "
                f"{w.worst:.3f} m/s at {self._at(w.worst_frame)} -> {w.worst_frame + 1}"
            )
        if self.joint_jumps:
            w = max(self.joint_jumps.findings, key=lambda f: f.worst)
            messages.append(
                f"{source}: joint jumps above {MAX_JOINT_JUMP:g} rad per frame at "
                f"{self.joint_jumps.frames} frame step(s); largest {w.name!r} {w.worst:.3f} rad "
                f"from frame {self._at(w.worst_frame)} to {w.worst_frame + 1}"
                + first_frame_jump_hint(self.joint_jumps.frames, w.first_frame)
            )
        if messages:
            messages[-1] += " (gym-motion inspect lists every joint and body)"
        return messages


def check_motion(
    clip: MotionClip, robot: RobotSpec | None = None, top_jumps: int = TOP_JUMPS
) -> MotionReport:
    """Check every frame of ``clip`` against ``robot`` (default `gym_motion.robots.G1`).

    Args:
        clip: a clip of the robot (its joints in ``robot.joint_names`` order and its root body
            among its bodies, as `load_clip` and the converters return them).
        robot: the robot; its simulation model (`RobotSpec.build_model`, with the floor) gives
            joint ranges, collision geoms, contact filters and excluded pairs.
        top_jumps: how many of the largest single-joint frame-to-frame changes to list.

    Returns:
        `MotionReport`.

    Raises:
        ValueError: the clip's joints are not the robot's, or it lacks the root body.
    """
    robot = _kinematics.default_robot() if robot is None else robot
    if clip.joint_names != tuple(robot.joint_names):
        raise ValueError(
            f"the clip's joints {list(clip.joint_names)} are not robot {robot.name!r}'s "
            f"{list(robot.joint_names)}"
        )
    if robot.root_body not in clip.body_names:
        raise ValueError(f"the clip lacks the root body {robot.root_body!r}")
    model = _collision_model(robot)
    joint_pos = clip.joint_pos.astype(np.float64)
    ids = robot.joint_ids(model)
    ranges = model.jnt_range[ids]
    limited = model.jnt_limited[ids].astype(bool)
    hard = _beyond(joint_pos, ranges, limited)
    soft = _beyond(joint_pos, robot.soft_joint_limits(model), limited)
    root = clip.body_index(robot.root_body)
    self_depth, floor_depth, pair_names, body_names = _penetrations(clip, robot, model, root)
    height, slide, stance_speed, foot_names = _feet(clip, robot, model, root)
    jumps = np.abs(np.diff(joint_pos, axis=0))
    names = clip.joint_names
    order = np.argsort(jumps, axis=None)[::-1][: max(0, int(top_jumps))]
    largest = tuple(
        (names[j], float(jumps[t, j]), int(t))
        for t, j in (np.unravel_index(flat, jumps.shape) for flat in order)
    )
    root_z = clip.body_pos_w[:, root, 2]
    return MotionReport(
        num_frames=clip.num_frames,
        fps=clip.fps,
        source_fps=clip.source_fps,
        duration=clip.duration,
        num_bodies=len(clip.body_names),
        first_body=clip.body_names[0],
        root_height=(float(root_z.min()), float(root_z.max())),
        soft_limit_factor=robot.soft_limit_factor,
        hard_limits=_result(hard, names, LIMIT_TOL),
        soft_limits=_result(soft, names, LIMIT_TOL),
        self_penetration=_result(self_depth, pair_names, PENETRATION_TOL),
        floor_penetration=_result(floor_depth, body_names, PENETRATION_TOL),
        feet_off_floor=_result(height[:, None], ["feet"], HOVER_TOL),
        stance_slide=_result(slide, foot_names, SLIDE_SPEED),
        stance_speed_median=float(np.median(stance_speed)) if stance_speed.size else 0.0,
        joint_jumps=_result(jumps, names, MAX_JOINT_JUMP),
        largest_jumps=largest,
    )


def warn_motion_checks(report: MotionReport, source: str, stacklevel: int = 2) -> None:
    """Issue each of ``report.warning_messages(source)`` as a `MotionCheckWarning`."""
    for message in report.warning_messages(source):
        warnings.warn(message, MotionCheckWarning, stacklevel=stacklevel + 1)


@functools.cache
def _collision_model(robot: RobotSpec) -> mujoco.MjModel:
    """The robot's simulation model with the floor (cached per spec)."""
    return robot.build_model(floor=True)


def _beyond(q: np.ndarray, limits: np.ndarray, limited: np.ndarray) -> np.ndarray:
    """(T, J) rad beyond the (J, 2) limits (<= 0 inside); 0 for unlimited joints."""
    over = np.maximum(q - limits[:, 1], limits[:, 0] - q)
    return np.where(limited, over, 0.0)


def _result(excess: np.ndarray, names, tol: float) -> CheckResult:
    """Findings of columns of ``excess`` (T, K) above ``tol``, most frequent first."""
    bad = excess > tol
    findings = []
    for k in np.flatnonzero(bad.any(axis=0)):
        frames = np.flatnonzero(bad[:, k])
        worst = int(np.argmax(excess[:, k]))
        findings.append(
            Finding(str(names[k]), len(frames), int(frames[0]), float(excess[worst, k]), worst)
        )
    findings.sort(key=lambda f: (-f.frames, -f.worst, f.name))
    return CheckResult(tuple(findings), int(bad.any(axis=1).sum()), excess.shape[0])


def _penetrations(
    clip: MotionClip, robot: RobotSpec, model: mujoco.MjModel, root: int
) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    """Penetration depths of the reference pose in every frame, from MuJoCo's collision pass.

    Returns:
        ``self_depth (T, P)`` m per body pair in contact in some frame, ``floor_depth (T, B)``
        m per body below the floor in some frame (0 where none), and their names.
    """
    floor = model.geom(FLOOR_GEOM).id
    body_of = model.geom_bodyid
    rows: list[tuple[int, int, int, float]] = []  # (frame, body_a, body_b or -1 floor, depth)
    for t, data in _posed(clip, robot, model, root):
        mujoco.mj_collision(model, data)
        n = data.ncon
        if n == 0:
            continue
        dist = data.contact.dist[:n]
        geoms = data.contact.geom[:n]
        for i in np.flatnonzero(dist < -PENETRATION_TOL):
            g1, g2 = int(geoms[i, 0]), int(geoms[i, 1])
            if g1 == floor or g2 == floor:
                rows.append((t, int(body_of[g2 if g1 == floor else g1]), -1, -float(dist[i])))
            else:
                a, b = sorted((int(body_of[g1]), int(body_of[g2])))
                rows.append((t, a, b, -float(dist[i])))
    self_keys = sorted({(a, b) for _, a, b, _ in rows if b >= 0})
    floor_keys = sorted({a for _, a, b, _ in rows if b < 0})
    self_depth = np.zeros((clip.num_frames, len(self_keys)))
    floor_depth = np.zeros((clip.num_frames, len(floor_keys)))
    self_col = {k: i for i, k in enumerate(self_keys)}
    floor_col = {k: i for i, k in enumerate(floor_keys)}
    for t, a, b, depth in rows:
        if b >= 0:
            c = self_col[(a, b)]
            self_depth[t, c] = max(self_depth[t, c], depth)
        else:
            c = floor_col[a]
            floor_depth[t, c] = max(floor_depth[t, c], depth)
    pair_names = [f"{model.body(a).name} <-> {model.body(b).name}" for a, b in self_keys]
    body_names = [model.body(a).name for a in floor_keys]
    return self_depth, floor_depth, pair_names, body_names


def _feet(
    clip: MotionClip, robot: RobotSpec, model: mujoco.MjModel, root: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Where the reference's feet meet the floor, from MuJoCo's geom distances.

    Returns:
        ``height (T,)`` m between the floor and the lowest foot geom (signed: < 0 below it);
        ``slide (T - 1, F)`` m/s horizontal speed of the stance geom per foot body (0 for the
        other feet and for steps without a stance): the foot geom nearest the floor, within
        ``STANCE_HEIGHT`` of it at t, nearest again at t + 1, and moving up or down at most
        ``SLIDE_SPEED`` (the geom centre's velocity by finite difference at the clip's rate);
        ``stance_speed (S,)`` m/s of every such stance step; the F foot body names
        (`RobotSpec.foot_bodies`).
    """
    geoms = robot.foot_geom_ids(model)
    floor = model.geom(FLOOR_GEOM).id
    feet = list(robot.foot_bodies)
    foot_of = np.array([feet.index(model.body(b).name) for b in model.geom_bodyid[geoms]])
    dist = np.empty((clip.num_frames, len(geoms)))
    centre = np.empty((clip.num_frames, len(geoms), 3))
    for t, data in _posed(clip, robot, model, root):
        for k, g in enumerate(geoms):
            dist[t, k] = mujoco.mj_geomDistance(model, data, int(g), floor, 10.0, None)
        centre[t] = data.geom_xpos[geoms]
    nearest = dist.argmin(axis=1)
    height = dist[np.arange(clip.num_frames), nearest]
    t = np.flatnonzero((height[:-1] <= STANCE_HEIGHT) & (nearest[1:] == nearest[:-1]))
    g = nearest[t]
    velocity = (centre[t + 1, g] - centre[t, g]) * clip.fps
    planted = np.abs(velocity[:, 2]) <= SLIDE_SPEED  # lift-off and landing are not sliding
    t, g = t[planted], g[planted]
    speed = np.linalg.norm(velocity[planted, :2], axis=1)
    slide = np.zeros((max(clip.num_frames - 1, 0), len(feet)))
    slide[t, foot_of[g]] = speed
    return height, slide, speed, feet


def _posed(clip: MotionClip, robot: RobotSpec, model: mujoco.MjModel, root: int):
    """Yield ``(t, data)``: one ``MjData`` after ``mj_kinematics`` of frame t's reference pose."""
    data = mujoco.MjData(model)
    layout = robot.layout(model)
    free, joints = layout.root_qpos_adr, layout.qpos_adr
    pos = clip.body_pos_w[:, root].astype(np.float64)
    quat = clip.body_quat_w[:, root].astype(np.float64)
    quat /= np.linalg.norm(quat, axis=-1, keepdims=True)
    for t in range(clip.num_frames):
        data.qpos[free : free + 3] = pos[t]
        data.qpos[free + 3 : free + 7] = quat[t]
        data.qpos[joints] = clip.joint_pos[t]
        mujoco.mj_kinematics(model, data)
        yield t, data
