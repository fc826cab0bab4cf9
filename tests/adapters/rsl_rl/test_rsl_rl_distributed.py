"""torchrun ranks of `gym-motion train --library rsl_rl --distributed`: each rank's device, seed
and CPU block from torchrun's variables, and rank 0 alone writing the run."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("rsl_rl")

from gym_motion.backends.threads import available_cpus  # noqa: E402
from gym_motion.training import RunConfig, RunFolder, distributed, train  # noqa: E402
from gym_motion.training.distributed import (  # noqa: E402
    RankSettings,
    cpu_block,
    for_rank,
    rank_settings,
)


def TrainConfig(**kwargs) -> RunConfig:  # noqa: N802
    """An rsl_rl run without the final video (tests/test_run_folder.py makes one)."""
    return RunConfig(library="rsl_rl", **{"video_seconds": 0.0, **kwargs})


TORCHRUN_RANK_5 = {"WORLD_SIZE": "16", "RANK": "5", "LOCAL_RANK": "5", "LOCAL_WORLD_SIZE": "8"}


def test_a_gpu_rank_gets_its_gpu_seed_and_cpu_block():
    s = rank_settings(7, environ=TORCHRUN_RANK_5, cpus=range(32), cuda_devices=8)
    assert (s.rank, s.local_rank, s.world_size, s.local_world_size) == (5, 5, 16, 8)
    assert s.device == "cuda:5" and s.seed == 12 and not s.is_main and s.distributed
    assert s.cpu_ids == (20, 21, 22, 23)  # block 5 of 8 blocks of 4 cores


def test_a_second_node_uses_its_local_rank_for_device_and_cores():
    env = {"WORLD_SIZE": "16", "RANK": "13", "LOCAL_RANK": "5", "LOCAL_WORLD_SIZE": "8"}
    s = rank_settings(0, environ=env, cpus=range(16), cuda_devices=8)
    assert s.device == "cuda:5" and s.seed == 13 and s.cpu_ids == (10, 11)


def test_a_single_process_keeps_its_device_and_all_cores():
    s = rank_settings(3, "cpu", environ={}, cpus=[0, 1])
    assert s == RankSettings(0, 0, 1, 1, "cpu", 3, (0, 1)) and s.is_main and not s.distributed


def test_cpu_blocks_cover_the_cores_once():
    cpus = [4, 0, 2, 1, 3]
    blocks = [cpu_block(cpus, i, 2) for i in range(2)]
    assert blocks == [(0, 1, 2), (3, 4)]
    with pytest.raises(ValueError, match="cannot give 3 ranks a core each"):
        cpu_block([0, 1], 0, 3)


def test_refusals_say_why():
    with pytest.raises(ValueError, match="NCCL"):
        rank_settings(0, environ=TORCHRUN_RANK_5, cpus=range(32), cuda_devices=0)
    with pytest.raises(ValueError, match="inconsistent torchrun variables"):
        rank_settings(0, environ={"WORLD_SIZE": "2", "RANK": "2"}, cpus=range(4))
    with pytest.raises(ValueError, match="not an integer"):
        rank_settings(0, environ={"WORLD_SIZE": "two"}, cpus=range(4))


SMALL = {"hidden_dims": [16], "num_steps_per_env": 8}


def test_single_rank_distributed_run_writes_the_run(tmp_path):
    summary = train(TrainConfig(num_envs=2, total_steps=32, ppo=SMALL, distributed=True,
                                out=str(tmp_path / "run"), eval_max_seconds=0.1,
                                eval_every_steps=0))  # fmt: skip
    assert summary["env_steps"] == 32 and "after" in summary and "ranks" not in summary
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["ranks"] == 1 and config["train"]["distributed"] is True
    # the run records the task as given; each rank pins its own CPU block when it starts
    assert RunFolder(tmp_path / "run").env_cfg().backend.cpu_ids is None
    ranked, rank = for_rank(TrainConfig(distributed=True))
    assert rank.world_size == 1 and ranked.env.backend.cpu_ids == tuple(available_cpus())


def test_a_rank_other_than_0_writes_nothing(tmp_path, monkeypatch):
    """Rank 1 of 2 (no process group here: rsl_rl's would need NCCL and GPUs, so its set-up and
    the all-reduce of the budget flag are stood in for)."""
    from rsl_rl.runners import OnPolicyRunner

    cpus = available_cpus()
    rank1 = RankSettings(1, 1, 2, 2, "cpu", 8, tuple(cpus))
    monkeypatch.setattr(distributed, "rank_settings", lambda seed, device: rank1)

    def single_process(self):
        self.gpu_world_size, self.is_distributed = 1, False
        self.gpu_local_rank = self.gpu_global_rank = 0
        self.cfg["multi_gpu"] = None

    monkeypatch.setattr(OnPolicyRunner, "_configure_multi_gpu", single_process)
    monkeypatch.setattr(torch.distributed, "all_reduce", lambda *a, **k: None)
    out = tmp_path / "run"
    summary = train(TrainConfig(num_envs=2, total_steps=64, ppo=SMALL, distributed=True,
                                out=str(out), eval_max_seconds=0.1))  # fmt: skip
    assert not out.exists()  # no folder, logs, checkpoints or evaluations on rank 1
    assert summary["rank"] == 1 and summary["ranks"] == 2 and "before" not in summary
    # 64 steps over 2 ranks: 2 iterations of 8 steps x 2 envs on this rank
    assert summary["iterations"] == 2 and summary["env_steps"] == 64
