"""Clip format: exact round trip, atomic save, legacy layouts, resampling and validation errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gym_motion.motion import MotionFormatError, load_clip, save_clip
from gym_motion.motion import arrays as arrays_module
from gym_motion.motion import clip as clip_module
from gym_motion.motion import npz as npz_module
from gym_motion.robots import g1


def test_save_load_round_trip_is_exact(default_clip, tmp_path):
    path = save_clip(default_clip, tmp_path / "clip.npz")
    loaded = load_clip(path)
    assert loaded.fps == default_clip.fps and loaded.source_fps == default_clip.source_fps
    assert loaded.joint_names == g1.JOINT_NAMES and loaded.body_names == g1.BODY_NAMES
    for key in clip_module.ARRAY_KEYS:
        a, b = getattr(loaded, key), getattr(default_clip, key)
        assert a.dtype == np.float32 and np.array_equal(a, b), key


def test_save_is_deterministic(default_clip, tmp_path):
    a = save_clip(default_clip, tmp_path / "a.npz").read_bytes()
    b = save_clip(default_clip, tmp_path / "b.npz").read_bytes()
    assert a == b


def test_interrupted_write_leaves_the_old_file_intact(default_clip, tmp_path, monkeypatch):
    path = save_clip(default_clip, tmp_path / "clip.npz")
    before = path.read_bytes()

    def crash_mid_way(fileobj, entries):
        fileobj.write(b"PK\x03\x04 half an archive")
        raise KeyboardInterrupt("simulated crash")

    monkeypatch.setattr(npz_module, "_write_npz", crash_mid_way)
    shorter = dataclasses.replace(
        default_clip, **{k: getattr(default_clip, k)[:10] for k in clip_module.ARRAY_KEYS}
    )
    with pytest.raises(KeyboardInterrupt):
        save_clip(shorter, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["clip.npz"]  # no temp file left


def test_jazzwalk_loaded_at_50hz_is_resampled(motions_dir):
    src = motions_dir / "g1moves_jazzwalk_60fps.npz"
    raw = load_clip(src)
    clip = load_clip(src, fps=50.0)
    assert raw.fps == 60.0 and clip.fps == 50.0 and clip.source_fps == 60.0
    assert abs(clip.duration - raw.duration) <= 1.0 / 50.0
    np.testing.assert_array_equal(clip.joint_pos[0], raw.joint_pos[0])
    # frame 5 at 0.1 s is raw frame 6 exactly; frame 1 at 0.02 s is between raw 1 and 2
    np.testing.assert_allclose(clip.body_pos_w[5], raw.body_pos_w[6], atol=1e-6)
    mid = 0.8 * raw.joint_pos[1] + 0.2 * raw.joint_pos[2]
    np.testing.assert_allclose(clip.joint_pos[1], mid, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(clip.body_quat_w, axis=-1), 1.0, atol=1e-6)


def test_legacy_31_body_file_drops_the_world_body(default_clip, tmp_path, legacy_npz):
    world = np.zeros((default_clip.num_frames, 1, 4), np.float32)
    world[..., 0] = 1.0
    arrays = {}
    for key, size in arrays_module.BODY_VEC_SIZE.items():
        first = world if size == 4 else np.zeros((default_clip.num_frames, 1, 3), np.float32)
        arrays[key] = np.concatenate((first, getattr(default_clip, key)), axis=1)
    path = legacy_npz(tmp_path / "l31.npz", default_clip, **arrays, fps=np.array(50, np.int32))
    clip = load_clip(path)
    assert clip.body_names == g1.BODY_NAMES and clip.fps == 50.0
    np.testing.assert_array_equal(clip.body_pos_w, default_clip.body_pos_w)


def test_legacy_file_with_ambiguous_body_count_asks_for_names(default_clip, tmp_path, legacy_npz):
    path = legacy_npz(
        tmp_path / "l14.npz",
        default_clip,
        **{k: getattr(default_clip, k)[:, :14] for k in arrays_module.BODY_VEC_SIZE},
    )
    with pytest.raises(MotionFormatError, match=r"14 bodies.*pass body_names"):
        load_clip(path)
    clip = load_clip(path, body_names=g1.BODY_NAMES[:14])
    assert clip.body_names == g1.BODY_NAMES[:14]


def test_permuted_body_order_is_refused(default_clip, tmp_path, legacy_npz):
    order = np.arange(30)
    order[[4, 10]] = order[[10, 4]]  # swap left and right knee
    path = legacy_npz(tmp_path / "perm.npz", default_clip, body_order=order)
    with pytest.raises(
        MotionFormatError, match=r"perm.npz.*frame \d+ body '(left|right)_knee_link'"
    ):
        load_clip(path)


def test_permuted_joint_order_is_refused(default_clip, tmp_path, legacy_npz):
    order = np.arange(29)
    order[[3, 9]] = order[[9, 3]]  # swap the knee joints
    order[[15, 22]] = order[[22, 15]]  # and the shoulder pitches
    path = legacy_npz(tmp_path / "perm.npz", default_clip, joint_order=order)
    with pytest.raises(MotionFormatError, match="forward kinematics.*joint order"):
        load_clip(path)


def test_named_joints_in_another_order_are_reordered(default_clip, tmp_path):
    path = save_clip(default_clip, tmp_path / "named.npz")
    data = dict(np.load(path))
    order = np.random.default_rng(0).permutation(29)
    for key in ("joint_names", "joint_pos", "joint_vel"):
        data[key] = data[key][..., order]
    np.savez(path, **data)
    clip = load_clip(path)
    assert clip.joint_names == g1.JOINT_NAMES
    np.testing.assert_array_equal(clip.joint_pos, default_clip.joint_pos)
    np.testing.assert_array_equal(clip.joint_vel, default_clip.joint_vel)


def test_fewer_joints_are_refused(default_clip, tmp_path, legacy_npz):
    path = legacy_npz(
        tmp_path / "j28.npz",
        default_clip,
        joint_pos=default_clip.joint_pos[:, :28],
        joint_vel=default_clip.joint_vel[:, :28],
    )
    with pytest.raises(MotionFormatError, match=r"j28.npz: key 'joint_pos' has shape \(401, 28\)"):
        load_clip(path)
    named = save_clip(default_clip, tmp_path / "named.npz")
    data = dict(np.load(named))
    data["joint_names"] = data["joint_names"][:28]
    data["joint_pos"] = data["joint_pos"][:, :28]
    np.savez(named, **data)
    with pytest.raises(
        MotionFormatError, match=r"28 joints.*29; missing \['right_wrist_yaw_joint'\]"
    ):
        load_clip(named)


@pytest.mark.parametrize(
    ("edit", "pattern"),
    [
        (lambda d: d.pop("body_quat_w"), r"missing key\(s\) \['body_quat_w'\]"),
        (lambda d: d.update(joint_vel=d["joint_vel"][:-1]), r"'joint_vel' has shape \(400, 29\)"),
        (
            lambda d: d["joint_pos"].__setitem__((7, 3), np.nan),
            r"'joint_pos' frame 7 joint 'left_knee",
        ),
        (lambda d: d["body_lin_vel_w"].__setitem__((9, 2), np.inf), r"frame 9 body 'left_hip_roll"),
        (
            lambda d: d["body_quat_w"].__setitem__((3, 5), [1, 0.1, 0, 0]),
            r"frame 3 body 'left_ankle",
        ),
        (lambda d: d.update(body_names=np.array(g1.BODY_NAMES[:-1] + ("hand",))), r"\['hand'\]"),
        (lambda d: d["body_pos_w"].__setitem__((slice(None), slice(None), 2), -1.0), r"below the"),
        (
            lambda d: d.update({k: d[k][:1] for k in clip_module.ARRAY_KEYS}),
            r"1 frame\(s\); a motion needs at least 2",
        ),
        # named joints in another order, with too few columns: the shape, not an IndexError
        (
            lambda d: d.update(
                joint_names=d["joint_names"][::-1], joint_pos=d["joint_pos"][:, :10]
            ),
            r"'joint_pos' has shape \(401, 10\), expected \(401, 29\)",
        ),
        (lambda d: d.update(fps=np.array(60 + 1j)), r"key 'fps' must be a number > 0, got \(60"),
        (lambda d: d.update(fps=np.array("abc")), r"key 'fps' must be a number > 0, got 'abc'"),
        (lambda d: d.update(source_fps=np.array(np.nan)), r"key 'source_fps' must be a number > 0"),
        (lambda d: d.update(source_fps=np.array(-5.0)), r"key 'source_fps' must be a number > 0"),
        (lambda d: d.update(format_version=np.array(np.nan)), r"'format_version' must be a whole"),
        (lambda d: d.update(joint_pos=d["joint_pos"] + 0j), r"'joint_pos' has dtype complex64"),
    ],
    ids=[
        "missing",
        "shape",
        "nan",
        "inf",
        "quat_norm",
        "body_name",
        "below_floor",
        "one_frame",
        "reordered_short",
        "complex_fps",
        "str_fps",
        "nan_source_fps",
        "negative_source_fps",
        "nan_version",
        "complex_joints",
    ],  # fmt: skip
)
def test_invalid_files_are_refused_naming_key_frame_and_body(default_clip, tmp_path, edit, pattern):
    path = save_clip(default_clip, tmp_path / "bad.npz")
    data = {k: np.array(v) for k, v in np.load(path).items()}
    edit(data)
    np.savez(path, **data)
    with pytest.raises(MotionFormatError, match=r"bad\.npz: .*" + pattern):
        load_clip(path)


def test_joint_limit_violation_warns_with_frame(default_clip, tmp_path, legacy_npz):
    joint_pos = default_clip.joint_pos.copy()
    joint_pos[100:103, 3] = 3.0  # left knee beyond its 2.88 rad limit
    path = legacy_npz(tmp_path / "lim.npz", default_clip, joint_pos=joint_pos)
    with pytest.warns(UserWarning) as record:
        load_clip(path, check_kinematics=False)
    messages = " ".join(str(w.message) for w in record)
    assert "joint limits in 3 frame(s) (first frame 100)" in messages
    assert "'left_knee_joint'" in messages
    assert "jumps more than" in messages and "first frame 100" in messages
    assert "--frames 1 STOP" not in messages  # the hint is for a lone jump out of frame 0


def test_a_csv_passed_as_a_clip_is_refused_with_the_convert_command(tmp_path):
    csv = tmp_path / "dance.csv"
    csv.write_text("0,0,0\n")
    with pytest.raises(MotionFormatError, match="gym-motion convert"):
        load_clip(csv)


def test_xyzw_body_quaternions_are_named_as_the_likely_cause(motions_dir, tmp_path, legacy_npz):
    ref = load_clip(motions_dir / "g1moves_jazzwalk_60fps.npz")
    xyzw = ref.body_quat_w[..., [1, 2, 3, 0]]
    path = legacy_npz(tmp_path / "xyzw.npz", ref, body_quat_w=xyzw)
    with pytest.raises(MotionFormatError) as info:
        load_clip(path)
    message = str(info.value)
    assert "forward kinematics of the root pose and joint_pos puts it" in message
    assert (
        "key 'body_quat_w' looks like xyzw (scalar last): read that way, forward kinematics "
        "matches to 0.00 mm. Store quaternions wxyz (scalar first)"
    ) in message
    assert "order does not match" not in message
    # a wrong body order is still blamed on the order, not on the quaternion convention
    order = np.arange(30)
    order[[4, 10]] = order[[10, 4]]
    perm = legacy_npz(tmp_path / "perm.npz", ref, body_order=order)
    with pytest.raises(MotionFormatError, match="body order or joint order") as info:
        load_clip(perm)
    assert "looks like xyzw" not in str(info.value)


@pytest.mark.parametrize("fps", [0, -50.0, float("nan"), float("inf"), "fast"])
def test_a_target_rate_that_is_not_positive_is_refused(default_clip, tmp_path, fps):
    path = save_clip(default_clip, tmp_path / "clip.npz")
    with pytest.raises(ValueError, match=rf"fps must be a positive frame rate in Hz, got {fps!r}"):
        load_clip(path, fps=fps)
    with pytest.raises(ValueError, match="positive frame rate"):
        default_clip.resample(fps)


def test_rates_equal_to_round_off_are_one_rate(default_clip):
    assert clip_module.rates_equal(50.0, 50.0 * (1 + 1e-12))
    assert not clip_module.rates_equal(50.0, 50.001)
    assert default_clip.resample(50.0 * (1 + 1e-12)) is default_clip  # no resampling


def test_rates_are_checked_wherever_a_clip_enters(default_clip, tmp_path):
    from gym_motion.motion import MotionLibrary

    for fps in (0.0, True):
        with pytest.raises(ValueError, match="MotionClip.fps must be a positive frame rate"):
            dataclasses.replace(default_clip, fps=fps)
    with pytest.raises(ValueError, match="MotionClip.source_fps must be a positive frame rate"):
        dataclasses.replace(default_clip, source_fps=float("nan"))
    path = save_clip(default_clip, tmp_path / "clip.npz")
    with pytest.raises(ValueError, match="fps must be a positive frame rate in Hz, got -50"):
        MotionLibrary.from_paths(path, fps=-50, playback="frame_per_step")
    two = dataclasses.replace(
        default_clip, fps=60.0, **{k: getattr(default_clip, k)[:2] for k in clip_module.ARRAY_KEYS}
    )
    two_path = save_clip(two, tmp_path / "two.npz")
    with pytest.raises(MotionFormatError, match=r"two\.npz: 2 frames at 60 fps .* give 1 frame"):
        load_clip(two_path, fps=50)
    with pytest.raises(MotionFormatError, match=r"clip\.npz: resampling 401 frames .* would give"):
        load_clip(path, fps=1e12)
