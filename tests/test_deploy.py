"""Policies in and out: ONNX import with deploy metadata (`gym_motion.deploy`), export
(`gym_motion.training.export`), frame-per-step clip playback, and `gym-motion eval --onnx`.

The real client is the shared B_Fence1 policy (trained in mjlab, ``../shared/policies``; tests
that need it skip when it is absent). The SB3 round trip trains a tiny run (2 envs, a few
PPO updates) in a temporary folder.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper, numpy_helper  # noqa: E402

from gym_motion.cli import main  # noqa: E402
from gym_motion.deploy import (  # noqa: E402
    METADATA_KEYS,
    OBSERVATION_TERM_KEYS,
    OBSERVED_FRAME_KEY,
    OnnxPolicy,
    PolicyMeta,
    deploy_metadata,
)
from gym_motion.envs.config import TrackingEnvCfg, eval_cfg  # noqa: E402
from gym_motion.envs.tracking import TrackingVecEnv  # noqa: E402
from gym_motion.evaluate import ending, evaluate_policy_on_clips  # noqa: E402
from gym_motion.motion import DEFAULT_MOTION_PATH, MotionLibrary, load_clip, save_clip  # noqa: E402
from gym_motion.robots.g1 import G1  # noqa: E402

SHARED_POLICY = Path(__file__).resolve().parents[1].parent / "shared" / "policies"
FENCE = SHARED_POLICY / "g1moves_B_Fence1"
FENCE_ONNX, FENCE_NPZ = FENCE / "B_Fence1.onnx", FENCE / "B_Fence1.npz"


@pytest.fixture(scope="module")
def fence() -> Path:
    if not FENCE_ONNX.is_file() or not FENCE_NPZ.is_file():
        pytest.skip(f"shared B_Fence1 policy not found at {FENCE} (needs ../shared/policies)")
    return FENCE


def props(path: Path) -> dict[str, str]:
    return {p.key: p.value for p in onnx.load(str(path)).metadata_props}


def with_props(model: onnx.ModelProto, values: dict[str, str]) -> onnx.ModelProto:
    del model.metadata_props[:]
    for k, v in values.items():
        e = model.metadata_props.add()
        e.key, e.value = k, v
    return model


def breadth_first_joint_order() -> tuple[str, ...]:
    """The G1's joints in Isaac Lab's order: breadth-first over the kinematic tree."""
    model = G1.build_model()
    order, queue = [], [model.body(G1.root_body).id]
    while queue:
        body = queue.pop(0)
        for j in range(model.njnt):
            if model.jnt_bodyid[j] == body and model.joint(j).name in G1.joint_names:
                order.append(model.joint(j).name)
        queue += [b for b in range(model.nbody) if model.body_parentid[b] == body and b != body]
    return tuple(order)


def rewrap(src: Path, dst: Path, order: tuple[str, ...], pose_shift: np.ndarray,
           scale_factor: np.ndarray) -> None:  # fmt: skip
    """A copy of a G1-order 160-obs ONNX policy whose metadata states joint order `order`, a
    default pose shifted by `pose_shift` and action scale times `scale_factor` ((29,) in G1
    order), and whose graph is wrapped so that it computes the same joint targets: its
    observation is mapped back onto the original's, its actions onto the new conventions."""
    m = onnx.load(str(src))
    meta = props(src)
    j = len(G1.joint_names)
    perm = np.array([G1.joint_names.index(n) for n in order])  # policy joint i = G1 joint perm[i]
    inv = np.argsort(perm)
    d, s = G1.default_joint_pos, G1.action_scale
    # original obs (G1 order) = new obs gathered by idx, times mul, plus add
    idx = np.arange(160)
    mul, add = np.ones(160, np.float32), np.zeros(160, np.float32)
    for start in (0, 29, 73, 102, 131):  # command pos, command vel, joint pos, vel, last action
        idx[start : start + j] = start + inv
    add[73:102] = pose_shift  # q - d = (q - d') + shift
    mul[131:160] = scale_factor  # a = (d' + s' a' - d) / s = k a' + shift / s
    add[131:160] = pose_shift / s
    g = m.graph
    for node in g.node:
        node.input[:] = ["obs_orig" if x == "obs" else x for x in node.input]
        node.output[:] = ["actions_orig" if x == "actions" else x for x in node.output]
    consts = {
        "idx_obs": idx.astype(np.int64), "mul_obs": mul, "add_obs": add,
        "act_mul": (1.0 / scale_factor).astype(np.float32),
        "act_add": (-pose_shift / (s * scale_factor)).astype(np.float32),
        "idx_act": perm.astype(np.int64),
    }  # fmt: skip
    g.initializer.extend(numpy_helper.from_array(v, k) for k, v in consts.items())
    pre = [
        helper.make_node("Gather", ["obs", "idx_obs"], ["obs_g"], axis=1),
        helper.make_node("Mul", ["obs_g", "mul_obs"], ["obs_m"]),
        helper.make_node("Add", ["obs_m", "add_obs"], ["obs_orig"]),
    ]
    # a' = (d + s a - d') / s' = a / k - shift / (s k), then into the new joint order
    post = [
        helper.make_node("Mul", ["actions_orig", "act_mul"], ["act_m"]),
        helper.make_node("Add", ["act_m", "act_add"], ["act_a"]),
        helper.make_node("Gather", ["act_a", "idx_act"], ["actions"], axis=1),
    ]
    nodes = pre + list(g.node) + post
    del g.node[:]
    g.node.extend(nodes)
    for key, values in (("joint_stiffness", None), ("joint_damping", None),
                        ("default_joint_pos", d + pose_shift),
                        ("action_scale", s * scale_factor)):  # fmt: skip
        if values is None:
            old = meta[key].split(",")
            meta[key] = ",".join(old[i] for i in perm)
        else:
            meta[key] = ",".join(repr(float(values[i])) for i in perm)
    meta["joint_names"] = ",".join(order)
    onnx.save(with_props(m, meta), str(dst))


