"""A variant's scenario and its run: the base with the variant's values of the axes applied, then
one ordinary simulation of it.

The scheduler configuration and the change set are applied as ``kubesched simulate
--scheduler-config`` and ``kubesched whatif`` apply them (a variant with a change set is whatif's
changed side, a configuration then being the changed run's); the node pool (grown by copies of
its first node, or shrunk by leaving out its last ones), replica factor and arrival rate change
the scenario's objects and steps before that. The base is never changed:
what a variant changes it copies.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
import time
from pathlib import Path
from typing import Any

from kubesched.analysis.whatif.apply import apply_changes, check_changes
from kubesched.api.loader import Scenario, Step
from kubesched.api.volumes.claims import pod_claims
from kubesched.k8s.objcopy import deep_copy
from kubesched.sim import simulate
from kubesched.sweep.metrics import pending_pods, variant_metrics
from kubesched.sweep.spec import Sweep, Variant, pool_nodes

#: workload kinds whose ``spec.replicas`` a replica factor scales
SCALED_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController")
#: what the result carries only because the sweep asked for the preemption decisions
_DECISION_SECTIONS = ("preemptionDecisions", "attempts")


def variant_scenario(base: Scenario, sweep: Sweep, variant: Variant) -> Scenario:
    """The scenario the variant simulates."""
    scenario = dataclasses.replace(base, objects=list(base.objects), steps=list(base.steps),
                                   sources=list(base.sources), warnings=list(base.warnings),
                                   cluster=copy.deepcopy(base.cluster),
                                   scheduler_configuration=copy.deepcopy(base.scheduler_configuration))
    config = sweep.configs.get(variant.config) if variant.config is not None else None
    if variant.pool_count is not None:
        _size_pool(scenario, sweep, variant.pool_count)
    if variant.replica_factor is not None:
        _scale_workloads(scenario, variant.replica_factor)
    if variant.arrival_rate is not None:
        scenario.steps = [dataclasses.replace(step, at=step.at / variant.arrival_rate) for step in scenario.steps]
    if variant.change is None:
        if config is not None:  # as simulate --scheduler-config
            scenario.scheduler_configuration, scenario.scheduler_configuration_source = copy.deepcopy(config[0]), config[1]
            scenario.scheduler_configuration_dir = config[1].file and str(Path(config[1].file).parent)
        return scenario
    changes = dataclasses.replace(sweep.changes[variant.change])
    if config is not None:  # as whatif --scheduler-config: the changed run's configuration
        changes.scheduler_configuration, changes.scheduler_configuration_source = copy.deepcopy(config[0]), config[1]
    check_changes(scenario, changes)
    return apply_changes(scenario, changes)[1]


def _size_pool(scenario: Scenario, sweep: Sweep, count: int) -> None:
    """The pool at ``count`` nodes: grown by copies of its first node (the template), or shrunk by
    leaving out its last ones."""
    pool = pool_nodes(scenario.objects, sweep)
    if count < len(pool):
        _remove_nodes(scenario, pool[count:])
    else:
        _add_copies(scenario, pool, count)


def _remove_nodes(scenario: Scenario, nodes: list[dict[str, Any]]) -> None:
    """The scenario without these Nodes (the pool's last, in the base's order): as the base with
    their documents deleted by hand. What was on them is left to the cluster, as when a Node object
    is deleted under its pods: the pod garbage collector deletes the pods bound to a missing node
    once it has been gone 40 s, their controllers replace them, and the replacements are scheduled
    on the nodes left or stay pending (``cluster/embedded/controllers/podgc.py``, upstream's
    ``gcOrphaned``)."""
    removed = {id(n) for n in nodes}  # the very objects: a name may be a Node's and a pod's
    gone = {i for i, o in enumerate(scenario.objects) if id(o) in removed}
    scenario.objects = [o for i, o in enumerate(scenario.objects) if i not in gone]
    scenario.sources = [s for i, s in enumerate(scenario.sources) if i not in gone]


def _add_copies(scenario: Scenario, pool: list[dict[str, Any]], count: int) -> None:
    """Copies of the pool's first node (the template) up to ``count`` nodes, created at time 0
    right after the pool's last node (named ``TEMPLATE-I`` for I from the pool's size + 1 to
    ``count``; the hostname label follows the name, the rest of the node is the template's: its
    labels, zone included, taints and capacity)."""
    template = pool[0]
    names = {o["metadata"]["name"] for o in scenario.objects if o["kind"] == "Node"}
    at = max(scenario.objects.index(n) for n in pool) + 1
    for i in range(len(pool) + 1, count + 1):
        copy_ = deep_copy(template)
        meta = copy_["metadata"]
        name = f"{template['metadata']['name']}-{i}"
        if name in names:
            raise ValueError(f"nodePool: a node {name!r} exists already: name the template differently")
        meta["name"] = name
        for key in ("uid", "resourceVersion", "creationTimestamp"):  # a new node, created, not restored
            meta.pop(key, None)
        labels = meta.get("labels") or {}
        if "kubernetes.io/hostname" in labels:
            labels["kubernetes.io/hostname"] = name
        (copy_.get("spec") or {}).pop("providerID", None)
        scenario.objects.insert(at, copy_)
        scenario.sources.insert(at, f"nodePool copy {i} of {template['metadata']['name']}")
        at += 1


def _scale_workloads(scenario: Scenario, factor: float) -> None:
    def scaled(obj: dict[str, Any]) -> dict[str, Any]:
        if obj.get("kind") not in SCALED_KINDS or "replicas" not in (obj.get("spec") or {}):
            return obj
        # controller-owned ReplicaSets follow their Deployment's replicas
        if obj["kind"] == "ReplicaSet" and any(r.get("controller") for r in obj["metadata"].get("ownerReferences") or []):
            return obj
        out = deep_copy(obj)
        out["spec"]["replicas"] = math.floor(out["spec"]["replicas"] * factor + 0.5)
        return out

    def scaled_patch(step: Step) -> Step:
        replicas = ((step.merge or {}).get("spec") or {}).get("replicas") if step.action == "patch" else None
        if step.kind not in SCALED_KINDS or not isinstance(replicas, int) or isinstance(replicas, bool):
            return step
        if step.kind == "ReplicaSet" and any(
                o.get("kind") == "ReplicaSet" and o["metadata"]["name"] == step.name
                and o["metadata"].get("namespace", "") in ("", step.namespace)
                and any(r.get("controller") for r in o["metadata"].get("ownerReferences") or [])
                for o in scenario.objects):
            return step  # as above: its Deployment's replicas are scaled instead
        merge = deep_copy(step.merge)
        merge["spec"]["replicas"] = math.floor(replicas * factor + 0.5)
        return dataclasses.replace(step, merge=merge)

    scenario.objects = [scaled(o) for o in scenario.objects]
    # the objects the steps create and the replicas the steps' patches set: a patch to 4 replicas is
    # one to 8 at a factor of 2, or the patch would undo the factor
    scenario.steps = [scaled_patch(dataclasses.replace(s, obj=scaled(s.obj)) if s.obj is not None else s)
                      for s in scenario.steps]


def pod_count(scenario: Scenario) -> int:
    """About how many pods the scenario runs: its Pods and its workloads' replicas (those its steps
    create included; a DaemonSet counts one pod per node). A measure of a variant's work, not of
    its result."""
    nodes = sum(1 for o in scenario.objects if o.get("kind") == "Node")
    count = 0
    for obj in itertools.chain(scenario.objects, (s.obj for s in scenario.steps if s.obj is not None)):
        kind, spec = obj.get("kind"), obj.get("spec") or {}
        if kind == "Pod":
            count += 1
        elif kind == "DaemonSet":
            count += nodes
        elif kind in SCALED_KINDS and not (obj.get("metadata") or {}).get("ownerReferences"):
            replicas = spec.get("replicas", 1)
            count += replicas if isinstance(replicas, int) else 1
        elif kind == "Job":
            parallelism = spec.get("parallelism", 1)
            count += parallelism if isinstance(parallelism, int) else 1
    return count


def has_claims(scenario: Scenario) -> bool:
    """Whether the scenario has PersistentVolumeClaims, among its objects or those its steps create:
    claims, StatefulSets with claim templates, pods or workloads' pod templates that mount claims
    (``persistentVolumeClaim`` or generic ephemeral volumes)."""
    created = (step.obj for step in scenario.steps if step.obj is not None)
    return any(_claims_of(obj) for obj in itertools.chain(scenario.objects, created))


def _claims_of(obj: dict[str, Any]) -> bool:
    kind, spec = obj.get("kind"), obj.get("spec") or {}
    if kind == "PersistentVolumeClaim" or (kind == "StatefulSet" and spec.get("volumeClaimTemplates")):
        return True
    pod = obj if kind == "Pod" else spec.get("template")
    return isinstance(pod, dict) and next(pod_claims(pod), None) is not None


@dataclasses.dataclass
class Outcome:
    """What a variant's run sends back: its metrics and its SimulationResult (as ``kubesched
    simulate -o json`` writes it), or the error that stopped it."""

    variant: Variant
    metrics: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    seconds: float = 0.0
    #: the first pods pending at the end, with their last FailedScheduling message
    pending: list[dict[str, str]] = dataclasses.field(default_factory=list)


def run_variant(base: Scenario, sweep: Sweep, variant: Variant, keep_result: bool = True) -> Outcome:
    """Simulate the variant; an error of the variant's own (a bad change, a crash) is its outcome."""
    started = time.monotonic()
    try:
        scenario = variant_scenario(base, sweep, variant)
        outcome = simulate(scenario, seed=variant.seed, until=sweep.until, decisions=True)
        result = outcome.result
        metrics = variant_metrics(result, claims=has_claims(scenario), extended=outcome.extended_resources())
        for section in _DECISION_SECTIONS:
            result.pop(section, None)
        return Outcome(variant, metrics, result if keep_result else None, seconds=time.monotonic() - started,
                       pending=pending_pods(result))
    except Exception as exc:  # noqa: BLE001 - reported with the variant's inputs; the others go on
        return Outcome(variant, error=f"{type(exc).__name__}: {exc}", seconds=time.monotonic() - started)
