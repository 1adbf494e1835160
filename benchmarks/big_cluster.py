"""A big simulated cluster end to end, as ``kubesched simulate`` runs it: N nodes in 10 zones and
Deployments in 20 namespaces whose ReplicaSets create M pods in all (100 replicas each unless the
numbers say otherwise). Everything is included: the scenario's objects, the Deployment and
ReplicaSet controllers, admission, the scheduler (every pod gets the system default spreading), the
kubelets starting the pods and the result document.

Prints the wall-clock time of the whole simulation (reading the file, controllers, scheduling,
kubelets, the result document), the pods Running at the end, peak RSS, and the memory the run
added (peak RSS after less before), also per node and per pod."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from harness import Measurement

from kubesched.sim import simulate
from kubesched.testkit.builders import make_deployment, make_namespace, make_node, make_pod
from kubesched.testkit.scenarios import scenario_document

ZONE = "topology.kubernetes.io/zone"


def objects(nodes: int, pods: int, replicas: int = 100, namespaces: int = 20) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [make_namespace(f"team-{k}") for k in range(namespaces)]
    docs += [make_node(f"node-{i}", cpu="16", memory="64Gi", labels={ZONE: f"zone{i % 10 + 1}"})
             for i in range(nodes)]
    count = max(1, pods // replicas)
    for d in range(count):
        n = replicas if d < count - 1 else pods - replicas * (count - 1)
        template = make_pod("app", "200m", "256Mi", namespace=None)
        docs.append(make_deployment(f"app-{d}", n, template, namespace=f"team-{d % namespaces}"))
    docs.append(scenario_document(until="60s", seed=1, name="big"))
    return docs


def run(nodes: int, pods: int) -> tuple[Measurement, float]:
    """Simulate the scenario from a YAML file (reading it included); the pods Running at the end
    are the measurement's pods."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.yaml"
        path.write_text(yaml.safe_dump_all(objects(nodes, pods), sort_keys=False))
        before = Measurement.max_rss_mib()
        start = time.perf_counter()
        outcome = simulate(path)
        seconds = time.perf_counter() - start
    running = sum(1 for p in outcome.result["pods"].values() if p["phase"] == "Running")
    grown = Measurement.max_rss_mib() - before
    return Measurement(f"BigCluster/{nodes}Nodes_{pods}Pods", running, seconds, 0.0), grown


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=10000)
    parser.add_argument("--pods", type=int, default=40000)
    a = parser.parse_args()
    measurement, grown = run(a.nodes, a.pods)
    print(measurement.line())
    print(f"memory grown during the run: {grown:.0f} MiB ({grown * 1024 / a.nodes:.1f} KiB per node, or "
          f"{grown * 1024 / a.pods:.1f} KiB per pod, if all of it were charged to one of them)")
