"""Run every benchmark and print one line each: ``python benchmarks/run.py [--quick]``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import mixed  # noqa: E402
import node_affinity  # noqa: E402
import numa  # noqa: E402
import pod_affinity  # noqa: E402
import preemption_basic  # noqa: E402
import scheduling_basic  # noqa: E402
import topology_spreading  # noqa: E402
import volume_binding  # noqa: E402
from harness import Measurement  # noqa: E402

KUBE_HINT = "real-cluster backend against the fake API server: python benchmarks/kube_fakeapi.py"
BIG_HINT = "a big cluster end to end (kubesched simulate): python benchmarks/big_cluster.py --nodes 50000 --pods 200000"
DUMP_HINT = ("production-size kubectl dumps, each command a user runs on them timed end to end: "
             "python benchmarks/production_dump.py --sizes small,large")


def shapes(nodes: int) -> list[Callable[[], Measurement]]:
    """Every workload shape at ``nodes`` nodes (initial and measured pods as upstream's configs)."""
    return [
        lambda: scheduling_basic.run(nodes, 1000, 10000),
        lambda: node_affinity.run(nodes, 1000, 1000),
        lambda: topology_spreading.run(nodes, 1000, 1000),
        lambda: topology_spreading.run_deployments(nodes, 1000, 1000),
        # one pod per node: initial and measured pods must leave nodes free
        lambda: pod_affinity.run_anti_affinity(nodes, min(1000, nodes // 5), min(1000, nodes // 2)),
        lambda: pod_affinity.run_affinity(nodes, 1000, 1000),
        lambda: mixed.run(nodes, 1000, 2000),
        lambda: preemption_basic.run(nodes // 10),
        lambda: preemption_basic.run(nodes),
        # the victims under PodDisruptionBudgets (PreemptionPDB)
        lambda: preemption_basic.run(nodes, pdbs=True),
        # preemptors whose filters depend on the node's pods (spreading, pod (anti-)affinity)
        lambda: preemption_basic.run(nodes // 10, "spread+anti-affinity"),
        lambda: preemption_basic.run(nodes // 10, "affinity"),
        lambda: volume_binding.run_local(nodes, 1000),
        lambda: volume_binding.run_provisioning(nodes, 1000),
        lambda: volume_binding.run_immediate(nodes, 1000),
        # NUMA-aware placement (scheduler-plugins' NodeResourceTopologyMatch, not in the default profile)
        lambda: numa.run(nodes, 500, 500),
        lambda: numa.run(nodes, 500, 500, cache="period"),  # the reservation-aware view
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--nodes", default="5000",
                        help="comma-separated cluster sizes to run every shape at (default 5000; e.g. 1000,5000,15000)")
    args = parser.parse_args()
    if args.quick:
        print(scheduling_basic.run(500, 100, 1000).line())
        print(node_affinity.run(500, 100, 1000).line())
        print(topology_spreading.run(500, 100, 1000).line())
        print(topology_spreading.run_deployments(500, 100, 1000).line())
        print(pod_affinity.run_anti_affinity(500, 100, 400).line())
        print(pod_affinity.run_affinity(500, 100, 400).line())
        print(mixed.run(500, 100, 400).line())
        print(preemption_basic.run(100).line())
        print(preemption_basic.run(100, "spread+anti-affinity").line())
        print(volume_binding.run_local(500, 500).line())
        print(volume_binding.run_provisioning(500, 500).line())
        return
    for nodes in (int(n) for n in args.nodes.split(",")):
        for shape in shapes(nodes):
            print(shape().line(), flush=True)
    print(KUBE_HINT)
    print(BIG_HINT)
    print(DUMP_HINT)


if __name__ == "__main__":
    main()
