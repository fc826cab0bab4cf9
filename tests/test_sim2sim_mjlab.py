"""`benchmarks/sim2sim_mjlab.py`, the gym_motion side of the mjlab sim-to-sim check: the G1 CSV
it writes for mjlab's csv_to_npz, how clips and policies are routed, the worker's command line,
results and one-line refusals. A stand-in "mjlab python" plays the worker (mjlab not needed);
the worker's metadata check runs against a stand-in env with the shipped policies' metadata."""

from __future__ import annotations

import json
import stat
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from gym_motion.deploy import SHIPPED_POLICIES
from gym_motion.motion import DEFAULT_MOTION_PATH, load_clip
from gym_motion.motion.convert import read_csv
from gym_motion.robots import G1

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import sim2sim_mjlab as s2s  # noqa: E402
import sim2sim_mjlab_worker as worker  # noqa: E402

SHARED = ROOT.parent / "shared"
B_FENCE1 = SHARED / "policies" / "g1moves_B_Fence1" / "B_Fence1.onnx"

CANNED = {
    "mjlab_version": "1.6.0",
    "task": "Mjlab-Tracking-Flat-Unitree-G1",
    "randomization": {"events": ["base_com", "encoder_bias", "foot_friction"]},
    "convention_differences": [],
    "seeds": [
        {"seed": 0, "steps": 398, "clip_steps": 398, "mpkpe_m": 0.0642, "ended_by": "clip_end",
         "seconds": 20.0},
        {"seed": 1, "steps": 130, "clip_steps": 398, "mpkpe_m": 0.0958,
         "ended_by": "ee_body_pos", "seconds": 6.0},
    ],
}  # fmt: skip


def fake_mjlab_python(tmp_path: Path, results: dict | None = CANNED, error: str = "") -> Path:
    """An executable that answers the module probe (all found) and, run as the worker, records
    its argv beside itself and writes `results` to --out, or prints `error` as the worker's
    refusal and exits 2."""
    script = tmp_path / "python"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "from pathlib import Path\n"
        "if sys.argv[1] == '-c':\n"
        "    print('')\n"
        "    sys.exit(0)\n"
        f"Path({str(tmp_path / 'argv.json')!r}).write_text(json.dumps(sys.argv[1:]))\n"
        "print('mjlab noise')\n"
        f"if {error!r}:\n"
        f"    print('[sim2sim] error: ' + {error!r})\n"
        "    sys.exit(2)\n"
        "print('[sim2sim] seed 0: done')\n"
        f"Path(sys.argv[sys.argv.index('--out') + 1]).write_text({json.dumps(results)!r})\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def worker_argv(tmp_path: Path) -> list[str]:
    return json.loads((tmp_path / "argv.json").read_text())


def test_csv_of_a_clip_round_trips_through_gym_motions_csv_reader(tmp_path):
    clip = load_clip(DEFAULT_MOTION_PATH)
    # a root orientation far from identity, so that a wrong quaternion order shows
    q = np.array([0.8, 0.1, -0.5, 0.3], np.float32)
    quat = clip.body_quat_w.copy()
    quat[:, 0] = q / np.linalg.norm(q)
    clip = replace(clip, body_quat_w=quat)
    csv = tmp_path / "clip.csv"
    s2s.write_g1_csv(clip, csv)
    qpos = read_csv(csv)  # (T, 7 + 29), root quaternion wxyz
    assert qpos.shape == (clip.num_frames, 7 + len(G1.joint_names))
    np.testing.assert_allclose(qpos[:, :3], clip.body_pos_w[:, 0], atol=1e-6)
    np.testing.assert_allclose(qpos[:, 3:7], clip.body_quat_w[:, 0], atol=1e-6)
    np.testing.assert_allclose(qpos[:, 7:], clip.joint_pos, atol=1e-6)


