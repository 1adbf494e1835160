"""SchedulingNodeAffinity, shaped like upstream scheduler_perf: nodes of 4 CPU / 32Gi / 110 pods
labelled ``topology.kubernetes.io/zone`` zone1..zone<Z> round-robin; pods of 100m / 500Mi (with a
containerPort, as upstream's pod-with-node-affinity template) that require
``topology.kubernetes.io/zone In [zone1, zone2]``; N nodes, I initial pods, then M measured pods."""

from __future__ import annotations

from typing import Any

from harness import Bench, Measurement, size_parser

from kubesched.testkit.builders import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"


def affinity_pod(name: str) -> dict[str, Any]:
    pod = make_pod(name)
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    pod["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]},
        ]}],
    }}}
    return pod


def run(nodes: int = 5000, initial: int = 1000, measured: int = 1000, zones: int = 10) -> Measurement:
    bench = Bench()
    bench.create(make_node(f"node-{i}", labels={ZONE: f"zone{i % zones + 1}"}) for i in range(nodes))
    bench.create(affinity_pod(f"init-{i}") for i in range(initial))
    bench.drain()
    pods = [affinity_pod(f"pod-{i}") for i in range(measured)]
    return bench.measure(f"SchedulingNodeAffinity/{nodes}Nodes_{measured}Pods", pods)


if __name__ == "__main__":
    parser = size_parser(__doc__)
    parser.add_argument("--zones", type=int, default=10)
    a = parser.parse_args()
    print(run(a.nodes, a.initial, a.measured, a.zones).line())
