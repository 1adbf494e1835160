"""Snapshots: objects that already exist in a cluster, as `kubectl get -o yaml` or a live read gives them.

A scenario's objects are normally *created* at time 0, in file order and through admission, like
``kubectl apply``. An object that carries ``metadata.uid`` (and a ``resourceVersion`` or
``creationTimestamp``, as everything the API server returns does) was read from a cluster: it
already exists.
Such objects are *restored* instead (see :func:`plan_initial_objects`):

- **order does not matter**: they are restored before the scenario's other objects, kind by kind in
  an order that keeps the cluster consistent (namespaces and classes first; pods before the
  controllers that own them, so that every controller finds its pods when it starts, and Deployments
  last, so that they find their ReplicaSets), and within a kind by namespace and name, the order in
  which an informer's first list hands them to the scheduler and the controllers;
- **no re-admission**: a pod keeps ``spec.priority``, ``nodeName``, ``startTime``, its conditions and
  its phase; the two ``system-`` PriorityClasses every dump contains are the ones the API server has;
- **managedFields** are left out (which manager wrote which field: nothing a simulation reads);
- **what restored pods need is created first**: Namespaces and PriorityClasses the scenario creates
  (a what-if's ``--apply``) are created before anything is restored, since a restored pod makes its
  namespace exist (a Namespace created after it would be refused as existing) and a restored pod
  without ``spec.priority`` takes its class's value when it is restored;
- **time**: the snapshot's latest timestamp becomes the simulation's time 0 (every timestamp of the
  restored objects is shifted by the same amount), so objects made during the simulation are newer
  than the restored ones, as they would be;
- **PodDisruptionBudget status** is recomputed from the pods (a dump's ``disruptionsAllowed`` was right
  when it was taken, not once the simulation changes the cluster);
- **absent controllers**: a pod whose controlling ReplicaSet or StatefulSet is not in the snapshot is
  given one, made from the pod itself (its labels and spec), so that a deleted or evicted pod comes
  back as it would in the cluster; the plan's ``notes`` say so. Pods of other absent controllers
  (DaemonSets, Jobs, custom controllers) are not recreated, and the notes say that too.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.known_fields import parse_reference
from kubesched.api.known_fields_data import KIND_TYPES, TYPES
from kubesched.k8s.kinds import api_version, is_namespaced, restore_rank
from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import DEFAULT_NAMESPACE, Obj, is_terminal
from kubesched.k8s.timefmt import parse_rfc3339, rfc3339

#: kinds a scenario creates that must exist before the restored objects are restored (see the module's
#: description): a restored pod's namespace and its PriorityClass
_RESTORE_PREREQUISITES = frozenset({"Namespace", "PriorityClass"})

#: fields holding a metav1.Time / MicroTime that the restored objects carry
_TIME_FIELDS = frozenset({
    "creationTimestamp", "deletionTimestamp", "startTime", "completionTime", "lastTransitionTime",
    "lastProbeTime", "lastHeartbeatTime", "lastUpdateTime", "startedAt", "finishedAt", "lastScaleTime",
})

#: the JSON-like containers a walk descends into
_CONTAINERS = (dict, list)

#: the annotation a controller made up for an absent one carries
SYNTHESIZED = "kubesched.io/synthesized-from-pod"
#: controllers kubesched can stand in for when a snapshot lacks them
_SYNTHESIZABLE = ("ReplicaSet", "StatefulSet")


def is_existing(obj: Any) -> bool:
    """Whether ``obj`` was read from a cluster: it carries the ``uid`` the API server gave it and a
    ``resourceVersion`` or ``creationTimestamp`` (a hand-written manifest that only pins a uid is
    still created, in file order)."""
    if not isinstance(obj, dict):
        return False
    meta = obj.get("metadata") or {}
    return bool(meta.get("uid")) and bool(meta.get("resourceVersion") or meta.get("creationTimestamp"))


@dataclass
class InitialPlan:
    """How a scenario's initial objects come into being: ``create_first`` (created objects the
    restored ones need, in file order), ``restore`` (existing objects, in restore order, already
    shifted in time), then ``create`` (the others, in file order). ``shift`` is the number of seconds
    every restored timestamp was moved back by; ``notes`` are for the reader."""

    restore: list[Obj] = field(default_factory=list)
    create: list[Obj] = field(default_factory=list)
    create_first: list[Obj] = field(default_factory=list)
    shift: float = 0.0
    notes: list[str] = field(default_factory=list)
    #: how many objects of each kind are restored (the plan's ``restore`` list is let go once used)
    restored_kinds: dict[str, int] = field(default_factory=dict)
    #: the cluster as the snapshot shows it (see :func:`cluster_as_read`)
    as_read: dict[str, Any] = field(default_factory=dict)

    def report(self) -> dict[str, Any]:
        """The result's ``snapshot`` section."""
        return {
            "restored": dict(sorted(self.restored_kinds.items())),
            "takenAt": rfc3339(self.shift),
            "notes": list(self.notes),
            "asRead": self.as_read,
        }