def test_a_gym_motion_npz_becomes_a_csv_at_its_rate_and_a_csv_needs_its_rate(tmp_path):
    csv, fps = s2s.prepare_motion(None, None, tmp_path)  # the embedded default motion
    assert csv.parent == tmp_path and csv.suffix == ".csv" and fps == 50.0
    assert np.loadtxt(csv, delimiter=",").shape == (load_clip(DEFAULT_MOTION_PATH).num_frames, 36)
    assert s2s.prepare_motion(str(csv), 30.0, tmp_path) == (csv, 30.0)
    with pytest.raises(SystemExit, match="--input-fps is needed"):
        s2s.prepare_motion(str(csv), None, tmp_path)
    with pytest.raises(SystemExit, match="--input-fps is for a CSV"):
        s2s.prepare_motion(str(DEFAULT_MOTION_PATH), 50.0, tmp_path)
    with pytest.raises(SystemExit, match="motion not found"):
        s2s.prepare_motion(str(tmp_path / "none.npz"), None, tmp_path)


def test_an_mjlab_npz_goes_as_it_is_and_one_with_a_world_body_via_csv(tmp_path):
    clip = load_clip(DEFAULT_MOTION_PATH)
    arrays = {k: getattr(clip, k) for k in ("joint_pos", "joint_vel", "body_pos_w",
              "body_quat_w", "body_lin_vel_w", "body_ang_vel_w")}  # fmt: skip
    mjlab_npz = tmp_path / "mjlab.npz"
    np.savez(mjlab_npz, fps=np.array([60.0]), **arrays)  # mjlab's layout: no names, 30 bodies
    assert s2s.prepare_motion(str(mjlab_npz), None, tmp_path) == (mjlab_npz, None)
    world = {k: np.concatenate([np.zeros_like(v[:, :1]), v], axis=1) if v.ndim == 3 else v
             for k, v in arrays.items()}  # fmt: skip
    world["body_quat_w"][:, 0, 0] = 1.0
    with_world = tmp_path / "with_world.npz"
    np.savez(with_world, fps=np.array([50]), **world)
    csv, fps = s2s.prepare_motion(str(with_world), None, tmp_path)
    assert csv.suffix == ".csv" and fps == 50.0


def test_table_and_summary_of_worker_results():
    table = s2s.format_table(CANNED)
    assert "398/398" in table and "64.2" in table and "clip end" in table
    assert "130/398" in table and "95.8" in table and "ee_body_pos" in table
    summary = s2s.summarize(CANNED)
    assert summary["whole_clip"] == 1 and summary["seeds"] == 2 and summary["steps_min"] == 130
    assert summary["mpkpe_mm_mean"] == pytest.approx(80.0)
    assert summary["steps_per_s"] == pytest.approx(528 / 26)
    line = s2s.summary_line("tracker", CANNED, summary)
    assert "whole clip at 1 of 2 seeds" in line and "randomised" in line and "1.6.0" in line


def test_main_runs_the_worker_and_writes_json(tmp_path, capsys):
    python = fake_mjlab_python(tmp_path)
    out = tmp_path / "out.json"
    argv = ["tracker", "--seeds", "0", "1", "--mjlab-python", str(python), "--json", str(out),
            "--no-randomization", "--ignore-conventions", "--as-stated"]  # fmt: skip
    assert s2s.main(argv) == 0
    printed = capsys.readouterr().out
    assert "seed 0: done" in printed and "mjlab noise" not in printed
    assert "whole clip at 1 of 2 seeds" in printed
    args = worker_argv(tmp_path)
    assert args[0] == str(s2s.WORKER)
    assert args[args.index("--policy") + 1] == str(SHIPPED_POLICIES["tracker"].resolve())
    assert args[args.index("--input-fps") + 1] == "50.0"  # the default motion, via a CSV
    assert {"--no-randomization", "--ignore-conventions", "--as-stated"} <= set(args)
    seeds = args.index("--seeds")
    assert args[seeds + 1 : seeds + 3] == ["0", "1"]
    written = json.loads(out.read_text())
    assert written["summary"]["whole_clip"] == 1 and written["mjlab"]["seeds"][1]["steps"] == 130


def test_a_worker_refusal_is_one_line(tmp_path, capsys):
    python = fake_mjlab_python(tmp_path, error="P.onnx: joint_names differ at index 3")
    with pytest.raises(SystemExit, match=r"^mjlab: P.onnx: joint_names differ at index 3$"):
        s2s.main(["tracker", "--seeds", "0", "--mjlab-python", str(python)])
    assert "joint_names" not in capsys.readouterr().out  # said once, by the exit


