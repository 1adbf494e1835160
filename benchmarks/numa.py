"""NUMA-aware placement with NodeResourceTopologyMatch (scheduler-plugins): nodes of two NUMA zones
of 16 CPUs and 64Gi each (CPU manager static, Topology Manager single-numa-node, container scope),
whose NodeResourceTopology objects the simulated exporter publishes on every allocation change;
Guaranteed pods of 2 CPUs / 4Gi that a zone must hold whole. The profile enables the plugin at
every extension point it implements (multiPoint), as the NUMA examples do. N nodes, I initial
pods, then M measured pods. --cache picks the plugin's view of the zones: the latest objects as
they are (passthrough, the default), the reservation cache resynced every 5 s (period) or as soon
as an object reflects the scheduler's pods (onupdate), or nodes with reserved pods left out
(discard)."""

from __future__ import annotations

import copy
from typing import Any

from harness import Bench, Measurement, size_parser

from kubesched.testkit.builders import make_node, make_pod

PROFILE: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [{
        "schedulerName": "default-scheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}},
        "pluginConfig": [{"name": "NodeResourceTopologyMatch",
                          "args": {"scoringStrategy": {"type": "LeastAllocated"}}}],
    }],
}
TOPOLOGY: dict[str, Any] = {
    "exporter": {"mode": "Watch"},
    "nodes": [{
        "nodeSelector": {"matchLabels": {"pool": "numa"}},
        "topologyManagerPolicy": "single-numa-node",
        "topologyManagerScope": "container",
        "zones": [{"cpus": 16, "memory": "64Gi"}, {"cpus": 16, "memory": "64Gi"}],
    }],
}


#: --cache -> the plugin's args beside the scoring strategy
CACHES: dict[str, dict[str, Any]] = {
    "passthrough": {},
    "period": {"cacheResyncPeriodSeconds": 5},
    "onupdate": {"cacheResyncMode": "OnUpdate"},
    "discard": {"discardReservedNodes": True},
}


def profile(cache: str = "passthrough") -> dict[str, Any]:
    """:data:`PROFILE` with the plugin's view of the zones chosen by ``cache`` (a key of :data:`CACHES`)."""
    config = copy.deepcopy(PROFILE)
    config["profiles"][0]["pluginConfig"][0]["args"].update(CACHES[cache])
    return config


def guaranteed_pod(name: str) -> dict[str, Any]:
    resources = {"cpu": "2", "memory": "4Gi"}
    return make_pod(name, containers=[{"name": "app", "image": "registry.k8s.io/pause:3.9",
                                       "resources": {"requests": resources, "limits": resources}}])


def run(nodes: int = 1000, initial: int = 500, measured: int = 500, cache: str = "passthrough") -> Measurement:
    bench = Bench(cluster={"topology": TOPOLOGY}, config=profile(cache))
    bench.create(make_node(f"node-{i}", cpu="32", memory="128Gi", labels={"pool": "numa"}) for i in range(nodes))
    bench.create(guaranteed_pod(f"init-{i}") for i in range(initial))
    bench.drain()
    pods = [guaranteed_pod(f"pod-{i}") for i in range(measured)]
    suffix = "" if cache == "passthrough" else f"_{cache}"
    return bench.measure(f"NodeResourceTopologyMatch/{nodes}Nodes_{measured}Pods{suffix}", pods)


if __name__ == "__main__":
    parser = size_parser(__doc__, measured=500)
    parser.add_argument("--cache", choices=sorted(CACHES), default="passthrough")
    a = parser.parse_args()
    print(run(a.nodes, a.initial, a.measured, a.cache).line())
