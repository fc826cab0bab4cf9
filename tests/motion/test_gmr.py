"""GMR pickles: the same clip as the CSV path, read without running code, others explained."""

from __future__ import annotations

import io
import os
import pickle

import numpy as np
import pytest

from gym_motion.cli import main
from gym_motion.motion import MotionFormatError, MotionLibrary, _kinematics, convert_csv, load_clip
from gym_motion.motion.clip import ARRAY_KEYS
from gym_motion.motion.convert import convert_gmr, convert_motion
from gym_motion.motion.gmr import RefusedClassError, RestrictedUnpickler, read_gmr
from gym_motion.robots import g1

SUPPORTED = (
    r"supported: G1 CSV \(root xyz, quat xyzw, 29 joints\), gym_motion/mjlab npz, GMR pickle$"
)
ROWS = 121  # 2 s of the 60 fps jazzwalk: enough motion, fast forward kinematics


@pytest.fixture(scope="module")
def rows(motions_dir) -> np.ndarray:
    """The first ROWS rows of the jazzwalk CSV, (ROWS, 36) float64."""
    return np.loadtxt(motions_dir / "g1moves_jazzwalk_60fps.csv", delimiter=",")[:ROWS]


def _gmr_dict(rows: np.ndarray, dtype=np.float64, **extra) -> dict:
    data = {
        "fps": 60,
        "root_pos": rows[:, :3].astype(dtype),
        "root_rot": rows[:, 3:7].astype(dtype),  # xyzw, as GMR and the CSV store it
        "dof_pos": rows[:, 7:].astype(dtype),
        "local_body_pos": None,
        "link_body_list": None,
    }
    data.update(extra)
    return data


def _write(path, obj, protocol=pickle.DEFAULT_PROTOCOL):
    with open(path, "wb") as f:
        pickle.dump(obj, f, protocol=protocol)
    return path


def _assert_clips_equal(a, b, atol=0.0):
    assert a.fps == b.fps and a.source_fps == b.source_fps and a.num_frames == b.num_frames
    assert a.joint_names == b.joint_names and a.body_names == b.body_names
    for key in ARRAY_KEYS:
        np.testing.assert_allclose(getattr(a, key), getattr(b, key), rtol=0, atol=atol, err_msg=key)


def test_pickle_and_csv_of_the_same_rows_give_the_same_clip(rows, tmp_path):
    csv = tmp_path / "walk.csv"
    np.savetxt(csv, rows, delimiter=",", fmt="%.17g")  # exact float64 round trip
    pkl = _write(tmp_path / "walk.pkl", _gmr_dict(rows))
    from_csv = convert_csv(csv, tmp_path / "csv.npz", input_fps=60, output_fps=50, checks=False)
    from_pkl = convert_gmr(pkl, tmp_path / "pkl.npz", output_fps=50, checks=False)
    assert from_pkl.num_frames == 101 and from_pkl.fps == 50.0 and from_pkl.source_fps == 60.0
    _assert_clips_equal(from_pkl, from_csv)  # bit for bit: one path after reading
    assert (tmp_path / "csv.npz").read_bytes() == (tmp_path / "pkl.npz").read_bytes()
    # GMR usually stores float32: equal to float32 round-off
    pkl32 = _write(tmp_path / "walk32.pkl", _gmr_dict(rows, np.float32))
    from_pkl32 = convert_gmr(pkl32, output_fps=50, checks=False)
    _assert_clips_equal(from_pkl32, from_csv, atol=2e-5)


