"""Two samplers on a 2-node Ray cluster on one machine: ``python benchmarks/ray_two_nodes.py``.

`ray.cluster_utils.Cluster` starts a head and a second node (1 CPU each, small object stores);
a `SamplerPool` of 2 samplers (1 CPU each) lands one sampler per node, each pinned to its
node's whole block; two PPO iterations merge their rollouts. Prints the samplers' nodes,
blocks and steps, and the seconds taken. Everything is shut down at the end.
"""

from __future__ import annotations

import time
from collections import deque


def main() -> None:
    import ray
    from ray.cluster_utils import Cluster
    from stable_baselines3.common.logger import Logger

    from gym_motion.training import RunConfig
    from gym_motion.training.samplers import SamplerPool
    from gym_motion.training.sb3.sampled import SB3Collector, SB3SampledLearner
    from gym_motion.training.skeleton import train_motions

    t0 = time.perf_counter()
    store = 80 * 2**20
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "object_store_memory": store, "include_dashboard": False})  # fmt: skip
    cluster.add_node(num_cpus=1, object_store_memory=store)
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        cluster.wait_for_nodes()
        config = RunConfig(num_envs=4, samplers=2, ppo={"n_steps": 8, "net_arch": [16]})
        pool = SamplerPool(config, train_motions([]), SB3Collector(config), seed=0,
                           cpus_per_sampler=1)  # fmt: skip
        try:
            print("nodes", len(ray.nodes()), "sampler nodes", [n[:8] for n in pool.nodes],
                  "cpu ids", pool.cpu_ids)  # fmt: skip
            learner = SB3SampledLearner(config, pool, None)
            learner.model.set_logger(Logger(None, []))
            learner.model.ep_info_buffer = deque(maxlen=100)
            for _ in range(2):
                batches = pool.collect(learner.payload())
                learner.absorb(batches)
                learner.model.train()
                print([(b.index, b.node[:8], b.env_steps) for b in batches])
        finally:
            pool.close()
        ray.shutdown()
    finally:
        cluster.shutdown()
    print(f"done in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