def plan_initial_objects(objects: Iterable[Obj], *, owned: bool = False) -> InitialPlan:
    """Split ``objects`` into the restored and the created (see the module's description). The
    restored are copies (time-shifted, without ``managedFields``); with ``owned`` they are the given
    objects themselves, changed in place: for a caller that uses them for nothing else."""
    plan = InitialPlan()
    existing: list[Obj] = []
    for obj in objects:
        (existing if is_existing(obj) else plan.create).append(obj)
    if not existing:
        return plan
    plan.create_first = [obj for obj in plan.create if obj.get("kind") in _RESTORE_PREREQUISITES]
    plan.create = [obj for obj in plan.create if obj.get("kind") not in _RESTORE_PREREQUISITES]
    plan.as_read = cluster_as_read(existing)
    if not owned:
        existing = [deep_copy(obj) for obj in existing]
    times = _TimeFields()
    for obj in existing:
        forget_managed_fields(obj)
        times.collect_object(obj)
        if obj["kind"] == "PodDisruptionBudget":
            obj.pop("status", None)
    plan.shift = times.latest()
    times.shift(plan.shift)
    existing.extend(_stand_ins(existing, plan.notes))
    plan.restore = sorted(existing, key=_restore_order)
    for obj in plan.restore:
        plan.restored_kinds[obj["kind"]] = plan.restored_kinds.get(obj["kind"], 0) + 1
    return plan


