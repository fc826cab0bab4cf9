"""``gym-motion train --init SOURCE``: a new run starts from another run's networks (actor,
critic, observation normaliser), nothing else, on its own clips and settings; a source whose
networks would not fit is refused in one line, and the run folder records the source."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gym_motion.cli import main  # noqa: E402

TINY = ["--num-envs", "2", "--no-video", "--eval-every", "0", "--seed", "1"]


def _train(out, *extra: str) -> None:
    argv = ["train", "--total-steps", "16", "--out", str(out), *TINY, *extra]
    assert main(argv) == 0


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    out = tmp_path_factory.mktemp("warm") / "source"
    _train(out, "--ppo", "n_steps=8", "net_arch=[16]")
    return out


def test_a_warm_start_takes_the_sources_networks_and_normaliser_and_records_it(source, tmp_path):
    from stable_baselines3 import PPO

    from gym_motion.envs import TrackingVecEnv
    from gym_motion.training import RunConfig, train_env_cfg
    from gym_motion.training.sb3.learner import SB3Learner

    # the learner right after the warm start: the source's weights and statistics exactly
    config = RunConfig(num_envs=2, ppo={"n_steps": 8, "net_arch": [16]}, init=str(source),
                       env=train_env_cfg())  # fmt: skip
    env = TrackingVecEnv(2, cfg=config.env, autoreset_mode="same_step", obs_mode="dict", seed=3)
    learner = SB3Learner(config, env, None)
    try:
        fresh = {k: v.clone() for k, v in learner.model.policy.state_dict().items()}
        learner.init_from(source)
        want = PPO.load(source / "model.zip", device="cpu").policy.state_dict()
        got = learner.model.policy.state_dict()
        assert all(torch.equal(got[k], want[k]) for k in want)
        assert any(not torch.equal(fresh[k], want[k]) for k in want)  # not a no-op
        with open(source / "vecnormalize.pkl", "rb") as f:
            saved = pickle.load(f).obs_rms
        for group in ("policy", "critic"):
            np.testing.assert_array_equal(learner.venv.obs_rms[group].mean, saved[group].mean)
        assert learner.model.num_timesteps == 0  # its own count starts anew
    finally:
        env.close()

    out = tmp_path / "warm"
    _train(out, "--ppo", "n_steps=8", "net_arch=[16]", "--init", str(source))
    config_json = json.loads((out / "config.json").read_text())
    assert config_json["train"]["init"] == str(source.resolve())
    assert json.loads((out / "summary.json").read_text())["env_steps"] == 16


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--ppo", "n_steps=8", "net_arch=[32]"], "network sizes"),
        (["--ppo", "n_steps=8", "net_arch=[16]", "--no-state-estimation"], "observation terms"),
        (["--ppo", "n_steps=8", "net_arch=[16]", "--action-offset", "reference"],
         "action_offset"),
    ],
    ids=["net_arch", "observation", "actions"],
)  # fmt: skip
def test_a_source_whose_networks_do_not_fit_is_refused_in_one_line(source, tmp_path, capsys,
                                                                  extra, named):  # fmt: skip
    capsys.readouterr()
    argv = ["train", "--total-steps", "16", "--out", str(tmp_path / "x"), *TINY, *extra,
            "--init", str(source)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert f"--init {source}: its {named} differ from this run's" in err
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "x" / "model.zip").exists()


def test_a_shipped_policy_or_a_missing_folder_is_refused_by_name(tmp_path, capsys):
    for init, said in (("tracker", "the shipped policies are ONNX files"),
                       (str(tmp_path / "none"), "no such run folder")):  # fmt: skip
        argv = ["train", "--total-steps", "16", "--out", str(tmp_path / "y"), *TINY,
                "--init", init]  # fmt: skip
        assert main(argv) == 2
        assert said in capsys.readouterr().err


def test_an_rsl_rl_run_starts_from_an_rsl_rl_run(tmp_path):
    pytest.importorskip("rsl_rl")
    ppo = ["--library", "rsl_rl", "--ppo", "num_steps_per_env=8", "hidden_dims=[16]"]
    _train(tmp_path / "a", *ppo)
    _train(tmp_path / "b", *ppo, "--init", str(tmp_path / "a"))
    a = torch.load(tmp_path / "a" / "model.pt", weights_only=False)
    config = json.loads((tmp_path / "b" / "config.json").read_text())
    assert config["train"]["init"] == str((tmp_path / "a").resolve())
    # b started from a's normaliser: it saw a's samples and then its own
    count = "actor_state_dict"
    b = torch.load(tmp_path / "b" / "model.pt", weights_only=False)
    assert b[count]["obs_normalizer.count"] > a[count]["obs_normalizer.count"]
