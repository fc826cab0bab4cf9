"""One rank of a ``torchrun`` data-parallel run: its device, seed and block of CPU cores.

``torchrun`` starts one process per rank and tells each who it is through environment variables
(``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``). rsl_rl's ``OnPolicyRunner``
reads them itself: with ``WORLD_SIZE`` > 1 it joins an NCCL process group, checks that it runs
on ``cuda:LOCAL_RANK``, broadcasts the initial weights from rank 0, all-reduces the gradients and
logs from rank 0 only. What each rank must decide before that, `rank_settings` decides:

- device: ``cuda:LOCAL_RANK`` for the networks, the env's tensors and, with the ``mjwarp``
  backend, the physics (one GPU per rank); the CPU when the run is a single process without
  CUDA;
- seed: the run's seed + ``RANK`` (distinct experience on every rank);
- CPU block: the CPUs this process may use, split into ``LOCAL_WORLD_SIZE`` contiguous blocks,
  block ``LOCAL_RANK`` for this rank; `pin_process` confines the process to it (physics
  threads, Numba's pool and torch's threads then size themselves to it), so ranks on one node
  never share cores (the managers run on the CPU on either backend);
- main: rank 0 writes the run folder, logs and evaluates.

See docs/scaling.md for the commands from 1 to 8 GPUs and several nodes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gym_motion.training.config import RunConfig

__all__ = ["RankSettings", "cpu_block", "for_rank", "pin_cpus", "pin_process", "rank_settings"]


@dataclass(frozen=True)
class RankSettings:
    """What one rank runs with (see `rank_settings`).

    Attributes:
        rank, local_rank, world_size, local_world_size: from torchrun's variables.
        device: torch (and, for mjwarp, Warp) device, e.g. "cuda:3" or "cpu".
        seed: the run's seed + rank.
        cpu_ids: this rank's block of CPU ids.
    """

    rank: int
    local_rank: int
    world_size: int
    local_world_size: int
    device: str
    seed: int
    cpu_ids: tuple[int, ...]

    @property
    def is_main(self) -> bool:
        """Rank 0: writes the run folder, logs and evaluates."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        """More than one rank."""
        return self.world_size > 1


def cpu_block(cpus: Sequence[int], index: int, count: int) -> tuple[int, ...]:
    """Block `index` of `count` contiguous, near-equal blocks of the sorted `cpus` (the first
    ``len(cpus) % count`` blocks get one CPU more).

    Raises:
        ValueError: fewer CPUs than blocks, or `index` outside [0, count).
    """
    cpus = sorted(int(c) for c in cpus)
    if not 0 <= index < count:
        raise ValueError(f"block index {index} outside [0, {count})")
    if len(cpus) < count:
        raise ValueError(f"{len(cpus)} CPUs cannot give {count} ranks a core each: {cpus}")
    size, extra = divmod(len(cpus), count)
    start = index * size + min(index, extra)
    return tuple(cpus[start : start + size + (index < extra)])


def _int(environ: Mapping[str, str], name: str, default: int) -> int:
    value = environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not an integer") from None


def rank_settings(
    seed: int,
    device: str = "cpu",
    environ: Mapping[str, str] | None = None,
    cpus: Sequence[int] | None = None,
    cuda_devices: int | None = None,
) -> RankSettings:
    """This process's `RankSettings` from torchrun's variables (module docstring).

    Args:
        seed: the run's seed. device: the device of a single-process run (no ``WORLD_SIZE``
            or ``WORLD_SIZE=1``); a distributed rank always runs on ``cuda:LOCAL_RANK``.
        environ: the variables (default ``os.environ``). cpus: the CPUs to split (default:
            this process's affinity). cuda_devices: CUDA devices visible (default: torch's
            count).

    Raises:
        ValueError: inconsistent variables (rank outside the world), a distributed run without
            a CUDA device for this rank (rsl_rl's multi-process training is NCCL-only), or
            fewer CPUs than local ranks.
    """
    env = os.environ if environ is None else environ
    world = _int(env, "WORLD_SIZE", 1)
    rank = _int(env, "RANK", 0)
    local_rank = _int(env, "LOCAL_RANK", rank if world > 1 else 0)
    local_world = _int(env, "LOCAL_WORLD_SIZE", world)
    if world < 1 or not 0 <= rank < world or not 0 <= local_rank < local_world <= world:
        raise ValueError(
            f"inconsistent torchrun variables: RANK={rank}, LOCAL_RANK={local_rank}, "
            f"WORLD_SIZE={world}, LOCAL_WORLD_SIZE={local_world}"
        )
    if cpus is None:
        from gym_motion.backends.threads import available_cpus

        cpus = available_cpus()
    if world > 1:
        if cuda_devices is None:
            import torch

            cuda_devices = torch.cuda.device_count()
        if local_rank >= cuda_devices:
            raise ValueError(
                f"rank {rank} (LOCAL_RANK={local_rank}) needs cuda:{local_rank}, but "
                f"{cuda_devices} CUDA device(s) are visible: rsl_rl's multi-process training "
                "runs one GPU per rank over NCCL (no CPU process group)"
            )
        device = f"cuda:{local_rank}"
    return RankSettings(
        rank=rank,
        local_rank=local_rank,
        world_size=world,
        local_world_size=local_world,
        device=device,
        seed=int(seed) + rank,
        cpu_ids=cpu_block(cpus, local_rank, local_world),
    )


def pin_process(settings: RankSettings) -> bool:
    """Confine this process (threads started later inherit it) to ``settings.cpu_ids`` and
    size torch's CPU thread pool to it. Linux only (elsewhere nothing happens).

    Returns:
        Whether the affinity was set.
    """
    return pin_cpus(settings.cpu_ids)


def pin_cpus(cpu_ids: Sequence[int]) -> bool:
    """Confine this process (threads started later inherit it) to `cpu_ids` and size torch's
    CPU thread pool to them (also what a Ray sampler does with its block). Linux only
    (elsewhere nothing happens).

    Returns:
        Whether the affinity was set.
    """
    if not hasattr(os, "sched_setaffinity"):
        return False
    os.sched_setaffinity(0, cpu_ids)
    import torch

    torch.set_num_threads(len(cpu_ids))
    return True


def for_rank(config: RunConfig) -> tuple[RunConfig, RankSettings | None]:
    """`config` as this process runs it, and its `RankSettings` (None unless
    ``config.distributed``): device, seed + rank, and the rank's CPU block (pinned now, before
    any thread starts) for the mujoco backend's threads or, with mjwarp, the rank's GPU.

    Raises:
        ValueError: see `rank_settings`.
    """
    if not config.distributed:
        return config, None
    rank = rank_settings(config.seed, config.device)
    pin_process(rank)
    env = config.env
    if env.backend.name == "mujoco":
        env = env.updated(backend_kwargs={"cpu_ids": list(rank.cpu_ids)})
    elif env.backend.name == "mjwarp" and rank.distributed:
        env = env.updated(backend_kwargs={"device": rank.device})
    return replace(config, env=env, device=rank.device, seed=rank.seed), rank