def forget_managed_fields(obj: Any) -> None:
    """Drop ``metadata.managedFields`` (which manager wrote which field: nothing kubesched reads, and
    a third of what a dump of a real cluster holds)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if isinstance(meta, dict):
        meta.pop("managedFields", None)


#: the states of a pod as read, in the order they are reported
POD_STATES = ("running", "starting", "pending", "terminating", "succeeded", "failed")


def pod_state(pod: Obj) -> str:
    """A pod's state as a reader of the cluster sees it: ``pending`` (not bound to a node),
    ``starting`` (bound, phase still Pending), ``running``, ``terminating`` (being deleted), or its
    finished phase."""
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    if phase in ("Succeeded", "Failed"):
        return phase.lower()
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "terminating"
    if not (pod.get("spec") or {}).get("nodeName"):
        return "pending"
    return "running" if phase == "Running" else "starting"


def cluster_as_read(objects: Iterable[Obj]) -> dict[str, Any]:
    """What a snapshot says of its cluster before anything is simulated: nodes (and how many are
    cordoned or not Ready), pods by state, and pods by state per namespace and per PriorityClass
    (``""``: pods without one)."""
    nodes = cordoned = not_ready = 0
    pods: dict[str, int] = dict.fromkeys(POD_STATES, 0)
    by_namespace: dict[str, dict[str, int]] = {}
    by_class: dict[str, dict[str, int]] = {}
    for obj in objects:
        kind = obj.get("kind")
        if kind == "Node":
            nodes += 1
            cordoned += bool((obj.get("spec") or {}).get("unschedulable"))
            ready = next((c for c in (obj.get("status") or {}).get("conditions") or []
                          if isinstance(c, dict) and c.get("type") == "Ready"), None)
            not_ready += ready is None or ready.get("status") != "True"
        elif kind == "Pod":
            state = pod_state(obj)
            pods[state] += 1
            namespace = (obj.get("metadata") or {}).get("namespace") or DEFAULT_NAMESPACE
            pc = (obj.get("spec") or {}).get("priorityClassName") or ""
            for table, key in ((by_namespace, namespace), (by_class, pc)):
                row = table.get(key)
                if row is None:
                    row = table[key] = dict.fromkeys(POD_STATES, 0)
                row[state] += 1
    return {"nodes": nodes, "cordonedNodes": cordoned, "notReadyNodes": not_ready, "pods": pods,
            "podsByNamespace": dict(sorted(by_namespace.items())),
            "podsByPriorityClass": dict(sorted(by_class.items()))}


def _restore_order(obj: Obj) -> tuple[int, str, str]:
    """By kind (:attr:`kubesched.k8s.kinds.Kind.restore_rank`), then as a list from the API server
    returns them (etcd's key order: namespace, name)."""
    meta = obj.get("metadata") or {}
    return restore_rank(obj["kind"]), meta.get("namespace") or "", meta.get("name") or ""


# -- time ---------------------------------------------------------------------------------------------
def _time_shapes() -> dict[str, tuple[tuple[str, ...], tuple[tuple[str, str, str], ...]]]:
    """Per Kubernetes type (as :mod:`known_fields_data` declares them), the time fields it holds and
    its object fields whose type holds one somewhere below: (key, how: "" one, "[" a list, "{" a
    map, the type). A walk that follows only these sees every timestamp and leaves out the rest of
    an object (a pod's containers, say), which is most of it."""
    holds = {name for name, fields in TYPES.items()
             if any(key in _TIME_FIELDS and not reference for key, reference in fields.items())}
    changed = True
    while changed:  # a type holds one if a type below it does
        changed = False
        for name, fields in TYPES.items():
            if name not in holds and any(parse_reference(ref)[1] in holds for ref in fields.values() if ref):
                holds.add(name)
                changed = True
    return {name: (tuple(key for key, ref in fields.items() if key in _TIME_FIELDS and not ref),
                   tuple((key, *parse_reference(ref)) for key, ref in fields.items() if ref and parse_reference(ref)[1] in holds))
            for name, fields in TYPES.items() if name in holds}


_TIME_SHAPES = _time_shapes()


class _TimeFields:
    """Every timestamp of the restored objects, found in one walk: the latest is the snapshot's
    moment, and each is then moved back by it (each text parsed once, each second formatted once)."""

    def __init__(self) -> None:
        self.found: list[tuple[dict[str, Any], str, str]] = []  # (owner, key, text)
        #: each text found, in seconds (a dump repeats the same few hundred moments in every object)
        self.seconds: dict[str, float] = {}
        #: the texts of the moments that count for :meth:`latest` (not a deletionTimestamp)
        self.moments: set[str] = set()

    def collect_object(self, obj: Obj) -> None:
        """An object's timestamps: along the fields its kind declares (see :func:`_time_shapes`); an
        object of another kind is looked through whole."""
        kind = obj.get("kind")
        type_name = KIND_TYPES.get(kind) if isinstance(kind, str) else None
        if type_name is None:
            self.collect(obj)
            return
        stack: list[tuple[Any, str]] = [(obj, type_name)]
        while stack:
            node, type_name = stack.pop()
            if not isinstance(node, dict):
                continue
            times, children = _TIME_SHAPES[type_name]
            for key in times:
                self._note(node, key)
            for key, how, sub in children:
                child = node.get(key)
                if how == "":
                    stack.append((child, sub))
                elif how == "[":
                    if isinstance(child, list):
                        stack.extend([(item, sub) for item in child])
                elif isinstance(child, dict):
                    stack.extend([(item, sub) for item in child.values()])

    def collect(self, value: Any) -> None:
        """The timestamps anywhere under ``value``."""
        stack: list[Any] = [value]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                for key in _TIME_FIELDS.intersection(node):
                    self._note(node, key)
                stack.extend([item for item in node.values() if type(item) in _CONTAINERS])
            elif isinstance(node, list):
                stack.extend([item for item in node if type(item) in _CONTAINERS])

    def _note(self, node: dict[str, Any], key: str) -> None:
        item = node.get(key)
        if isinstance(item, str):
            if item not in self.seconds:
                seconds = _seconds(item)
                if seconds is None:
                    return
                self.seconds[item] = seconds
            self.found.append((node, key, item))
            if key != "deletionTimestamp":
                self.moments.add(item)

    def latest(self) -> float:
        """The latest moment (a deletionTimestamp is a deadline, in the future: not counted)."""
        moments = [self.seconds[text] for text in self.moments]
        return float(math.ceil(max(moments))) if moments else 0.0

    def shift(self, shift: float) -> None:
        """Move every timestamp back by ``shift`` seconds (each distinct text worked out once)."""
        if shift:
            shifted = {text: rfc3339(seconds - shift) for text, seconds in self.seconds.items()}
            for owner, key, text in self.found:
                owner[key] = shifted[text]


def _seconds(text: str) -> float | None:
    try:
        return parse_rfc3339(text)
    except ValueError:
        return None


# -- absent controllers ---------------------------------------------------------------------------------
def _controller_ref(obj: Obj) -> dict[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def _stand_ins(existing: list[Obj], notes: list[str]) -> list[Obj]:
    """A controller for every ReplicaSet or StatefulSet that owns pods of the snapshot but is not in
    it; notes for the pods whose absent controller kubesched does not stand in for."""
    present = {(obj.get("metadata") or {}).get("uid") for obj in existing}
    orphans: dict[tuple[str, str, str, str], list[Obj]] = {}
    for obj in existing:
        if obj["kind"] != "Pod" or is_terminal(obj):
            continue
        ref = _controller_ref(obj)
        if ref is None or ref.get("uid") in present:
            continue
        namespace = obj["metadata"].get("namespace") or DEFAULT_NAMESPACE
        key = (str(ref.get("kind")), namespace, str(ref.get("name")), str(ref.get("uid")))
        orphans.setdefault(key, []).append(obj)
    made: list[Obj] = []
    for (kind, namespace, name, uid), pods in sorted(orphans.items()):
        if kind in _SYNTHESIZABLE:
            made.append(_stand_in(kind, namespace, name, uid, pods))
            notes.append(f"{kind} {namespace}/{name} is not in the snapshot: kubesched stands in for it with "
                         f"{len(pods)} replica(s) made from its pod {pods[0]['metadata']['name']}")
        else:
            names = ", ".join(p["metadata"]["name"] for p in pods[:3]) + (", ..." if len(pods) > 3 else "")
            notes.append(f"{kind} {namespace}/{name} is not in the snapshot: its pods ({names}) are not "
                         "recreated if they go")
    return made


def _template_of(pod: Obj) -> Obj:
    spec = copy.deepcopy(pod.get("spec") or {})
    for key in ("nodeName", "priority", "preemptionPolicy", "hostname", "subdomain"):
        spec.pop(key, None)
    labels = dict((pod.get("metadata") or {}).get("labels") or {})
    return {"metadata": {"labels": labels}, "spec": spec}


def _common_labels(pods: list[Obj]) -> dict[str, str]:
    common = dict((pods[0].get("metadata") or {}).get("labels") or {})
    for pod in pods[1:]:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        common = {k: v for k, v in common.items() if labels.get(k) == v}
    return common


def _stand_in(kind: str, namespace: str, name: str, uid: str, pods: list[Obj]) -> Obj:
    pods = sorted(pods, key=lambda p: p["metadata"]["name"])
    template = _template_of(pods[0])
    selector = _common_labels(pods)
    template["metadata"]["labels"] = {**template["metadata"]["labels"], **selector}
    meta: dict[str, Any] = {"name": name, "uid": uid, "annotations": {SYNTHESIZED: pods[0]["metadata"]["name"]}}
    if is_namespaced(kind):
        meta["namespace"] = namespace
    spec: dict[str, Any] = {"replicas": len(pods), "selector": {"matchLabels": selector}, "template": template}
    if kind == "StatefulSet":
        ordinals = [_ordinal(p["metadata"]["name"], name) for p in pods]
        spec["replicas"] = max([o for o in ordinals if o is not None], default=len(pods) - 1) + 1
        spec["serviceName"] = (pods[0].get("spec") or {}).get("subdomain") or name
        spec["podManagementPolicy"] = "Parallel"
    return {"apiVersion": api_version(kind), "kind": kind, "metadata": meta, "spec": spec}


def _ordinal(pod_name: str, owner: str) -> int | None:
    suffix = pod_name[len(owner) + 1:] if pod_name.startswith(owner + "-") else ""
    return int(suffix) if suffix.isdigit() else None
