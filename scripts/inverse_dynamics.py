"""Feed-forward from a clip's inverse dynamics: does it help the zero residual policy stand?

The real-clip work's lever "MuJoCo `mj_inverse` torques as target offsets". For each clip frame the
reference state (root from the root body's pose and twist, joints from the clip) and its
acceleration (central differences of the velocities) go through `mujoco.mj_inverse`, which
gives the generalised forces ``qfrc_inverse`` that would produce that motion, contact forces
included only where the reference pose penetrates the floor. The joint part divided by the PD
stiffness is a joint-target offset (rad) that the PD servo turns back into that torque at the
reference pose and velocity. The script prints how dynamically consistent the clip is (the
force the free joint would need, which no actuator provides, against the robot's weight) and
plays the clip from its first frame (`gym_motion.evaluate.evaluate_clip`, residual actions as
in the jazz-walk recipe) with the zero residual and with the feed-forward as the residual, on
all joints and on the waist and arms only. For example (docs/measurements.md)::

    python scripts/inverse_dynamics.py --motion ../shared/motions/g1moves_jazzwalk_60fps.npz
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import mujoco
import numpy as np

from gym_motion.envs.config import TrackingEnvCfg
from gym_motion.evaluate import evaluate_clip
from gym_motion.kernels.reset import rsi_state
from gym_motion.motion.library import MotionLibrary


def reference_inverse_dynamics(clip: str, cfg: TrackingEnvCfg) -> dict[str, np.ndarray | float]:
    """The clip's inverse dynamics, per frame at the control rate (F frames).

    Returns:
        ``root_force`` (F, 3) N and ``joint_tau`` (F, J) N m, robot joint order: the parts of
        `mujoco.mj_inverse`'s ``qfrc_inverse`` on the free joint's translation (world frame)
        and on the joints; ``contacts`` (F,) int, the reference pose's contacts;
        ``joint_vel`` (F, J) rad/s, the clip's; ``weight`` N, the robot's.
    """
    robot, dt = cfg.robot, cfg.sim.control_dt
    lib = MotionLibrary.from_paths(clip, fps=1.0 / dt, robot=robot)
    model = robot.build_model(floor=True)
    lay = robot.layout(model)
    n, nj = int(lib.lengths[0]), len(robot.joint_names)
    qpos, qvel = np.tile(lay.qpos0, (n, 1)), np.zeros((n, model.nv))
    no_noise = np.zeros((6, 2))
    unlimited = np.tile([-np.inf, np.inf], (nj, 1))  # the clip's joints as they are
    rsi_state(
        lib.body_pos_w, lib.body_quat_w, lib.body_lin_vel_w, lib.body_ang_vel_w, lib.joint_pos,
        lib.joint_vel, lib.body_names.index(robot.root_body), np.arange(n), np.zeros((n, 12 + nj)),
        no_noise, no_noise, np.zeros(2), unlimited, lay.root_qpos_adr, lay.root_dof_adr,
        lay.qpos_adr, lay.dof_adr, qpos, qvel,
    )  # fmt: skip
    qacc = np.gradient(qvel, dt, axis=0)
    data = mujoco.MjData(model)
    qfrc, contacts = np.zeros((n, model.nv)), np.zeros(n, np.int64)
    for f in range(n):
        data.qpos[:], data.qvel[:], data.qacc[:] = qpos[f], qvel[f], qacc[f]
        mujoco.mj_inverse(model, data)
        qfrc[f], contacts[f] = data.qfrc_inverse, data.ncon
    root = lay.root_dof_adr
    return {
        "root_force": qfrc[:, root : root + 3],
        "joint_tau": qfrc[:, lay.dof_adr],
        "contacts": contacts,
        "joint_vel": qvel[:, lay.dof_adr],
        "weight": float(model.body_subtreemass[model.body(robot.root_body).id]) * 9.81,
    }


class FeedForward:
    """A `gym_motion.policy.BindablePolicy` whose residual action is a per-frame joint-target
    offset: ``offset`` (F, J) rad, divided by the action scale, at the env's next frame (the
    one the step's physics ends on), times ``mask`` (J,)."""

    def __init__(self, offset: np.ndarray, scale: np.ndarray, mask: np.ndarray):
        self.action = (offset * mask / scale).astype(np.float32)

    def bind(self, env):
        command, last = env.command, len(self.action) - 1
        return lambda obs: self.action[np.minimum(command.frames + 1, last)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--motion", required=True, help="the clip npz")
    args = p.parse_args()
    cfg = replace(TrackingEnvCfg(), action_offset="reference")
    robot = cfg.robot
    out = reference_inverse_dynamics(args.motion, cfg)
    tau = out["joint_tau"]
    print(f"{len(tau)} frames; the reference pose touches the floor in "
          f"{np.mean(out['contacts'] > 0):.0%} of them")  # fmt: skip
    force = np.round(np.abs(out["root_force"]).mean(0), 1)
    print(f"free-joint force no actuator gives, mean |x y z|: {force} N "
          f"(the robot weighs {out['weight']:.0f} N)")  # fmt: skip
    offset = (tau + robot.kd * out["joint_vel"]) / robot.kp  # PD: kp (target - q) - kd qdot
    legs = np.array(["hip" in j or "knee" in j or "ankle" in j for j in robot.joint_names])
    for name, rows in (("legs", legs), ("waist and arms", ~legs)):
        print(f"{name}: joint torque mean |tau| {np.abs(tau[:, rows]).mean():.1f} N m, "
              f"target offset mean {np.abs(offset[:, rows]).mean():.3f} rad, "
              f"max {np.abs(offset[:, rows]).max():.2f} rad")  # fmt: skip
    scale = np.asarray(robot.action_scale)
    policies = {
        "zero residual": None,
        "feed-forward, all joints": FeedForward(offset, scale, np.ones(len(legs))),
        "feed-forward, waist and arms": FeedForward(offset, scale, ~legs),
    }
    for name, policy in policies.items():
        r = evaluate_clip(args.motion, policy, cfg)
        end = r["terminations"][0]
        print(f"{name:30s} {r['episode_length']:.0f} of {r['max_episode_steps']} steps "
              f"({', '.join(end['causes'])}), MPKPE {r['mpkpe_mm']:.1f} mm, "
              f"root-relative {r['root_mpkpe_mm']:.1f} mm")  # fmt: skip


if __name__ == "__main__":
    main()
