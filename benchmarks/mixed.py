"""A mixed workload, closer to a real cluster than any single shape: nodes in 10 zones (some
tainted for a dedicated team), and the measured pods interleaved from every shape of the other
benchmarks — Deployment pods (system default spreading) 40 %, bare pods 20 %, required zone affinity
10 %, hard zone spreading 10 %, pods tolerating the dedicated nodes 10 %, hostname anti-affinity 5 %
and zone affinity to each other 5 %; a quarter of the initial pods have a lower priority, and the
measured pods of one Deployment a higher one, so some of them preempt once the cluster is full."""

from __future__ import annotations

from typing import Any

import node_affinity
import pod_affinity
import topology_spreading
from harness import Bench, Measurement, size_parser

from kubesched.testkit.builders import (
    make_deployment,
    make_node,
    make_pod,
    make_priority_class,
    make_replicaset,
)

ZONE = "topology.kubernetes.io/zone"
DEDICATED = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}


def _nodes(count: int) -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        dedicated = i % 7 == 6  # a dedicated pool across the zones
        out.append(make_node(f"node-{i}", labels={ZONE: f"zone{i % 10 + 1}", **({"team": "batch"} if dedicated else {})},
                             taints=[dict(DEDICATED)] if dedicated else None))
    return out


def _replicasets(count: int) -> list[dict[str, Any]]:
    sets = []
    for d in range(count):
        deploy = make_deployment(f"web-{d}", 0, make_pod("template", "250m", "256Mi"))
        rs = make_replicaset(f"web-{d}-5d8f", 0, make_pod("template"))
        rs["spec"]["selector"] = deploy["spec"]["selector"]
        rs["spec"]["template"] = deploy["spec"]["template"]
        if d == 0:
            rs["spec"]["template"]["spec"]["priorityClassName"] = "high"
        sets.append(rs)
    return sets


def _pod(k: int, name: str, sets: list[dict[str, Any]]) -> dict[str, Any]:
    """The k-th pod of the mix (k modulo 20 picks its shape)."""
    slot = k % 20
    if slot < 8:
        return topology_spreading._replicaset_pod(sets[slot % len(sets)], name)
    if slot < 12:
        return make_pod(name, "200m", "512Mi")
    if slot < 14:
        return node_affinity.affinity_pod(name)
    if slot < 16:
        return topology_spreading.spreading_pod(name)
    if slot < 18:
        pod = make_pod(name, "500m", "1Gi", tolerations=[{"key": "dedicated", "operator": "Equal", "value": "batch",
                                                         "effect": "NoSchedule"}])
        pod["spec"]["nodeSelector"] = {"team": "batch"}
        return pod
    if slot == 18:
        return pod_affinity.anti_affinity_pod(name, "sched-1")
    return pod_affinity.affinity_pod(name, "sched-1")


def run(nodes: int = 5000, initial: int = 1000, measured: int = 2000) -> Measurement:
    bench = Bench()
    bench.create([make_priority_class("low", -10), make_priority_class("high", 1000)])
    bench.create(_nodes(nodes))
    sets = _replicasets(4)
    bench.create(sets)
    first = []
    for k in range(initial):
        pod = _pod(k, f"init-{k}", sets)
        if k % 4 == 0:
            pod["spec"]["priorityClassName"] = "low"
            pod["spec"].pop("priority", None)
        first.append(pod)
    bench.create(first)
    bench.drain()
    pods = [_pod(k, f"pod-{k}", sets) for k in range(measured)]
    return bench.measure(f"Mixed/{nodes}Nodes_{measured}Pods", pods, settle=15.0)


if __name__ == "__main__":
    parser = size_parser(__doc__, measured=2000)
    a = parser.parse_args()
    print(run(a.nodes, a.initial, a.measured).line())