def test_load_clip_and_library_read_pickles_at_the_rate_asked(rows, tmp_path):
    pkl = _write(tmp_path / "walk.pkl", _gmr_dict(rows))
    converted = convert_gmr(pkl, output_fps=50, checks=False)
    _assert_clips_equal(load_clip(pkl, fps=50.0), converted)
    native = load_clip(pkl)  # no fps: the pickle's own rate
    assert native.fps == 60.0 and native.num_frames == ROWS
    np.testing.assert_allclose(native.joint_pos, rows[:, 7:], atol=1e-6)
    folder = tmp_path / "clips"
    folder.mkdir()
    (folder / "walk.pkl").write_bytes(pkl.read_bytes())
    lib = MotionLibrary.from_paths(folder, fps=50.0)
    assert lib.names == ("walk",) and lib.fps == 50.0 and lib.lengths.tolist() == [101]
    np.testing.assert_array_equal(lib.body_pos_w, converted.body_pos_w)


def test_convert_cli_reads_a_pickle_without_input_fps(rows, tmp_path, capsys):
    pkl = _write(tmp_path / "walk.pkl", _gmr_dict(rows))
    out = tmp_path / "walk.npz"
    assert main(["convert", str(pkl), "-o", str(out), "--output-fps", "50"]) == 0
    assert "101 frames at 50 fps (2.00 s, from 60 fps)" in capsys.readouterr().out
    _assert_clips_equal(load_clip(out), convert_gmr(pkl, output_fps=50, checks=False))
    assert main(["convert", str(pkl), "-o", str(out), "--input-fps", "30"]) == 2
    assert "states 60 fps but input_fps 30 was given" in capsys.readouterr().err


