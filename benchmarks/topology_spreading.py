"""Pod topology spreading, two shapes on nodes of 4 CPU / 32Gi / 110 pods labelled
``topology.kubernetes.io/zone`` zone1..zone<Z> round-robin (and ``kubernetes.io/hostname``):

* ``TopologySpreading`` (as upstream scheduler_perf): pods of 100m / 500Mi labelled ``color: blue``
  with a ``DoNotSchedule`` maxSkew-5 zone constraint selecting ``color: blue``;
* ``DeploymentPods``: the pods of a few Deployments, i.e. pods owned by the Deployments'
  ReplicaSets, which get the system default spreading (ScheduleAnyway on hostname and zone). The
  bench runs no controllers, so it creates the ReplicaSets and their pods itself.

N nodes, I initial pods, then M measured pods."""

from __future__ import annotations

from typing import Any

from harness import Bench, Measurement, size_parser

from kubesched.testkit.builders import make_deployment, make_node, make_pod, make_replicaset

ZONE = "topology.kubernetes.io/zone"


def spreading_pod(name: str) -> dict[str, Any]:
    pod = make_pod(name, labels={"color": "blue"})
    pod["spec"]["topologySpreadConstraints"] = [{
        "maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"color": "blue"}},
    }]
    return pod


def _nodes(bench: Bench, nodes: int, zones: int) -> None:
    bench.create(make_node(f"node-{i}", labels={ZONE: f"zone{i % zones + 1}"}) for i in range(nodes))


def run(nodes: int = 5000, initial: int = 1000, measured: int = 1000, zones: int = 10) -> Measurement:
    bench = Bench()
    _nodes(bench, nodes, zones)
    bench.create(spreading_pod(f"init-{i}") for i in range(initial))
    bench.drain()
    pods = [spreading_pod(f"pod-{i}") for i in range(measured)]
    return bench.measure(f"TopologySpreading/{nodes}Nodes_{measured}Pods", pods)


def _replicaset_pod(rs: dict[str, Any], name: str) -> dict[str, Any]:
    """A pod of ReplicaSet ``rs`` (its template, controlled by it), as its controller makes them."""
    template = rs["spec"]["template"]
    pod: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": "default", "labels": dict(template["metadata"]["labels"]),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs["metadata"]["name"],
                                 "uid": f"uid-{rs['metadata']['name']}", "controller": True}],
        },
        "spec": dict(template["spec"]),
    }
    return pod


def run_deployments(nodes: int = 5000, initial: int = 1000, measured: int = 1000, zones: int = 10,
                    deployments: int = 4) -> Measurement:
    bench = Bench()
    _nodes(bench, nodes, zones)
    sets = []
    for d in range(deployments):
        deploy = make_deployment(f"web-{d}", 0, make_pod("template"))
        rs = make_replicaset(f"web-{d}-5d8f", 0, make_pod("template"))
        rs["spec"]["selector"] = deploy["spec"]["selector"]
        rs["spec"]["template"] = deploy["spec"]["template"]
        sets.append(rs)
    bench.create(sets)
    bench.create(_replicaset_pod(sets[i % deployments], f"init-{i}") for i in range(initial))
    bench.drain()
    pods = [_replicaset_pod(sets[i % deployments], f"pod-{i}") for i in range(measured)]
    return bench.measure(f"DeploymentPods/{nodes}Nodes_{measured}Pods", pods)


if __name__ == "__main__":
    parser = size_parser(__doc__)
    parser.add_argument("shape", choices=("spreading", "deployments"))
    parser.add_argument("--zones", type=int, default=10)
    a = parser.parse_args()
    fn = run if a.shape == "spreading" else run_deployments
    print(fn(a.nodes, a.initial, a.measured, a.zones).line())
