"""The device MDP's terms: each built-in reward, termination and observation term's Warp
kernel, bound once to a `gym_motion.envs.device_mdp.DeviceMDP`'s buffers (`DEVICE_TERMS`), and
the built-in events it runs beside (`MIRRORED_EVENTS`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import warp as wp

from gym_motion.kernels.device import observations as k_obs
from gym_motion.kernels.device import rewards as k_rewards
from gym_motion.kernels.device import terminations as k_term
from gym_motion.managers import events as event_terms
from gym_motion.managers import observation as obs_terms
from gym_motion.managers import reward as reward_terms
from gym_motion.managers import termination as term_terms

__all__ = ["DEVICE_TERMS", "MIRRORED_EVENTS", "Launch", "binder", "bound", "launch", "refusal"]

Launch = Callable[[], None]
DeviceMDP = Any  # a `gym_motion.envs.device_mdp.DeviceMDP`, whose buffers the binders read

# A device binder takes (mdp, out, **params) and returns its kernel launch, bound once; `out`
# is an (N,) row of the reward or termination outputs, or for an observation term the group
# buffer (N, D) and ``col``, its first column.


def bound(mdp: DeviceMDP, kernel: Any, *args: Any, dim: Any = None) -> wp.Launch:
    """`kernel`'s launch over `dim` (default N) threads with `args`, bound once (replayed
    without packing its arguments again; ``set_dim`` and ``set_param_by_name`` change it)."""
    return wp.launch(kernel, dim=mdp.num_envs if dim is None else dim, inputs=list(args),
                     device=mdp.device, record_cmd=True)  # fmt: skip


def launch(mdp: DeviceMDP, kernel: Any, *args: Any) -> Launch:
    """`bound`'s launch over N threads, as a callable that replays it."""
    return bound(mdp, kernel, *args).launch


def _anchor(arr: wp.array, a: int) -> wp.array:
    return arr[:, a]


def _reward_binders() -> dict[Callable, Callable[..., Launch]]:
    r = reward_terms

    def body_exp(ref_of: Callable, robot_of: Callable) -> Callable[..., Launch]:
        def bind(d: DeviceMDP, out: wp.array, std: float, body_ids: np.ndarray) -> Launch:
            return launch(d, k_rewards.body_pos_exp, ref_of(d), robot_of(d), d.ids(body_ids),
                          float(std), out)  # fmt: skip

        return bind

    def body_ori(d: DeviceMDP, out: wp.array, std: float, body_ids: np.ndarray) -> Launch:
        return launch(d, k_rewards.body_ori_exp, d.ref_rel_quat_w, d.robot.quat_w,
                      d.ids(body_ids), float(std), out)  # fmt: skip

    return {
        r.anchor_pos: lambda d, out, std: launch(
            d, k_rewards.anchor_pos_exp, _anchor(d.ref.pos_w, d.anchor),
            _anchor(d.robot.pos_w, d.anchor), float(std), out),
        r.anchor_ori: lambda d, out, std: launch(
            d, k_rewards.anchor_ori_exp, _anchor(d.ref.quat_w, d.anchor),
            _anchor(d.robot.quat_w, d.anchor), float(std), out),
        r.body_pos: body_exp(lambda d: d.ref_rel_pos_w, lambda d: d.robot.pos_w),
        r.body_ori: body_ori,
        r.body_lin_vel: body_exp(lambda d: d.ref.lin_vel_w, lambda d: d.robot.lin_vel_w),
        r.body_ang_vel: body_exp(lambda d: d.ref.ang_vel_w, lambda d: d.robot.ang_vel_w),
        r.action_rate: lambda d, out: launch(
            d, k_rewards.action_rate_l2, d.action, d.last_action, out),
        r.joint_limit: lambda d, out: launch(
            d, k_rewards.joint_limit_violation, d.robot.joint_pos, d.soft_joint_limits, out),
        r.self_collision: lambda d, out: launch(
            d, k_rewards.count_as_value, d.self_contact_substeps, out),
    }  # fmt: skip


def _termination_binders() -> dict[Callable, Callable[..., Launch]]:
    t = term_terms

    def anchor_horizontal(d: DeviceMDP, out: wp.array, threshold: float,
                          grace_steps: int = 0) -> Launch:  # fmt: skip
        if not (isinstance(grace_steps, int | np.integer) and grace_steps >= 0):
            raise ValueError(f"anchor_horizontal: grace_steps must be an integer >= 0, got "
                             f"{grace_steps!r}")  # fmt: skip
        return launch(d, k_term.horizontal_error_exceeds, d.ref.pos_w, d.robot.pos_w,
                      d.ids([d.anchor]), float(threshold), d.steps_since_perturbation,
                      int(grace_steps), out)  # fmt: skip

    return {
        t.anchor_height: lambda d, out, threshold: launch(
            d, k_term.height_error_exceeds, d.ref.pos_w, d.robot.pos_w, d.ids([d.anchor]),
            float(threshold), out),
        t.anchor_horizontal: anchor_horizontal,
        t.anchor_gravity: lambda d, out, threshold: launch(
            d, k_term.gravity_z_error_exceeds, _anchor(d.ref.quat_w, d.anchor),
            _anchor(d.robot.quat_w, d.anchor), float(threshold), out),
        t.body_height: lambda d, out, threshold, body_ids: launch(
            d, k_term.height_error_exceeds, d.ref_rel_pos_w, d.robot.pos_w, d.ids(body_ids),
            float(threshold), out),
    }  # fmt: skip


