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

``--pdbs`` (PreemptionPDB) puts the low pods in groups of ten (``app: low-N``, as a Deployment's
replicas) with a PodDisruptionBudget over each group allowing one disruption (``maxUnavailable: 1``,
its status pinned as scheduler_perf pins objects' status): every node's dry run then splits its
victims into PDB-violating and non-violating ones, and a preemptor evicting two pods of one group
violates its budget.

``--plugin`` runs the profile with one of kubesched's opt-in preemption plugins
(``CrossNodePreemption``, ``AffinityAwarePreemption``) in place of DefaultPreemption, to measure
what the plugin costs on the same workload.
"""

from __future__ import annotations

import argparse
from typing import Any

from harness import Bench, Measurement

from kubesched.testkit.builders import make_node, make_pdb, make_pod, make_priority_class

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
SHAPES = ("basic", "spread", "anti-affinity", "affinity", "spread+anti-affinity")
#: low pods per PodDisruptionBudget in the PDB variant
GROUP = 10
#: kubesched's opt-in preemption plugins that take DefaultPreemption's place (``--plugin``)
PLUGINS = ("CrossNodePreemption", "AffinityAwarePreemption")


def plugin_config(plugin: str) -> dict[str, Any]:
    """A KubeSchedulerConfiguration whose profile preempts with ``plugin`` instead of DefaultPreemption."""
    if plugin not in PLUGINS:
        raise ValueError(f"unknown preemption plugin {plugin!r} (one of {', '.join(PLUGINS)})")
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler", "plugins": {"multiPoint": {
                "enabled": [{"name": plugin}], "disabled": [{"name": "DefaultPreemption"}]}}}]}


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


def low_pod(i: int, zoned: bool, pdbs: bool) -> dict[str, Any]:
    """The ``i``-th low-priority pod of 900m / 500Mi (grace 0)."""
    labels = {"tier": "low"} if zoned else {}
    if pdbs:
        labels["app"] = f"low-{i // GROUP}"
    return make_pod(f"low-{i}", "900m", "500Mi", priority_class="low", grace=0, labels=labels or None)


def budgets(pods: int) -> list[dict[str, Any]]:
    """One PodDisruptionBudget per group of low pods, allowing one disruption."""
    return [make_pdb(f"low-{g}", {"matchLabels": {"app": f"low-{g}"}}, max_unavailable=1, disruptions_allowed=1)
            for g in range((pods + GROUP - 1) // GROUP)]


def run(nodes: int = 500, shape: str = "basic", preemptors: int | None = None, pdbs: bool = False,
        plugin: str | None = None) -> Measurement:
    """``preemptors``: how many high pods (default one per node); ``pdbs``: the low pods under
    PodDisruptionBudgets (PreemptionPDB); ``plugin``: preempt with this opt-in plugin (see
    :data:`PLUGINS`) instead of DefaultPreemption."""
    if shape not in SHAPES:
        raise ValueError(f"unknown preemptor shape {shape!r} (one of {', '.join(SHAPES)})")
    bench = Bench(config=plugin_config(plugin) if plugin else None)
    bench.create([make_priority_class("low", 1), make_priority_class("high", 10)])
    zoned = shape != "basic"
    bench.create(make_node(f"node-{i}", labels={ZONE: f"zone-{i % 10}"} if zoned else None) for i in range(nodes))
    bench.create(low_pod(i, zoned, pdbs) for i in range(4 * nodes))
    if pdbs:
        bench.create(budgets(4 * nodes))
    bench.drain()
    count = nodes if preemptors is None else preemptors
    high = [preemptor(f"high-{i}", shape) for i in range(count)]
    # preemptors bind on their retry, after the victims are gone and their backoff expired; with
    # spreading, a pod rejected while the others were nominated and not yet bound waits for the
    # queue's flush of unschedulable pods (five minutes)
    settle = 330.0 if "spread" in shape else 30.0
    name = ("PreemptionPDB" if pdbs else "PreemptionBasic") if shape == "basic" else f"Preemption[{shape}]"
    if pdbs and shape != "basic":
        name += "+PDB"
    suffix = "" if preemptors is None else f"_{count}Pods"
    if plugin:
        suffix += f"_{plugin}"
    return bench.measure(f"{name}/{nodes}Nodes{suffix}", high, settle=settle)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--preemptor-shape", choices=SHAPES, default="basic",
                        help="constraints of the high-priority pods (default: basic, none)")
    parser.add_argument("--preemptors", type=int, default=None, help="how many high pods (default: one per node)")
    parser.add_argument("--pdbs", action="store_true",
                        help=f"PreemptionPDB: a PodDisruptionBudget over every {GROUP} low pods")
    parser.add_argument("--plugin", choices=PLUGINS, default=None,
                        help="preempt with this opt-in plugin instead of DefaultPreemption (default: the default profile)")
    args = parser.parse_args()
    print(run(args.nodes, args.preemptor_shape, args.preemptors, args.pdbs, args.plugin).line())
