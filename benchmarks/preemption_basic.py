"""PreemptionBasic, shaped like upstream scheduler_perf: nodes of 4 CPU / 32Gi; four low-priority
pods of 900m / 500Mi per node (grace 0), then one high-priority pod of 3000m / 500Mi per node, each
of which must preempt three low pods.

``--preemptor-shape`` gives the high-priority pods constraints whose filters depend on the node's
pods, so that the dry run cannot go by resource sums alone (nodes are then in ten zones):

- ``spread``: a hard (DoNotSchedule) topology spread constraint over the zones, maxSkew 5, among
  the high pods;
- ``anti-affinity``: required pod anti-affinity against each other per hostname;
- ``affinity``: required pod affinity to a low pod in the same zone (the victims are such pods);
- ``spread+anti-affinity``: the first two together.
"""

from __future__ import annotations

import argparse
from typing import Any

from harness import Bench, Measurement

from kubesched.testkit.builders import make_node, make_pod, make_priority_class

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
SHAPES = ("basic", "spread", "anti-affinity", "affinity", "spread+anti-affinity")


def preemptor(name: str, shape: str) -> dict[str, Any]:
    """A high-priority pod of 3000m / 500Mi with the constraints of ``shape``."""
    if shape == "basic":
        return make_pod(name, "3000m", "500Mi", priority_class="high")
    spec: dict[str, Any] = {}
    if "spread" in shape:
        spec["topologySpreadConstraints"] = [{"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                                              "labelSelector": {"matchLabels": {"tier": "high"}}}]
    if "anti-affinity" in shape:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"tier": "high"}}, "topologyKey": HOSTNAME}]}}
    elif shape == "affinity":
        spec["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"tier": "low"}}, "topologyKey": ZONE}]}}
    return make_pod(name, "3000m", "500Mi", priority_class="high", labels={"tier": "high"}, **spec)


def run(nodes: int = 500, shape: str = "basic", preemptors: int | None = None) -> Measurement:
    """``preemptors``: how many high pods (default one per node)."""
    if shape not in SHAPES:
        raise ValueError(f"unknown preemptor shape {shape!r} (one of {', '.join(SHAPES)})")
    bench = Bench()
    bench.create([make_priority_class("low", 1), make_priority_class("high", 10)])
    zoned = shape != "basic"
    bench.create(make_node(f"node-{i}", labels={ZONE: f"zone-{i % 10}"} if zoned else None) for i in range(nodes))
    bench.create(make_pod(f"low-{i}", "900m", "500Mi", priority_class="low", grace=0,
                          labels={"tier": "low"} if zoned else None) for i in range(4 * nodes))
    bench.drain()
    count = nodes if preemptors is None else preemptors
    high = [preemptor(f"high-{i}", shape) for i in range(count)]
    # preemptors bind on their retry, after the victims are gone and their backoff expired; with
    # spreading, a pod rejected while the others were nominated and not yet bound waits for the
    # queue's flush of unschedulable pods (five minutes)
    settle = 330.0 if "spread" in shape else 30.0
    name = "PreemptionBasic" if shape == "basic" else f"Preemption[{shape}]"
    suffix = "" if preemptors is None else f"_{count}Pods"
    return bench.measure(f"{name}/{nodes}Nodes{suffix}", high, settle=settle)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--preemptor-shape", choices=SHAPES, default="basic",
                        help="constraints of the high-priority pods (default: basic, none)")
    parser.add_argument("--preemptors", type=int, default=None, help="how many high pods (default: one per node)")
    args = parser.parse_args()
    print(run(args.nodes, args.preemptor_shape, args.preemptors).line())