class _RunsCode:
    """Pickles as a call of os.system that would create ``marker``."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("protocol", [0, 2, pickle.DEFAULT_PROTOCOL, 5])
def test_a_pickle_that_would_run_code_is_refused_and_nothing_runs(tmp_path, capsys, protocol):
    marker = tmp_path / "ran"
    evil = {"fps": 30, "root_pos": _RunsCode(marker), "root_rot": 0, "dof_pos": 0}
    path = _write(tmp_path / "clip.pkl", evil, protocol)
    name = f"{os.system.__module__}.system"  # posix.system on Linux
    pattern = rf"^unsupported format: \S*clip.pkl is a pickle that needs {name}, which is refused"
    with pytest.raises(MotionFormatError, match=pattern) as info:
        load_clip(path)
    assert isinstance(info.value.__cause__, RefusedClassError)
    assert info.value.__cause__.module == os.system.__module__
    assert main(["convert", str(path), "-o", str(tmp_path / "out.npz")]) == 2
    assert f"needs {name}, which is refused" in capsys.readouterr().err
    with pytest.raises(MotionFormatError, match=name):
        read_gmr(path)
    assert not marker.exists()  # nothing ran
    assert not (tmp_path / "out.npz").exists()


def test_restricted_unpickler_rebuilds_numpy_1_and_2_arrays():
    data = {
        "f64": np.arange(12.0).reshape(3, 4),
        "f32": np.ones((2, 3), np.float32),
        "strided": np.arange(20.0).reshape(4, 5)[:, ::2],
        "names": ["pelvis", "torso_link"],
        "fps": np.int64(30),
        "misc": (1, 2.5, True, None, {3, 4}, frozenset({5}), b"raw", 1j),
    }
    for protocol in range(0, pickle.HIGHEST_PROTOCOL + 1):
        out = RestrictedUnpickler(io.BytesIO(pickle.dumps(data, protocol=protocol))).load()
        assert out.keys() == data.keys(), protocol
        for key in ("f64", "f32", "strided"):
            assert out[key].dtype == data[key].dtype
            np.testing.assert_array_equal(out[key], data[key])
        assert out["fps"] == 30 and out["names"] == data["names"] and out["misc"] == data["misc"]
    # NumPy 1.x pickles name numpy.core (2.x: numpy._core); protocol 2 writes names as text
    legacy = pickle.dumps(data["f64"], protocol=2).replace(b"numpy._core", b"numpy.core")
    assert b"numpy.core.multiarray" in legacy
    np.testing.assert_array_equal(RestrictedUnpickler(io.BytesIO(legacy)).load(), data["f64"])


def test_only_latin1_bytes_are_decoded_from_old_protocols():
    crafted = b"c_codecs\nencode\n(Vabc\nVrot13\ntR."
    with pytest.raises(RefusedClassError, match="encode"):
        RestrictedUnpickler(io.BytesIO(crafted)).load()


@pytest.mark.parametrize(
    ("make", "found"),
    [
        (
            lambda rows: _gmr_dict(rows, dof_pos=rows[:, 7:30]),
            r"a GMR pickle whose 'dof_pos' has shape \(121, 23\) \(23 joints; this robot has 29\)",
        ),
        (  # ASAP / PBHC style: a dict of motions, each with its own keys
            lambda rows: {"walk1": {"root_trans_offset": rows[:, :3], "dof": rows[:, 7:30]}},
            r"a dict of 1 entries \(\['walk1'\]\) whose first, 'walk1', is a dict with keys "
            r"\['root_trans_offset', 'dof'\] \('dof' \(121, 23\): 23 joints; this robot has 29\)",
        ),
        (  # SMPL parameters
            lambda rows: {"poses": np.zeros((5, 72)), "trans": np.zeros((5, 3)), "fps": 30},
            r"a pickle of a dict with keys \['poses', 'trans', 'fps'\], without the GMR key\(s\) "
            r"\['root_pos', 'root_rot', 'dof_pos'\]",
        ),
        (lambda rows: [1, 2, 3], r"a pickle of a list of 3 items"),
        (lambda rows: rows, r"a pickle of a NumPy array of shape \(121, 36\), dtype float64"),
    ],
    ids=["23dof", "pbhc", "smpl", "list", "array"],
)
def test_other_pickles_are_unsupported_naming_what_was_found(rows, tmp_path, make, found):
    path = _write(tmp_path / "other.pkl", make(rows))
    with pytest.raises(MotionFormatError, match=rf"^unsupported format: \S+ is .*{found}.*"):
        load_clip(path)
    with pytest.raises(MotionFormatError, match=SUPPORTED):
        convert_motion(path)


def test_a_truncated_pickle_is_unsupported(rows, tmp_path):
    data = pickle.dumps(_gmr_dict(rows))
    path = tmp_path / "cut.pkl"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(
        MotionFormatError, match=r"is a pickle that cannot be read \(.*" + SUPPORTED
    ):
        load_clip(path)


@pytest.mark.parametrize(
    ("edit", "pattern"),
    [
        (dict(fps=0), r"key 'fps' must be a positive frame rate in Hz, got 0"),
        (dict(fps="thirty"), r"key 'fps' must be a positive frame rate in Hz, got 'thirty'"),
        (dict(fps=10**400), r"key 'fps' must be a positive frame rate in Hz, got 1000"),
        (
            {"root_pos": np.zeros((ROWS, 2))},
            r"key 'root_pos' has shape \(121, 2\), expected \(121, 3\)",
        ),
        ({"root_rot": np.zeros((ROWS - 1, 4))}, r"key 'root_rot' has shape \(120, 4\), expected"),
        ({"dof_pos": np.full((ROWS, 29), "a")}, r"key 'dof_pos' holds ndarray of dtype <U1"),
        (
            {"root_rot": np.tile([0.0, 0.0, 0.0, 2.0], (ROWS, 1))},
            r"frame 0: root quaternion \(key 'root_rot'\) has norm 2.0000",
        ),
    ],
    ids=["fps_zero", "fps_text", "fps_overflow", "root_pos_shape", "frames", "dtype", "quat_norm"],
)
def test_bad_gmr_arrays_are_refused_naming_the_key(rows, tmp_path, edit, pattern):
    path = _write(tmp_path / "bad.pkl", _gmr_dict(rows, **edit))
    with pytest.raises(MotionFormatError, match=r"bad\.pkl: .*" + pattern):
        convert_gmr(path, checks=False)


def test_non_finite_values_name_key_frame_and_column(rows, tmp_path):
    dof = rows[:, 7:].copy()
    dof[9, 4] = np.nan
    path = _write(tmp_path / "nan.pkl", _gmr_dict(rows, dof_pos=dof))
    with pytest.raises(MotionFormatError, match=r"key 'dof_pos' frame 9 column 4: non-finite"):
        read_gmr(path)


def test_wxyz_root_rot_is_detected(rows, tmp_path):
    wxyz = rows[:, [6, 3, 4, 5]]
    path = _write(tmp_path / "wxyz.pkl", _gmr_dict(rows, root_rot=wxyz))
    with pytest.raises(
        MotionFormatError, match=r"root quaternion \(key 'root_rot'\) looks like wxyz"
    ):
        convert_gmr(path, checks=False)
    clip = convert_gmr(path, quat_order="wxyz", output_fps=None, checks=False)
    assert clip.fps == 60.0 and clip.num_frames == ROWS


def _local_body_pos(rows: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """Forward kinematics with the root at the origin, unrotated: GMR's local_body_pos."""
    model = _kinematics.robot_model(g1.G1)
    qpos = np.zeros((len(rows), 7 + 29))
    qpos[:, 3] = 1.0
    qpos[:, 7:] = rows[:, 7:]
    layout = _kinematics.robot_layout(g1.G1)
    return _kinematics.body_poses(model, layout, qpos, _kinematics.body_ids(model, names))