# ---------------------------------------------------------------------------------------------
# the shared mjlab policy


def test_shared_policy_tracks_its_clip_frame_per_step_through_the_cli(fence, tmp_path, capsys):
    out = tmp_path / "sub" / "fence.json"
    argv = ["eval", "--onnx", str(FENCE_ONNX), "--motion", str(FENCE_NPZ), "--frame-per-step",
            "--json", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    (clip,) = result["clips"].values()
    assert result["policy"] == "onnx" and clip["playback"] == "frame_per_step"
    assert clip["max_episode_steps"] == 1618  # 1619 file frames, one per step
    assert clip["episode_length"] >= 1600 and clip["mpkpe_mm"] <= 60.0
    (end,) = clip["terminations"]
    assert end["step"] == clip["episode_length"]
    assert end["causes"] == (["time_out"] if end["step"] == 1618 else end["causes"])
    assert "GymMotion/G1-Tracking-v0: joint order as the env's" in printed
    assert ending(end) in printed


def test_shared_policy_tracks_its_clip_in_real_time(fence):
    result = evaluate_policy_on_clips([FENCE_NPZ], OnnxPolicy(FENCE_ONNX))
    (clip,) = result["clips"].values()
    assert clip["playback"] == "real_time" and clip["max_episode_steps"] == 1348
    assert clip["episode_length"] >= 1300, clip["terminations"]


def test_shared_policy_metadata_maps_onto_the_g1_unchanged(fence):
    policy = OnnxPolicy(FENCE_ONNX)
    assert policy.takes_time_step and policy.state_estimation
    m = policy.mapping(eval_cfg(), "G1")
    # written with 3 decimals, every value is the G1's rounded: nothing is re-based
    assert not m.permuted and not m.rebased and m.obs_dim == 160
    np.testing.assert_array_equal(m.action_scale, G1.action_scale)
    obs = np.random.default_rng(0).normal(size=(3, 160)).astype(np.float32)
    np.testing.assert_array_equal(m.observation(obs), obs)
    np.testing.assert_array_equal(m.actions(obs[:, :29]), obs[:, :29])


def test_time_step_input_gets_the_motion_frame(fence):
    policy = OnnxPolicy(FENCE_ONNX)
    env = TrackingVecEnv(1, motion=FENCE_NPZ, cfg=eval_cfg(), motion_playback="frame_per_step")
    try:
        act = policy.bind(env)
        obs, _ = env.reset(seed=0)
        fed = []
        real_run = policy.run
        policy.run = lambda o, t=None: fed.append(t.copy()) or real_run(o, t)
        for _ in range(3):
            obs, *_ = env.step(act(obs))
    finally:
        env.close()
    assert [f.tolist() for f in fed] == [[[0.0]], [[1.0]], [[2.0]]]
    assert all(f.dtype == np.float32 for f in fed)


def test_policy_in_isaac_lab_joint_order_with_its_own_pose_and_scale_acts_the_same(fence, tmp_path):
    order = breadth_first_joint_order()
    assert order[:3] == ("left_hip_pitch_joint", "right_hip_pitch_joint", "waist_yaw_joint")
    assert sorted(order) == sorted(G1.joint_names) and order != G1.joint_names
    rng = np.random.default_rng(1)
    shift = rng.uniform(-0.1, 0.1, 29)
    factor = rng.uniform(0.8, 1.25, 29)
    wrapped = tmp_path / "isaac.onnx"
    rewrap(FENCE_ONNX, wrapped, order, shift, factor)
    original, mapped_policy = OnnxPolicy(FENCE_ONNX), OnnxPolicy(wrapped)
    env = TrackingVecEnv(1, motion=FENCE_NPZ, cfg=eval_cfg(), motion_playback="frame_per_step",
                         autoreset_mode="disabled")  # fmt: skip
    try:
        mapped, reference = mapped_policy.bind(env), original.bind(env)
        assert mapped.mapping.permuted and mapped.mapping.rebased
        obs, _ = env.reset(seed=0)
        diffs, terminated = [], False
        for _ in range(400):
            a = mapped(obs)
            diffs.append(np.abs(a - reference(obs)).max())
            obs, _, te, tr, info = env.step(a)
            terminated |= bool(te[0])
    finally:
        env.close()
    # the first step differs only by the last-action block after a reset (0 for each policy)
    assert max(diffs[1:]) < 1e-4, max(diffs[1:])
    assert not terminated


def test_shared_policy_acts_the_same_on_a_model_in_another_tree_order(fence, reordered_g1_xml):
    """The mjlab policy's joint order is the robot's; the model's columns are another's."""
    runs = []
    for model_path in (None, reordered_g1_xml):
        env = TrackingVecEnv(
            1, motion=FENCE_NPZ, cfg=eval_cfg(), model_path=model_path,
            motion_playback="frame_per_step", autoreset_mode="disabled",
        )  # fmt: skip
        try:
            act = OnnxPolicy(FENCE_ONNX).bind(env)
            obs, _ = env.reset(seed=0)
            actions, ended = [], False
            for _ in range(200):
                actions.append(act(obs))
                obs, _, te, tr, _ = env.step(actions[-1])
                ended |= bool(te[0] or tr[0])
            runs.append((np.concatenate(actions), env.command.errors.copy()))
        finally:
            env.close()
        assert not ended
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=0, atol=1e-4)
    np.testing.assert_allclose(runs[1][1], runs[0][1], rtol=0, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# what cannot be mapped


def fence_meta(**changes: str | None) -> dict[str, str]:
    """The G1's deploy metadata with `changes` (None: drop the key); other terms drop the
    per-term keys."""
    base = deploy_metadata(TrackingEnvCfg())
    if "observation_names" in changes:
        base = {k: v for k, v in base.items() if k not in OBSERVATION_TERM_KEYS}
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"joint_names": ",".join(G1.joint_names[:28]), "default_joint_pos": "0," * 27 + "0",
          "action_scale": "1," * 27 + "1", "joint_stiffness": None, "joint_damping": None},
         "the policy has 28 joints, robot 'g1' of G1 has 29"),
        ({"observation_names": "command,projected_gravity,joint_pos"},
         "unknown observation term 'projected_gravity'"),
        ({"anchor_body_name": "pelvis"}, "anchor body is 'pelvis'"),
        ({"joint_names": ",".join(("left_toe_joint",) + G1.joint_names[1:])},
         "joint_names ['left_toe_joint'] are not joints of robot 'g1'"),
        ({"action_scale": "0.5," * 28 + "x"}, "action_scale has a non-number 'x'"),
        ({"default_joint_pos": "0.0,0.0"}, "default_joint_pos has 2 values for 29 joint_names"),
    ],
)  # fmt: skip
def test_metadata_that_cannot_be_mapped_is_refused_in_one_line(changes, message):
    with pytest.raises(ValueError, match="policy.yaml: ") as err:
        PolicyMeta.from_mapping(fence_meta(**changes), "policy.yaml").mapping(eval_cfg(), "G1")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_state_estimation_terms_are_refused_by_the_no_state_estimation_env():
    meta = PolicyMeta.from_mapping(fence_meta(), "p.onnx")
    assert meta.needs_state_estimation()
    cfg = eval_cfg(TrackingEnvCfg(state_estimation=False))
    with pytest.raises(ValueError, match="observes 'motion_anchor_pos_b', which NoStateEst"):
        meta.mapping(cfg, "NoStateEst")
    no_se = PolicyMeta.from_mapping(fence_meta(**deploy_metadata(cfg)), "p.onnx")
    assert not no_se.needs_state_estimation() and no_se.mapping(cfg).obs_dim == 154
    # a 154-value policy also reads its terms out of the 160-value observation
    m = no_se.mapping(eval_cfg())
    obs = np.arange(160, dtype=np.float32)[None]
    want = np.concatenate([obs[0, :58], obs[0, 61:67], obs[0, 70:]])
    np.testing.assert_array_equal(m.observation(obs)[0], want)


