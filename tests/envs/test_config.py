"""The config is one value that rebuilds the env: robot, task terms, backend settings."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from gym_motion.envs import TrackingEnvCfg, TrackingVecEnv, eval_cfg
from gym_motion.envs.config import BackendCfg
from gym_motion.managers.reward import RewardTermCfg
from gym_motion.motion import MotionFormatError
from gym_motion.robots import G1, RobotSpec

PACKAGE = Path(__file__).resolve().parents[2] / "gym_motion"


def rollout(env: TrackingVecEnv, steps: int = 20) -> np.ndarray:
    rng = np.random.default_rng(7)
    out = [env.reset(seed=0)[0]]
    for _ in range(steps):
        a = rng.normal(0.0, 0.5, (env.num_envs, 29)).astype(np.float32)
        obs, reward, *_ = env.step(a)
        out += [obs, reward[:, None]]
    return np.concatenate(out, axis=1)


def test_json_round_trip_gives_an_equal_config():
    rewards = dict(TrackingEnvCfg().rewards)
    rewards["action_rate"] = RewardTermCfg(rewards["action_rate"].func, -0.2)
    cfg = dataclasses.replace(
        TrackingEnvCfg(),
        rewards=rewards,
        backend=BackendCfg(num_threads=1, cpu_ids=(0,)),
        episode_length_s=7.0,
    )
    back = TrackingEnvCfg.from_json(cfg.to_json())
    assert back.robot is G1
    for f in dataclasses.fields(cfg):
        assert getattr(back, f.name) == getattr(cfg, f.name), f.name
    assert TrackingEnvCfg.from_json(eval_cfg().to_json()).events == {}


def test_env_rebuilt_from_its_config_json_steps_identically():
    env = TrackingVecEnv(4, backend_kwargs={"num_threads": 1})
    text = env.cfg.to_json()
    assert '"num_threads": 1' in text
    first = rollout(env)
    env.close()
    again = TrackingVecEnv(4, cfg=TrackingEnvCfg.from_json(text))
    assert again.cfg.backend.num_threads == 1
    np.testing.assert_array_equal(rollout(again), first)
    again.close()


def test_config_json_refuses_unknown_robots_and_unimported_functions():
    text = TrackingEnvCfg().to_json()
    with pytest.raises(ValueError, match="robot 'h1'"):
        TrackingEnvCfg.from_json(text.replace('"__robot__": "g1"', '"__robot__": "h1"'))
    evil = text.replace("gym_motion.managers.reward:anchor_pos", "shutil_nope:rmtree")
    with pytest.raises(ValueError, match="not imported"):
        TrackingEnvCfg.from_json(evil)


def test_backend_settings_are_checked_against_the_backend():
    assert BackendCfg().kwargs() == {"num_threads": None, "cpu_ids": None}
    with pytest.raises(ValueError, match="'mjwarp' backend"):
        BackendCfg(name="mujoco", nconmax=100).kwargs()
    with pytest.raises(ValueError, match="'mujoco' backend"):
        BackendCfg(name="mjwarp", num_threads=2).kwargs()
    with pytest.raises(ValueError, match=r"BackendCfg.name must be one of \['mjwarp', 'motrix', "):
        BackendCfg(name="bullet")
    with pytest.raises(ValueError, match="unknown backend settings"):
        TrackingVecEnv(1, backend_kwargs={"threads": 2})


def test_user_mjcf_is_the_model_clips_are_validated_against(tmp_path):
    xml = tmp_path / "g1_long_shins.xml"
    shutil.copy(G1.mjcf_path, xml)
    text = xml.read_text().replace(
        '<body name="left_ankle_pitch_link" pos="0 -9.4445e-05 -0.30001">',
        '<body name="left_ankle_pitch_link" pos="0 -9.4445e-05 -0.36001">',
    )
    assert text != xml.read_text()
    xml.write_text(text)
    with pytest.raises(MotionFormatError, match="forward kinematics"):
        TrackingVecEnv(1, model_path=xml)  # the default clip was made for the project's G1
    shutil.copy(G1.mjcf_path, xml)  # an identical model under another name is accepted
    env = TrackingVecEnv(1, model_path=xml)
    assert env.cfg.robot.mjcf_path == xml and env.model.nu == 29
    env.close()


def test_robot_spec_refuses_inconsistent_values():
    with pytest.raises(ValueError, match=r"kp has shape \(3,\)"):
        dataclasses.replace(G1, kp=np.ones(3))
    with pytest.raises(ValueError, match="not tracked bodies"):
        dataclasses.replace(G1, anchor_body="left_hip_pitch_link")
    with pytest.raises(ValueError, match="not in body_names"):
        dataclasses.replace(G1, foot_bodies=("left_foot",))
    assert isinstance(G1, RobotSpec) and not G1.kp.flags.writeable


def test_no_robot_names_in_backends_or_managers():
    for folder in ("backends", "managers"):
        for path in (PACKAGE / folder).glob("*.py"):
            text = path.read_text()
            for name in ("pelvis", "torso_link", "ankle_roll_link", "g1"):
                assert name not in text, f"{path.name} names {name!r}"


def feet_height(s, out, body_ids):  # a user term, named by this test module's path
    np.mean(s.robot.pos_w[:, body_ids, 2], axis=1, out=out)


@pytest.mark.parametrize(
    ("evil", "match"),
    [
        ('{"__type__": "os:system", "command": "true"}', "standard library"),
        ('{"__func__": "subprocess:call"}', "standard library"),
        # reached through a gym_motion module's attributes: not the object's own path
        ('{"__type__": "gym_motion.envs.cfg_json:importlib.import_module", "name": "os"}',
         "not a dataclass"),
        ('{"__type__": "gym_motion.envs.config:eval_cfg"}', "not a dataclass"),
        ('{"__func__": "gym_motion.envs.config:SimCfg"}', "not a Python function"),
        ('{"__type__": "numpy:save", "file": "x.npy", "arr": 1}', "not a dataclass"),
        ('{"__type__": 5}', "'module:name' string"),
    ],
)  # fmt: skip
def test_config_json_names_only_config_dataclasses_and_term_functions(evil, match):
    with pytest.raises(ValueError, match=match):
        TrackingEnvCfg.from_json(evil)


def test_config_json_round_trips_a_user_term_of_an_imported_module():
    rewards = dict(TrackingEnvCfg().rewards)
    rewards["feet_height"] = RewardTermCfg(feet_height, -0.5, {"bodies": ("pelvis",)})
    cfg = dataclasses.replace(TrackingEnvCfg(), rewards=rewards)
    back = TrackingEnvCfg.from_json(cfg.to_json())
    assert back.rewards["feet_height"].func is feet_height


def _bad_configs():
    """(build, message) pairs: each config value that used to pass silently or fail later
    (ZeroDivisionError, NaN rewards, a kernel reading past a short range table)."""
    from gym_motion.envs.config import ResetCfg, SamplingCfg, SimCfg
    from gym_motion.managers import reward
    from gym_motion.managers.events import EventTermCfg
    from gym_motion.managers.observation import ObsTermCfg
    from gym_motion.managers.termination import TerminationTermCfg

    nan, inf = float("nan"), float("inf")
    return [
        (lambda: SimCfg(decimation=0), r"SimCfg.decimation must be an integer >= 1, got 0"),
        (lambda: SimCfg(decimation=2.5), r"SimCfg.decimation must be an integer"),
        (lambda: SimCfg(decimation="4"), r"SimCfg.decimation must be an integer"),
        (lambda: SimCfg(physics_dt=0.0), r"SimCfg.physics_dt must be a finite number > 0"),
        (lambda: SimCfg(physics_dt=nan), r"SimCfg.physics_dt"),
        (lambda: SimCfg(self_contact_threshold=-1.0), r"SimCfg.self_contact_threshold"),
        (lambda: ResetCfg(pose_range=((0.3, 0.3), (0.0, 0.0))), r"ResetCfg.pose_range must be 6"),
        (lambda: ResetCfg(joint_pos_range=(nan, 0.0)), r"ResetCfg.joint_pos_range\[0\]"),
        (lambda: ResetCfg(joint_pos_range=(0.1, -0.1)), r"low <= high"),
        (lambda: SamplingCfg(bin_s=0.0), r"SamplingCfg.bin_s must be a finite number > 0"),
        (lambda: SamplingCfg(ema_alpha=0.0), r"SamplingCfg.ema_alpha must be a finite number in"),
        (lambda: SamplingCfg(mode="random"), r"SamplingCfg.mode must be one of"),
        (lambda: TrackingEnvCfg(episode_length_s=0.0), r"episode_length_s must be a finite"),
        (lambda: TrackingEnvCfg(episode_length_s=0.001), r"must be from one control step"),
        (lambda: TrackingEnvCfg(episode_length_s=inf), r"episode_length_s"),
        (lambda: TrackingEnvCfg(rewards=None), r"TrackingEnvCfg.rewards must be a dict"),
        (lambda: TrackingEnvCfg(sim=None), r"TrackingEnvCfg.sim must be a SimCfg"),
        (lambda: RewardTermCfg(reward.anchor_pos, nan, {"std": 0.3}), r"RewardTermCfg.weight"),
        (lambda: RewardTermCfg(reward.anchor_pos, "abc"), r"RewardTermCfg.weight"),
        (lambda: RewardTermCfg(reward.anchor_pos, 1.0, {"std": 0.0}), r"\['std'\] must be"),
        (lambda: RewardTermCfg(reward.anchor_pos, 1.0, {"std": -1.0}), r"\['std'\] must be"),
        (lambda: RewardTermCfg(reward.body_pos, 1.0, {"std": 0.3, "bodies": ()}),
         r"\['bodies'\] must be None .* or a non-empty tuple"),
        (lambda: RewardTermCfg("anchor_pos", 1.0), r"RewardTermCfg.func must be a function"),
        (lambda: TerminationTermCfg(print, None), r"TerminationTermCfg.params must be a dict"),
        (lambda: EventTermCfg(print, "sometimes"), r"EventTermCfg.mode must be one of"),
        (lambda: EventTermCfg(print, "interval"), r"interval_s is required for interval mode"),
        (lambda: EventTermCfg(print, "interval", interval_s=(0.0, 1)), r"\[0\] must be a finite"),
        (lambda: ObsTermCfg(print, 0), r"ObsTermCfg.dim must be an integer >= 1"),
        (lambda: ObsTermCfg(print, 3, nan), r"ObsTermCfg.noise"),
        (lambda: BackendCfg(num_threads=0), r"BackendCfg.num_threads must be an integer >= 1"),
        (lambda: BackendCfg(on_overflow="ignore"), r"BackendCfg.on_overflow"),
        (lambda: TrackingVecEnv(2.7), r"num_envs must be an integer >= 1, got 2.7"),
        (lambda: SimCfg(physics_dt=10**400), r"SimCfg.physics_dt must be a finite number"),
        (lambda: TrackingEnvCfg(sim=SimCfg(physics_dt=1e-320)), r"episode_length_s must be from"),
        (lambda: TrackingEnvCfg(episode_length_s=1e300), r"to 2,147,483,647 of them"),
        (lambda: TrackingVecEnv(1, max_episode_steps=2**31), r"max_episode_steps must be <"),
        (lambda: BackendCfg(device=5), r"BackendCfg.device must be a device name, got 5"),
    ]  # fmt: skip


@pytest.mark.parametrize("case", range(len(_bad_configs())))
def test_bad_config_values_are_refused_by_name(case):
    build, message = _bad_configs()[case]
    with pytest.raises(ValueError, match=message):
        build()


def test_config_json_values_are_checked_as_they_are_read():
    text = TrackingEnvCfg().to_json()
    # a hand-written robot entry may leave mjcf_path out (KeyError before)
    no_path = re.sub(r',\s*"mjcf_path": null', "", text, count=1)
    assert "mjcf_path" not in no_path and TrackingEnvCfg.from_json(no_path).robot is G1
    with pytest.raises(ValueError, match="SimCfg.decimation must be an integer"):
        TrackingEnvCfg.from_json(text.replace('"decimation": 4', '"decimation": "4"'))
    with pytest.raises(ValueError, match="RewardTermCfg.weight"):
        TrackingEnvCfg.from_json(text.replace('"weight": 0.5', '"weight": "abc"', 1))
    with pytest.raises(ValueError, match="TrackingEnvCfg.rewards must be a dict"):
        start = text.index('"rewards": {')
        end = text.index('"terminations"')
        TrackingEnvCfg.from_json(text[:start] + '"rewards": null,\n  ' + text[end:])


def test_checked_values_are_normalised_and_round_trip():
    from gym_motion.envs.config import ResetCfg, SimCfg

    sim = SimCfg(physics_dt=np.float64(0.005), decimation=np.int64(4))
    assert type(sim.decimation) is int and sim == SimCfg()
    reset = ResetCfg(joint_pos_range=[-0.1, 0.1])
    assert reset.joint_pos_range == (-0.1, 0.1) and reset == ResetCfg()
    arrays = ResetCfg(pose_range=np.array(ResetCfg().pose_range), joint_pos_range=np.array(
        [-0.1, 0.1]))  # fmt: skip
    assert arrays == ResetCfg() and isinstance(arrays.pose_range[0][0], float)


@pytest.mark.parametrize(
    ("term", "params", "message"),
    [
        ("foot_friction", {"friction_range": (-0.6, 1.2)},
         r"event term foot_friction: friction_range\[0\] must be a finite number > 0, got -0.6 "
         r"\(a friction coefficient"),
        ("foot_friction", {"friction_range": (0, 0)}, r"friction_range\[0\] must be .* > 0, got 0"),
        ("foot_friction", {"friction_range": (1.2, 0.3)},
         r"event term foot_friction: friction_range must have low <= high, got \(1.2, 0.3\)$"),
        ("encoder_bias", {"bias_range": (0.01, -0.01)}, r"encoder_bias: bias_range must have low"),
        ("push_root", {"velocity_range": ((-0.5, 0.5),) * 5},
         r"event term push_root: velocity_range must be 6 \(low, high\) pairs"),
        ("body_com_offset", {"body": "torso_link", "offset_range": ((0, 1), (0, 1), (1, 0))},
         r"body_com_offset: offset_range\[2\] must have low <= high"),
    ],
)  # fmt: skip
def test_event_ranges_are_checked_when_the_config_is_built(term, params, message):
    from gym_motion.managers import events
    from gym_motion.managers.events import EventTermCfg

    mode, interval = ("interval", (1.0, 3.0)) if term == "push_root" else ("startup", None)
    with pytest.raises(ValueError, match=message) as err:
        EventTermCfg(getattr(events, term), mode, params, interval_s=interval)
    assert "\n" not in str(err.value)
    # the default task's ranges pass, and survive the config's JSON
    cfg = TrackingEnvCfg()
    assert TrackingEnvCfg.from_json(cfg.to_json()) == cfg
