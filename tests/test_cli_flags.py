"""Numeric CLI flags are checked by argparse, which names the flag: an episode count of 0 gave
"num_envs must be >= 1", a 0-second render wrote a one-frame video, `--top -3` was taken."""

from __future__ import annotations

import pytest

from gym_motion.cli import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["eval", "--episodes", "0"], "argument --episodes: must be an integer >= 1, got '0'"),
        (["eval", "--max-seconds", "0"], "argument --max-seconds: must be a number > 0"),
        (["eval", "--max-seconds", "nan"], "argument --max-seconds: must be a number > 0"),
        (["render", "--seconds", "0", "-o", "x.mp4"], "argument --seconds: must be a number > 0"),
        (["render", "--width", "1", "-o", "x.mp4"], "argument --width: must be an integer >= 2"),
        (["inspect", "--top", "-3", "x.npz"], "argument --top: must be an integer >= 0, got '-3'"),
        (["bench", "--num-envs", "0"], "argument --num-envs: must be an integer >= 1"),
        (["train", "--total-steps", "2.5"], "argument --total-steps: must be an integer, got"),
        (["train", "--backend", "bullet"], "argument --backend: invalid choice: 'bullet'"),
        (["train", "--max-minutes", "nan"], "argument --max-minutes: must be a number, got"),
        (["train", "--num-threads", "0"], "argument --num-threads: must be an integer >= 1"),
        (["train", "--anchor-horizontal-termination-from-episode-s", "0"],
         "argument --anchor-horizontal-termination-from-episode-s: must be a number > 0"),
        (["render", "--hold", "-5", "-o", "x.mp4"], "argument --hold: must be a number >= 0"),
        (["export", "--model", "run", "--opset", "-5"], "argument --opset: must be an integer"),
        (["convert", "a.csv", "-o", "b.npz", "--frames", "0", "-2"], "argument --frames: must be"),
        (["convert", "a.csv", "-o", "b.npz", "--input-fps", "0"], "argument --input-fps: must be"),
        (["eval", "--episodes", "1" + "0" * 400], "argument --episodes: must be an integer"),
    ],
)  # fmt: skip
def test_numeric_flags_are_refused_by_name(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_command_without_a_policy_names_every_way_to_give_one(capsys):
    with pytest.raises(SystemExit, match="unless --policy zero or --policy tracker"):
        main(["eval"])