def test_a_missing_mjlab_python_or_one_without_mjlab_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="mjlab python not found: .*nothing.*docs/deploy.md"):
        s2s.check_mjlab_python(tmp_path / "nothing" / "python")
    with pytest.raises(SystemExit, match=r"has no mjlab\b"):
        s2s.check_mjlab_python(Path(sys.executable))  # gym_motion's venv has no mjlab


def test_a_policy_for_a_named_clip_needs_motion(tmp_path):
    python = fake_mjlab_python(tmp_path)
    with pytest.raises(SystemExit, match="g1moves_jazzwalk_60fps.npz .*pass --motion"):
        s2s.main(["jazz", "--mjlab-python", str(python)])
    with pytest.raises(SystemExit, match="policy not found: nope"):
        s2s.main(["nope", "--mjlab-python", str(python)])


def test_an_onnx_without_metadata_is_refused(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["obs"], ["actions"])],
        "bare",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, [1, 29])],
        [helper.make_tensor_value_info("actions", TensorProto.FLOAT, [1, 29])],
    )
    path = tmp_path / "bare.onnx"
    onnx.save(helper.make_model(graph), path)
    with pytest.raises(SystemExit, match="bare.onnx: no joint_names.* in the policy metadata"):
        s2s.policy_clips(path)


def stand_in_env(joints=G1.joint_names, terms=None) -> SimpleNamespace:
    """What `worker.check_policy` reads of an mjlab env: the G1 (default pose, action scale)."""
    terms = terms or ["command", "motion_anchor_pos_b", "motion_anchor_ori_b", "base_lin_vel",
                      "base_ang_vel", "joint_pos", "joint_vel", "actions"]  # fmt: skip
    action = SimpleNamespace(
        target_names=tuple(joints),
        offset=np.asarray(G1.default_joint_pos, np.float32)[None],
        scale=np.asarray(G1.action_scale, np.float32)[None],
    )
    return SimpleNamespace(
        scene={"robot": SimpleNamespace(joint_names=tuple(joints))},
        action_manager=SimpleNamespace(get_term=lambda name: action),
        observation_manager=SimpleNamespace(
            active_terms={"actor": terms}, group_obs_dim={"actor": (160,)}
        ),
    )


def test_worker_refuses_other_joint_order_and_states_other_conventions():
    session, meta = worker.read_policy(SHIPPED_POLICIES["tracker"])
    assert worker.task_for(meta) == worker.TASK
    assert worker.check_policy(session, meta, stand_in_env(), "tracker") == []  # mjlab's
    # the shipped jazz policy observes the pelvis origin's velocity and the current frame
    old_session, old_meta = worker.read_policy(SHIPPED_POLICIES["jazz"])
    with pytest.raises(worker.Refused, match="base_origin_lin_vel .*observed_frame current"):
        worker.check_policy(old_session, old_meta, stand_in_env(), "jazz")
    differences = worker.check_policy(old_session, old_meta, stand_in_env(), "jazz", True)
    assert len(differences) == 2
    swapped = list(G1.joint_names)
    swapped[3], swapped[4] = swapped[4], swapped[3]
    with pytest.raises(worker.Refused, match="joint order at index 3"):
        worker.check_policy(session, meta, stand_in_env(swapped), "tracker", True)
    scaled = dict(meta, action_scale=",".join(["0.3"] * len(G1.joint_names)))
    with pytest.raises(worker.Refused, match="action_scale of left_hip_pitch_joint is 0.3"):
        worker.check_policy(session, scaled, stand_in_env(), "tracker", True)


@pytest.mark.skipif(not B_FENCE1.is_file(), reason=f"{B_FENCE1} not found (../shared)")
def test_worker_takes_an_mjlab_policy_as_it_is():
    session, meta = worker.read_policy(B_FENCE1)  # 3-decimal metadata, a time_step input
    assert worker.check_policy(session, meta, stand_in_env(), "B_Fence1") == []
