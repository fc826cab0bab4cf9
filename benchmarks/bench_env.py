"""Env throughput vs the physics-only limit: ``python benchmarks/bench_env.py [N ...]``.

The same as ``gym-motion bench --num-envs N ... --steps 200 --json bench_env.json``; see
`gym_motion.bench`.
"""

import sys

from gym_motion.cli import main

if __name__ == "__main__":
    ns = sys.argv[1:] or ["1024", "4096"]
    sys.exit(main(["bench", "--num-envs", *ns, "--steps", "200", "--json", "bench_env.json"]))
