"""SchedulingPodAntiAffinity and SchedulingPodAffinity, shaped like upstream scheduler_perf: nodes of
4 CPU / 32Gi / 110 pods; initial pods in namespace sched-0, measured pods in sched-1.

- anti-affinity: pods labelled ``color: green`` that refuse each other per ``kubernetes.io/hostname``
  (in both namespaces), so every pod needs a node of its own;
- affinity: nodes all in ``topology.kubernetes.io/zone: zone1``; pods labelled ``foo: ""`` that
  require a pod with that label in their zone (in both namespaces).
"""

from __future__ import annotations

from typing import Any

from harness import Bench, Measurement, size_parser

from kubesched.testkit.builders import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def anti_affinity_pod(name: str, namespace: str) -> dict[str, Any]:
    pod = make_pod(name, namespace=namespace, labels={"color": "green", "name": "test"})
    pod["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": HOSTNAME,
         "namespaces": ["sched-1", "sched-0"]}]}}
    return pod


def affinity_pod(name: str, namespace: str) -> dict[str, Any]:
    pod = make_pod(name, namespace=namespace, labels={"foo": ""})
    pod["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"foo": ""}}, "topologyKey": ZONE, "namespaces": ["sched-1", "sched-0"]}]}}
    return pod


def run_anti_affinity(nodes: int = 5000, initial: int = 1000, measured: int = 1000) -> Measurement:
    bench = Bench()
    bench.create(make_node(f"node-{i}") for i in range(nodes))
    bench.create(anti_affinity_pod(f"init-{i}", "sched-0") for i in range(initial))
    bench.drain()
    pods = [anti_affinity_pod(f"pod-{i}", "sched-1") for i in range(measured)]
    return bench.measure(f"SchedulingPodAntiAffinity/{nodes}Nodes_{measured}Pods", pods)


def run_affinity(nodes: int = 5000, initial: int = 1000, measured: int = 1000) -> Measurement:
    bench = Bench()
    bench.create(make_node(f"node-{i}", labels={ZONE: "zone1"}) for i in range(nodes))
    bench.create(affinity_pod(f"init-{i}", "sched-0") for i in range(initial))
    bench.drain()
    pods = [affinity_pod(f"pod-{i}", "sched-1") for i in range(measured)]
    return bench.measure(f"SchedulingPodAffinity/{nodes}Nodes_{measured}Pods", pods)


if __name__ == "__main__":
    parser = size_parser(__doc__)
    a = parser.parse_args()
    print(run_anti_affinity(a.nodes, a.initial, a.measured).line(), flush=True)
    print(run_affinity(a.nodes, a.initial, a.measured).line())