def _observation_binders() -> dict[Callable, Callable[..., Launch]]:
    o = obs_terms

    def anchor_row(arr: wp.array, a: int) -> wp.array:
        return arr[:, a : a + 1]

    return {
        o.command: lambda d, out, col: launch(
            d, k_obs.reference_joints, d.obs_ref.joint_pos, d.obs_ref.joint_vel, out, col),
        o.anchor_pos_b: lambda d, out, col: launch(
            d, k_obs.pos_in_frame, _anchor(d.robot.pos_w, d.anchor),
            _anchor(d.robot.quat_w, d.anchor), anchor_row(d.obs_ref.pos_w, d.anchor), out, col),
        o.anchor_ori_b: lambda d, out, col: launch(
            d, k_obs.ori_in_frame_6d, _anchor(d.robot.quat_w, d.anchor),
            anchor_row(d.obs_ref.quat_w, d.anchor), out, col),
        o.anchor_vel_b: lambda d, out, col: launch(
            d, k_obs.twist_in_frame, _anchor(d.robot.quat_w, d.anchor),
            _anchor(d.obs_ref.lin_vel_w, d.anchor), _anchor(d.obs_ref.ang_vel_w, d.anchor), out,
            col),
        o.imu_lin_vel: lambda d, out, col: launch(
            d, k_obs.point_vel_in_frame, _anchor(d.robot.quat_w, d.root),
            _anchor(d.robot.lin_vel_w, d.root), _anchor(d.robot.ang_vel_w, d.root),
            d.imu_pos_b, out, col),
        o.base_lin_vel: lambda d, out, col: launch(
            d, k_obs.vec_in_frame, _anchor(d.robot.quat_w, d.root),
            anchor_row(d.robot.lin_vel_w, d.root), out, col),
        o.base_ang_vel: lambda d, out, col: launch(
            d, k_obs.vec_in_frame, _anchor(d.robot.quat_w, d.root),
            anchor_row(d.robot.ang_vel_w, d.root), out, col),
        o.joint_pos: lambda d, out, col: launch(
            d, k_obs.joint_offsets, d.robot.joint_pos, d.default_joint_pos, d.encoder_bias,
            out, col),
        o.joint_vel: lambda d, out, col: launch(
            d, k_obs.copy_columns, d.robot.joint_vel, out, col),
        o.last_action: lambda d, out, col: launch(
            d, k_obs.copy_columns, d.action_obs, out, col),
        o.body_pos_b: lambda d, out, col: launch(
            d, k_obs.pos_in_frame, _anchor(d.robot.pos_w, d.anchor),
            _anchor(d.robot.quat_w, d.anchor), d.robot.pos_w, out, col),
        o.body_ori_b: lambda d, out, col: launch(
            d, k_obs.ori_in_frame_6d, _anchor(d.robot.quat_w, d.anchor), d.robot.quat_w, out,
            col),
    }  # fmt: skip


DEVICE_TERMS: dict[str, dict[Callable, Callable[..., Launch]]] = {
    "reward": _reward_binders(),
    "termination": _termination_binders(),
    "observation": _observation_binders(),
}
"""The built-in terms that run on the device, per kind: host term function -> device binder."""

MIRRORED_EVENTS = frozenset({event_terms.body_com_offset, event_terms.foot_friction,
                             event_terms.encoder_bias, event_terms.push_root})  # fmt: skip
"""The built-in event terms, which run on the host beside the device MDP: they read nothing it
owns, and write the model (friction, mass), the backend's state (pushes) or the encoder bias,
each of which reaches the device. An event of its own could read a stale host copy."""


def _no_kernel(kind: str, name: str, func: Callable) -> str:
    return (
        f"{kind} term {name!r} ({getattr(func, '__qualname__', func)!r}) has no device "
        f"kernel: the device MDP runs the package's built-in terms only; use "
        f"BackendCfg(mdp='host') for a task with terms of its own"
    )


def refusal(cfg: Any) -> str | None:
    """Why the device MDP cannot run task `cfg` (a `TrackingEnvCfg`): its first reward,
    termination or observation term without a device kernel, or its first event term that is
    not built in (`MIRRORED_EVENTS`: an event of its own could read a stale host copy), named;
    None when it can."""
    terms = [("reward", n, t.func) for n, t in cfg.rewards.items()]
    terms += [("termination", n, t.func) for n, t in cfg.terminations.items()]
    terms += [("observation", f"{g}/{n}", t.func)
              for g, group in cfg.observations.items() for n, t in group.items()]  # fmt: skip
    for kind, name, func in terms:
        if func not in DEVICE_TERMS[kind]:
            return _no_kernel(kind, name, func)
    for name, term in cfg.events.items():
        if term.func not in MIRRORED_EVENTS:
            return (
                f"event term {name!r} ({getattr(term.func, '__qualname__', term.func)!r}) "
                "is not one of the package's built-in events, which the device MDP mirrors; "
                "use BackendCfg(mdp='host') for a task with events of its own"
            )
    return None


def binder(kind: str, name: str, func: Callable) -> Callable[..., Launch]:
    """The device binder of term `name` of `kind` ("reward", "termination", "observation"),
    whose host function is `func`.

    Raises:
        ValueError: `func` is not a built-in term (it has no device kernel), named.
    """
    bind = DEVICE_TERMS[kind].get(func)
    if bind is None:
        raise ValueError(_no_kernel(kind, name, func))
    return bind
