"""Rollouts collected by Ray sampler actors for one learner process: `SamplerPool`.

    pool = SamplerPool(config, motions, collector)  # K actors (config.samplers), Ray started
    batches = pool.collect(payload)                 # one rollout per sampler, `SamplerBatch`es
    pool.close()                                    # every actor ended (and a local Ray)

Each sampler (`Sampler`, run as a Ray actor) owns a `TrackingVecEnv` of ``num_envs / K`` envs
(SAME_STEP autoreset) on its own block of its node's CPUs, and a library's rollout code built
from the picklable `collector` (a `Collector`): per learner iteration the learner broadcasts one
payload (its policy's weights and observation statistics, ``ray.put`` once), each sampler runs a
whole rollout with a CPU copy of the policy and returns its arrays. One round trip per sampler
and iteration; docs/scaling.md compares it with stepping remote envs per call, and gives the
bytes moved.

The sampler also keeps the env's `TrackingStats` over the rollout and its adaptive-sampling
statistics, which the learner merges (`TrackingStats.combined`).

Faults: a sampler whose process dies (``RayActorError``) is replaced by a new actor (new
episodes, seed ``seed + index + K x restarts``) on the same block and collects its rollout
again, up to ``max_restarts`` times per sampler; then `RunAborted` ends the run cleanly. An
exception raised inside a sampler's code is not retried: it is raised as a RuntimeError with the
sampler's traceback. `close` kills every actor and shuts down a Ray instance the pool started.

Ray is imported when a pool is made, never by importing this module (the ``[ray]`` extra).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from gym_motion.envs.stats import TrackingStats, tracking_terms
from gym_motion.training.progress import RunAborted

if TYPE_CHECKING:
    from gym_motion.training.config import RunConfig

__all__ = ["Collector", "Sampler", "SamplerBatch", "SamplerPool", "array_bytes", "init_ray"]

# Object store of a Ray instance the pool starts: a PPO rollout returns ~46 kB per env (24 steps
# of 1,916 B, docs/scaling.md); room for two iterations' rollouts and the weights
MIN_OBJECT_STORE = 256 * 2**20
OBJECT_STORE_PER_ENV = 100 * 2**10
# Replacements of a dead sampler (per slot) before the run is aborted
MAX_RESTARTS = 3


class Collector(Protocol):
    """A library's rollout code, sent to every sampler (so it must pickle).

    ``collector(env, seed)`` is called once on the sampler, after its CPU block is pinned, with
    the sampler's env (a `TrackingVecEnv`, SAME_STEP autoreset) and seed; it returns an object
    with ``observation_space`` and ``action_space`` (the spaces the library's policy sees),
    optionally ``initial`` (what the learner should know before the first rollout, handed over
    by `SamplerPool.take_initial`), and
    ``collect(payload) -> dict``: one rollout with the weights and statistics in `payload`
    (what the learner broadcast), as NumPy arrays (nested dicts allowed), the env stepped in
    between (the sampler updates the env's statistics itself).
    """

    def __call__(self, env: Any, seed: int) -> Any: ...


@dataclass
class SamplerBatch:
    """One sampler's rollout.

    Attributes:
        index: the sampler's slot, 0..K-1 (a replacement keeps its slot).
        data: the collector's arrays (e.g. SB3: observations (T, N, D) float32 per group,
            actions (T, N, A), values, log_probs, returns, advantages (T, N) float32).
        stats: the env's `TrackingStats` over the rollout. sampling: its adaptive-sampling
            statistics (``{}`` with uniform sampling).
        num_envs: N, the sampler's envs. env_steps: T x N.
        collect_s: seconds the sampler spent on the rollout (stepping and acting).
        node: the Ray node id it ran on. pid: its process id.
        nbytes: bytes of `data`'s arrays (what travels back, before framing).
    """

    index: int
    data: dict[str, Any]
    stats: TrackingStats
    sampling: dict[str, float]
    num_envs: int
    env_steps: int
    collect_s: float
    node: str
    pid: int
    nbytes: int = field(default=0)


def array_bytes(tree: Any) -> int:
    """Bytes of the NumPy arrays in `tree` (nested dicts, lists and tuples); other leaves: 0."""
    if isinstance(tree, dict):
        return sum(array_bytes(v) for v in tree.values())
    if isinstance(tree, list | tuple):
        return sum(array_bytes(v) for v in tree)
    return int(getattr(tree, "nbytes", 0))


class Sampler:
    """One sampler: its env, the library's collector and the env's statistics. Made a Ray
    actor by `SamplerPool`; a plain object works as well (tests).

    Args:
        index: the sampler's slot. config: the run's `RunConfig` (its ``env``, ``obs_mode``,
            ``num_envs / samplers`` envs). motions: clip paths. collector: the library's
            `Collector`. seed: the env's and collector's seed. env_kwargs: extra
            `TrackingVecEnv` keywords (the library's).
    """

    def __init__(
        self,
        index: int,
        config: RunConfig,
        motions: Sequence[str],
        collector: Collector,
        seed: int,
        env_kwargs: dict[str, Any] | None = None,
    ):
        self.index, self.config, self.motions = index, config, list(motions)
        self._collector_factory, self.seed = collector, int(seed)
        self._env_kwargs = dict(env_kwargs or {})
        self.env: Any = None
        self.collector: Any = None
        self.num_envs = config.num_envs // max(1, config.samplers)

    def node(self) -> str:
        """The Ray node id this sampler runs on ("local" outside Ray)."""
        ray = sys.modules.get("ray")
        if ray is None or not ray.is_initialized():  # a plain object, not an actor
            return "local"
        return ray.get_runtime_context().get_node_id()

    def pid(self) -> int:
        """The sampler's process id."""
        return os.getpid()

    def setup(self, block: tuple[int, int] | None = None) -> dict[str, Any]:
        """Pin this process to block ``(index, count)`` of its node's CPUs (None: all of them;
        more blocks than CPUs: one CPU each, shared), then build the env (physics threads on
        the block) and the collector.

        Returns:
            ``{"observation_space", "action_space", "cpu_ids", "num_envs", "initial"}``
            (``initial``: the collector's ``initial`` attribute if it has one, e.g. what its
            env's reset observed, else None).

        Raises:
            ValueError: the node has fewer CPUs than blocks; the env's own errors.
        """
        from gym_motion.backends.threads import available_cpus
        from gym_motion.envs.tracking import TrackingVecEnv
        from gym_motion.training.distributed import cpu_block, pin_cpus

        cpus = available_cpus()
        if block is not None:
            index, count = block
            if count > len(cpus):  # more samplers than cores on this node: they share cores
                print(f"gym-motion train: {count} samplers share {len(cpus)} CPUs on one node",
                      file=sys.stderr)  # fmt: skip
                index, count = index % len(cpus), len(cpus)
            cpus = cpu_block(cpus, index, count)
            pin_cpus(cpus)
        cfg = self.config.env
        if cfg.backend.name == "mujoco":
            cfg = cfg.updated(backend_kwargs={"cpu_ids": list(cpus)})
        self.env = TrackingVecEnv(
            num_envs=self.num_envs, motion=self.motions, cfg=cfg, autoreset_mode="same_step",
            obs_mode=self.config.obs_mode, seed=self.seed, **self._env_kwargs,
        )  # fmt: skip
        self.stats = TrackingStats(tracking_terms(self.env))
        self.collector = self._collector_factory(_StatsRecorder(self.env, self.stats), self.seed)
        return {
            "observation_space": self.collector.observation_space,
            "action_space": self.collector.action_space,
            "cpu_ids": tuple(cpus),
            "num_envs": self.num_envs,
            "initial": getattr(self.collector, "initial", None),
        }

    def collect(
        self, payload: Any, reset_noise_scale: float, inactive_terminations: tuple[str, ...] = ()
    ) -> SamplerBatch:
        """One rollout with the learner's `payload`, the env's reset noise at
        `reset_noise_scale` and `inactive_terminations` switched off (the run's curricula)."""
        if self.collector is None:
            raise RuntimeError(f"sampler {self.index}: collect before setup")
        self.env.reset_noise_scale = reset_noise_scale
        self.env.inactive_terminations = inactive_terminations
        self.stats.reset()
        t0 = time.perf_counter()
        data = self.collector.collect(payload)
        seconds = time.perf_counter() - t0
        return SamplerBatch(
            index=self.index,
            data=data,
            stats=self.stats,
            sampling=dict(getattr(self.env, "sampling_stats", {}) or {}),
            num_envs=self.num_envs,
            env_steps=self.stats.steps * self.num_envs,
            collect_s=seconds,
            node=self.node(),
            pid=os.getpid(),
            nbytes=array_bytes(data),
        )

    def close(self) -> None:
        """Close the env."""
        if self.env is not None:
            self.env.close()


class _StatsRecorder:
    """The sampler's env as the collector sees it: every `step`'s info dict goes into `stats`;
    everything else is the env's."""

    def __init__(self, env: Any, stats: TrackingStats):
        self._env, self._stats = env, stats

    def step(self, actions):
        out = self._env.step(actions)
        self._stats.add(out[-1])
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)


class SamplerPool:
    """K Ray sampler actors (``config.samplers``) with ``config.num_envs / K`` envs each; the
    training "env" a sampled learner gets from `gym_motion.training.train`.

    Args:
        config: the run's config (``samplers``, ``num_envs``, ``ray_address``, ``env``...).
        motions: clip paths (absolute: every node must see them at the same path).
        collector: the library's `Collector`.
        seed: sampler k's seed is ``seed + k`` (a replacement's ``+ K x restarts``).
        env_kwargs: extra `TrackingVecEnv` keywords.
        cpus_per_sampler: CPUs each actor asks Ray for (and is pinned to); default: the
            physics threads of ``config.env`` if set, else this machine's CPUs / K.
        max_restarts: replacements allowed per sampler before the run is aborted (default
            `MAX_RESTARTS`).

    Attributes:
        num_envs: all samplers' envs. observation_space, action_space: the collector's.
        reset_noise_scale, inactive_terminations: sent with every `collect` (the skeleton's
            `Progress` sets them).
        env_steps, restarts: per sampler slot, env steps collected and replacements.
        cpu_ids: per slot, the CPUs its actor was pinned to (on its node).

    Raises:
        ModuleNotFoundError: Ray is not installed (the ``[ray]`` extra).
        ValueError: the collector's errors on setup (raised from the sampler).
    """

    def __init__(
        self,
        config: RunConfig,
        motions: Sequence[str],
        collector: Collector,
        seed: int,
        env_kwargs: dict[str, Any] | None = None,
        cpus_per_sampler: int | None = None,
        max_restarts: int | None = None,
    ):
        ray = _import_ray()
        from gym_motion.backends.threads import available_cpus

        k = config.samplers
        if k < 1:
            raise ValueError(f"a SamplerPool needs samplers >= 1, got {k}")
        self.config, self.motions, self.collector = config, list(motions), collector
        self.seed, self.env_kwargs = int(seed), dict(env_kwargs or {})
        self.samplers, self.num_envs = k, config.num_envs
        self.max_restarts = MAX_RESTARTS if max_restarts is None else int(max_restarts)
        self.cpus = (
            cpus_per_sampler or config.env.backend.num_threads or max(1, len(available_cpus()) // k)
        )
        self.reset_noise_scale = 0.0
        self.inactive_terminations: tuple[str, ...] = ()
        self.env_steps = [0] * k
        self.restarts = [0] * k
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            store = max(MIN_OBJECT_STORE, OBJECT_STORE_PER_ENV * config.num_envs)
            init_ray(config.ray_address, max(len(available_cpus()), self.cpus * k), store)
        self._actors: list[Any] = [None] * k
        self._blocks: list[tuple[int, int]] = [(0, 1)] * k
        self.cpu_ids: list[tuple[int, ...]] = [()] * k
        self.nodes: list[str] = [""] * k
        self._initial: list[Any] = []
        try:
            self._start_all()
        except BaseException:
            self.close()
            raise

    # -- actors ---------------------------------------------------------------------------------

    def _new_actor(self, index: int) -> Any:
        ray = _import_ray()
        remote = ray.remote(num_cpus=self.cpus, max_restarts=0)(Sampler)
        seed = self.seed + index + self.samplers * self.restarts[index]
        return remote.remote(index, self.config, self.motions, self.collector, seed,
                             self.env_kwargs)  # fmt: skip

    def _start_all(self) -> None:
        ray = _import_ray()
        self._actors = [self._new_actor(i) for i in range(self.samplers)]
        self.nodes = ray.get([a.node.remote() for a in self._actors])
        # samplers on one node get disjoint blocks of its CPUs, in slot order
        for i, node in enumerate(self.nodes):
            same = [j for j, n in enumerate(self.nodes) if n == node]
            self._blocks[i] = (same.index(i), len(same))
        infos = self._get([a.setup.remote(self._blocks[i]) for i, a in enumerate(self._actors)])
        self.observation_space = infos[0]["observation_space"]
        self.action_space = infos[0]["action_space"]
        self.cpu_ids = [info["cpu_ids"] for info in infos]
        self._initial = [info["initial"] for info in infos if info["initial"] is not None]

    def _replace(self, index: int, reason: str) -> None:
        ray = _import_ray()
        if self.restarts[index] >= self.max_restarts:
            raise RunAborted(
                f"sampler {index} died ({reason}) and was already replaced "
                f"{self.restarts[index]} time(s) (the limit): the run stops here; its folder "
                "keeps the model and the last checkpoint (continue with --resume)"
            )
        self.restarts[index] += 1
        print(f"gym-motion train: sampler {index} died ({reason}); starting a replacement "
              f"({self.restarts[index]}/{self.max_restarts})", file=sys.stderr)  # fmt: skip
        _kill(self._actors[index])
        actor = self._new_actor(index)
        self._actors[index] = actor
        self.nodes[index] = ray.get(actor.node.remote())
        info = self._get([actor.setup.remote(self._blocks[index])])[0]
        self.cpu_ids[index] = info["cpu_ids"]
        if info["initial"] is not None:
            self._initial.append(info["initial"])

    def _get(self, refs: list[Any]) -> list[Any]:
        """`ray.get`, a sampler's own exception raised as a one-line RuntimeError (its
        traceback printed by Ray)."""
        ray = _import_ray()
        try:
            return ray.get(refs)
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if getattr(exc, "cause", None) is not None else exc
            raise RuntimeError(f"a sampler failed: {type(cause).__name__}: {cause}") from None

    def take_initial(self) -> list[Any]:
        """The collectors' ``initial`` values not taken yet (samplers started or replaced since
        the last call), in the order they started; then forgets them."""
        out, self._initial = self._initial, []
        return out

    def pids(self) -> list[int]:
        """The samplers' process ids, by slot."""
        return _import_ray().get([a.pid.remote() for a in self._actors])

    # -- collection -----------------------------------------------------------------------------

    def collect(self, payload: Any) -> list[SamplerBatch]:
        """One rollout from every sampler with `payload` (put into the object store once);
        a sampler that died is replaced and collects again (see the module docstring).

        Returns:
            The batches in slot order.

        Raises:
            RunAborted: a sampler died more than ``max_restarts`` times.
            RuntimeError: a sampler's code raised.
        """
        ray = _import_ray()
        ref = ray.put(payload)
        curricula = (float(self.reset_noise_scale), tuple(self.inactive_terminations))
        pending = {i: a.collect.remote(ref, *curricula) for i, a in enumerate(self._actors)}
        batches: list[SamplerBatch | None] = [None] * self.samplers
        while pending:
            for i, fut in list(pending.items()):
                try:
                    batches[i] = self._get([fut])[0]
                    del pending[i]
                except ray.exceptions.RayActorError as exc:
                    self._replace(i, type(exc).__name__)
                    pending[i] = self._actors[i].collect.remote(ref, *curricula)
        for b in batches:
            self.env_steps[b.index] += b.env_steps
        return batches  # type: ignore[return-value]

    def close(self) -> None:
        """Kill every actor; shut down the Ray instance if this pool started it. Idempotent."""
        ray = sys.modules.get("ray")
        if ray is None:
            return
        for actor in self._actors:
            _kill(actor)
        self._actors = [None] * self.samplers
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
            self._owns_ray = False


def _kill(actor: Any) -> None:
    if actor is None:
        return
    import ray

    try:
        ray.kill(actor, no_restart=True)
    except Exception:  # already gone, or Ray already shut down
        pass


def init_ray(address: str | None, num_cpus: int, object_store_memory: int) -> None:
    """Start Ray for a run's samplers: without `address`, a local instance of its own with
    `num_cpus` CPUs and `object_store_memory` bytes (``address="local"``: a cluster that
    ``RAY_ADDRESS`` or an earlier ``ray start`` points at is left alone); with one, connect to
    that cluster.

    Raises:
        ValueError: the cluster at `address` cannot be reached, in one line; where
            ``RAY_AUTH_MODE=token`` is not set, naming it (a cluster that ``ray start`` began
            with token authentication refuses a driver that sends no token).
    """
    ray = _import_ray()
    if address is None:
        ray.init(address="local", num_cpus=num_cpus, object_store_memory=object_store_memory,
                 include_dashboard=False)  # fmt: skip
        return
    refused = (ConnectionError, getattr(ray.exceptions, "AuthenticationError", ConnectionError))
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=True)
    except refused as exc:
        cause = " ".join(f"{type(exc).__name__}: {exc}".split())
        hint = ""
        if os.environ.get("RAY_AUTH_MODE", "").strip().lower() != "token":
            hint = ("; a cluster that `ray start` began with token authentication (Ray 2.59+ "
                    "turns it on where ~/.ray/auth_token exists) needs RAY_AUTH_MODE=token in "
                    "this driver's environment, with the cluster's token in ~/.ray/auth_token "
                    "or RAY_AUTH_TOKEN")  # fmt: skip
        raise ValueError(
            f"cannot connect to the Ray cluster at {address} ({cause}){hint}"
        ) from None


def _import_ray():
    try:
        import ray
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "--samplers runs sampler actors on Ray, which is not installed: "
            "pip install 'gym_motion[ray]'"
        ) from None
    return ray