def test_local_body_pos_is_checked_against_forward_kinematics(rows, tmp_path):
    names = ("pelvis", "left_ankle_roll_link", "right_wrist_yaw_link", "head_link")
    known = names[:3]  # head_link is in GMR's G1 list, not a body of this robot: skipped
    local = np.concatenate((_local_body_pos(rows, known), np.zeros((ROWS, 1, 3))), axis=1)
    good = _gmr_dict(rows, local_body_pos=local, link_body_list=list(names))
    clip = convert_gmr(_write(tmp_path / "good.pkl", good), checks=False)
    assert clip.num_frames == 101
    swapped = rows.copy()  # dof_pos columns in another joint order: left and right legs
    swapped[:, 7:13], swapped[:, 13:19] = rows[:, 13:19], rows[:, 7:13].copy()
    bad = _gmr_dict(swapped, local_body_pos=local, link_body_list=list(names))
    with pytest.raises(
        MotionFormatError,
        match=r"key 'local_body_pos' frame \d+ body 'left_ankle_roll_link': forward kinematics "
        r"of 'dof_pos' on robot 'g1' puts it 0\.\d+ m away .*not in the robot's joint order",
    ):
        convert_gmr(_write(tmp_path / "bad.pkl", bad), checks=False)
    wrong_count = _gmr_dict(rows, local_body_pos=local, link_body_list=list(names[:2]))
    with pytest.raises(
        MotionFormatError, match=r"'local_body_pos' has shape \(121, 4, 3\), expected \(121, 2, 3\)"
    ):
        read_gmr(_write(tmp_path / "count.pkl", wrong_count))


@pytest.mark.parametrize(
    ("crafted", "reason"),
    [
        (b"c__builtin__\nbytearray\n(I1000000000000\ntR.", r"bytearray\(1000000000000\)"),
        (
            b"cnumpy.core.multiarray\n_reconstruct\n(cnumpy\nndarray\n(I1000000000000\ntS'b'\ntR.",
            r"_reconstruct of shape \(1000000000000,\)",
        ),
    ],
    ids=["bytearray", "reconstruct"],
)
def test_a_pickle_cannot_allocate_memory_from_a_number(tmp_path, crafted, reason):
    path = tmp_path / "big.pkl"
    path.write_bytes(crafted)
    with pytest.raises(MotionFormatError, match=r"is a pickle that cannot be read \(.*" + reason):
        load_clip(path)