def test_the_anchor_velocity_term_is_refused_by_an_env_without_it():
    meta = PolicyMeta.from_mapping(fence_meta(), "p.onnx")
    assert not meta.needs_anchor_velocity()
    cfg = eval_cfg(TrackingEnvCfg(anchor_velocity_obs=True))
    with_vel = PolicyMeta.from_mapping(fence_meta(**deploy_metadata(cfg)), "p.onnx")
    assert with_vel.needs_anchor_velocity() and with_vel.needs_state_estimation()
    assert with_vel.mapping(cfg).obs_dim == 166
    with pytest.raises(ValueError, match=r"observes 'anchor_vel', which G1 does not .*"
                       r"with_anchor_velocity\(cfg\)"):  # fmt: skip
        with_vel.mapping(eval_cfg(), "G1")


def test_cli_refuses_unmappable_onnx_metadata_in_one_line(tmp_path, capsys):
    src = tmp_path / "tiny.onnx"
    onnx.save(tiny_onnx(fence_meta(observation_names="command,height_scan")), str(src))
    assert main(["eval", "--onnx", str(src), "--max-seconds", "0.1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gym-motion eval: error: ") and "\n" not in err
    assert "unknown observation term 'height_scan'" in err


def tiny_onnx(meta: dict[str, str] | None, obs_dim: int = 160) -> onnx.ModelProto:
    """A linear ONNX policy obs (B, obs_dim) -> actions (B, 29): actions = obs[:, :29] * 0."""
    w = numpy_helper.from_array(np.zeros((obs_dim, 29), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["obs", "w"], ["actions"])],
        "tiny",
        [helper.make_tensor_value_info("obs", onnx.TensorProto.FLOAT, ["batch", obs_dim])],
        [helper.make_tensor_value_info("actions", onnx.TensorProto.FLOAT, ["batch", 29])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return with_props(model, meta or {})


def two_output_onnx(outputs: list[tuple[str, int]]) -> onnx.ModelProto:
    """obs (B, 160) -> one zero (B, width) output per (name, width), G1 metadata."""
    nodes, inits = [], []
    for name, width in outputs:
        inits.append(numpy_helper.from_array(np.zeros((160, width), np.float32), f"w_{name}"))
        nodes.append(helper.make_node("MatMul", ["obs", f"w_{name}"], [name]))
    graph = helper.make_graph(
        nodes, "two",
        [helper.make_tensor_value_info("obs", onnx.TensorProto.FLOAT, ["batch", 160])],
        [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, ["batch", w])
         for n, w in outputs],
        inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return with_props(model, fence_meta())


def test_the_actions_output_is_named_or_the_only_one_of_the_joints_width(tmp_path):
    """A (B, 1) value head listed first was taken as the actions (every target = default +
    scale * value, and the episode "succeeded")."""
    path = tmp_path / "heads.onnx"
    onnx.save(two_output_onnx([("value", 1), ("mu", 29)]), str(path))
    assert OnnxPolicy(path).actions_output == "mu"
    onnx.save(two_output_onnx([("mu", 29), ("mu2", 29)]), str(path))
    with pytest.raises(ValueError, match=r"cannot tell the actions output: .* \(B, 29\)"):
        OnnxPolicy(path)
    onnx.save(two_output_onnx([("actions", 28)]), str(path))
    with pytest.raises(ValueError, match=r"actions tensor\(float\) \['batch', 28\]"):
        OnnxPolicy(path)
    # an "actions" output whose shape ONNX Runtime cannot infer is taken on trust
    model = two_output_onnx([("actions", 29)])
    del model.graph.output[0].type.tensor_type.shape.dim[:]
    model.graph.output[0].type.tensor_type.ClearField("shape")
    onnx.save(model, str(path))
    assert OnnxPolicy(path).actions_output == "actions"


def test_metadata_from_a_yaml_file_when_the_onnx_has_none(tmp_path):
    path = tmp_path / "bare.onnx"
    onnx.save(tiny_onnx(None), str(path))
    with pytest.raises(ValueError, match="no joint_names, default_joint_pos, action_scale, obs"):
        OnnxPolicy(path)
    yaml_path = tmp_path / "meta.yaml"
    order = breadth_first_joint_order()
    perm = [G1.joint_names.index(n) for n in order]
    yaml_path.write_text(
        f"joint_names: [{', '.join(order)}]\n"
        f"default_joint_pos: [{', '.join(repr(float(G1.default_joint_pos[i])) for i in perm)}]\n"
        f"action_scale: {','.join(str(float(G1.action_scale[i])) for i in perm)}\n"
        "observation_names: [command, motion_anchor_pos_b, motion_anchor_ori_b, base_lin_vel,"
        " base_ang_vel, joint_pos, joint_vel, actions]\n"
    )
    m = OnnxPolicy(path, yaml_path).mapping(eval_cfg())
    assert m.permuted and not m.rebased
    a = np.arange(29, dtype=np.float32)[None]
    np.testing.assert_array_equal(m.actions(a)[0, perm], a[0])
    bad = tmp_path / "meta.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ValueError, match="meta.json: expected a mapping"):
        OnnxPolicy(path, bad)


def test_mapping_rebases_joint_positions_last_action_and_targets():
    d, s = G1.default_joint_pos, G1.action_scale
    d2, s2 = d + 0.05, 2.0 * s
    meta = fence_meta(default_joint_pos=",".join(map(repr, d2.tolist())),
                      action_scale=",".join(map(repr, s2.tolist())))  # fmt: skip
    m = PolicyMeta.from_mapping(meta, "p").mapping(eval_cfg())
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(2, 160)).astype(np.float32)
    obs[1, 131:] = 0.0  # a row just reset: no last action
    mapped = m.observation(obs)
    np.testing.assert_allclose(mapped[:, 73:102], obs[:, 73:102] - 0.05, atol=1e-6)
    # the policy's own last output: targets d + s a = d2 + s2 a2
    np.testing.assert_allclose(d2 + s2 * mapped[0, 131:], d + s * obs[0, 131:], atol=1e-6)
    np.testing.assert_array_equal(mapped[1, 131:], 0.0)
    raw = rng.normal(size=(2, 29)).astype(np.float32)
    np.testing.assert_allclose(d + s * m.actions(raw), d2 + s2 * raw, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# observation processing in the metadata (mjlab's per-term keys)

# B_Fence1's policy observation: (term, columns) in order
FENCE_LAYOUT = {"command": slice(0, 58), "motion_anchor_pos_b": slice(58, 61),
                "motion_anchor_ori_b": slice(61, 67), "base_lin_vel": slice(67, 70),
                "base_ang_vel": slice(70, 73), "joint_pos": slice(73, 102),
                "joint_vel": slice(102, 131), "actions": slice(131, 160)}  # fmt: skip


def fence_with(tmp_path: Path, **added: str) -> Path:
    """A copy of B_Fence1 with metadata keys added (the graph unchanged)."""
    model = onnx.load(str(FENCE_ONNX))
    path = tmp_path / "fence_with.onnx"
    onnx.save(with_props(model, {**props(FENCE_ONNX), **added}), str(path))
    return path


def per_term(**entries: str) -> str:
    """A per-term value in mjlab's format for B_Fence1's 8 terms: `entries` by term name, the
    others "1.000"."""
    return ",".join(entries.get(term, "1.000") for term in FENCE_LAYOUT)


def fed_observations(policy: OnnxPolicy, steps: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """(env observations, what the graph was fed) over `steps` steps of B_Fence1's clip."""
    # one env: the graph's batch is fixed at 1 (more rows would call `run` once per row)
    env = TrackingVecEnv(1, motion=FENCE_NPZ, cfg=eval_cfg(), motion_playback="frame_per_step")
    seen, fed = [], []
    real_run = policy.run
    policy.run = lambda o, t=None: fed.append(o.copy()) or real_run(o, t)
    try:
        act = policy.bind(env)
        obs, _ = env.reset(seed=0)
        for _ in range(steps):
            seen.append(obs.copy())
            obs, *_ = env.step(act(obs))
    finally:
        env.close()
    return np.concatenate(seen), np.concatenate(fed)


@pytest.mark.parametrize("scale", ["0.050", "[" + ", ".join(["0.05"] * 29) + "]"])
def test_a_joint_vel_scale_in_the_metadata_scales_exactly_that_block(fence, tmp_path, scale):
    """mjlab writes a term's scale as a number or, per column, as a bracketed list."""
    policy = OnnxPolicy(fence_with(tmp_path, observation_terms_scale=per_term(joint_vel=scale)))
    seen, fed = fed_observations(policy)
    vel = FENCE_LAYOUT["joint_vel"]
    want = seen.copy()
    want[:, vel] = seen[:, vel] * np.float32(0.05)
    np.testing.assert_array_equal(fed, want)
    assert np.abs(seen[:, vel]).max() > 0.1  # the scaled block is not all zeros
    m = policy.mapping(eval_cfg(), "G1")
    assert m.scaled and not m.clipped and "scaled: joint_vel" in m.describe()


def test_a_clip_in_the_metadata_clips_before_the_scale(fence, tmp_path):
    clip = per_term(joint_vel="[-0.5, 0.5]", joint_pos="-0.2;0.3").replace("1.000", "-inf;inf")
    path = fence_with(
        tmp_path,
        observation_terms_clip=clip,
        observation_terms_scale=per_term(joint_vel="0.050"),
        observation_terms_history_length=per_term().replace("1.000", "0.000"),
        observation_terms_flatten_history_dim=per_term(),
    )
    m = OnnxPolicy(path).mapping(eval_cfg(), "G1")
    env_obs = np.random.default_rng(0).normal(scale=2.0, size=(4, 160)).astype(np.float32)
    pos, vel = FENCE_LAYOUT["joint_pos"], FENCE_LAYOUT["joint_vel"]
    want = env_obs.copy()
    want[:, pos] = np.clip(env_obs[:, pos], np.float32(-0.2), np.float32(0.3))
    want[:, vel] = np.clip(env_obs[:, vel], np.float32(-0.5), np.float32(0.5)) * np.float32(0.05)
    np.testing.assert_array_equal(m.observation(env_obs), want)
    assert want[:, vel].max() == np.float32(0.5) * np.float32(0.05)  # clipping happened
    assert m.clipped and m.scaled


@pytest.mark.parametrize(
    ("added", "message"),
    [
        ({"observation_terms_history_length": per_term(joint_vel="5.000")},
         "observation_terms_history_length asks for {'joint_vel': 5.0} frames"),
        ({"observation_terms_scale": "1.0,0.05"},
         "observation_terms_scale has 2 entries for 8 observation_names"),
        ({"observation_terms_scale": per_term(joint_vel="[0.05, 0.05]")},
         "observation_terms_scale gives 2 values for term 'joint_vel' of 29 columns"),
        ({"observation_terms_clip": per_term(joint_vel="[1.0, -1.0]").replace("1.000", "-inf;inf")},
         "observation_terms_clip must be [lo, hi] with lo <= hi, not for ['joint_vel']"),
        ({"observation_term_clip": per_term()},
         "metadata key 'observation_term_clip' ('1.000,1.000"),
        ({"policy_input_names": "obs,history"}, "metadata key 'policy_input_names'"),
        ({"action_delay_steps": "2"}, "metadata key 'action_delay_steps'"),
    ],
)  # fmt: skip
def test_metadata_that_would_change_the_observation_unapplied_is_refused(fence, tmp_path, added,
                                                                        message):  # fmt: skip
    with pytest.raises(ValueError, match="fence_with.onnx") as err:
        OnnxPolicy(fence_with(tmp_path, **added)).mapping(eval_cfg(), "G1")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_an_800_input_policy_with_history_5_is_refused_naming_the_history_key(tmp_path):
    meta = fence_meta(observation_terms_history_length=",".join(["5"] * 8))
    path = tmp_path / "history.onnx"
    onnx.save(tiny_onnx(meta, obs_dim=800), str(path))
    with pytest.raises(ValueError, match="observation_terms_history_length asks for"):
        OnnxPolicy(path)


def test_informational_keys_pass_and_a_null_in_policy_meta_drops_a_key(fence, tmp_path):
    path = fence_with(tmp_path, wandb_project="g1", policy_input_names="obs")
    with pytest.raises(ValueError, match="policy_input_names"):
        OnnxPolicy(path)
    drop = tmp_path / "drop.yaml"
    drop.write_text("policy_input_names: null\n")
    m = OnnxPolicy(path, drop).mapping(eval_cfg(), "G1")
    assert not m.processed and m.obs_dim == 160


def test_our_export_states_identity_processing_in_mjlabs_format():
    ours = deploy_metadata(TrackingEnvCfg())
    n = len(ours["observation_names"].split(","))
    assert ours["observation_terms_scale"] == ",".join(["1.0"] * n)
    assert ours["observation_terms_history_length"] == ",".join(["1.0"] * n)
    assert ours["observation_terms_flatten_history_dim"] == ",".join(["1.0"] * n)
    assert ours["observation_terms_clip"] == ",".join(["[-inf, inf]"] * n)
    meta = PolicyMeta.from_mapping(ours, "ours")
    assert meta.observation_clip == ((-np.inf, np.inf),) * n
    m = meta.mapping(eval_cfg())
    assert not m.processed
    obs = np.random.default_rng(0).normal(size=(2, 160)).astype(np.float32)
    np.testing.assert_array_equal(m.observation(obs), obs)


# ---------------------------------------------------------------------------------------------
# export


def test_exported_metadata_has_the_keys_and_values_of_the_mjlab_file(fence):
    ours = deploy_metadata(TrackingEnvCfg())
    theirs = props(FENCE_ONNX)  # written before mjlab added the per-term keys
    assert tuple(ours) == (*METADATA_KEYS, OBSERVED_FRAME_KEY)
    assert set(METADATA_KEYS) - set(theirs) == set(OBSERVATION_TERM_KEYS)
    # gym_motion's own key says mjlab's convention, which mjlab's files leave unsaid
    assert ours[OBSERVED_FRAME_KEY] == "next" and OBSERVED_FRAME_KEY not in theirs
    assert PolicyMeta.from_mapping(theirs, "mjlab").observed_frame == "next"
    for key in ("joint_names", "anchor_body_name", "body_names", "observation_names",
                "command_names"):  # fmt: skip
        assert ours[key] == theirs[key], key
    for key in ("joint_stiffness", "joint_damping", "default_joint_pos", "action_scale"):
        a = np.array(ours[key].split(","), float)
        b = np.array(theirs[key].split(","), float)
        np.testing.assert_allclose(a, b, atol=5e-4 + 1e-6, err_msg=key)  # theirs: 3 decimals


def test_a_clipped_and_scaled_term_is_written_to_the_metadata_and_applied_by_the_mapping():
    """A policy trained with a term clipped and scaled in the env says so in its metadata; the
    mapping from a plain env applies that clip and scale, and refuses an env that would apply
    them a second time."""
    base = TrackingEnvCfg()
    policy = dict(base.observations["policy"])
    policy["joint_vel"] = dataclasses.replace(policy["joint_vel"], clip=(-5.0, 5.0), scale=0.05)
    trained = dataclasses.replace(base, observations={**base.observations, "policy": policy})
    meta = deploy_metadata(trained)
    k = list(policy).index("joint_vel")
    assert meta["observation_terms_scale"].split(",")[k] == "0.05"
    assert meta["observation_terms_clip"].split("],")[k].strip(" []") == "-5.0, 5.0"
    mapping = PolicyMeta.from_mapping(meta, "trained").mapping(base)
    start = sum(t.dim for t in list(policy.values())[:k])
    cols = slice(start, start + policy["joint_vel"].dim)
    np.testing.assert_array_equal(mapping.obs_scale[cols], np.float32(0.05))
    np.testing.assert_array_equal(mapping.obs_clip[:, cols], [[-5.0] * 29, [5.0] * 29])
    assert mapping.obs_scale.sum() == mapping.obs_dim - 29 + 29 * np.float32(0.05)
    with pytest.raises(ValueError, match=r"env clips or scales the policy terms \['joint_vel'\]"):
        PolicyMeta.from_mapping(meta, "trained").mapping(trained)


@pytest.fixture(scope="module", params=["policy", "dict"])
def tiny_run(request, tmp_path_factory) -> Path:
    """A `gym-motion train` run folder after a few PPO updates on 2 envs (no periodic
    evaluation, no video)."""
    pytest.importorskip("stable_baselines3")
    from gym_motion.training import RunConfig, train, train_env_cfg

    out = tmp_path_factory.mktemp(f"run_{request.param}")
    config = RunConfig(library="sb3", num_envs=2, obs_mode=request.param, out=str(out),
                       total_steps=64, ppo={"net_arch": [32, 32], "n_steps": 16},
                       env=train_env_cfg().updated(backend_kwargs={"num_threads": 1}),
                       motion=[str(DEFAULT_MOTION_PATH)], eval_every_steps=0,
                       video_seconds=0.0)  # fmt: skip
    summary = train(config)
    assert summary["env_steps"] == 64 and not summary["interrupted"]
    return out


def test_export_then_eval_onnx_gives_the_sb3_models_actions_and_episode(
    tiny_run, capsys, same_eval_of_run_and_onnx
):
    from gym_motion.training import RunFolder

    path = tiny_run / "new" / "folder" / "policy.onnx"  # export makes missing folders
    assert main(["export", "--model", str(tiny_run), "-o", str(path)]) == 0
    assert "onnxruntime matches torch" in capsys.readouterr().out
    config_json = tiny_run / "config.json"
    before = config_json.read_bytes()
    for argv in (["export", "--model", str(tiny_run), "-o", str(config_json)],
                 ["eval", "--model", str(tiny_run), "--json", str(config_json)]):  # fmt: skip
        assert main(argv) == 2
        assert "is an input file" in capsys.readouterr().err
    assert config_json.read_bytes() == before
    meta = props(path)
    want = deploy_metadata(TrackingEnvCfg())
    assert {k: meta[k] for k in want} == want
    # the run folder's name, not the trainer's file system; gym_motion made it, not torch
    import onnx

    import gym_motion

    assert meta["run_path"] == tiny_run.name
    proto = onnx.load(str(path))
    assert (proto.producer_name, proto.producer_version) == ("gym_motion", gym_motion.__version__)
    folder = RunFolder(tiny_run)
    model_policy, obs_mode = folder.policy(), folder.obs_mode()
    assert obs_mode == folder.config()["train"]["obs_mode"]
    env = TrackingVecEnv(3, cfg=eval_cfg(), obs_mode=obs_mode, seed=0)
    try:
        onnx_policy = OnnxPolicy(path).bind(env)
        obs, _ = env.reset(seed=0)
        for _ in range(20):
            want = model_policy(obs)
            np.testing.assert_allclose(onnx_policy(obs), want, atol=1e-5, rtol=0)
            obs, *_ = env.step(want)
    finally:
        env.close()
    same_eval_of_run_and_onnx(tiny_run, path)


def test_export_refuses_an_actor_that_reads_the_critic_group(tmp_path):
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecNormalize

    from gym_motion.adapters.sb3.vec_env import SB3VecEnv
    from gym_motion.training import RunConfig, RunFolder
    from gym_motion.training.export import export_run

    config, motions = RunConfig(num_envs=1, obs_mode="dict"), [str(DEFAULT_MOTION_PATH)]
    env = TrackingVecEnv(1, motion=motions, cfg=config.env, autoreset_mode="same_step",
                         obs_mode="dict", seed=0)  # fmt: skip
    venv = VecNormalize(SB3VecEnv(env), norm_obs=True, norm_reward=False, clip_obs=10.0)
    # SB3's MultiInputPolicy feeds the privileged critic group to the actor as well
    PPO("MultiInputPolicy", venv, n_steps=8, batch_size=8, device="cpu").save(
        tmp_path / "model.zip"
    )
    venv.save(str(tmp_path / "vecnormalize.pkl"))
    venv.close()
    RunFolder(tmp_path).write_config(config, motions, {}, {})  # library sb3, its task
    with pytest.raises(ValueError, match="reads every observation group"):
        export_run(tmp_path, tmp_path / "x.onnx")
    assert not (tmp_path / "x.onnx").exists()
    # a run folder without its observation statistics would export wrong actions: refused
    (tmp_path / "vecnormalize.pkl").unlink()
    with pytest.raises(FileNotFoundError, match="observation statistics are missing"):
        export_run(tmp_path, tmp_path / "x.onnx")


# ---------------------------------------------------------------------------------------------
# playback and eval output


def test_frame_per_step_relabels_the_clip_without_resampling(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clip = load_clip(DEFAULT_MOTION_PATH)
    at60 = tmp_path / "at60.npz"
    save_clip(dataclasses.replace(clip, fps=60.0), at60)
    per_step = MotionLibrary.from_paths(at60, fps=50.0, playback="frame_per_step")
    real = MotionLibrary.from_paths(at60, fps=50.0)
    assert per_step.fps == 50.0 and per_step.lengths[0] == clip.num_frames
    np.testing.assert_array_equal(per_step.joint_pos, clip.joint_pos)
    np.testing.assert_array_equal(per_step.joint_vel, clip.joint_vel)  # not rescaled
    assert real.lengths[0] == int((clip.num_frames - 1) * 50 / 60) + 1
    env = TrackingVecEnv(1, motion=at60, motion_playback="frame_per_step")
    assert env.library.lengths[0] == clip.num_frames
    env.close()
    with pytest.raises(ValueError, match="motion playback must be one of"):
        MotionLibrary.from_paths(at60, playback="slow")


def test_eval_without_json_writes_no_file_and_names_the_termination(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "--policy", "zero"]) == 0
    out = capsys.readouterr().out
    assert list(tmp_path.iterdir()) == [] and "results not written (no --json)" in out
    result = evaluate_policy_on_clips([DEFAULT_MOTION_PATH], None)
    (clip,) = result["clips"].values()
    (end,) = clip["terminations"]
    assert end["step"] == clip["episode_length"] < clip["max_episode_steps"]
    assert end["causes"] and "time_out" not in end["causes"]
    assert f"{'+'.join(end['causes'])} at step {end['step']}" in out


def plain_values(obj):
    """`obj` as config.json of earlier gym_motion versions wrote it (their ``jsonable``):
    dataclasses, tuples and numpy values as JSON values, functions by name."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: plain_values(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): plain_values(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain_values(v) for v in obj]
    if callable(obj):
        return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"
    if hasattr(obj, "item") and getattr(obj, "ndim", 1) == 0:
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, str | int | float | bool) or obj is None:
        return obj
    return repr(obj)


def test_run_env_cfg_reads_tagged_and_plain_configs_and_refuses_another_robot(tmp_path):
    pytest.importorskip("torch")  # export_run's
    from gym_motion.training import RunFolder, train_env_cfg
    from gym_motion.training.export import export_run

    def env_cfg(config: dict) -> TrackingEnvCfg:
        run = tmp_path / "run"
        run.mkdir(exist_ok=True)
        (run / "config.json").write_text(json.dumps(config))
        return RunFolder(run).env_cfg()

    no_se = TrackingEnvCfg(state_estimation=False)
    tagged = env_cfg({"env": json.loads(no_se.to_json())})
    assert tagged.state_estimation is False and tagged.robot is G1
    # config.json of an earlier version: no "library", the task as plain values
    plain = {
        "train": {"state_estimation": False, "motion": [str(DEFAULT_MOTION_PATH)]},
        "env": {**plain_values(train_env_cfg(state_estimation=False)), "state_estimation": False},
    }
    assert "__type__" not in plain["env"]
    cfg = env_cfg(plain)
    assert deploy_metadata(cfg) == deploy_metadata(no_se)
    assert deploy_metadata(cfg)["observation_names"].split(",") == [
        "command", "motion_anchor_ori_b", "base_ang_vel", "joint_pos", "joint_vel", "actions"
    ]  # fmt: skip
    plain["env"]["robot"]["kp"] = [1.0] * 29
    with pytest.raises(ValueError, match=r"run/config.json: env.robot.kp differs from robot 'g1'"):
        env_cfg(plain)
    (tmp_path / "model.zip").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="config.json is needed for the deploy metadata"):
        export_run(tmp_path, tmp_path / "p.onnx")


# ---------------------------------------------------------------------------------------------
# the shipped tracker


def test_the_shipped_tracker_finishes_the_default_motion(tmp_path, capsys):
    from gym_motion.deploy import DEFAULT_POLICY_PATH

    meta = props(DEFAULT_POLICY_PATH)
    want = deploy_metadata(TrackingEnvCfg())
    assert {k: meta[k] for k in want} == want
    assert DEFAULT_POLICY_PATH.stat().st_size < 2_000_000
    out = tmp_path / "tracker.json"
    assert main(["eval", "--policy", "tracker", "--json", str(out)]) == 0
    (clip,) = json.loads(out.read_text())["clips"].values()
    assert clip["success_rate"] == 1.0 and clip["terminations"][0]["causes"] == ["time_out"]
    assert clip["episode_length"] == clip["max_episode_steps"] == 400
    assert clip["mpkpe_mm"] <= 80.0
    with pytest.raises(SystemExit, match="--policy tracker runs a shipped ONNX policy"):
        main(["eval", "--policy", "tracker", "--onnx", str(DEFAULT_POLICY_PATH)])


def test_the_shipped_jazz_policy_plays_as_far_as_its_training_says(tmp_path):
    """The shipped jazz-walk policy (residual actions, exported with the reference folded in)
    in BeyondMimic's convention: from the clip start it lasts as long as its own run's final
    evaluation (its ``training`` metadata), far past the zero action's 40 steps."""
    import re

    from gym_motion.deploy import SHIPPED_POLICIES

    clip_path = SHARED_POLICY.parent / "motions" / "g1moves_jazzwalk_60fps.npz"
    if not clip_path.is_file():
        pytest.skip(f"the G1 Moves jazz walk not found at {clip_path} (../shared/motions)")
    path = SHIPPED_POLICIES["jazz"]
    meta = props(path)
    assert meta["motion_files"] == clip_path.name
    stated = re.search(r"from the clip start (\d+) of 529 steps, MPKPE ([\d.]+) mm",
                       meta["training"])  # fmt: skip
    steps, mpkpe = int(stated.group(1)), float(stated.group(2))
    out = tmp_path / "jazz.json"
    argv = ["eval", "--policy", "jazz", "--motion", str(clip_path), "--json", str(out)]
    assert main(argv) == 0
    (clip,) = json.loads(out.read_text())["clips"].values()
    assert clip["max_episode_steps"] == 529
    assert clip["episode_length"] == pytest.approx(steps, rel=0.1)
    assert clip["episode_length"] > 3 * 40
    assert clip["mpkpe_mm"] == pytest.approx(mpkpe, rel=0.1)


def test_the_shipped_jazz_policy_keeps_to_the_clips_timing_and_the_term_ends_it_past_it():
    """The shipped jazz policy was trained with the anchor-horizontal termination at 0.2 m,
    switched on by episode length (docs/measurements.md): played without it, its anchor stays
    within 0.2 m of the reference's for the whole clip. With the term at 0.09 m its episode
    ends, caused by that term, on the first step where the anchor is 0.09 m off in the episode
    without it."""
    from gym_motion.deploy import SHIPPED_POLICIES
    from gym_motion.evaluate import anchor_trace, evaluate_clip
    from gym_motion.training.config import with_anchor_horizontal_termination

    clip_path = SHARED_POLICY.parent / "motions" / "g1moves_jazzwalk_60fps.npz"
    if not clip_path.is_file():
        pytest.skip(f"the G1 Moves jazz walk not found at {clip_path} (../shared/motions)")
    jazz = OnnxPolicy(SHIPPED_POLICIES["jazz"])
    trace = anchor_trace(clip_path, jazz, jazz.env_cfg())
    distance = np.linalg.norm(trace["robot"] - trace["reference"], axis=1)
    horizon = len(trace["route"]) - 1
    assert len(distance) == horizon and 0.095 < distance.max() < 0.2  # on time, and survives
    first = int(np.argmax(distance > 0.09))
    assert abs(distance[first] - 0.09) > 1e-4  # float32 rounding cannot move the step
    with_term = with_anchor_horizontal_termination(jazz.env_cfg(), 0.09)
    result = evaluate_clip(clip_path, OnnxPolicy(SHIPPED_POLICIES["jazz"]), with_term)
    assert result["terminations"] == [{"causes": ["anchor_horizontal"], "step": first + 1}]


# ---------------------------------------------------------------------------------------------
# onnxruntime threads


def test_the_session_runs_one_thread_for_small_batches_and_the_users_count_when_given(fence):
    from gym_motion.backends.threads import available_cpus
    from gym_motion.deploy import DEFAULT_POLICY_PATH
    from gym_motion.deploy.onnx_policy import ROWS_PER_ORT_THREAD, session_threads

    def intra(policy: OnnxPolicy) -> int:
        return policy.session.get_session_options().intra_op_num_threads

    cpus = len(available_cpus())
    assert [session_threads(n, 8) for n in (1, ROWS_PER_ORT_THREAD, 2 * ROWS_PER_ORT_THREAD,
                                            100 * ROWS_PER_ORT_THREAD)] == [1, 1, 2, 8]  # fmt: skip
    policy = OnnxPolicy(FENCE_ONNX)
    assert intra(policy) == 1 and policy.session.get_session_options().inter_op_num_threads == 1
    env = TrackingVecEnv(1, motion=FENCE_NPZ, cfg=eval_cfg(), motion_playback="frame_per_step")
    try:
        policy.bind(env)
        assert intra(policy) == policy.threads == 1
    finally:
        env.close()
    # B_Fence1's graph takes one row at a time: a large batch still runs on one thread
    assert policy.size_for(100 * ROWS_PER_ORT_THREAD) == 1
    tracker = OnnxPolicy(DEFAULT_POLICY_PATH)  # batch not fixed: the session grows with the rows
    assert tracker.size_for(100 * ROWS_PER_ORT_THREAD) == min(cpus, 100) == intra(tracker)
    assert tracker.size_for(3) == 1 == intra(tracker)
    fixed = OnnxPolicy(FENCE_ONNX, intra_op_threads=2)
    assert intra(fixed) == 2 and fixed.size_for(1) == 2
    options = fixed.session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    with pytest.raises(ValueError, match="intra_op_threads must be >= 1"):
        OnnxPolicy(FENCE_ONNX, intra_op_threads=0)


def test_a_policy_of_the_old_conventions_plays_in_its_own_env_and_is_refused_in_another(fence):
    """ONNX metadata from before mjlab's conventions (``observed_frame: current``, the root
    origin's ``base_origin_lin_vel``) get an env with those conventions from
    `OnnxPolicy.env_cfg`; today's env refuses them in one line, and an env of the old
    conventions refuses mjlab's names, rather than feeding either the other quantity."""
    from gym_motion.deploy import SHIPPED_POLICIES
    from gym_motion.envs import with_root_origin_velocity
    from gym_motion.managers import observation as obs

    jazz = OnnxPolicy(SHIPPED_POLICIES["jazz"])
    assert jazz.meta.observed_frame == "current"
    assert "base_origin_lin_vel" in jazz.meta.observation_names
    cfg = jazz.env_cfg()
    assert cfg.observed_frame == "current"
    assert cfg.observations["policy"]["base_lin_vel"].func is obs.base_lin_vel
    jazz.mapping(cfg)  # maps
    with pytest.raises(ValueError, match="observes the current reference frame"):
        jazz.mapping(eval_cfg())
    with pytest.raises(ValueError, match="unknown observation term 'base_origin_lin_vel'"):
        jazz.mapping(dataclasses.replace(eval_cfg(), observed_frame="current"))
    mjlab_names = PolicyMeta.from_mapping(props(FENCE_ONNX), "mjlab")
    old_env = with_root_origin_velocity(eval_cfg())
    with pytest.raises(ValueError, match="'base_lin_vel' term is 'base_origin_lin_vel'"):
        mjlab_names.mapping(old_env)
